"""--app-cores must name online CPUs of the audited host (its
/sys/devices/system/cpu/online): otherwise a usage error, exit 2, one line."""
import os
import unittest

from helpers import doctor_json, fixture, fixture_copy, run_doctor, run_tern

from doctor import procfs


class AppCores(unittest.TestCase):
    def test_offline_cores_are_a_usage_error(self):
        for cores, bad in (("7-9", "7-9"), ("2,4", "4"), ("0,63", "63")):
            rc, out, err = run_doctor("--root", fixture("virtio_kvm"), "--app-cores", cores)
            self.assertEqual(rc, 2, cores)
            self.assertEqual(out, "")
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn("error: --app-cores", err)
            self.assertIn(bad + " not online", err)
            self.assertIn("online: 0-3", err)

    def test_online_cores_are_accepted(self):
        rc, doc, err = doctor_json("--root", fixture("virtio_kvm"), "--app-cores", "0-3",
                                   "--probe-seconds", "0")
        self.assertIn(rc, (0, 1), err)
        self.assertEqual(doc["options"]["app_cores"], [0, 1, 2, 3])
        self.assertEqual([f for f in doc["findings"] if f["severity"] == "crit"], [])

    def test_follows_the_trees_online_file(self):
        root = fixture_copy(self, "virtio_kvm")
        with open(os.path.join(root, "sys/devices/system/cpu/online"), "w") as f:
            f.write("0-1\n")             # CPUs 2-3 taken offline
        rc, _, err = run_doctor("--root", root, "--app-cores", "2")
        self.assertEqual(rc, 2)
        self.assertIn("online: 0-1", err)

    def test_tree_without_cpu_information(self):
        """Nothing to check against: accepted, the checks say unknown."""
        root = fixture_copy(self, "virtio_kvm")
        empty = os.path.join(os.path.dirname(root), "empty")
        os.mkdir(empty)
        rc, doc, err = doctor_json("--root", empty, "--app-cores", "5", "--probe-seconds", "0")
        self.assertIn(rc, (0, 1), err)

    def test_live_host(self):
        with open("/sys/devices/system/cpu/online") as f:
            online = procfs.parse_cpulist(f.read())
        beyond = "%d-%d" % (max(online) + 5, max(online) + 7)
        rc, out, err = run_tern("doctor", "--app-cores", beyond)
        self.assertEqual(rc, 2)
        self.assertIn("not online on this host (online: %s)" % procfs.format_cpulist(online), err)
        self.assertNotIn("Traceback", err)


if __name__ == "__main__":
    unittest.main()
