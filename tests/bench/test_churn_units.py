"""Unit tests of tern bench churn's pure parts: its flags (the exact
conditions are the defaults), refusing unknown workloads, and the table
line of each workload's record (no namespaces, no run)."""
import contextlib
import io
import os
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))

from bench import churn  # noqa: E402

TERN = {k: 0 for k in churn.TERN_KEYS}


class ChurnUnits(unittest.TestCase):

    def test_defaults_are_the_stated_conditions(self):
        a = churn.parser().parse_args([])
        self.assertEqual((a.duration, a.conns), (60, 50))
        self.assertEqual((a.idle_conns, a.hold), (10000, 30))
        self.assertEqual((a.slow_clients, a.slow_reqs, a.body_size, a.slow_wait),
                         (200, 2000, 1000, 60))
        self.assertEqual(a.repeat, 2)
        a = churn.parser().parse_args(["--duration", "10", "--hold", "5"])
        self.assertEqual((a.duration, a.hold), (10, 5))

    def test_unknown_workload_or_stack_refused(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = churn.main(["--workloads", "close,bogus", "--stacks", "tern,lwip"])
        self.assertEqual(rc, 2)
        if os.geteuid() == 0:   # else it stops earlier, at "needs root"
            self.assertIn("bogus", err.getvalue())
            self.assertIn("lwip", err.getvalue())

    def test_summary_lines(self):
        close = {"stack": "tern", "workload": "close", "rps": 4321.4, "wrk_errors": 2,
                 "wrk_error_lines": ["Socket errors: connect 0, read 0, write 0, timeout 2"],
                 "client_time_wait": 5, "fresh": {"ok": True, "seconds": 0.012},
                 "tern": dict(TERN, tcp_time_wait_reuse=99),
                 "tern_open_at_stop": 0, "tern_time_wait_at_stop": 700}
        s = churn.summary(close)
        self.assertIn("4321 req/s, 2 wrk errors", s)
        self.assertIn("timeout 2", s)
        self.assertIn("fresh GET 12 ms", s)
        self.assertIn("slots held at stop 0, TIME_WAIT 700", s)
        self.assertIn("TIME_WAIT reused 99", s)
        idle = {"stack": "linux", "workload": "idle", "opened": 10000, "echoed": 9999,
                "fresh_during": {"ok": False, "seconds": 10.0}, "fresh_after": None,
                "rss_kib": [4096, 8192, 8192], "linux_established": 0,
                "linux_time_wait": 0, "error": "churn_peer idle rc 1: boom"}
        s = churn.summary(idle)
        self.assertIn("9999 of 10000 echo", s)
        self.assertIn("fresh echo during FAILED, after -", s)
        self.assertIn("RSS 4 -> 8 -> 8 MiB", s)
        self.assertIn("established at end 0", s)
        self.assertIn("ERROR churn_peer idle rc 1", s)
        slow = {"stack": "tern", "workload": "slow", "opened": 200, "complete": 200,
                "least": 2000, "fresh_during": {"ok": True, "seconds": 0.006},
                "rss_kib": [71680, 95232, 73728],
                "tern": dict(TERN, tcp_send_rx_reserve=7, tcp_writable_calls=3)}
        s = churn.summary(slow)
        self.assertIn("200 of 200 clients complete (least 2000)", s)
        self.assertIn("rx-reserve refusals 7, writable calls 3, nobuf 0", s)


if __name__ == "__main__":
    unittest.main()
