#!/usr/bin/python3
"""badinput_wire.py - the bad-input suite's real path: a subset of the
tests/badinput cases, crafted with scapy in one network namespace and sent
over a veth to tern-echo (AF_PACKET by default) in another.

Run as root with Debian's /usr/bin/python3 (it has python3-scapy):

    /usr/bin/python3 tests/badinput_wire/badinput_wire.py [options]

    --bin DIR      where tern-echo lives (default: build/bin)
    --driver NAME  tern's driver: afpacket (default) or afxdp
    -k PATTERN     run only cases whose name contains PATTERN (repeatable)
    --list         list the cases and exit
    --markdown F   write the case table (docs/robustness.md 1.1) to F
    -v             print observations, and tracebacks of unexpected errors

Topology (names unique per run, always removed, see conformance.py):

    ns biw<pid>-inj [veth c<pid>t, no IP] ---- [veth c<pid>T, no IP] ns biw<pid>-tn
      injector: 198.18.10.1 (answered by            tern-echo --server
      the suite itself, not by the kernel)          198.18.10.2:7007

Every case runs against a fresh tern-echo: it is started, the case injects
its frames and checks what comes back on the wire, a normal connection must
then still work (handshake, echo, close), and tern-echo is stopped with
SIGTERM so its final counters (--json) can be checked exactly.  Exit status:
0 all passed, 1 a case failed, 77 not root (ctest SKIP).
"""
import argparse
import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))

ECHO_PORT = 7007
CLOSED_UDP = 9                # no UDP port is open on tern-echo
QUIET = 0.3                   # how long "nothing more comes" is watched
BARRIER_ID = 0xB1B1           # ICMP echo id of the barrier pings
STALE = r"^biw(\d+)-(inj|tn)$"

CASES = []
TCP_NONE = {"tcp_passive_opens": 1}     # the healthy check's connection only


class WireCase:
    def __init__(self, fn, layer, mirrors, sends, asserts, counters):
        self.fn, self.name = fn, fn.__name__
        self.layer, self.mirrors = layer, mirrors
        self.sends, self.asserts = sends, asserts
        self.counters = counters


def wcase(layer, mirrors, sends, asserts, counters):
    """Register a case.  counters: exact values of tern's counters at exit
    (after the case and the healthy check); 0 means absent."""
    def deco(fn):
        CASES.append(WireCase(fn, layer, mirrors, sends, asserts, counters))
        return fn
    return deco


# ---------------------------------------------------------------------------
# Byte surgery on datagrams built by scapy
# ---------------------------------------------------------------------------

def _fold_not(data):
    return ~tcpinj._csum(bytes(data)) & 0xFFFF


def fix_ip(d):
    """Recompute the IPv4 header checksum of datagram d (bytearray)."""
    ihl = (d[0] & 0x0F) * 4
    d[10:12] = b"\0\0"
    d[10:12] = struct.pack("!H", _fold_not(d[:ihl]))
    return d


def fix_l4(d):
    """Recompute the TCP or UDP checksum of datagram d (bytearray)."""
    ihl = (d[0] & 0x0F) * 4
    proto = d[9]
    l4 = d[ihl:]
    at = ihl + (16 if proto == 6 else 6)
    d[at:at + 2] = b"\0\0"
    pseudo = bytes(d[12:20]) + struct.pack("!BBH", 0, proto, len(l4))
    d[at:at + 2] = struct.pack("!H", _fold_not(pseudo + bytes(d[ihl:])))
    return d


def with_ip_options(d, opts):
    """Insert IPv4 options (a multiple of 4 bytes) after the header."""
    d = bytearray(d[:20] + bytes(opts) + d[20:])
    d[0] = 0x40 | (20 + len(opts)) // 4
    d[2:4] = struct.pack("!H", len(d))
    return fix_ip(d)


def with_tcp_options(d, opts):
    """Give the option-less TCP header of d these raw option bytes (padded
    to a multiple of 4)."""
    opts = bytes(opts) + b"\0" * (-len(opts) % 4)
    d = bytearray(d[:40] + opts + d[40:])
    d[32] = ((20 + len(opts)) // 4) << 4
    d[2:4] = struct.pack("!H", len(d))
    return fix_l4(fix_ip(d))


def fragment(d, off, length, mf, ident):
    """One fragment of datagram d: `length` bytes of its payload from `off`
    (zeros past its end), under a copy of its header."""
    piece = bytes(d[20 + off:20 + off + length])
    piece += b"\0" * (length - len(piece))
    h = bytearray(d[:20])
    h[2:4] = struct.pack("!H", 20 + length)
    h[4:6] = struct.pack("!H", ident)
    h[6:8] = struct.pack("!H", (0x2000 if mf else 0) | (off // 8))
    return bytes(fix_ip(h)) + piece


def describe(frame):
    try:
        return Ether(frame).summary()
    except Exception:
        return frame[:40].hex()


# ---------------------------------------------------------------------------
# The target: one tern-echo per case
# ---------------------------------------------------------------------------

def import_suite():
    """The conformance suite's modules (scapy needed)."""
    global conf, tcpinj, cs, Conn, CaseFail, sadd
    global Ether, IP, ICMP, TCP, UDP, Raw
    import conformance as conf
    import tcpinj
    import cases as cs
    from tcpinj import Conn, CaseFail, sadd
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw


def make_target_class():
    class EchoTarget(conf.Target):
        """tern-echo --server --json on the far end of the veth."""
        name = "tern"
        short = "tn"
        link_args = conf.TernTarget.link_args

        def __init__(self, topo, inj_ns, bindir, driver):
            super().__init__(topo, inj_ns, 0)
            self.has_http = False
            self.echo = os.path.join(bindir, "tern-echo")
            self.driver = driver
            self.proc = None
            self.log = open(os.path.join(
                os.environ.get("TMPDIR", "/tmp"),
                "tern-badinput-wire-%s.log" % topo.runid), "w")

        def start(self, wire):
            if not os.access(self.echo, os.X_OK):
                raise RuntimeError("%s is not built" % self.echo)
            self.log.flush()
            self.proc = self.topo.spawn(
                self.ns, [self.echo, "--server", "--port", str(ECHO_PORT),
                          "--json"] + self.link_args(self.ip),
                stdout=subprocess.PIPE, stderr=self.log, text=True)
            mac = wire.resolve(self.ip, timeout=10)
            if not mac:
                rc = self.proc.poll()
                raise RuntimeError("tern-echo does not answer ARP%s (see %s)"
                                   % ("" if rc is None else
                                      ": it exited with status %d" % rc,
                                      self.log.name))
            return mac

        def stop(self):
            """SIGTERM; returns (exit status, counters or None)."""
            p, self.proc = self.proc, None
            if p is None:
                return None, None
            died = p.poll()
            # tern-echo's exit drain may take its 3 s (a connection still
            # closing), and a busy machine adds to that before the report.
            self.topo.stop(p, grace=30)
            out = p.stdout.read()
            p.stdout.close()
            if died is not None:
                return died, None
            for line in out.splitlines():
                if line.startswith("{"):
                    rep = json.loads(line)
                    ctrs = dict(rep.get("counters", {}))
                    # the driver's drop causes, as link_<name>
                    for k in ("rx_drop_vlan", "rx_drop_nobuf"):
                        if k in rep.get("link", {}):
                            ctrs["link_" + k] = rep["link"][k]
                    return p.returncode, ctrs
            return p.returncode, None

        def alive(self):
            return self.proc is not None and self.proc.poll() is None

    return EchoTarget


# ---------------------------------------------------------------------------
# What a case sees: the conformance Env plus whole frames
# ---------------------------------------------------------------------------

def make_ctx_class():
    class Ctx(conf.Env):
        def begin(self, tern_mac):
            self.reset_case()
            self.tern_mac = bytes.fromhex(tern_mac.replace(":", ""))
            self.pings = 0
            self.ip_id = random.randrange(1 << 16)
            # Wire.resolve asks again every 0.25 s until tern answers; on a
            # busy machine tern answers several of those requests, late.
            # Its replies come before the reply to a barrier ping, so none
            # is taken for an answer to the case's bad input.
            self.ping()

        # -- sending ------------------------------------------------------
        def next_id(self):
            self.ip_id = (self.ip_id + 1) & 0xFFFF
            return self.ip_id

        def send_frame(self, l3, etype=0x0800, dst=None):
            """Send an Ethernet frame with payload l3 (bytes) to tern."""
            mine = bytes.fromhex(self.wire.my_mac.replace(":", ""))
            self.wire.sock.send((dst or self.tern_mac) + mine +
                                struct.pack("!H", etype) + bytes(l3))

        def ip(self, l4, src=None, dst=None):
            """IPv4 datagram bytes (bytearray) from us to tern."""
            return bytearray(bytes(IP(src=src or self.my_ip,
                                      dst=dst or self.target_ip,
                                      id=self.next_id(), ttl=64) / l4))

        def udp(self, dport=CLOSED_UDP, payload=b"badinput-wire-0123456789abcdef",
                **kw):
            return self.ip(UDP(sport=4000, dport=dport) / Raw(payload), **kw)

        def syn(self, **kw):
            """A SYN (no options) to the echo port."""
            return self.ip(TCP(sport=self.new_port(), dport=ECHO_PORT,
                               seq=random.randrange(1 << 32), flags="S",
                               window=65535), **kw)

        # -- receiving ----------------------------------------------------
        def mark(self):
            with self.wire.cv:
                return len(self.wire.frames)

        def wait_frame(self, pred, timeout, start):
            """A frame from tern (any type) after index start matching
            pred(bytes), or None."""
            f, _ = self.wire.wait(
                lambda e: e[1][6:12] == self.tern_mac and pred(e[1]),
                timeout, start, frames=True)
            return None if f is None else f[1]

        def ping(self):
            """A barrier: an echo request whose reply proves tern has
            processed every frame sent before it (frames are handled in
            order, answers to them sent first)."""
            start = self.mark()
            self.pings += 1
            seq = self.pings
            self.send_frame(self.ip(ICMP(type=8, id=BARRIER_ID, seq=seq) /
                                    Raw(b"barrier")))
            r = self.wait_frame(lambda f: is_barrier_reply(f, seq), 3.0, start)
            if r is None:
                raise CaseFail("no reply to the barrier ping: tern stopped "
                               "answering")
            return r

        def silent(self, start, what="the bad input", allowed=0):
            """Nothing from tern since index start (but `allowed` frames
            already checked, and barrier replies): checked up to a barrier
            ping's reply and QUIET s after it."""
            self.ping()
            seen = []

            def extra(f):
                if is_barrier_reply(f):
                    return False
                seen.append(f)
                return len(seen) > allowed
            f = self.wait_frame(extra, QUIET, start)
            if f is not None:
                raise CaseFail("tern answered %s: %s" % (what, describe(f)))

        def expect_icmp(self, start, typ, code, timeout=2.0):
            """tern's ICMP message (type, code) since start: checksums
            verified; returns (ip header bytes, icmp bytes)."""
            f = self.wait_frame(lambda f: icmp_of(f) is not None and
                                icmp_of(f)[1][0] == typ, timeout, start)
            if f is None:
                raise CaseFail("no ICMP type %d from tern within %.1fs" %
                               (typ, timeout))
            iph, m = icmp_of(f)
            self.check(tcpinj._csum(iph) == 0xFFFF, "ICMP datagram with a "
                       "bad IP header checksum")
            self.check(tcpinj._csum(m) == 0xFFFF, "ICMP message with a bad "
                       "checksum")
            self.check(m[1] == code, "ICMP type %d code %d, expected code %d"
                       % (typ, m[1], code))
            return iph, m

    return Ctx


def icmp_of(frame):
    """(IP header, ICMP message) of an IPv4/ICMP frame, else None."""
    if frame[12:14] != b"\x08\x00" or len(frame) < 34 or frame[23] != 1:
        return None
    ihl = (frame[14] & 0x0F) * 4
    tot = struct.unpack("!H", frame[16:18])[0]
    return frame[14:14 + ihl], frame[14 + ihl:14 + tot]


def is_barrier_reply(frame, seq=None):
    im = icmp_of(frame)
    if im is None or len(im[1]) < 8 or im[1][0] != 0:
        return False
    ident, s = struct.unpack("!HH", im[1][4:8])
    return ident == BARRIER_ID and (seq is None or s == seq)


def healthy(ctx):
    """After the bad input: handshake, echo, and an orderly close."""
    c = Conn(ctx, ECHO_PORT)
    c.connect()
    c.echo_roundtrip(cs.pattern(300, 9))
    c.send("FA")
    fin = c.expect(lambda s: s.fin or s.rst, 2.0, "the echo server's FIN")
    ctx.check(not fin.rst, "RST instead of FIN: %r" % fin)
    ctx.check(fin.ack == c.snd_nxt, "FIN acks %d, expected our FIN+1 %d" %
              (fin.ack, c.snd_nxt))
    ctx.check(fin.seq == c.rcv_nxt, "FIN seq %d, expected %d" %
              (fin.seq, c.rcv_nxt))
    c.rcv_nxt = sadd(c.rcv_nxt, 1)
    c.ack_now()


# ---------------------------------------------------------------------------
# The cases.  Each mirrors a tests/badinput case (same input, same verdict)
# ---------------------------------------------------------------------------
# Below TCP, the bad datagrams are UDP to a closed port (or a SYN to the
# echo port): accepted by mistake they would draw an ICMP port unreachable
# (or a SYN-ACK), so "no answer" is checked on the wire, not only counted.

def drop_udp(ctx, edit, etype=0x0800, dst=None):
    """Send an edited UDP datagram to a closed port; nothing may answer."""
    start = ctx.mark()
    ctx.send_frame(edit(ctx.udp()), etype=etype, dst=dst)
    ctx.silent(start)


def raw_data_echo(ctx, c, payload, flags="PA", edit=None, **tcp):
    """Send payload on connection c as a hand-made segment (edit: changes
    to the datagram's bytes) and check that exactly it is echoed."""
    d = ctx.ip(TCP(sport=c.sport, dport=ECHO_PORT, seq=c.snd_nxt,
                   ack=c.rcv_nxt, flags=flags, window=65535, **tcp) /
               Raw(payload))
    ctx.send_frame(edit(d) if edit else d)
    c.snd_nxt = sadd(c.snd_nxt, len(payload))
    got, _ = c.recv_data(len(payload), 2.0)
    ctx.check(got == payload, "echoed %r, expected %r" % (got, payload))


def port_unreachable(ctx, d, frames=None):
    """Send the frames (default: datagram d) that carry UDP datagram d to a
    closed port: tern must answer with exactly one ICMP port unreachable,
    from its address to ours.  Returns the quote (IP header onwards)."""
    start = ctx.mark()
    for f in frames or [d]:
        ctx.send_frame(f)
    iph, m = ctx.expect_icmp(start, 3, 3)
    ctx.check(iph[12:16] == bytes(d[16:20]) and iph[16:20] == bytes(d[12:16]),
              "ICMP not from tern to us")
    ctx.silent(start, "a second time", allowed=1)
    return bytes(m[8:])


def silent_on_conn(ctx, inject):
    """On a live connection, inject(conn) draws no answer at all and the
    connection still echoes afterwards."""
    c = cs.established(ctx)
    cs.alive_check(c)
    start = ctx.mark()
    inject(c)
    ctx.silent(start)
    cs.alive_check(c, 2)


def setb(d, at, val):
    d[at:at + len(val)] = val
    return d


@wcase("eth", "eth_unknown_type", "EtherType 0x88b5 carrying a UDP datagram",
       "no answer", {"eth_drop_ethertype": 1, "udp_in": 0})
def eth_unknown_type(ctx):
    drop_udp(ctx, lambda d: d, etype=0x88B5)


@wcase("eth", "eth_vlan_tagged", "SYN tagged 802.1Q VLAN 5 to the echo port",
       "no SYN-ACK (tern is on no VLAN: dropped by the driver)",
       dict(TCP_NONE, link_rx_drop_vlan=1))
def eth_vlan_tagged(ctx):
    start = ctx.mark()
    ctx.send_frame(struct.pack("!HH", 5, 0x0800) + bytes(ctx.syn()),
                   etype=0x8100)
    ctx.silent(start, "the VLAN-tagged SYN")


@wcase("eth", "eth_multicast_dst", "UDP datagram to multicast MAC 01:00:5e:00:00:01",
       "no answer", {"eth_drop_not_ours": 1, "udp_in": 0})
def eth_multicast_dst(ctx):
    drop_udp(ctx, lambda d: d, dst=bytes.fromhex("01005e000001"))


@wcase("eth", "eth_padding", "60-byte frame: 1-byte UDP datagram + 17 bytes of 0xee padding",
       "padding trimmed: port unreachable quoting exactly the 29-byte datagram",
       {"udp_drop_no_port": 1, "icmp_unreach_out": 1, "udp_drop_len": 0,
        "udp_drop_csum": 0})
def eth_padding(ctx):
    d = ctx.udp(payload=b"x")
    q = port_unreachable(ctx, d, [bytes(d) + b"\xee" * (60 - 14 - len(d))])
    ctx.check(q == bytes(d), "quote is not exactly the datagram (%d bytes "
              "quoted, %d sent before the padding)" % (len(q), len(d)))


@wcase("eth", "eth_padding (TCP)", "3 data bytes on a connection, frame padded to 60 bytes with 0xee",
       "only the 3 bytes are echoed (the padding is not data)",
       {"tcp_passive_opens": 2, "tcp_drop_csum": 0})
def eth_padding_tcp(ctx):
    c = cs.established(ctx)
    raw_data_echo(ctx, c, b"abc",
                  edit=lambda d: bytes(d) + b"\xee" * (60 - 14 - len(d)))
    s = c.wait(lambda s: len(s.payload) > 0, QUIET)
    ctx.check(s is None, "padding echoed as data: %r" % s)
    cs.alive_check(c)


@wcase("arp", "arp_bad_op", "ARP request for tern's address with opcode 9",
       "no reply", {"arp_drop_format": 1})
def arp_bad_op(ctx):
    start = ctx.mark()
    a = bytearray(bytes(tcpinj.ARP(op=1, hwsrc=ctx.wire.my_mac,
                                   psrc=ctx.my_ip, pdst=ctx.target_ip)))
    a[6:8] = b"\x00\x09"
    ctx.send_frame(a, etype=0x0806, dst=b"\xff" * 6)
    ctx.silent(start)


@wcase("arp", "arp_claims_our_address", "ARP request from another MAC claiming tern's own address",
       "no reply; tern keeps talking to the real peer", {"arp_drop_addr_conflict": 1})
def arp_claims_our_address(ctx):
    start = ctx.mark()
    thief = "02:06:06:06:06:06"
    ctx.send_frame(bytes(tcpinj.ARP(op=1, hwsrc=thief, psrc=ctx.target_ip,
                                    pdst=ctx.target_ip)),
                   etype=0x0806, dst=b"\xff" * 6)
    ctx.silent(start)


@wcase("ip", "ip_short", "19 bytes of IPv4 header", "no answer",
       {"ip_drop_short": 1, "udp_in": 0})
def ip_short(ctx):
    drop_udp(ctx, lambda d: d[:19])


@wcase("ip", "ip_frame_shorter_than_total", "total length 1 byte past the frame",
       "no answer", {"ip_drop_total_len": 1, "udp_in": 0})
def ip_frame_shorter_than_total(ctx):
    drop_udp(ctx, lambda d: d[:-1])


@wcase("ip", "ip_version6", "version field 6 (checksum fixed)", "no answer",
       {"ip_drop_version": 1, "udp_in": 0})
def ip_version6(ctx):
    drop_udp(ctx, lambda d: fix_ip(setb(d, 0, b"\x65")))


@wcase("ip", "ip_ihl4", "IHL 4 (16-byte header)", "no answer",
       {"ip_drop_hdr_len": 1, "udp_in": 0})
def ip_ihl4(ctx):
    drop_udp(ctx, lambda d: setb(d, 0, b"\x44"))


@wcase("ip", "ip_ihl_past_frame", "IHL 15 in a 40-byte datagram", "no answer",
       {"ip_drop_hdr_len": 1, "udp_in": 0})
def ip_ihl_past_frame(ctx):
    drop_udp(ctx, lambda d: setb(d, 0, b"\x4f")[:40])


@wcase("ip", "ip_total_below_ihl", "total length 12, below the header",
       "no answer", {"ip_drop_total_len": 1, "udp_in": 0})
def ip_total_below_ihl(ctx):
    drop_udp(ctx, lambda d: fix_ip(setb(d, 2, b"\x00\x0c")))


@wcase("ip", "ip_bad_csum", "header checksum off by one bit", "no answer",
       {"ip_drop_csum": 1, "udp_in": 0})
def ip_bad_csum(ctx):
    drop_udp(ctx, lambda d: setb(d, 10, bytes([d[10], d[11] ^ 1])))


@wcase("ip", "ip_opt_len0", "IP option with length 0", "no answer",
       {"ip_drop_options": 1, "udp_in": 0})
def ip_opt_len0(ctx):
    drop_udp(ctx, lambda d: with_ip_options(d, b"\x44\x00\x05\x00"))


@wcase("ip", "ip_opt_past_header", "IP option running past the header",
       "no answer", {"ip_drop_options": 1, "udp_in": 0})
def ip_opt_past_header(ctx):
    drop_udp(ctx, lambda d: with_ip_options(d, b"\x07\x0c\x04\x00"))


@wcase("ip", "ip_opt_lsrr", "loose source route option", "no answer",
       {"ip_drop_options": 1, "udp_in": 0})
def ip_opt_lsrr(ctx):
    drop_udp(ctx, lambda d: with_ip_options(d, b"\x83\x07\x04\x0a\x00\x00\x01\x00"))


@wcase("ip", "ip_opt_nops_ok", "NOP NOP NOP EOL options, UDP to a closed port",
       "accepted: port unreachable quoting the header with its options",
       {"udp_drop_no_port": 1, "icmp_unreach_out": 1})
def ip_opt_nops_ok(ctx):
    d = with_ip_options(ctx.udp(), b"\x01\x01\x01\x00")
    q = port_unreachable(ctx, d)
    ctx.check(q[:24] == bytes(d[:24]), "quote is not the datagram's header "
              "with its options")


@wcase("ip", "ip_land", "SYN to the echo port from tern's own address (LAND)",
       "no answer, no connection", {"ip_drop_bad_src": 1, "tcp_passive_opens": 1})
def ip_land(ctx):
    start = ctx.mark()
    ctx.send_frame(ctx.syn(src=ctx.target_ip))
    ctx.silent(start)


@wcase("ip", "ip_src_broadcast", "source 255.255.255.255", "no answer",
       {"ip_drop_bad_src": 1, "udp_in": 0})
def ip_src_broadcast(ctx):
    drop_udp(ctx, lambda d: fix_ip(setb(d, 12, b"\xff" * 4)))


@wcase("ip", "ip_src_loopback", "source 127.0.0.1", "no answer",
       {"ip_drop_bad_src": 1, "udp_in": 0})
def ip_src_loopback(ctx):
    drop_udp(ctx, lambda d: fix_ip(setb(d, 12, bytes([127, 0, 0, 1]))))


@wcase("ip", "ip_dst_other", "destination 198.18.10.99 (another host) to tern's MAC",
       "no answer", {"ip_drop_not_ours": 1, "udp_in": 0})
def ip_dst_other(ctx):
    drop_udp(ctx, lambda d: fix_ip(setb(d, 16, bytes([198, 18, 10, 99]))))


# -- fragments (UDP to a closed port: reassembled, it would draw an ICMP) --

BIG = bytes((i * 13) & 0xFF for i in range(1000))


def drop_frags(ctx, d, pieces):
    """Send fragments (offset, length, more) of datagram d, all with one
    fresh IP id; nothing may answer."""
    start = ctx.mark()
    ident = ctx.next_id()
    for off, length, mf in pieces:
        ctx.send_frame(fragment(d, off, length, mf, ident))
    ctx.silent(start)


@wcase("frag", "frag_ping_of_death", "fragment at offset 65520 + 100 bytes (past 65535)",
       "no answer", {"ip_drop_frag_bad": 1, "udp_in": 0})
def frag_ping_of_death(ctx):
    drop_frags(ctx, ctx.udp(payload=BIG), [(0, 504, True), (65520, 100, False)])


@wcase("frag", "frag_teardrop", "second fragment overlapping the first (teardrop)",
       "no answer: datagram dropped", {"ip_drop_frag_overlap": 1, "udp_in": 0,
                                        "ip_reasm_ok": 0})
def frag_teardrop(ctx):
    drop_frags(ctx, ctx.udp(payload=BIG), [(0, 504, True), (256, 400, False)])


@wcase("frag", "frag_tiny_tcp_first", "SYN split: 8-byte first fragment, rest at offset 8",
       "no answer (RFC 1858), no connection",
       {"ip_drop_frag_bad": 2, "ip_reasm_ok": 0, "tcp_passive_opens": 1})
def frag_tiny_tcp_first(ctx):
    drop_frags(ctx, ctx.syn(), [(0, 8, True), (8, 12, False)])


@wcase("frag", "frag_duplicates_out_of_order", "last fragment twice, then the first",
       "reassembled once: one port unreachable quoting the whole datagram",
       {"ip_drop_frag_dup": 1, "ip_reasm_ok": 1, "udp_drop_no_port": 1,
        "icmp_unreach_out": 1})
def frag_duplicates_out_of_order(ctx):
    d = ctx.udp(payload=BIG)
    last = fragment(d, 504, len(d) - 20 - 504, False, ctx.ip_id)
    q = port_unreachable(ctx, d, [last, last,
                                  fragment(d, 0, 504, True, ctx.ip_id)])
    ctx.check(struct.unpack("!H", q[2:4])[0] == len(d),
              "quoted total length %d, expected the reassembled %d" %
              (struct.unpack("!H", q[2:4])[0], len(d)))
    ctx.check(q[12:20] == bytes(d[12:20]) and q[9] == 17,
              "quoted addresses/protocol differ")
    ctx.check(q[20:20 + 64] == bytes(d[20:20 + 64]),
              "quoted UDP bytes are not the reassembled datagram's")


@wcase("ip", "frag_ping_3000", "echo request of 3,000 bytes in three fragments (ping -s 3000)",
       "echo reply in fragments of at most the MTU that join to the request's data",
       {"ip_reasm_ok": 1, "ip_frag_out": 1, "ip_frag_created": 3,
        "icmp_echo_reply_out": 1, "icmp_echo_reply_drop": 0,
        "ip_drop_frag_out": 0})
def frag_ping_3000(ctx):
    data = bytes((i * 7 + 1) & 0xFF for i in range(3000))
    d = ctx.ip(ICMP(type=8, id=0x4245, seq=1) / Raw(data))
    n = len(d) - 20
    start = ctx.mark()
    for off in range(0, n, 1480):
        ctx.send_frame(fragment(d, off, min(1480, n - off), off + 1480 < n,
                                ctx.ip_id))
    got, ident = {}, None

    def reply_piece(f):
        if icmp_of(f) is None or f[12:14] != b"\x08\x00":
            return False
        fo = struct.unpack("!H", f[20:22])[0]
        return fo & 0x3FFF != 0 and (fo & 0x1FFF) * 8 not in got
    while sum(len(v[0]) for v in got.values()) < n:
        f = ctx.wait_frame(reply_piece, 3.0, start)
        if f is None:
            raise CaseFail("reply fragments cover %d of %d bytes" %
                           (sum(len(v[0]) for v in got.values()), n))
        tot, i, fo = struct.unpack("!HHH", f[16:22])
        ctx.check(tot <= 1500, "fragment of %d bytes exceeds the MTU" % tot)
        ctx.check(fo & 0x4000 == 0, "fragment with DF set")
        ctx.check(tcpinj._csum(f[14:34]) == 0xFFFF, "bad fragment header sum")
        ctx.check(ident is None or i == ident, "fragments of one reply with "
                  "IDs %r and %d" % (ident, i))
        ident = i
        got[(fo & 0x1FFF) * 8] = (f[34:14 + tot], fo & 0x2000)
    m = b"".join(got[o][0] for o in sorted(got))
    ctx.check(len(m) == n and not got[max(got)][1], "reply of %d bytes, "
              "expected %d" % (len(m), n))
    ctx.check(m[0] == 0 and tcpinj._csum(m) == 0xFFFF, "not a good echo reply")
    ctx.check(m[8:] == data, "reply data differ from the request's")


# -- ICMP --

@wcase("icmp", "icmp_bad_csum", "echo request with a bad checksum",
       "no reply", {"icmp_drop_csum": 1})
def icmp_bad_csum(ctx):
    start = ctx.mark()
    e = ctx.ip(ICMP(type=8, id=0x4242, seq=1) / Raw(b"abcd"))
    e[22] ^= 0xFF
    ctx.send_frame(e)
    ctx.silent(start)


@wcase("icmp", "icmp_too_short", "ICMP message of 4 bytes", "no answer",
       {"icmp_drop_short": 1})
def icmp_too_short(ctx):
    start = ctx.mark()
    e = ctx.ip(ICMP(type=8, id=0x4244, seq=1))
    ctx.send_frame(fix_ip(setb(e, 2, b"\x00\x18"))[:24])
    ctx.silent(start)


@wcase("icmp", "icmp_echo_broadcast", "echo request to 255.255.255.255 (smurf)",
       "no reply", {"icmp_drop_type": 1})
def icmp_echo_broadcast(ctx):
    start = ctx.mark()
    ctx.send_frame(ctx.ip(ICMP(type=8, id=0x4243, seq=1) / Raw(b"smurf"),
                          dst="255.255.255.255"), dst=b"\xff" * 6)
    ctx.silent(start)


@wcase("icmp", "icmp_error_unknown_conn", "host unreachable quoting a connection tern does not have",
       "no answer; a live connection is unaffected",
       {"icmp_error_in": 1, "tcp_estab_resets": 0, "tcp_passive_opens": 2})
def icmp_error_unknown_conn(ctx):
    quote = bytes(IP(src=ctx.target_ip, dst=ctx.my_ip) /
                  TCP(sport=ECHO_PORT, dport=9999, seq=12345))[:28]
    silent_on_conn(ctx, lambda c: ctx.send_frame(
        ctx.ip(ICMP(type=3, code=1) / Raw(quote))))


# -- UDP --

@wcase("udp", "udp_closed_port", "UDP datagram to a closed port",
       "ICMP port unreachable quoting the IP header and the datagram",
       {"udp_drop_no_port": 1, "icmp_unreach_out": 1})
def udp_closed_port(ctx):
    d = ctx.udp()
    q = port_unreachable(ctx, d)
    ctx.check(q == bytes(d[:20 + 64]), "quote differs from the datagram's "
              "first %d bytes" % min(len(d), 84))


@wcase("udp", "udp_bad_csum", "UDP checksum wrong", "no answer (no port unreachable)",
       {"udp_drop_csum": 1, "icmp_unreach_out": 0})
def udp_bad_csum(ctx):
    drop_udp(ctx, lambda d: setb(d, len(d) - 1, bytes([d[-1] ^ 0x20])))


@wcase("udp", "udp_len_past_datagram", "UDP length 200 in a 38-byte datagram",
       "no answer", {"udp_drop_len": 1, "icmp_unreach_out": 0})
def udp_len_past_datagram(ctx):
    drop_udp(ctx, lambda d: setb(d, 24, b"\x00\xc8"))


@wcase("udp", "udp_len_below_8", "UDP length 4", "no answer",
       {"udp_drop_len": 1, "icmp_unreach_out": 0})
def udp_len_below_8(ctx):
    drop_udp(ctx, lambda d: setb(d, 24, b"\x00\x04"))


# -- TCP headers (a SYN to the listening echo port: a SYN-ACK if accepted) --

def drop_syn(ctx, edit):
    start = ctx.mark()
    ctx.send_frame(edit(ctx.syn()))
    ctx.silent(start)




@wcase("tcp", "tcp_short", "TCP segment of 10 bytes", "no answer",
       dict(TCP_NONE, tcp_drop_short=1))
def tcp_short(ctx):
    drop_syn(ctx, lambda d: fix_ip(setb(d, 2, b"\x00\x1e"))[:30])


@wcase("tcp", "tcp_doff_below_5", "data offset 4", "no answer",
       dict(TCP_NONE, tcp_drop_hdr_len=1))
def tcp_doff_below_5(ctx):
    drop_syn(ctx, lambda d: fix_l4(setb(d, 32, b"\x40")))


@wcase("tcp", "tcp_doff_past_segment", "data offset 15 in a 20-byte segment",
       "no answer", dict(TCP_NONE, tcp_drop_hdr_len=1))
def tcp_doff_past_segment(ctx):
    drop_syn(ctx, lambda d: fix_l4(setb(d, 32, b"\xf0")))


@wcase("tcp", "tcp_bad_csum", "SYN with a bad checksum", "no SYN-ACK or RST",
       dict(TCP_NONE, tcp_drop_csum=1))
def tcp_bad_csum(ctx):
    drop_syn(ctx, lambda d: setb(d, 26, bytes([d[26] ^ 0x10])))


@wcase("tcp", "tcp_syn_fin", "SYN+FIN", "no answer",
       dict(TCP_NONE, tcp_drop_flags=1))
def tcp_syn_fin(ctx):
    drop_syn(ctx, lambda d: fix_l4(setb(d, 33, b"\x03")))


@wcase("tcp", "tcp_syn_rst", "SYN+RST", "no answer",
       dict(TCP_NONE, tcp_drop_flags=1))
def tcp_syn_rst(ctx):
    drop_syn(ctx, lambda d: fix_l4(setb(d, 33, b"\x06")))


@wcase("tcp", "tcp_all_flags", "every flag set (Christmas tree)", "no answer",
       dict(TCP_NONE, tcp_drop_flags=1))
def tcp_all_flags(ctx):
    drop_syn(ctx, lambda d: fix_l4(setb(d, 33, b"\x3f")))


@wcase("tcp", "tcp_dst_port0", "SYN to port 0", "no RST",
       dict(TCP_NONE, tcp_drop_port0=1, tcp_rst_out=0))
def tcp_dst_port0(ctx):
    drop_syn(ctx, lambda d: fix_l4(setb(d, 22, b"\x00\x00")))


@wcase("tcp", "tcp_src_port0", "SYN from port 0", "no SYN-ACK or RST",
       dict(TCP_NONE, tcp_drop_port0=1, tcp_rst_out=0))
def tcp_src_port0(ctx):
    drop_syn(ctx, lambda d: fix_l4(setb(d, 20, b"\x00\x00")))


@wcase("tcp", "tcp_opt_len0", "SYN with an option of length 0", "no SYN-ACK",
       dict(TCP_NONE, tcp_drop_options=1))
def tcp_opt_len0(ctx):
    drop_syn(ctx, lambda d: with_tcp_options(d, b"\x02\x00\x05\xb4"))


@wcase("tcp", "tcp_opt_len1", "SYN with an option of length 1", "no SYN-ACK",
       dict(TCP_NONE, tcp_drop_options=1))
def tcp_opt_len1(ctx):
    drop_syn(ctx, lambda d: with_tcp_options(d, b"\x01\x01\x08\x01"))


@wcase("tcp", "tcp_opt_past_header", "SYN with a window scale option running past the header",
       "no SYN-ACK", dict(TCP_NONE, tcp_drop_options=1))
def tcp_opt_past_header(ctx):
    drop_syn(ctx, lambda d: with_tcp_options(d, b"\x01\x01\x03\x09"))


@wcase("tcp", "tcp_mss_wrong_len", "SYN with an MSS option of length 3",
       "no SYN-ACK", dict(TCP_NONE, tcp_drop_options=1))
def tcp_mss_wrong_len(ctx):
    drop_syn(ctx, lambda d: with_tcp_options(d, b"\x02\x03\x05\x01"))


@wcase("tcp", "tcp_unknown_option", "SYN with unknown option kind 99 (length 6)",
       "skipped by its length: SYN-ACK", {"tcp_passive_opens": 2,
                                          "tcp_drop_options": 0})
def tcp_unknown_option(ctx):
    c = Conn(ctx, ECHO_PORT)
    d = ctx.ip(TCP(sport=c.sport, dport=ECHO_PORT, seq=c.isn, flags="S",
                   window=65535))
    ctx.send_frame(with_tcp_options(d, b"\x63\x06\x01\x02\x03\x04\x01\x00"))
    c.snd_nxt = sadd(c.isn, 1)
    sa = c.expect_synack(1.0)
    c.learn_syn(sa)
    c.ack_now()
    cs.alive_check(c)


@wcase("tcp", "tcp_wscale_15", "SYN with window scale 15, then window field 1",
       "shift clamped to 14 (RFC 7323 2.3): at most 16384 bytes in flight",
       {"tcp_passive_opens": 2})
def tcp_wscale_15(ctx):
    c = Conn(ctx, ECHO_PORT, wscale=15, win=4)
    c.connect()
    ctx.check(c.peer_wscale is not None, "no window scale in the SYN-ACK")
    # Grow the congestion window well past 32 KB (window field 4 = 64 KB
    # with shift 14) so that only the peer window limits the flight below.
    for i in range(4):
        c.echo_roundtrip(cs.pattern(16000, i))
    # Window field 1: 16384 bytes with the clamped shift, 32768 without.
    c.win = 1
    c.ack_now()
    data = cs.pattern(30000, 7)
    # At once: sent one by one, on a busy machine, scapy's pace could let
    # tern's RTO fire on its first echoed bytes, and the flight would be
    # limited by the collapsed congestion window, not by ours.
    c.send_data(data, burst=True)
    # Everything tern sends before we acknowledge anything: new data only
    # (retransmissions do not extend it), until none comes for 2 s (long
    # enough that a loaded machine's slow scapy does not end it early).
    top = c.rcv_nxt
    while True:
        s = c.wait(lambda s: s.rst or (len(s.payload) > 0 and
                                       tcpinj.slt(top, s.end)), 2.0)
        if s is None:
            break
        ctx.check(not s.rst, "RST: %r" % s)
        ctx.check(s.seq == top, "gap in the flight at %d" % top)
        top = s.end
    flight = tcpinj.sdiff(top, c.rcv_nxt)
    ctx.note("flight", flight)
    ctx.check(flight <= 16384, "%d bytes sent into a 16384-byte window: the "
              "shift 15 was not clamped to 14" % flight)
    ctx.check(flight > 16384 - 1460, "only %d bytes in flight: the window "
              "(16384) did not limit the sender, the case proves nothing"
              % flight)
    c.rcv_nxt = top
    c.win = 4
    c.ack_now()
    got, _ = c.recv_data(len(data) - flight, 3.0)
    ctx.check(got == data[flight:], "echo differs after the window opened")
    cs.alive_check(c, 5)


# -- TCP on an established connection --

@wcase("tcp", "tcp_null_flags", "data segment with no flags on a connection",
       "dropped: no echo, no RST; connection kept",
       {"tcp_drop_flags": 1, "tcp_rst_out": 0, "tcp_passive_opens": 2})
def tcp_null_flags(ctx):
    silent_on_conn(ctx, lambda c: c.send("", payload=b"null", advance=False))


def from_conformance(name, fns, sends, asserts, counters):
    """A wire case made of conformance cases (tests/conformance/cases.py):
    their on-the-wire assertions, plus tern's counters at exit."""
    def run(ctx):
        for fn in fns:
            getattr(cs, fn)(ctx)
    run.__name__ = name
    wcase("tcp", name, sends, "%s (conformance %s)" % (asserts, ", ".join(fns)),
          counters)(run)


# (name, conformance cases, input, required on the wire, counters at exit)
for args in [
    ("tcp_rst_out_of_window", ["rst_out_of_window"],
     "RST 2^30 beyond RCV.NXT", "silently dropped, connection kept",
     {"tcp_drop_out_of_window": 1, "tcp_estab_resets": 0,
      "tcp_challenge_acks": 0}),
    ("tcp_rst_in_window_not_exact", ["rst_in_window_challenge"],
     "RST at RCV.NXT+100",
     "challenge ACK <SEQ=SND.NXT><ACK=RCV.NXT>, connection kept",
     {"tcp_challenge_acks": 1, "tcp_estab_resets": 0}),
    ("tcp_rst_exact", ["rst_established_exact"], "RST at exactly RCV.NXT",
     "no answer; connection gone: a later segment draws RST <SEQ=SEG.ACK>",
     {"tcp_estab_resets": 1, "tcp_challenge_acks": 0}),
    ("tcp_syn_in_established", ["syn_in_established"],
     "SYN at RCV.NXT+10 on a connection",
     "challenge ACK acking RCV.NXT, connection kept",
     {"tcp_challenge_acks": 1, "tcp_estab_resets": 0}),
    ("tcp_ack_of_unsent_data", ["ack_unsent_data"],
     "data acknowledging 100000 bytes never sent",
     "ACK of RCV.NXT, data not delivered, connection kept",
     {"tcp_drop_bad_ack": 1}),
    ("tcp_paws_old_timestamp", ["paws_old_tsval"], "data with a TSval 100 s old",
     "ACK of RCV.NXT, data dropped; the fresh copy is echoed",
     {"tcp_drop_paws": 1}),
    ("tcp_closed_port_rst_numbers",
     ["closed_port_syn", "closed_port_ack", "closed_port_rst"],
     "SYN, ACK+data, then RST and RST+ACK to a closed port",
     "RST+ACK <SEQ=0><ACK=SEG.SEQ+1>; RST <SEQ=SEG.ACK>; RSTs not answered",
     {"tcp_drop_no_conn": 4, "tcp_rst_out": 2}),
    ("tcp_ack_to_listener", ["listen_ack"],
     "ACK to the listening port, no connection",
     "RST <SEQ=SEG.ACK>, nothing created",
     {"tcp_syn_cookies_bad": 1, "tcp_rst_out": 1, "tcp_passive_opens": 1}),
]:
    from_conformance(*args)


@wcase("tcp", "tcp_overlap_different_bytes", "8 bytes, then 8 different bytes overlapping the last 4",
       "first copy wins: echo is AAAAAAAABBBB", {"tcp_passive_opens": 2})
def tcp_overlap_different_bytes(ctx):
    c = cs.established(ctx)
    seq = c.snd_nxt
    c.send("PA", payload=b"AAAAAAAA")
    c.send("PA", payload=b"BBBBBBBB", seq=sadd(seq, 4), advance=False)
    c.snd_nxt = sadd(seq, 12)
    got, _ = c.recv_data(12, 2.0)
    ctx.check(got == b"AAAAAAAABBBB", "echoed %r" % got)


@wcase("tcp", "tcp_urgent_beyond_data", "URG with urgent pointer 5000 in 4 bytes",
       "data echoed in line, connection kept", {"tcp_passive_opens": 2})
def tcp_urgent_beyond_data(ctx):
    c = cs.established(ctx)
    raw_data_echo(ctx, c, b"urg!", flags="PAU", urgptr=5000)
    cs.alive_check(c)


@wcase("tcp", "tcp_reserved_bits", "data segment with the reserved bits set",
       "bits ignored, data echoed", {"tcp_passive_opens": 2})
def tcp_reserved_bits(ctx):
    raw_data_echo(ctx, cs.established(ctx), b"rsvd",
                  edit=lambda d: fix_l4(setb(d, 32, bytes([d[32] | 0x0E]))))


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def run_case(c, target, wire, ctx, verbose):
    t0 = time.monotonic()
    status, msg = "PASS", ""
    try:
        ctx.begin(target.start(wire))
        c.fn(ctx)
        if not target.alive():
            raise CaseFail("tern-echo exited during the case")
        healthy(ctx)
        if ctx.bad_csum:
            raise CaseFail("segment(s) with a bad TCP checksum: %r"
                           % ctx.bad_csum[:3])
    except CaseFail as e:
        status, msg = "FAIL", str(e)
    except (conf.Interrupted, KeyboardInterrupt):
        raise
    except Exception as e:
        status, msg = "FAIL", "error: %s: %s" % (type(e).__name__, e)
        if verbose:
            traceback.print_exc()
    rc, ctrs = target.stop()
    if status == "PASS":
        if rc != 0 or ctrs is None:
            status, msg = "FAIL", "tern-echo ended with status %s%s" % (
                rc, "" if ctrs is not None else " and no counters")
        else:
            want = dict(c.counters)
            # echo replies: exactly the barrier pings (and the case's own
            # good requests), never a bad request
            want["icmp_echo_reply_out"] = ctx.pings + want.get(
                "icmp_echo_reply_out", 0)
            bad = ["%s=%d (expected %d)" % (k, ctrs.get(k, 0), v)
                   for k, v in sorted(want.items()) if ctrs.get(k, 0) != v]
            if bad:
                status, msg = "FAIL", "counters: " + ", ".join(bad)
    return status, msg, time.monotonic() - t0


def print_table(cases, res):
    w = max(len(c.name) for c in cases)
    print()
    print("%-3s %-5s %-*s %-28s %s" % ("#", "layer", w, "case", "mirrors",
                                       "result"))
    for i, c in enumerate(cases, 1):
        st, msg, dt = res[c.name]
        print("%-3d %-5s %-*s %-28s %s %5.2fs%s" % (
            i, c.layer, w, c.name, c.mirrors, st, dt,
            ("  " + msg) if msg else ""))


def list_cases(cases):
    for c in cases:
        print("%-5s %-30s %-30s %s" % (c.layer, c.name, c.mirrors, c.asserts))
    print("%d cases" % len(cases))
    return 0


def write_markdown(path, cases):
    with open(path, "w") as f:
        f.write("| layer | wire case | mirrors (mem) | input | required on the wire | counters at exit |\n")
        f.write("|---|---|---|---|---|---|\n")
        for c in cases:
            ctr = ", ".join("%s %d" % kv for kv in sorted(c.counters.items()))
            f.write("| %s | %s | %s | %s | %s | %s |\n" % (
                c.layer, c.name, c.mirrors, c.sends, c.asserts, ctr))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--driver", default="afpacket")
    ap.add_argument("-k", action="append", default=[])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--markdown")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    cases = [c for c in CASES if not a.k or any(k in c.name for k in a.k)]
    if a.markdown:
        write_markdown(a.markdown, cases)
    if a.list or a.markdown:
        return list_cases(cases)
    if os.geteuid() != 0:
        print("SKIP: the wire bad-input suite needs root (network namespaces, "
              "raw sockets)")
        return 77
    import_suite()
    conf.remove_stale(STALE)
    topo = conf.Topology(str(os.getpid()), prefix="biw")
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, conf._on_signal)
    res = {}
    t_start = time.monotonic()
    wire = None
    try:
        inj = topo.add_ns("inj")
        quiet_injector(inj)
        target = make_target_class()(topo, inj, a.bin, a.driver)
        print("== tern-echo --driver %s on %s (%s:%d), injector %s on %s"
              % (a.driver, target.ns, target.ip, ECHO_PORT, target.my_ip,
                 target.inj_if), flush=True)
        wire = tcpinj.Wire(inj, target.inj_if, target.my_mac, target.my_ip,
                           [target.ip], record_all=True)
        ctx = make_ctx_class()(target, wire)
        for c in cases:
            st, msg, dt = run_case(c, target, wire, ctx, a.v)
            res[c.name] = (st, msg, dt)
            print("%-4s %-30s %5.2fs%s" % (st, c.name, dt,
                                          ("  " + msg) if msg else ""),
                  flush=True)
            if a.v and ctx.notes:
                print("       %s" % json.dumps(ctx.notes))
            with wire.cv:
                del wire.frames[:]     # indexes restart with every case
                del wire.segs[:]
    except conf.Interrupted as e:
        print("interrupted (%s): cleaning up" % e, flush=True)
        return 130
    except (RuntimeError, OSError) as e:
        print("ERROR: setting up the namespaces: %s" % e, flush=True)
        return 1
    finally:
        if wire is not None:
            wire.close()
        topo.teardown()
    print_table(cases, res)
    n = {"PASS": 0, "FAIL": 0}
    for st, _, _ in res.values():
        n[st] += 1
    print()
    print("total time %.1fs" % (time.monotonic() - t_start))
    print("%d passed, %d failed" % (n["PASS"], n["FAIL"]))
    return 1 if n["FAIL"] or len(res) != len(cases) else 0


def quiet_injector(ns):
    """The injector's veth has no address, so its kernel has nothing to
    answer with; this nftables rule also drops any RST or ICMP error its
    kernel would originate (frames the suite sends on its packet socket do
    not pass the output hook)."""
    rules = ("table inet biw_quiet {\n"
             " chain out { type filter hook output priority 0; policy accept;\n"
             "  tcp flags & rst == rst drop\n"
             "  icmp type destination-unreachable drop\n }\n}\n")
    r = subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"],
                       input=rules, text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("nft: %s" % r.stderr.strip())


if __name__ == "__main__":
    sys.exit(main())
