"""kern-httpd on loopback: curl (exact body), Connection: close, pipelined
and split requests over a raw socket, 400 on garbage, wrk with and without
pipelining (only 200s, no socket errors), and the built-in client."""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from apptest import Server, free_port, main, run_json, wait_port


def body(n):
    b = bytearray(ord("a") + i % 26 for i in range(n))
    if n:
        b[-1] = ord("\n")
    return bytes(b)


def read_responses(sock, count, timeout=5.0):
    """Read `count` complete HTTP responses; returns (statuses, bodies)."""
    sock.settimeout(timeout)
    buf, out = b"", []
    while len(out) < count:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                return out
            buf += chunk
        head, rest = buf.split(b"\r\n\r\n", 1)
        m = re.search(rb"Content-Length: (\d+)", head)
        n = int(m.group(1)) if m else 0
        while len(rest) < n:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        status = int(head.split(b" ")[1])
        out.append((status, rest[:n], head))
        buf = rest[n:]
    return out


class KernHttpd(unittest.TestCase):
    prog = "kern-httpd"
    extra = []

    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        cls.srv = Server([cls.prog, "--port", str(cls.port)] + cls.extra)
        if not wait_port(cls.port):
            cls.srv.stop()
            raise RuntimeError("server did not start")

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def url(self):
        return "http://127.0.0.1:%d/" % self.port

    def test_curl(self):
        r = subprocess.run(["curl", "-sS", "-o", "-", "-w", "%{http_code}",
                            self.url()], capture_output=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, body(64) + b"200")

    def test_curl_close(self):
        r = subprocess.run(["curl", "-sS", "-i", "-H", "Connection: close",
                            self.url()], capture_output=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"Connection: close", r.stdout)
        self.assertTrue(r.stdout.endswith(body(64)))

    def test_pipelined(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        req = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"
        s.sendall(req * 3)
        got = read_responses(s, 3)
        self.assertEqual([g[0] for g in got], [200, 200, 200])
        self.assertTrue(all(g[1] == body(64) for g in got))
        s.close()

    def test_split_request(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for part in (b"GE", b"T / HTTP/1.1\r\nHo", b"st: t\r", b"\n\r\n"):
            s.sendall(part)
            time.sleep(0.05)
        got = read_responses(s, 1)
        self.assertEqual(got[0][0], 200)
        s.close()

    def test_post_body_skipped(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        s.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n"
                  b"hello" + b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        got = read_responses(s, 2)
        self.assertEqual([g[0] for g in got], [200, 200])
        s.close()

    def test_close_after_response(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        got = read_responses(s, 1)
        self.assertEqual(got[0][0], 200)
        s.settimeout(5)
        self.assertEqual(s.recv(100), b"")      # then the server closes
        s.close()

    def test_http10(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        got = read_responses(s, 1)
        self.assertEqual(got[0][0], 200)
        s.settimeout(5)
        self.assertEqual(s.recv(100), b"")
        s.close()

    def test_malformed(self):
        for bad in (b"GARBAGE\r\n\r\n", b"GET /\r\n\r\n",
                    b"GET / HTTP/1.1\r\n\r\n",           # no Host
                    b"GET / HTTP/1.1\r\nHost t\r\n\r\n",
                    b"GET / HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n",
                    b"GET / HTTP/2.0\r\nHost: t\r\n\r\n"):
            s = socket.create_connection(("127.0.0.1", self.port))
            s.sendall(bad)
            got = read_responses(s, 1)
            self.assertEqual(got[0][0], 400, bad)
            self.assertIn(b"Connection: close", got[0][2])
            s.settimeout(5)
            self.assertEqual(s.recv(100), b"", bad)
            s.close()

    def wrk(self, *extra):
        if not shutil.which("wrk"):
            self.skipTest("wrk not installed")
        r = subprocess.run(["wrk", "-t", "2", "-c", "16", "-d", "2"] +
                           list(extra) + [self.url()], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("Non-2xx", r.stdout)
        self.assertNotIn("Socket errors", r.stdout)
        m = re.search(r"(\d+) requests in", r.stdout)
        self.assertTrue(m and int(m.group(1)) > 0, r.stdout)

    def test_wrk(self):
        self.wrk()

    def test_wrk_pipelined(self):
        with tempfile.NamedTemporaryFile("w", suffix=".lua",
                                         delete=False) as f:
            f.write('init = function(args)\n'
                    '  local r = {}\n'
                    '  for i = 1, 8 do r[i] = wrk.format(nil, "/") end\n'
                    '  req = table.concat(r)\n'
                    'end\n'
                    'request = function() return req end\n')
        try:
            self.wrk("-s", f.name)
        finally:
            os.unlink(f.name)


class KernHttpdClient(unittest.TestCase):
    def test_builtin_client(self):
        port = free_port()
        with Server(["kern-httpd", "--port", str(port)]):
            self.assertTrue(wait_port(port))
            d = run_json(self, ["kern-httpd", "--client",
                                "127.0.0.1:%d" % port, "--requests", "3000",
                                "--depth", "4", "--json"])
            self.assertEqual(d["requests"], 3000)


if __name__ == "__main__":
    main()
