"""Client side of the key-value server tests, run inside the client
namespace by test_kv.py with Debian's python3 (which has python3-redis):

    kv_client.py SCENARIO HOST PORT

Each scenario checks what a real client sees and exits 1 with the reason
on the first mismatch; on success it prints one JSON line of findings.
Every socket has a timeout, so a server that stops answering fails the
scenario instead of hanging it."""
import json
import socket
import sys
import threading
import time

import redis

HOST, PORT = "", 0
TIMEOUT = 20


def client():
    return redis.Redis(host=HOST, port=PORT, socket_timeout=TIMEOUT)


def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)


def eq(got, want, what):
    check(got == want, "%s: got %r, want %r" % (what, got, want))


def raw(timeout=TIMEOUT):
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until_closed(s, limit=1 << 20):
    """Everything the server sends until it closes (b"" ends it)."""
    got = b""
    while len(got) < limit:
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            break
        if not d:
            break
        got += d
    return got


def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def commands():
    r = client()
    eq(r.flushall(), True, "FLUSHALL")
    eq(r.ping(), True, "PING")
    eq(r.echo("hi there"), b"hi there", "ECHO")
    eq(r.get("k"), None, "GET missing")
    eq(r.set("k", "v1"), True, "SET")
    eq(r.get("k"), b"v1", "GET")
    eq(r.set("k", "v2", nx=True), None, "SET NX on a key")
    eq(r.set("k", "v2", xx=True), True, "SET XX")
    eq(r.set("nokey", "v", xx=True), None, "SET XX on no key")
    eq(r.set("e", "v", ex=100), True, "SET EX")
    check(98 <= r.ttl("e") <= 100, "TTL after EX 100: %r" % r.ttl("e"))
    eq(r.set("p", "v", px=100000), True, "SET PX")
    check(99000 <= r.pttl("p") <= 100000, "PTTL after PX")
    eq(r.ttl("k"), -1, "TTL without expiry")
    eq(r.ttl("none"), -2, "TTL of no key")
    eq(r.expire("k", 50), True, "EXPIRE")
    check(48 <= r.ttl("k") <= 50, "TTL after EXPIRE")
    eq(r.exists("k", "e", "none"), 2, "EXISTS")
    eq(r.delete("e", "p", "none"), 2, "DEL")
    eq(r.incr("n"), 1, "INCR")
    eq(r.incr("n", 10), 11, "INCRBY")
    eq(r.decr("n"), 10, "DECR")
    eq(r.decr("n", 20), -10, "DECRBY")
    try:
        r.incr("k")
        check(False, "INCR of a non-number succeeded")
    except redis.ResponseError as e:
        check("not an integer" in str(e), "INCR error: %s" % e)
    eq(r.mset({"a": "1", "b": "2", "c": b"\x00\r\n\xff"}), True, "MSET")
    eq(r.mget("a", "x", "b", "c"), [b"1", None, b"2", b"\x00\r\n\xff"],
       "MGET")
    eq(r.dbsize(), 5, "DBSIZE")
    info = r.info()
    check("used_memory" in info, "INFO has no used_memory: %r" % info)
    check("total_commands_processed" in info, "INFO: commands")
    check(info.get("connected_clients", 0) >= 1, "INFO: clients")
    check(info.get("db0", {}).get("keys") == 5, "INFO keyspace: %r"
          % info.get("db0"))
    # A key expiring: gone once its time has passed (bounded wait).
    eq(r.set("soon", "v", px=100), True, "SET PX 100")
    end = time.time() + 10
    while r.exists("soon") and time.time() < end:
        time.sleep(0.05)
    eq(r.exists("soon"), 0, "a key past its PX")
    eq(r.flushall(), True, "FLUSHALL")
    eq(r.dbsize(), 0, "DBSIZE after FLUSHALL")
    try:
        r.execute_command("NOSUCHCOMMAND", "x")
        check(False, "an unknown command succeeded")
    except redis.ResponseError as e:
        check("unknown command" in str(e), "unknown command: %s" % e)
    s = raw()
    s.sendall(cmd("QUIT"))
    eq(read_until_closed(s), b"+OK\r\n", "QUIT then close")
    return {"ok": True}


def pipeline():
    r = client()
    p = r.pipeline(transaction=False)
    n = 5000
    for i in range(n):
        p.set("key:%d" % i, "value:%d" % i)
    for i in range(n):
        p.get("key:%d" % i)
    p.incr("ctr")
    res = p.execute()
    check(all(x is True for x in res[:n]), "pipelined SETs")
    for i in range(n):
        eq(res[n + i], b"value:%d" % i, "pipelined GET %d" % i)
    eq(res[-1], 1, "pipelined INCR")
    # Requests cut at every possible point: one raw send of many requests.
    s = raw()
    blob = b"".join(cmd("GET", "key:%d" % i) for i in range(200))
    s.sendall(blob)
    want = b"".join(b"$%d\r\nvalue:%d\r\n" % (len(b"value:%d" % i), i)
                    for i in range(200))
    got = b""
    while len(got) < len(want):
        d = s.recv(65536)
        check(d, "closed during pipelined GETs")
        got += d
    eq(got, want, "200 pipelined GET replies")
    return {"requests": 2 * n + 201}


def large():
    r = client()
    sizes = [1 << 20, 4 << 20, (8 << 20) - 1]
    for n in sizes:
        v = bytes((i * 7 + n) & 0xFF for i in range(4096)) * (n // 4096) + \
            b"z" * (n % 4096)
        eq(r.set("big:%d" % n, v), True, "SET of %d bytes" % n)
        eq(r.get("big:%d" % n), v, "GET of %d bytes" % n)
    # Two large values in one pipeline.
    p = r.pipeline(transaction=False)
    p.get("big:%d" % sizes[0])
    p.get("big:%d" % sizes[1])
    a, b = p.execute()
    eq((len(a), len(b)), (sizes[0], sizes[1]), "pipelined large GETs")
    return {"sizes": sizes}


def conns():
    n = 200
    socks = [raw() for _ in range(n)]
    for i, s in enumerate(socks):
        s.sendall(cmd("SET", "c:%d" % i, "v%d" % i) + cmd("PING"))
    for i, s in enumerate(socks):
        got = b""
        while len(got) < 12:
            d = s.recv(64)
            check(d, "connection %d closed" % i)
            got += d
        eq(got, b"+OK\r\n+PONG\r\n", "connection %d" % i)
    r = client()
    vals = r.mget(["c:%d" % i for i in range(n)])
    eq(vals, [b"v%d" % i for i in range(n)], "MGET of every connection's key")
    for s in socks:
        s.close()
    return {"conns": n}


def bad(payload, what):
    """payload must get an error reply, then the server closes."""
    s = raw()
    try:
        s.sendall(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass
    got = read_until_closed(s)
    s.close()
    check(got.startswith(b"-ERR"), "%s: reply %r" % (what, got[:80]))
    check(got.endswith(b"\r\n") and got.count(b"\r\n") == 1,
          "%s: one error line, then close: %r" % (what, got[:200]))
    return got.decode(errors="replace").strip()


def badinput():
    seen = {}
    seen["negative_bulk"] = bad(b"*2\r\n$3\r\nGET\r\n$-7\r\n", "negative bulk")
    seen["huge_bulk"] = bad(b"*2\r\n$3\r\nGET\r\n$99999999999\r\n",
                            "huge bulk")
    seen["huge_count"] = bad(b"*99999999\r\n", "huge multibulk count")
    seen["nesting"] = bad(b"*1\r\n" * 10000, "deep multibulk nesting")
    seen["garbage_count"] = bad(b"*abc\r\n", "non-numeric count")
    seen["no_crlf"] = bad(b"*1\r\n$4\r\nPINGxx", "bulk without CRLF")
    seen["long_inline"] = bad(b"a" * (200 << 10), "200 KiB inline line")
    seen["over_request"] = bad(
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$999999999\r\n", "value over bound")
    # One byte at a time, each its own segment (TCP_NODELAY, a pause).
    s = raw()
    msg = cmd("SET", "slow", "bytes") + cmd("GET", "slow") + b"PING\r\n"
    for i in range(len(msg)):
        s.sendall(msg[i:i + 1])
        time.sleep(0.002)
    want = b"+OK\r\n$5\r\nbytes\r\n+PONG\r\n"
    got = b""
    while len(got) < len(want):
        d = s.recv(64)
        check(d, "closed during the byte-at-a-time requests")
        got += d
    eq(got, want, "byte-at-a-time replies")
    s.close()
    # Everyone else is unaffected.
    r = client()
    eq(r.ping(), True, "PING after the bad input")
    eq(r.get("slow"), b"bytes", "GET after the bad input")
    return seen


def noreader():
    """One client pipelines GETs of a 256 KiB value and never reads; the
    others are still served. Prints what the stuck client got out."""
    r = client()
    r.set("fat", b"f" * (256 << 10))
    s = raw(timeout=2)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    req = cmd("GET", "fat") * 1000
    sent = 0
    try:
        while sent < (64 << 20):
            s.sendall(req)
            sent += len(req)
    except socket.timeout:
        pass                      # the server stopped taking requests
    for i in range(200):
        eq(r.set("alive:%d" % i, i), True, "SET beside a stuck client")
        eq(r.get("alive:%d" % i), b"%d" % i, "GET beside a stuck client")
    info = r.info()
    s.close()
    return {"sent": sent, "used_memory": info.get("used_memory")}


def maxmemory():
    """Against a server with a small --maxmemory: writes stop with -OOM,
    reads and deletes go on, and room comes back after DEL."""
    r = client()
    r.flushall()
    v = b"m" * (100 << 10)
    stored = 0
    err = None
    for i in range(1000):
        try:
            r.set("m:%d" % i, v)
            stored += 1
        except redis.ResponseError as e:
            err = str(e)
            break
    check(err is not None, "no OOM after %d writes of 100 KiB" % stored)
    check(err.startswith("OOM"), "OOM error text: %s" % err)
    eq(r.get("m:0"), v, "GET at the bound")
    eq(r.delete("m:0", "m:1"), 2, "DEL at the bound")
    eq(r.set("again", v), True, "SET after DEL made room")
    info = r.info()
    check(info["used_memory"] <= info["maxmemory"],
          "used_memory %s over maxmemory %s" % (info["used_memory"],
                                                info["maxmemory"]))
    # Values of 1 MiB: the bound counts them whole, and an MSET that would
    # pass it sets none of its keys.
    r.flushall()
    big = b"B" * (1 << 20)
    stored_big = 0
    for i in range(100):
        try:
            r.set("big:%d" % i, big)
            stored_big += 1
        except redis.ResponseError as e:
            check(str(e).startswith("OOM"), "OOM error text: %s" % e)
            break
    info = r.info()
    check(info["used_memory"] <= info["maxmemory"],
          "with 1 MiB values: used_memory %s over maxmemory %s"
          % (info["used_memory"], info["maxmemory"]))
    r.delete("big:0")
    try:
        r.mset({"all:1": b"x", "all:2": big, "all:3": big})
        mset_err = None
    except redis.ResponseError as e:
        mset_err = str(e)
    check(mset_err is not None and mset_err.startswith("OOM"),
          "an MSET of 2 MiB with 1 MiB free: %r" % mset_err)
    eq(r.exists("all:1", "all:2", "all:3"), 0, "keys of a refused MSET")
    return {"stored": stored, "error": err, "stored_1mib": stored_big}


def recv_exact(s, n):
    got = b""
    while len(got) < n:
        d = s.recv(n - len(got))
        check(d, "the server closed the connection")
        got += d
    return got


def raw_on_thread():
    """A raw connection and the server thread serving it (INFO's
    server_thread: tern-kv and kern-kv)."""
    s = raw()
    s.sendall(cmd("INFO", "server"))
    head = b""
    while not head.endswith(b"\r\n"):
        head += recv_exact(s, 1)
    check(head.startswith(b"$"), "INFO reply: %r" % head)
    text = recv_exact(s, int(head[1:-2]) + 2).decode()
    for line in text.split("\r\n"):
        if line.startswith("server_thread:"):
            return s, int(line.split(":")[1])
    raise SystemExit("FAIL: INFO has no server_thread")


def mset():
    """MSET is all or nothing for a reader on another server thread: one
    connection sends 10,000 MSETs of 100 keys at once (its server thread
    runs them back to back), each setting every key to the MSET's number;
    another connection, served by another thread, reads the keys meanwhile
    with MGETs (all 100 values must be equal) and with 100 GETs in order
    (never a newer value before an older one)."""
    by_thread = {}
    for _ in range(64):
        c, t = raw_on_thread()
        if t in by_thread:
            c.close()
        by_thread.setdefault(t, c)
        if len(by_thread) >= 2:
            break
    check(len(by_thread) >= 2, "64 connections, all on server thread %s"
          % list(by_thread))
    (tw, w), (tr, rd) = list(by_thread.items())[:2]
    keys = [b"mset:%d" % i for i in range(100)]
    rounds = 10000

    def mset_cmd(n):
        v = b"%08d" % n
        return cmd(b"MSET", *[x for k in keys for x in (k, v)])

    w.sendall(mset_cmd(0))
    eq(recv_exact(w, 5), b"+OK\r\n", "the first MSET")
    stream = b"".join(mset_cmd(n) for n in range(1, rounds + 1))
    done = threading.Event()
    failure = []

    def replies():
        try:
            eq(recv_exact(w, 5 * rounds), b"+OK\r\n" * rounds, "MSET replies")
        except (OSError, SystemExit) as e:
            failure.append("writer: %s" % e)
        done.set()

    def send():
        try:
            w.sendall(stream)
        except OSError as e:
            failure.append("writer: %s" % e)

    t = threading.Thread(target=replies)
    t.start()
    # The stream (about 25 MB) leaves from its own thread: the reads
    # below start at once, not after most of it went (on a busy machine
    # the MSETs could then all be done before the first read).
    ts = threading.Thread(target=send, daemon=True)
    ts.start()
    # Every value is 8 digits: each reply has a fixed length.
    one = 14                                      # $8\r\nNNNNNNNN\r\n
    batch = cmd(b"MGET", *keys) * 10 + b"".join(cmd(b"GET", k) for k in keys)
    size = 10 * (6 + 100 * one) + 100 * one
    reads = during = 0
    while not done.is_set() or reads == 0:
        rd.sendall(batch)
        got = recv_exact(rd, size)
        for i in range(10):
            part = got[i * (6 + 100 * one):(i + 1) * (6 + 100 * one)]
            eq(part[:6], b"*100\r\n", "MGET reply")
            m = [int(part[6 + j * one + 4:6 + j * one + 12])
                 for j in range(100)]
            check(len(set(m)) == 1, "MGET saw a torn MSET: %s" % m)
            reads += 1
            during += 0 < m[0] < rounds
        g = got[10 * (6 + 100 * one):]
        g = [int(g[j * one + 4:j * one + 12]) for j in range(100)]
        check(g == sorted(g), "GETs in order saw a torn MSET: %s" % g)
    t.join()
    ts.join()
    check(not failure, "; ".join(failure))
    check(during > 0, "no read while the MSETs ran (%d reads)" % reads)
    return {"writer_thread": tw, "reader_thread": tr, "reads": reads,
            "reads_during_msets": during}


def main():
    global HOST, PORT
    name, HOST, PORT = sys.argv[1], sys.argv[2], int(sys.argv[3])
    fn = {"commands": commands, "pipeline": pipeline, "large": large,
          "conns": conns, "badinput": badinput, "noreader": noreader,
          "maxmemory": maxmemory, "mset": mset}[name]
    try:
        out = fn()
    except (redis.RedisError, OSError) as e:
        raise SystemExit("FAIL: %s: %s: %s" % (name, type(e).__name__, e))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
