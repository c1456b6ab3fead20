"""Linux-side ends of the TCP Fast Open interop test (stdlib only), run in
the kernel-side namespace with net.ipv4.tcp_fastopen set there.

  tfo_peer.py client IP PORT N SIZE   N connections one after the other
                                      (IP: IPv4 or IPv6),
                                      each sending SIZE bytes with
                                      sendto(MSG_FASTOPEN) and reading
                                      them back; prints one JSON line
  tfo_peer.py server PORT [QLEN]      an echo server whose listener has
                                      TCP_FASTOPEN (queue QLEN, default
                                      16), IPv4 and IPv6; prints "ready"
                                      once listening

Every read has a timeout (the caller bounds the connect); nothing asserts
a speed."""
import json
import socket
import sys
import threading

TIMEOUT = 10.0


def payload(i, size):
    return bytes((i * 31 + k) & 0xFF for k in range(size))


def client(ip, port, n, size):
    ok = 0
    for i in range(n):
        s = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET,
                          socket.SOCK_STREAM)
        try:
            data = payload(i, size)
            # connect and send in one call: the SYN carries the data once
            # a cookie for ip is cached, else it asks for one. Blocking
            # (a socket with a timeout is non-blocking inside and gets
            # EINPROGRESS); the test bounds the whole run
            sent = s.sendto(data, socket.MSG_FASTOPEN, (ip, port))
            s.settimeout(TIMEOUT)
            if sent < size:
                s.sendall(data[sent:])
            got = b""
            while len(got) < size:
                d = s.recv(size - len(got))
                if not d:
                    break
                got += d
            ok += got == data
        except OSError as e:
            sys.stderr.write("connection %d: %s\n" % (i, e))
        finally:
            s.close()
    print(json.dumps({"conns": n, "echoed": ok}))


def serve(c):
    try:
        c.settimeout(TIMEOUT)
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
    except OSError:
        pass
    finally:
        c.close()


def server(port, qlen):
    # one dual-stack listener: IPv4 clients arrive as ::ffff:a.b.c.d
    ls = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, qlen)
    ls.bind(("::", port))
    ls.listen(64)
    print("ready", flush=True)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    if len(sys.argv) >= 6 and sys.argv[1] == "client":
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
               int(sys.argv[5]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "server":
        server(int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3
               else 16)
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
