"""--export DIR: the files that make the fixes survive a reboot, checked for
content and, where a fixture allows, by running them against the tree."""
import configparser
import glob
import os
import re
import subprocess
import tempfile
import unittest

from helpers import doctor_json, fixture_copy, one, run_doctor
from test_apply import snapshot


def read(path):
    with open(path) as f:
        return f.read()


def body(text):
    """Lines that are not comments or blank."""
    return [l for l in text.splitlines() if l.strip() and not l.startswith("#")]


class ExportNoisyHost(unittest.TestCase):
    """The noisy host needs sysctls, CPU sysfs writes, boot parameters, ethtool
    and IRQ pinning: every kind of file."""

    def setUp(self):
        self.root = fixture_copy(self, "noisy_host")
        self.out = os.path.join(os.path.dirname(self.root), "export")
        self.before = snapshot(self.root)
        self.rc, self.doc, self.err = doctor_json("--root", self.root, "--export", self.out,
                                                  "--probe-seconds", "0")

    def test_writes_every_kind_and_touches_nothing(self):
        self.assertIn("wrote ", self.err)
        names = sorted(os.path.relpath(p, self.out) for p in glob.glob(self.out + "/**", recursive=True)
                       if os.path.isfile(p))
        self.assertEqual(names, ["90-tern-doctor.conf", "90-tern-doctor.rules", "README",
                                 "kernel-cmdline.txt", "tern-doctor-steering",
                                 "tern-doctor-steering.service", "tern-doctor.tmpfiles.conf",
                                 "tuned/tern-reproducible/tuned.conf"])
        self.assertEqual(snapshot(self.root), self.before)     # the audited host is not changed
        readme = read(os.path.join(self.out, "README"))
        for name in names[:-1]:
            if name != "README":
                self.assertIn(name, readme)
        self.assertIn("tuned-adm profile tern-reproducible", readme)
        self.assertIn("systemctl disable", readme)               # firewall / by hand

    def test_sysctl_file_matches_the_tree(self):
        lines = body(read(os.path.join(self.out, "90-tern-doctor.conf")))
        keys = {}
        for line in lines:
            key, value = [s.strip() for s in line.split("=", 1)]
            self.assertTrue(os.path.exists(os.path.join(self.root, "proc/sys", key.replace(".", "/"))), key)
            keys[key] = value
        self.assertEqual(keys["net.ipv4.tcp_rmem"], "4096 131072 67108864")
        self.assertEqual(keys["net.core.rmem_max"], "67108864")

    def test_tmpfiles_and_cmdline(self):
        lines = body(read(os.path.join(self.out, "tern-doctor.tmpfiles.conf")))
        for line in lines:
            kind, path, mode, user, group, age, arg = line.split()
            self.assertEqual((kind, mode, user, group, age), ("w", "-", "-", "-", "-"))
            self.assertTrue(glob.glob(os.path.join(self.root, path.lstrip("/"))), path)
        self.assertIn("w /sys/devices/system/cpu/intel_pstate/no_turbo - - - - 1", lines)
        params = read(os.path.join(self.out, "kernel-cmdline.txt")).split()
        for p in ("nosmt", "intel_idle.max_cstate=0", "processor.max_cstate=1"):
            self.assertIn(p, params)
        self.assertNotIn("mitigations=off", params)   # info only: compare hosts, do not change them

    def test_udev_rule_runs_the_same_ethtool(self):
        lines = body(read(os.path.join(self.out, "90-tern-doctor.rules")))
        rings = one(self, self.doc, "nic.rings", "eth0")["fix"]
        self.assertTrue(any(l.endswith('RUN+="/usr/sbin/ethtool %s"' % rings[len("ethtool "):]) for l in lines),
                        lines)
        for line in lines:
            self.assertRegex(line, r'^ACTION=="add", SUBSYSTEM=="net", (ATTR\{address\}|KERNEL)=="[^"]+", '
                                   r'RUN\+="/usr/sbin/ethtool -[A-Za-z] eth0 [^"]+"$')

    def test_steering_script_pins_by_name(self):
        script = os.path.join(self.out, "tern-doctor-steering")
        self.assertTrue(os.access(script, os.X_OK))
        text = read(script)
        self.assertEqual(subprocess.run(["sh", "-n", script]).returncode, 0)
        self.assertIn("pin eth0-TxRx-1 1", text)
        # run it against the tree: the IRQ is found by name and pinned
        runnable = text.replace("/proc/", self.root + "/proc/").replace("/sys/", self.root + "/sys/")
        proc = subprocess.run(["sh", "-c", runnable], capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(read(os.path.join(self.root, "proc/irq/41/smp_affinity_list")), "1\n")
        unit = read(os.path.join(self.out, "tern-doctor-steering.service"))
        self.assertIn("ExecStart=/usr/local/sbin/tern-doctor-steering", unit)
        self.assertIn("After=sys-subsystem-net-devices-eth0.device", unit)
        self.assertIn("WantedBy=multi-user.target", unit)

    def test_tuned_profile(self):
        conf = configparser.ConfigParser(interpolation=None)
        conf.optionxform = str
        conf.read(os.path.join(self.out, "tuned/tern-reproducible/tuned.conf"))
        self.assertEqual(conf["cpu"]["governor"], "performance")
        self.assertEqual(conf["sysctl"]["net.ipv4.tcp_rmem"], "4096 131072 67108864")
        self.assertEqual(conf["sysfs"]["/sys/devices/system/cpu/intel_pstate/no_turbo"], "1")
        self.assertEqual(conf["net_eth0"]["ring"], "rx 4096 tx 4096")
        self.assertIn("nosmt", conf["bootloader"]["cmdline"])


class ExportAfterApply(unittest.TestCase):
    def test_state_file_changes_are_exported(self):
        """--apply first, --export later: the host looks fine, yet the applied
        changes still need their reboot-proof form."""
        root = fixture_copy(self, "virtio_kvm")
        out = os.path.join(os.path.dirname(root), "export")
        rc, doc, err = doctor_json("--root", root, "--apply", "--probe-seconds", "0")
        self.assertEqual(one(self, doc, "nic.irq_affinity", "eth0")["severity"], "ok")
        doctor_json("--root", root, "--export", out, "--probe-seconds", "0")
        text = read(os.path.join(out, "tern-doctor-steering"))
        for line in ("pin virtio2-input.0 0", "pin virtio2-output.0 0",
                     "pin virtio2-input.1 1", "pin virtio2-output.1 1"):
            self.assertIn(line, text)
        self.assertIn("ring=rx 4096 tx 4096", read(os.path.join(out, "tuned/tern-reproducible/tuned.conf")))
        rc, out_text, err = run_doctor("--root", root, "--revert")
        self.assertEqual(rc, 0, out_text + err)


class ExportProfiles(unittest.TestCase):
    def test_latency_profile(self):
        root = fixture_copy(self, "noisy_host")
        out = tempfile.mkdtemp(dir=os.path.dirname(root))
        doctor_json("--root", root, "--profile", "latency", "--export", out, "--probe-seconds", "0")
        conf = read(os.path.join(out, "tuned/tern-latency/tuned.conf"))
        self.assertIn("net.core.busy_poll=50", conf)
        self.assertIn("force_latency=2", conf)
        self.assertIn("net.core.busy_read = 50", read(os.path.join(out, "90-tern-doctor.conf")))

    def test_unwritable_dir_is_an_error(self):
        root = fixture_copy(self, "noisy_host")
        blocker = os.path.join(os.path.dirname(root), "file")
        with open(blocker, "w") as f:
            f.write("x")
        rc, out, err = run_doctor("--root", root, "--export", os.path.join(blocker, "sub"),
                                  "--probe-seconds", "0")
        self.assertEqual(rc, 2)
        self.assertIn("error:", err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)


class ExportUnitNames(unittest.TestCase):
    def test_escape(self):
        from doctor import export
        self.assertEqual(export.unit_escape("enp1s0"), "enp1s0")
        self.assertEqual(export.unit_escape("br-lan"), r"br\x2dlan")
        self.assertTrue(re.fullmatch(r"[A-Za-z0-9_.\\]+", export.unit_escape("a-b@c")))


if __name__ == "__main__":
    unittest.main()
