"""How a fix survives a reboot.

Every runtime change is lost at the next boot.  Each fix therefore carries
one or more Persist entries naming the file (or boot parameter) that makes
it permanent; `--export DIR` writes those files:

  sysctl.d      /proc/sys knobs          -> /etc/sysctl.d/90-tern-doctor.conf
  tmpfiles.d    /sys/devices/system/cpu  -> /etc/tmpfiles.d/tern-doctor.conf
  udev          ethtool settings         -> /etc/udev/rules.d/90-tern-doctor.rules
  systemd-unit  IRQ affinity, RPS/RFS/XPS -> tern-doctor-steering (script + unit):
                IRQ numbers change between boots, so it pins IRQs by name
  cmdline       boot parameters          -> GRUB_CMDLINE_LINUX in /etc/default/grub
  service       a service to keep off    -> systemctl disable
  manual        nothing a file can do    -> words only

Runtime changes (Actions) are mapped to their persistent form here, in one
place, so a check only names a Persist itself when its fix is not an Action.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

SYSCTL_FILE = "/etc/sysctl.d/90-tern-doctor.conf"
TMPFILES_FILE = "/etc/tmpfiles.d/tern-doctor.conf"
UDEV_FILE = "/etc/udev/rules.d/90-tern-doctor.rules"
STEERING_SCRIPT = "/usr/local/sbin/tern-doctor-steering"
STEERING_UNIT = "/etc/systemd/system/tern-doctor-steering.service"
GRUB_FILE = "/etc/default/grub"
ETHTOOL = "/usr/sbin/ethtool"   # udev runs programs by absolute path

HOW = {
    "sysctl.d": "a sysctl.d file, read at every boot: %s" % SYSCTL_FILE,
    "tmpfiles.d": "a tmpfiles.d file, written at every boot by systemd-tmpfiles: %s" % TMPFILES_FILE,
    "udev": "a udev rule that runs ethtool whenever the NIC appears: %s" % UDEV_FILE,
    "systemd-unit": "the tern-doctor-steering unit re-applies it at every boot: %s" % STEERING_UNIT,
    "cmdline": ("boot parameter: add it to GRUB_CMDLINE_LINUX in %s, run update-grub "
                "(grub2-mkconfig -o /boot/grub2/grub.cfg on Fedora/RHEL) and reboot" % GRUB_FILE),
}
FILES = {"sysctl.d": SYSCTL_FILE, "tmpfiles.d": TMPFILES_FILE, "udev": UDEV_FILE,
         "systemd-unit": STEERING_SCRIPT, "cmdline": GRUB_FILE}


@dataclass
class Persist:
    """One way to make (part of) a fix permanent.

    lines: what goes into `file` for this fix, one setting per line
    (sysctl "key = value", tmpfiles "w PATH - - - - VALUE", a udev rule, a
    line of the steering script, a boot parameter, or a command).
    settings: the same, structured, for the tuned profile:
    ("sysctl", key, value), ("sysfs", path, value), ("ethtool", argv),
    ("cmdline", param).
    """
    method: str
    lines: list
    how: str
    file: str | None = None
    ifaces: list = field(default_factory=list)
    settings: list = field(default_factory=list)

    def to_json(self):
        return {"method": self.method, "file": self.file, "lines": list(self.lines), "how": self.how}


def _make(method, lines, settings=(), ifaces=()):
    return Persist(method, list(lines), HOW[method], FILES[method], list(ifaces), list(settings))


def sysctl_key(path):
    """/proc/sys/net/core/netdev_budget -> net.core.netdev_budget."""
    return path[len("/proc/sys/"):].replace("/", ".")


def sysctl(pairs):
    """[(/proc/sys path, value)] -> sysctl.d lines."""
    return _make("sysctl.d", ["%s = %s" % (sysctl_key(p), v) for p, v in pairs],
                 [("sysctl", sysctl_key(p), v) for p, v in pairs])


def sysfs(pairs):
    """[(/sys path or glob, value)] -> tmpfiles.d 'w' lines (globs allowed there)."""
    return _make("tmpfiles.d", ["w %s - - - - %s" % (p, v) for p, v in pairs],
                 [("sysfs", p, v) for p, v in pairs])


def udev(facts, iface, argvs):
    """ethtool settings re-run by udev when the NIC is added.  Matched by MAC
    address (stable across renames) when it is readable, else by name."""
    mac = facts.host.read_line("/sys/class/net/%s/address" % iface) if facts else None
    if mac and re.fullmatch(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}", mac) and mac != "00:00:00:00:00:00":
        match = 'ATTR{address}=="%s"' % mac
    else:
        match = 'KERNEL=="%s"' % iface
    lines = ['ACTION=="add", SUBSYSTEM=="net", %s, RUN+="%s"'
             % (match, " ".join([ETHTOOL] + [shlex.quote(a) for a in argv[1:]])) for argv in argvs]
    return _make("udev", lines, [("ethtool", list(argv)) for argv in argvs], [iface])


def steering(lines, ifaces):
    """Lines of the tern-doctor-steering script (see export.py for `pin`)."""
    return _make("systemd-unit", lines, (), ifaces)


def irq_pin_line(name, cpu):
    return "pin %s %s" % (shlex.quote(name), cpu)


def cmdline(params):
    return _make("cmdline", params, [("cmdline", p) for p in params])


def service(name):
    return Persist("service", ["systemctl disable %s" % name],
                   "`systemctl disable %s` keeps it from starting at the next boot" % name)


def manual(how):
    return Persist("manual", [], how)


IRQ_AFFINITY = re.compile(r"^/proc/irq/(\d+)/smp_affinity_list$")
NET_QUEUE = re.compile(r"^/sys/class/net/([^/]+)/queues/")


def from_action(facts, act):
    """The persistent form of one runtime Action, or None."""
    if act.kind == "run":
        if act.argv and act.argv[0] == "ethtool" and len(act.argv) > 2:
            return udev(facts, act.argv[2], [act.argv])
        return None
    path, value = act.path, act.value
    if path.startswith("/proc/sys/"):
        return sysctl([(path, value)])
    m = IRQ_AFFINITY.match(path)
    if m:
        irq = facts.interrupts["irqs"].get(m.group(1)) if facts else None
        if irq and irq["name"]:
            return steering([irq_pin_line(irq["name"], value)], [])
        return steering(["echo %s > %s" % (value, path)], [])
    m = NET_QUEUE.match(path)
    if m:
        return steering(["echo %s > %s" % (value, path)], [m.group(1)])
    if path.startswith("/sys/"):
        return sysfs([(path, value)])
    return None


def merge(items):
    """Entries of the same method (and file) folded into one, in first-seen order."""
    out = {}
    for p in items:
        key = (p.method, p.file, p.how if p.method in ("manual", "service") else "")
        if key not in out:
            out[key] = Persist(p.method, [], p.how, p.file)
        m = out[key]
        m.lines += [l for l in p.lines if l not in m.lines]
        m.ifaces += [i for i in p.ifaces if i not in m.ifaces]
        m.settings += [s for s in p.settings if s not in m.settings]
    return list(out.values())


def for_finding(facts, finding):
    """The finding's own Persist entries, else those of its Actions."""
    items = finding.persist or [p for p in (from_action(facts, a) for a in finding.actions) if p]
    for p in items:
        if p.method == "systemd-unit" and finding.subject and finding.subject not in p.ifaces:
            p.ifaces.append(finding.subject)
    return merge(items)
