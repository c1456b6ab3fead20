"""tern bench kv: the key-value servers against redis-server, measured by
redis-benchmark (or kv-load) over veth test hosts.

    tools/tern bench kv [--quick] [--requests N] [--repeat N] [--stacks LIST]
                        [--clients N] [--client-cpus LIST]
                        [--client redis-benchmark|kv-load] [--cpu-budget F]

Stacks: tern-afxdp and tern-afpacket (tern-kv on that driver, --poll block;
as tern-afxdp-spin, --busy-poll 50: the runtime's adaptive spin of up to
50 us before each sleep, which costs CPU; as tern-afxdp-busy, --poll busy, never sleeping),
kern (kern-kv) and redis (Debian's redis-server, persistence off). Each server runs alone, pinned to the last
CPU. The client is --clients redis-benchmark processes started together
in the other namespace, each with its share of the 50 connections and of
the requests, pinned in turn to the --client-cpus (default: every CPU but
the server's), so that on a machine with the CPUs for it the client
outruns one server core; their requests are summed over the slowest one's
time. For each depth (-P 1 and 16) and test (SET, GET, 3-byte values, one
key) it runs --repeat rounds, each starting every stack's server in turn
for one warm-up and one measured run per point (so every stack meets the
same stretch of load), and keeps the median requests/s, the server's
CPU-seconds per request (its user + system time over the run, from
/proc/<pid>/stat; time the kernel spends for it in softirq on other CPUs
is not in it) and how busy the client processes kept their CPUs (near
100%: the client was the limit, and requests/s says more of the client
than of the server).

Writes <out>/<stem>-kv.json, .md and .png (default out build/bench,
stem <date>-<host>). Exit 0 when every point ran, 1 when one failed, 2 on
bad flags.

--client kv-load uses build/bin/kv-load (apps/kv-load) instead: the same
connections, depth, requests, tests and CPU pinning, but one epoll thread
that spends a fraction of redis-benchmark's CPU per request, so that one
client CPU can outrun one server core (default: one process per client
CPU). The table and plot name the client.

--cpu-budget F gives every server the same CPU budget, at most F CPUs
through a cgroup CPU quota (cgroup v2 cpu.max or v1 cpu.cfs_quota_us,
tools/bench/cpu_budget.py), so that the server rather than the client is
the limit; the kernel charges a server for the softirq work done inside
its own system calls (on veth: delivering its replies into the client's
TCP), and the table says in what share of the quota periods each server
used its budget up.

Below the table, for each tern-kv stack, how its loop waited over each
round (from its --json report): frames received per sleep, and the share
of its waits that were spins (--busy-poll) rather than sleeps."""
import argparse
import datetime
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PORT = 6379
SPIN_US = 50
STACKS = ["tern-afxdp", "tern-afxdp-spin", "tern-afxdp-busy", "tern-afpacket", "kern",
          "redis"]
DEPTHS = [1, 16]
TESTS = ["set", "get"]
CONNS = 50
CLIENTS = ["redis-benchmark", "kv-load"]
BUDGET_PERIOD_US = 10000


def parser():
    p = argparse.ArgumentParser(prog="tern bench kv", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke mode: 20000 requests at depth 1, one measured run")
    p.add_argument("--requests", type=int, metavar="N",
                   help="requests per run at depth 1 (default 100000; depth 16 runs "
                        "8 times as many)")
    p.add_argument("--repeat", type=int, metavar="N",
                   help="measured runs per point after the warm-up (default 3)")
    p.add_argument("--stacks", metavar="LIST", default=",".join(STACKS),
                   help="comma-separated, from %s" % ",".join(STACKS))
    p.add_argument("--build-dir", metavar="DIR", default=os.path.join(REPO, "build"))
    p.add_argument("--out", metavar="DIR",
                   help="where to write the results (default BUILD/bench, in the build tree)")
    p.add_argument("--name", metavar="STEM", help="file name stem (default <date>-<host>)")
    p.add_argument("--quiet-below", type=float, metavar="L",
                   help="before each stack, wait (up to --quiet-wait) until the 1-minute "
                        "load average is below L")
    p.add_argument("--quiet-wait", type=float, metavar="S", default=60.0,
                   help="longest wait for --quiet-below, seconds (default 60)")
    p.add_argument("--clients", type=int, metavar="N",
                   help="client processes per run (default: one per client CPU, "
                        "at least 2 for redis-benchmark)")
    p.add_argument("--client-cpus", metavar="LIST",
                   help="CPUs for the clients, e.g. 0,2-3 (default: all but the server's)")
    p.add_argument("--client", choices=CLIENTS, default="redis-benchmark",
                   help="load client (default redis-benchmark; kv-load is "
                        "build/bin/kv-load, lighter per request)")
    p.add_argument("--cpu-budget", type=float, metavar="F",
                   help="give every server the same CPU budget: at most F CPUs "
                        "(e.g. 0.5) by a cgroup CPU quota over %d ms periods, so "
                        "that the server, not the client, is the limit" % (
                            BUDGET_PERIOD_US // 1000))
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def cpu_list(text):
    """'0,2-3' -> [0, 2, 3]; ValueError on bad input."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    if not out:
        raise ValueError(text)
    return out


def shares(total, k):
    """total split into k parts that differ by at most one."""
    return [total // k + (1 if i < total % k else 0) for i in range(k)]


def wait_quiet(a):
    """The load average once below --quiet-below, or at the end of the wait."""
    end = time.time() + a.quiet_wait
    while a.quiet_below is not None and loadavg()[0] >= a.quiet_below and time.time() < end:
        time.sleep(2)
    return loadavg()


def note(a, msg):
    if not a.quiet:
        sys.stderr.write("[bench kv %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
        sys.stderr.flush()


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


class Server:
    """One server under test in its namespace, pinned to `cpu`."""

    def __init__(self, stack, hosts, bin_dir, cpu, budget=None):
        self.stack = stack
        self.budget = budget
        self.hosts = hosts
        e = hosts.env
        if stack == "redis":
            argv = ["redis-server", "--port", str(PORT), "--bind", e["IP_T"], "--save", "",
                    "--appendonly", "no", "--protected-mode", "no"]
            argv = ["taskset", "-c", str(cpu)] + argv
        elif stack == "kern":
            argv = [os.path.join(bin_dir, "kern-kv"), "--cores", str(cpu), "--port", str(PORT)]
        else:
            drv = stack.split("-")[1]
            argv = [os.path.join(bin_dir, "tern-kv"), "--driver", drv, "--iface", e["IF_T"],
                    "--cores", str(cpu), "--port", str(PORT), "--poll",
                    "busy" if stack.endswith("-busy") else "block"]
            if stack.endswith("-spin"):
                argv += ["--busy-poll", str(SPIN_US)]
            argv.append("--json")      # its report: how its loop waited
        self.argv = argv
        self.report = None
        self.p = subprocess.Popen(hosts.in_ns("t", argv),
                                  stdout=subprocess.PIPE if "--json" in argv
                                  else subprocess.DEVNULL, stderr=subprocess.PIPE)
        if budget:
            # ip netns exec and taskset exec in place: the pid is the server's.
            budget.add(self.p.pid)
        end = time.time() + 20
        while time.time() < end:
            if self.p.poll() is not None:
                raise RuntimeError("%s exited: %s" % (stack, self.p.stderr.read().decode()[-300:]))
            r = subprocess.run(hosts.in_ns("k", ["redis-cli", "-h", e["IP_T"], "-p", str(PORT),
                                                 "PING"]), capture_output=True, text=True)
            if r.stdout.strip() == "PONG":
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("%s did not answer PING within 20 s" % stack)

    def cpu(self):
        return proc_cpu(self.p.pid)

    def throttled(self):
        return self.budget.throttled() if self.budget else 0

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(2)
            try:
                out, _ = self.p.communicate(timeout=15)
                self.report = waits(out)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def waits(out):
    """How a tern-kv run's loop waited, from its --json report: frames
    received, sleeps, and turns whose frames came while it spun; None
    without a report."""
    try:
        j = json.loads(out.decode().strip().splitlines()[-1])
        return {"frames_rx": j["link"]["frames_rx"], "sleeps": j["sleeps"],
                "spin_hits": j["spin_hits"]}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def waits_line(stack, reps):
    """One line on a tern stack's rounds: frames per sleep and the share of
    the waits that were spins, over its rounds (min-max)."""
    reps = [r for r in reps if r]
    if not reps:
        return None

    def span(xs, fmt):
        lo, hi = min(xs), max(xs)
        return fmt % lo if fmt % lo == fmt % hi else (fmt + "-" + fmt) % (lo, hi)
    per_sleep = [r["frames_rx"] / r["sleeps"] for r in reps if r["sleeps"]]
    spun = [100.0 * r["spin_hits"] / (r["spin_hits"] + r["sleeps"]) for r in reps
            if r["spin_hits"] + r["sleeps"]]
    if not per_sleep:
        return "- %s: never slept (%d rounds)" % (stack, len(reps))
    return "- %s: %s frames received per sleep, %s%% of the waits spun (%d rounds)" % (
        stack, span(per_sleep, "%.1f"), span(spun, "%.0f"), len(reps))


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def client_argv(client, bin_dir, cpu, host, conns, depth, reqs, test):
    """The command line of one pinned client process."""
    if client == "kv-load":
        ep = "[%s]:%d" % (host, PORT) if ":" in host else "%s:%d" % (host, PORT)
        tail = [os.path.join(bin_dir, "kv-load"), "-c", str(conns), "-P", str(depth),
                "-n", str(reqs), "-t", test, ep]
    else:
        tail = ["redis-benchmark", "-h", host, "-p", str(PORT), "-c", str(conns),
                "-P", str(depth), "-n", str(reqs), "-t", test, "--csv"]
    return ["taskset", "-c", str(cpu)] + tail


def client_rps(client, test, out):
    """The requests/s one client process printed, or None."""
    rps = None
    for line in out.splitlines():
        if client == "kv-load":
            if line.startswith("{"):
                j = json.loads(line)
                rps = j["rps"] if j.get("test") == test and not j.get("errors") else None
            continue
        f = [x.strip('"') for x in line.split(",")]
        if len(f) > 1 and f[0].upper() == test.upper():
            rps = float(f[1])
    return rps


def bench_once(server, test, depth, n, client_cpus, nclients, client="redis-benchmark",
               bin_dir=""):
    """One run of nclients client processes at once, each with its share of
    the connections and requests: (requests/s summed over the slowest
    process's time, server CPU-seconds, the clients' CPU-seconds, wall
    seconds, periods in which the server's CPU budget ran out)."""
    e = server.hosts.env
    procs = []
    c0, k0, t0, th0 = server.cpu(), children_cpu(), time.time(), server.throttled()
    for i, (conns, reqs) in enumerate(zip(shares(CONNS, nclients), shares(n, nclients))):
        argv = client_argv(client, bin_dir, client_cpus[i % len(client_cpus)], e["IP_T"],
                           conns, depth, reqs, test)
        procs.append((reqs, subprocess.Popen(server.hosts.in_ns("k", argv),
                                             stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, text=True)))
    outs = []
    try:
        for reqs, p in procs:
            out, err = p.communicate(timeout=300)
            outs.append((reqs, p.returncode, out, err))
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    cpu, client_s, wall = server.cpu() - c0, children_cpu() - k0, time.time() - t0
    throttled = server.throttled() - th0
    slowest = 0.0
    for reqs, rc, out, err in outs:
        if rc != 0:
            raise RuntimeError("%s: %s" % (client, (err or out).strip()[-200:]))
        rps = client_rps(client, test, out)
        if not rps:
            raise RuntimeError("%s printed no %s figure: %r" % (client, test, out[-200:]))
        slowest = max(slowest, reqs / rps)
    return n / slowest, cpu, client_s, wall, throttled


def run_round(a, stack, hosts, pts):
    """One round of a stack: start its server, one warm-up and one measured
    run of each of its points, stop it."""
    server = Server(stack, hosts, a.bin_dir, a.server_cpu, a.budget)
    try:
        for depth in DEPTHS:
            for test in TESTS:
                pt = pts[(stack, depth, test)]
                if pt["status"] != "ok":
                    continue
                n = pt["requests"]
                try:
                    bench_once(server, test, depth, max(n // 5, 1000), a.client_cpus,
                               a.clients_n, a.client, a.bin_dir)
                    load = loadavg()
                    rps, cpu, client, wall, throttled = bench_once(server, test, depth, n,
                                                        a.client_cpus, a.clients_n,
                                                        a.client, a.bin_dir)
                    pt["runs"].append({"rps": rps, "server_cpu_s": cpu, "client_cpu_s": client,
                                       "wall_s": wall, "loadavg": load,
                                       "throttled_periods": throttled})
                    note(a, "%-16s -P %-2d %s: %.0f requests/s, server CPU %.2f s, client "
                         "CPUs %.0f%% busy (load %.1f)" % (
                             stack, depth, test.upper(), rps, cpu,
                             100 * client / wall / len(a.client_cpus), load[0]))
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    pt["status"] = "failed"
                    pt["reason"] = str(e)
                    note(a, "%s -P %d %s FAILED: %s" % (stack, depth, test, e))
    finally:
        server.stop()
        if server.report:
            a.waits.setdefault(stack, []).append(server.report)


def summarize(pt, budget_us=0):
    """Medians of a point's runs (budget_us: the quota period of a
    --cpu-budget run, else 0)."""
    if pt["status"] != "ok" or not pt["runs"]:
        return
    n = pt["requests"]
    pt["rps"] = statistics.median(r["rps"] for r in pt["runs"])
    per_cpu = [n / r["server_cpu_s"] for r in pt["runs"] if r["server_cpu_s"] > 0]
    pt["requests_per_cpu_s"] = statistics.median(per_cpu) if per_cpu else None
    pt["loadavg"] = pt["runs"][0]["loadavg"]
    pt["client_cpu_us_per_request"] = statistics.median(1e6 * r["client_cpu_s"] / n
                                                        for r in pt["runs"])
    # How busy the client kept its CPU (1.0: the client was the limit).
    pt["client_cpu_share"] = statistics.median(r["client_cpu_s"] / r["wall_s"]
                                               for r in pt["runs"] if r["wall_s"] > 0)
    if budget_us:
        # The share of the run's quota periods in which the budget ran out
        # (near 1: the budget, not the client, was the limit).
        pt["throttled_share"] = statistics.median(
            min(1.0, r.get("throttled_periods", 0) * budget_us / 1e6 / r["wall_s"])
            for r in pt["runs"] if r["wall_s"] > 0)


def ratio(points, stack, peer, depth, test, key="rps"):
    def get(s):
        for p in points:
            if (p["stack"], p["depth"], p["test"]) == (s, depth, test) and p.get(key):
                return p[key]
        return None
    x, y = get(stack), get(peer)
    return x / y if x and y else None


def markdown(doc):
    pts = doc["points"]
    c = doc["conditions"]
    out = ["# tern bench kv: %s" % doc["generated_at"], "",
           "%s, %d connections over %s process(es), 3-byte values, one key; "
           "server pinned to CPU %s, clients to CPU(s) %s; median of %d rounds (each: every "
           "stack in turn, a warm-up and one run). Load average at start %s, at end %s. "
           "Commit %s." % (
               c.get("client", "redis-benchmark"), CONNS, c.get("clients", 1), c["server_cpu"], c["client_cpu"], c["repeat"],
               c["loadavg_start"], c["loadavg_end"], doc["git"])]
    budget = c.get("cpu_budget")
    if budget:
        out[-1] += (" Every server's CPU budget: %g CPU (a cgroup CPU quota over %d ms "
                    "periods; the kernel work its own system calls do is charged to it); "
                    "'budget spent' is the share of the periods in which the server "
                    "used up its quota." % (budget, BUDGET_PERIOD_US // 1000))
    out += ["",
           "| stack | depth | test | requests/s | requests per server CPU-second "
           "| server CPU us per request | vs redis | client CPU busy | load at start "
           "| client CPU us per request |",
           "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if budget else "")]
    if budget:
        out[-2] += " budget spent |"
    for p in pts:
        if p["status"] != "ok":
            out.append("| %s | %d | %s | failed: %s | | |" % (p["stack"], p["depth"],
                                                            p["test"].upper(), p["reason"]))
            continue
        r = ratio(pts, p["stack"], "redis", p["depth"], p["test"])
        out.append("| %s | %d | %s | %.0f | %s | %s | %s | %s | %s | %s |" % (
            p["stack"], p["depth"], p["test"].upper(), p["rps"],
            "%.0f" % p["requests_per_cpu_s"] if p.get("requests_per_cpu_s") else "-",
            "%.2f" % (1e6 / p["requests_per_cpu_s"]) if p.get("requests_per_cpu_s") else "-",
            "%.2fx" % r if r else "-",
            "%.0f%%" % (100 * p["client_cpu_share"]) if p.get("client_cpu_share") else "-",
            "%.1f" % p["loadavg"][0] if p.get("loadavg") else "-",
            "%.2f" % p["client_cpu_us_per_request"] if p.get("client_cpu_us_per_request")
            else "-"))
        if budget:
            out[-1] += " %s |" % ("%.0f%%" % (100 * p["throttled_share"])
                                  if p.get("throttled_share") is not None else "-")
    lines = [waits_line(s, r) for s, r in doc.get("waits", {}).items()]
    if any(lines):
        out += ["", "How tern-kv's loop waited (its report, per round: the four points "
                "and their warm-ups):", ""] + [x for x in lines if x]
    out += ["", "Plot: %s" % os.path.basename(doc["outputs"]["png"]), ""]
    return "\n".join(out)


def plot(doc, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pts = [p for p in doc["points"] if p["status"] == "ok"]
    stacks = [s for s in STACKS if any(p["stack"] == s for p in pts)]
    groups = [(d, t) for d in DEPTHS for t in TESTS]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, key, title in ((axes[0], "rps", "requests/s"),
                           (axes[1], "requests_per_cpu_s",
                            "server CPU-microseconds per request (log scale)")):
        w = 0.8 / max(1, len(stacks))
        for i, s in enumerate(stacks):
            ys = []
            for d, t in groups:
                v = [p.get(key) for p in pts if (p["stack"], p["depth"], p["test"]) == (s, d, t)]
                y = v[0] if v and v[0] else 0
                ys.append(1e6 / y if y and key == "requests_per_cpu_s" else y)
            ax.bar([g + i * w for g in range(len(groups))], ys, w, label=s)
        ax.set_xticks([g + 0.4 - w / 2 for g in range(len(groups))])
        ax.set_xticklabels(["-P %d %s" % (d, t.upper()) for d, t in groups])
        ax.set_title(title)
    axes[1].set_yscale("log")
    axes[0].legend(fontsize=8)
    c = doc.get("conditions", {})
    fig.suptitle("%s -c %d (%s processes on CPU(s) %s) over veth; server on "
                 "CPU %s%s; load average %s" % (
                     c.get("client", "redis-benchmark"), CONNS, c.get("clients", 1),
                     c.get("client_cpu"), c.get("server_cpu"),
                     ", CPU budget %g CPU (cgroup quota)" % c["cpu_budget"]
                     if c.get("cpu_budget") else "",
                     c.get("loadavg_start", ["?"])[0]))
    fig.tight_layout()
    fig.savefig(png, dpi=100)


def make_plot(doc, jpath, png):
    try:
        import matplotlib  # noqa: F401
        plot(doc, png)
        return None
    except ImportError:
        pass
    r = subprocess.run(["/usr/bin/python3", os.path.realpath(__file__), "plot", jpath, png],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else "plot failed: %s" % r.stderr.strip()[-200:]


def main(argv):
    p = parser()
    a = p.parse_args(argv)
    a.requests_n = a.requests if a.requests is not None else (20000 if a.quick else 100000)
    a.repeat_n = a.repeat if a.repeat is not None else (1 if a.quick else 3)
    stacks = [s for s in a.stacks.split(",") if s]
    bad = [s for s in stacks if s not in STACKS]
    cpus = sorted(os.sched_getaffinity(0))
    a.server_cpu = cpus[-1]
    try:
        a.client_cpus = (cpu_list(a.client_cpus) if a.client_cpus
                         else [c for c in cpus if c != a.server_cpu] or [a.server_cpu])
    except ValueError:
        a.client_cpus = None
    a.clients_n = a.clients if a.clients is not None else max(
        2 if a.client == "redis-benchmark" else 1, len(a.client_cpus or []))
    why = ("unknown stacks %s" % bad if bad else
           "--requests >= 1000, --repeat 1..50" if a.requests_n < 1000
           or not 1 <= a.repeat_n <= 50 else
           "--client-cpus takes a list like 0,2-3" if not a.client_cpus else
           "--clients 1..%d" % CONNS if not 1 <= a.clients_n <= CONNS else
           "--cpu-budget takes CPUs above 0.1, e.g. 0.5" if a.cpu_budget is not None
           and not 0.1 <= a.cpu_budget <= len(cpus) else None)
    if why:
        p.print_usage(sys.stderr)
        sys.stderr.write("tern bench kv: error: %s\n" % why)
        return 2
    a.bin_dir = os.path.join(os.path.abspath(a.build_dir), "bin")
    a.out = a.out or os.path.join(os.path.abspath(a.build_dir), "bench")
    if os.geteuid() != 0:
        sys.stderr.write("tern bench kv: needs root (network namespaces)\n")
        return 1
    if a.client == "kv-load" and not os.access(os.path.join(a.bin_dir, "kv-load"), os.X_OK):
        sys.stderr.write("tern bench kv: %s/kv-load not found (cmake --build BUILD -t "
                         "kv-load)\n" % a.bin_dir)
        return 1
    tools = ("redis-cli",) + (("redis-benchmark",) if a.client == "redis-benchmark" else ())
    for tool in tools + (("redis-server",) if "redis" in stacks else ()):
        if subprocess.run(["sh", "-c", "command -v " + tool], capture_output=True).returncode:
            sys.stderr.write("tern bench kv: %s not found (scripts/deps.sh installs it)\n"
                             % tool)
            return 1
    sys.path.insert(0, os.path.dirname(HERE))
    from bench import netns
    with open("/sys/devices/system/cpu/online") as f:
        online = f.read().strip()
    doc = {"generated_at": datetime.datetime.now(datetime.timezone.utc).strftime(
               "%Y-%m-%dT%H:%M:%SZ"),
           "command_line": ["tools/tern", "bench", "kv"] + list(argv),
           "git": subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip(),
           "conditions": {"server_cpu": a.server_cpu, "client": a.client,
                          "client_cpu": ",".join(map(str, a.client_cpus)),
                          "clients": a.clients_n, "cpus_online": online,
                          "repeat": a.repeat_n, "conns": CONNS, "value_bytes": 3,
                          "cpu_budget": a.cpu_budget,
                          "loadavg_start": loadavg()},
           "points": [], "outputs": {}}
    # Rounds: every stack once per round, so that each stack's runs are
    # spread over the same stretch of time and share its load.
    pts = {}
    for st in stacks:
        for d in DEPTHS:
            for t in TESTS:
                pts[(st, d, t)] = {"stack": st, "depth": d, "test": t, "conns": CONNS,
                                   "client_cpus": len(a.client_cpus),
                                   "requests": a.requests_n * (8 if d > 1 else 1),
                                   "runs": [], "status": "ok"}
    hosts = {}
    a.waits = {}
    a.budget = None
    try:
        if a.cpu_budget:
            from bench.cpu_budget import CpuBudget
            a.budget = CpuBudget("tern-bench-kv-%d" % os.getpid(), a.cpu_budget,
                                 BUDGET_PERIOD_US).__enter__()
        for st in stacks:
            kind = "kern" if st in ("kern", "redis") else "tern"
            if kind not in hosts:
                h = netns.Hosts("tbkv%d%s" % (os.getpid() % 10000, kind[0]),
                                kernel_address_on_t=kind == "kern")
                hosts[kind] = h.up()
        for rnd in range(a.repeat_n):
            for st in stacks:
                load = wait_quiet(a)
                note(a, "round %d/%d, %s (load average %s)" % (rnd + 1, a.repeat_n, st, load))
                try:
                    run_round(a, st, hosts["kern" if st in ("kern", "redis") else "tern"], pts)
                except RuntimeError as e:
                    for (s2, _, _), pt in pts.items():
                        if s2 == st:
                            pt.update(status="failed", reason=str(e))
                    note(a, "%s FAILED: %s" % (st, e))
    except OSError as e:
        sys.stderr.write("tern bench kv: --cpu-budget: %s\n" % e)
        return 1
    finally:
        for h in hosts.values():
            h.down()
        if a.budget:
            a.budget.__exit__(None, None, None)
    for pt in pts.values():
        summarize(pt, BUDGET_PERIOD_US if a.cpu_budget else 0)
    doc["points"] = list(pts.values())
    doc["waits"] = a.waits
    doc["conditions"]["loadavg_end"] = loadavg()
    for s in stacks:
        if s != "redis":
            doc.setdefault("vs_redis_depth1", {})[s] = {
                t: ratio(doc["points"], s, "redis", 1, t) for t in TESTS}
    os.makedirs(a.out, exist_ok=True)
    stem = a.name or "%s-%s" % (datetime.date.today().isoformat(), socket.gethostname())
    base = os.path.join(a.out, stem + "-kv")
    doc["outputs"] = {"json": base + ".json", "markdown": base + ".md", "png": base + ".png"}
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    err = make_plot(doc, base + ".json", base + ".png")
    if err:
        doc["outputs"]["plot_error"] = err
        note(a, err)
    with open(base + ".md", "w") as f:
        f.write(markdown(doc))
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    note(a, "wrote %s.json, .md and .png" % base)
    return 1 if any(p["status"] != "ok" for p in doc["points"]) else 0


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "plot":
    with open(sys.argv[2]) as fh:
        plot(json.load(fh), sys.argv[3])
