"""tern-kv and kern-kv as programs, without root: --help, bad flags (one
line on stderr, exit 2), tern-kv refusing the mem driver, and kern-kv on
loopback answering redis-cli and printing its figures on SIGINT."""
import json
import os
import signal
import socket
import subprocess
import time
import unittest

BIN = os.environ.get("TERN_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bin")


def run(*argv):
    return subprocess.run([os.path.join(BIN, argv[0])] + list(argv[1:]),
                          capture_output=True, text=True, timeout=30)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Flags(unittest.TestCase):
    def test_help(self):
        for p in ("tern-kv", "kern-kv"):
            r = run(p, "--help")
            self.assertEqual(r.returncode, 0, r.stderr)
            for word in ("--maxmemory", "--port", "RESP2", "EXPIRE"):
                self.assertIn(word, r.stdout)

    def bad(self, *argv, says=None):
        r = run(*argv)
        self.assertEqual(r.returncode, 2, "%s: %s" % (argv, r.stderr))
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        if says:
            self.assertIn(says, r.stderr)

    def test_bad_flags(self):
        self.bad("tern-kv", says="--driver mem")
        self.bad("tern-kv", "--driver", "afpacket", "--maxmemory", "12Q")
        self.bad("kern-kv", "--port", "0")
        self.bad("kern-kv", "--port", "70000")
        self.bad("kern-kv", "--client", "1.2.3.4:5")


class KernLoopback(unittest.TestCase):
    def test_serves_and_reports(self):
        port = free_port()
        p = subprocess.Popen([os.path.join(BIN, "kern-kv"), "--port",
                              str(port), "--cores", "0", "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            s = None
            end = time.time() + 10
            while time.time() < end:
                try:
                    s = socket.create_connection(("127.0.0.1", port), 1)
                    break
                except OSError:
                    time.sleep(0.05)
            self.assertIsNotNone(s, "kern-kv did not listen")
            s.settimeout(10)
            s.sendall(b"SET k 12\r\nINCR k\r\nGET k\r\n")
            want = b"+OK\r\n:13\r\n$2\r\n13\r\n"
            got = b""
            while len(got) < len(want):
                d = s.recv(100)
                self.assertTrue(d, "closed early: %r" % got)
                got += d
            self.assertEqual(got, want)
            s.close()
        finally:
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=15)
        self.assertEqual(p.returncode, 0, err)
        rep = json.loads(out.strip().splitlines()[-1])
        self.assertEqual(rep["commands"], 3)
        self.assertEqual(rep["keys"], 1)
        self.assertEqual(rep["accepted"], 1)
        for k in ("driver", "cores", "mode", "port", "used_memory",
                  "maxmemory", "oom_rejections", "bytes_in", "bytes_out"):
            self.assertIn(k, rep)


if __name__ == "__main__":
    unittest.main(verbosity=2)
