"""kern-echo over loopback: both ends in one process, and a separate
server and client, complete exactly N requests with parseable JSON."""
import unittest

from apptest import Server, free_port, main, run_json, wait_port

KEYS = ["rps", "p50_us", "p99_us", "p999_us", "conns", "size", "duration_s",
        "requests", "driver", "retransmits"]


class KernEcho(unittest.TestCase):
    def check(self, d, n):
        for k in KEYS:
            self.assertIn(k, d)
        self.assertEqual(d["requests"], n)
        self.assertGreater(d["rps"], 0)
        self.assertLessEqual(d["p50_us"], d["p99_us"])
        self.assertLessEqual(d["p99_us"], d["p999_us"])

    def test_in_process(self):
        d = run_json(self, ["kern-echo", "--requests", "20000", "--json"])
        self.check(d, 20000)
        self.assertEqual(d["mode"], "both")

    def test_depth_and_cores(self):
        d = run_json(self, ["kern-echo", "--requests", "20001", "--depth", "8",
                            "--size", "1", "--cores", "0,1", "--json"])
        self.check(d, 20001)

    def test_server_client(self):
        port = free_port()
        with Server(["kern-echo", "--server", "--port", str(port),
                     "--json"]) as s:
            self.assertTrue(wait_port(port))
            d = run_json(self, ["kern-echo", "--client",
                                "127.0.0.1:%d" % port, "--requests", "5000",
                                "--conns", "4", "--size", "100", "--json"])
            self.check(d, 5000)
            out, _ = s.stop()
        import json
        srv = json.loads(out.strip().splitlines()[-1])
        self.assertEqual(srv["mode"], "server")
        self.assertEqual(srv["bytes_echoed"], 5000 * 100)

    def test_duration(self):
        d = run_json(self, ["kern-echo", "--duration", "0.5", "--json"])
        self.assertGreater(d["requests"], 0)


if __name__ == "__main__":
    main()
