"""The kern-* twins over IPv6 between two network namespaces (tools/netns.sh,
the tern side's kernel given IPv6 for this test), with real clients:

  - kern-echo serves one dual-stack socket: a Python AF_INET6 client and a
    Python AF_INET client both get their bytes back; kern-echo's own client
    to [2001:db8::2]:PORT completes exactly its requests;
  - kern-httpd: curl -6 gets 200 and the exact body, wrk against
    http://[2001:db8::2]:PORT/ gets only 2xx and no socket errors, the
    built-in client over IPv6 completes its requests;
  - kern-bulk: 16 MiB from kern-bulk --client [ADDR]:PORT to a --once
    server, SHA-256 equal on both ends;
  - kern-kv: redis-cli -h 2001:db8::2 SET/GET.
Needs root and network namespaces (else exit 77 = ctest SKIP). Behaviour
only, never speed; every process has a time bound."""
import hashlib
import os
import subprocess
import sys
import unittest

import interop as it
from interop import Proc, prog

PY_ECHO = r"""
import socket, sys
fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.settimeout(10)
s.connect((sys.argv[1], int(sys.argv[2])))
msg = bytes(range(256)) * 64
s.sendall(msg)
got = b''
while len(got) < len(msg):
    d = s.recv(65536)
    if not d:
        break
    got += d
print('peer', s.getpeername()[0])
sys.exit(0 if got == msg else 1)
"""


def body(n):
    b = bytearray(ord("a") + i % 26 for i in range(n))
    if n:
        b[-1] = ord("\n")
    return bytes(b)


class KernIPv6(unittest.TestCase):
    hosts = None

    @classmethod
    def setUpClass(cls):
        it.need_tools("curl", "wrk", "ss", "redis-cli")
        cls.hosts = it.Hosts("k6")
        h = cls.hosts
        # Here both ends are Linux: the tern side's kernel speaks IPv6.
        for cmd in (["sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=0"
                     % h.if_t],
                    ["ip", "addr", "add", h.ip6_t + "/64", "dev", h.if_t,
                     "nodad"],
                    ["ip", "addr", "add", h.ip_t + "/24", "dev", h.if_t]):
            subprocess.run(["ip", "netns", "exec", h.ns_t] + cmd, check=True)

    @classmethod
    def tearDownClass(cls):
        Proc.kill_all()
        if cls.hosts:
            cls.hosts.down()

    def tearDown(self):
        Proc.kill_all()

    def server(self, argv, port):
        p = Proc(self.hosts.ns_t, [prog(argv[0])] + argv[1:])
        if not it.wait_listen(self.hosts.ns_t, port):
            p.stop()
            self.fail("%s did not listen:\n%s" % (argv[0], p.describe()))
        return p

    def k(self, argv, timeout=60):
        return it.run(self.hosts.ns_k, argv, timeout)

    def test_echo_dual_stack(self):
        h = self.hosts
        srv = self.server(["kern-echo", "--server", "--port", "7007",
                           "--json"], 7007)
        for addr in (h.ip6_t, h.ip_t):
            r = self.k([sys.executable, "-c", PY_ECHO, addr, "7007"])
            self.assertEqual(r.p.returncode, 0, r.describe())
            self.assertIn("peer " + addr, r.out)
        r = self.k([prog("kern-echo"), "--client", "[%s]:7007" % h.ip6_t,
                    "--requests", "2000", "--conns", "4", "--json"])
        self.assertEqual(r.p.returncode, 0, r.describe())
        self.assertEqual(r.json()["requests"], 2000)
        srv.stop()
        # The server saw 2 Python clients and kern-echo's 4.
        self.assertEqual(srv.json()["accepted"], 6, srv.describe())

    def test_httpd(self):
        h = self.hosts
        self.server(["kern-httpd", "--port", "8080", "--body-size", "300"],
                    8080)
        url = "http://[%s]:8080/" % h.ip6_t
        r = it.run(h.ns_k, ["curl", "-6", "-sS", "-g", "--max-time", "10",
                            "-o", "-", "-w", "\n%{http_code}", url], 30,
                   raw=True)
        self.assertEqual(r.p.returncode, 0, r.describe())
        got, code = r.out.rsplit(b"\n", 1)
        self.assertEqual(code, b"200")
        self.assertEqual(got, body(300))
        r = self.k(["wrk", "-t", "1", "-c", "8", "-d", "1", url])
        self.assertEqual(r.p.returncode, 0, r.describe())
        self.assertNotIn("Socket errors", r.out)
        self.assertNotIn("Non-2xx", r.out)
        self.assertRegex(r.out, r"\d+ requests in")
        r = self.k([prog("kern-httpd"), "--client", "[%s]:8080" % h.ip6_t,
                    "--requests", "500", "--conns", "2", "--body-size", "300",
                    "--json"])
        self.assertEqual(r.p.returncode, 0, r.describe())
        self.assertEqual(r.json()["requests"], 500)

    def test_bulk(self):
        h = self.hosts
        srv = self.server(["kern-bulk", "--server", "--once", "--port",
                           "5001", "--json"], 5001)
        r = self.k([prog("kern-bulk"), "--client", "[%s]:5001" % h.ip6_t,
                    "--bytes", "16M", "--verify", "hash", "--json"])
        self.assertEqual(r.p.returncode, 0, r.describe())
        self.assertIsNotNone(srv.wait(30), srv.describe())
        sent, got = r.json(), srv.json()
        self.assertEqual(got["bytes"], 16 << 20, srv.describe())
        self.assertEqual(got["sha256"], sent["sha256"])

    def test_kv(self):
        h = self.hosts
        self.server(["kern-kv", "--port", "6379"], 6379)
        cli = ["redis-cli", "-h", h.ip6_t, "-p", "6379"]
        r = self.k(cli + ["SET", "k6", "over-ipv6"], 20)
        self.assertEqual(r.out.strip(), "OK", r.describe())
        r = self.k(cli + ["GET", "k6"], 20)
        self.assertEqual(r.out.strip(), "over-ipv6", r.describe())


if __name__ == "__main__":
    it.skip_unless_possible()
    it.Watchdog.arm(float(os.environ.get("TERN_INTEROP_BUDGET_S", "110")))
    unittest.main(verbosity=2)
