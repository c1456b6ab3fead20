"""tern bench scaling: how tern's throughput grows from one core to two,
on the in-memory link and over DPDK net_memif.

mem: one process; with --cores 0 one thread runs a server and a client
stack over its own in-memory link; with --cores 0,1 each of the two threads
runs its own such pair (nothing shared). Echo keeps the load per core the
same (16 connections per core), bulk runs one stream per core.

memif (--links memif; root and a DPDK build): two processes, a tern-echo
or tern-bulk server and its client, joined by net_memif, with one queue per
core on both sides. On a two-CPU machine one
queue per side already takes both CPUs (server on CPU 0, client on CPU 1);
two queues per side put four busy-polling threads on two CPUs, which only
works because an idle queue yields its CPU (driver option idle_yield=64,
--memif-opts); without it they take turns by scheduler tick.

The 1-core and 2-core runs alternate (warm-up pair first, discarded), so a
change in the machine's load hits both alike. Every run records the load
average before it, the CPUs the rest of the machine used during it, and the
CPUs our processes got; with --quiet-wait each pair first waits for the
machine to calm down. Prints a Markdown table and writes the runs as JSON
(--out; --report prints the table of such a file again).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

from . import hostinfo, measure, procs, stats

EAL = "--no-huge -m 256 --no-pci --no-shconf --no-telemetry"


def mem_argv(bindir, work, ncores, a):
    cores = ",".join(str(c) for c in range(ncores))
    if work == "echo":
        return [os.path.join(bindir, "tern-echo"), "--driver", "mem", "--poll", "busy",
                "--cores", cores, "--conns", str(16 * ncores), "--size", "64",
                "--duration", str(a.duration), "--json"]
    return [os.path.join(bindir, "tern-bulk"), "--driver", "mem", "--poll", "busy",
            "--cores", cores, "--conns", str(ncores), "--bytes", a.bulk_bytes, "--json"]


def figure(work, rep):
    return rep["rps"] if work == "echo" else rep["gbps"]


def full_figure(work, rep):
    """The figure in the windows where the host gave the loop its whole
    core (rps_full / gbps_full, see docs/performance.md, "Host speed"),
    None when the run had too few of them."""
    return rep.get("rps_full" if work == "echo" else "gbps_full")


def check(work, rep, what):
    """A run counts only if it did what it was asked."""
    if work == "bulk" and not (rep.get("verified") or rep.get("verify") == "none"):
        raise procs.RunError("%s: payload not verified" % what)
    if work == "echo" and not rep.get("requests"):
        raise procs.RunError("%s: no request completed" % what)


def run_mem(bindir, work, ncores, a):
    argv = mem_argv(bindir, work, ncores, a)
    out, _, _ = procs.run(argv, a.timeout, what=measure.argv_prog(argv))
    rep = procs.parse_json_object(out, measure.argv_prog(argv))
    check(work, rep, measure.argv_prog(argv))
    return argv, rep


def run_memif(bindir, work, ncores, a):
    """Server and client processes over net_memif, ncores queues each. On
    one queue the server takes CPU 0 and the client the last CPU."""
    cpus = hostinfo.online_cpus()
    if ncores == 1:
        srv_cores, cli_cores = str(cpus[0]), str(cpus[-1])
    else:
        srv_cores = cli_cores = ",".join(str(c) for c in cpus[:ncores])
    prog = os.path.join(bindir, "tern-echo" if work == "echo" else "tern-bulk")
    with tempfile.TemporaryDirectory(prefix="tern-scaling.") as d:
        sock = os.path.join(d, "memif.sock")
        vdev = "net_memif0,role=%s,socket=" + sock + ",socket-abstract=no"
        env = dict(os.environ, TERN_DPDK_EAL=EAL, TERN_DPDK_OPTS=a.memif_opts)
        common = ["--driver", "dpdk", "--poll", "busy", "--json"]
        if work == "echo":
            srv = [prog, "--server", "--size", "64"]
            cli = [prog, "--client", "198.18.0.1:7007", "--size", "64",
                   "--conns", str(16 * ncores), "--duration", str(a.duration)]
        else:
            srv = [prog, "--server", "--once", "--conns", str(ncores), "--verify", "pattern"]
            cli = [prog, "--client", "198.18.0.1:5001", "--conns", str(ncores),
                   "--bytes", a.memif_bulk_bytes]
        srv += common + ["--iface", vdev % "server", "--ip", "198.18.0.1/24",
                         "--cores", srv_cores]
        cli += common + ["--iface", vdev % "client", "--ip", "198.18.0.2/24",
                         "--cores", cli_cores]
        sp = subprocess.Popen(srv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, env=env,
                              start_new_session=True)
        try:
            t0 = time.time()
            while not os.path.exists(sock):
                if sp.poll() is not None or time.time() - t0 > 20:
                    raise procs.RunError("memif server did not start: %s"
                                         % procs.last_line(sp.stderr.read() if sp.poll() is not None else ""))
                time.sleep(0.05)
            cp = subprocess.run(cli, capture_output=True, text=True, env=env,
                                timeout=a.timeout)
            if cp.returncode != 0:
                raise procs.RunError("memif client %s: %s" % (procs.exit_text(cp.returncode),
                                                            procs.last_line(cp.stderr)))
            rep = procs.parse_json_object(cp.stdout, "memif client")
            if work == "echo":
                sp.terminate()
            sout, serr = sp.communicate(timeout=30)
            if work == "bulk":
                srep = procs.parse_json_object(sout, "memif server (%s; stderr: %s)"
                                               % (procs.exit_text(sp.returncode),
                                                  procs.last_line(serr)))
                if not srep.get("verified"):
                    raise procs.RunError("memif bulk: server did not verify the payload")
                rep = srep         # the receiver's figure, as on mem
        finally:
            if sp.poll() is None:
                procs.kill_group(sp)
                sp.communicate()
        check(work, rep, "memif " + work)
    return [srv, cli], rep


def others_busy(seconds):
    """CPUs kept busy by everything else on the machine, averaged over
    `seconds` while nothing of ours runs."""
    b0, t0 = procs.cpu_busy_seconds(), time.time()
    time.sleep(seconds)
    return (procs.cpu_busy_seconds() - b0) / (time.time() - t0)


def wait_quiet(a):
    """Until the others use less than --quiet-below CPUs (at most
    --quiet-wait seconds); returns what they used last."""
    t0 = time.time()
    while True:
        busy = others_busy(2)
        if busy < a.quiet_below or time.time() - t0 >= a.quiet_wait:
            return busy
        sys.stderr.write("[scaling] others use %.2f CPUs: waiting\n" % busy)


def measured(fn, bindir, work, n, a):
    """One run, with the CPUs the rest of the machine used meanwhile (all
    busy CPU time minus ours, over the wall time)."""
    b0, c0, t0 = procs.cpu_busy_seconds(), procs.children_cpu_seconds(), time.time()
    argv, rep = fn(bindir, work, n, a)
    wall = time.time() - t0
    ours = procs.children_cpu_seconds() - c0
    others = max(0.0, (procs.cpu_busy_seconds() - b0 - ours) / wall)
    return argv, rep, others, ours / wall


def series(label, fn, bindir, work, a, out):
    """Alternating 1-core / 2-core runs; returns the summary row."""
    runs = {1: [], 2: []}
    cmd = {}
    for i in range(a.runs + 1):
        before = wait_quiet(a) if a.quiet_wait > 0 else None
        for n in (1, 2):
            load = measure.loadavg()
            argv, rep, others, ours = measured(fn, bindir, work, n, a)
            cmd[n] = argv
            if i == 0:
                continue              # warm-up pair
            host = rep.get("host_speed") or {}
            runs[n].append({"value": figure(work, rep), "full": full_figure(work, rep),
                            "full_share": host.get("full_share"),
                            "best_ghz": host.get("best_ghz"),
                            "cycles": host.get("cycles_per_unit") or None,
                            "load1": load[0] if load else None,
                            "others_cpus": others, "others_cpus_before": before,
                            "our_cpus": ours})
            full = full_figure(work, rep)
            sys.stderr.write("[scaling] %s %s %d core(s): %.3f, at full speed %s (%.0f%% of "
                             "the time) (load %.2f, others %.2f CPUs, ours %.2f)\n"
                             % (label, work, n, figure(work, rep),
                                "%.3f" % full if full is not None else "-",
                                100 * (host.get("full_share") or 0),
                                load[0] if load else -1, others, ours))
    row = summary(label, work, runs)
    row["argv"] = cmd
    out.append(row)
    return row


def summary(label, work, runs):
    """The row of one link and workload from its runs ({1: [...], 2: [...]})."""
    s1 = stats.summarize(r["value"] for r in runs[1])
    s2 = stats.summarize(r["value"] for r in runs[2])
    return {"link": label, "workload": work, "one": s1, "two": s2,
            "ratio": stats.ratio(s2["median"], s1["median"]),
            "load1": stats.summarize(r["load1"] for r in runs[1] + runs[2]),
            "others": stats.summarize(r["others_cpus"] for r in runs[1] + runs[2]),
            "our_cpus": {n: stats.summarize(r["our_cpus"] for r in runs[n]) for n in (1, 2)},
            # the figure per CPU our processes got: what a core does while
            # it runs, whatever share of it the rest of the machine took
            "per_cpu": {n: stats.summarize(r["value"] / r["our_cpus"] for r in runs[n]
                                           if r["our_cpus"] > 0) for n in (1, 2)},
            # the figure while the host gave each loop its whole core, and
            # the share of the time it did (older result files: none)
            "full": {n: stats.summarize(r.get("full") for r in runs[n]) for n in (1, 2)},
            "full_share": {n: stats.summarize(r.get("full_share") for r in runs[n])
                           for n in (1, 2)},
            # core cycles per round trip (echo) or per byte (bulk) at full
            # speed, one core: the host's clock taken out
            "cycles": stats.summarize(r.get("cycles") for r in runs[1]),
            "runs": runs}


def table(rows):
    lines = ["| link | workload | 1 core (median, min-max) | 2 cores (median, min-max) "
             "| ratio | load avg (1 min) | CPUs used by others | CPUs we got (1 / 2 cores) "
             "| per CPU we got (1 / 2 cores) | at full host speed (1 / 2 cores) "
             "| time at full speed (1 / 2 cores) | cycles per round trip or byte (1 core) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        unit = "req/s" if r["workload"] == "echo" else "Gbit/s"

        def fmt(s):
            if r["workload"] == "echo":
                return "%.2fM (%.2f-%.2f) %s" % (s["median"] / 1e6, s["min"] / 1e6,
                                                s["max"] / 1e6, unit)
            return "%.1f (%.1f-%.1f) %s" % (s["median"], s["min"], s["max"], unit)
        ld, ot = r["load1"], r["others"]
        oc, pc = r["our_cpus"], r["per_cpu"]
        scale = 1e6 if r["workload"] == "echo" else 1.0
        full, share = r.get("full") or {}, r.get("full_share") or {}

        def opt(s, f):
            return f(s) if s else "-"
        lines.append("| %s | %s | %s | %s | %.2fx | %.1f-%.1f | %.2f (%.2f-%.2f) | %.2f / %.2f "
                     "| %.2f / %.2f | %s / %s | %s / %s | %s |"
                     % (r["link"], r["workload"], fmt(r["one"]), fmt(r["two"]),
                        r["ratio"], ld["min"], ld["max"], ot["median"], ot["min"], ot["max"],
                        oc[1]["median"], oc[2]["median"],
                        pc[1]["median"] / scale, pc[2]["median"] / scale,
                        opt(full.get(1), fmt), opt(full.get(2), fmt),
                        opt(share.get(1), lambda s: "%.0f%%" % (100 * s["median"])),
                        opt(share.get(2), lambda s: "%.0f%%" % (100 * s["median"])),
                        opt(r.get("cycles"), lambda s: "%.3g (%.3g-%.3g)" % (s["median"], s["min"],
                                                                          s["max"]))))
    return "\n".join(lines)


def main(argv):
    p = argparse.ArgumentParser(prog="tern bench scaling", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=os.path.join(hostinfo.REPO, "build"),
                   help="CMake build tree with bin/tern-echo, bin/tern-bulk (default build/)")
    p.add_argument("--runs", type=int, default=5, help="measured runs per point (default 5)")
    p.add_argument("--duration", type=float, default=10,
                   help="seconds per echo run (default 10)")
    p.add_argument("--bulk-bytes", default="16G",
                   help="bytes per bulk run on mem, over all streams (default 16G)")
    p.add_argument("--memif-bulk-bytes", default="4G",
                   help="bytes per bulk run over memif (default 4G)")
    p.add_argument("--memif-opts", default="idle_yield=64",
                   help="dpdk driver options of both memif processes (TERN_DPDK_OPTS; "
                        "default idle_yield=64: an idle queue yields its CPU)")
    p.add_argument("--workloads", default="echo,bulk", help="echo,bulk (default both)")
    p.add_argument("--links", default="mem",
                   help="mem, memif or mem,memif (memif: root and a DPDK build)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per process")
    p.add_argument("--quiet-below", type=float, default=0.3, metavar="CPUS",
                   help="before each pair of runs, wait until the rest of the machine "
                        "uses fewer CPUs than this (default 0.3)")
    p.add_argument("--quiet-wait", type=float, default=0, metavar="S",
                   help="wait at most S seconds for that (default 0: do not wait)")
    p.add_argument("--out", help="write the runs as JSON to this file")
    p.add_argument("--report", metavar="FILE.json",
                   help="print the table of an earlier run's JSON instead of running")
    a = p.parse_args(argv)
    if a.report:
        try:
            with open(a.report) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            sys.stderr.write("tern bench scaling: --report %s: %s\n" % (a.report, e))
            return 2
        print(table([summary(r["link"], r["workload"],
                             {int(k): v for k, v in r["runs"].items()})
                     for r in doc["rows"]]))
        return 0
    bindir = os.path.join(a.build_dir, "bin")
    if len(hostinfo.online_cpus()) < 2:
        sys.stderr.write("tern bench scaling: needs at least 2 online CPUs\n")
        return 2
    fns = {"mem": run_mem, "memif": run_memif}
    rows = []
    try:
        for link in a.links.split(","):
            for work in a.workloads.split(","):
                series(link, fns[link], bindir, work, a, rows)
    except (procs.RunError, subprocess.TimeoutExpired, KeyError) as e:
        sys.stderr.write("tern bench scaling: %s\n" % e)
        return 1
    doc = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
           "machine": hostinfo.machine(), "command_line": ["tools/tern", "bench", "scaling"] + argv,
           "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
    print(table(rows))
    return 0
