#!/usr/bin/python3
"""paced_client.py HOST PORT INTERVAL_US [REQUESTS]

One TCP connection to an echo server: a 64-byte request every
INTERVAL_US microseconds (or at once when the previous round trip took
longer), each timed from send to the last byte of its echo. Stops after
REQUESTS round trips, or at SIGTERM when REQUESTS is 0 or absent, and
prints one JSON line: requests, p50_us, p99_us, p999_us, max_us.
Exit status 1 when the connection fails or closes. Used by
`tern bench flood --pace` so the client leaves the CPUs to the flood
(a back-to-back client takes a whole CPU)."""
import json
import signal
import socket
import sys
import time


class Stop(Exception):
    pass


def on_term(*_):
    raise Stop()


def main(argv):
    if len(argv) not in (3, 4) or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    host, port, gap = argv[0], int(argv[1]), int(argv[2]) * 1000
    want = int(argv[3]) if len(argv) == 4 else 0
    s = socket.create_connection((host, port), 5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(None)
    req = b"a" * 64
    lat = []
    signal.signal(signal.SIGTERM, on_term)
    try:
        due = time.perf_counter_ns()
        while not want or len(lat) < want:
            t = time.perf_counter_ns()
            s.sendall(req)
            got = 0
            while got < len(req):
                n = len(s.recv(len(req) - got))
                if not n:
                    sys.stderr.write("paced_client: the server closed the connection\n")
                    return 1
                got += n
            lat.append(time.perf_counter_ns() - t)
            due += gap
            wait = due - time.perf_counter_ns()
            if wait > 0:
                time.sleep(wait / 1e9)
            else:
                due = time.perf_counter_ns()
    except Stop:
        pass
    except OSError as e:
        sys.stderr.write("paced_client: %s\n" % e)
        return 1
    lat.sort()
    pick = lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))] / 1e3, 2) if lat else None
    print(json.dumps({"requests": len(lat), "p50_us": pick(0.5), "p99_us": pick(0.99),
                      "p999_us": pick(0.999), "max_us": round(lat[-1] / 1e3, 2) if lat else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
