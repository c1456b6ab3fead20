"""tern bench flood: a client's echo latency during a spoofed-SYN flood,
tern beside Linux.

Two network namespaces joined by a veth (tools/netns.sh up): the client
side "k" (198.18.0.1, the Linux kernel's TCP) and the target "t"
(198.18.0.2): tern-echo --server (AF_PACKET, or AF_XDP with --drivers),
or for the Linux row kern-echo --server with the kernel owning the
address. For each stack, in one run:

  baseline  kern-echo --client on k: 1 connection, 64-byte requests one
            at a time, --requests round trips, no flood
  flood     the same client, running while `synflood` (built with the
            synflood target) sends --rounds rounds of --syns spoofed SYNs,
            one round after the other at full rate, from random hosts of
            the target's /24 (none answers ARP) into the echo port; the
            client stops when the last round ends
  after     --requests round trips again, on a new connection

The client is kern-echo unless --pace (paced_client.py, a request every
US microseconds, so the client does not take a CPU from the flood);
--rt runs the client and the echo servers SCHED_FIFO, so a machine busy
with other work delays them less (the sender keeps normal priority and
then gets less CPU: its SYN rate says how much).

Reported per phase: round trips, p50/p99/p99.9/max latency (kern-echo's
histogram, ~3% precision), and the ARP requests the target sent for the
client's address (tcpdump on k: broadcast = the client's entry was lost
and re-resolved, unicast = a probe of a known entry); for the flood, the
SYN rate the sender reached, every ARP request of the target, and tern's
neighbor-cache counters. Stacks alternate per --repeat so load drifts hit
both alike. The two CPUs of a small VM are shared by the sender, the
veths' softirqs, the target and the client: compare rows side by side.

Writes <build-dir>/bench-flood/<date>.json (or --out) and prints a table.
Needs root (namespaces), tcpdump."""
import argparse
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time

from .netns import (Hosts, interrupt_on_sigterm, last_json, result_doc, result_line,
                    run_in_hosts, stop_by, write_result)

HERE = os.path.dirname(os.path.realpath(__file__))
TOOLS = os.path.dirname(HERE)
REPO = os.path.dirname(TOOLS)
PORT = 7007
TERN_KEYS = ("arp_request_out", "arp_request_limited", "arp_evicted",
             "arp_evicted_resolved", "arp_cache_full", "arp_resolve_failed",
             "arp_pending_full", "arp_pending_expired", "tcp_syn_cookies_sent",
             "tcp_drop_listen_overflow", "tcp_retransmits")
# tcpdump -e -nn: "... MAC_S > MAC_D, ethertype ARP ..., Request who-has A tell B"
ARP_RE = re.compile(r"([0-9a-f:]{17}) > ([0-9a-f:]{17}),.*Request who-has "
                    r"(\S+?),? (?:\(\S+\) )?tell (\S+?),")


# tcpdump -tt -nn: "TIME ... SRC.PORT > DST.PORT: Flags [P.], seq A:B, ack C, ..., length 64"
SEG_RE = re.compile(r"^(\d+\.\d+) .* (\d+\.\d+\.\d+\.\d+)\.\d+ > "
                    r"\d+\.\d+\.\d+\.\d+\.\d+: .*seq \d+:(\d+), ack (\d+),.*, length 64$")


class ArpWatch:
    """tcpdump on k, read line by line by a thread: the ARP requests that
    arrive, with their arrival time, and with turnaround=True also the
    client's 64-byte requests and the echoes, whose capture times give the
    target's turnaround as seen at the client's interface (without the
    client's own scheduling)."""

    def __init__(self, hosts, turnaround=False):
        self.seen = []     # (monotonic time, dst mac, who-has, tell)
        self.segs = []     # (monotonic time, capture time, source address)
        flt = "arp"
        if turnaround:
            flt = "arp or (tcp port %d and host %s and greater 100)" % (PORT, hosts.env["IP_K"])
        self.p = hosts.popen("k", ["tcpdump", "-i", hosts.env["IF_K"], "-l", "-nn", "-e",
                                   "-tt", flt])
        self.th = threading.Thread(target=self._read, daemon=True)
        self.th.start()
        # tcpdump says "listening on ..." once its filter is attached
        end, said = time.monotonic() + 10, b""
        fd = self.p.stderr.fileno()
        while b"listening" not in said:
            left = end - time.monotonic()
            chunk = os.read(fd, 4096) if left > 0 and select.select([fd], [], [], left)[0] \
                else b""
            if not chunk:
                os.killpg(self.p.pid, signal.SIGKILL)
                raise RuntimeError("tcpdump did not start listening: %s" % said[-200:])
            said += chunk

    def _read(self):
        for line in self.p.stdout:
            m = ARP_RE.search(line)
            if m:
                self.seen.append((time.monotonic(), m.group(2), m.group(3),
                                  m.group(4)))
                continue
            m = SEG_RE.match(line)
            if m:
                self.segs.append((time.monotonic(), float(m.group(1)), m.group(2),
                                  int(m.group(3)), int(m.group(4))))

    def turnaround(self, t0, t1, client):
        """Percentiles (us) of request -> echo at k, for requests seen in
        [t0, t1) (one connection): an echo is paired with the request its
        ACK covers, so a frame tcpdump missed costs one sample and never
        pairs the wrong two."""
        out, asked = [], {}
        for t, ts, src, end, ack in list(self.segs):
            if not t0 <= t < t1:
                continue
            if src == client:
                asked[end] = ts
            elif ack in asked:
                out.append((ts - asked.pop(ack)) * 1e6)
        if not out:
            return None
        out.sort()
        pick = lambda q: round(out[min(len(out) - 1, int(q * len(out)))], 1)
        return {"n": len(out), "p50_us": pick(0.5), "p99_us": pick(0.99),
                "p999_us": pick(0.999), "max_us": round(out[-1], 1)}

    def close(self):
        if self.p.poll() is None:
            time.sleep(0.3)
            os.killpg(self.p.pid, signal.SIGTERM)
            self.p.wait(10)
            self.th.join(5)

    def count(self, t0, t1, sender, who=None, broadcast=None):
        n = 0
        for t, dst, has, tell in list(self.seen):
            if not t0 <= t < t1 or tell != sender or (who and has != who):
                continue
            if broadcast is not None and (dst == "ff:ff:ff:ff:ff:ff") != broadcast:
                continue
            n += 1
        return n


def stop_proc(p):
    return stop_by(p, signal.SIGTERM, 10)


def wait_listening(hosts, ip, port, timeout=15):
    """True once a TCP connect from k to ip:port succeeds."""
    probe = "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)"
    end = time.time() + timeout
    while time.time() < end:
        r = hosts.run("k", [sys.executable, "-c", probe, ip, str(port)],
                      capture_output=True)
        if r.returncode == 0:
            return True
        time.sleep(0.2)
    return False


def prio(a, argv):
    """argv under SCHED_FIFO --rt (the client and the echo servers, never
    the sender)."""
    return (["chrt", "-f", str(a.rt)] if a.rt else []) + argv


def client_cmd(a, ip, requests):
    """The client: requests round trips, or until SIGTERM when 0."""
    if a.pace:
        return prio(a, [sys.executable, os.path.join(HERE, "paced_client.py"), ip, str(PORT),
                        str(a.pace), str(requests)])
    more = ["--requests", str(requests)] if requests else ["--duration", "3600"]
    return prio(a, [os.path.join(a.build_dir, "bin", "kern-echo"), "--client",
                    "%s:%d" % (ip, PORT), "--conns", "1", "--depth", "1", "--size", "64",
                    "--json"] + more)


def lat(rec):
    keys = ("requests", "p50_us", "p99_us", "p999_us", "max_us", "retransmits")
    return {k: rec.get(k) for k in keys}


def fixed_client(a, hosts, what):
    """kern-echo --client for exactly --requests round trips."""
    p = hosts.run("k", client_cmd(a, hosts.env["IP_T"], a.requests),
                  capture_output=True, text=True, timeout=300)
    rec = last_json(p.stdout)
    if p.returncode != 0 or not rec:
        raise RuntimeError("%s client: %s" % (what, p.stderr.strip()[-300:]))
    return rec


def flood_rounds(a, hosts, skip):
    """--rounds synflood runs one after the other; their SYNs per second."""
    e = hosts.env
    exe = os.path.join(a.build_dir, "tests", "synflood")
    rates, syns, secs = [], 0, 0.0
    for r in range(a.rounds):
        pin = ["taskset", "-c", a.flood_cpu] if a.flood_cpu else []
        p = hosts.run("k", pin + [exe, e["IF_K"], e["MAC_K"], e["MAC_T"], e["IP_T"], str(PORT),
                            str(a.syns), skip, str(r + 1), str(a.procs)],
                      capture_output=True, text=True, timeout=300)
        out = p.stdout.split()
        if p.returncode != 0 or len(out) != 2:
            raise RuntimeError("synflood: %s" % (p.stderr.strip() or p.stdout.strip()))
        syns += int(out[0])
        secs += float(out[1])
        rates.append(int(out[0]) / max(float(out[1]), 1e-6))
    return {"syns": syns, "flood_seconds": round(secs, 3),
            "syns_per_s": int(syns / max(secs, 1e-6)),
            "syns_per_s_rounds": [int(x) for x in rates]}


def one_run(a, hosts, stack):
    e = hosts.env
    bindir = os.path.join(a.build_dir, "bin")
    tern = stack.startswith("tern")
    hosts.kernel_owns_t(not tern)
    if tern:
        server = [os.path.join(bindir, "tern-echo"), "--server", "--port", str(PORT),
                  "--driver", stack.split("-", 1)[1], "--iface", e["IF_T"],
                  "--ip", "%s/%s" % (e["IP_T"], e["PREFIX_LEN"]), "--json"]
        if a.tern_cpu:
            server += ["--cores", a.tern_cpu]
    else:
        server = [os.path.join(bindir, "kern-echo"), "--server", "--port", str(PORT)]
    rec = {"stack": stack}
    srv = hosts.popen("t", prio(a, server))
    watch = None
    try:
        if not wait_listening(hosts, e["IP_T"], PORT):
            srv_out = stop_proc(srv)
            raise RuntimeError("server not listening: %s" % (srv_out[1] or "")[-300:])
        watch = ArpWatch(hosts, a.turnaround)
        skip = "%s,%s" % (e["IP_T"].rsplit(".", 1)[1], e["IP_K"].rsplit(".", 1)[1])
        # baseline
        t0 = time.monotonic()
        base = fixed_client(a, hosts, "no-flood")
        t1 = time.monotonic()
        # flood
        cli = hosts.popen("k", client_cmd(a, e["IP_T"], 0))
        time.sleep(0.5)
        t2 = time.monotonic()
        fl = flood_rounds(a, hosts, skip)
        t3 = time.monotonic()
        out, err, rc = stop_proc(cli)
        during = last_json(out)
        if rc != 0 or not during:
            raise RuntimeError("flood client: %s" % (err or "")[-300:])
        rec["after"] = lat(fixed_client(a, hosts, "after-flood"))
        watch.close()
        t4 = time.monotonic()
        ip_t, ip_k = e["IP_T"], e["IP_K"]
        rec["baseline"] = lat(base)
        rec["baseline"]["arp_for_client"] = watch.count(t0, t1, ip_t, ip_k)
        rec["flood"] = lat(during)
        rec["flood"].update(fl)
        rec["flood"]["arp_for_client_broadcast"] = watch.count(t1, t4, ip_t, ip_k, True)
        rec["flood"]["arp_for_client_unicast"] = watch.count(t1, t4, ip_t, ip_k, False)
        rec["flood"]["arp_requests"] = watch.count(t2, t4, ip_t)
        rec["flood"]["client_seconds"] = round(t3 - t1, 2)
        if a.turnaround:
            rec["baseline"]["turnaround"] = watch.turnaround(t0, t1, ip_k)
            rec["flood"]["turnaround"] = watch.turnaround(t2, t3, ip_k)
    except (RuntimeError, subprocess.TimeoutExpired) as ex:
        rec["error"] = str(ex)
    finally:
        if watch:
            watch.close()
        out, err, _ = stop_proc(srv)
    if tern:
        ctr = last_json(out or "").get("counters", {})
        rec["tern_counters"] = {k: ctr.get(k, 0) for k in TERN_KEYS}
        rec["tern_counters_all"] = ctr
        rec["tern_link"] = last_json(out or "").get("link", {})
    rec["loadavg"] = round(os.getloadavg()[0], 2)
    return rec


def check(runs, stacks):
    """--check: what must hold whatever the load (no timing). Returns the
    failures, one line each."""
    bad = []
    for s in stacks:
        mine = [r for r in runs if r["stack"] == s]
        if not mine:
            bad.append("%s: did not run" % s)
        for r in mine:
            if "error" in r:
                bad.append("%s: %s" % (s, r["error"]))
                continue
            # every round trip completed (kern-echo exits 1 otherwise), and
            # some during the flood
            if r["flood"]["requests"] < 1:
                bad.append("%s: no round trip completed during the flood" % s)
            if not s.startswith("tern"):
                continue
            f, c = r["flood"], r["tern_counters"]
            n = f["arp_for_client_broadcast"] + f["arp_for_client_unicast"]
            if n:
                bad.append("%s: %d ARP requests for the client during/after the flood"
                           % (s, n))
            if f["arp_requests"] < 1:
                bad.append("%s: the capture saw no ARP request for a spoofed source" % s)
            if c["arp_evicted"] < 1:
                bad.append("%s: the flood evicted no neighbor entry" % s)
            if c["arp_evicted_resolved"]:
                bad.append("%s: %d resolved neighbor entries evicted"
                           % (s, c["arp_evicted_resolved"]))
    return bad


def fmt_ms(us):
    return "-" if us is None else "%.3f" % (us / 1000.0)


def table(runs):
    head = ("| stack | phase | round trips | p50 ms | p99 ms | p99.9 ms | max ms | "
            "SYNs/s | ARP requests (all) | ARP for the client (bcast/ucast) | load |")
    lines = [head, "|" + "---|" * 11]
    for r in runs:
        if "error" in r:
            lines.append("| %s | error: %s |" % (r["stack"], r["error"][:120]))
            continue
        b, f = r["baseline"], r["flood"]
        lines.append("| %s | no flood | %d | %s | %s | %s | %s | - | - | %d | %.1f |" % (
            r["stack"], b["requests"], fmt_ms(b["p50_us"]), fmt_ms(b["p99_us"]),
            fmt_ms(b["p999_us"]), fmt_ms(b["max_us"]), b["arp_for_client"], r["loadavg"]))
        lines.append("| | flood | %d | %s | %s | %s | %s | %d | %d | %d/%d | |" % (
            f["requests"], fmt_ms(f["p50_us"]), fmt_ms(f["p99_us"]), fmt_ms(f["p999_us"]),
            fmt_ms(f["max_us"]), f["syns_per_s"], f["arp_requests"],
            f["arp_for_client_broadcast"], f["arp_for_client_unicast"]))
    ta = [r for r in runs if "error" not in r and r["baseline"].get("turnaround")]
    if ta:
        lines += ["", "The target's turnaround at the client's interface (tcpdump on k):", "",
                  "| stack | phase | samples | p50 ms | p99 ms | p99.9 ms | max ms |",
                  "|" + "---|" * 7]
        for r in ta:
            for phase in ("baseline", "flood"):
                t = r[phase].get("turnaround") or {}
                lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                    r["stack"] if phase == "baseline" else "",
                    "no flood" if phase == "baseline" else "flood", t.get("n", 0),
                    fmt_ms(t.get("p50_us")), fmt_ms(t.get("p99_us")),
                    fmt_ms(t.get("p999_us")), fmt_ms(t.get("max_us"))))
    return "\n".join(lines)


def run_all(a, hosts, stacks, runs):
    """Every stack --repeat times, alternating the order."""
    for rep in range(a.repeat):
        for s in (stacks if rep % 2 == 0 else list(reversed(stacks))):
            runs.append(one_run(a, hosts, s))
            r = runs[-1]
            sys.stderr.write("%s: %s\n" % (s, r.get("error") or json.dumps(r.get("flood"))))


def parser():
    p = argparse.ArgumentParser(prog="tern bench flood", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--drivers", default="afpacket", metavar="LIST",
                   help="tern drivers: afpacket, afxdp (default afpacket)")
    p.add_argument("--no-kern", action="store_true", help="tern rows only")
    p.add_argument("--requests", type=int, default=20000, metavar="N",
                   help="round trips of the no-flood phase (default 20000)")
    p.add_argument("--rounds", type=int, default=10, metavar="N",
                   help="flood rounds (default 10)")
    p.add_argument("--syns", type=int, default=50000, metavar="N",
                   help="spoofed SYNs per round (default 50000)")
    p.add_argument("--procs", type=int, default=1, metavar="N",
                   help="synflood sender processes (default 1)")
    p.add_argument("--flood-cpu", metavar="CPU",
                   help="pin the SYN sender to this CPU (default: the scheduler places it)")
    p.add_argument("--tern-cpu", metavar="CPU",
                   help="tern-echo --cores (default: tern-echo's, the first CPU it may use)")
    p.add_argument("--turnaround", action="store_true",
                   help="also capture the client's requests and the echoes on k: the "
                        "target's turnaround without the client's scheduling (tcpdump "
                        "then prints ~2 lines a round trip, which costs CPU too)")
    p.add_argument("--pace", type=int, default=0, metavar="US",
                   help="the client sends a request every US microseconds (paced_client.py, "
                        "Python: its own ~20 us are in every figure) instead of kern-echo's "
                        "back-to-back round trips, which take a whole CPU from the flood")
    p.add_argument("--rt", type=int, default=0, metavar="PRIO",
                   help="run the client and the echo servers SCHED_FIFO at PRIO (chrt -f), "
                        "so other work on a busy machine does not delay them; the sender "
                        "stays a normal process (default 0: no)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="runs per stack, alternating the order (default 1)")
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"), metavar="DIR",
                   help="CMake build tree with bin/tern-echo, bin/kern-echo, "
                        "tests/synflood (default build/)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless every round trip completed, tern never "
                        "re-resolved or probed the client and evicted only "
                        "unresolved entries (the ctest; no timing)")
    p.add_argument("--out", metavar="FILE",
                   help="JSON file (default <build-dir>/bench-flood/<date>.json)")
    return p


def main(argv):
    a = parser().parse_args(argv)
    interrupt_on_sigterm()
    skip = 77 if a.check else 2      # 77: ctest's SKIP_RETURN_CODE
    if os.geteuid() != 0:
        print("SKIP: tern bench flood needs root (network namespaces)")
        return skip
    if not shutil.which("tcpdump"):
        print("SKIP: tern bench flood needs tcpdump (the ARP capture)")
        return skip
    for prog in ("bin/tern-echo", "bin/kern-echo", "tests/synflood"):
        if not os.access(os.path.join(a.build_dir, prog), os.X_OK):
            print("SKIP: tern bench flood: %s/%s not built (cmake --build %s --target "
                  "tern-echo kern-echo synflood)" % (a.build_dir, prog, a.build_dir))
            return skip
    stacks = ["tern-" + d for d in a.drivers.split(",") if d]
    if not a.no_kern:
        stacks.append("linux")
    hosts = Hosts("tfl%d" % (os.getpid() % 100000), wire=True)
    doc = result_doc("echo latency during a spoofed-SYN flood (tools/bench/flood.py)", argv,
                     rounds=a.rounds, syns_per_round=a.syns, rt=a.rt, pace_us=a.pace)
    runs = doc["runs"]
    run_in_hosts(hosts, doc, lambda: run_all(a, hosts, stacks, runs))
    out = write_result(doc, a.out, a.build_dir, "flood")
    print(table(runs))
    print(result_line(doc, out))
    if a.check:
        bad = check(runs, stacks)
        for line in bad:
            print("FAIL " + line)
        print("check: %s" % ("FAIL" if bad else "ok"))
        return 1 if bad else 0
    return 1 if any("error" in r for r in runs) else 0
