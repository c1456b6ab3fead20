"""Every fix in every fixture's report runs as printed: it parses as shell, names
no placeholder, and says how it survives a reboot."""
import re
import subprocess
import unittest

from helpers import doctor_json, fixture, fixture_names

# Words that stand for something the reader would have to fill in.
PLACEHOLDERS = [
    (re.compile(r"<[^<>\n]*>"), "<...>"),
    (re.compile(r"\b[rt]x-N\b"), "rx-N / tx-N"),
    (re.compile(r"\bethX\b|\bIFACE\b|\bIF\b"), "interface placeholder"),
    (re.compile(r"\b(?:PORT|QUEUE|MASK|CPUS?|APP|PID|MAX|N)\b"), "upper-case placeholder"),
    (re.compile(r"\.\.\."), "..."),
]

RUNS = [(), ("--app-cores", "1"), ("--app-cores", "0,1")]
PROFILES = ("reproducible", "throughput", "latency")


def shell_syntax_error(text):
    """None when `sh -n` accepts text, else its complaint."""
    proc = subprocess.run(["sh", "-n"], input=text, capture_output=True, text=True, timeout=30)
    return None if proc.returncode == 0 else proc.stderr.strip() or "rc %d" % proc.returncode


def every_fix():
    """(fixture, profile, args, finding) for every finding with a fix."""
    for name in fixture_names():
        for profile in PROFILES:
            for args in RUNS:
                _, doc, _ = doctor_json("--root", fixture(name), "--profile", profile,
                                        "--probe-seconds", "0", *args)
                for f in doc["findings"]:
                    yield name, profile, args, f


class FixCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.found = list(every_fix())

    def test_there_are_fixes_to_check(self):
        fixes = [f for *_, f in self.found if f["fix"]]
        self.assertGreater(len(fixes), 100)
        ids = {f["id"] for f in fixes}
        for fid in ("nic.irq_affinity", "nic.rps", "nic.rfs", "nic.xps", "nic.rings", "cpu.cstates",
                    "sysctl.tcp_rmem", "netfilter.rules"):
            self.assertIn(fid, ids)

    def test_fixes_parse_as_shell(self):
        seen = set()
        for name, profile, args, f in self.found:
            if not f["fix"] or f["fix"] in seen:
                continue
            seen.add(f["fix"])
            err = shell_syntax_error(f["fix"] + "\n")
            self.assertIsNone(err, (name, profile, args, f["id"], f["fix"]))

    def test_no_placeholders(self):
        for name, profile, args, f in self.found:
            for line in (f["fix"] or "").splitlines():
                for pattern, what in PLACEHOLDERS:
                    self.assertIsNone(pattern.search(line), (what, name, f["id"], line))
                if f["subject"]:
                    # a fix about an interface names that interface, not another one
                    for other in re.findall(r"/sys/class/net/([^/\s]+)/", line):
                        self.assertEqual(other, f["subject"], (name, f["id"], line))

    def test_every_fix_says_how_it_lasts(self):
        for name, profile, args, f in self.found:
            if f["fix"] or f["fix_kind"] == "cmdline":
                self.assertTrue(f["persist"], (name, profile, f["id"]))
            for p in f["persist"]:
                self.assertTrue(p["how"], (name, f["id"]))
                if p["method"] not in ("manual", "service"):
                    self.assertTrue(p["lines"] and p["file"], (name, f["id"], p))

    def test_persist_matches_the_runtime_change(self):
        """The sysctl.d line sets what `sysctl -w` sets; the udev rule runs the same ethtool."""
        for name, profile, args, f in self.found:
            fix = f["fix"] or ""
            for p in f["persist"]:
                if p["method"] == "sysctl.d" and fix.startswith("sysctl -w"):
                    for line in p["lines"]:
                        key, value = [s.strip() for s in line.split("=", 1)]
                        self.assertTrue(re.search(re.escape(key) + r"='?" + re.escape(value), fix)
                                        or "/proc/sys/" + key.replace(".", "/") in fix,
                                        (name, f["id"], line, fix))
                if p["method"] == "udev" and fix.startswith("ethtool "):
                    runs = [re.search(r'RUN\+="/usr/sbin/ethtool (.*)"', l).group(1) for l in p["lines"]]
                    self.assertIn(fix[len("ethtool "):], runs, (name, f["id"]))


if __name__ == "__main__":
    unittest.main()
