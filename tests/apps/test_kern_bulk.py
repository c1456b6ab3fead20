"""kern-bulk: a Python sender's stream hashes the same on both sides; both
ends in-process verify every byte of the pattern."""
import hashlib
import json
import os
import socket
import unittest

from apptest import Server, free_port, main, run_json, wait_port


class KernBulk(unittest.TestCase):
    def test_python_sender_hash(self):
        port = free_port()
        data = os.urandom(5 * 1024 * 1024 + 13)
        with Server(["kern-bulk", "--server", "--port", str(port), "--once",
                     "--json"]) as srv:
            self.assertTrue(wait_port(port))
            # wait_port's probe connection counts as an (empty) stream for
            # --once --conns 1, so restart cleanly after it.
            out, err = srv.stop()
        with Server(["kern-bulk", "--server", "--port", str(port), "--once",
                     "--json"]) as srv:
            s = None
            for _ in range(100):
                try:
                    s = socket.create_connection(("127.0.0.1", port))
                    break
                except OSError:
                    import time
                    time.sleep(0.05)
            self.assertIsNotNone(s)
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(10)
            s.recv(1)
            s.close()
            srv.p.wait(timeout=20)
            out, err = srv.stop()
        d = json.loads(out.strip().splitlines()[-1])
        self.assertEqual(d["bytes"], len(data))
        self.assertEqual(d["sha256"], hashlib.sha256(data).hexdigest())
        self.assertIn("gbps", d)
        self.assertIn("retransmits", d)

    def test_in_process_pattern(self):
        d = run_json(self, ["kern-bulk", "--bytes", "64M", "--conns", "3",
                            "--json"])
        self.assertEqual(d["bytes"], 64 << 20)
        self.assertIs(d["verified"], True)
        for k in ("gbps", "bytes", "verified", "retransmits"):
            self.assertIn(k, d)

    def test_in_process_hash(self):
        d = run_json(self, ["kern-bulk", "--bytes", "16M", "--conns", "2",
                            "--verify", "hash", "--json"])
        self.assertIs(d["verified"], True)

    def test_link_rate(self):
        d = run_json(self, ["kern-bulk", "--bytes", "8M", "--link", "10G",
                            "--json"])
        self.assertAlmostEqual(d["line_rate_gbps"], 9.415, places=2)


if __name__ == "__main__":
    main()
