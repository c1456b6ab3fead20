"""A real run on this machine (--root /): exit 0 or 1, never a traceback, valid JSON.

Read-only: it never passes --apply.  Works on hosts without a NIC, cpufreq or
cpuidle (such checks say "unknown")."""
import json
import os
import re
import subprocess
import tempfile
import unittest

from helpers import internal_errors, run_tern

from doctor import schema_check


class LiveHost(unittest.TestCase):
    def check_run(self, *args):
        rc, out, err = run_tern("doctor", "--root", "/", "--json", *args)
        self.assertIn(rc, (0, 1), err)
        self.assertNotIn("Traceback", err)
        doc = json.loads(out)
        self.assertEqual(schema_check.validate(doc), [])
        self.assertEqual(internal_errors(doc), [])
        self.assertEqual(doc["summary"]["exit_code"], rc)
        return doc

    def test_json_run(self):
        doc = self.check_run("--app-cores", "0", "--probe-seconds", "0.3")
        self.assertEqual(doc["root"], "/")
        self.assertGreater(doc["host"]["ncpus"], 0)
        # the speed probe measured every CPU it was given (steady or not:
        # this machine's neighbours decide)
        speed = [f for f in doc["findings"] if f["id"] == "cpu.core_speed"][0]
        self.assertIn(speed["severity"], ("ok", "warn"))
        self.assertEqual(sorted(speed["data"]["cpus"]), ["0"])
        self.assertGreater(speed["data"]["cpus"]["0"]["pieces"], 10)

    def test_during_run(self):
        doc = self.check_run("--during", "true", "--profile", "throughput",
                             "--probe-seconds", "0")
        self.assertEqual(doc["during"]["exit_code"], 0)
        self.assertTrue([f for f in doc["findings"] if f["id"] == "during.softnet"])

    def test_irq_plan_keeps_queues_together(self):
        """On this host's NICs (virtio here: input.Q and output.Q), every IRQ of a
        queue is planned onto the same CPU, and the fix says the same."""
        doc = self.check_run("--probe-seconds", "0")
        for f in doc["findings"]:
            if f["id"] != "nic.irq_affinity" or f["severity"] == "unknown":
                continue
            targets = {q["queue"]: q["target"] for q in f["data"]["queues"] if q["target"] is not None}
            for line in (f["fix"] or "").splitlines():
                cpu, irq = re.fullmatch(r"echo (\d+) > /proc/irq/(\d+)/smp_affinity_list", line).groups()
                queue = [q["queue"] for q in f["data"]["queues"] if int(irq) in q["irqs"]][0]
                self.assertEqual(int(cpu), targets[queue], line)

    def test_export_and_rate(self):
        with tempfile.TemporaryDirectory() as out:
            doc = self.check_run("--probe-seconds", "0", "--export", out)
            self.assertTrue(os.path.isfile(os.path.join(out, "README")))
            self.assertTrue(os.path.isfile(os.path.join(out, "tuned/tern-reproducible/tuned.conf")))
            script = os.path.join(out, "tern-doctor-steering")
            if os.path.exists(script):
                self.assertEqual(subprocess.run(["sh", "-n", script]).returncode, 0)
        rc, out, err = run_tern("doctor", "rate", "--link", "100G")
        self.assertEqual(rc, 0, err)
        self.assertIn("94.9 Gbit/s without timestamps", out)

    def test_table_run(self):
        rc, out, err = run_tern("doctor")
        self.assertIn(rc, (0, 1), err)
        self.assertNotIn("Traceback", err)
        self.assertIn("summary:", out.splitlines()[-1])


if __name__ == "__main__":
    unittest.main()
