"""cases6.py - the IPv6 conformance cases (they join cases.CASES).

Neighbor Discovery, ICMPv6 echo (whole and fragmented), TCP over IPv6,
extension header chains the target must refuse or skip, overlapping and
atomic fragments, and Packet Too Big. The injector sends from
env.my_ip6 to env.target_ip6; a target without IPv6 (env.no_ip6 says why)
skips every case here.
"""
import random
import socket
import struct
import time

from scapy.layers.inet6 import (IPv6, ICMPv6EchoReply, ICMPv6EchoRequest,
                                ICMPv6ND_NA, ICMPv6ND_NS,
                                ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr,
                                ICMPv6PacketTooBig, ICMPv6ParamProblem,
                                IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                                IPv6ExtHdrRouting, HBHOptUnknown, PadN,
                                in6_getnsma, in6_getnsmac)
from scapy.layers.inet import TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from cases import SLOW_RTT, case, pattern
from tcpinj import CaseFail, CaseSkip, Conn, sadd

ALL_NODES = "ff02::1"


def need6(env):
    if env.no_ip6:
        raise CaseSkip(env.no_ip6)


def send6(env, l3, dst_mac=None):
    """Send an IPv6 packet (scapy, from the IPv6 layer) as one frame."""
    if dst_mac is None:
        if l3.dst.startswith("ff"):
            b = socket.inet_pton(socket.AF_INET6, l3.dst)
            dst_mac = "33:33:" + ":".join("%02x" % x for x in b[12:])
        else:
            dst_mac = env.wire.peer_mac.get(l3.dst) or \
                env.wire.resolve(l3.dst, 2.0)
            if dst_mac is None:
                raise CaseFail("%s does not answer NDP" % l3.dst)
    env.wire.sock.send(bytes(Ether(src=env.wire.my_mac, dst=dst_mac) / l3))


def icmp6_sum_ok(p):
    """The ICMPv6 checksum of a received packet without extension headers
    (RFC 4443 2.3: over the pseudo-header too)."""
    ip = bytes(p[IPv6])
    if ip[6] != 58:
        return True
    plen = struct.unpack("!H", ip[4:6])[0]
    body = ip[40:40 + plen]
    data = ip[8:40] + struct.pack("!IxxxB", len(body), 58) + body
    if len(data) & 1:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def from_target(env, p):
    return IPv6 in p and p[IPv6].src == env.target_ip6


def wait_reply(env, ident, seq, timeout=1.5, start=None):
    """The target's echo reply to (ident, seq), or None."""
    def pred(p):
        return (from_target(env, p) and ICMPv6EchoReply in p and
                p[ICMPv6EchoReply].id == ident and
                p[ICMPv6EchoReply].seq == seq)
    p = env.wire.wait6(pred, timeout, env.wire.mark6() if start is None
                       else start)
    if p is not None and not icmp6_sum_ok(p):
        raise CaseFail("echo reply with a bad ICMPv6 checksum")
    return p


def wait_icmp_error(env, cls, timeout, start):
    p = env.wire.wait6(lambda p: from_target(env, p) and cls in p, timeout,
                       start)
    if p is not None and not icmp6_sum_ok(p):
        raise CaseFail("ICMPv6 error with a bad checksum")
    return p


def echo_req(env, data=b"tern-v6", dst=None, ident=None, seq=1):
    ident = random.randrange(1, 65535) if ident is None else ident
    pkt = (IPv6(src=env.my_ip6, dst=dst or env.target_ip6, hlim=64) /
           ICMPv6EchoRequest(id=ident, seq=seq, data=data))
    return pkt, ident


def echo_ok(env, what):
    """The target still answers a plain echo (it survived `what`)."""
    pkt, ident = echo_req(env, b"still-alive", seq=9)
    start = env.wire.mark6()
    send6(env, pkt)
    if wait_reply(env, ident, 9, 1.5, start) is None:
        raise CaseFail("no echo reply after %s" % what)


def fragments(pkt, ident, size):
    """pkt (IPv6 / upper layer) cut into Fragment-header fragments whose
    fragmentable part is `size` bytes (a multiple of 8, except the last)."""
    ip = pkt[IPv6]
    nh = ip.nh
    body = bytes(ip.payload)
    out = []
    for off in range(0, len(body), size):
        part = body[off:off + size]
        more = 1 if off + size < len(body) else 0
        out.append(IPv6(src=ip.src, dst=ip.dst, hlim=ip.hlim) /
                   IPv6ExtHdrFragment(nh=nh, offset=off // 8, m=more,
                                      id=ident) / Raw(part))
    return out


def collect_reply_datagram(env, start, ident, seq, timeout=2.0):
    """The echo reply to (ident, seq), reassembled here if the target
    fragmented it: returns its data, or None."""
    deadline = time.monotonic() + timeout
    frags = {}
    while time.monotonic() < deadline:
        p, start = env.wire.wait6_at(
            lambda p: from_target(env, p) and
            (IPv6ExtHdrFragment in p or ICMPv6EchoReply in p),
            max(0.0, deadline - time.monotonic()), start)
        if p is None:
            return None
        if IPv6ExtHdrFragment not in p:
            r = p[ICMPv6EchoReply]
            if r.id == ident and r.seq == seq:
                return bytes(r.data)
            continue
        f = p[IPv6ExtHdrFragment]
        frags.setdefault(f.id, {})[f.offset * 8] = (bytes(f.payload), f.m,
                                                    f.nh)
        for fid, parts in frags.items():
            whole, at = b"", 0
            for off in sorted(parts):
                if off != at:
                    break
                whole += parts[off][0]
                at += len(parts[off][0])
                if parts[off][1] == 0:
                    if parts[0][2] != 58 or len(whole) < 8 or whole[0] != 129:
                        break
                    rid, rseq = struct.unpack("!HH", whole[4:8])
                    if rid == ident and rseq == seq:
                        return whole[8:]
                    break
    return None


# ---------------------------------------------------------------------------
# Neighbor Discovery
# ---------------------------------------------------------------------------

@case("RFC 4861 7.2.3, 7.2.4, 4.4", "IPv6: NS to the solicited-node group -> solicited NA with the target's link-layer address")
def nd6_solicit(env):
    need6(env)
    w = env.wire
    start = w.mark6()
    w.solicit(env.target_ip6)
    p = w.wait6(lambda p: from_target(env, p) and ICMPv6ND_NA in p and
                p[ICMPv6ND_NA].tgt == env.target_ip6, 2.0, start)
    if p is None:
        raise CaseFail("no Neighbor Advertisement for %s" % env.target_ip6)
    na = p[ICMPv6ND_NA]
    env.check(p[IPv6].dst == env.my_ip6, "NA sent to %s, not to the "
              "soliciting address" % p[IPv6].dst)
    env.check(p[IPv6].hlim == 255, "NA hop limit %d, not 255" % p[IPv6].hlim)
    env.check(na.S == 1, "NA without the Solicited flag")
    env.check(ICMPv6NDOptDstLLAddr in p, "NA without a Target Link-Layer "
              "Address option (RFC 4861 7.2.4: MUST for a multicast NS)")
    env.check(p[ICMPv6NDOptDstLLAddr].lladdr == p[Ether].src,
              "TLLA %s is not the sender's MAC %s"
              % (p[ICMPv6NDOptDstLLAddr].lladdr, p[Ether].src))
    env.check(icmp6_sum_ok(p), "NA with a bad ICMPv6 checksum")
    env.note("na_override", na.O)
    env.note("na_router", na.R)


@case("RFC 4861 7.1.1", "IPv6: NS with hop limit 254 (not from the link) is ignored")
def nd6_solicit_hop_limit(env):
    need6(env)
    w = env.wire
    nsma = in6_getnsma(socket.inet_pton(socket.AF_INET6, env.target_ip6))
    group = socket.inet_ntop(socket.AF_INET6, nsma)
    start = w.mark6()
    req = (Ether(src=w.my_mac, dst=in6_getnsmac(nsma)) /
           IPv6(src=env.my_ip6, dst=group, hlim=254) /
           ICMPv6ND_NS(tgt=env.target_ip6) /
           ICMPv6NDOptSrcLLAddr(lladdr=w.my_mac))
    w.sock.send(bytes(req))
    p = w.wait6(lambda p: from_target(env, p) and ICMPv6ND_NA in p, 0.7,
                start)
    env.check(p is None, "answered an NS with hop limit 254")


# ---------------------------------------------------------------------------
# Echo
# ---------------------------------------------------------------------------

@case("RFC 4443 4.2", "IPv6: echo request -> reply with the same identifier, sequence and data")
def echo6(env):
    need6(env)
    data = pattern(56, 3)
    pkt, ident = echo_req(env, data, seq=5)
    start = env.wire.mark6()
    send6(env, pkt)
    p = wait_reply(env, ident, 5, 1.5, start)
    if p is None:
        raise CaseFail("no echo reply")
    env.check(bytes(p[ICMPv6EchoReply].data) == data, "reply data differs")
    env.check(p[IPv6].dst == env.my_ip6, "reply to %s" % p[IPv6].dst)
    env.note("reply_hlim", p[IPv6].hlim)


@case("RFC 8200 4.5; RFC 4443 4.2", "IPv6: a 3000-byte echo in 1280-byte fragments is reassembled and answered in full")
def echo6_fragmented(env):
    need6(env)
    data = pattern(3000, 5)
    pkt, ident = echo_req(env, data, seq=6)
    start = env.wire.mark6()
    for f in fragments(pkt, random.randrange(1 << 32), 1232):
        send6(env, f)
    got = collect_reply_datagram(env, start, ident, 6)
    if got is None:
        raise CaseFail("no (complete) echo reply to a fragmented request")
    env.check(got == data, "reply data differs (%d bytes)" % len(got))


@case("RFC 6946 4; RFC 8200 4.5", "IPv6: atomic fragment (offset 0, M=0) answered alone, beside a pending datagram of the same Identification")
def atomic_fragment(env):
    need6(env)
    fid = random.randrange(1 << 32)
    big, big_id = echo_req(env, pattern(2000, 7), seq=1)
    parts = fragments(big, fid, 1232)
    start = env.wire.mark6()
    send6(env, parts[0])                  # a datagram left pending
    small, small_id = echo_req(env, b"atomic", seq=2)
    atom = (IPv6(src=env.my_ip6, dst=env.target_ip6) /
            IPv6ExtHdrFragment(nh=58, offset=0, m=0, id=fid) /
            Raw(bytes(small[IPv6].payload)))
    send6(env, atom)
    if wait_reply(env, small_id, 2, 1.5, start) is None:
        raise CaseFail("no echo reply to an atomic fragment")
    start = env.wire.mark6()
    send6(env, parts[1])                  # completes the pending one
    got = collect_reply_datagram(env, start, big_id, 1)
    env.check(got == bytes(pattern(2000, 7)), "the pending datagram was "
              "not completed after the atomic fragment")


@case("RFC 5722 4", "IPv6: overlapping fragments -> the datagram is dropped silently; a clean one still works")
def frag_overlap(env):
    need6(env)
    data = pattern(2000, 9)
    pkt, ident = echo_req(env, data, seq=3)
    body = bytes(pkt[IPv6].payload)
    fid = random.randrange(1 << 32)
    first = (IPv6(src=env.my_ip6, dst=env.target_ip6) /
             IPv6ExtHdrFragment(nh=58, offset=0, m=1, id=fid) /
             Raw(body[:1232]))
    # The second starts 16 bytes inside the first.
    second = (IPv6(src=env.my_ip6, dst=env.target_ip6) /
              IPv6ExtHdrFragment(nh=58, offset=(1232 - 16) // 8, m=0,
                                 id=fid) / Raw(body[1232 - 16:]))
    start = env.wire.mark6()
    send6(env, first)
    send6(env, second)
    p = env.wire.wait6(lambda p: from_target(env, p) and
                       (ICMPv6EchoReply in p or IPv6ExtHdrFragment in p),
                       1.0, start)
    env.check(p is None, "answered a datagram built from overlapping "
              "fragments")
    echo_ok(env, "overlapping fragments")


# ---------------------------------------------------------------------------
# Extension header chains
# ---------------------------------------------------------------------------

def param_problem(env, pkt, what, timeout=1.0):
    start = env.wire.mark6()
    send6(env, pkt)
    return wait_icmp_error(env, ICMPv6ParamProblem, timeout, start), start


@case("RFC 5095 3; RFC 8200 4.4", "IPv6: type 0 routing header, segments left 1 -> Parameter Problem code 0 at the type; left 0 -> ignored")
def ext_routing_type0(env):
    need6(env)
    pkt, ident = echo_req(env, seq=4)
    rh = (IPv6(src=env.my_ip6, dst=env.target_ip6) /
          IPv6ExtHdrRouting(type=0, segleft=1, addresses=[env.my_ip6]) /
          pkt[IPv6].payload)
    p, start = param_problem(env, rh, "type 0 routing")
    if p is None:
        raise CaseFail("no Parameter Problem for a type 0 routing header "
                       "with segments left")
    pp = p[ICMPv6ParamProblem]
    env.check(pp.code == 0, "Parameter Problem code %d, expected 0" % pp.code)
    env.check(pp.ptr == 42, "pointer %d, expected 42 (the routing type)"
              % pp.ptr)
    env.check(wait_reply(env, ident, 4, 0.3, start) is None,
              "the packet was processed too (echo reply)")
    pkt, ident = echo_req(env, seq=5)
    rh0 = (IPv6(src=env.my_ip6, dst=env.target_ip6) /
           IPv6ExtHdrRouting(type=0, segleft=0, addresses=[env.my_ip6]) /
           pkt[IPv6].payload)
    start = env.wire.mark6()
    send6(env, rh0)
    env.check(wait_reply(env, ident, 5, 1.5, start) is not None,
              "no echo reply through a routing header with segments left 0")


@case("RFC 8200 4, 4.5", "IPv6: unknown next header -> Parameter Problem code 1 pointing at that Next Header field")
def ext_unknown_next_header(env):
    need6(env)
    bare = IPv6(src=env.my_ip6, dst=env.target_ip6, nh=150) / Raw(b"\0" * 16)
    p, _ = param_problem(env, bare, "unknown next header")
    if p is None:
        raise CaseFail("no Parameter Problem for next header 150")
    pp = p[ICMPv6ParamProblem]
    env.check(pp.code == 1, "code %d, expected 1" % pp.code)
    env.check(pp.ptr == 6, "pointer %d, expected 6" % pp.ptr)
    inner = (IPv6(src=env.my_ip6, dst=env.target_ip6) /
             IPv6ExtHdrDestOpt(nh=150, options=[PadN(optdata=b"\0" * 4)]) /
             Raw(b"\0" * 16))
    p, _ = param_problem(env, inner, "unknown next header after options")
    if p is None:
        raise CaseFail("no Parameter Problem for next header 150 after a "
                       "Destination Options header")
    env.check(p[ICMPv6ParamProblem].ptr == 40, "pointer %d, expected 40"
              % p[ICMPv6ParamProblem].ptr)


@case("RFC 8504 5.3; RFC 8200 4.1", "IPv6: 40 Destination Options headers before an echo: answered or dropped, never a crash")
def ext_too_many(env):
    need6(env)
    pkt, ident = echo_req(env, seq=6)
    chain = IPv6(src=env.my_ip6, dst=env.target_ip6)
    for _ in range(40):
        chain = chain / IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\0" * 4)])
    chain = chain / pkt[IPv6].payload
    start = env.wire.mark6()
    send6(env, chain)
    p = env.wire.wait6(lambda p: from_target(env, p) and
                       (ICMPv6EchoReply in p or ICMPv6ParamProblem in p),
                       1.0, start)
    env.note("long_chain", "dropped" if p is None else
             "reply" if ICMPv6EchoReply in p else
             "param-problem %d" % p[ICMPv6ParamProblem].code)
    echo_ok(env, "a 40-header chain")


def unknown_opt(env, otype, dst, seq):
    """An echo request to dst carrying Destination Option `otype` (unknown
    to every stack); returns (packet, ident)."""
    pkt, ident = echo_req(env, dst=dst, seq=seq)
    return (IPv6(src=env.my_ip6, dst=dst) /
            IPv6ExtHdrDestOpt(options=[HBHOptUnknown(otype=otype,
                                                     optdata=b"\0\0\0\0")]) /
            pkt[IPv6].payload), ident


def from_target_host(env, p):
    """Sent by the target from any of its addresses (answers to a
    multicast destination come from the address it selects)."""
    return IPv6 in p and p[Ether].src == env.wire.peer_mac.get(env.target_ip6)


def opt_outcome(env, otype, dst, seq):
    """'reply', 'silent', or 'param-problem C@P' for one option type."""
    pkt, ident = unknown_opt(env, otype, dst, seq)
    start = env.wire.mark6()
    send6(env, pkt)
    # An error counts only if it quotes this request (each tern program on
    # the interface answers a multicast on its own).
    p = env.wire.wait6(lambda p: from_target_host(env, p) and
                       ((ICMPv6EchoReply in p and
                         p[ICMPv6EchoReply].id == ident) or
                        (ICMPv6ParamProblem in p and
                         ICMPv6EchoRequest in p and
                         p[ICMPv6EchoRequest].id == ident and
                         p[ICMPv6EchoRequest].seq == seq)), 0.8, start)
    if p is None:
        return "silent"
    if ICMPv6EchoReply in p:
        return "reply"
    pp = p[ICMPv6ParamProblem]
    return "param-problem %d@%d" % (pp.code, pp.ptr)


@case("RFC 8200 4.2", "IPv6: unknown option actions to a unicast address: 00 skip, 01 drop, 10 and 11 Parameter Problem code 2 at the option")
def ext_option_actions(env):
    need6(env)
    want = {0x1E: "reply", 0x5E: "silent", 0x9E: "param-problem 2@42",
            0xDE: "param-problem 2@42"}
    for i, (otype, expect) in enumerate(sorted(want.items())):
        got = opt_outcome(env, otype, env.target_ip6, 20 + i)
        env.check(got == expect, "option type 0x%02X: %s, expected %s"
                  % (otype, got, expect))


@case("RFC 8200 4.2", "IPv6: unknown option actions to ff02::1: 10 -> Parameter Problem, 11 -> silent drop")
def ext_option_actions_multicast(env):
    need6(env)
    got = opt_outcome(env, 0x9E, ALL_NODES, 30)
    env.check(got == "param-problem 2@42", "option type 0x9E to ff02::1: "
              "%s, expected a Parameter Problem" % got)
    got = opt_outcome(env, 0xDE, ALL_NODES, 31)
    env.check(got == "silent", "option type 0xDE to ff02::1: %s, expected "
              "silence (no ICMP to a multicast destination)" % got)


# ---------------------------------------------------------------------------
# TCP over IPv6
# ---------------------------------------------------------------------------

def conn6(env, **kw):
    need6(env)
    return Conn(env, env.echo_port, peer_ip=env.target_ip6, **kw)


@case("RFC 9293 3.5, 3.6; RFC 8200 8.1", "IPv6: TCP handshake (MSS <= 1440), echo, and close: FINs both ways ACKed")
def tcp6_handshake_close(env):
    c = conn6(env, mss=1440)
    sa = c.connect()
    env.check("MSS" in sa.opts, "SYN-ACK without MSS")
    env.check(sa.opts["MSS"] <= 1440, "SYN-ACK MSS %d exceeds MTU-60"
              % sa.opts["MSS"])
    env.note("synack_mss6", sa.opts["MSS"])
    data = pattern(3000, 11)
    c.echo_roundtrip(data)
    c.send("FA")
    s = c.expect(lambda s: s.fin or s.rst, 2.0, "the target's FIN")
    env.check(not s.rst, "RST instead of FIN: %r" % s)
    env.check(s.ack == c.snd_nxt, "FIN acks %d, expected %d (our FIN)"
              % (s.ack, c.snd_nxt))
    c.rcv_nxt = sadd(s.seq, len(s.payload) + 1)
    c.ack_now()
    env.check(c.quiet(lambda s: s.fin or s.rst or s.payload, 0.5) is None,
              "the target sent more after the close")


def too_big(env, c, mtu, nbytes, salt, resend):
    """Send nbytes to the echo service, answer the first echoed segment
    with Packet Too Big `mtu` (quoting it, as a router would), wait for
    that segment to be sent again in smaller pieces when `resend`, then
    take all of the echo. Returns (the first segment, IPv6 packet sizes of
    the data segments that arrived after the message)."""
    data = pattern(nbytes, salt)
    c.send_data(data, mss=1440)
    first = c.expect(lambda s: len(s.payload) > 0, 2.0, "echoed data",
                     peek=True)
    quoted = (IPv6(src=env.target_ip6, dst=env.my_ip6) /
              TCP(sport=first.sport, dport=first.dport, seq=first.seq,
                  ack=first.ack, flags="PA", window=first.win) /
              Raw(first.payload))
    t = time.monotonic()
    send6(env, IPv6(src=env.my_ip6, dst=env.target_ip6) /
          ICMPv6PacketTooBig(mtu=mtu) / Raw(bytes(quoted)[:1232]))
    if resend:
        c.expect(lambda s: s.t >= t and s.seq == first.seq and
                 0 < len(s.payload) < len(first.payload), 3.0,
                 "the segment sent again after Packet Too Big %d" % mtu,
                 peek=True)
    got, _ = c.recv_data(nbytes, timeout=5.0)
    env.check(got == data, "echo differs after Packet Too Big %d" % mtu)
    c.drain(quiet=0.1, limit=0.5)
    return first, [40 + 20 + s.optlen + len(s.payload)
                   for s in c.peek_all() if s.t >= t and s.payload]


# Packet Too Big 1280 first: a stack that takes 1000 as 1280 keeps that
# path MTU for the address, and the next case would find it lowered.
@case("RFC 8201 4, 5", "IPv6: Packet Too Big 1280 for an unacknowledged segment -> resent in segments that fit 1280")
def ptb_lowers_segments(env):
    c = conn6(env, mss=1440)
    c.connect(rtt=SLOW_RTT)    # no RTO resending at the old size
    first, sizes = too_big(env, c, 1280, 1440, 15, True)
    env.check(40 + 20 + first.optlen + len(first.payload) > 1280,
              "the echoed segment (%d bytes of data) already fits 1280"
              % len(first.payload))
    env.check(sizes and max(sizes) <= 1280, "segments after Packet Too Big "
              "1280 are up to %s bytes" % (max(sizes) if sizes else "-"))
    # New data on the same connection fits too.
    data = pattern(4000, 16)
    c.send_data(data, mss=1440)
    got, segs = c.recv_data(len(data), timeout=5.0)
    env.check(got == data, "echo differs after Packet Too Big 1280")
    big = max(40 + 20 + s.optlen + len(s.payload) for s in segs)
    env.check(big <= 1280, "new data in %d-byte packets after Packet Too "
              "Big 1280" % big)


@case("RFC 8201 4; RFC 8200 5", "IPv6: Packet Too Big below 1280 (1000) never brings segments under the 1280 floor")
def ptb_below_minimum(env):
    c = conn6(env, mss=1440)
    c.connect()
    first, sizes = too_big(env, c, 1000, 1440, 13, False)
    # More data after the message: full-sized segments, not 1000-byte ones.
    data = pattern(4000, 14)
    c.send_data(data, mss=1440)
    got, segs = c.recv_data(len(data), timeout=5.0)
    env.check(got == data, "echo differs after Packet Too Big 1000")
    sizes += [40 + 20 + s.optlen + len(s.payload) for s in segs if s.payload]
    env.check(max(sizes) > 1000, "after Packet Too Big 1000 the largest "
              "segment is %d bytes: lowered under the 1280 floor"
              % max(sizes))
    env.note("ptb1000_largest", max(sizes))
