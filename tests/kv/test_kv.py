"""The key-value servers against real Redis clients over network
namespaces (tools/netns.sh), no mocks:

    test_kv.py --driver afxdp|afpacket|tap|kernel|redis

afxdp, afpacket, tap: tern-kv on that driver in the tern-side namespace.
kernel: kern-kv there, on the veth's kernel address. redis: the real
redis-server there, with the same checks, which shows that what the tests
expect is what Redis does.

  - redis-cli: commands from argv, from stdin, -r repeats, --pipe;
  - the Python redis client (Debian's python3-redis, kv_client.py): every
    command with its exact replies, 5,000 pipelined SETs and GETs, values
    of 1, 4 and 8 MiB spanning hundreds of segments, 200 connections;
  - redis-benchmark -t get,set at pipeline depths 1 and 16, 50
    connections, and with 20 KB values: it completes without errors;
  - bad input: malformed RESP, negative and huge lengths, 10,000 nested
    arrays, an endless inline line, a request over the size bound (each an
    error reply and then a closed connection), a client sending one byte
    per segment (answered as usual), a client that never reads its
    replies (the server's memory stays bounded and others are served);
  - --maxmemory: writes get -OOM at the bound, DEL makes room again;
    values of 1 MiB are counted whole, and an MSET over the bound sets
    none of its keys;
  - two cores on one table: INCRs from 50 connections add up exactly;
  - MSET is all or nothing for a reader served by the other core (MGET
    and GETs in order never see a mix of two MSETs);
  - tern-kv with a small buffer pool (--pool-size): sends refused with
    -TERN_ENOBUFS wait for cb.writable, and every reply arrives.

Needs root and network namespaces (else exit 77 = ctest SKIP). Behaviour
only, never speed; every client has a time bound, so a stall fails. Hosts
and processes are removed on any exit."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
import interop as it                                  # noqa: E402
from interop import Proc, log, prog                   # noqa: E402

DRIVER = "afpacket"
PORT = 6379
CLIENT = os.path.join(HERE, "kv_client.py")
# Debian's interpreter: python3-redis installs the client library there.
SYS_PY = "/usr/bin/python3"
CPUS = os.cpu_count() or 1
SERVER_CPU = CPUS - 1
# A client that never reads may make the server hold its bounded buffers
# (a receive window of requests, KV_OUT_PAUSE of replies); far below what
# answering every request it sent would take (gigabytes).
NOREADER_RSS_BOUND = 96 << 20


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class KV(unittest.TestCase):
    hosts = None
    server = None

    @classmethod
    def setUpClass(cls):
        it.need_tools("redis-cli", "redis-benchmark", "ping", "ss")
        if DRIVER == "redis":
            it.need_tools("redis-server")
        r = subprocess.run([SYS_PY, "-c", "import redis"],
                           capture_output=True)
        if r.returncode:
            raise AssertionError("%s cannot import redis (scripts/deps.sh "
                                 "installs python3-redis)" % SYS_PY)
        cls.hosts = it.Hosts("kv" + DRIVER[:2], tap=DRIVER == "tap")
        try:
            h = cls.hosts
            if DRIVER in ("kernel", "redis"):
                subprocess.run(["ip", "netns", "exec", h.ns_t, "ip", "addr",
                                "add", h.ip_t + "/24", "dev", h.if_t],
                               check=True)
            cls.server = cls.start_server()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_server(cls, *flags):
        h = cls.hosts
        if DRIVER == "redis":
            argv = ["taskset", "-c", str(SERVER_CPU), "redis-server",
                    "--port", str(PORT), "--bind", h.ip_t, "--save", "",
                    "--appendonly", "no", "--protected-mode", "no"]
        elif DRIVER == "kernel":
            argv = [prog("kern-kv"), "--port", str(PORT), "--cores",
                    str(SERVER_CPU), "--json"] + list(flags)
        else:
            argv = [prog("tern-kv"), "--port", str(PORT), "--driver",
                    DRIVER, "--iface", h.if_t, "--cores", str(SERVER_CPU),
                    "--json"] + list(flags)
        p = Proc(h.ns_t, argv)
        if DRIVER in ("kernel", "redis"):
            up = it.wait_listen(h.ns_t, PORT) and p.p.poll() is None
        else:
            up = it.wait_ping(h.ns_k, h.ip_t, proc=p)
        if not up:
            p.stop()
            raise AssertionError("server did not come up:\n" + p.describe())
        return p

    @classmethod
    def stop_server(cls):
        p, cls.server = cls.server, None
        if not p:
            return None
        rc = p.stop(timeout=15)
        if DRIVER == "redis" or rc is None:
            return None
        try:
            return p.json()
        except (AssertionError, ValueError):
            log("no report from the server:\n" + p.describe())
            return None

    @classmethod
    def tearDownClass(cls):
        cls.stop_server()
        Proc.kill_all()
        if cls.hosts:
            cls.hosts.down()

    def setUp(self):
        self.t0 = time.time()
        if it.Watchdog.expired:
            self.fail("not run: the run's time budget is spent")
        self.assertIsNotNone(self.server, "no server running")
        if self.server.p.poll() is not None:
            # what it printed (its report says which signal ended it and
            # who sent it) before the message: unread pipes look empty
            self.server.wait(5)
            self.fail("the server exited:\n" + self.server.describe())

    def tearDown(self):
        log("%s: %.1f s" % (self.id().split(".")[-1], time.time() - self.t0))

    # ---- helpers --------------------------------------------------------

    def client(self, scenario, timeout=120):
        h = self.hosts
        p = it.run(h.ns_k, ["taskset", "-c", "0", SYS_PY, CLIENT, scenario,
                            h.ip_t, str(PORT)], timeout)
        self.assertEqual(p.p.returncode, 0, "%s:\n%s" % (scenario,
                                                         p.describe()))
        return json.loads(p.out.strip().splitlines()[-1])

    def cli(self, *args, stdin=None):
        h = self.hosts
        r = subprocess.run(["ip", "netns", "exec", h.ns_k, "redis-cli",
                            "-h", h.ip_t, "-p", str(PORT)] + list(args),
                           input=stdin, capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.decode().strip()

    def bench(self, *args):
        h = self.hosts
        r = subprocess.run(["ip", "netns", "exec", h.ns_k, "taskset", "-c",
                            "0", "redis-benchmark", "-h", h.ip_t, "-p",
                            str(PORT), "-q", "-c", "50", "-t", "get,set"] +
                           list(args), capture_output=True, timeout=120)
        out = r.stdout.decode(errors="replace").replace("\r", "\n")
        self.assertEqual(r.returncode, 0, out + r.stderr.decode())
        for t in ("SET", "GET"):
            self.assertRegex(out, r"%s: [0-9.]+ requests per second" % t)
        self.assertNotIn("rror", out)
        return out

    # ---- tests (run in name order) --------------------------------------

    def test_01_redis_cli(self):
        self.assertEqual(self.cli("PING"), "PONG")
        self.assertEqual(self.cli("FLUSHALL"), "OK")
        self.assertEqual(self.cli("SET", "x", "5"), "OK")
        self.cli("-r", "50", "INCR", "x")
        self.assertEqual(self.cli("GET", "x"), "55")
        self.assertEqual(self.cli(stdin=b"SET a b\nGET a\nDBSIZE\n"),
                         "OK\nb\n2")
        self.assertIn("used_memory:", self.cli("INFO"))
        proto = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\np:%d\r\n$1\r\nv\r\n"
                         % (len(b"p:%d" % i), i) for i in range(1000))
        out = self.cli("--pipe", stdin=proto)
        self.assertIn("errors: 0, replies: 1000", out)
        self.assertEqual(self.cli("DBSIZE"), "1002")

    def test_02_commands(self):
        self.client("commands")

    def test_03_pipeline(self):
        self.client("pipeline")

    def test_04_large_values(self):
        self.client("large")

    def test_05_many_conns(self):
        self.client("conns")

    def test_06_benchmark(self):
        self.bench("-n", "20000")
        self.bench("-n", "50000", "-P", "16")
        self.bench("-n", "2000", "-d", "20000")

    def ours_only(self):
        """Bad input, memory bounds and reports: our servers' behaviour.
        (redis-server waits for a 999 MB value, and by default holds every
        reply a client does not read: gigabytes in test 08.)"""
        if DRIVER == "redis":
            self.skipTest("tern-kv and kern-kv only")

    def test_07_bad_input(self):
        self.ours_only()
        seen = self.client("badinput")
        log("bad input replies: %s" % seen)

    def test_08_client_never_reads(self):
        self.ours_only()
        pid = self.server.p.pid
        before = rss(pid)
        got = self.client("noreader")
        grew = rss(pid) - before
        log("a client that never reads: sent %d bytes of GETs before the "
            "server stopped taking them; server RSS +%d KiB"
            % (got["sent"], grew >> 10))
        self.assertLess(got["sent"], 64 << 20,
                        "the server took every request without its "
                        "replies being read")
        self.assertLess(grew, NOREADER_RSS_BOUND)

    def test_09_maxmemory(self):
        self.ours_only()
        rep = self.stop_server()
        self.assertIsNotNone(rep, "no report from the server")
        if DRIVER not in ("kernel", "redis"):
            # the report names what ended the run: our SIGINT, from us
            # (ip netns exec runs the server in this PID namespace)
            self.assertEqual(rep["stop_signal"], signal.SIGINT)
            self.assertEqual(rep["stop_sender_pid"], os.getpid())
        log("report: accepted %s, commands %s, keys %s, used_memory %s"
            % (rep["accepted"], rep["commands"], rep["keys"],
               rep["used_memory"]))
        self.assertGreaterEqual(rep["accepted"], 200)
        # The large values arrived in pieces and were assembled.
        self.assertGreater(rep["bytes_copied"], 13 << 20)
        self.assertGreater(rep["commands"], 70000)
        type(self).server = self.start_server("--maxmemory", "4M")
        got = self.client("maxmemory")
        log("--maxmemory 4M: %d writes of 100 KiB, then %s"
            % (got["stored"], got["error"]))
        self.assertGreater(got["stored"], 10)
        self.assertLessEqual(got["stored"], 41)
        # 4 MiB holds at most 3 values of 1 MiB beside the table itself.
        self.assertGreaterEqual(got["stored_1mib"], 1)
        self.assertLessEqual(got["stored_1mib"], 3)

    def test_10_two_cores(self):
        """Two cores share one table: INCRs of one key from 50 connections
        spread over both cores add up exactly (tern: --steer spreads them
        on these one-queue hosts; kern-kv: SO_REUSEPORT)."""
        self.ours_only()
        if CPUS < 2:
            self.skipTest("one CPU")
        self.stop_server()
        type(self).server = self.start_server(*self.two_cores())
        h = self.hosts
        n = 20000
        r = subprocess.run(["ip", "netns", "exec", h.ns_k, "redis-benchmark",
                            "-h", h.ip_t, "-p", str(PORT), "-q", "-c", "50",
                            "-P", "4", "-n", str(n), "-t", "incr"],
                           capture_output=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.cli("GET", "counter:__rand_int__"), str(n))
        rep = self.stop_server()
        self.assertIsNotNone(rep, "no report from the server")
        # Requests served where they arrived: (almost) nothing copied.
        self.assertLess(rep["bytes_copied"], rep["bytes_in"] // 100,
                        "whole requests were copied: %s" % rep)
        if DRIVER != "kernel":
            # The replies to the 4 requests of a segment leave together.
            segs = rep["counters"]["tcp_data_segs_out"]
            log("%d data segments out for %d INCRs" % (segs, n))
            self.assertLessEqual(segs, n // 2, "replies not batched")
            opens = [c["passive_opens"] for c in rep["per_core"].values()]
            for c in rep["per_core"].values():
                # the per-core figures every server reports (core_report.h)
                for key in ("established", "attempt_fails", "drop_no_conn",
                            "bytes_in", "steer_kept", "steer_tx_drops"):
                    self.assertIn(key, c)
            log("connections per core: %s" % opens)
            self.assertEqual(len(opens), 2)
            self.assertTrue(all(o > 0 for o in opens),
                            "one core served every connection: %s" % opens)
        type(self).server = self.start_server(*self.two_cores())

    def two_cores(self):
        return ["--cores", "0,1"] + ([] if DRIVER == "kernel"
                                     else ["--steer"])

    def test_11_mset_atomic(self):
        """A reader on one core never sees half of an MSET made on the
        other (the server from test 10: two cores)."""
        self.ours_only()
        if CPUS < 2:
            self.skipTest("one CPU")
        got = self.client("mset")
        log("MSET of 100 keys x 10000 on thread %s, %d MGETs on thread %s "
            "(%d while the MSETs ran): never torn"
            % (got["writer_thread"], got["reads"], got["reader_thread"],
               got["reads_during_msets"]))
        self.assertNotEqual(got["writer_thread"], got["reader_thread"])

    def test_12_small_pool(self):
        """A buffer pool of 512: replies to 50 connections of 20 KB GETs
        and values of megabytes need more, so sends are refused
        (-TERN_ENOBUFS) and retried from cb.writable; every reply arrives
        whole."""
        if DRIVER in ("kernel", "redis"):
            self.skipTest("tern-kv only")
        self.stop_server()
        type(self).server = self.start_server("--pool-size", "512")
        self.bench("-n", "5000", "-d", "20000")
        self.client("large")
        rep = self.stop_server()
        self.assertIsNotNone(rep, "no report from the server")
        c = rep["counters"]
        log("pool of 512: %d sends refused for the reserve, %d writable "
            "callbacks" % (c["tcp_send_rx_reserve"], c["tcp_writable_calls"]))
        self.assertGreater(c["tcp_send_rx_reserve"], 0,
                           "the pool never ran low: the test shows nothing")
        self.assertGreater(c["tcp_writable_calls"], 0)
        type(self).server = self.start_server()

    def test_13_busy_poll(self):
        """--busy-poll US: the runtime spins up to US after the last frame
        before sleeping. Without it the loop never spins (every wait is a
        sleep); with it, requests arrive while it spins, and every reply
        still arrives."""
        if DRIVER in ("kernel", "redis"):
            self.skipTest("tern-kv only")
        self.bench("-n", "5000")
        rep = self.stop_server()
        self.assertIsNotNone(rep, "no report from the server")
        log("default: %d sleeps, %d turns served while spinning"
            % (rep["sleeps"], rep["spin_hits"]))
        self.assertGreater(rep["sleeps"], 0)
        self.assertEqual(rep["spin_hits"], 0, "spun without --busy-poll")
        # Frames that come while it spins: a matter of timing, so up to
        # three servers of 20000 requests each (one would do on any
        # machine that runs the client at all).
        hits = 0
        for _ in range(3):
            type(self).server = self.start_server("--busy-poll", "50")
            self.bench("-n", "20000")
            rep = self.stop_server()
            self.assertIsNotNone(rep, "no report from the server")
            hits = rep["spin_hits"]
            log("--busy-poll 50: %d sleeps, %d turns served while spinning"
                % (rep["sleeps"], hits))
            if hits:
                break
        self.assertGreater(hits, 0, "no request came while it spun")
        type(self).server = self.start_server()


def main():
    global DRIVER
    args = sys.argv[1:]
    if "--driver" in args:
        i = args.index("--driver")
        DRIVER = args[i + 1]
        del args[i:i + 2]
    if DRIVER not in ("afxdp", "afpacket", "tap", "kernel", "redis"):
        sys.exit("--driver afxdp|afpacket|tap|kernel|redis")
    it.skip_unless_possible()
    it.Watchdog.arm(float(os.environ.get("TERN_KV_BUDGET_S", "200")))
    it.main(args)


if __name__ == "__main__":
    main()
