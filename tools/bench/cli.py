"""tern bench: flags, then the run: find out which stacks can run here, run
the matrix point by point, count instructions, write JSON, Markdown, PNGs."""
import argparse
import datetime
import json
import os
import signal
import socket
import subprocess
import sys

from . import callgrind, hostinfo, markdown, matrix, measure, netns, procs, schema, stacks
from .progress import Progress

REPO = hostinfo.REPO
SMOLTCP_DIR = os.path.join(REPO, "bench", "peers", "smoltcp")

DESCRIPTION = """\
Run tern beside smoltcp, lwIP and the Linux kernel and write the results
to BUILD/bench/ (or --out): <date>-<host>.json (every run, with the host's
doctor report, the commit and the command lines), a Markdown report (.md)
and PNG plots (<date>-<host>/). The source tree is left as it was.

Stacks: %s.
Figures are compared only within a kind: in-memory stacks with each other
(tern-mem, smoltcp-mem, lwip-mem: both ends in one thread, no kernel), the
real path with itself (tern on AF_XDP/AF_PACKET and the kernel, each a
server on a veth, with the CPU cost over all CPUs); the kernel over
loopback is a reference with no ratio to anything.
Workloads: rr (echo, 1-64 B, 16 connections per core; busy polling and
blocking), http (151-byte response; wrk for servers on loopback/veth, the
built-in generator for in-memory stacks), bulk (1 and 4 flows: the sender
writes every byte, the stacks compute every checksum, the receiver checks
every byte; tern's shortcuts are extra, labelled rows).

Every point: one warm-up run (discarded), then --repeat runs; the tables
give the median and the min-max spread. Every requested stack must run:
one that cannot (not built, no cargo, not root for the veth namespaces)
stops the bench before it measures, saying why and what to run. Without
--stacks, the veth stacks are requested only when run as root.

Exit status: 0 when every point completed, 1 when a stack cannot run or a
point failed, 2 on bad flags.

subcommands:
  tern bench validate FILE.json   check a result document's shape
  tern bench report FILE.json     rewrite FILE.md and the plots from FILE.json
  tern bench scaling [--links mem,memif]   1 -> 2 cores (--help)
  tern bench kv                   tern-kv, kern-kv, redis-server (--help)
  tern bench loss [--loss 0,1,2,5]   bulk over a lossy veth path, tern beside Linux (--help)
  tern bench flood                echo latency during a spoofed-SYN flood, tern beside Linux (--help)
  tern bench churn [--duration 60]   Connection: close churn, idle connections, slow
                                  readers, tern beside Linux (--help)
""" % ", ".join(s.name for s in stacks.ALL)


def parser():
    p = argparse.ArgumentParser(prog="tern bench", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke mode for CI (< 2 min): one point per stack and workload, "
                        "2 runs of 0.5 s, 64 MiB bulk, small callgrind counts")
    p.add_argument("--repeat", type=int, metavar="N",
                   help="measured runs per point after the warm-up (default 5; quick 2)")
    p.add_argument("--duration", type=float, metavar="S",
                   help="seconds per run of rr and http (default 2; quick 0.5; wrk rounds "
                        "to whole seconds, at least 1)")
    p.add_argument("--stacks", metavar="LIST",
                   help="comma-separated stacks to run (default all: %s; the veth "
                        "ones only as root)" % ",".join(s.name for s in stacks.ALL))
    p.add_argument("--workloads", metavar="LIST", default="rr,http,bulk",
                   help="comma-separated workloads: rr, http, bulk (default all)")
    p.add_argument("--cores", metavar="LIST",
                   help="core counts for the scaling points (default 1,2 capped at the "
                        "online CPUs; quick: the first)")
    p.add_argument("--sizes", metavar="LIST", default="1,64",
                   help="echo message sizes in bytes; the largest is the main one "
                        "(default 1,64)")
    p.add_argument("--flows", metavar="LIST", default="1,4",
                   help="bulk flow counts (default 1,4; quick: the first)")
    p.add_argument("--bulk-bytes", metavar="N",
                   help="bytes per bulk run over all flows, K/M/G suffixes "
                        "(default 1G; quick 64M)")
    p.add_argument("--no-callgrind", action="store_true",
                   help="skip the instructions-per-request count")
    p.add_argument("--callgrind-requests", metavar="SMALL,LARGE",
                   help="round trips of the two callgrind runs (echo, 64 B, 16 "
                        "connections; default 50000,250000; quick 5000,25000)")
    p.add_argument("--build-dir", metavar="DIR", default=os.path.join(REPO, "build"),
                   help="CMake build tree with bin/tern-echo etc. (default build/)")
    p.add_argument("--out", metavar="DIR",
                   help="where to write the results (default BUILD/bench, in the build "
                        "tree: the source tree stays clean)")
    p.add_argument("--name", metavar="STEM",
                   help="file name stem (default <date>-<host>, e.g. 2026-11-22-vm)")
    p.add_argument("--timeout", type=float, metavar="S", default=120.0,
                   help="time limit of one program run (default 120)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


class Usage(Exception):
    pass


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    try:
        if t and t[-1] in mult:
            return int(t[:-1]) * mult[t[-1]]
        return int(t)
    except ValueError:
        raise Usage("--bulk-bytes: '%s' is not a size (e.g. 64M, 1G)" % text)


def settle_options(a):
    """Defaults by mode and checks that argparse cannot do. Raises Usage."""
    a.repeat = a.repeat if a.repeat is not None else (2 if a.quick else 5)
    a.duration = a.duration if a.duration is not None else (0.5 if a.quick else 2.0)
    if a.repeat < 1 or a.repeat > 100:
        raise Usage("--repeat: 1..100 runs")
    if not 0.1 <= a.duration <= 600:
        raise Usage("--duration: 0.1..600 seconds")
    if a.timeout < 5:
        raise Usage("--timeout: at least 5 seconds")
    names = [n for n in a.stacks.split(",") if n] if a.stacks else default_stacks()
    bad = [n for n in names if n not in stacks.BY_NAME]
    if bad:
        raise Usage("--stacks: unknown %s (known: %s)" % (
            ", ".join(bad), ", ".join(stacks.BY_NAME)))
    a.stack_objs = [s for s in stacks.ALL if s.name in names]
    a.workload_list = [w for w in a.workloads.split(",") if w]
    bad = [w for w in a.workload_list if w not in stacks.WORKLOADS]
    if bad or not a.workload_list:
        raise Usage("--workloads: unknown %s (rr, http, bulk)" % ", ".join(bad or ["(none)"]))
    ncpu = len(hostinfo.online_cpus())
    try:
        a.cores_list = matrix.parse_int_list(a.cores or "1,2", "--cores", 1, 256)
        a.size_list = matrix.parse_int_list(a.sizes, "--sizes", 1, 65536)
        a.flow_list = matrix.parse_int_list(a.flows, "--flows", 1, 1024)
    except ValueError as e:
        raise Usage(str(e))
    if a.cores:
        over = [c for c in a.cores_list if c > ncpu]
        if over:
            raise Usage("--cores: %s more than the %d online CPUs" % (over, ncpu))
    a.cores_list = [c for c in a.cores_list if c <= ncpu] or [1]
    a.bulk_bytes_n = parse_size(a.bulk_bytes) if a.bulk_bytes else (
        (64 << 20) if a.quick else (1 << 30))
    if a.bulk_bytes_n < 1 << 16:
        raise Usage("--bulk-bytes: at least 64K")
    cg = a.callgrind_requests or ("5000,25000" if a.quick else "50000,250000")
    try:
        small, large = [int(x) for x in cg.split(",")]
    except ValueError:
        raise Usage("--callgrind-requests: SMALL,LARGE, e.g. 50000,250000")
    if not 0 < small < large:
        raise Usage("--callgrind-requests: 0 < SMALL < LARGE")
    a.cg_small, a.cg_large = small, large
    a.bin_dir = os.path.join(os.path.abspath(a.build_dir), "bin")
    a.out = a.out or os.path.join(os.path.abspath(a.build_dir), "bench")


def default_stacks():
    """Every stack; the veth ones only as root (they make namespaces)."""
    root = os.geteuid() == 0
    return [s.name for s in stacks.ALL if root or not s.needs_hosts()]


# --- availability -------------------------------------------------------------

def build_smoltcp(build_dir, progress):
    """Builds bench/peers/smoltcp; returns (binary, None) or (None, reason)."""
    target = os.path.join(os.path.abspath(build_dir), "smoltcp-peer")
    binary = os.path.join(target, "release", "smoltcp-peer")
    env = dict(os.environ, CARGO_TARGET_DIR=target)
    progress.status("smoltcp-mem", "cargo build --release (bench/peers/smoltcp)")
    try:
        # --locked: Cargo.lock is used as committed, never rewritten
        p = subprocess.run(["cargo", "build", "--release", "--quiet", "--locked",
                            "--manifest-path",
                            os.path.join(SMOLTCP_DIR, "Cargo.toml")],
                           capture_output=True, text=True, env=env, timeout=900)
    except OSError:
        return None, "cargo not found (Rust via rustup, or Debian's cargo)"
    except subprocess.TimeoutExpired:
        return None, "cargo build took more than 15 minutes"
    if p.returncode != 0 or not os.path.exists(binary):
        return None, "cargo build failed: %s" % procs.last_line(p.stderr)[:200]
    return binary, None


def probe(st, env, timeout):
    """A 200-request echo through the stack; None when it works, else why."""
    pt = {"workload": "rr", "stack": st.name, "cores": 1, "conns": 1, "size": 64,
          "poll": "busy" if "busy" in st.polls else st.polls[0]}
    plan = st.plan(pt, env)
    server = None
    try:
        if plan.server and not plan.server_per_run:
            server = measure.start_server(plan)
        out, _, _ = procs.run(plan.client(0, 200), timeout, what=measure.argv_prog(plan.client(0, 200)))
        res = procs.parse_json_object(out, st.name)
        if res.get("requests") != 200:
            return "probe: %s round trips of 200" % res.get("requests")
        return None
    except procs.RunError as e:
        return "probe (200 echo round trips) failed: %s" % e
    finally:
        if server:
            server.stop()


def unbuilt(a, env):
    """{stack: info} of the requested stacks whose programs are missing:
    checked before anything slow (a cargo build, the test hosts) runs."""
    out = {}
    if not os.path.isdir(a.bin_dir):
        where = os.path.relpath(a.build_dir) if a.build_dir.startswith(REPO) else a.build_dir
        out["*"] = {"available": False, "reason": "%s is not built" % where,
                    "fix": "run: make, or cmake -S . -B %s -G Ninja && cmake --build %s; "
                           "or give --build-dir" % (where, where)}
        return out
    for st in a.stack_objs:
        if st.name == "smoltcp-mem":
            continue                    # built by find_available
        missing = sorted(set(b for b in st.binaries(env) if not os.path.exists(b)))
        if missing:
            out[st.name] = {"available": False, "fix": st.build_hint, "reason": "not built: %s"
                            % ", ".join(os.path.relpath(m, REPO) if m.startswith(REPO) else m
                                        for m in missing)}
    return out


def find_available(a, env, progress):
    """{stack: {available, reason, description}} and makes the veth hosts."""
    out = {}
    ns_reason = None
    need_ns = [s for s in a.stack_objs if s.needs_hosts()]
    if need_ns:
        ns_reason = netns.can_make_hosts()
    for st in a.stack_objs:
        info = {"available": False, "description": st.description, "family": st.family,
                "link": st.link, "kind": st.kind, "twin": st.twin}
        out[st.name] = info
        if st.name == "smoltcp-mem":
            env.smoltcp_bin, why = build_smoltcp(a.build_dir, progress)
            if why:
                info["reason"] = why
                continue
        missing = [b for b in st.binaries(env) if not os.path.exists(b)]
        if missing:
            info["reason"] = "not built: %s" % ", ".join(
                os.path.relpath(m, REPO) if m.startswith(REPO) else m for m in missing)
            info["fix"] = st.build_hint
            continue
        if st.needs_hosts():
            if ns_reason:
                info["reason"] = ns_reason
                continue
            try:
                progress.status(st.name, "making the veth test hosts")
                info["hosts"] = st.hosts(env, 1).describe()
            except (netns.HostsError, subprocess.TimeoutExpired) as e:
                info["reason"] = "cannot make the test hosts: %s" % e
                continue
        progress.status(st.name, "probe: 200 echo round trips")
        why = probe(st, env, min(a.timeout, 30))
        if why:
            info["reason"] = why
            continue
        info["available"] = True
    return out


def refusals(avail):
    """One line per requested stack that cannot run: why, and what to run."""
    lines = []
    for name, info in avail.items():
        if not info["available"]:
            fix = info.get("fix") or (
                "run as root, or leave it out of --stacks" if "root" in info.get("reason", "")
                else "see the reason; leave it out of --stacks to go without it")
            if name == "*":
                lines.append("tern bench: %s (%s)" % (info["reason"], fix))
            else:
                lines.append("tern bench: cannot run %s: %s (%s)" % (name, info.get("reason"),
                                                                     fix))
    return lines


# --- outputs ------------------------------------------------------------------

def make_plots(json_path, outdir):
    """Returns ([(title, path)], error or None). Uses this Python when it has
    matplotlib, else the first of /usr/bin/python3, python3 that does."""
    here = os.path.dirname(os.path.realpath(__file__))
    try:
        import matplotlib  # noqa: F401
        from . import plots
        with open(json_path) as f:
            return plots.plot_all(json.load(f), outdir), None
    except ImportError:
        pass
    for py in ("/usr/bin/python3", "python3"):
        try:
            p = subprocess.run([py, "-c", "import matplotlib"], capture_output=True)
            if p.returncode != 0:
                continue
            p = subprocess.run([py, os.path.join(here, "plots.py"), json_path, outdir],
                               capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if p.returncode != 0:
            return [], "plotting failed: %s" % procs.last_line(p.stderr)
        return [tuple(reversed(l.split("\t", 1))) for l in p.stdout.splitlines() if "\t" in l], None
    return [], "no Python with matplotlib (apt-get install python3-matplotlib)"


def write_outputs(doc, a, progress):
    os.makedirs(a.out, exist_ok=True)
    stem = a.name or "%s-%s" % (datetime.date.today().isoformat(), socket.gethostname())
    jpath = os.path.join(a.out, stem + ".json")
    mpath = os.path.join(a.out, stem + ".md")
    pdir = os.path.join(a.out, stem)
    doc["outputs"] = {"json": jpath, "markdown": mpath, "plots_dir": pdir, "plots": []}
    with open(jpath, "w") as f:
        json.dump(doc, f, indent=1)
    progress.note("plotting")
    plots, err = make_plots(jpath, pdir)
    doc["outputs"]["plots"] = [p for _, p in plots]
    if err:
        doc["outputs"]["plots_error"] = err
        progress.note(err)
    with open(jpath, "w") as f:
        json.dump(doc, f, indent=1)
    with open(mpath, "w") as f:
        f.write(markdown.render(doc, plots, a.out))
    return jpath, mpath, plots


# --- the run ------------------------------------------------------------------

# The workload of the instruction counts: named with every figure, since
# the count per round trip depends on it (more connections, fewer per trip).
CALLGRIND_WORKLOAD = {"workload": "rr", "conns": matrix.CONNS_PER_CORE, "size": 64, "cores": 1}


def callgrind_plans(env, avail):
    """[(stack, argv_for(n))] of the in-memory stacks that are available."""
    w = CALLGRIND_WORKLOAD
    echo = ["echo", "--conns", str(w["conns"]), "--size", str(w["size"])]
    plans = []
    if avail.get("tern-mem", {}).get("available"):
        def tern(n, *extra):
            return [env.bin("tern-echo"), "--driver", "mem", "--conns", str(w["conns"]),
                    "--size", str(w["size"]), "--cores", str(env.server_cpus(1)[0]),
                    "--poll", "busy", "--requests", str(n), "--json"] + list(extra)
        plans.append(("tern-mem", tern))
        # the same run over IPv6 (docs/performance.md, "IPv6 beside IPv4")
        plans.append(("tern-mem-ipv6", lambda n: tern(n, "--ip6", "2001:db8::1/64")))
    if avail.get("smoltcp-mem", {}).get("available"):
        plans.append(("smoltcp-mem", lambda n: [env.smoltcp_bin] + echo +
                      ["--requests", str(n), "--json"]))
    if avail.get("lwip-mem", {}).get("available"):
        plans.append(("lwip-mem", lambda n: [env.bin("lwip-peer")] + echo +
                      ["--requests", str(n), "--json"]))
    return plans


def run_callgrind(a, env, avail, progress):
    out = []
    plans = callgrind_plans(env, avail)
    if not plans:
        return out
    why = callgrind.available()
    for name, argv_for in plans:
        label = "callgrind %s" % name
        if why:
            out.append({"stack": name, "status": "unavailable", "reason": why})
            progress.finish(label, why)
            continue
        progress.status(label, "%d and %d round trips" % (a.cg_small, a.cg_large))
        try:
            os.makedirs(os.path.join(os.path.abspath(a.build_dir), "bench-callgrind"), exist_ok=True)
            r = callgrind.measure(name, argv_for, a.cg_small, a.cg_large,
                                  timeout=max(a.timeout, 900),
                                  workdir=os.path.join(os.path.abspath(a.build_dir), "bench-callgrind"))
            r["status"] = "ok"
            r.update(CALLGRIND_WORKLOAD)
            progress.finish(label, "%.0f instructions per round trip" % r["instructions_per_request"])
        except procs.RunError as e:
            r = {"stack": name, "status": "failed", "reason": str(e)}
            progress.finish(label, "FAILED: %s" % e)
        out.append(r)
    return out


def new_doc(a, env, cpus):
    return {
        "schema": schema.SCHEMA,
        "generated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "mode": "quick" if a.quick else "full",
        "command_line": ["tools/tern", "bench"] + a.argv,
        "git": hostinfo.git(),
        "machine": hostinfo.machine(),
        "conditions": {
            "repeat": a.repeat, "warmup_runs": 1, "duration_s": a.duration,
            "bulk_bytes": a.bulk_bytes_n, "conns_per_core": matrix.CONNS_PER_CORE,
            "http_response_bytes": 151, "http_body_size": env.body_size,
            "kern_epoll_timeout_ms": {"busy": 0, "block": 1000},
            "tern_poll": {"busy": "--poll busy", "block": "--poll block"},
            "placement": ("stack under test on the last N of CPUs %s; a separate load "
                          "generator (kern client, wrk) on CPU %d, shared with the stack "
                          "when N = all CPUs; veth pairs with one queue per server core"
                          % (cpus, cpus[0])),
            "loadavg_start": measure.loadavg(),
        },
        "doctor": {}, "stacks": {}, "points": [], "callgrind": [], "outputs": {},
    }


def run_points(a, env, avail, points, progress):
    """Measures every point; returns (results, failures)."""
    results, failed = [], 0
    for p in points:
        st = stacks.BY_NAME[p["stack"]]
        label = p["id"]
        timeout = a.timeout if p["workload"] == "bulk" else a.duration + min(a.timeout, 60)
        try:
            plan = st.plan(p, env)
        except (netns.HostsError, subprocess.TimeoutExpired) as e:
            plan = None
            res = dict(p, status="failed", reason="test hosts: %s" % e, runs=[], summary={})
        if plan:
            res = measure.run_point(p, plan, a.repeat, a.duration, timeout, progress, label)
            if st.needs_hosts():
                res["hosts"] = st.hosts(env, p["cores"]).describe()
        res["kind"] = st.kind
        progress.finish(label, measure.headline(res))
        failed += res["status"] == "failed"
        results.append(res)
    return results, failed


def run(a):
    progress = Progress(0, quiet=a.quiet)
    cpus = hostinfo.online_cpus()
    hosts_made = []

    def make_hosts(kind, queues):
        prefix = "tb%d%s%d" % (os.getpid() % 100000, kind[0], queues)
        h = netns.Hosts(prefix, kernel_address_on_t=(kind == "kern"), queues=queues)
        h.up()
        hosts_made.append(h)
        return h

    env = stacks.Env(a.bin_dir, None, cpus, make_hosts)
    doc = new_doc(a, env, cpus)
    failed = 0
    try:
        avail = unbuilt(a, env) or find_available(a, env, progress)
        refused = refusals(avail)
        if refused:
            for line in refused:
                sys.stderr.write(line + "\n")
            sys.stderr.write("tern bench: nothing measured\n")
            return 1
        doc["stacks"] = avail
        progress.note("auditing the host (tern doctor)")
        doc["doctor"] = hostinfo.doctor(cpus)
        points = matrix.build(a.stack_objs, a.workload_list, a.quick, a.cores_list,
                              a.size_list, a.flow_list, a.bulk_bytes_n)
        progress.total = len(points) + (0 if a.no_callgrind else
                                        len(callgrind_plans(env, avail)))
        doc["points"], failed = run_points(a, env, avail, points, progress)
        if not a.no_callgrind:
            doc["callgrind"] = run_callgrind(a, env, avail, progress)
            failed += sum(1 for c in doc["callgrind"] if c.get("status") == "failed")
    finally:
        for h in hosts_made:
            h.down()
    doc["conditions"]["loadavg_end"] = measure.loadavg()
    jpath, mpath, plots = write_outputs(doc, a, progress)
    bad = schema.problems(doc)
    for b in bad:
        progress.note("schema: %s" % b)
    progress.note("wrote %s, %s and %d plots in %s" % (
        jpath, mpath, len(plots), doc["outputs"]["plots_dir"]))
    if failed:
        progress.note("%d point(s) failed: see the reasons in the table" % failed)
    return 1 if (failed or bad) else 0


def validate(argv):
    if len(argv) != 1 or argv[0].startswith("-"):
        sys.stderr.write("usage: tern bench validate FILE.json\n")
        return 2
    try:
        bad = schema.validate_file(argv[0])
    except (OSError, ValueError) as e:
        sys.stderr.write("tern bench validate: %s\n" % e)
        return 1
    for b in bad:
        print(b)
    print("%s: %s" % (argv[0], "ok" if not bad else "%d problem(s)" % len(bad)))
    return 1 if bad else 0


def report(argv):
    """Re-renders the Markdown and the plots of a saved result document."""
    if len(argv) != 1 or argv[0].startswith("-") or not argv[0].endswith(".json"):
        sys.stderr.write("usage: tern bench report FILE.json\n")
        return 2
    jpath = os.path.abspath(argv[0])
    try:
        with open(jpath) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("tern bench report: %s\n" % e)
        return 1
    stem = jpath[:-len(".json")]
    plots, err = make_plots(jpath, stem)
    doc["outputs"].update(markdown=stem + ".md", plots_dir=stem, plots=[p for _, p in plots])
    if err:
        doc["outputs"]["plots_error"] = err
    with open(stem + ".md", "w") as f:
        f.write(markdown.render(doc, plots, os.path.dirname(jpath)))
    print("wrote %s.md and %d plots" % (stem, len(plots)))
    return 0


def main(argv):
    if argv and argv[0] == "validate":
        return validate(argv[1:])
    if argv and argv[0] == "report":
        return report(argv[1:])
    if argv and argv[0] == "scaling":
        from . import scaling
        return scaling.main(argv[1:])
    if argv and argv[0] == "kv":
        from . import kv
        return kv.main(argv[1:])
    if argv and argv[0] == "loss":
        from . import loss
        return loss.main(argv[1:])
    if argv and argv[0] == "flood":
        from . import flood
        return flood.main(argv[1:])
    if argv and argv[0] == "churn":
        from . import churn
        return churn.main(argv[1:])
    p = parser()
    a = p.parse_args(argv)   # exits 2 on a bad flag
    a.argv = list(argv)
    try:
        settle_options(a)
    except Usage as e:
        p.print_usage(sys.stderr)
        sys.stderr.write("tern bench: error: %s\n" % e)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    return run(a)
