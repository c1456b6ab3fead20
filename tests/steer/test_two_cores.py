"""Software steering on two cores over a driver without RSS.

The device is opened with ONE queue (AF_PACKET without fanout, or a
one-queue tap): only core 0 reads it, and `--steer` hands every frame to
the core that owns its flow (Toeplitz hash of the 4-tuple, 128-entry table
round robin over the cores: src/rt/steer.h). The stacks pick the local
ports of their active opens with the same hash, and core 1 transmits
through core 0's queue.

  client      tern-echo --steer, 32 connections (16 per core) against
              kern-echo: every request completes; per core: 16 active
              opens, 16 established, no RST sent, no segment without a
              connection, no attempt failed, no ring drop, no buffer
              missing from its pool at the end; core 1 got its frames
              from core 0 and sent through it.
  server      tern-echo --steer --server, 32 Linux connections (Python,
              ports chosen by the kernel): every byte is echoed; the
              passive opens of each core equal the number of 4-tuples whose
              hash (computed here, independently, in Python) maps to it,
              and both cores have some; the same per-core checks.
  negative    the same client WITHOUT --steer, on two queues spread by the
              kernel's own hash (AF_PACKET fanout=hash, multi-queue tap):
              the per-core checks above catch the wrong-core deliveries
              (RSTs from the core that does not know the connection,
              connections that never establish), so they do prove
              something. (The request count alone does not: on tap the
              connections that did establish still finish the quota.)

With --family 6 the same runs go over IPv6 (tern 2001:db8::2, Linux
2001:db8::1): the flows are hashed over the 36-byte tuple (two 16-byte
addresses, two ports), neighbor advertisements are copied to both cores.

Needs root and network namespaces (else exit 77 = ctest SKIP). Hosts have
names unique to the run and are removed on any exit; every wait is bounded.
Usage: test_two_cores.py --driver afpacket|tap [--family 4|6]"""
import ipaddress
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
import interop as it                      # noqa: E402
from interop import Proc, log, prog       # noqa: E402
from test_interop6 import wait_ping6      # noqa: E402

DRIVER = "afpacket"
FAMILY = 4
CONNS = 32
REQUESTS = 20000
PORT = 7007
BOUND_S = 60          # a stall fails instead of hanging
NEG_BOUND_S = 8       # the negative run is stopped (SIGINT) after this

# Microsoft's RSS key: the runtime's steering default (src/rt/steer.c).
MS_KEY = bytes([
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
    0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
    0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
    0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa])


def toeplitz(key, data):
    """Microsoft's definition: for every set input bit i (most significant
    first), XOR in the 32 key bits that start at bit i."""
    k = int.from_bytes(key, "big")
    kbits = len(key) * 8
    h = 0
    for i in range(len(data) * 8):
        if data[i // 8] & (0x80 >> (i % 8)):
            h ^= (k >> (kbits - 32 - i)) & 0xFFFFFFFF
    return h


def core_of(src_ip, dst_ip, sport, dport, ncores=2):
    """The core steering gives a frame src -> dst (128-entry table, entry
    i = i % ncores)."""
    data = (ipaddress.ip_address(src_ip).packed +
            ipaddress.ip_address(dst_ip).packed +
            sport.to_bytes(2, "big") + dport.to_bytes(2, "big"))
    return (toeplitz(MS_KEY, data) & 127) % ncores


# Linux clients for the server test: CONNS connections, ROUNDS 64-byte
# request/response rounds each, every reply checked; prints the local
# ports (one JSON line).
CLIENTS_PY = r"""
import json, socket, sys
ip, port, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
socks = [socket.create_connection((ip, port), timeout=20) for _ in range(n)]
ok = 0
for r in range(rounds):
    for k, s in enumerate(socks):
        msg = bytes((k + r + i) % 251 for i in range(64))
        s.sendall(msg)
        got = b""
        while len(got) < 64:
            c = s.recv(64 - len(got))
            if not c:
                raise SystemExit("connection %d closed" % k)
            got += c
        if got != msg:
            raise SystemExit("connection %d: wrong echo" % k)
        ok += 1
ports = [s.getsockname()[1] for s in socks]
for s in socks:
    s.close()
print(json.dumps({"ports": ports, "ok": ok}))
"""


def per_core_problems(rep):
    """Every way a connection's packets can reach the wrong core shows up
    in these per-core counters; [] when none did."""
    bad = []
    for core, c in sorted(rep.get("per_core", {}).items()):
        opens = c["active_opens"] + c["passive_opens"]
        # buffers_held: buffers of the core's pool not back home once
        # every core stopped and the rings were emptied (a leak)
        for key in ("rst_out", "drop_no_conn", "attempt_fails",
                    "steer_ring_drops", "steer_tx_drops", "buffers_held"):
            if c.get(key, 0):
                bad.append("core %s: %s %d" % (core, key, c[key]))
        if c["established"] != opens:
            bad.append("core %s: %d opened, %d established"
                       % (core, opens, c["established"]))
    if not rep.get("per_core"):
        bad.append("no per-core figures")
    return bad


class TwoCores(unittest.TestCase):
    hosts = None

    @classmethod
    def setUpClass(cls):
        it.need_tools("ss", "ping")
        cls.hosts = it.Hosts("s%d%s" % (FAMILY, DRIVER[:2]),
                             tap=DRIVER == "tap")
        h = cls.hosts
        # the addresses the runs use: IPv4's, or IPv6's
        cls.ip_t, cls.ip_k = ((h.ip_t, h.ip_k) if FAMILY == 4
                              else (h.ip6_t, h.ip6_k))

    @classmethod
    def tearDownClass(cls):
        # every process first (a tern still holding the interface), then
        # the hosts; also after a failure or the watchdog's signal
        Proc.kill_all()
        if cls.hosts:
            cls.hosts.down()

    def tearDown(self):
        Proc.kill_all()

    def tern(self, args, steer=True):
        h = self.hosts
        a = [prog("tern-echo")] + args + [
            "--driver", DRIVER, "--iface", h.if_t, "--ip", h.ip_t + "/24",
            "--cores", "0,1", "--json"]
        if FAMILY == 6:
            a += ["--ip6", h.ip6_t + "/64"]
        if steer:
            a.append("--steer")
        return Proc(h.ns_t, a)

    def client_run(self, steer, bound):
        h = self.hosts
        srv = Proc(h.ns_k, [prog("kern-echo"), "--server", "--port",
                            str(PORT), "--cores", "0", "--json"])
        self.assertTrue(it.wait_listen(h.ns_k, PORT),
                        "kern-echo did not listen:\n" + srv.describe())
        dst = self.ip_k if FAMILY == 4 else "[%s]" % self.ip_k
        cli = self.tern(["--client", "%s:%d" % (dst, PORT), "--conns",
                         str(CONNS), "--requests", str(REQUESTS)], steer)
        rc = cli.wait_or_interrupt(bound)
        rep = cli.json()
        srv.stop()
        return rc, rep, cli, srv

    def test_1_client(self):
        rc, rep, cli, srv = self.client_run(True, BOUND_S)
        self.assertEqual(rc, 0, "not done within %d s:\n%s"
                         % (BOUND_S, cli.describe()))
        self.assertEqual(rep["requests"], REQUESTS, cli.describe())
        self.assertEqual(srv.json()["requests"], REQUESTS, srv.describe())
        self.assertEqual(per_core_problems(rep), [], cli.describe())
        pc = rep["per_core"]
        for core in ("0", "1"):
            self.assertEqual(pc[core]["active_opens"], CONNS // 2)
            self.assertGreater(pc[core]["bytes_in"], 0)
        # core 1 has no queue: everything it got came from core 0, and
        # everything it sent went out through core 0's queue
        self.assertEqual(pc["1"]["steer_kept"], 0)
        self.assertGreater(pc["1"]["steer_in"], 0)
        self.assertEqual(pc["0"]["steer_out"], pc["1"]["steer_in"])
        self.assertGreater(pc["1"]["steer_tx_forwarded"], 0)
        log("client: %s requests, %s rps; core 1 got %d frames from core 0 "
            "and sent %d through it" % (rep["requests"], rep["rps"],
                                        pc["1"]["steer_in"],
                                        pc["1"]["steer_tx_forwarded"]))

    def test_2_server(self):
        h = self.hosts
        srv = self.tern(["--server", "--port", str(PORT)])
        up = (it.wait_ping(h.ns_k, h.ip_t, proc=srv) if FAMILY == 4
              else wait_ping6(h.ns_k, h.ip6_t, srv))
        self.assertTrue(up, "tern-echo does not answer ping:\n"
                        + srv.describe())
        rounds = 50
        cli = it.run(h.ns_k, [sys.executable, "-c", CLIENTS_PY, self.ip_t,
                              str(PORT), str(CONNS), str(rounds)], BOUND_S)
        self.assertEqual(cli.p.returncode, 0, cli.describe())
        got = cli.json()
        self.assertEqual(got["ok"], CONNS * rounds)
        self.assertEqual(srv.stop(), 0, srv.describe())
        rep = srv.json()
        want = [0, 0]
        for p in got["ports"]:
            want[core_of(self.ip_k, self.ip_t, p, PORT)] += 1
        pc = rep["per_core"]
        self.assertEqual([pc["0"]["passive_opens"], pc["1"]["passive_opens"]],
                         want, "accepts per core vs the 4-tuples' hash\n"
                         + srv.describe())
        self.assertTrue(all(want), "all 32 flows hashed to one core: %r"
                        % got["ports"])
        self.assertEqual(per_core_problems(rep), [], srv.describe())
        self.assertEqual(rep["accepted"], CONNS)
        log("server: accepts per core %r = the hash's %r" % (
            [pc["0"]["passive_opens"], pc["1"]["passive_opens"]], want))

    def test_3_without_steering_is_caught(self):
        rc, rep, cli, srv = self.client_run(False, NEG_BOUND_S)
        bad = per_core_problems(rep)
        log("without --steer: %s requests of %d; %s" % (
            rep.get("requests"), REQUESTS, "; ".join(bad)))
        self.assertNotEqual(bad, [], "two queues spread by the kernel's "
                            "hash and no steering, yet no core saw another "
                            "core's packets:\n" + cli.describe())


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--driver" in args:
        i = args.index("--driver")
        DRIVER = args[i + 1]
        del args[i:i + 2]
    if "--family" in args:
        i = args.index("--family")
        FAMILY = int(args[i + 1])
        del args[i:i + 2]
    it.skip_unless_possible()
    it.Watchdog.arm(int(os.environ.get("TERN_STEER_BUDGET_S", "170")))
    it.main(args)
