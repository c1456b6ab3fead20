"""PCIe link of the NIC: negotiated speed/width vs capability, and whether the
resulting bandwidth can carry the Ethernet link rate."""
from __future__ import annotations

import os
import re

from .. import rate
from ..model import Finding, unknown
from ..procfs import parse_pcie_speed

NET = "/sys/class/net"


def _width(text):
    m = re.search(r"(\d+)", text or "")
    return int(m.group(1)) if m else None


def _device_dir(f, iface):
    """The PCI device directory; virtio-net sits one level below its PCI function."""
    dev = "%s/%s/device" % (NET, iface)
    if os.path.basename(f.host.realpath(dev)).startswith("virtio"):
        return dev + "/.."
    return dev


def check(facts, iface):
    if not facts.is_physical(iface):
        return []
    return [link(facts, iface)]


def _desc(gts, width):
    gen = rate.pcie_gen(gts)
    return "%s x%d (%g GT/s) = %s" % ("Gen%d" % gen if gen else "PCIe", width, gts,
                                     rate.fmt_rate(rate.pcie_bps(gts, width)))


def link(f, iface):
    why = ("A NIC in a narrow or slow PCIe link cannot move line rate to memory whatever the "
           "software does (PCIe Gen3 x8 carries about 63 Gbit/s, less than 100GbE).")
    d = _device_dir(f, iface)
    cur_s = parse_pcie_speed(f.host.read_line(d + "/current_link_speed"))
    cur_w = _width(f.host.read_line(d + "/current_link_width"))
    max_s = parse_pcie_speed(f.host.read_line(d + "/max_link_speed"))
    max_w = _width(f.host.read_line(d + "/max_link_width"))
    if not cur_s or not cur_w:
        return unknown("nic.pcie", "no PCIe link attributes (virtual or non-PCIe device)", why, subject=iface)
    cur_bps = rate.pcie_bps(cur_s, cur_w)
    mbps = f.link_mbps(iface)
    link_bps = mbps * 1e6 if mbps else None
    data = {"current_gts": cur_s, "current_width": cur_w, "max_gts": max_s, "max_width": max_w,
            "current_bps": cur_bps, "link_bps": link_bps,
            "max_bps": rate.pcie_bps(max_s, max_w) if max_s and max_w else None}
    cur = _desc(cur_s, cur_w)
    if link_bps:
        cur += " for a %s link" % rate.fmt_rate(link_bps)
    cap = _desc(max_s, max_w) if max_s and max_w else "capability unknown"
    if link_bps and cur_bps < link_bps:
        best = "%s; the link needs %s" % (cap, rate.fmt_rate(link_bps))
        return Finding("nic.pcie", "crit", cur, best, why,
                       note="move the NIC to a slot with enough lanes/generation (lspci -vv: LnkCap vs LnkSta)",
                       fix_kind="manual", subject=iface, data=data)
    if (max_s and cur_s < max_s) or (max_w and cur_w < max_w):
        return Finding("nic.pcie", "warn", cur + " (below capability)", cap, why,
                       note="re-seat the card or use a full-width slot; check lspci -vv LnkSta for 'downgraded'",
                       fix_kind="manual", subject=iface, data=data)
    return Finding("nic.pcie", "ok", cur, cap, why, subject=iface, data=data)
