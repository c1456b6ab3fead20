"""tern-footprint: the per-connection cost is the instance's growth with
max_conns, the projection is linear in cores, and bad flags fail cleanly."""
import unittest

from apptest import main, run, run_json


class Footprint(unittest.TestCase):
    def bad(self, *args):
        r = run(("tern-footprint",) + args, timeout=10)
        self.assertEqual(r.returncode, 2, "%s: %r" % (args, r.stderr))
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("tern-footprint: "), r.stderr)

    def test_help(self):
        r = run(["tern-footprint", "--help"], timeout=10)
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: tern-footprint", r.stdout)

    def test_bad_flags(self):
        self.bad("--no-such-flag")
        self.bad("positional")
        self.bad("--max-conns", "0")
        self.bad("--cores", "0")
        self.bad("--cores", "1,x")
        self.bad("--l3", "-4")
        self.bad("--active", "100", "--max-conns", "10")
        self.bad("--msg")

    def test_model(self):
        small = run_json(self, ["tern-footprint", "--json",
                                "--max-conns", "1000"])
        big = run_json(self, ["tern-footprint", "--json",
                              "--max-conns", "2000"])
        per_conn = small["per_conn_bytes"]
        # A connection costs at least a few cache lines, and the instance
        # grows by exactly that much per slot.
        self.assertGreater(per_conn, 256)
        self.assertAlmostEqual(big["instance_bytes"] - small["instance_bytes"],
                               1000 * per_conn, delta=1000)
        self.assertGreater(small["instance_bytes"],
                           small["fixed_bytes"] + 1000 * 256)
        proj = {p["cores"]: p for p in small["projection"]}
        self.assertEqual(sorted(proj), [1, 2, 4, 8, 16, 32])
        self.assertAlmostEqual(proj[32]["hot_mib"], 32 * proj[1]["hot_mib"],
                               delta=0.05)

    def test_ring_dominates_small_messages(self):
        d = run_json(self, ["tern-footprint", "--json", "--cores", "32"])
        self.assertGreater(d["hot_rx_bytes"], 10 * d["hot_stack_bytes"])


if __name__ == "__main__":
    main()
