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
    return {"stored": stored, "error": err}


def main():
    global HOST, PORT
    name, HOST, PORT = sys.argv[1], sys.argv[2], int(sys.argv[3])
    fn = {"commands": commands, "pipeline": pipeline, "large": large,
          "conns": conns, "badinput": badinput, "noreader": noreader,
          "maxmemory": maxmemory}[name]
    try:
        out = fn()
    except (redis.RedisError, OSError) as e:
        raise SystemExit("FAIL: %s: %s: %s" % (name, type(e).__name__, e))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
