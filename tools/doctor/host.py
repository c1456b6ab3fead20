"""Access to the audited machine: files under a root, and programs to run.

Every path the checks use is an absolute Linux path ("/proc/sys/...").  Host
maps it under --root, so the same checks run on the live machine (root "/")
and on fixture trees in the tests.

Programs (ethtool, nft, iptables-save) go through a runner object so they can
be replaced: on the live machine RealRunner runs them; under any other root
FixtureRunner answers from canned files inside the tree, because running the
real ethtool would describe this machine, not the tree:

    ROOT/.ethtool/IFACE/OPT.txt   stdout of `ethtool OPT IFACE` (OPT like -c)
    ROOT/.ethtool/applied.log     mutating ethtool calls (-G, -C, ...) are
                                  appended here instead of being run
    ROOT/.cmd/PROG.txt            stdout of PROG with the fixed arguments the
                                  doctor uses (nft.txt = `nft list ruleset`,
                                  iptables-save.txt = `iptables-save`)
    ROOT/.probe/cpuN.txt          the core speed probe's rates on CPU N, one
                                  per line (probe.py)

No ROOT/.ethtool directory means "ethtool is not installed"; a missing OPT
file means "the driver does not support that query".
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

COMMAND_TIMEOUT = 15  # seconds; ethtool on a wedged driver must not hang us


@dataclass
class CmdResult:
    rc: int
    out: str
    err: str = ""


class RealRunner:
    """Runs programs on the live machine; None when the program is absent."""

    def run(self, argv):
        if shutil.which(argv[0]) is None:
            return None
        env = dict(os.environ, LC_ALL="C", LANG="C")
        try:
            proc = subprocess.run(argv, capture_output=True, text=True,
                                  errors="replace", timeout=COMMAND_TIMEOUT,
                                  env=env)
        except subprocess.TimeoutExpired:
            return CmdResult(124, "", "timed out after %ds" % COMMAND_TIMEOUT)
        except OSError as exc:
            return CmdResult(126, "", str(exc))
        return CmdResult(proc.returncode, proc.stdout, proc.stderr)


# ethtool options that change settings; under a fixture root they are logged.
ETHTOOL_SETTERS = {"-G", "-C", "-L", "-A", "-K", "-X", "-U", "-N", "-s"}


class FixtureRunner:
    """Answers program runs from canned files inside a fixture tree."""

    def __init__(self, root):
        self.root = root

    def run(self, argv):
        prog = os.path.basename(argv[0])
        if prog == "ethtool":
            return self._ethtool(argv[1:])
        path = os.path.join(self.root, ".cmd", prog + ".txt")
        if not os.path.isfile(path):
            return None
        with open(path, errors="replace") as f:
            return CmdResult(0, f.read())

    def _ethtool(self, args):
        base = os.path.join(self.root, ".ethtool")
        if not os.path.isdir(base):
            return None
        if not args or args[0] in ("--version", "-h"):
            return CmdResult(0, "ethtool version 6.x (fixture)\n")
        opt = args[0]
        if opt in ETHTOOL_SETTERS:
            with open(os.path.join(base, "applied.log"), "a") as f:
                f.write("ethtool " + " ".join(args) + "\n")
            return CmdResult(0, "")
        iface = args[1] if len(args) > 1 else ""
        path = os.path.join(base, iface, opt + ".txt")
        if not os.path.isfile(path):
            return CmdResult(95, "", "Operation not supported (no %s)" % path)
        with open(path, errors="replace") as f:
            return CmdResult(0, f.read())


def natural_key(text):
    """Sort key that puts cpu2 before cpu10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


class Host:
    """Reads (and, for --apply, writes) files of one machine under a root."""

    def __init__(self, root="/", runner=None):
        self.root = os.path.abspath(root)
        self.is_live = self.root == "/"
        if runner is None:
            runner = RealRunner() if self.is_live else FixtureRunner(self.root)
        self.runner = runner

    def path(self, p):
        return os.path.join(self.root, p.lstrip("/"))

    def exists(self, p):
        return os.path.exists(self.path(p))

    def isdir(self, p):
        return os.path.isdir(self.path(p))

    def read(self, p):
        """Whole file as text, or None when missing/unreadable."""
        try:
            with open(self.path(p), errors="replace") as f:
                return f.read()
        except OSError:
            return None

    def read_line(self, p):
        text = self.read(p)
        return None if text is None else text.strip()

    def read_int(self, p):
        text = self.read_line(p)
        try:
            return int(text)
        except (TypeError, ValueError):
            return None

    def listdir(self, p):
        try:
            return sorted(os.listdir(self.path(p)), key=natural_key)
        except OSError:
            return []

    def glob(self, pattern):
        """Root-relative absolute paths matching pattern, naturally sorted."""
        hits = glob.glob(self.path(pattern))
        rel = ["/" + os.path.relpath(h, self.root) for h in hits]
        return sorted(rel, key=natural_key)

    def realpath(self, p):
        """The target of a link such as /sys/class/net/IF/device."""
        return os.path.realpath(self.path(p))

    def write(self, p, text):
        """Write a value the way `echo VALUE > FILE` would (one write call)."""
        with open(self.path(p), "w") as f:
            f.write(text)

    def run(self, argv):
        return self.runner.run(argv)

    def core_speed(self, cpu, seconds):
        """The speed probe's rates on `cpu` (probe.py): measured on the live
        machine, read from ROOT/.probe/cpuN.txt under a fixture root; None
        when neither can be had."""
        if self.is_live:
            from . import probe
            return probe.measure(cpu, seconds)
        text = self.read("/.probe/cpu%d.txt" % cpu)
        if text is None:
            return None
        try:
            return [float(x) for x in text.split()]
        except ValueError:
            return None
