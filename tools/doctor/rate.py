"""Line-rate and PCIe arithmetic (also the `tern doctor rate` subcommand).

On Ethernet every frame costs, besides the IP packet (MTU bytes), 38 bytes of
wire time: 7 preamble + 1 start delimiter + 14 header + 4 FCS + 12 inter-frame
gap.  TCP payload per frame is the MSS: MTU - 20 (IP) - 20 (TCP) - 12 when
TCP timestamps are on.  So

    payload rate = link rate * MSS / (MTU + 38)

which is 94.1 Gbit/s on 100GbE with timestamps, 94.9 without.  The smallest
frame (64 bytes) plus preamble, delimiter and gap is 84 bytes on the wire:
148.8 Mpps at 100 Gbit/s.
"""
from __future__ import annotations

import re

ETH_OVERHEAD = 38      # preamble 7 + SFD 1 + header 14 + FCS 4 + IFG 12
MIN_FRAME_WIRE = 84    # 64-byte frame + preamble/SFD 8 + IFG 12
IP_TCP_HEADERS = 40
TIMESTAMP_OPTION = 12  # 10 bytes of option, padded to 12

_UNITS = {"": 1e9, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}

# PCIe generations: GT/s per lane -> (encoding efficiency, generation)
PCIE_GENS = {2.5: (8 / 10, 1), 5.0: (8 / 10, 2), 8.0: (128 / 130, 3),
             16.0: (128 / 130, 4), 32.0: (128 / 130, 5), 64.0: (242 / 256, 6)}
GEN_SPEED = {gen: gts for gts, (_, gen) in PCIE_GENS.items()}


def parse_link(text):
    """'100G', '25GbE', '100 Gbit/s', '40000M', '10Gbps', '2.5g' -> bit/s.

    A bare number is read as Gbit/s ('100' = 100G).  Raises ValueError.
    """
    s = str(text).strip().lower().replace(" ", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgt]?)(b|be|bit|bits|bps|b/s|bit/s|bits/s)?", s)
    if not m:
        raise ValueError("cannot read link rate %r (try 100G, 25GbE, 40000M, 10Gbit/s)" % text)
    value = float(m.group(1)) * _UNITS[m.group(2)]
    if value <= 0:
        raise ValueError("link rate must be positive: %r" % text)
    return value


def mss(mtu, timestamps=True):
    return mtu - IP_TCP_HEADERS - (TIMESTAMP_OPTION if timestamps else 0)


def payload_rate(link_bps, mtu, timestamps=True):
    """Best-case TCP payload bit/s on an Ethernet link."""
    return link_bps * mss(mtu, timestamps) / (mtu + ETH_OVERHEAD)


def min_frame_pps(link_bps):
    """64-byte frames per second at line rate."""
    return link_bps / (MIN_FRAME_WIRE * 8)


def pcie_bps(gts, width):
    """Usable PCIe bit/s after line encoding (protocol overhead not counted)."""
    enc = PCIE_GENS.get(float(gts), (128 / 130 if gts >= 8 else 8 / 10, None))[0]
    return gts * 1e9 * width * enc


def pcie_gen(gts):
    return PCIE_GENS.get(float(gts), (None, None))[1]


def parse_pcie(text):
    """'gen3x8', '3x8', 'Gen4 x16', '8GT/s x8' -> (GT/s, width).  Raises ValueError."""
    s = str(text).strip().lower().replace(" ", "")
    m = re.fullmatch(r"(?:gen)?(\d)x(\d+)", s)
    if m and int(m.group(1)) in GEN_SPEED:
        return GEN_SPEED[int(m.group(1))], int(m.group(2))
    m = re.fullmatch(r"([\d.]+)gt/sx(\d+)", s)
    if m:
        return float(m.group(1)), int(m.group(2))
    raise ValueError("cannot read PCIe link %r (try gen3x8, 4x16, 8GT/sx8)" % text)


def fmt_rate(bps):
    """8.5e10 -> '85.0 Gbit/s'."""
    for unit, scale in (("Tbit/s", 1e12), ("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return "%.1f %s" % (bps / scale, unit)
    return "%.0f bit/s" % bps


def fmt_pps(pps):
    for unit, scale in (("Mpps", 1e6), ("kpps", 1e3)):
        if pps >= scale:
            return "%.1f %s" % (pps / scale, unit)
    return "%.0f pps" % pps


def payload(link_bps, mtu, timestamps):
    """{"mss", "payload_bps", "share"} for one timestamp setting."""
    bps = payload_rate(link_bps, mtu, timestamps)
    return {"mss": mss(mtu, timestamps), "payload_bps": bps, "share": bps / link_bps}


def calculate(link_bps, mtu, timestamps=True, pcie=None):
    """Everything `tern doctor rate` prints, as a dict.  mss/payload_bps are
    for the chosen timestamp setting; with_timestamps/without_timestamps give
    both, since the two ends of a connection decide it together."""
    out = {
        "link_bps": link_bps, "mtu": mtu, "timestamps": timestamps,
        "mss": mss(mtu, timestamps), "wire_bytes_per_frame": mtu + ETH_OVERHEAD,
        "payload_bps": payload_rate(link_bps, mtu, timestamps),
        "with_timestamps": payload(link_bps, mtu, True),
        "without_timestamps": payload(link_bps, mtu, False),
        "min_frame_pps": min_frame_pps(link_bps),
    }
    if pcie:
        gts, width = pcie
        out["pcie"] = {"gts": gts, "width": width, "gen": pcie_gen(gts),
                       "usable_bps": pcie_bps(gts, width),
                       "enough": pcie_bps(gts, width) >= link_bps}
    return out


def render(res):
    on, off = res["with_timestamps"], res["without_timestamps"]
    mark_on, mark_off = ("  <- selected", "") if res["timestamps"] else ("", "  <- selected")
    lines = [
        "link rate        %s" % fmt_rate(res["link_bps"]),
        "MTU              %d B  (%d B of wire time per full frame)" % (res["mtu"], res["wire_bytes_per_frame"]),
        "MSS              %d B with timestamps (MTU - 40 IP/TCP headers - 12 option), %d B without "
        "(MTU - 40)" % (on["mss"], off["mss"]),
        "TCP payload max  %s with timestamps (%.1f%% of the link)%s"
        % (fmt_rate(on["payload_bps"]), 100 * on["share"], mark_on),
        "                 %s without timestamps (%.1f%% of the link)%s"
        % (fmt_rate(off["payload_bps"]), 100 * off["share"], mark_off),
        "64-byte frames   %s  (84 B of wire time each)" % fmt_pps(res["min_frame_pps"]),
    ]
    if "pcie" in res:
        p = res["pcie"]
        lines.append("PCIe             Gen%s x%d at %g GT/s = %s usable: %s" % (
            p["gen"] or "?", p["width"], p["gts"], fmt_rate(p["usable_bps"]),
            "enough for the link" if p["enough"] else "BELOW the link rate"))
    return "\n".join(lines) + "\n"
