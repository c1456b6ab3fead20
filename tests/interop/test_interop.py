"""Interop: tern on a real Linux driver in one network
namespace, the Linux kernel's stack in the other, no mocks.

    test_interop.py --driver afxdp|afpacket|tap [--suite basic|loss]

basic: veth (tap: a tap device) between the namespaces.
  - ARP and ICMP echo from the kernel side are answered (ip neigh shows
    tern's MAC; raw-socket echo replies carry the payload intact);
  - curl fetches from tern-httpd (200, exact body); wrk -c 16 -d 2 gets only
    2xx responses and no socket errors;
  - a Python client sends 100 MiB to tern-bulk and a Python server receives
    100 MiB from tern-bulk; SHA-256 matches both ways (and the pattern's
    known hash);
  - tern-echo client against kern-echo server and the reverse;
  - 200 connections opened and closed in a loop, three ways, return to
    zero (see ConnLoop below for exactly what that means).
loss: the same hosts with a bridge namespace in between (netns.sh --wire)
  dropping 2% of the frames each way (nftables); both bulk transfers and an
  echo run must still complete with matching hashes, within a bound far
  above what Linux needs (a hang is a failure, not a slow pass).

Needs root and network namespaces (else exit 77 = ctest SKIP). Every host
and process is removed on any exit; a watchdog fails the run (cleaning up)
before ctest's TIMEOUT."""
import os
import subprocess
import sys
import time
import unittest

import interop as it
from interop import Proc, log, prog

DRIVER = "afxdp"
SUITE = "basic"
CPUS = os.cpu_count() or 1
# tern on the last CPU, kernel programs on CPU 0 (a busy-polling tern must
# not share its CPU with them).
TERN_CPU = CPUS - 1
KERN_CPU = 0
# 100 MiB each way; not shrunk for slow drivers (slowness is reported).
BULK = it.MIB100
# Under 2% loss Linux moves 100 MiB over these hosts in ~3 s each way with
# BBR (the host default) and 12-15 s with CUBIC; tern (CUBIC) as the sender
# takes 9-12 s (docs/tcp.md "Loss recovery"). The bound catches a stall,
# not slowness.
LOSS_BOUND_S = 90
# Without loss, 100 MiB takes ~1 s on every driver here.
BULK_BOUND_S = 30
ECHO_REQUESTS = 2000
LOOP_CONNS = 200


def tern_args(hosts, argv):
    """argv = [program, flags...] plus the driver, interface and CPU."""
    a = [prog(argv[0])] + list(argv[1:]) + [
        "--driver", DRIVER, "--iface", hosts.if_t, "--cores", str(TERN_CPU),
        "--json"]
    if DRIVER == "afpacket" and CPUS > 1:
        # Busy polling here, block mode on afxdp and tap: the suite runs
        # both runtime loops (docs/interop.md).
        a += ["--poll", "busy"]
    return a


def report_so_far(proc):
    """The JSON report of an interrupted program, or {} when it printed
    none (for the failure message only)."""
    try:
        return proc.json()
    except (AssertionError, ValueError):
        return {}


def ctr(report, name):
    return report.get("counters", {}).get(name, 0)


class Base(unittest.TestCase):
    hosts = None
    tap = False
    wire = False
    tag = "b"

    @classmethod
    def setUpClass(cls):
        it.need_tools("curl", "wrk", "ss", "ping", "ethtool", "nft")
        cls.hosts = it.Hosts(cls.tag + DRIVER[:2], tap=DRIVER == "tap",
                             wire=cls.wire)
        try:
            cls.prepare()
        except BaseException:
            cls.tearDownClass()   # unittest skips it when setUpClass fails
            raise

    @classmethod
    def prepare(cls):
        pass

    @classmethod
    def tearDownClass(cls):
        Proc.kill_all()
        if cls.hosts:
            cls.hosts.down()
            log("hosts %s down" % cls.hosts.prefix)

    def setUp(self):
        self.t0 = time.time()
        if it.Watchdog.expired:
            self.fail("not run: the run's time budget is spent")

    def tearDown(self):
        left = [p.name for p in Proc.live if p.p.poll() is None]
        Proc.kill_all()
        log("%s: %.1f s%s" % (self.id().split(".")[-1], time.time() - self.t0,
                              " (killed %s)" % ", ".join(left) if left else ""))

    # ---- tern servers -------------------------------------------------

    def tern_server(self, app, *flags):
        h = self.hosts
        p = Proc(h.ns_t, tern_args(h, [app, "--server"] + list(flags)))
        if not it.wait_ping(h.ns_k, h.ip_t, proc=p):
            p.stop()
            self.fail("%s did not come up (no ping reply within 15 s):\n%s"
                      % (app, p.describe()))
        return p

    def stop_tern(self, p):
        rc = p.stop(timeout=15)
        self.assertIsNotNone(rc, "%s did not stop on SIGINT:\n%s"
                             % (p.name, p.describe()))
        try:
            return p.json()
        except ValueError as e:
            self.fail("%s: bad JSON (%s):\n%s" % (p.name, e, p.describe()))

    # ---- the bulk transfers (both suites) ------------------------------

    def bulk_linux_to_tern(self, bound):
        """Python sends BULK bytes to tern-bulk --server --once (hash)."""
        h = self.hosts
        srv = self.tern_server("tern-bulk", "--once", "--verify", "hash")
        cli = Proc(h.ns_k, [sys.executable, it.PEER, "send", h.ip_t, "5001",
                            str(BULK)], name="python sender")
        t = time.time()
        rc = cli.wait(bound)
        took = time.time() - t
        if rc is None:
            srv.stop()
            rep = srv.json() if srv.out else {}
            self.fail("Linux -> tern: %d MiB did not arrive within %d s "
                      "(tern received %s bytes; counters %s)%s" % (
                          BULK >> 20, bound, rep.get("bytes"),
                          rep.get("counters"), self.loss_note()))
        self.assertEqual(rc, 0, cli.describe())
        sent = cli.json()
        self.assertEqual(srv.wait(15), 0, "tern-bulk --once did not end "
                         "cleanly:\n" + srv.describe())
        rep = srv.json()
        log("Linux -> tern %d MiB: %.2f s, tern: %s Gbit/s, %d ooo segs, "
            "%d dup segs" % (BULK >> 20, took, rep.get("gbps"),
                             ctr(rep, "tcp_ooo_segments"),
                             ctr(rep, "tcp_dup_data_in")))
        self.assertEqual(sent["bytes"], BULK)
        self.assertEqual(rep["bytes"], BULK, "tern received %s bytes"
                         % rep["bytes"])
        self.assertEqual(rep["streams"], 1)
        self.assertEqual(rep["sha256"], sent["sha256"],
                         "SHA-256 differs: tern got other bytes than sent")
        return rep

    def bulk_tern_to_linux(self, bound):
        """tern-bulk --client sends BULK bytes of the pattern to a Python
        server, which hashes what arrived."""
        h = self.hosts
        srv = Proc(h.ns_k, [sys.executable, it.PEER, "recv", h.ip_k, "5002"],
                   name="python receiver")
        line = srv.readline(15)
        self.assertIsNotNone(line, "Python server did not start:\n"
                             + srv.describe())
        cli = Proc(h.ns_t, tern_args(h, [
            "tern-bulk", "--client", "%s:5002" % h.ip_k, "--bytes",
            str(BULK), "--verify", "hash"]))
        t = time.time()
        rc = cli.wait_or_interrupt(bound)
        took = time.time() - t
        if rc is None:
            rep = report_so_far(cli)
            self.fail("tern -> Linux: %d MiB not sent within %d s (%s bytes "
                      "acknowledged; retransmits %s, RTO expiries %s)%s\n%s"
                      % (BULK >> 20, bound, rep.get("bytes"),
                         rep.get("retransmits"),
                         ctr(rep, "tcp_rto_expiries"), self.loss_note(),
                         cli.describe()))
        self.assertEqual(rc, 0, cli.describe())
        rep = cli.json()
        self.assertEqual(srv.wait(15), 0, srv.describe())
        got = srv.json()
        log("tern -> Linux %d MiB: %.2f s, %s Gbit/s, %s retransmits, %d RTO "
            "expiries" % (BULK >> 20, took, rep.get("gbps"),
                          rep.get("retransmits"),
                          ctr(rep, "tcp_rto_expiries")))
        self.assertEqual(rep["bytes"], BULK)
        self.assertEqual(got["bytes"], BULK, "Linux received %s bytes"
                         % got["bytes"])
        self.assertEqual(got["head"], it.pattern_head(),
                         "the stream does not start with the pattern")
        self.assertEqual(rep["sha256"], it.PATTERN_SHA256_100M,
                         "tern-bulk hashed something else than the pattern")
        self.assertEqual(got["sha256"], rep["sha256"],
                         "SHA-256 differs: Linux got other bytes than sent")
        return rep

    def loss_note(self):
        return ""

    def echo_tern_client(self, requests, bound):
        """tern-echo --client against kern-echo --server."""
        h = self.hosts
        srv = Proc(h.ns_k, [prog("kern-echo"), "--server", "--port", "7007",
                            "--cores", str(KERN_CPU), "--json"])
        self.assertTrue(it.wait_listen(h.ns_k, 7007),
                        "kern-echo did not listen:\n" + srv.describe())
        cli = Proc(h.ns_t, tern_args(h, [
            "tern-echo", "--client", "%s:7007" % h.ip_k, "--conns", "4",
            "--requests", str(requests)]))
        rc = cli.wait_or_interrupt(bound)
        if rc is None:
            rep = report_so_far(cli)
            self.fail("tern-echo: %d requests not done within %d s (done %s, "
                      "retransmits %s, RTO expiries %s)%s\n%s" % (
                          requests, bound, rep.get("requests"),
                          rep.get("retransmits"),
                          ctr(rep, "tcp_rto_expiries"), self.loss_note(),
                          cli.describe()))
        self.assertEqual(rc, 0, cli.describe())
        rep = cli.json()
        self.assertEqual(rep["requests"], requests)
        for k in ("rps", "p50_us", "p99_us", "max_us", "retransmits"):
            self.assertIn(k, rep)
        srep = self.stop_tern(srv)        # kern-echo prints on SIGINT too
        self.assertEqual(srep["requests"], requests, srv.describe())
        log("tern-echo -> kern-echo: %d requests, p50 %s us, p99 %s us, %s "
            "retransmits" % (rep["requests"], rep["p50_us"], rep["p99_us"],
                             rep["retransmits"]))
        return rep


class Basic(Base):
    tag = "b"

    def test_01_arp_icmp(self):
        h = self.hosts
        srv = self.tern_server("tern-echo")    # wait_ping: ARP resolved
        out = subprocess.run(["ip", "netns", "exec", h.ns_k, "ip", "-j",
                              "neigh", "show", h.ip_t, "dev", h.if_k],
                             capture_output=True, text=True).stdout
        import json
        neigh = json.loads(out or "[]")
        self.assertEqual(len(neigh), 1, "no neighbour entry: %r" % out)
        self.assertEqual(neigh[0].get("lladdr"), h.tern_mac(), neigh)
        self.assertNotIn("FAILED", neigh[0].get("state", []), neigh)
        self.assertNotIn("INCOMPLETE", neigh[0].get("state", []), neigh)
        ping = it.run(h.ns_k, [sys.executable, it.PEER, "ping", h.ip_t,
                               "14"], timeout=60)
        self.assertEqual(ping.p.returncode, 0, ping.describe())
        r = ping.json()
        self.assertEqual(r, {"sent": 14, "replies": 14, "intact": 14})
        rep = self.stop_tern(srv)
        self.assertGreaterEqual(ctr(rep, "arp_request_in"), 1)
        self.assertGreaterEqual(ctr(rep, "arp_reply_out"), 1)
        self.assertGreaterEqual(ctr(rep, "icmp_echo_reply_out"), 15)
        self.assertEqual(ctr(rep, "icmp_drop_csum"), 0)

    def test_02_http_curl_wrk(self):
        h = self.hosts
        size = 3000               # three segments
        srv = self.tern_server("tern-httpd", "--body-size", str(size))
        url = "http://%s:8080/" % h.ip_t
        c = it.run(h.ns_k, ["curl", "-sS", "-i", "-m", "10", url], timeout=20,
                   raw=True)
        self.assertEqual(c.p.returncode, 0, c.describe())
        head, _, body = c.out.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        self.assertEqual(lines[0], b"HTTP/1.1 200 OK")
        self.assertIn(b"Content-Length: %d" % size, lines)
        want = bytes(ord("a") + i % 26 for i in range(size - 1)) + b"\n"
        self.assertEqual(body, want)
        n = it.wrk_ok(self, h.ns_k, url)
        rep = self.stop_tern(srv)
        log("wrk: %d requests in 2 s; tern accepted %s" % (n, rep["accepted"]))
        self.assertGreaterEqual(rep["accepted"], 17)     # 16 + curl
        self.assertEqual(rep["tcp_conns"], 0, "connections left: %s" % rep)

    def test_03_bulk_linux_to_tern(self):
        self.bulk_linux_to_tern(BULK_BOUND_S)

    def test_04_bulk_tern_to_linux(self):
        self.bulk_tern_to_linux(BULK_BOUND_S)

    def test_05_echo_tern_client_kern_server(self):
        self.echo_tern_client(ECHO_REQUESTS, 30)

    def test_06_echo_kern_client_tern_server(self):
        h = self.hosts
        srv = self.tern_server("tern-echo")
        cli = it.run(h.ns_k, [prog("kern-echo"), "--client",
                              "%s:7007" % h.ip_t, "--conns", "4",
                              "--requests", str(ECHO_REQUESTS), "--cores",
                              str(KERN_CPU), "--json"], timeout=30)
        self.assertEqual(cli.p.returncode, 0, cli.describe())
        rep = cli.json()
        self.assertEqual(rep["requests"], ECHO_REQUESTS)
        srep = self.stop_tern(srv)
        self.assertEqual(srep["requests"], ECHO_REQUESTS)
        self.assertEqual(srep["accepted"], 4)
        # kern-echo closed first: tern passes through LAST_ACK to nothing.
        self.assertEqual(ctr(srep, "tcp_conns_established"), 4)
        self.assertEqual(ctr(srep, "tcp_conns_closed"), 4)
        self.assertEqual(srep["tcp_conns"], 0)
        log("kern-echo -> tern-echo: p50 %s us, p99 %s us" % (
            rep["p50_us"], rep["p99_us"]))

    # ---- ConnLoop: 200 connections, returning to zero ----------------
    #
    # "Zero" means, from tern's own figures after the run (JSON at exit):
    #   tcp_conns_established == LOOP_CONNS (each connection was made),
    #   tcp_conns_closed == tcp_conns_established (a connection is freed,
    #     and counted closed, when it ends or enters TIME_WAIT), no resets
    #     either way, and
    #   tcp_conns (every connection the stack holds, in any state, plus its
    #     TIME_WAIT records) equals exactly the TIME_WAIT records expected:
    #     0 when Linux closes first
    #     (tern ends in LAST_ACK -> freed), 0 when tern closes first and
    #     TIME_WAIT (--time-wait 1000) has expired, 1 when every
    #     connection reuses the previous one's TIME_WAIT entry (same port).

    def conn_loop_report(self, srv, expect_conns, expect_closed):
        rep = self.stop_tern(srv)
        est = ctr(rep, "tcp_conns_established")
        summary = ("established %d, closed %d, held %d, passive opens %d, "
                   "TIME_WAIT reuse %d, resets in/out %d/%d" % (
                       est, ctr(rep, "tcp_conns_closed"), rep["tcp_conns"],
                       ctr(rep, "tcp_passive_opens"),
                       ctr(rep, "tcp_time_wait_reuse"),
                       ctr(rep, "tcp_rst_in"), ctr(rep, "tcp_rst_out")))
        log(summary)
        self.assertEqual(ctr(rep, "tcp_passive_opens"), LOOP_CONNS, summary)
        self.assertEqual(est, LOOP_CONNS, summary)
        self.assertEqual(ctr(rep, "tcp_conns_closed"), expect_closed, summary)
        self.assertEqual(rep["tcp_conns"], expect_conns, summary)
        self.assertEqual(ctr(rep, "tcp_rst_in"), 0, summary)
        self.assertEqual(ctr(rep, "tcp_rst_out"), 0, summary)
        self.assertEqual(ctr(rep, "tcp_estab_resets"), 0, summary)
        return rep

    def test_07_conn_loop_linux_closes(self):
        h = self.hosts
        srv = self.tern_server("tern-echo")
        p = it.run(h.ns_k, [sys.executable, it.PEER, "echo-loop", h.ip_t,
                            "7007", str(LOOP_CONNS)], timeout=60)
        self.assertEqual(p.p.returncode, 0, p.describe())
        time.sleep(0.2)           # the last LAST_ACK's ACK
        self.conn_loop_report(srv, 0, LOOP_CONNS)

    def test_08_conn_loop_tern_closes_time_wait_expires(self):
        h = self.hosts
        srv = self.tern_server("tern-httpd", "--time-wait", "1000")
        p = it.run(h.ns_k, [sys.executable, it.PEER, "http-loop", h.ip_t,
                            "8080", str(LOOP_CONNS)], timeout=60)
        self.assertEqual(p.p.returncode, 0, p.describe())
        time.sleep(1.5)           # TIME_WAIT (1 s) of the last ones ends
        self.conn_loop_report(srv, 0, LOOP_CONNS)

    def test_09_conn_loop_time_wait_reuse(self):
        h = self.hosts
        srv = self.tern_server("tern-httpd")       # TIME_WAIT 60 s
        p = it.run(h.ns_k, [sys.executable, it.PEER, "http-loop", h.ip_t,
                            "8080", str(LOOP_CONNS), "--same-port"],
                   timeout=60)
        self.assertEqual(p.p.returncode, 0, p.describe())
        # every connection freed its slot on entering TIME_WAIT; the last
        # one's TIME_WAIT record is what tern still holds
        rep = self.conn_loop_report(srv, 1, LOOP_CONNS)
        self.assertEqual(ctr(rep, "tcp_time_wait_reuse"), LOOP_CONNS - 1)


class Loss(Base):
    """2% of the frames dropped each way on the wire."""
    tag = "l"
    wire = True
    PERCENT = 2

    @classmethod
    def prepare(cls):
        cls.hosts.loss(cls.PERCENT)

    def loss_note(self):
        return ("\nUnder loss: compare the RTO and recovery counters above "
                "with `tools/tern bench loss` on this host (docs/tcp.md, "
                "Loss recovery).")

    def test_01_bulk_linux_to_tern_loss(self):
        rep = self.bulk_linux_to_tern(LOSS_BOUND_S)
        # The loss was real: tern saw holes or resent data.
        self.assertGreater(ctr(rep, "tcp_ooo_segments") +
                           ctr(rep, "tcp_dup_data_in"), 0, rep)

    def test_02_bulk_tern_to_linux_loss(self):
        rep = self.bulk_tern_to_linux(LOSS_BOUND_S)
        self.assertGreater(rep["retransmits"], 0, rep)

    def test_03_echo_loss(self):
        self.echo_tern_client(500, LOSS_BOUND_S)


def parse_args():
    global DRIVER, SUITE
    rest = []
    args = sys.argv[1:]
    i = 0
    while i < len(args):
        if args[i] == "--driver":
            DRIVER = args[i + 1]
            i += 2
        elif args[i] == "--suite":
            SUITE = args[i + 1]
            i += 2
        else:
            rest.append(args[i])
            i += 1
    if DRIVER not in ("afxdp", "afpacket", "tap"):
        sys.exit("--driver afxdp|afpacket|tap")
    if SUITE not in ("basic", "loss"):
        sys.exit("--suite basic|loss")
    return rest


if __name__ == "__main__":
    rest = parse_args()
    it.skip_unless_possible()
    it.Watchdog.arm(int(os.environ.get("TERN_INTEROP_BUDGET_S", "170")))
    suite = Basic if SUITE == "basic" else Loss
    log("driver %s, suite %s, tern on CPU %d" % (DRIVER, SUITE, TERN_CPU))
    loader = unittest.TestLoader()
    tests = loader.loadTestsFromTestCase(suite)
    if rest:
        tests = unittest.TestSuite(
            t for t in tests if any(r in t.id() for r in rest))
    res = unittest.TextTestRunner(verbosity=2).run(tests)
    sys.exit(0 if res.wasSuccessful() else 1)
