"""Interop on an IPv6-only link: the namespace pair of tools/netns.sh with
its one IPv4 address (the kernel's 198.18.0.1) removed, so no interface
of either namespace has an IPv4 address, and tern started with --ip6
alone (no IPv4 address either).

    test_interop6_only.py --driver afxdp|afpacket|tap

  - curl -6 fetches from tern-httpd (200, exact body); wrk against
    http://[2001:db8::2]:8080/ gets only 2xx and no socket errors;
  - kern-echo --client [2001:db8::2]:7007 completes its requests against
    tern-echo;
  - kern-bulk --client sends 32 MiB to tern-bulk, SHA-256 equal;
and after each, tern's counters show it neither sent nor took an IPv4 or
ARP frame. Every wait is bounded by progress (a reply, an exit), with wide
margins; SKIP (77) without root or namespaces."""
import os
import subprocess
import sys
import unittest

import interop as it
from interop import Proc, log, prog

DRIVER = "afpacket"
CPUS = os.cpu_count() or 1
TERN_CPU = CPUS - 1
BULK = 32 << 20
BOUND_S = 30


def tern_args(h, argv):
    """A tern program on IF_T with an IPv6 address and no --ip."""
    return [prog(argv[0])] + list(argv[1:]) + [
        "--driver", DRIVER, "--iface", h.if_t, "--cores", str(TERN_CPU),
        "--ip6", h.ip6_t + "/64", "--json"]


def ip4_addresses(ns):
    """The IPv4 addresses of ns's interfaces but loopback."""
    r = subprocess.run(["ip", "-n", ns, "-4", "-o", "addr", "show"],
                       capture_output=True, text=True, check=True)
    return [l for l in r.stdout.splitlines() if l.split()[1] != "lo"]


class IPv6Only(unittest.TestCase):
    hosts = None

    @classmethod
    def setUpClass(cls):
        it.need_tools("curl", "wrk", "ss", "ping")
        cls.hosts = h = it.Hosts("o" + DRIVER[:2], tap=DRIVER == "tap")
        subprocess.run(["ip", "-n", h.ns_k, "-4", "addr", "flush", "dev",
                        h.if_k], check=True)

    @classmethod
    def tearDownClass(cls):
        Proc.kill_all()
        if cls.hosts:
            cls.hosts.down()

    def tearDown(self):
        Proc.kill_all()

    def setUp(self):
        h = self.hosts
        for ns in (h.ns_k, h.ns_t):
            self.assertEqual(ip4_addresses(ns), [], ns)

    def tern_server(self, app, *flags):
        h = self.hosts
        return it.tern_server6(self, h,
                               tern_args(h, [app, "--server"] + list(flags)))

    def stop_no_ip4(self, p):
        """Stop a tern server; its report must show no IPv4 or ARP frame
        sent or taken, and IPv6 traffic both ways."""
        self.assertIsNotNone(p.stop(timeout=15), p.describe())
        c = p.json().get("counters", {})
        for k in ("arp_in", "arp_out", "ip_in", "ip_out"):
            self.assertEqual(c.get(k, 0), 0, "%s: %s" % (k, p.describe()))
        self.assertGreater(c.get("ip6_in", 0), 0, p.describe())
        self.assertGreater(c.get("ip6_out", 0), 0, p.describe())
        return p.json()

    def test_01_curl_wrk(self):
        h = self.hosts
        size = 3000
        srv = self.tern_server("tern-httpd", "--body-size", str(size))
        n = it.curl6_wrk_ok(self, h.ns_k, "http://[%s]:8080/" % h.ip6_t,
                            size)
        log("wrk over IPv6 only: %d requests" % n)
        self.stop_no_ip4(srv)

    def test_02_kern_echo_client(self):
        h = self.hosts
        srv = self.tern_server("tern-echo", "--port", "7007")
        cli = Proc(h.ns_k, [prog("kern-echo"), "--client",
                            "[%s]:7007" % h.ip6_t, "--conns", "4",
                            "--requests", "2000", "--cores", "0", "--json"])
        self.assertEqual(cli.wait_or_interrupt(BOUND_S), 0, cli.describe())
        self.assertEqual(cli.json()["requests"], 2000)
        self.assertEqual(self.stop_no_ip4(srv)["requests"], 2000)

    def test_03_kern_bulk_client(self):
        h = self.hosts
        srv = self.tern_server("tern-bulk", "--once", "--verify", "hash")
        cli = Proc(h.ns_k, [prog("kern-bulk"), "--client",
                            "[%s]:5001" % h.ip6_t, "--bytes", str(BULK),
                            "--verify", "hash", "--cores", "0", "--json"])
        self.assertEqual(cli.wait_or_interrupt(BOUND_S), 0, cli.describe())
        self.assertEqual(srv.wait(15), 0, srv.describe())
        self.assertEqual(srv.json()["sha256"], cli.json()["sha256"])
        self.assertEqual(srv.json()["bytes"], BULK)
        c = srv.json().get("counters", {})
        for k in ("arp_in", "arp_out", "ip_in", "ip_out"):
            self.assertEqual(c.get(k, 0), 0, "%s: %s" % (k, srv.describe()))


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--driver" in args:
        i = args.index("--driver")
        DRIVER = args[i + 1]
        del args[i:i + 2]
    it.skip_unless_possible()
    it.Watchdog.arm(float(os.environ.get("TERN_INTEROP_BUDGET_S", "100")))
    it.main(args)
