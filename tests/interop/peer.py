"""The Linux side of the interop tests: small kernel-socket peers, run inside
the kernel-side namespace (ip netns exec NS_K python3 peer.py ...). Every
command prints one JSON object on stdout and exits 0, or prints a reason on
stderr and exits 1. HOST and ADDR are IPv4 or IPv6 addresses (ping: IPv4).
Standard library only.

  peer.py send HOST PORT BYTES [SEED]   send BYTES of seeded pseudo-random
        data, half-close, wait for the peer's FIN; {"bytes", "sha256"}
  peer.py recv ADDR PORT                listen, print {"listening": PORT}
        first, accept one stream, hash it to EOF; {"bytes", "sha256",
        "head"} (head: the first 64 bytes, hex)
  peer.py echo-loop HOST PORT N         N times: connect, send 32 bytes,
        read them back, close (the client closes first)
  peer.py http-loop HOST PORT N [--same-port]   N times: connect, GET with
        "Connection: close", read to EOF (the server closes first), close;
        --same-port binds one source port for every connection
  peer.py ping HOST COUNT               ICMP echo over a raw socket (root),
        payloads of different sizes; {"sent", "replies", "intact"}
"""
import hashlib
import json
import os
import random
import select
import socket
import struct
import sys
import time

# Longer than a TCP stall under loss can last (RTO and persist backoff on a
# starved machine): the tests' own bounds (30 s clean, 90 s with loss)
# decide when a transfer is too slow, with tern's counters in the message.
TIMEOUT = 80.0


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def fail(msg):
    sys.stderr.write("peer.py: %s\n" % msg)
    sys.exit(1)


def family(host):
    """AF_INET6 for an IPv6 address (the commands take either)."""
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def connect(host, port, src_port=None):
    """Connect with retries (a port just closed may still be in use)."""
    end = time.time() + 10
    while True:
        s = socket.socket(family(host), socket.SOCK_STREAM)
        s.settimeout(TIMEOUT)
        try:
            if src_port:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("::" if ":" in host else "0.0.0.0", src_port))
            s.connect((host, port))
            return s
        except OSError as e:
            s.close()
            if time.time() > end:
                fail("connect %s:%d: %s" % (host, port, e))
            time.sleep(0.01)


def cmd_send(host, port, nbytes, seed=1):
    rnd = random.Random(seed)
    h = hashlib.sha256()
    s = connect(host, int(port))
    sent, n = 0, int(nbytes)
    while sent < n:
        chunk = rnd.randbytes(min(1 << 20, n - sent))
        s.sendall(chunk)
        h.update(chunk)
        sent += len(chunk)
    s.shutdown(socket.SHUT_WR)
    # The receiver closes after the whole stream: its FIN means it has all.
    while s.recv(65536):
        pass
    s.close()
    out({"bytes": sent, "sha256": h.hexdigest()})


def cmd_recv(addr, port):
    ls = socket.socket(family(addr), socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port)))
    ls.listen(4)
    out({"listening": int(port)})
    ls.settimeout(TIMEOUT)
    c, _ = ls.accept()
    c.settimeout(TIMEOUT)
    h = hashlib.sha256()
    n = 0
    head = b""
    while True:
        d = c.recv(1 << 20)
        if not d:
            break
        if len(head) < 64:
            head += d[:64 - len(head)]
        h.update(d)
        n += len(d)
    c.close()
    ls.close()
    out({"bytes": n, "sha256": h.hexdigest(), "head": head.hex()})


def read_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            fail("connection closed after %d of %d bytes" % (len(b), n))
        b += d
    return b


def cmd_echo_loop(host, port, count):
    for i in range(int(count)):
        s = connect(host, int(port))
        msg = b"%08d" % i + b"x" * 24
        s.sendall(msg)
        got = read_exact(s, len(msg))
        if got != msg:
            fail("connection %d: echo %r != %r" % (i, got, msg))
        s.close()
    out({"connections": int(count)})


def cmd_http_loop(host, port, count, *flags):
    same = "--same-port" in flags
    src = None
    if same:
        # A free port to use for every connection.
        t = socket.socket()
        t.bind(("0.0.0.0", 0))
        src = t.getsockname()[1]
        t.close()
    req = ("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
           % host).encode()
    for i in range(int(count)):
        s = connect(host, int(port), src)
        s.sendall(req)
        resp = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            resp += d
        s.close()
        if not resp.startswith(b"HTTP/1.1 200 "):
            fail("connection %d: %r" % (i, resp[:80]))
    out({"connections": int(count), "src_port": src})


def icmp_csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def cmd_ping(host, count):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xFFFF
    sizes = [0, 1, 56, 57, 512, 1000, 1472]
    sent = replies = intact = 0
    for seq in range(int(count)):
        payload = os.urandom(sizes[seq % len(sizes)])
        hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
        pkt = hdr[:2] + struct.pack("!H", icmp_csum(hdr + payload)) + \
            hdr[4:] + payload
        s.sendto(pkt, (host, 0))
        sent += 1
        end = time.time() + 2
        while time.time() < end:
            r, _, _ = select.select([s], [], [], max(0, end - time.time()))
            if not r:
                break
            d, a = s.recvfrom(65535)
            ihl = (d[0] & 0xF) * 4
            icmp = d[ihl:]
            if a[0] != host or len(icmp) < 8 or icmp[0] != 0:
                continue
            typ, code, ck, rid, rseq = struct.unpack("!BBHHH", icmp[:8])
            if rid != ident or rseq != seq:
                continue
            replies += 1
            if icmp[8:] == payload and icmp_csum(icmp) == 0:
                intact += 1
            break
    out({"sent": sent, "replies": replies, "intact": intact})


def main():
    if len(sys.argv) < 2:
        fail("usage: see the module docstring")
    cmds = {"send": cmd_send, "recv": cmd_recv, "echo-loop": cmd_echo_loop,
            "http-loop": cmd_http_loop, "ping": cmd_ping}
    f = cmds.get(sys.argv[1])
    if not f:
        fail("unknown command %r" % sys.argv[1])
    try:
        f(*sys.argv[2:])
    except (OSError, ValueError, TypeError) as e:
        fail("%s: %s" % (sys.argv[1], e))


if __name__ == "__main__":
    main()
