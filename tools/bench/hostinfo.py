"""What every result is recorded with: the machine, the git commit, the
doctor's audit of the host (tools/tern doctor --json), the load."""
import json
import os
import platform
import socket
import subprocess
import sys

TOOLS_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
REPO = os.path.dirname(TOOLS_DIR)


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def machine():
    cpuinfo = _read("/proc/cpuinfo")
    model = next((l.split(":", 1)[1].strip() for l in cpuinfo.splitlines()
                  if l.startswith("model name")), platform.processor() or "unknown")
    mem_kb = next((int(l.split()[1]) for l in _read("/proc/meminfo").splitlines()
                   if l.startswith("MemTotal:")), 0)
    return {
        "hostname": socket.gethostname(),
        "cpu_model": model,
        "cpus_online": _read("/sys/devices/system/cpu/online").strip(),
        "ncpus": os.cpu_count(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "mem_gib": round(mem_kb / 1048576.0, 1),
        "os": _os_name(),
        "python": sys.version.split()[0],
    }


def _os_name():
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.system()


def online_cpus():
    """The online CPUs as a list of numbers."""
    text = _read("/sys/devices/system/cpu/online").strip()
    cpus = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus.extend(range(int(a), int(b) + 1))
        elif part:
            cpus.append(int(part))
    return cpus or list(range(os.cpu_count() or 1))


def git():
    def g(*args):
        try:
            return subprocess.run(["git", "-C", REPO] + list(args), capture_output=True,
                                  text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    commit = g("rev-parse", "HEAD")
    dirty = g("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit or None, "dirty": bool(dirty),
            "describe": g("log", "-1", "--format=%h %s")[:100] or None}


def doctor(cpus):
    """The doctor's JSON for this host, or {"error": why}."""
    argv = [sys.executable, os.path.join(TOOLS_DIR, "tern"), "doctor", "--json",
            "--fail-on", "never"]
    if cpus:
        argv += ["--app-cores", ",".join(str(c) for c in cpus)]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": "tern doctor did not run: %s" % e}
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"error": "tern doctor printed no JSON (status %d): %s"
                % (p.returncode, (p.stderr or "").strip()[-200:])}


def doctor_summary(doc):
    """[(id, severity, current)] of the doctor's warn and crit findings."""
    out = []
    for f in doc.get("findings", []) if isinstance(doc, dict) else []:
        if f.get("severity") in ("warn", "crit"):
            out.append((f.get("id"), f.get("severity"), f.get("current")))
    return out
