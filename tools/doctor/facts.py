"""Facts several checks share (CPU topology, IRQs, interfaces), read once.

Everything is read lazily through the Host, so a fixture tree only needs the
files for the checks it exercises.
"""
from __future__ import annotations

import os
import re
from functools import cached_property

from . import procfs
from .ethtool import Ethtool

CPU = "/sys/devices/system/cpu"
NET = "/sys/class/net"

# IRQs of a NIC that carry no queue traffic (mailbox, link events...).
NON_QUEUE_IRQ = re.compile(r"config|async|misc|ctrl|event|lsc|-fw|err|mbx|other", re.I)
# The direction in a queue IRQ's name: virtio "-input.0"/"-output.0", igb/ixgbe
# "-rx-0"/"-tx-0"; "-TxRx-0" (i40e, ice, ixgbe), "mlx5_comp0" serve both.
RX_IRQ = re.compile(r"(?:^|[-_.])(?:rx|input)(?:[-_.]|\d|$)", re.I)
TX_IRQ = re.compile(r"(?:^|[-_.])(?:tx|output)(?:[-_.]|\d|$)", re.I)


def irq_kind(stem):
    """'rx', 'tx' or 'combined' for a queue IRQ name (interface/bus removed)."""
    if RX_IRQ.search(stem):
        return "rx"
    if TX_IRQ.search(stem):
        return "tx"
    return "combined"


class Facts:
    def __init__(self, host, profile, ifaces=None, app_cores=None, probe_seconds=1.0):
        self.host = host
        self.profile = profile
        self.probe_seconds = probe_seconds
        self.requested_ifaces = ifaces or []
        self.app_cores = app_cores or []
        self.ethtool = Ethtool(host)
        self._irqs = {}

    # --- CPUs -----------------------------------------------------------------

    # CPUs the core speed probe runs on when no --app-cores are given.
    PROBE_CPUS = 4

    @cached_property
    def core_speeds(self):
        """{cpu: [probe rates]} for the app cores (else the first
        PROBE_CPUS online CPUs), one CPU after the other; {} when the
        probe is off (--probe-seconds 0) or gave nothing."""
        if self.probe_seconds <= 0:
            return {}
        cpus = [c for c in self.app_cores if c in self.cpus] or self.cpus[:self.PROBE_CPUS]
        out = {}
        for c in cpus:
            rates = self.host.core_speed(c, self.probe_seconds)
            if rates:
                out[c] = rates
        return out

    @cached_property
    def cpus(self):
        """Online CPU numbers."""
        cpus = procfs.parse_cpulist(self.host.read_line(CPU + "/online"))
        if not cpus:  # no 'online' file: every cpuN directory counts
            cpus = sorted(int(p.rsplit("cpu", 1)[1]) for p in self.host.glob(CPU + "/cpu[0-9]*"))
        return cpus

    def l3_of(self, cpu):
        """CPUs sharing the last-level (L3) cache with cpu, or None."""
        return self.l3_groups.get(cpu)

    @cached_property
    def l3_groups(self):
        groups = {}
        for cpu in self.cpus:
            for index in self.host.glob("%s/cpu%d/cache/index*" % (CPU, cpu)):
                level = self.host.read_line(index + "/level")
                if level == "3" or (level is None and index.endswith("index3")):
                    shared = procfs.parse_cpulist(self.host.read_line(index + "/shared_cpu_list"))
                    if shared:
                        groups[cpu] = shared
        return groups

    def package_of(self, cpu):
        return self.host.read_int("%s/cpu%d/topology/physical_package_id" % (CPU, cpu))

    @cached_property
    def cmdline(self):
        return procfs.parse_cmdline(self.host.read("/proc/cmdline"))

    @cached_property
    def interrupts(self):
        return procfs.parse_interrupts(self.host.read("/proc/interrupts"))

    @cached_property
    def softnet(self):
        """(layout, rows) of /proc/net/softnet_stat since boot."""
        return procfs.parse_softnet(self.host.read("/proc/net/softnet_stat"), self.cpus)

    @cached_property
    def tcp_timestamps(self):
        return self.host.read_int("/proc/sys/net/ipv4/tcp_timestamps") != 0

    @cached_property
    def irqbalance_pids(self):
        """PIDs whose /proc/PID/comm is irqbalance."""
        pids = []
        for comm in self.host.glob("/proc/[0-9]*/comm"):
            if self.host.read_line(comm) == "irqbalance":
                pids.append(int(comm.split("/")[2]))
        return sorted(pids)

    # --- interfaces -------------------------------------------------------------

    @cached_property
    def all_ifaces(self):
        return [i for i in self.host.listdir(NET) if i != "lo" and self.host.isdir(NET + "/" + i)]

    @cached_property
    def ifaces(self):
        return self.requested_ifaces or self.all_ifaces

    def is_physical(self, iface):
        """Backed by a device (PCI, virtio...), not veth/bridge/ifb/tun."""
        return self.host.exists("%s/%s/device" % (NET, iface))

    def bus_info(self, iface):
        info = self.ethtool.query("-i", iface)
        if info.ok and info.data.get("bus-info"):
            return info.data["bus-info"]
        dev = os.path.basename(self.host.realpath("%s/%s/device" % (NET, iface)))
        return dev if re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d", dev) else None

    def irqs(self, iface):
        """Queue IRQs of iface: [{"irq", "name", "queue", "counts"}], queue order.

        Matched by name in /proc/interrupts (the interface name, its PCI
        address as in "mlx5_comp3@pci:0000:c1:00.0", or its virtio device as
        in "virtio2-input.0"), falling back to the device's msi_irqs.
        """
        if iface not in self._irqs:
            self._irqs[iface] = self._find_irqs(iface)
        return self._irqs[iface]

    def _find_irqs(self, iface):
        tokens = [iface]
        bus = self.bus_info(iface)
        if bus:
            tokens.append(bus)
        dev = os.path.basename(self.host.realpath("%s/%s/device" % (NET, iface)))
        if dev.startswith("virtio"):
            tokens.append(dev)
        pats = [re.compile(r"(?<![A-Za-z0-9])%s(?![A-Za-z0-9])" % re.escape(t)) for t in tokens]
        table = self.interrupts["irqs"]
        found = [k for k, v in table.items() if k.isdigit() and any(p.search(v["desc"]) for p in pats)]
        if not found:
            msi = set(self.host.listdir("%s/%s/device/msi_irqs" % (NET, iface)))
            found = [k for k in table if k in msi]
        out = []
        for k in found:
            name = table[k]["name"]
            # "eth0" alone is the link/misc vector of ixgbe/igb, not a queue
            if NON_QUEUE_IRQ.search(name) or name == iface:
                continue
            stem = name.split("@")[0]
            for t in tokens:  # "i40e-eth0-TxRx-3": the queue is 3, not the 0 of eth0
                stem = stem.replace(t, "")
            m = re.findall(r"(\d+)", stem)
            out.append({"irq": int(k), "name": name, "kind": irq_kind(stem),
                        "queue": int(m[-1]) if m else None,
                        "counts": table[k]["counts"]})
        out.sort(key=lambda x: (x["queue"] if x["queue"] is not None else 1 << 30, x["irq"]))
        return out

    def irq_queues(self, iface):
        """iface's queue IRQs grouped by queue: [(queue, [irq, ...])], queue order.

        The receive and transmit IRQs of one queue pair (virtio2-input.0 and
        virtio2-output.0, eth0-rx-0 and eth0-tx-0) form one group and belong
        on one CPU; an IRQ whose name has no queue number is a group alone.
        """
        groups = {}
        for irq in self.irqs(iface):
            key = irq["queue"] if irq["queue"] is not None else "irq%d" % irq["irq"]
            groups.setdefault(key, []).append(irq)
        return [(k if isinstance(k, int) else None, v) for k, v in groups.items()]

    def ntuple_queues(self, iface):
        """Queues that ntuple rules (ethtool -U) steer flows to."""
        ans = self.ethtool.query("-n", iface)
        rules = ans.data.get("rules") if ans.ok else None
        return sorted({r["queue"] for r in rules or [] if r.get("queue") is not None})

    def irq_affinity(self, irq):
        return procfs.parse_cpulist(self.host.read_line("/proc/irq/%d/smp_affinity_list" % irq))

    def irq_effective(self, irq):
        return procfs.parse_cpulist(self.host.read_line("/proc/irq/%d/effective_affinity_list" % irq))

    def irq_cores(self, iface, queues=None):
        """CPUs that actually service iface's queue IRQs.

        Preference: CPUs whose /proc/interrupts count is non-zero (what really
        happened), then effective affinity, then the configured affinity.
        queues restricts to some queues (e.g. those ntuple rules steer to).
        Returns (cpus, source).
        """
        irqs = [i for i in self.irqs(iface) if queues is None or i["queue"] in queues]
        cpu_ids = self.interrupts["cpus"]
        seen = {cpu_ids[n] for i in irqs for n, c in enumerate(i["counts"]) if c > 0 and n < len(cpu_ids)}
        if seen:
            return sorted(seen), "interrupt counts"
        eff = {c for i in irqs for c in self.irq_effective(i["irq"])}
        if eff:
            return sorted(eff), "effective affinity"
        aff = {c for i in irqs for c in self.irq_affinity(i["irq"])}
        return sorted(aff), "affinity"

    def rx_queues(self, iface):
        return [q for q in self.host.listdir("%s/%s/queues" % (NET, iface)) if q.startswith("rx-")]

    def tx_queues(self, iface):
        return [q for q in self.host.listdir("%s/%s/queues" % (NET, iface)) if q.startswith("tx-")]

    def link_mbps(self, iface):
        """Link speed in Mbit/s from sysfs, or None (down, virtual, unknown)."""
        speed = self.host.read_int("%s/%s/speed" % (NET, iface))
        return speed if speed and speed > 0 else None

    def mtu(self, iface):
        return self.host.read_int("%s/%s/mtu" % (NET, iface))
