"""tools/bench/kv.py without running anything: bad flags exit 2, and the
ratios and table come from the points as given."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "tools")
sys.path.insert(0, TOOLS)
from bench import kv  # noqa: E402


def point(stack, depth, test, rps, per_cpu):
    return {"stack": stack, "depth": depth, "test": test, "status": "ok",
            "rps": rps, "requests_per_cpu_s": per_cpu, "runs": []}


class BenchKv(unittest.TestCase):
    def test_bad_flags(self):
        for args in (["--repeat", "0"], ["--stacks", "nginx"],
                     ["--requests", "10"], ["--clients", "0"],
                     ["--clients", "51"], ["--client-cpus", "a-b"],
                     ["--client", "memtier"]):
            r = subprocess.run([sys.executable, os.path.join(TOOLS, "tern"),
                                "bench", "kv"] + args, capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn("tern bench kv: error", r.stderr)

    def test_client_kv_load(self):
        """--client kv-load runs build/bin/kv-load with the same connections,
        depth, requests, test and CPU as redis-benchmark would get, reads
        its JSON line, and the table names it."""
        rb = kv.client_argv("redis-benchmark", "/b/bin", 0, "198.18.0.2", 25, 16,
                            800, "get")
        kl = kv.client_argv("kv-load", "/b/bin", 0, "198.18.0.2", 25, 16, 800, "get")
        self.assertEqual(rb[:3], ["taskset", "-c", "0"])
        self.assertEqual(kl, ["taskset", "-c", "0", "/b/bin/kv-load", "-c", "25",
                              "-P", "16", "-n", "800", "-t", "get", "198.18.0.2:6379"])
        self.assertEqual(kv.client_argv("kv-load", "/b", 1, "2001:db8::2", 1, 1, 1,
                                        "set")[-1], "[2001:db8::2]:6379")
        line = ('{"test":"get","requests":800,"errors":0,"rps":81234.5,'
                '"cpu_us_per_request":2.1}')
        self.assertEqual(kv.client_rps("kv-load", "get", line + "\n"), 81234.5)
        self.assertIsNone(kv.client_rps("kv-load", "set", line))
        self.assertIsNone(kv.client_rps("kv-load", "get", line.replace(
            '"errors":0', '"errors":3')))
        self.assertEqual(kv.client_rps("redis-benchmark", "get",
                                       '"test","rps"\n"GET","79936.05"\n'), 79936.05)
        p = kv.parser().parse_args([])
        self.assertEqual(p.client, "redis-benchmark")
        doc = {"generated_at": "now", "git": "abc",
               "conditions": {"server_cpu": 1, "client_cpu": 0, "repeat": 1,
                              "client": "kv-load", "clients": 1,
                              "loadavg_start": [1, 1, 1], "loadavg_end": [1, 1, 1]},
               "points": [dict(point("redis", 1, "get", 90000, 90000),
                               client_cpu_us_per_request=2.5)],
               "outputs": {"png": "/x/y-kv.png"}}
        md = kv.markdown(doc)
        self.assertIn("kv-load, 50 connections over 1 process(es)", md)
        self.assertIn("| 1.00x | - | - | 2.50 |", md)

    def test_ratio_and_table(self):
        pts = [point("tern-afxdp", 1, "get", 30000, 300000),
               point("redis", 1, "get", 20000, 100000),
               {"stack": "kern", "depth": 1, "test": "get",
                "status": "failed", "reason": "no PONG"}]
        self.assertAlmostEqual(kv.ratio(pts, "tern-afxdp", "redis", 1, "get"),
                               1.5)
        self.assertAlmostEqual(kv.ratio(pts, "tern-afxdp", "redis", 1, "get",
                                        "requests_per_cpu_s"), 3.0)
        self.assertIsNone(kv.ratio(pts, "kern", "redis", 1, "get"))
        doc = {"generated_at": "now", "git": "abc",
               "conditions": {"server_cpu": 1, "client_cpu": 0, "repeat": 3,
                              "loadavg_start": [1, 1, 1],
                              "loadavg_end": [1, 1, 1]},
               "points": pts, "outputs": {"png": "/x/y-kv.png"}}
        md = kv.markdown(doc)
        self.assertIn("| tern-afxdp | 1 | GET | 30000 | 300000 | 3.33 | 1.50x | - "
                      "| - |", md)
        self.assertIn("| kern | 1 | GET | failed: no PONG |", md)
        self.assertIn("y-kv.png", md)

    def test_waits(self):
        """tern-kv's report gives how its loop waited; the table's note
        gives frames per sleep and the share of waits spun per stack."""
        out = (b'{"sleeps":2000,"spin_hits":6000,"link":{"frames_rx":120000,'
               b'"frames_tx":1,"drops":0}}\n')
        w = kv.waits(out)
        self.assertEqual(w, {"frames_rx": 120000, "sleeps": 2000, "spin_hits": 6000})
        self.assertIsNone(kv.waits(b"tern-kv: afxdp: no such device\n"))
        self.assertIsNone(kv.waits(b""))
        line = kv.waits_line("tern-afxdp-spin", [w, dict(w, sleeps=4000), None])
        self.assertEqual(line, "- tern-afxdp-spin: 30.0-60.0 frames received per "
                               "sleep, 60-75% of the waits spun (2 rounds)")
        self.assertIsNone(kv.waits_line("tern-afxdp", [None]))
        self.assertEqual(kv.waits_line("tern-afxdp-busy", [dict(w, sleeps=0,
                                                                spin_hits=0)]),
                         "- tern-afxdp-busy: never slept (1 rounds)")
        doc = {"generated_at": "now", "git": "abc",
               "conditions": {"server_cpu": 1, "client_cpu": 0, "repeat": 1,
                              "loadavg_start": [1, 1, 1], "loadavg_end": [1, 1, 1]},
               "points": [], "waits": {"tern-afxdp": [dict(w, spin_hits=0)]},
               "outputs": {"png": "/x/y-kv.png"}}
        self.assertIn("- tern-afxdp: 60.0 frames received per sleep, 0% of the "
                      "waits spun (1 rounds)", kv.markdown(doc))


    def test_cpu_budget_table(self):
        """--cpu-budget: the quota for the budget, the v1 controller found
        in the mount table, and the table saying the budget and how much of
        it each point spent."""
        from bench import cpu_budget
        self.assertEqual(cpu_budget.quota_values(0.5, 10000), (5000, 10000))
        self.assertRaises(ValueError, cpu_budget.quota_values, 0, 10000)
        self.assertRaises(ValueError, cpu_budget.quota_values, 0.05, 10000)
        mounts = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                              "kv-bench-mounts-%d" % os.getpid())
        with open(mounts, "w") as f:
            f.write("cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
                    "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n")
        try:
            self.assertEqual(cpu_budget.v1_cpu_root(mounts), "/sys/fs/cgroup/cpu,cpuacct")
        finally:
            os.unlink(mounts)
        self.assertIsNone(cpu_budget.v1_cpu_root("/nonexistent"))
        run = {"rps": 1, "server_cpu_s": 0.5, "client_cpu_s": 0.2, "wall_s": 2.0,
               "loadavg": [1, 1, 1], "throttled_periods": 150}
        pt = {"stack": "redis", "depth": 1, "test": "get", "status": "ok",
              "requests": 1000, "runs": [run]}
        kv.summarize(pt, 10000)
        self.assertAlmostEqual(pt["throttled_share"], 0.75)
        doc = {"generated_at": "now", "git": "abc",
               "conditions": {"server_cpu": 1, "client_cpu": 0, "repeat": 1,
                              "cpu_budget": 0.5, "loadavg_start": [1, 1, 1],
                              "loadavg_end": [1, 1, 1]},
               "points": [pt], "outputs": {"png": "/x/y-kv.png"}}
        md = kv.markdown(doc)
        self.assertIn("CPU budget: 0.5 CPU", md)
        self.assertIn("| budget spent |", md)
        self.assertIn("| 75% |", md)
        r = subprocess.run([sys.executable, os.path.join(TOOLS, "tern"), "bench", "kv",
                            "--cpu-budget", "0"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--cpu-budget", r.stderr)

    @unittest.skipUnless(os.geteuid() == 0, "needs root (cgroups)")
    def test_cpu_budget_cgroup(self):
        """A process put in the budget lands in its cgroup, and the cgroup
        is gone afterwards."""
        from bench import cpu_budget
        p = subprocess.Popen(["sleep", "30"])
        try:
            with cpu_budget.CpuBudget("tern-bench-kv-test-%d" % os.getpid(), 0.5) as b:
                b.add(p.pid)
                with open("/proc/%d/cgroup" % p.pid) as f:
                    self.assertIn(os.path.basename(b.path), f.read())
                self.assertEqual(b.throttled(), 0)
                path = b.path
                p.kill()
                p.wait()
            self.assertFalse(os.path.exists(path))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def test_client_shares(self):
        """The connections and requests split over the client processes
        add up, and differ by at most one."""
        self.assertEqual(kv.shares(50, 3), [17, 17, 16])
        self.assertEqual(sum(kv.shares(100000, 7)), 100000)
        self.assertEqual(kv.shares(50, 1), [50])
        self.assertEqual(kv.cpu_list("0,2-3"), [0, 2, 3])
        self.assertRaises(ValueError, kv.cpu_list, "x")


if __name__ == "__main__":
    unittest.main(verbosity=2)
