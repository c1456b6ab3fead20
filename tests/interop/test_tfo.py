"""TCP Fast Open (RFC 7413) between tern (AF_PACKET) and the Linux kernel,
both ways, over IPv4 and over IPv6 (the first two cases run once for each:
tern has both addresses, the Linux peer's net.ipv4.tcp_fastopen covers
both families), in throw-away namespaces (tools/netns.sh):

  - a Linux client (sendto with MSG_FASTOPEN, net.ipv4.tcp_fastopen=1)
    against `tern-echo --server --tfo`: the first connection gets a cookie,
    the second carries its data in the SYN; tern counts one cookie request
    and one SYN with data taken, Linux one successful active TFO open
    (TcpExtTCPFastOpenActive), and every echo comes back whole;
  - `tern-echo --client --tfo --conns 2` against a Linux echo server with
    TCP_FASTOPEN on its listener (net.ipv4.tcp_fastopen=3): tern's first
    connection gets a cookie, the second's SYN carries its first request,
    Linux counts one passive TFO open (TcpExtTCPFastOpenPassive) and tern
    one SYN whose data was acknowledged;
  - the same against a Linux listener with a TFO queue of 1 and four
    connections: Linux drops the data of the SYNs over its queue
    (TcpExtTCPFastOpenListenOverflow) and acknowledges only their SYN;
    tern sends that data again and every request is answered.

Needs root and network namespaces (else exit 77 = ctest SKIP). Counts
only; the bounds only catch a stall."""
import os
import subprocess
import sys
import unittest

import interop as it
from interop import Proc, log, prog
from test_interop6 import wait_ping6

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "tfo_peer.py")
TERN_CPU = (os.cpu_count() or 1) - 1
SIZE = 64


def tern_args(hosts, argv):
    return [prog(argv[0])] + list(argv[1:]) + [
        "--driver", "afpacket", "--iface", hosts.if_t, "--cores",
        str(TERN_CPU), "--ip", hosts.ip_t + "/24", "--ip6",
        hosts.ip6_t + "/64", "--json"]


def ctr(report, name):
    return report.get("counters", {}).get(name, 0)


def linux_tcpext(ns):
    """The TcpExt counters of a namespace (/proc/net/netstat is per
    namespace)."""
    out = subprocess.run(["ip", "netns", "exec", ns, "cat",
                          "/proc/net/netstat"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    for names, values in zip(out[0::2], out[1::2]):
        if names.startswith("TcpExt:"):
            return dict(zip(names.split()[1:], map(int, values.split()[1:])))
    return {}


def sysctl(ns, setting):
    subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", setting],
                   check=True)


class Tfo(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.hosts = it.Hosts("tf")

    @classmethod
    def tearDownClass(cls):
        Proc.kill_all()
        cls.hosts.down()

    def tearDown(self):
        Proc.kill_all()

    def linux_client_tern_server(self, v6):
        h = self.hosts
        ip = h.ip6_t if v6 else h.ip_t
        sysctl(h.ns_k, "net.ipv4.tcp_fastopen=1")   # IPv6 too
        srv = Proc(h.ns_t, tern_args(h, ["tern-echo", "--server", "--tfo",
                                         "--port", "7009"]))
        up = (wait_ping6(h.ns_k, ip, srv) if v6 else
              it.wait_ping(h.ns_k, ip, proc=srv))
        if not up:
            self.fail("tern-echo did not come up:\n%s" % srv.describe())
        before = linux_tcpext(h.ns_k)
        r = it.run(h.ns_k, [sys.executable, PEER, "client", ip, "7009",
                            "2", str(SIZE)], 60)
        self.assertEqual(r.p.returncode, 0, r.describe())
        got = r.json()
        after = linux_tcpext(h.ns_k)
        self.assertIsNotNone(srv.stop(timeout=15), srv.describe())
        rep = srv.json()
        active = (after.get("TCPFastOpenActive", 0) -
                  before.get("TCPFastOpenActive", 0))
        log("Linux client -> tern over IPv%d: %s; tern cookie requests %d, "
            "SYN data taken %d, bad cookies %d; Linux TCPFastOpenActive "
            "+%d" % (6 if v6 else 4, got, ctr(rep, "tcp_tfo_cookie_req_in"),
                     ctr(rep, "tcp_tfo_syn_data_in"),
                     ctr(rep, "tcp_tfo_cookie_bad"), active))
        self.assertEqual(got["echoed"], 2, r.describe())
        self.assertEqual(ctr(rep, "tcp_tfo_cookie_req_in"), 1, rep)
        self.assertEqual(ctr(rep, "tcp_tfo_syn_data_in"), 1, rep)
        self.assertEqual(ctr(rep, "tcp_tfo_cookie_bad"), 0, rep)
        self.assertEqual(active, 1, (before, after))

    def test_linux_client_tern_server(self):
        self.linux_client_tern_server(False)

    def test_linux_client_tern_server_ipv6(self):
        self.linux_client_tern_server(True)

    def tern_client_linux_server(self, v6):
        h = self.hosts
        sysctl(h.ns_k, "net.ipv4.tcp_fastopen=3")
        port = 7012 if v6 else 7010
        peer = Proc(h.ns_k, [sys.executable, PEER, "server", str(port)])
        self.assertEqual((peer.readline(10) or "").strip(), "ready",
                         peer.describe())
        before = linux_tcpext(h.ns_k)
        to = "[%s]:%d" % (h.ip6_k, port) if v6 else "%s:%d" % (h.ip_k, port)
        cli = it.run(h.ns_t, tern_args(h, [
            "tern-echo", "--client", to, "--tfo",
            "--conns", "2", "--size", str(SIZE), "--requests", "200"]), 60)
        self.assertEqual(cli.p.returncode, 0, cli.describe())
        rep = cli.json()
        after = linux_tcpext(h.ns_k)
        passive = (after.get("TCPFastOpenPassive", 0) -
                   before.get("TCPFastOpenPassive", 0))
        log("tern client -> Linux over IPv%d: cookie requests %d, SYNs with "
            "data %d, acked %d, unacked %d; Linux TCPFastOpenPassive +%d" % (
                6 if v6 else 4, ctr(rep, "tcp_tfo_cookie_req_out"),
                ctr(rep, "tcp_tfo_syn_data_out"),
                ctr(rep, "tcp_tfo_syn_data_acked"),
                ctr(rep, "tcp_tfo_syn_data_unacked"), passive))
        self.assertEqual(ctr(rep, "tcp_tfo_cookie_req_out"), 1, rep)
        self.assertEqual(ctr(rep, "tcp_tfo_cookies_cached"), 1, rep)
        self.assertEqual(ctr(rep, "tcp_tfo_syn_data_out"), 1, rep)
        self.assertEqual(ctr(rep, "tcp_tfo_syn_data_acked"), 1, rep)
        self.assertEqual(passive, 1, (before, after))

    def test_tern_client_linux_server(self):
        self.tern_client_linux_server(False)

    def test_tern_client_linux_server_ipv6(self):
        self.tern_client_linux_server(True)

    def test_linux_server_over_its_limit(self):
        # A Linux listener with a TFO queue of 1: tern's three SYNs with
        # data leave in one burst, before tern can complete any handshake,
        # so Linux takes the first and acknowledges only the SYN of the
        # others (TcpExtTCPFastOpenListenOverflow); tern sends that data
        # again at once and every request is answered.
        h = self.hosts
        sysctl(h.ns_k, "net.ipv4.tcp_fastopen=3")
        peer = Proc(h.ns_k, [sys.executable, PEER, "server", "7011", "1"])
        self.assertEqual((peer.readline(10) or "").strip(), "ready",
                         peer.describe())
        before = linux_tcpext(h.ns_k)
        cli = it.run(h.ns_t, tern_args(h, [
            "tern-echo", "--client", "%s:7011" % h.ip_k, "--tfo",
            "--conns", "4", "--size", str(SIZE), "--requests", "400"]), 60)
        self.assertEqual(cli.p.returncode, 0, cli.describe())
        rep = cli.json()
        after = linux_tcpext(h.ns_k)

        def grew(name):
            return after.get(name, 0) - before.get(name, 0)
        log("tern client -> Linux with TFO queue 1: SYNs with data %d, "
            "acked %d, unacked %d; Linux passive +%d, overflow +%d" % (
                ctr(rep, "tcp_tfo_syn_data_out"),
                ctr(rep, "tcp_tfo_syn_data_acked"),
                ctr(rep, "tcp_tfo_syn_data_unacked"),
                grew("TCPFastOpenPassive"),
                grew("TCPFastOpenListenOverflow")))
        self.assertEqual(rep["requests"], 400, rep)
        self.assertEqual(ctr(rep, "tcp_tfo_syn_data_out"), 3, rep)
        self.assertGreaterEqual(ctr(rep, "tcp_tfo_syn_data_unacked"), 1, rep)
        self.assertEqual(ctr(rep, "tcp_tfo_syn_data_acked") +
                         ctr(rep, "tcp_tfo_syn_data_unacked"), 3, rep)
        self.assertEqual(grew("TCPFastOpenPassive"),
                         ctr(rep, "tcp_tfo_syn_data_acked"), (before, after))
        self.assertGreaterEqual(grew("TCPFastOpenListenOverflow"), 1,
                                (before, after))


if __name__ == "__main__":
    it.skip_unless_possible()
    it.Watchdog.arm(float(os.environ.get("TERN_TFO_BUDGET_S", "100")))
    unittest.main(verbosity=2)
