"""Instructions per request of an in-memory stack, counted by callgrind:
(instructions at N_large round trips - instructions at N_small) / (N_large -
N_small), which cancels start-up and connection set-up. Both ends of the
connection are in the one process, so this is client + server per round
trip. The kernel's instructions are invisible to callgrind, so the kern-*
programs are not measured this way."""
import os
import re
import subprocess
import tempfile

from . import procs


def available():
    try:
        subprocess.run(["valgrind", "--version"], capture_output=True, check=True)
        return None
    except (OSError, subprocess.CalledProcessError):
        return "valgrind not found (apt-get install valgrind)"


def total_ir(path):
    with open(path) as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s*(\d+)", line)
            if m:
                return int(m.group(1))
    raise procs.RunError("no instruction total in %s" % path)


def top_functions(path, count=15):
    """[(self instructions, share %, function)] from callgrind_annotate."""
    try:
        p = subprocess.run(["callgrind_annotate", "--threshold=99", path],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return []
    out = []
    for line in p.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*([\d.]+)%\)\s+(.+)$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        fn = m.group(3).strip()
        fn = re.sub(r"\s+\[[^\]]*\]$", "", fn)       # drop "[binary]"
        if ":" in fn:                                   # source file's base name
            path, _, func = fn.partition(":")
            fn = "%s:%s" % (os.path.basename(path), func)
        out.append({"ir": int(m.group(1).replace(",", "")), "pct": float(m.group(2)),
                    "function": fn})
        if len(out) >= count:
            break
    return out


def measure(name, argv_for, n_small, n_large, timeout, workdir=None):
    """argv_for(n) runs exactly n round trips. Returns the result dict."""
    res = {"stack": name, "n_small": n_small, "n_large": n_large}
    wd = workdir or tempfile.mkdtemp(prefix="tern-bench-cg-")
    irs = {}
    for n in (n_small, n_large):
        outf = os.path.join(wd, "callgrind.%s.%d.out" % (name, n))
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + outf] + argv_for(n)
        procs.run(argv, timeout, what="callgrind %s --requests %d" % (name, n))
        irs[n] = total_ir(outf)
        if n == n_large:
            res["command"] = argv
            res["top_functions"] = top_functions(outf)
            res["profile_file"] = outf
    res["ir_small"] = irs[n_small]
    res["ir_large"] = irs[n_large]
    res["instructions_per_request"] = (irs[n_large] - irs[n_small]) / float(n_large - n_small)
    return res
