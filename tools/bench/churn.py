"""tern bench churn: connection churn, idle connections and slow readers,
tern beside Linux on the same veth path.

Two network namespaces joined by a veth pair (tools/netns.sh up): the
server side "t" and the clients' side "k". tern's rows run tern-httpd /
tern-echo --server on AF_PACKET with default flags and --poll block (CPU
--server-cpu); Linux's rows run kern-httpd / kern-echo --server on the
same veth (the kernel then owns t's address), same CPU. The clients run
in "k" on --client-cpu. Stacks alternate run by run (tern, Linux, then
Linux, tern, ...) so a load drift hits both alike.

Workloads:
  close  wrk -t1 -c50 -d60s -H 'Connection: close' (--conns, --duration)
         against the HTTP server: requests/s, wrk's errors; then a fresh
         GET (seconds to its whole response); the server's connections
         at the end (tern: slots held and TIME_WAIT records at the stop,
         from its report; Linux: ss in "t")
  idle   tests/interop/churn_peer.py idle: 10,000 connections (--idle-conns)
         to the echo server held --hold 30 s without a byte, then each
         echoes 16 bytes; a fresh echo during the hold and one after
  slow   churn_peer.py slow: 200 clients (--slow-clients) each pipeline
         2,000 GETs (--slow-reqs) for 1,000-byte bodies (--body-size) and
         read nothing for --slow-wait 60 s, then read every response; a
         fresh GET half-way through the stall; the server's RSS before,
         in the stall and after
Each run also records the load average, and tern's counters for SYN
cookies, TIME_WAIT reuse/recycling, table-full drops and pool pressure.

Writes build/bench-churn/<date>.json (or --out) and prints a table.
Needs root (namespaces) and wrk for close."""
import argparse
import datetime
import os
import signal
import sys
import time

from . import markdown, wrk
from .netns import (Hosts, interrupt_on_sigterm, last_json, result_doc, result_line,
                    run_in_hosts, stop, stop_by, wait_ready, write_result)

TOOLS = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
REPO = os.path.dirname(TOOLS)
PEER = os.path.join(REPO, "tests", "interop", "churn_peer.py")
HTTP_PORT, ECHO_PORT = 8080, 7007

TERN_KEYS = ("tcp_passive_opens", "tcp_syn_cookies_sent", "tcp_syn_cookies_ok",
             "tcp_drop_conn_table_full", "tcp_drop_listen_overflow",
             "tcp_time_wait_reuse", "tcp_time_wait_recycled", "tcp_rst_out",
             "tcp_send_rx_reserve", "tcp_writable_calls", "tcp_nobuf",
             "tcp_retransmits")


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def ss_count(hosts, state, port, side="t"):
    """Sockets of the server's port in one TCP state: the server's in
    namespace t, the clients' in k."""
    filt = "( %s = :%d )" % ("sport" if side == "t" else "dport", port)
    p = hosts.run(side, ["ss", "-Htn", "state", state, filt],
                  capture_output=True, text=True)
    return len([l for l in p.stdout.splitlines() if l.strip()])


class Run:
    """One server (tern or Linux) on t, for one workload."""

    def __init__(self, a, hosts, stack, app, flags):
        self.a, self.hosts, self.stack = a, hosts, stack
        e = hosts.env
        self.tern = stack == "tern"
        bindir = os.path.join(a.build_dir, "bin")
        cpu = ["taskset", "-c", str(a.server_cpu)]
        if self.tern:
            argv = [os.path.join(bindir, "tern-" + app), "--server", "--driver",
                    "afpacket", "--iface", e["IF_T"], "--cores", str(a.server_cpu),
                    "--poll", "block", "--json"] + flags
        else:
            hosts.kernel_owns_t(True)
            argv = cpu + [os.path.join(bindir, "kern-" + app), "--server",
                          "--poll", "block", "--json"] + flags
        self.argv = argv
        self.proc = hosts.popen("t", argv)
        self.ready = wait_ready(hosts, "k", e["IP_T"], self.proc)
        if not self.tern:
            time.sleep(0.3)     # the listener, after the address answers

    def peer(self, *args, timeout=400):
        argv = ["taskset", "-c", str(self.a.client_cpu), sys.executable, PEER]
        p = self.hosts.run("k", argv + [str(x) for x in args], capture_output=True,
                           text=True, timeout=timeout)
        j = last_json(p.stdout)
        if p.returncode != 0 or not j:
            j = dict(j, error="churn_peer %s rc %s: %s" % (args[0], p.returncode,
                                                          p.stderr.strip()[-300:]))
        return j

    def peer_bg(self, *args):
        argv = ["taskset", "-c", str(self.a.client_cpu), sys.executable, PEER]
        return self.hosts.popen("k", argv + [str(x) for x in args])

    def rss(self):
        return rss_kib(self.proc.pid)

    def finish(self, rec, port):
        """Stop the server, add its figures to rec."""
        if not self.tern:
            rec["linux_established"] = ss_count(self.hosts, "established", port)
            rec["linux_time_wait"] = ss_count(self.hosts, "time-wait", port)
        out, err, rc = stop_by(self.proc, signal.SIGINT, 20)
        if not self.tern:
            self.hosts.kernel_owns_t(False)
        rep = last_json(out)
        if rc != 0 or not rep:
            rec.setdefault("error", "server rc %s: %s" % (rc, err.strip()[-300:]))
        if self.tern and rep:
            c = rep.get("counters", {})
            rec["tern"] = {k: c.get(k, 0) for k in TERN_KEYS}
            rec["tern_open_at_stop"] = rep.get("conns_open_at_stop")
            rec["tern_time_wait_at_stop"] = rep.get("time_wait_at_stop")
            rec["tern_link"] = rep.get("link")
        return rec


def run_close(a, run):
    e = run.hosts.env
    url = "http://%s:%d/" % (e["IP_T"], HTTP_PORT)
    argv = ["taskset", "-c", str(a.client_cpu), "wrk", "-t1", "-c%d" % a.conns,
            "-d%ds" % int(a.duration), "--latency", "-H", "Connection: close", url]
    p = run.hosts.run("k", argv, capture_output=True, text=True, timeout=a.duration + 120)
    rec = {"wrk": " ".join(argv[3:])}
    try:
        w = wrk.parse(p.stdout)
        rec.update(rps=w["rps"], requests=w["requests"], wrk_errors=w["errors"],
                   p50_us=w["p50_us"], p99_us=w["p99_us"])
        if w["errors"]:
            rec["wrk_error_lines"] = [l.strip() for l in p.stdout.splitlines()
                                      if "errors" in l or "Non-2xx" in l]
    except ValueError as ex:
        rec["error"] = "wrk: %s %s" % (ex, p.stderr.strip()[-200:])
    # TIME_WAIT on the clients' side: connections wrk closed first
    rec["client_time_wait"] = ss_count(run.hosts, "time-wait", HTTP_PORT, "k")
    rec["fresh"] = run.peer("fresh", e["IP_T"], HTTP_PORT, "http")
    return run.finish(rec, HTTP_PORT)


def stall(a, run, port, kind, peer_args, fresh_at, budget):
    """churn_peer.py in the background (peer_args); a fresh connection of
    `kind` fresh_at seconds in; the server's RSS at the start, then and at
    the end. Returns the record with the peer's figures."""
    rss0 = run.rss()
    bg = run.peer_bg(*peer_args)
    time.sleep(fresh_at)
    rec = {"fresh_during": run.peer("fresh", run.hosts.env["IP_T"], port, kind),
           "rss_kib": [rss0, run.rss()]}
    out, err, rc = stop(bg, budget)
    got = last_json(out)
    rec.update(got)
    if rc != 0 or not got:
        rec["error"] = "churn_peer %s rc %s: %s" % (peer_args[0], rc, err.strip()[-300:])
    return rec


def run_idle(a, run):
    ip = run.hosts.env["IP_T"]
    # the fresh echo half-way through the hold, once every connect is done
    rec = stall(a, run, ECHO_PORT, "echo", ("idle", ip, ECHO_PORT, a.idle_conns, a.hold),
                min(a.hold / 2 + 5, a.hold), a.hold + 300)
    rec["fresh_after"] = run.peer("fresh", ip, ECHO_PORT, "echo")
    rec["rss_kib"].append(run.rss())
    time.sleep(1)       # the clients' FINs, before the stop reads the slots
    return run.finish(rec, ECHO_PORT)


def run_slow(a, run):
    ip = run.hosts.env["IP_T"]
    rec = stall(a, run, HTTP_PORT, "http",
                ("slow", ip, HTTP_PORT, a.slow_clients, a.slow_reqs, a.slow_wait),
                a.slow_wait / 2, a.slow_wait + 300)
    rec["rss_kib"].append(run.rss())
    time.sleep(1)
    return run.finish(rec, HTTP_PORT)


WORKLOADS = {
    "close": ("httpd", lambda a: [], run_close),
    "idle": ("echo", lambda a: ["--port", str(ECHO_PORT)], run_idle),
    "slow": ("httpd", lambda a: ["--body-size", str(a.body_size)], run_slow),
}


def one(a, hosts, stack, wl):
    app, flags, fn = WORKLOADS[wl]
    rec = {"stack": stack, "workload": wl, "loadavg": os.getloadavg()[0],
           "start": datetime.datetime.utcnow().strftime("%H:%M:%S")}
    run = Run(a, hosts, stack, app, flags(a))
    rec["server"] = " ".join(run.argv)
    try:
        if not run.ready:
            out, err, _ = stop_by(run.proc, signal.SIGINT, 5)
            rec["error"] = "server did not come up: " + err.strip()[-300:]
            if not run.tern:
                hosts.kernel_owns_t(False)
            return rec
        rec.update(fn(a, run))
    finally:
        if run.proc.poll() is None:
            os.killpg(run.proc.pid, signal.SIGKILL)
    rec["loadavg_end"] = os.getloadavg()[0]
    return rec


def summary(r):
    """One line per run for the table."""
    if r["workload"] == "close":
        s = "%.0f req/s, %d wrk errors; fresh GET %s" % (
            r.get("rps", 0), r.get("wrk_errors", -1), fresh(r.get("fresh")))
        s += "; client TIME_WAIT %s" % r.get("client_time_wait")
        if r.get("wrk_error_lines"):
            s += " (wrk: %s)" % "; ".join(r["wrk_error_lines"])
    elif r["workload"] == "idle":
        s = "%s of %s echo; fresh echo during %s, after %s; RSS %s MiB" % (
            r.get("echoed"), r.get("opened"), fresh(r.get("fresh_during")),
            fresh(r.get("fresh_after")), mib(r.get("rss_kib")))
    else:
        s = "%s of %s clients complete (least %s); fresh GET during %s; RSS %s MiB" % (
            r.get("complete"), r.get("opened"), r.get("least"),
            fresh(r.get("fresh_during")), mib(r.get("rss_kib")))
    if r["stack"] == "tern" and "tern" in r:
        t = r["tern"]
        s += "; slots held at stop %s, TIME_WAIT %s; cookies ok %d, table full %d" % (
            r.get("tern_open_at_stop"), r.get("tern_time_wait_at_stop"),
            t["tcp_syn_cookies_ok"], t["tcp_drop_conn_table_full"])
        if r["workload"] == "close":
            s += ", TIME_WAIT reused %d" % t["tcp_time_wait_reuse"]
        if r["workload"] == "slow":
            s += ", rx-reserve refusals %d, writable calls %d, nobuf %d" % (
                t["tcp_send_rx_reserve"], t["tcp_writable_calls"], t["tcp_nobuf"])
    elif "linux_established" in r:
        s += "; established at end %d, TIME_WAIT %d" % (r["linux_established"],
                                                        r["linux_time_wait"])
    if "error" in r:
        s += "; ERROR " + r["error"][:200]
    return s


def fresh(f):
    if not f:
        return "-"
    if "error" in f or not f.get("ok"):
        return "FAILED"
    return "%.0f ms" % (f["seconds"] * 1000)


def mib(v):
    return " -> ".join("%.0f" % (x / 1024) for x in v) if v else "-"


def parser():
    p = argparse.ArgumentParser(prog="tern bench churn", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default="close,idle,slow", metavar="LIST",
                   help="close, idle, slow (default all)")
    p.add_argument("--stacks", default="tern,linux", metavar="LIST",
                   help="tern (AF_PACKET), linux (default both)")
    p.add_argument("--repeat", type=int, default=2, metavar="N",
                   help="runs per stack and workload (default 2)")
    p.add_argument("--duration", type=float, default=60, metavar="S",
                   help="close: wrk seconds (default 60)")
    p.add_argument("--conns", type=int, default=50, metavar="N",
                   help="close: wrk connections (default 50)")
    p.add_argument("--idle-conns", type=int, default=10000, metavar="N",
                   help="idle: connections held (default 10000; the client needs "
                        "that many files)")
    p.add_argument("--hold", type=float, default=30, metavar="S",
                   help="idle: seconds the connections stay idle (default 30)")
    p.add_argument("--slow-clients", type=int, default=200, metavar="N",
                   help="slow: clients (default 200)")
    p.add_argument("--slow-reqs", type=int, default=2000, metavar="N",
                   help="slow: pipelined GETs per client (default 2000)")
    p.add_argument("--slow-wait", type=float, default=60, metavar="S",
                   help="slow: seconds the clients read nothing (default 60)")
    p.add_argument("--body-size", type=int, default=1000, metavar="B",
                   help="slow: response body bytes (default 1000)")
    p.add_argument("--server-cpu", type=int, metavar="N",
                   help="CPU of the server (default the last)")
    p.add_argument("--client-cpu", type=int, default=0, metavar="N",
                   help="CPU of the clients (default 0)")
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"), metavar="DIR",
                   help="CMake build tree with bin/tern-httpd, tern-echo, kern-httpd, "
                        "kern-echo (default build/)")
    p.add_argument("--out", metavar="FILE",
                   help="JSON file (default <build-dir>/bench-churn/<date>.json)")
    return p


def run_all(a, hosts, wls, stacks, runs):
    """Every workload --repeat times, the stacks' order alternating."""
    for rep in range(a.repeat):
        for wl in wls:
            order = stacks if rep % 2 == 0 else list(reversed(stacks))
            for s in order:
                r = one(a, hosts, s, wl)
                runs.append(r)
                sys.stderr.write("%s %s %s: %s\n" % (r["start"], wl, s, summary(r)))


def main(argv):
    a = parser().parse_args(argv)
    interrupt_on_sigterm()
    if os.geteuid() != 0:
        sys.stderr.write("tern bench churn: needs root (network namespaces)\n")
        return 2
    wls = [w for w in a.workloads.split(",") if w]
    stacks = [s for s in a.stacks.split(",") if s]
    bad = [w for w in wls if w not in WORKLOADS] + [s for s in stacks
                                                    if s not in ("tern", "linux")]
    if bad:
        sys.stderr.write("tern bench churn: unknown workload or stack: %s\n" % ", ".join(bad))
        return 2
    for w in wls:
        app = WORKLOADS[w][0]
        for prog in ("tern-" + app, "kern-" + app):
            if not os.access(os.path.join(a.build_dir, "bin", prog), os.X_OK):
                sys.stderr.write("tern bench churn: %s/bin/%s not built\n" % (a.build_dir, prog))
                return 2
    if a.server_cpu is None:
        a.server_cpu = (os.cpu_count() or 1) - 1
    hosts = Hosts("tc%d" % (os.getpid() % 100000))
    doc = result_doc("churn, idle connections, slow readers (tools/bench/churn.py)", argv)
    runs = doc["runs"]
    run_in_hosts(hosts, doc, lambda: run_all(a, hosts, wls, stacks, runs))
    out = write_result(doc, a.out, a.build_dir, "churn")
    print("\n".join(markdown.table(["workload", "stack", "load", "result"],
                                   [[r["workload"], r["stack"], "%.1f" % r["loadavg"],
                                     summary(r)] for r in runs])))
    print(result_line(doc, out))
    return 1 if any("error" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
