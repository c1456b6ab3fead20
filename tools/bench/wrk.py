"""The HTTP workload's real client (wrk) and its response size:
a 151-byte response (headers and body) to wrk's GET."""
import re
import socket
import time

from . import addr

RESPONSE_BYTES = 151
# apps/common/http.c writes this header before the body; its length changes
# with the digits of Content-Length only.
HEADER = ("HTTP/1.1 200 OK\r\nServer: tern\r\n"
          "Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n")


def body_for(total=RESPONSE_BYTES):
    """--body-size that makes the whole response `total` bytes long."""
    for body in range(total, -1, -1):
        if len(HEADER % body) + body == total:
            return body
    raise ValueError("no body size gives a %d-byte response" % total)


def probe_response(host, port, timeout=3.0):
    """Bytes of one whole response to a keep-alive GET (header + body), to
    check the size on a live server; None when the server did not answer."""
    req = b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % addr.hostport(host, port).encode()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1.0) as s:
                s.sendall(req)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = s.recv(4096)
                    if not chunk:
                        return None
                    data += chunk
                head, rest = data.split(b"\r\n\r\n", 1)
                m = re.search(rb"(?i)content-length:\s*(\d+)", head)
                want = int(m.group(1)) if m else 0
                while len(rest) < want:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    rest += chunk
                return len(head) + 4 + want
        except OSError:
            time.sleep(0.1)
    return None


def request_bytes(host, port):
    """What wrk sends for http://host:port/ (method line and Host header)."""
    return len("GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % addr.hostport(host, port))


def command(url, conns, duration_s, threads=1):
    secs = max(1, int(round(duration_s)))
    return ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % secs, "--latency", url]


_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6}


def _us(text):
    m = re.match(r"([\d.]+)(us|ms|s|m)$", text.strip())
    if not m:
        return None
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse(text):
    """wrk's report as the same keys tern-echo prints: requests, duration_s,
    rps, p50_us, p99_us (wrk gives no 99.9th percentile), errors."""
    out = {"program": "wrk"}
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
    if not m:
        raise ValueError("no 'N requests in T' line in wrk's output")
    out["requests"] = int(m.group(1))
    out["duration_s"] = float(m.group(2)) * _UNITS[m.group(3)] / 1e6
    m = re.search(r"Requests/sec:\s*([\d.]+)", text)
    out["rps"] = float(m.group(1)) if m else out["requests"] / out["duration_s"]
    for pct, key in (("50", "p50_us"), ("75", "p75_us"), ("90", "p90_us"), ("99", "p99_us")):
        m = re.search(r"^\s*%s%%\s+(\S+)" % pct, text, re.M)
        out[key] = _us(m.group(1)) if m else None
    out["p999_us"] = None
    errors = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        errors += sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        errors += int(m.group(1))
    out["errors"] = errors
    return out
