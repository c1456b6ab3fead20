"""Linux-side clients of the churn tests (stdlib only), run inside the
kernel-side namespace. Each prints one JSON line.

  churn_peer.py close IP PORT N PAR    N HTTP/1.1 GETs with Connection:
                                       close, PAR at a time, each on a new
                                       connection; counts whole 200s
  churn_peer.py idle IP PORT N HOLD    N connections opened and held HOLD
                                       seconds without a byte, then each
                                       sends 16 bytes and must get them
                                       back; counts the echoed ones, the
                                       reset ones (a RST at connect, send
                                       or receive) and the silent ones (no
                                       answer in 60 s)
  churn_peer.py slow IP PORT N REQS WAIT
                                       N connections each send REQS
                                       pipelined keep-alive GETs, read
                                       nothing for WAIT seconds, then read
                                       until every response is in
  churn_peer.py fresh IP PORT KIND     one new connection served: an HTTP
                                       GET (KIND http) or an echo (echo)

Every socket operation has a timeout; nothing asserts a speed."""
import errno
import json
import resource
import selectors
import socket
import sys
import threading
import time

GET_CLOSE = (b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
GET_KEEP = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, n + 256)
    if hard != resource.RLIM_INFINITY and want > hard:
        want = hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def http_response_len(buf):
    """Bytes of the first whole response in buf (head and body), or 0."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return 0
    length = 0
    for line in buf[:end].split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    total = end + 4 + length
    return total if len(buf) >= total else 0


def one_get(ip, port, timeout=10.0):
    """A GET with Connection: close on a new connection: True when a whole
    200 came back and the server closed."""
    try:
        with socket.create_connection((ip, port), timeout=timeout) as s:
            s.sendall(GET_CLOSE)
            buf = b""
            while True:
                d = s.recv(65536)
                if not d:
                    break
                buf += d
            n = http_response_len(buf)
            return n > 0 and buf.startswith(b"HTTP/1.1 200") and n == len(buf)
    except OSError:
        return False


def cmd_close(ip, port, n, par):
    lock = threading.Lock()
    state = {"next": 0, "ok": 0, "failed": 0}

    def worker():
        while True:
            with lock:
                if state["next"] >= n:
                    return
                state["next"] += 1
            ok = one_get(ip, port)
            with lock:
                state["ok" if ok else "failed"] += 1

    t0 = time.time()
    ts = [threading.Thread(target=worker) for _ in range(par)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    took = time.time() - t0
    return {"ok": state["ok"], "failed": state["failed"],
            "seconds": round(took, 2)}


def connect_many(ip, port, n, timeout, failed=None):
    """n non-blocking connects; returns the connected sockets. The errno of
    each connect that failed is appended to failed (a list), if given."""
    sel = selectors.DefaultSelector()
    socks, done = [], []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((ip, port))
        sel.register(s, selectors.EVENT_WRITE)
        socks.append(s)
    end = time.time() + timeout
    pending = len(socks)
    while pending and time.time() < end:
        for key, _ in sel.select(timeout=1.0):
            s = key.fileobj
            sel.unregister(s)
            pending -= 1
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err == 0:
                done.append(s)
            else:
                if failed is not None:
                    failed.append(err)
                s.close()
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    sel.close()
    return done


RESET_ERRNOS = (errno.ECONNRESET, errno.EPIPE, errno.ECONNREFUSED)


def cmd_idle(ip, port, n, hold):
    raise_nofile(n)
    failed = []
    socks = connect_many(ip, port, n, 60, failed)
    time.sleep(hold)
    msg = b"0123456789abcdef"
    sel = selectors.DefaultSelector()
    got = {}
    reset = sum(1 for e in failed if e in RESET_ERRNOS)
    for s in socks:
        try:
            s.send(msg)
            sel.register(s, selectors.EVENT_READ)
            got[s] = b""
        except OSError as e:
            reset += e.errno in RESET_ERRNOS
    echoed = 0
    end = time.time() + 60
    while sel.get_map() and time.time() < end:
        for key, _ in sel.select(timeout=1.0):
            s = key.fileobj
            try:
                d = s.recv(64)
            except OSError as e:
                reset += e.errno in RESET_ERRNOS
                sel.unregister(s)
                continue
            got[s] += d
            if not d or len(got[s]) >= len(msg):
                sel.unregister(s)
                if got[s] == msg:
                    echoed += 1
    silent = len(sel.get_map()) + (n - len(socks) - len(failed))
    for s in socks:
        s.close()
    return {"opened": len(socks), "echoed": echoed, "reset": reset,
            "silent": silent}


def cmd_slow(ip, port, n, reqs, wait):
    raise_nofile(n)
    socks = connect_many(ip, port, n, 60)
    # Send every request now (blocking, bounded): the server's replies pile
    # up in its send queues and in our unread receive buffers.
    payload = GET_KEEP * reqs
    sent = 0
    for s in socks:
        s.setblocking(True)
        s.settimeout(60)
        try:
            s.sendall(payload)
            sent += 1
        except OSError:
            pass
    time.sleep(wait)
    sel = selectors.DefaultSelector()
    state = {}
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        state[s] = [b"", 0]
    complete = 0
    end = time.time() + 120
    last = time.time()
    while sel.get_map() and time.time() < end and time.time() - last < 30:
        for key, _ in sel.select(timeout=1.0):
            s = key.fileobj
            try:
                d = s.recv(262144)
            except BlockingIOError:
                continue
            except OSError:
                d = b""
            last = time.time()
            st = state[s]
            if not d:
                sel.unregister(s)
                continue
            st[0] += d
            while True:
                m = http_response_len(st[0])
                if not m:
                    break
                if not st[0].startswith(b"HTTP/1.1 200"):
                    st[1] = -1 << 30
                st[0] = st[0][m:]
                st[1] += 1
            if st[1] >= reqs:
                sel.unregister(s)
                if st[1] == reqs and not st[0]:
                    complete += 1
    counts = sorted(v[1] for v in state.values())
    for s in socks:
        s.close()
    return {"opened": len(socks), "sent": sent, "complete": complete,
            "least": counts[0] if counts else 0}


def cmd_fresh(ip, port, kind):
    t0 = time.time()
    if kind == "http":
        ok = one_get(ip, port, timeout=10.0)
    else:
        try:
            with socket.create_connection((ip, port), timeout=10.0) as s:
                s.sendall(b"fresh")
                buf = b""
                while len(buf) < 5:
                    d = s.recv(16)
                    if not d:
                        break
                    buf += d
                ok = buf == b"fresh"
        except OSError:
            ok = False
    return {"ok": ok, "seconds": round(time.time() - t0, 3)}


def main(argv):
    cmd, ip, port = argv[1], argv[2], int(argv[3])
    a = argv[4:]
    if cmd == "close":
        r = cmd_close(ip, port, int(a[0]), int(a[1]))
    elif cmd == "idle":
        r = cmd_idle(ip, port, int(a[0]), float(a[1]))
    elif cmd == "slow":
        r = cmd_slow(ip, port, int(a[0]), int(a[1]), float(a[2]))
    elif cmd == "fresh":
        r = cmd_fresh(ip, port, a[0])
    else:
        sys.exit("unknown command %s" % cmd)
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main(sys.argv)
