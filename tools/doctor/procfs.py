"""Parsers for /proc and /sys text formats.  Pure functions: text in, data out.

Every parser tolerates junk (short rows, odd columns) and returns what it
could read, because a doctor that crashes on an unusual kernel is useless.
"""
from __future__ import annotations

import re


# --- CPU lists and masks ----------------------------------------------------

def parse_cpulist(text):
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]; junk -> []."""
    cpus = set()
    if not text:
        return []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?(?::\d+/\d+)?", part)
        if not m:
            continue
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def format_cpulist(cpus):
    """[0, 1, 2, 3, 8] -> '0-3,8' (the kernel's own notation)."""
    cpus = sorted(set(cpus))
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


def parse_cpumask(text):
    """'00000000,0000000f' (hex, comma every 32 bits) -> [0, 1, 2, 3]."""
    if text is None:
        return None
    digits = text.strip().replace(",", "")
    try:
        value = int(digits, 16) if digits else 0
    except ValueError:
        return None
    return [bit for bit in range(value.bit_length()) if value >> bit & 1]


def format_cpumask(cpus):
    """[0..39] -> 'ff,ffffffff': the format rps_cpus and smp_affinity use."""
    value = 0
    for cpu in cpus:
        value |= 1 << cpu
    digits = "%x" % value
    groups = []
    while digits:
        groups.insert(0, digits[-8:])
        digits = digits[:-8]
    if not groups:
        return "0"
    return ",".join([groups[0]] + [g.rjust(8, "0") for g in groups[1:]])


# --- /proc/interrupts and /proc/softirqs -----------------------------------

def _cpu_header(line):
    return [int(tok[3:]) for tok in line.split() if tok.startswith("CPU") and tok[3:].isdigit()]


def parse_interrupts(text):
    """/proc/interrupts -> {"cpus": [...], "irqs": {key: {...}}}.

    key is the first column without its colon ("109", "NMI").  Each entry has
    counts per CPU (aligned with "cpus"), desc (everything after the counts)
    and name (the last word of desc, e.g. "mlx5_comp0@pci:0000:c1:00.0").
    """
    result = {"cpus": [], "irqs": {}}
    if not text:
        return result
    lines = text.splitlines()
    if not lines:
        return result
    cpus = _cpu_header(lines[0])
    result["cpus"] = cpus
    for line in lines[1:]:
        if ":" not in line:
            continue
        key, rest = line.split(":", 1)
        key = key.strip()
        toks = rest.split()
        counts = []
        while toks and len(counts) < len(cpus) and toks[0].isdigit():
            counts.append(int(toks.pop(0)))
        counts += [0] * (len(cpus) - len(counts))
        desc = " ".join(toks)
        result["irqs"][key] = {"counts": counts, "desc": desc,
                               "name": toks[-1] if toks else ""}
    return result


def parse_softirqs(text):
    """/proc/softirqs -> {"cpus": [...], "rows": {"NET_RX": [per cpu], ...}}."""
    result = {"cpus": [], "rows": {}}
    if not text:
        return result
    lines = text.splitlines()
    cpus = _cpu_header(lines[0]) if lines else []
    result["cpus"] = cpus
    for line in lines[1:]:
        if ":" not in line:
            continue
        key, rest = line.split(":", 1)
        vals = [int(t) for t in rest.split() if t.isdigit()]
        vals += [0] * (len(cpus) - len(vals))
        result["rows"][key.strip()] = vals[:len(cpus)]
    return result


# --- /proc/net/softnet_stat --------------------------------------------------

# Column order, both layouts (all hex).  Columns 4-8 are zero on every kernel
# since 2.6-era fastroute fields were removed.
SOFTNET_COLUMNS = {0: "processed", 1: "dropped", 2: "time_squeeze",
                   8: "cpu_collision", 9: "received_rps", 10: "flow_limit_count",
                   11: "backlog_len", 12: "cpu", 13: "input_qlen",
                   14: "process_qlen"}


def parse_softnet(text, online_cpus=None):
    """/proc/net/softnet_stat -> (layout, rows).

    Old layout (before 5.10): 11 columns, one row per *online* CPU and no CPU
    number, so row i belongs to the i-th online CPU (we map it with
    online_cpus when given, else assume row i is CPU i).
    New layout (5.10+): 13 or more columns; column 12 is the CPU index, which
    stays right when CPUs are offline.
    """
    rows = []
    lines = [l for l in (text or "").splitlines() if l.strip()]
    ncols = 0
    for i, line in enumerate(lines):
        try:
            vals = [int(tok, 16) for tok in line.split()]
        except ValueError:
            continue
        ncols = max(ncols, len(vals))
        row = {name: vals[col] for col, name in SOFTNET_COLUMNS.items() if col < len(vals)}
        if "cpu" not in row:
            if online_cpus and len(online_cpus) == len(lines):
                row["cpu"] = online_cpus[i]
            else:
                row["cpu"] = i
        rows.append(row)
    layout = "new" if ncols >= 13 else ("old" if rows else "none")
    return layout, rows


# --- small formats -----------------------------------------------------------

def parse_modules(text):
    """/proc/modules -> set of loaded module names."""
    return {line.split()[0] for line in (text or "").splitlines() if line.strip()}


def parse_cmdline(text):
    """/proc/cmdline -> {"key": "value" or True}; stops at a bare '--'."""
    params = {}
    for tok in (text or "").split():
        if tok == "--":
            break
        if "=" in tok:
            key, value = tok.split("=", 1)
            params[key] = value
        else:
            params[tok] = True
    return params


def parse_pcie_speed(text):
    """'8.0 GT/s PCIe' / '16 GT/s' / '2.5 GT/s' -> 8.0 (GT/s) or None."""
    m = re.search(r"([\d.]+)\s*GT/s", text or "")
    return float(m.group(1)) if m else None
