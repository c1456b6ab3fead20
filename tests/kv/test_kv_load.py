"""kv-load (apps/kv-load) against kern-kv on loopback, no root: SET then
GET reply counts equal the requests asked for at depth 1 and 16; a server
replying -ERR, or with bytes that are no reply, fails the run with the
reason in words; bad flags exit 2."""
import json
import os
import socket
import subprocess
import threading
import time
import unittest

from test_kv_flags import free_port

BIN = os.environ.get("TERN_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bin")
LOAD = os.path.join(BIN, "kv-load")


def load(*args):
    r = subprocess.run([LOAD] + list(args), capture_output=True, text=True,
                       timeout=120)
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    return r, json.loads(lines[-1]) if lines else None


class FakeServer(threading.Thread):
    """Answers every read with `reply` (a server that fails each request)."""

    def __init__(self, reply):
        super().__init__(daemon=True)
        self.reply = reply
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]

    def serve(self, c):
        try:
            while c.recv(65536):
                c.sendall(self.reply)
        except OSError:
            pass
        finally:
            c.close()

    def run(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()


class KvLoad(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        cls.srv = subprocess.Popen([os.path.join(BIN, "kern-kv"), "--port",
                                    str(cls.port), "--cores", "0"],
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", cls.port)).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("kern-kv did not listen")

    @classmethod
    def tearDownClass(cls):
        cls.srv.send_signal(2)
        cls.srv.wait(15)

    def test_set_then_get_counts(self):
        ep = "127.0.0.1:%d" % self.port
        for depth in ("1", "16"):
            for test in ("set", "get"):
                r, j = load("-t", test, "-P", depth, "-c", "7", "-n", "3001", ep)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual((j["requests"], j["errors"]), (3001, 0))
                self.assertEqual((j["test"], j["depth"], j["conns"]),
                                 (test, int(depth), 7))
                self.assertGreater(j["rps"], 0)
                self.assertIn("requests/s", r.stderr)

    def test_duration_counts_replies(self):
        r, j = load("-t", "get", "-d", "1", "-k", "nosuchkey", "-c", "3",
                    "localhost:%d" % self.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(j["requests"], 0)
        self.assertEqual(j["errors"], 0)

    def test_bad_replies_fail(self):
        for reply, says in ((b"-ERR no thanks\r\n",
                             "the server replied with an error: ERR no thanks"),
                            (b"*1\r\n", "does not expect")):
            f = FakeServer(reply)
            f.start()
            r, j = load("-n", "100", "-c", "2", "127.0.0.1:%d" % f.port)
            f.ls.close()
            self.assertEqual(r.returncode, 1, reply)
            self.assertIn(says, r.stderr)
            if reply.startswith(b"-"):
                self.assertGreater(j["errors"], 0)

    def test_flags(self):
        r = subprocess.run([LOAD, "--help"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn("--depth", r.stdout)
        for args in (["-P", "0", "1.2.3.4:5"], ["-t", "del", "1.2.3.4:5"],
                     ["1.2.3.4"], [], ["-n", "5", "-d", "1", "1.2.3.4:5"],
                     ["--nope", "1.2.3.4:5"]):
            r = subprocess.run([LOAD] + args, capture_output=True, text=True)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn("kv-load: ", r.stderr)
        r, _ = load("-n", "10", "127.0.0.1:%d" % free_port())
        self.assertEqual(r.returncode, 1)
        self.assertIn("Connection refused", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
