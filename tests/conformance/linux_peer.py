#!/usr/bin/env python3
"""linux_peer.py - the Linux kernel's side of the conformance suite.

Runs inside the Linux target's network namespace, on kernel sockets, and
behaves like tern's test programs so that both targets are driven the same
way:

  server --ip IP --echo PORT [--http-ip IP --http PORT] [--ip6 IP6]
         [--http-ip6 IP6]
      echo: every byte received is sent back; when the peer closes (EOF)
      the server closes too (like `tern-echo --server`).
      http: reads one request (up to the empty line), answers
      "200 OK" with a 100-byte body and "Connection: close", and closes:
      the target closes first, as `tern-httpd --server` does for a request
      with "Connection: close".
      --ip6/--http-ip6: the same services on these IPv6 addresses too.
      Prints "ready" on stdout once listening.
  client IP PORT SIZE [--bind IP]
      Connects to IP:PORT, sends SIZE bytes, reads SIZE bytes back, closes
      and exits (like one request of `tern-echo --client`).
"""
import socket
import sys
import threading


def serve_conn(c):
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
    except OSError:
        pass
    finally:
        try:
            c.close()
        except OSError:
            pass


BODY = b"b" * 100


def serve_http(c):
    try:
        req = b""
        while b"\r\n\r\n" not in req:
            d = c.recv(4096)
            if not d:
                return
            req += d
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                  b"Connection: close\r\n\r\n" % len(BODY) + BODY)
    except OSError:
        pass
    finally:
        try:
            c.close()
        except OSError:
            pass


def listen(ip, port):
    fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((ip, port))
    ls.listen(128)
    return ls


def accept_loop(ls, fn):
    while True:
        c, _ = ls.accept()
        # urgent data inline, as tern delivers it (RFC 6093)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_OOBINLINE, 1)
        threading.Thread(target=fn, args=(c,), daemon=True).start()


def server(args):
    def arg(name, default=None):
        return args[args.index(name) + 1] if name in args else default
    loops = [(listen(arg("--ip", "0.0.0.0"), int(arg("--echo"))), serve_conn)]
    if arg("--http"):
        loops.append((listen(arg("--http-ip", "0.0.0.0"), int(arg("--http"))),
                      serve_http))
    # The same services on IPv6 addresses.
    if arg("--ip6"):
        loops.append((listen(arg("--ip6"), int(arg("--echo"))), serve_conn))
    if arg("--http-ip6") and arg("--http"):
        loops.append((listen(arg("--http-ip6"), int(arg("--http"))),
                      serve_http))
    threads = [threading.Thread(target=accept_loop, args=l, daemon=True)
               for l in loops]
    for t in threads:
        t.start()
    print("ready", flush=True)
    for t in threads:
        t.join()


def client(args):
    ip, port, size = args[0], int(args[1]), int(args[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if "--bind" in args:
        s.bind((args[args.index("--bind") + 1], 0))
    s.settimeout(60)
    try:
        s.connect((ip, port))
        s.sendall(b"q" * size)
        got = 0
        while got < size:
            d = s.recv(65536)
            if not d:
                break
            got += len(d)
    except OSError as e:
        print("client: %s" % e, file=sys.stderr)
        return 1
    finally:
        s.close()
    return 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("server", "client"):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "server":
        server(sys.argv[2:])
        return 0
    return client(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
