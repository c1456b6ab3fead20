"""tcpinj - the injector side of the tern TCP conformance suite.

The injector owns one end of a veth pair in its own network namespace.  That
interface has NO IP address, so the injector's kernel has no socket, no route
and no ARP entry for the test traffic: it can neither answer our crafted
segments with RSTs nor answer ARP.  Everything on the wire is done here, in
user space, through one raw AF_PACKET socket per interface:

  - a receive thread records every TCP segment the target sends to our
    address (with its arrival time and a checksum check) and answers ARP
    requests for our address itself;
  - packets are built with scapy and sent as whole Ethernet frames.

Cases talk to the target through Conn objects (one TCP connection as seen
from the injector: our sequence space, the target's, options negotiated) and
wait for segments with bounded waits; no fixed sleep is ever an assertion.
"""
import ctypes
import os
import random
import socket
import struct
import threading
import time

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import (IPv6, ICMPv6ND_NA, ICMPv6ND_NS,
                                ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr,
                                in6_getnsma, in6_getnsmac)
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
SO_TIMESTAMPNS = 35     # the kernel's receive time of each frame (timespec)

_libc = ctypes.CDLL(None, use_errno=True)


class netns:
    """Run a block with the calling thread inside a named network namespace
    (sockets made inside stay in it after the block)."""

    def __init__(self, name):
        self.name = name
        self.orig = None

    def __enter__(self):
        self.orig = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        fd = os.open("/var/run/netns/" + self.name, os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, "setns(%s): %s" % (self.name, os.strerror(err)))
        finally:
            os.close(fd)
        return self

    def __exit__(self, *exc):
        _libc.setns(self.orig, CLONE_NEWNET)
        os.close(self.orig)


# ---------------------------------------------------------------------------
# Sequence arithmetic (mod 2^32)
# ---------------------------------------------------------------------------

def sadd(a, b):
    return (a + b) & 0xFFFFFFFF


def sdiff(a, b):
    """a - b as a signed 32-bit distance."""
    d = (a - b) & 0xFFFFFFFF
    return d - (1 << 32) if d & 0x80000000 else d


def slt(a, b):
    return sdiff(a, b) < 0


def sle(a, b):
    return sdiff(a, b) <= 0


# ---------------------------------------------------------------------------
# Failures
# ---------------------------------------------------------------------------

class CaseFail(Exception):
    pass


class CaseSkip(Exception):
    pass


# ---------------------------------------------------------------------------
# Received segments
# ---------------------------------------------------------------------------

def _csum(data):
    if len(data) & 1:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


FLAG_NAMES = "FSRPAUEC"


class Seg:
    """One TCP segment the target sent, parsed from the wire."""

    __slots__ = ("t", "src", "dst", "sport", "dport", "seq", "ack", "flagbits",
                 "win", "payload", "opts", "optorder", "optlen", "csum_ok",
                 "idx")

    @property
    def flags(self):
        return "".join(c for i, c in enumerate(FLAG_NAMES) if self.flagbits & (1 << i))

    def has(self, f):
        return all(self.flagbits & (1 << FLAG_NAMES.index(c)) for c in f)

    @property
    def syn(self):
        return bool(self.flagbits & 0x02)

    @property
    def fin(self):
        return bool(self.flagbits & 0x01)

    @property
    def rst(self):
        return bool(self.flagbits & 0x04)

    @property
    def is_ack(self):
        return bool(self.flagbits & 0x10)

    @property
    def seglen(self):
        """Sequence space the segment occupies (data + SYN + FIN)."""
        return len(self.payload) + (1 if self.syn else 0) + (1 if self.fin else 0)

    @property
    def end(self):
        return sadd(self.seq, self.seglen)

    def sack_blocks(self):
        v = self.opts.get("SAck")
        if not v:
            return []
        return [(v[i], v[i + 1]) for i in range(0, len(v) - 1, 2)]

    def __repr__(self):
        o = ",".join("%s=%s" % (k, v) if v is not True else k
                     for k, v in self.opts.items())
        return "<%s %d>%d seq=%d ack=%d win=%d len=%d%s>" % (
            self.flags or ".", self.sport, self.dport, self.seq,
            self.ack if self.is_ack else 0, self.win, len(self.payload),
            (" " + o) if o else "")


def parse_tcp_options(raw):
    opts, order = {}, []
    i = 0
    while i < len(raw):
        kind = raw[i]
        if kind == 0:
            order.append("EOL")
            break
        if kind == 1:
            order.append("NOP")
            i += 1
            continue
        if i + 1 >= len(raw):
            order.append("BAD")
            break
        ln = raw[i + 1]
        if ln < 2 or i + ln > len(raw):
            order.append("BAD")
            break
        body = raw[i + 2:i + ln]
        if kind == 2 and ln == 4:
            opts["MSS"] = struct.unpack("!H", body)[0]
            order.append("MSS")
        elif kind == 3 and ln == 3:
            opts["WScale"] = body[0]
            order.append("WS")
        elif kind == 4 and ln == 2:
            opts["SAckOK"] = True
            order.append("SACKOK")
        elif kind == 5 and (ln - 2) % 8 == 0:
            vals = struct.unpack("!%dI" % ((ln - 2) // 4), body)
            opts["SAck"] = vals
            order.append("SACK")
        elif kind == 8 and ln == 10:
            opts["Timestamp"] = struct.unpack("!II", body)
            order.append("TS")
        else:
            opts["opt%d" % kind] = body
            order.append("opt%d" % kind)
        i += ln
    return opts, order


def seg_of(tcp, src, dst, pseudo):
    """The Seg of TCP header+data `tcp` between src and dst (text), its
    checksum checked over `pseudo` (the pseudo-header); None if malformed."""
    off = (tcp[12] >> 4) * 4
    if off < 20 or off > len(tcp):
        return None
    s = Seg()
    s.src, s.dst = src, dst
    s.sport, s.dport, s.seq, s.ack = struct.unpack("!HHII", tcp[:12])
    s.flagbits = tcp[13]
    s.win = struct.unpack("!H", tcp[14:16])[0]
    s.payload = bytes(tcp[off:])
    s.optlen = off - 20
    s.opts, s.optorder = parse_tcp_options(bytes(tcp[20:off]))
    s.csum_ok = _csum(bytes(pseudo) + bytes(tcp)) == 0xFFFF
    return s


def parse_frame6(frame):
    """Ethernet/IPv6/TCP (no extension headers) -> Seg, or None."""
    if len(frame) < 14 + 40 + 20 or frame[20] != 6 or frame[14] >> 4 != 6:
        return None
    ip = frame[14:]
    plen = struct.unpack("!H", ip[4:6])[0]
    if 40 + plen > len(ip) or plen < 20:
        return None
    tcp = ip[40:40 + plen]
    return seg_of(tcp, socket.inet_ntop(socket.AF_INET6, ip[8:24]),
                  socket.inet_ntop(socket.AF_INET6, ip[24:40]),
                  ip[8:40] + struct.pack("!IxxxB", len(tcp), 6))


def parse_frame(frame):
    """Ethernet/IPv4/TCP or Ethernet/IPv6/TCP -> Seg, or None for anything
    else."""
    if frame[12:14] == b"\x86\xdd":
        return parse_frame6(frame)
    if len(frame) < 14 + 20 + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[0] >> 4 != 4 or ip[9] != 6 or ihl < 20:
        return None
    tot = struct.unpack("!H", ip[2:4])[0]
    if tot > len(ip) or tot < ihl + 20:
        return None
    ip = ip[:tot]
    tcp = ip[ihl:]
    return seg_of(tcp, socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20]),
                  ip[12:20] + struct.pack("!BBH", 0, 6, len(tcp)))


# ---------------------------------------------------------------------------
# The wire: one raw socket on the injector's interface
# ---------------------------------------------------------------------------

def arrival(anc):
    """A frame's kernel receive time (SO_TIMESTAMPNS, wall clock) on the
    time.monotonic() scale the cases use; now if the kernel gave none."""
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and \
                len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            back = time.time_ns() - (sec * 1000000000 + nsec)
            return time.monotonic() - max(0, back) / 1e9
    return time.monotonic()


class Wire:
    """record_all: also keep every frame that arrives from another station,
    whatever its type or destination, as (time, bytes) in self.frames (for
    checks that nothing at all was sent)."""

    def __init__(self, ns, ifname, my_mac, my_ip, peer_ips, log=None,
                 record_all=False, my_ip6=None):
        """my_ip6: our IPv6 address (we answer Neighbor Solicitations for
        it); IPv6 peers are listed in peer_ips with the IPv4 ones."""
        self.ns, self.ifname = ns, ifname
        self.my_mac, self.my_ip = my_mac.lower(), my_ip
        self.my_ip6 = my_ip6
        self.peer_ips = set(peer_ips)
        self.peer_mac = {}       # ip -> mac, learned from ARP and frames
        self.log = log or (lambda *a: None)
        with netns(ns):
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                      socket.htons(ETH_P_ALL))
            self.sock.bind((ifname, 0))
        try:     # our own frames back are skipped anyway: not even read
            self.sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass
        # Arrival times from the kernel: the receive thread may get the
        # interpreter lock milliseconds after a frame came (more on a busy
        # machine), and the cases compare arrivals with our sends.
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.settimeout(0.1)
        self.segs = []
        self.other = []          # frames from the target that are not TCP/ARP
        self.other6 = []         # (time, frame): its IPv6 frames, not TCP
        self.ns_requests = 0     # Neighbor Solicitations for my_ip6
        self.frames = [] if record_all else None
        self.cv = threading.Condition()
        self.stopping = False
        self.arp_requests = 0
        self.target_arp_requests = 0   # the target's, for any address
        self.th = threading.Thread(target=self._rx, daemon=True)
        self.th.start()

    def close(self):
        self.stopping = True
        self.th.join(1)
        self.sock.close()

    def _rx(self):
        my = bytes.fromhex(self.my_mac.replace(":", ""))
        while not self.stopping:
            try:
                frame, anc, _, addr = self.sock.recvmsg(
                    65535, socket.CMSG_SPACE(16))
            except socket.timeout:
                continue
            except OSError:
                if self.stopping:
                    return
                raise
            if addr[2] == PACKET_OUTGOING:
                continue
            now = arrival(anc)
            dst, src = frame[0:6], frame[6:12]
            if self.frames is not None and src != my:
                with self.cv:
                    self.frames.append((now, frame))
                    self.cv.notify_all()
            # Ours, broadcast, or IPv6 multicast (33:33:..., NDP).
            if src == my or (dst != my and dst != b"\xff" * 6 and
                             dst[:2] != b"\x33\x33"):
                continue
            etype = frame[12:14]
            if etype == b"\x08\x06":
                self._arp(frame)
                continue
            if etype == b"\x86\xdd" and self._ipv6(frame, now, src):
                continue
            s = parse_frame(frame)
            if s is None:
                if etype == b"\x08\x00":
                    with self.cv:
                        self.other.append((now, frame))
                continue
            if s.src not in self.peer_ips or s.dst not in (self.my_ip,
                                                          self.my_ip6):
                continue
            s.t = now
            with self.cv:
                if s.src not in self.peer_mac:
                    self.peer_mac[s.src] = ":".join("%02x" % b for b in src)
                s.idx = len(self.segs)
                self.segs.append(s)
                self.cv.notify_all()

    def _arp(self, frame):
        try:
            a = Ether(frame)[ARP]
        except Exception:
            return
        if a.op == 1 and a.psrc in self.peer_ips:
            self.target_arp_requests += 1
        if a.op == 1 and a.pdst == self.my_ip:
            self.arp_requests += 1
            rep = (Ether(src=self.my_mac, dst=a.hwsrc) /
                   ARP(op=2, hwsrc=self.my_mac, psrc=self.my_ip,
                       hwdst=a.hwsrc, pdst=a.psrc))
            self.sock.send(bytes(rep))
        if a.psrc in self.peer_ips:
            with self.cv:
                self.peer_mac[a.psrc] = a.hwsrc
                self.cv.notify_all()

    def _ipv6(self, frame, now, src):
        """An IPv6 frame that is not TCP: NDP is handled here, the rest of
        what the peers send kept in other6. True when consumed."""
        if len(frame) < 14 + 40 or frame[20] == 6:
            return False
        try:
            pkt = Ether(frame)
        except Exception:
            return True
        ip6 = pkt[IPv6]
        mac = ":".join("%02x" % b for b in src)
        if ICMPv6ND_NS in pkt and pkt[ICMPv6ND_NS].tgt == self.my_ip6:
            self.ns_requests += 1
            # A solicitation from :: (DAD) is answered to all-nodes.
            dad = ip6.src == "::"
            na = (Ether(src=self.my_mac, dst="33:33:00:00:00:01" if dad
                        else mac) /
                  IPv6(src=self.my_ip6, dst="ff02::1" if dad else ip6.src,
                       hlim=255) /
                  ICMPv6ND_NA(tgt=self.my_ip6, R=0, S=0 if dad else 1, O=1) /
                  ICMPv6NDOptDstLLAddr(lladdr=self.my_mac))
            self.sock.send(bytes(na))
        if ip6.src in self.peer_ips or ip6.src.startswith("fe80:"):
            with self.cv:
                if ICMPv6ND_NA in pkt and pkt[ICMPv6ND_NA].tgt in self.peer_ips:
                    self.peer_mac[pkt[ICMPv6ND_NA].tgt] = mac
                self.other6.append((now, frame))
                self.cv.notify_all()
        return True

    def solicit(self, ip, dst=None, src_mac=None):
        """Send a Neighbor Solicitation for ip (to its solicited-node group
        unless dst is given), with our link-layer address."""
        nsma = in6_getnsma(socket.inet_pton(socket.AF_INET6, ip))
        group = socket.inet_ntop(socket.AF_INET6, nsma)
        dst = dst or group
        emac = in6_getnsmac(nsma) if dst == group else self.peer_mac.get(ip)
        req = (Ether(src=self.my_mac, dst=emac) /
               IPv6(src=self.my_ip6, dst=dst, hlim=255) /
               ICMPv6ND_NS(tgt=ip) /
               ICMPv6NDOptSrcLLAddr(lladdr=src_mac or self.my_mac))
        self.sock.send(bytes(req))
        return time.monotonic()

    def resolve(self, ip, timeout=5.0):
        """ARP (NDP for IPv6) for a target address until it answers."""
        deadline = time.monotonic() + timeout
        with self.cv:
            self.peer_mac.pop(ip, None)
        while time.monotonic() < deadline:
            if ":" in ip:
                self.solicit(ip)
            else:
                req = (Ether(src=self.my_mac, dst="ff:ff:ff:ff:ff:ff") /
                       ARP(op=1, hwsrc=self.my_mac, psrc=self.my_ip, pdst=ip))
                self.sock.send(bytes(req))
            with self.cv:
                self.cv.wait_for(lambda: ip in self.peer_mac, 0.25)
                if ip in self.peer_mac:
                    return self.peer_mac[ip]
        return None

    def frame_ip(self, ippkt):
        """The Ethernet frame (bytes) carrying ippkt to its destination."""
        mac = self.peer_mac.get(ippkt.dst)
        if mac is None:
            mac = self.resolve(ippkt.dst, 2.0) or "ff:ff:ff:ff:ff:ff"
        return bytes(Ether(src=self.my_mac, dst=mac) / ippkt)

    def send_ip(self, ippkt):
        self.sock.send(self.frame_ip(ippkt))
        return time.monotonic()

    def mark6(self):
        with self.cv:
            return len(self.other6)

    def wait6(self, pred, timeout, start):
        """First non-TCP IPv6 packet (scapy, from Ether) at index >= start
        of other6 satisfying pred, within timeout seconds, or None."""
        return self.wait6_at(pred, timeout, start)[0]

    def wait6_at(self, pred, timeout, start):
        """wait6, and the index after the packet returned (or after the
        last one looked at)."""
        def p(entry):
            try:
                return pred(Ether(entry[1]))
            except Exception:
                return False
        deadline = time.monotonic() + timeout
        i = start
        with self.cv:
            while True:
                while i < len(self.other6):
                    e = self.other6[i]
                    i += 1
                    if p(e):
                        return Ether(e[1]), i
                left = deadline - time.monotonic()
                if left <= 0:
                    return None, i
                self.cv.wait(left)

    def mark(self):
        with self.cv:
            return len(self.segs)

    def wait(self, pred, timeout, start, frames=False):
        """First segment at index >= start satisfying pred, within timeout
        seconds, or None.  Returns (seg, next_index).  frames: search the
        (time, bytes) entries of self.frames instead (record_all)."""
        deadline = time.monotonic() + timeout
        i = start
        lst = self.frames if frames else self.segs
        with self.cv:
            while True:
                while i < len(lst):
                    s = lst[i]
                    i += 1
                    if pred(s):
                        return s, i
                left = deadline - time.monotonic()
                if left <= 0:
                    return None, i
                self.cv.wait(left)


# ---------------------------------------------------------------------------
# A connection as the injector sees it
# ---------------------------------------------------------------------------

class Conn:
    """Our end of one TCP connection with the target.

    snd_nxt: our next sequence number; rcv_nxt: the next target byte we
    expect (what we acknowledge).  Options: mss (None = no MSS option),
    wscale (None = no WScale option), sack (offer SACK-permitted), ts (offer
    timestamps)."""

    def __init__(self, env, dport, sport=None, isn=None, mss=1460, wscale=None,
                 sack=False, ts=False, win=65535, peer_ip=None):
        self.env = env
        self.wire = env.wire
        self.dport = dport
        self.sport = sport or env.new_port()
        self.isn = isn if isn is not None else random.randrange(1 << 32)
        self.snd_nxt = self.isn
        self.rcv_nxt = None
        self.irs = None
        self.mss, self.wscale, self.sack, self.ts = mss, wscale, sack, ts
        self.win = win
        self.peer_ip = peer_ip or env.target_ip
        # What the target agreed to (from its SYN or SYN-ACK).
        self.peer_mss = None
        self.peer_wscale = None
        self.peer_sack = False
        self.ts_ok = False
        self.ts_recent = 0
        self.ts_base = random.randrange(1 << 30)
        self.last_tsval = None
        self.t0 = time.monotonic()
        self.cursor = self.wire.mark()
        self.ip_id = random.randrange(1 << 16)
        env.conns.append(self)

    # -- options ------------------------------------------------------------
    def tsval(self):
        """A fresh TSval (1 ms clock); the last one sent is in last_tsval."""
        return (self.ts_base + int((time.monotonic() - self.t0) * 1000)) & 0xFFFFFFFF

    def syn_options(self, ack=False):
        o = []
        if self.mss is not None:
            o.append(("MSS", self.mss))
        if self.sack and (not ack or self.peer_sack):
            o.append(("SAckOK", b""))
        if self.ts and (not ack or self.ts_ok):
            self.last_tsval = self.tsval()
            o.append(("Timestamp", (self.last_tsval,
                                    self.ts_recent if ack else 0)))
        if self.wscale is not None and (not ack or self.peer_wscale is not None):
            o.append(("NOP", None))
            o.append(("WScale", self.wscale))
        return o

    def seg_options(self, tsval=None):
        if self.ts_ok:
            self.last_tsval = self.tsval() if tsval is None else tsval
            return [("NOP", None), ("NOP", None),
                    ("Timestamp", (self.last_tsval, self.ts_recent))]
        return []

    # -- sending ------------------------------------------------------------
    def send(self, flags, payload=b"", seq=None, ack=None, win=None,
             options=None, advance=True, tsval=None, extra_opts=None,
             urg=0, hold=None):
        """Send a segment. Defaults: seq = snd_nxt, ack = rcv_nxt (if the
        flags carry A), window = self.win, options = timestamps if
        negotiated.  advance: move snd_nxt past the segment.  urg: the
        urgent pointer field (with "U" in flags).  hold: a list to append
        the frame to instead of sending it."""
        if seq is None:
            seq = self.snd_nxt
        if ack is None:
            ack = self.rcv_nxt if (self.rcv_nxt is not None and "A" in flags) else 0
        if options is None:
            options = self.seg_options(tsval)
        if extra_opts:
            options = list(options) + list(extra_opts)
        w = self.win if win is None else win
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        if ":" in self.peer_ip:
            l3 = IPv6(src=self.env.my_ip6, dst=self.peer_ip, hlim=64)
        else:
            l3 = IP(src=self.env.my_ip, dst=self.peer_ip, id=self.ip_id,
                    flags="DF", ttl=64)
        pkt = l3 / TCP(sport=self.sport, dport=self.dport, seq=seq, ack=ack,
                       flags=flags, window=w, options=options, urgptr=urg)
        if payload:
            pkt = pkt / Raw(payload)
        if hold is None:
            t = self.wire.send_ip(pkt)
        else:
            hold.append(self.wire.frame_ip(pkt))
            t = None
        if advance and seq == self.snd_nxt:
            n = len(payload) + ("S" in flags) + ("F" in flags)
            self.snd_nxt = sadd(self.snd_nxt, n)
        return t

    def ack_now(self, **kw):
        return self.send("A", **kw)

    def rst(self, seq=None, ack=False):
        return self.send("RA" if ack else "R", seq=seq, advance=False,
                         options=[])

    # -- receiving ----------------------------------------------------------
    def mine(self, s):
        return (s.sport == self.dport and s.dport == self.sport and
                s.src == self.peer_ip)

    def _note(self, s):
        if s.opts.get("Timestamp") and self.ts_ok:
            self.ts_recent = s.opts["Timestamp"][0]
        if not s.csum_ok:
            self.env.bad_csum.append(s)

    def wait(self, pred=None, timeout=3.0, peek=False):
        """Next segment of this connection (after those already consumed)
        matching pred, or None after timeout seconds.  The segments up to
        the one returned are consumed unless peek is set."""
        def p(s):
            return self.mine(s) and (pred is None or pred(s))
        s, nxt = self.wire.wait(p, timeout, self.cursor)
        if not peek:
            self.cursor = nxt
        if s is not None:
            self._note(s)
        return s

    def expect(self, pred=None, timeout=3.0, what="a segment", peek=False):
        s = self.wait(pred, timeout, peek)
        if s is None:
            raise CaseFail("no %s within %.1fs (seen: %s)" % (
                what, timeout, self.recent()))
        return s

    def peek_all(self):
        with self.wire.cv:
            return [s for s in self.wire.segs if self.mine(s)]

    def recent(self, n=6):
        segs = self.peek_all()
        return segs[-n:] if segs else "nothing"

    def quiet(self, pred=None, duration=0.3):
        """Assert no matching segment arrives within duration seconds."""
        s = self.wait(pred, duration)
        return s

    def drain(self, quiet=0.15, limit=3.0, pred=None):
        """Collect segments until none arrived for `quiet` seconds (bounded
        by `limit`)."""
        out = []
        end = time.monotonic() + limit
        while time.monotonic() < end:
            s = self.wait(pred, min(quiet, max(0.0, end - time.monotonic())))
            if s is None:
                break
            out.append(s)
        return out

    # -- handshakes ---------------------------------------------------------
    def learn_syn(self, s):
        """Record the target's SYN or SYN-ACK."""
        self.irs = s.seq
        self.rcv_nxt = sadd(s.seq, 1)
        self.peer_mss = s.opts.get("MSS")
        self.peer_wscale = s.opts.get("WScale")
        self.peer_sack = bool(s.opts.get("SAckOK"))
        ts = s.opts.get("Timestamp")
        if ts and self.ts:
            self.ts_ok = True
            self.ts_recent = ts[0]

    def syn_window(self):
        """The window field of our SYN: never scaled (RFC 7323 2.2), and no
        more than what later segments will offer (no shrinking)."""
        if self.wscale is None:
            return min(65535, self.win)
        return min(65535, self.win << self.wscale)

    def send_syn(self):
        self.snd_nxt = self.isn
        return self.send("S", options=self.syn_options(), win=self.syn_window())

    def expect_synack(self, timeout=3.0):
        s = self.expect(lambda s: s.syn or s.rst, timeout, "SYN-ACK")
        if s.rst:
            raise CaseFail("target answered SYN with RST: %r" % s)
        if not s.has("SA"):
            raise CaseFail("expected SYN-ACK, got %r" % s)
        if s.ack != sadd(self.isn, 1):
            raise CaseFail("SYN-ACK acknowledges %d, expected ISN+1 = %d" %
                           (s.ack, sadd(self.isn, 1)))
        return s

    def connect(self, timeout=3.0, rtt=None):
        """Passive open on the target: SYN, SYN-ACK, ACK. rtt: ACK the
        SYN-ACK only rtt seconds after it came, so that the target's RTT
        estimate from the handshake (RFC 6298) is at least that: its
        retransmission timer (about 3 x rtt) and tail probe (2 x rtt or
        more) then leave the injector that long to answer its data."""
        self.send_syn()
        sa = self.expect_synack(timeout)
        self.learn_syn(sa)
        if rtt:
            time.sleep(max(0.0, sa.t + rtt - time.monotonic()))
        self.ack_now()
        return sa

    def accept_syn(self, syn):
        """Active open by the target: answer its SYN with a SYN-ACK."""
        self.dport = syn.sport
        self.peer_ip = syn.src
        self.learn_syn(syn)
        self.snd_nxt = self.isn
        self.send("SA", options=self.syn_options(ack=True),
                  win=self.syn_window())

    # -- data helpers -------------------------------------------------------
    def send_data(self, data, mss=None, flags="PA", win=None, burst=False):
        """Send data as segments of at most mss bytes. burst: build every
        frame first, then send them back to back (scapy takes a while per
        segment, longer on a busy machine)."""
        mss = mss or self.peer_mss or 536
        if self.ts_ok:
            mss -= 12
        frames = [] if burst else None
        for i in range(0, len(data), mss):
            self.send(flags, payload=data[i:i + mss], win=win, hold=frames)
        for f in frames or []:
            self.wire.sock.send(f)

    def recv_data(self, nbytes, timeout=3.0, ack=True, win=None):
        """Receive nbytes of in-order data from the target (ACKing each
        segment unless ack=False). Returns (bytes, segments)."""
        got = b""
        segs = []
        end = time.monotonic() + timeout
        while len(got) < nbytes:
            left = end - time.monotonic()
            s = self.wait(lambda s: len(s.payload) > 0 or s.fin or s.rst,
                          max(0.0, left))
            if s is None:
                raise CaseFail("received %d of %d bytes within %.1fs (last: %s)"
                               % (len(got), nbytes, timeout, self.recent()))
            if s.rst:
                raise CaseFail("RST while receiving data: %r" % s)
            segs.append(s)
            if s.seq == self.rcv_nxt and s.payload:
                got += s.payload
                self.rcv_nxt = sadd(self.rcv_nxt, len(s.payload))
            elif s.payload and slt(s.seq, self.rcv_nxt) and \
                    slt(self.rcv_nxt, s.end):
                cut = sdiff(self.rcv_nxt, s.seq)
                got += s.payload[cut:]
                self.rcv_nxt = sadd(self.rcv_nxt, len(s.payload) - cut)
            if s.fin and s.end == sadd(self.rcv_nxt, 1):
                self.rcv_nxt = sadd(self.rcv_nxt, 1)
            if ack:
                self.send("A", win=win)
            if s.fin and len(got) < nbytes:
                raise CaseFail("FIN after %d of %d bytes" % (len(got), nbytes))
        return got, segs

    def echo_roundtrip(self, data, timeout=3.0):
        """Send data to an echo service and receive it back (ACKing)."""
        self.send_data(data)
        got, _ = self.recv_data(len(data), timeout)
        if got != data:
            raise CaseFail("echo returned different bytes")
        return got
