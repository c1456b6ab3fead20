"""The four fixture machines (fixtures/README.md), audited end to end."""
import os
import unittest

from helpers import (by_id, doctor_json, fixture, fixture_copy, internal_errors, one,
                     run_tern, severities)

READER = "enp193s0f0np0"


class TunedReader(unittest.TestCase):
    """The 100GbE reader after tuning:, queue N pinned to CPU N, flow
    steered to queue 2, reader on core 5 (same L3 as CPU 2)."""

    def test_clean_for_reproducible_and_throughput(self):
        for profile in ("reproducible", "throughput"):
            rc, doc, err = doctor_json("--root", fixture("reader100g_tuned"), "--profile", profile,
                                       "--app-cores", "5")
            self.assertEqual(severities(doc), {}, profile)
            self.assertEqual(internal_errors(doc), [])
            self.assertEqual(rc, 0, err)
            self.assertEqual(doc["summary"]["exit_code"], 0)

    def test_reports_the_facts(self):
        _, doc, _ = doctor_json("--root", fixture("reader100g_tuned"), "--app-cores", "5")
        link = one(self, doc, "nic.link", READER)
        self.assertEqual(link["data"]["speed_mbps"], 100000)
        self.assertIn("94.1 Gbit/s", link["current"])
        pcie = one(self, doc, "nic.pcie", READER)
        self.assertEqual((pcie["severity"], pcie["data"]["current_width"]), ("ok", 16))
        place = one(self, doc, "placement.app_cores", READER)
        self.assertEqual(place["data"]["irq_cores"], [2])          # queue 2 via the ntuple rule
        self.assertIn("shares L3", place["data"]["verdicts"]["5"])
        l3 = one(self, doc, "nic.irq_l3", READER)
        self.assertIn("0-5", l3["data"]["l3_groups"])
        # the speed probe ran on the app core only, and found it steady
        speed = one(self, doc, "cpu.core_speed")
        self.assertEqual(speed["severity"], "ok")
        self.assertEqual(list(speed["data"]["cpus"]), ["5"])
        self.assertGreaterEqual(speed["data"]["cpus"]["5"]["p10_of_best"], 0.85)

    def test_table_output(self):
        rc, out, _ = run_tern("doctor", "--root", fixture("reader100g_tuned"), "--app-cores", "5")
        self.assertEqual(rc, 0)
        self.assertIn("summary: 0 crit, 0 warn", out)
        self.assertNotIn("\x1b[", out)   # no colour when stdout is not a TTY


class UntunedReader(unittest.TestCase):
    """The 100GbE reader before tuning: irqbalance, IRQs allowed on all 24 CPUs, 1024/8192
    rings, and a reader on core 8 whose L3 (6-11) holds none of the IRQ cores."""

    def setUp(self):
        self.rc, self.doc, _ = doctor_json("--root", fixture("reader100g_untuned"), "--app-cores", "8")

    def test_findings(self):
        sev = severities(self.doc)
        self.assertIn(("irq.irqbalance", None), sev)
        self.assertEqual(sev[("nic.irq_affinity", READER)], "warn")
        self.assertEqual(sev[("nic.rings", READER)], "warn")
        self.assertEqual(sev[("placement.app_cores", READER)], "warn")
        self.assertEqual(self.rc, 1)

    def test_details(self):
        rings = one(self, self.doc, "nic.rings", READER)
        self.assertEqual(rings["data"]["rx"], {"current": 1024, "max": 8192})
        self.assertEqual(rings["fix"], "ethtool -G %s rx 8192 tx 8192" % READER)
        aff = one(self, self.doc, "nic.irq_affinity", READER)
        self.assertEqual(len(aff["data"]["irqs"]), 24)              # mlx5_async24 is not a queue
        self.assertTrue(all(i["affinity"] == "0-23" for i in aff["data"]["irqs"]))
        place = one(self, self.doc, "placement.app_cores", READER)
        self.assertEqual(place["data"]["irq_cores"], [0, 1, 2, 23])  # the cores the interrupts went to
        self.assertIn("no IRQ core in its L3", place["data"]["verdicts"]["8"])
        self.assertEqual(one(self, self.doc, "irq.irqbalance")["data"]["pids"], [1187])

    def test_same_core_and_good_core(self):
        _, doc, _ = doctor_json("--root", fixture("reader100g_untuned"), "--app-cores", "2,4")
        verdicts = one(self, doc, "placement.app_cores", READER)["data"]["verdicts"]
        self.assertIn("same core", verdicts["2"])
        self.assertIn("shares L3", verdicts["4"])

    def test_fail_on_crit(self):
        rc, doc, _ = doctor_json("--root", fixture("reader100g_untuned"), "--fail-on", "crit")
        self.assertEqual(rc, 1)                                     # irqbalance is crit here
        rc, doc, _ = doctor_json("--root", fixture("reader100g_untuned"), "--fail-on", "never")
        self.assertEqual(rc, 0)


class HotCore(unittest.TestCase):
    """Hot core: one receive queue, RPS off, every NET_RX softirq on CPU0.
    The --during command swaps in the 'after' counters (fixture/.after)."""

    SWAP = 'cp -R "$TERN_ROOT/.after/." "$TERN_ROOT/"'

    def test_static_findings(self):
        _, doc, _ = doctor_json("--root", fixture("rps_off_hotcore"))
        self.assertEqual(one(self, doc, "nic.rps", "eth0")["severity"], "warn")
        self.assertEqual(one(self, doc, "nic.rfs", "eth0")["severity"], "warn")
        self.assertEqual(one(self, doc, "softnet.drops")["data"]["layout"], "old")

    def test_during_shows_the_hot_core(self):
        root = fixture_copy(self, "rps_off_hotcore")
        rc, doc, err = doctor_json("--root", root, "--during", self.SWAP)
        self.assertEqual(rc, 1, err)
        self.assertEqual(doc["during"]["exit_code"], 0)
        net_rx = one(self, doc, "during.net_rx")
        self.assertEqual((net_rx["severity"], net_rx["data"]["hot_cpu"]), ("warn", 0))
        self.assertGreater(net_rx["data"]["hot_share"], 0.99)
        softnet = one(self, doc, "during.softnet")
        self.assertEqual(softnet["severity"], "warn")
        self.assertEqual(softnet["data"]["per_cpu"]["0"]["dropped"], 1523)
        self.assertEqual(softnet["data"]["per_cpu"]["0"]["time_squeeze"], 48211)
        irqs = one(self, doc, "during.interrupts", "eth0")
        self.assertEqual(irqs["data"]["per_cpu"]["0"], 2500000)
        nic = one(self, doc, "during.nic", "eth0")
        self.assertEqual(nic["severity"], "warn")
        self.assertEqual(nic["data"]["drops"]["rx_dropped"], 1523)

    def test_during_without_change_is_quiet(self):
        root = fixture_copy(self, "rps_off_hotcore")
        _, doc, _ = doctor_json("--root", root, "--during", "true")
        for fid in ("during.command", "during.softnet", "during.net_rx"):
            self.assertEqual(one(self, doc, fid)["severity"], "ok", fid)

    def test_failing_command_is_reported(self):
        root = fixture_copy(self, "rps_off_hotcore")
        _, doc, _ = doctor_json("--root", root, "--during", "exit 3")
        cmd = one(self, doc, "during.command")
        self.assertEqual((cmd["severity"], cmd["data"]["exit_code"]), ("warn", 3))


class NoisyHost(unittest.TestCase):
    """Noisy host: turbo on, deep C-states, SMT on, powersave, netfilter with
    conntrack and rules."""

    def setUp(self):
        self.rc, self.doc, _ = doctor_json("--root", fixture("noisy_host"))

    def test_findings(self):
        sev = severities(self.doc)
        self.assertEqual(sev[("cpu.boost", None)], "crit")
        self.assertEqual(sev[("cpu.cstates", None)], "warn")
        self.assertEqual(sev[("cpu.smt", None)], "warn")
        self.assertEqual(sev[("cpu.governor", None)], "warn")
        self.assertEqual(sev[("netfilter.conntrack", None)], "warn")
        self.assertEqual(sev[("netfilter.rules", None)], "warn")
        self.assertEqual(self.rc, 1)

    def test_core_speed(self):
        # CPU 2's probe ran at half speed 40% of the time: a shared core
        speed = one(self, self.doc, "cpu.core_speed")
        self.assertEqual(speed["severity"], "warn")
        self.assertIn("varies: CPU 2", speed["current"])
        self.assertEqual(sorted(speed["data"]["cpus"]), ["0", "1", "2", "3"])
        self.assertLess(speed["data"]["cpus"]["2"]["p10_of_best"], 0.55)
        self.assertGreater(speed["data"]["cpus"]["0"]["p10_of_best"], 0.95)
        self.assertEqual(speed["fix_kind"], "manual")
        self.assertFalse(speed["applicable"])
        # throughput: recorded, not a warning
        _, doc, _ = doctor_json("--root", fixture("noisy_host"), "--profile", "throughput")
        self.assertEqual(one(self, doc, "cpu.core_speed")["severity"], "info")
        # only the app cores are probed: CPU 0 is steady
        _, doc, _ = doctor_json("--root", fixture("noisy_host"), "--app-cores", "0")
        self.assertEqual(one(self, doc, "cpu.core_speed")["severity"], "ok")
        # off, and a tree without probe results: unknown, never a guess
        _, doc, _ = doctor_json("--root", fixture("noisy_host"), "--probe-seconds", "0")
        speed = one(self, doc, "cpu.core_speed")
        self.assertEqual(speed["severity"], "unknown")
        self.assertIn("--probe-seconds 0", speed["current"])
        _, doc, _ = doctor_json("--root", fixture("rps_off_hotcore"))
        self.assertEqual(one(self, doc, "cpu.core_speed")["severity"], "unknown")

    def test_details(self):
        cst = one(self, self.doc, "cpu.cstates")
        self.assertIn("C6 (133 us)", cst["current"])
        self.assertIn("state$s/disable", cst["fix"])
        self.assertEqual([(p["method"], p["lines"]) for p in cst["persist"]],
                         [("cmdline", ["intel_idle.max_cstate=0", "processor.max_cstate=1"])])
        self.assertTrue(cst["applicable"])
        ct = one(self, self.doc, "netfilter.conntrack")
        self.assertEqual(ct["data"]["count"], 1234)
        self.assertIn("nf_conntrack", ct["data"]["modules"])
        rules = one(self, self.doc, "netfilter.rules")
        self.assertEqual((rules["data"]["nft_rules"], rules["data"]["iptables_rules"]), (4, 3))
        mit = one(self, self.doc, "cpu.mitigations")
        self.assertTrue(mit["data"]["retpoline"])
        self.assertEqual(mit["fix_kind"], "cmdline")
        aff = one(self, self.doc, "nic.irq_affinity", "eth0")
        self.assertEqual([i["irq"] for i in aff["data"]["irqs"]], [40, 41, 42, 43])  # not the link IRQ 44

    def test_profiles_change_recommendations(self):
        _, thr, _ = doctor_json("--root", fixture("noisy_host"), "--profile", "throughput")
        self.assertEqual(one(self, thr, "cpu.boost")["severity"], "info")
        self.assertEqual(one(self, thr, "sysctl.tcp_rmem")["severity"], "warn")
        _, lat, _ = doctor_json("--root", fixture("noisy_host"), "--profile", "latency")
        self.assertEqual(one(self, lat, "sysctl.busy_poll")["severity"], "warn")
        self.assertEqual(one(self, lat, "sysctl.tcp_rmem")["severity"], "ok")
        self.assertEqual(lat["profile"], "latency")


class MissingEverything(unittest.TestCase):
    """An empty root: every check says unknown (or ok), nothing crashes."""

    def test_empty_root(self):
        root = fixture_copy(self, "rps_off_hotcore")
        empty = os.path.join(os.path.dirname(root), "empty")
        os.mkdir(empty)
        rc, doc, err = doctor_json("--root", empty)
        self.assertIn(rc, (0, 1))
        self.assertNotIn("Traceback", err)
        self.assertEqual(internal_errors(doc), [])
        self.assertEqual(doc["options"]["ifaces"], [])
        self.assertTrue(by_id(doc, "cpu.boost"))
        self.assertEqual(one(self, doc, "cpu.boost")["severity"], "unknown")


if __name__ == "__main__":
    unittest.main()
