"""One point of the matrix: start its server (if any), one warm-up run that
is discarded, then --repeat runs; CPU cost per request from /proc/stat (the
whole machine, both ends and the kernel's softirq work) and from the
programs' own user+system time; medians and spread of every figure."""
import os
import time

from . import procs, stats, wrk

# Figures summarized over the repeats, per workload.
# req_per_cpu_s: requests per busy CPU-second of the whole machine (both
# ends, the kernel's softirq work): the CPU cost, comparable across stacks
# that use the CPUs differently (a busy-polling server, a blocking one).
METRICS = {
    "rr": ["rps", "p50_us", "p99_us", "p999_us", "cpu_us_per_req", "own_cpu_us_per_req",
           "req_per_cpu_s"],
    "http": ["rps", "p50_us", "p99_us", "p999_us", "cpu_us_per_req", "own_cpu_us_per_req",
             "req_per_cpu_s"],
    "bulk": ["gbps", "cpu_s_per_gb", "own_cpu_s_per_gb", "retransmits", "gen_pct"],
}

KEEP = ("sender_gbps", "requests", "duration_s", "rps", "p50_us", "p99_us", "p999_us", "mean_us", "max_us",
        "retransmits", "gbps", "bytes", "verified", "errors", "conns", "cores", "size",
        "body_size", "response_bytes", "request_bytes", "program", "driver", "data_path",
        "gen_s", "gen_pct")


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def start_server(plan):
    return procs.Server(plan.server, argv_prog(plan.server), port=plan.port,
                        kernel=plan.kernel_server).start()


def one_run(plan, server, duration, requests, timeout):
    """One client run (with its own --once server when the plan says so):
    the program's figures plus wall time, CPU use, load."""
    argv = plan.client(duration, requests)
    own_server = start_server(plan) if plan.server_per_run else None
    srv = own_server or server
    m0 = procs.cpu_busy_seconds()
    s0 = srv.cpu_seconds() if srv else 0.0
    c0 = procs.children_cpu_seconds()
    t0 = time.monotonic()
    try:
        out, err, ccpu = procs.run(argv, timeout, what=os.path.basename(argv_prog(argv)))
        s1 = srv.cpu_seconds() if srv else 0.0
        if own_server:
            figures = own_server.wait(min(timeout, 30))
            # Reaped now: its time is in RUSAGE_CHILDREN with the client's.
            s0, s1 = 0.0, procs.children_cpu_seconds() - c0 - ccpu
    finally:
        if own_server and own_server.alive():
            own_server.stop()
    wall = time.monotonic() - t0
    m1 = procs.cpu_busy_seconds()
    if server and not server.alive():
        raise procs.RunError("the server exited during the run: %s" % server.stderr_tail())
    if plan.parser == "wrk":
        try:
            res = wrk.parse(out)
        except ValueError as e:
            raise procs.RunError("wrk: %s (stderr: %s)" % (e, procs.last_line(err)))
    else:
        res = procs.parse_json_object(out, argv_prog(argv))
    if own_server:
        # The receiver's view is the result; the sender's rate is kept aside.
        res = dict(figures, sender_gbps=res.get("gbps"))
    run = {k: res[k] for k in KEEP if k in res}
    run["wall_s"] = round(wall, 3)
    run["cpu_s_machine"] = round(m1 - m0, 3)
    srv_cpu = (s1 - s0) if (s0 is not None and s1 is not None) else 0.0
    run["cpu_s_own"] = round(ccpu + srv_cpu, 3)
    run["loadavg"] = loadavg()
    if res.get("requests"):
        run["cpu_us_per_req"] = 1e6 * run["cpu_s_machine"] / res["requests"]
        run["own_cpu_us_per_req"] = 1e6 * run["cpu_s_own"] / res["requests"]
        if run["cpu_s_machine"] > 0:
            run["req_per_cpu_s"] = res["requests"] / run["cpu_s_machine"]
    if res.get("bytes"):
        gb = res["bytes"] / 1e9
        run["cpu_s_per_gb"] = run["cpu_s_machine"] / gb
        run["own_cpu_s_per_gb"] = run["cpu_s_own"] / gb
    return run


def argv_prog(argv):
    """The program under test in an argv that may start with ip netns exec
    NS or taskset -c LIST."""
    a = list(argv)
    while a:
        if a[:3] == ["ip", "netns", "exec"]:
            a = a[4:]
        elif a[:2] == ["taskset", "-c"]:
            a = a[3:]
        else:
            break
    return a[0] if a else "?"


def check_run(pt, run):
    """A run whose result is wrong is a failure, never a number."""
    if pt["workload"] in ("rr", "http") and not run.get("requests"):
        return "no request completed"
    if run.get("errors"):
        return "%d HTTP errors (wrk)" % run["errors"]
    if pt["workload"] == "bulk":
        if not run.get("gbps"):
            return "no throughput figure"
        if run.get("verified") is False:
            return "payload verification failed"
    return None


def run_point(pt, plan, repeat, duration, timeout, progress, label):
    """Runs one point; returns the point dict completed with status, runs,
    summary (and reason on failure)."""
    res = dict(pt)
    res["client"] = plan.client_desc
    res["command"] = plan.client(duration, None)
    res["server_command"] = plan.server
    res["runs"] = []
    res["warmup"] = None
    server = None
    try:
        if plan.server and not plan.server_per_run:
            server = start_server(plan)
            if plan.http_target:
                res["response_bytes_measured"] = wrk.probe_response(*plan.http_target)
        for i in range(repeat + 1):
            progress.status(label, "warm-up" if i == 0 else "run %d/%d" % (i, repeat))
            run = one_run(plan, server, duration, None, timeout)
            bad = check_run(pt, run)
            if bad:
                raise procs.RunError(bad)
            if i == 0:
                res["warmup"] = run
            else:
                res["runs"].append(run)
        res["status"] = "ok"
    except procs.RunError as e:
        res["status"] = "failed"
        res["reason"] = str(e)
    finally:
        if server:
            res["server_figures"] = server.stop()
    res["summary"] = {m: stats.summarize([r.get(m) for r in res["runs"]])
                      for m in METRICS[pt["workload"]]}
    return res


def headline(res):
    """A short result for the progress line."""
    if res["status"] != "ok":
        return "%s: %s" % (res["status"].upper(), res.get("reason", ""))
    s = res["summary"]
    if res["workload"] == "bulk":
        g = s.get("gbps")
        return "%.2f Gbit/s median [%.2f-%.2f]" % (g["median"], g["min"], g["max"])
    r = s.get("rps")
    p = s.get("p99_us")
    return "%.0f req/s median [%.0f-%.0f], p99 %s us" % (
        r["median"], r["min"], r["max"], "%.0f" % p["median"] if p else "-")
