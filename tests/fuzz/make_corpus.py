#!/usr/bin/env python3
"""Write the seed corpus for the fuzz harnesses: well-formed frames of every
kind the stack parses (ARP, ICMP echo, UDP, TCP SYN/ACK/data/FIN/RST with
options), addressed to the fuzzing instance (198.18.0.2, 02:00:00:00:00:02).
Standard library only."""
import os
import struct
import sys

US_MAC = bytes([2, 0, 0, 0, 0, 2])
PEER_MAC = bytes([2, 0, 0, 0, 0, 1])
US = bytes([198, 18, 0, 2])
PEER = bytes([198, 18, 0, 1])
# The established connection's initial sequence number (FZ_ISS in
# fuzz_env.h, which checks it): seeds for that connection ack ISS + 1.
ISS = 0x8043E63E


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def eth(payload, etype=0x0800):
    return US_MAC + PEER_MAC + struct.pack("!H", etype) + payload


def ip(proto, payload):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0x4000,
                    64, proto, 0, PEER, US)
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def l4(proto, seg):
    pseudo = PEER + US + struct.pack("!BBH", 0, proto, len(seg))
    c = csum(pseudo + seg)
    off = 16 if proto == 6 else 6
    return seg[:off] + struct.pack("!H", c) + seg[off + 2:]


def tcp(flags, seq=1000, ack=0, opts=b"", data=b"", sport=40000, dport=80):
    while len(opts) % 4:
        opts += b"\x01"
    hl = (20 + len(opts)) // 4
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, hl << 4, flags,
                      65535, 0, 0) + opts + data
    return eth(ip(6, l4(6, seg)))


US6 = bytes.fromhex("20010db8000000000000000000000002")
PEER6 = bytes.fromhex("20010db8000000000000000000000001")
ROUTER6 = bytes.fromhex("fe800000000000000000000000000011")
ALL_NODES = bytes.fromhex("ff020000000000000000000000000001")


def ip6(nh, payload, src=PEER6, dst=US6, hl=64):
    return (struct.pack("!IHBB", 0x60000000, len(payload), nh, hl) + src +
            dst + payload)


def icmp6(msg, src=PEER6, dst=US6, hl=64, ext=b"", nh=58):
    pseudo = src + dst + struct.pack("!I3xB", len(msg), 58)
    c = csum(pseudo + msg)
    m = msg[:2] + struct.pack("!H", c) + msg[4:]
    return eth(ip6(nh, ext + m, src, dst, hl), 0x86DD)


def ip6_seeds():
    ping = struct.pack("!BBHHH", 128, 0, 0, 7, 1) + bytes(range(64))
    big = struct.pack("!BBHHH", 128, 0, 0, 7, 2) + bytes(1500)
    sll = struct.pack("!BB", 1, 1) + PEER_MAC
    ns = struct.pack("!BBHI", 135, 0, 0, 0) + US6 + sll
    na = struct.pack("!BBHI", 136, 0, 0, 0x60000000) + PEER6 + b"\x02\x01" + PEER_MAC
    ra = (struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, 1800, 0, 0) +
          struct.pack("!BB", 1, 1) + PEER_MAC +
          struct.pack("!BBBBIII", 3, 4, 64, 0xC0, 0xFFFFFFFF, 0xFFFFFFFF, 0) +
          bytes.fromhex("20010db8000200000000000000000000"))

    def frag(off, more, data, ident=5):
        fh = struct.pack("!BBHI", 58, 0, off | more, ident)
        return eth(ip6(44, fh + data), 0x86DD)

    whole = icmp6(big)[14 + 40:]
    ext = bytes([60, 0, 1, 4, 0, 0, 0, 0, 58, 0, 0x1e, 2, 0, 0, 1, 0])
    return {
        "ping": [icmp6(ns), icmp6(ping)],
        "nd": [icmp6(ns), icmp6(na), icmp6(ping)],
        "ra": [icmp6(ra, ROUTER6, ALL_NODES, 255)],
        "frags": [frag(0, 1, whole[:1232]), frag(1232, 0, whole[1232:])],
        "ext": [icmp6(ping, ext=ext, nh=0)],
    }


def main(out):
    os.makedirs(out, exist_ok=True)
    frames = {
        "arp_request": eth(struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1,
                                       PEER_MAC, PEER, b"\0" * 6, US), 0x0806),
        "ping": eth(ip(1, (lambda m: m[:2] + struct.pack("!H", csum(m)) + m[4:])(
            struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"abcdefgh"))),
        "udp": eth(ip(17, l4(17, struct.pack("!HHHH", 5000, 53, 12, 0) + b"quer"))),
        "tcp_syn_opts": tcp(0x02, opts=b"\x02\x04\x05\xb4\x04\x02\x08\x0a" +
                            b"\0\0\0\1\0\0\0\0\x01\x03\x03\x07", sport=41000),
        # TCP Fast Open: a cookie request with data, and a (wrong) cookie
        "tcp_syn_tfo_req": tcp(0x02, opts=b"\x02\x04\x05\xb4\x22\x02\x01\x01",
                               data=b"early", sport=41001),
        "tcp_syn_tfo_cookie": tcp(0x02, opts=b"\x02\x04\x05\xb4\x22\x0a" +
                                  bytes(range(8)) + b"\x01\x01",
                                  data=b"early", sport=41002),
        "tcp_ack": tcp(0x10, seq=1001, ack=ISS + 1),
        "tcp_data": tcp(0x18, seq=1001, ack=ISS + 1, data=b"Echo this please"),
        # 'B': the app answers with a batch of its own buffers (fuzz_env.c)
        "tcp_data_batch": tcp(0x18, seq=1001, ack=ISS + 1, data=b"B\x03atch of three"),
        "tcp_sack": tcp(0x10, seq=1001, ack=ISS + 1,
                        opts=b"\x01\x01\x05\x0a\0\0\0\x10\0\0\0\x20"),
        "tcp_fin": tcp(0x11, seq=1001, ack=ISS + 1),
        "tcp_rst": tcp(0x04, seq=1001),
    }
    options = {
        "syn_all": b"\x01" + b"\x02\x04\x05\xb4\x04\x02\x08\x0a\0\0\0\1\0\0\0\0\x01\x03\x03\x07",
        "est_ts": b"\x00" + b"\x01\x01\x08\x0a\0\0\0\5\0\0\0\6",
        "est_sack": b"\x00" + b"\x01\x01\x05\x12" + bytes(16),
        "bad_len": b"\x01" + b"\x02\x00\x05\xb4",
        "tfo_req": b"\x01" + b"\x22\x02\x01\x01",
        "tfo_cookie": b"\x01" + b"\x22\x0a" + bytes(range(8)) + b"\x01\x01",
        "tfo_exp": b"\x01" + b"\xfe\x0c\xf9\x89" + bytes(range(8)),
    }
    # the IPv6 harness: [gap][len16][frame] records of IPv6 packets
    for name, recs in ip6_seeds().items():
        with open(os.path.join(out, "ip6_" + name), "wb") as fh:
            for r in recs:
                fh.write(struct.pack("!BH", 1, len(r)) + r)
    for name, o in options.items():
        with open(os.path.join(out, "opts_" + name), "wb") as fh:
            fh.write(o)
    for name, f in frames.items():
        with open(os.path.join(out, "frame_" + name), "wb") as fh:
            fh.write(f)
        # the sequence harness: [step][len16][frame] records
        with open(os.path.join(out, "seq_" + name), "wb") as fh:
            fh.write(struct.pack("!BH", 1, len(f)) + f)
            fh.write(struct.pack("!BH", 30, len(f)) + f)
    # the key-value request harness: [segment size][requests]
    resp = {
        "set_get": b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
                   b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
        "inline": b"PING\r\nSET a 10 EX 5\r\nINCR a\r\nTTL a\r\nMGET a b\r\n",
        "mixed": b"*5\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n"
                 b"$1\r\n2\r\n*3\r\n$6\r\nEXPIRE\r\n$1\r\na\r\n$1\r\n0\r\n"
                 b"*1\r\n$4\r\nINFO\r\n*2\r\n$3\r\nDEL\r\n$1\r\nb\r\n",
        "set_opts": b"*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n"
                    b"$3\r\n100\r\n$2\r\nNX\r\n*1\r\n$6\r\nDBSIZE\r\n",
    }
    for name, r in resp.items():
        for piece in (0, 1, 7):
            with open(os.path.join(out, "resp_%s_%d" % (name, piece)),
                      "wb") as fh:
                fh.write(bytes([piece]) + r)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "corpus")
