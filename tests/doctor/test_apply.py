"""--apply then --revert on a copy of a fixture: values change, then come back
byte for byte; ethtool changes go to the fixture's applied.log."""
import json
import os
import unittest

from helpers import doctor_json, fixture_copy, one, run_doctor


def snapshot(root):
    """{relative path: bytes} of every file in the tree."""
    files = {}
    for base, _, names in os.walk(root):
        for name in names:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    return files


def read(root, path):
    with open(os.path.join(root, path.lstrip("/"))) as f:
        return f.read()


class ApplyRevert(unittest.TestCase):
    def setUp(self):
        self.root = fixture_copy(self, "noisy_host")
        self.before = snapshot(self.root)
        self.state = os.path.join(self.root, "var/lib/tern/doctor-state.json")
        self.log = os.path.join(self.root, ".ethtool/applied.log")

    def test_round_trip(self):
        rc, doc, err = doctor_json("--root", self.root, "--apply")
        self.assertIn("saved previous values", err)
        self.assertTrue(doc["options"]["applied"])
        # runtime settings changed ...
        self.assertEqual(read(self.root, "/sys/devices/system/cpu/intel_pstate/no_turbo"), "1\n")
        self.assertEqual(read(self.root, "/sys/devices/system/cpu/smt/control"), "off\n")
        self.assertEqual(read(self.root, "/sys/devices/system/cpu/cpufreq/policy2/scaling_governor"),
                         "performance\n")
        self.assertEqual(read(self.root, "/sys/devices/system/cpu/cpu3/cpuidle/state3/disable"), "1\n")
        self.assertEqual(read(self.root, "/sys/devices/system/cpu/cpu3/cpuidle/state1/disable"), "0\n")
        self.assertEqual(read(self.root, "/proc/irq/41/smp_affinity_list"), "1\n")
        self.assertEqual(read(self.root, "/proc/sys/net/ipv4/tcp_rmem"), "4096 131072 67108864\n")
        with open(self.log) as f:
            self.assertEqual(f.read(), "ethtool -G eth0 rx 4096 tx 4096\n")
        # ... and the re-check after --apply sees them
        for fid in ("cpu.boost", "cpu.smt", "cpu.cstates", "cpu.governor"):
            self.assertEqual(one(self, doc, fid)["severity"], "ok", fid)
        self.assertEqual(one(self, doc, "nic.irq_affinity", "eth0")["severity"], "ok")
        # kernel command line and firewall are never touched
        self.assertEqual(one(self, doc, "netfilter.rules")["severity"], "warn")
        with open(self.state) as f:
            state = json.load(f)
        self.assertEqual(state["version"], 1)
        saved = {c["path"]: c["old"] for c in state["changes"] if c["kind"] == "write"}
        self.assertEqual(saved["/sys/devices/system/cpu/intel_pstate/no_turbo"], "0\n")

        rc, out, err = run_doctor("--root", self.root, "--revert")
        self.assertEqual(rc, 0, out + err)
        self.assertFalse(os.path.exists(self.state))
        with open(self.log) as f:
            self.assertEqual(f.read().splitlines()[-1], "ethtool -G eth0 rx 512 tx 512")
        after = snapshot(self.root)
        after.pop(".ethtool/applied.log")
        self.assertEqual(after, self.before)   # every file byte-identical again

    def test_apply_twice_keeps_first_values(self):
        run_doctor("--root", self.root, "--apply")
        with open(os.path.join(self.root, "proc/sys/net/core/netdev_budget"), "w") as f:
            f.write("100\n")                  # someone changes it between the two --apply
        run_doctor("--root", self.root, "--apply")
        rc, _, _ = run_doctor("--root", self.root, "--revert")
        self.assertEqual(rc, 0)
        self.assertEqual(read(self.root, "/proc/sys/net/core/netdev_budget"), "300\n")

    def test_custom_state_file_and_nothing_to_revert(self):
        state = os.path.join(os.path.dirname(self.root), "state.json")
        rc, out, _ = run_doctor("--root", self.root, "--revert", "--state", state)
        self.assertEqual(rc, 0)
        self.assertIn("nothing to revert", out)
        run_doctor("--root", self.root, "--apply", "--state", state, "--profile", "latency")
        self.assertTrue(os.path.exists(state))
        self.assertFalse(os.path.exists(self.state))
        self.assertEqual(read(self.root, "/proc/sys/net/core/busy_poll"), "50\n")
        run_doctor("--root", self.root, "--revert", "--state", state)
        self.assertEqual(read(self.root, "/proc/sys/net/core/busy_poll"), "0\n")
        self.assertFalse(os.path.exists(state))


if __name__ == "__main__":
    unittest.main()
