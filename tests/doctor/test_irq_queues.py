"""Queue IRQs -> CPUs: the IRQs of one queue (virtio input.Q/output.Q, igb rx-Q/tx-Q)
go to one CPU, queues round-robin over the app cores (else the online CPUs), and
the fix, the JSON and what --apply writes say the same thing."""
import os
import re
import shutil
import unittest

from helpers import doctor_json, fixture, fixture_copy, internal_errors, one, run_doctor

# fixture: (interface, {queue: [IRQ names]}, IRQs that carry no queue)
HOSTS = {
    "virtio_kvm": ("eth0", {0: ["virtio2-input.0", "virtio2-output.0"],
                            1: ["virtio2-input.1", "virtio2-output.1"]}, [37]),
    "mlx5_combined": ("ens3f0np0", {q: ["mlx5_comp%d@pci:0000:3b:00.0" % q] for q in range(4)}, [90]),
    "ice_txrx": ("ens1f0", {q: ["ice-ens1f0-TxRx-%d" % q] for q in range(4)}, [60]),
    "igb_split": ("eno1", {0: ["eno1-rx-0", "eno1-tx-0"], 1: ["eno1-rx-1", "eno1-tx-1"]}, [74]),
    "noisy_host": ("eth0", {q: ["eth0-TxRx-%d" % q] for q in range(4)}, [44]),
}

ECHO = re.compile(r"^echo (\d+) > /proc/irq/(\d+)/smp_affinity_list$")


def fix_targets(finding):
    """{irq: cpu} as the fix text says it."""
    out = {}
    for line in (finding["fix"] or "").splitlines():
        m = ECHO.match(line)
        assert m, "unexpected fix line %r" % line
        out[int(m.group(2))] = int(m.group(1))
    return out


def plan_of(testcase, finding):
    """{irq: cpu} from the JSON, checked against the fix text; and {queue: cpu}."""
    by_irq, by_queue = {}, {}
    for q in finding["data"]["queues"]:
        if q["target"] is not None:
            by_queue[q["queue"]] = q["target"]
            for irq in q["irqs"]:
                by_irq[irq] = q["target"]
    moved = fix_targets(finding)
    # the fix moves exactly the IRQs the JSON plans for, to the same CPUs
    testcase.assertEqual(moved, {i: c for i, c in by_irq.items() if i in moved})
    testcase.assertEqual(set(moved), {i for q in finding["data"]["queues"] if q["target"] is not None
                                      for i, a in zip(q["irqs"], q["affinity"]) if a != str(q["target"])})
    return by_irq, by_queue


class NamingSchemes(unittest.TestCase):
    def test_queues_found_by_name(self):
        for host, (iface, queues, others) in HOSTS.items():
            _, doc, _ = doctor_json("--root", fixture(host), "--probe-seconds", "0")
            aff = one(self, doc, "nic.irq_affinity", iface)
            got = {q["queue"]: q["names"] for q in aff["data"]["queues"]}
            self.assertEqual(got, queues, host)
            irqs = [i["irq"] for i in aff["data"]["irqs"]]
            for irq in others:
                self.assertNotIn(irq, irqs, host)

    def test_one_cpu_per_queue_round_robin_over_online_cpus(self):
        for host, (iface, queues, _) in HOSTS.items():
            _, doc, _ = doctor_json("--root", fixture(host), "--probe-seconds", "0")
            aff = one(self, doc, "nic.irq_affinity", iface)
            self.assertEqual(aff["severity"], "warn", host)
            by_irq, by_queue = plan_of(self, aff)
            self.assertEqual(by_queue, {q: q % 4 for q in queues}, host)   # 4 online CPUs
            for q in aff["data"]["queues"]:     # every IRQ of a queue on that queue's CPU
                self.assertEqual({by_irq[i] for i in q["irqs"]}, {by_queue[q["queue"]]}, host)

    def test_round_robin_over_app_cores(self):
        for host, (iface, queues, _) in HOSTS.items():
            _, doc, _ = doctor_json("--root", fixture(host), "--app-cores", "2,3", "--probe-seconds", "0")
            aff = one(self, doc, "nic.irq_affinity", iface)
            _, by_queue = plan_of(self, aff)
            self.assertEqual(by_queue, {q: (2, 3)[q % 2] for q in queues}, host)
            self.assertIn("app cores 2-3", aff["recommended"])
            # the app cores then take the queue IRQs themselves: worth knowing, not a warning
            place = one(self, doc, "placement.app_cores", iface)
            self.assertNotIn(place["severity"], ("warn", "crit"), host)

    def test_virtio_pair_on_one_cpu(self):
        """The case a user reported: input.0 and output.0 are queue 0, so one CPU."""
        _, doc, _ = doctor_json("--root", fixture("virtio_kvm"), "--probe-seconds", "0")
        aff = one(self, doc, "nic.irq_affinity", "eth0")
        self.assertEqual(fix_targets(aff), {38: 0, 39: 0, 40: 1, 41: 1})
        kinds = {i["name"]: i["kind"] for i in aff["data"]["irqs"]}
        self.assertEqual(kinds["virtio2-input.0"], "rx")
        self.assertEqual(kinds["virtio2-output.0"], "tx")

    def test_split_queue_is_flagged(self):
        """Pinned, but input.0 and output.0 on different CPUs: only queue 0 moves."""
        root = fixture_copy(self, "virtio_kvm")
        for irq, cpu in ((38, 0), (39, 1), (40, 1), (41, 1)):
            with open(os.path.join(root, "proc/irq/%d/smp_affinity_list" % irq), "w") as f:
                f.write("%d\n" % cpu)
        _, doc, _ = doctor_json("--root", root, "--probe-seconds", "0")
        aff = one(self, doc, "nic.irq_affinity", "eth0")
        self.assertEqual(aff["severity"], "warn")
        problems = {q["queue"]: q["problem"] for q in aff["data"]["queues"]}
        self.assertEqual(problems, {0: "split", 1: None})
        self.assertEqual(fix_targets(aff), {39: 0})       # IRQ 38 is on CPU 0 already

    def test_pinned_queues_stay(self):
        root = fixture_copy(self, "noisy_host")
        for irq, cpus in ((40, "3"), (41, "1-3"), (42, "2"), (43, "0")):
            with open(os.path.join(root, "proc/irq/%d/smp_affinity_list" % irq), "w") as f:
                f.write(cpus + "\n")
        _, doc, _ = doctor_json("--root", root, "--probe-seconds", "0")
        aff = one(self, doc, "nic.irq_affinity", "eth0")
        self.assertEqual(aff["severity"], "warn")
        self.assertEqual(fix_targets(aff), {41: 1})       # only the queue allowed on 1-3 moves
        with open(os.path.join(root, "proc/irq/41/smp_affinity_list"), "w") as f:
            f.write("1\n")
        _, doc, _ = doctor_json("--root", root, "--probe-seconds", "0")
        aff = one(self, doc, "nic.irq_affinity", "eth0")
        self.assertEqual((aff["severity"], aff["fix"]), ("ok", None))


    def test_no_cpu_list(self):
        """Without sys/devices/system/cpu there is nothing to spread over: unknown, no crash."""
        root = fixture_copy(self, "virtio_kvm")
        shutil.rmtree(os.path.join(root, "sys/devices/system/cpu"))
        _, doc, _ = doctor_json("--root", root, "--probe-seconds", "0")
        self.assertEqual(internal_errors(doc), [])
        self.assertEqual(one(self, doc, "nic.irq_affinity", "eth0")["severity"], "unknown")
        self.assertIsNone(one(self, doc, "nic.xps", "eth0")["fix"])


class ApplyPinsWhatTheFixSays(unittest.TestCase):
    def test_apply_and_revert(self):
        root = fixture_copy(self, "igb_split")
        _, before, _ = doctor_json("--root", root, "--app-cores", "1,3", "--probe-seconds", "0")
        planned = fix_targets(one(self, before, "nic.irq_affinity", "eno1"))
        self.assertEqual(planned, {70: 1, 72: 1, 71: 3, 73: 3})
        _, after, err = doctor_json("--root", root, "--app-cores", "1,3", "--apply", "--probe-seconds", "0")
        for irq, cpu in planned.items():
            with open(os.path.join(root, "proc/irq/%d/smp_affinity_list" % irq)) as f:
                self.assertEqual(f.read(), "%d\n" % cpu, irq)
        self.assertEqual(one(self, after, "nic.irq_affinity", "eno1")["severity"], "ok")
        rc, out, err = run_doctor("--root", root, "--revert")
        self.assertEqual(rc, 0, out + err)
        for irq in planned:
            with open(os.path.join(root, "proc/irq/%d/smp_affinity_list" % irq)) as f:
                self.assertEqual(f.read(), "0-3\n", irq)


if __name__ == "__main__":
    unittest.main()
