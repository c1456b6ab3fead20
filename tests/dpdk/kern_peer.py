#!/usr/bin/env python3
"""kern_peer.py - the Linux kernel's side of the net_tap tests.

  kern_peer.py udp HOST PORT N          send N numbered datagrams (5..1400
                                        bytes) to a tern UDP echo, expect
                                        each back intact
  kern_peer.py tcp-server HOST PORT [READY_FILE]
                                        TCP echo server (threads) until killed;
                                        touches READY_FILE once listening
  kern_peer.py tcp-client HOST PORT ROUNDS SIZE
                                        request/response rounds to a tern
                                        TCP echo, every byte checked

Exit 0 on success, 1 on failure; one "kern: ..." line with the figures.
"""
import socket
import sys
import threading
import time


def pattern(seq, n):
    return bytes((seq * 31 + i * 7 + (i >> 8)) & 0xFF for i in range(n))


def udp(host, port, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    ok = bad = 0
    rtts = []
    for seq in range(n):
        size = 5 + (seq * 97) % 1396
        msg = seq.to_bytes(4, "big") + pattern(seq, size)[4:]
        for _attempt in range(3):
            t0 = time.monotonic()
            s.sendto(msg, (host, port))
            try:
                data, _ = s.recvfrom(2048)
            except socket.timeout:
                continue
            rtts.append(time.monotonic() - t0)
            if data == msg:
                ok += 1
            else:
                bad += 1
            break
    rtts.sort()
    med = rtts[len(rtts) // 2] * 1e6 if rtts else 0
    print(f"kern: udp sent={n} echoed_ok={ok} bad={bad} median_rtt_us={med:.0f}")
    return 0 if ok == n and bad == 0 else 1


def tcp_server(host, port, ready=None):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, port))
    srv.listen(16)
    if ready:
        open(ready, "w").close()

    def serve(c):
        with c:
            while True:
                d = c.recv(65536)
                if not d:
                    return
                c.sendall(d)

    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def tcp_client(host, port, rounds, size):
    c = socket.create_connection((host, port), timeout=5)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    bad = 0
    t0 = time.monotonic()
    for r in range(rounds):
        msg = pattern(r, size)
        c.sendall(msg)
        got = b""
        while len(got) < size:
            d = c.recv(size - len(got))
            if not d:
                break
            got += d
        if got != msg:
            bad += 1
    el = time.monotonic() - t0
    c.close()
    print(f"kern: tcp rounds={rounds} size={size} bad={bad} "
          f"mean_rtt_us={el / rounds * 1e6:.0f}")
    return 0 if bad == 0 else 1


def main(a):
    if a[0] == "udp":
        return udp(a[1], int(a[2]), int(a[3]))
    if a[0] == "tcp-server":
        return tcp_server(a[1], int(a[2]), a[3] if len(a) > 3 else None)
    if a[0] == "tcp-client":
        return tcp_client(a[1], int(a[2]), int(a[3]), int(a[4]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
