#!/usr/bin/python3
"""conformance.py - differential TCP conformance suite: scapy-crafted
segments against the Linux kernel's TCP and against tern.

Run as root with Debian's /usr/bin/python3 (it has python3-scapy):

    /usr/bin/python3 tests/conformance/conformance.py [options]

    --targets linux,tern   which stacks to test (default: linux, plus tern
                           when TERN_CONFORMANCE_TERN=1 is in the environment)
    --bin DIR              where tern-echo lives (default: build/bin)
    --driver NAME          tern driver (default afpacket)
    -k PATTERN             run only cases whose name contains PATTERN
                           (repeatable)
    --list                 list the cases and exit
    --json FILE            write the results as JSON
    --markdown FILE        write the difference table as Markdown
    -v                     print every case's observations

Topology (created per run with unique names, always removed):

    ns tcfN-inj  [veth cNl, no IP] ---- [veth cNL 198.18.10.2-.4]  ns tcfN-lx
                 [veth cNt, no IP] ---- [veth cNT, no IP; tern owns
                                         198.18.11.2-.4]           ns tcfN-tn

The injector's interfaces carry no IP address, so its kernel cannot answer
crafted segments (no RSTs) or ARP; the suite answers ARP for 198.18.1x.1
itself over a raw AF_PACKET socket.  .2 runs the echo server (port 7007),
.3 is where the target's active opens come from (tern-echo --client), .4
runs an HTTP server that closes first after one "Connection: close" request
(port 8080; tern-httpd), for the cases where the target closes first.
With the first target at 198.18.10.0/24 and the second at 198.18.11.0/24.

IPv6 (the cases of cases6.py): the same addresses in 2001:db8:10::/64 and
2001:db8:11::/64 (injector ::1, echo ::2, HTTP ::4). The injector's kernel
keeps IPv6 off on its interfaces and the suite answers Neighbor
Solicitations for ::1 itself. A tern build whose tern-echo has no --ip6
flag has no IPv6: its IPv6 cases are skipped, with that reason.
"""
import argparse
import ctypes
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import tcpinj  # noqa: E402
from tcpinj import CaseFail, CaseSkip  # noqa: E402

ECHO_PORT = 7007
HTTP_PORT = 8080
CLOSED_PORT = 4444
PY = "/usr/bin/python3"
# Cases tern is known to fail, each with what it lacks: they run, and a
# failure is reported as SKIP with that reason (a pass as PASS). Remove an
# entry when tern passes the case.
TERN_EXPECTED_FAIL = {
}


def sh(*cmd, check=True, quiet=False):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r.stdout


def remove_stale(pattern=r"^tcf(\d+)-(inj|lx|tn)$"):
    """Remove namespaces of earlier runs of this suite whose process is gone
    (killed with SIGKILL, e.g. by a ctest timeout). Names are tcf<pid>-*;
    another suite using Topology with its own prefix passes its pattern
    (group 1 = the pid)."""
    for line in sh("ip", "netns", "list", check=False).splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.match(pattern, name)
        if m and not os.path.exists("/proc/%s" % m.group(1)):
            for pid in sh("ip", "netns", "pids", name, check=False).split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            sh("ip", "netns", "del", name, check=False)
            print("removed stale namespace %s" % name)


def _die_with_parent():
    # Children (servers, clients) get SIGKILL if this process dies.
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Topology:
    """Network namespaces and veths of one run; teardown() removes all of
    it (and the processes started in it) and may be called repeatedly."""

    def __init__(self, runid, prefix="tcf"):
        self.runid = runid
        self.prefix = prefix
        self.ns = []
        self.procs = []

    def add_ns(self, suffix):
        name = "%s%s-%s" % (self.prefix, self.runid, suffix)
        sh("ip", "netns", "add", name)
        self.ns.append(name)
        sh("ip", "-n", name, "link", "set", "lo", "up")
        sh("ip", "netns", "exec", name, "sysctl", "-qw",
           "net.ipv6.conf.all.disable_ipv6=1", check=False)
        return name

    def veth(self, ns_a, if_a, ns_b, if_b):
        sh("ip", "link", "add", if_a, "netns", ns_a, "type", "veth",
           "peer", "name", if_b, "netns", ns_b)
        for ns, ifc in ((ns_a, if_a), (ns_b, if_b)):
            for f in ("tx", "rx", "tso", "gso", "gro", "lro", "sg"):
                sh("ip", "netns", "exec", ns, "ethtool", "-K", ifc, f, "off",
                   check=False)
            sh("ip", "netns", "exec", ns, "sysctl", "-qw",
               "net.ipv6.conf.%s.disable_ipv6=1" % ifc, check=False)
            sh("ip", "-n", ns, "link", "set", ifc, "up")

    def mac(self, ns, ifc):
        out = json.loads(sh("ip", "-j", "-n", ns, "link", "show", "dev", ifc))
        return out[0]["address"]

    def spawn(self, ns, cmd, **kw):
        p = subprocess.Popen(["ip", "netns", "exec", ns] + cmd,
                             start_new_session=True,
                             preexec_fn=_die_with_parent, **kw)
        self.procs.append(p)
        return p

    def stop(self, p, grace=2):
        """SIGTERM, then SIGKILL after `grace` seconds."""
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(2)
        if p in self.procs:
            self.procs.remove(p)

    def teardown(self):
        for p in list(self.procs):
            try:
                self.stop(p)
            except Exception:
                pass
        for ns in reversed(self.ns):
            sh("ip", "netns", "del", ns, check=False)
        self.ns = []


# ---------------------------------------------------------------------------
# Targets
# ---------------------------------------------------------------------------

class Target:
    name = "?"
    subnet = None

    def __init__(self, topo, inj_ns, idx):
        self.topo = topo
        self.inj_ns = inj_ns
        self.ns = topo.add_ns(self.short)
        self.inj_if = "c%s%s" % (topo.runid, self.short[0])
        self.if_ = "c%s%s" % (topo.runid, self.short[0].upper())
        topo.veth(inj_ns, self.inj_if, self.ns, self.if_)
        self.my_ip = "198.18.%d.1" % (10 + idx)
        self.my_ip6 = "2001:db8:%d::1" % (10 + idx)
        self.ip6 = "2001:db8:%d::2" % (10 + idx)
        self.http_ip6 = "2001:db8:%d::4" % (10 + idx)
        self.no_ip6 = None       # why the target has no IPv6, if so
        self.expected_fail = {}  # case name -> what the target lacks
        self.ip = "198.18.%d.2" % (10 + idx)
        self.client_ip = "198.18.%d.3" % (10 + idx)
        self.http_ip = "198.18.%d.4" % (10 + idx)
        self.http_port = HTTP_PORT
        self.has_http = True
        self.my_mac = topo.mac(inj_ns, self.inj_if)
        self.echo_port = ECHO_PORT
        self.closed_port = CLOSED_PORT

    def start(self):
        raise NotImplementedError

    def resolve6(self, wire):
        """The target answers NDP for its IPv6 addresses (once started)."""
        if self.no_ip6:
            return
        for ip in (self.ip6, self.http_ip6 if self.has_http else None):
            if ip and not wire.resolve(ip, timeout=10):
                raise RuntimeError("%s does not answer Neighbor Solicitations "
                                   "for %s" % (self.name, ip))

    def start_client(self, inj_ip, port, size):
        raise NotImplementedError

    def alive(self):
        return True


class LinuxTarget(Target):
    name = "linux"
    short = "lx"

    def start(self, wire):
        # Since Linux 6.x the first tcp_syn_linear_timeouts (default 4) SYN
        # retransmissions use a constant RTO instead of RFC 6298 5.5's
        # doubling; the suite tests the RFC behaviour, so turn it off here.
        sh("ip", "netns", "exec", self.ns, "sysctl", "-qw",
           "net.ipv4.tcp_syn_linear_timeouts=0", check=False)
        # ICMPv6 errors: the IPv6 cases draw more than the default one a
        # second per destination (burst 6) that Linux allows (RFC 4443
        # 2.4 (f) asks for a limit, not for this one).
        sh("ip", "netns", "exec", self.ns, "sysctl", "-qw",
           "net.ipv6.icmp.ratelimit=0", check=False)
        for ip in (self.ip, self.client_ip, self.http_ip):
            sh("ip", "-n", self.ns, "addr", "add", ip + "/24", "dev", self.if_)
        # IPv6 on the target's interface only, without DAD (the addresses
        # are usable at once).
        for k in ("accept_dad=0", "disable_ipv6=0"):
            sh("ip", "netns", "exec", self.ns, "sysctl", "-qw",
               "net.ipv6.conf.%s.%s" % (self.if_, k))
        for ip in (self.ip6, self.http_ip6):
            sh("ip", "-n", self.ns, "addr", "add", ip + "/64", "dev",
               self.if_, "nodad")
        self.server = self.topo.spawn(
            self.ns, [PY, os.path.join(HERE, "linux_peer.py"), "server",
                      "--ip", self.ip, "--echo", str(self.echo_port),
                      "--http-ip", self.http_ip, "--http", str(self.http_port),
                      "--ip6", self.ip6, "--http-ip6", self.http_ip6],
            stdout=subprocess.PIPE, text=True)
        line = self.server.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError("linux_peer server did not start")
        if not wire.resolve(self.ip):
            raise RuntimeError("linux target does not answer ARP")
        self.resolve6(wire)

    def start_client(self, inj_ip, port, size):
        return self.topo.spawn(
            self.ns, [PY, os.path.join(HERE, "linux_peer.py"), "client",
                      inj_ip, str(port), str(size), "--bind", self.client_ip],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def alive(self):
        return self.server.poll() is None


class TernTarget(Target):
    name = "tern"
    short = "tn"

    def __init__(self, topo, inj_ns, idx, bindir, driver):
        super().__init__(topo, inj_ns, idx)
        self.bindir = bindir
        self.driver = driver
        self.echo = os.path.join(bindir, "tern-echo")
        self.httpd = os.path.join(bindir, "tern-httpd")
        self.has_http = os.access(self.httpd, os.X_OK)
        self.httpd_proc = None
        self.log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                     "tern-conformance-%s.log" % topo.runid), "w")
        self.no_ip6 = self.ip6_missing()
        self.expected_fail = TERN_EXPECTED_FAIL

    def ip6_missing(self):
        """Why this build's tern has no IPv6 (None when it has): the
        programs take --ip6 when the stack speaks IPv6."""
        try:
            r = subprocess.run([self.echo, "--help"], capture_output=True,
                               text=True, timeout=10)
        except OSError as e:
            return "tern-echo: %s" % e
        if "--ip6 " not in r.stdout:
            return ("tern has no IPv6 in this build (tern-echo takes no "
                    "--ip6)")
        return None

    def link_args(self, ip, ip6=None):
        a = ["--driver", self.driver, "--iface", self.if_, "--ip", ip + "/24"]
        if ip6 and not self.no_ip6:
            a += ["--ip6", ip6 + "/64"]
        return a

    def start(self, wire):
        if not os.access(self.echo, os.X_OK):
            raise RuntimeError("%s is not built" % self.echo)
        self.server = self.topo.spawn(
            self.ns, [self.echo, "--server", "--port", str(self.echo_port)] +
            self.link_args(self.ip, self.ip6), stdout=self.log,
            stderr=self.log)
        if not wire.resolve(self.ip, timeout=10):
            rc = self.server.poll()
            raise RuntimeError("tern-echo --server does not answer ARP%s "
                               "(see %s)" % (
                                   "" if rc is None else
                                   ": it exited with status %d" % rc,
                                   self.log.name))
        if self.has_http:
            # A second tern instance on the same interface, own address.
            self.httpd_proc = self.topo.spawn(
                self.ns, [self.httpd, "--server", "--port", str(self.http_port),
                          "--body-size", "100"] +
                self.link_args(self.http_ip, self.http_ip6),
                stdout=self.log, stderr=self.log)
            if not wire.resolve(self.http_ip, timeout=10):
                raise RuntimeError("tern-httpd --server does not answer ARP "
                                   "(see %s)" % self.log.name)
        self.resolve6(wire)

    def start_client(self, inj_ip, port, size):
        return self.topo.spawn(
            self.ns, [self.echo, "--client", "%s:%d" % (inj_ip, port),
                      "--conns", "1", "--depth", "1", "--size", str(size),
                      "--requests", "1"] + self.link_args(self.client_ip),
            stdout=self.log, stderr=self.log)

    def alive(self):
        return self.server.poll() is None and (
            self.httpd_proc is None or self.httpd_proc.poll() is None)


# ---------------------------------------------------------------------------
# What a case sees
# ---------------------------------------------------------------------------

class Env:
    def __init__(self, target, wire):
        self.target = target
        self.name = target.name
        self.wire = wire
        self.my_ip = target.my_ip
        self.my_ip6 = target.my_ip6
        self.target_ip6 = target.ip6
        self.http_ip6 = target.http_ip6 if target.has_http else None
        self.no_ip6 = target.no_ip6
        self.target_ip = target.ip
        self.client_ip = target.client_ip
        self.echo_port = target.echo_port
        self.closed_port = target.closed_port
        self.http_ip = target.http_ip if target.has_http else None
        self.http_port = target.http_port
        self._port = random.randrange(20000, 40000)
        self.reset_case()

    def reset_case(self):
        self.conns = []
        self.clients = []
        self.bad_csum = []
        self.notes = {}

    def new_port(self):
        self._port += 1
        if self._port > 60000:
            self._port = 20000
        return self._port

    def note(self, key, value):
        """An observation for the difference table (not an assertion)."""
        self.notes[key] = value

    def check(self, cond, msg):
        if not cond:
            raise CaseFail(msg)

    def start_client(self, port, size=64):
        """Make the target connect to us (my_ip:port) from client_ip, send
        `size` bytes, read `size` bytes back and close."""
        p = self.target.start_client(self.my_ip, port, size)
        self.clients.append(p)
        return p

    def listen_port(self):
        return self.new_port()

    def wait_syn(self, port, timeout=5.0, start=None):
        """The target's SYN to our port (from the client address)."""
        s, _ = self.wire.wait(lambda s: s.dport == port and s.syn and
                              not s.is_ack, timeout,
                              0 if start is None else start)
        if s is None:
            raise CaseFail("target did not connect to port %d within %.1fs"
                           % (port, timeout))
        return s

    def cleanup(self):
        for c in self.conns:
            if c.rcv_nxt is not None:
                try:
                    c.send("R", seq=c.snd_nxt, options=[], advance=False)
                except Exception:
                    pass
        for p in self.clients:
            self.target.topo.stop(p)
        self.reset_case()


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

class Interrupted(Exception):
    pass


def _on_signal(signum, frame):
    raise Interrupted("signal %d" % signum)


def run_target(target, cases, verbose):
    wire = tcpinj.Wire(target.inj_ns, target.inj_if, target.my_mac,
                       target.my_ip, [target.ip, target.client_ip,
                                      target.http_ip, target.ip6,
                                      target.http_ip6],
                       my_ip6=target.my_ip6)
    results = {}
    try:
        target.start(wire)
        env = Env(target, wire)
        for c in cases:
            t0 = time.monotonic()
            status, msg = "PASS", ""
            try:
                if not target.alive():
                    raise CaseFail("target process has exited")
                c.fn(env)
                if env.bad_csum:
                    raise CaseFail("segment(s) with a bad TCP checksum: %r"
                                   % env.bad_csum[:3])
            except CaseSkip as e:
                status, msg = "SKIP", str(e)
            except CaseFail as e:
                status, msg = "FAIL", str(e)
            except Interrupted:
                raise
            except Exception as e:
                status, msg = "FAIL", "error: %s: %s" % (
                    type(e).__name__, e)
                if verbose:
                    traceback.print_exc()
            why = target.expected_fail.get(c.name)
            if status == "FAIL" and why:
                status, msg = "SKIP", "expected to fail (%s): %s" % (why, msg)
            notes = dict(env.notes)
            env.cleanup()
            dt = time.monotonic() - t0
            results[c.name] = {"status": status, "msg": msg, "notes": notes,
                               "secs": round(dt, 2)}
            line = "%-4s %-6s %-36s %5.2fs" % (status, target.name, c.name, dt)
            if msg:
                line += "  " + msg
            print(line, flush=True)
            if verbose and notes:
                print("       %s" % json.dumps(notes, default=str))
    except (RuntimeError, OSError) as e:
        print("ERROR %s: %s" % (target.name, e), flush=True)
        for c in cases:
            results.setdefault(c.name, {"status": "FAIL",
                                        "msg": "target setup: %s" % e,
                                        "notes": {}, "secs": 0})
    finally:
        wire.close()
    return results


def fmt_notes(n):
    return ", ".join("%s=%s" % (k, v) for k, v in sorted(n.items()))


def diff_table(cases, res, targets):
    """Rows where the targets' results or observations differ."""
    rows = []
    for c in cases:
        r = [res[t].get(c.name) for t in targets]
        if any(x is None for x in r):
            continue
        statuses = [x["status"] for x in r]
        keys = sorted(set().union(*[x["notes"].keys() for x in r]))
        diffs = []
        for k in keys:
            vals = [x["notes"].get(k, "-") for x in r]
            if len(set(map(str, vals))) > 1:
                diffs.append((k, vals))
        if len(set(statuses)) > 1 or diffs:
            rows.append((c.name, statuses, diffs,
                         [x["msg"] for x in r]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--targets", default=None)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--driver", default="afpacket")
    ap.add_argument("-k", action="append", default=[])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--run-id", default=None, help=argparse.SUPPRESS)
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()

    import cases as casemod
    import cases6  # noqa: F401 (its cases join casemod.CASES)
    cases = [c for c in casemod.CASES
             if not a.k or any(k in c.name for k in a.k)]
    if a.list:
        for c in cases:
            print("%-36s %-24s %s" % (c.name, c.rfc, c.summary))
        print("%d cases" % len(cases))
        return 0
    if os.geteuid() != 0:
        print("SKIP: the conformance suite needs root (network namespaces, "
              "raw sockets)")
        return 77

    if a.targets:
        targets = a.targets.split(",")
    else:
        targets = ["linux"]
        if os.environ.get("TERN_CONFORMANCE_TERN") == "1":
            targets.append("tern")

    remove_stale()
    runid = a.run_id or str(os.getpid())
    topo = Topology(runid)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, _on_signal)
    res = {}
    t_start = time.monotonic()
    try:
        inj = topo.add_ns("inj")
        for i, t in enumerate(targets):
            if t == "linux":
                tgt = LinuxTarget(topo, inj, i)
            elif t == "tern":
                tgt = TernTarget(topo, inj, i, a.bin, a.driver)
            else:
                raise SystemExit("unknown target %s" % t)
            print("== %s (%s, echo on %s:%d, injector %s on %s)" % (
                t, tgt.ns, tgt.ip, tgt.echo_port, tgt.my_ip, tgt.inj_if),
                flush=True)
            t0 = time.monotonic()
            res[t] = run_target(tgt, cases, a.v)
            print("== %s: %.1fs" % (t, time.monotonic() - t0), flush=True)
            # Stop this target's processes before the next one starts.
            for p in list(topo.procs):
                topo.stop(p)
    except Interrupted as e:
        print("interrupted (%s): cleaning up" % e, flush=True)
        topo.teardown()
        return 130
    finally:
        topo.teardown()

    # Summary and difference table.
    if len(targets) > 1:
        rows = diff_table(cases, res, targets)
        print()
        print("Differences (%s):" % " vs ".join(targets))
        if not rows:
            print("  none")
        for name, st, diffs, msgs in rows:
            print("  %-34s %s" % (name, " / ".join(
                "%s %s" % (t, s) for t, s in zip(targets, st))))
            for k, vals in diffs:
                print("      %-20s %s" % (k, " | ".join(
                    "%s: %s" % (t, v) for t, v in zip(targets, vals))))
            for t, s, m in zip(targets, st, msgs):
                if s == "FAIL":
                    print("      %s failure: %s" % (t, m))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"targets": targets, "results": res,
                       "cases": [{"name": c.name, "rfc": c.rfc,
                                  "summary": c.summary} for c in cases]},
                      f, indent=1, default=str)
    if a.markdown:
        write_markdown(a.markdown, cases, res, targets)
    n = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for t in targets:
        for r in res[t].values():
            n[r["status"]] += 1
    print()
    for t in targets:
        c = {"PASS": 0, "FAIL": 0, "SKIP": 0}
        for r in res[t].values():
            c[r["status"]] += 1
        print("%s: %d passed, %d failed, %d skipped" % (
            t, c["PASS"], c["FAIL"], c["SKIP"]))
    print("total time %.1fs" % (time.monotonic() - t_start))
    print("%d passed, %d failed, %d skipped" % (n["PASS"], n["FAIL"], n["SKIP"]))
    return 1 if n["FAIL"] else 0


def write_markdown(path, cases, res, targets):
    with open(path, "w") as f:
        f.write("| case | %s | observations that differ |\n" % " | ".join(targets))
        f.write("|---|%s---|\n" % ("---|" * len(targets)))
        for c in cases:
            r = [res[t].get(c.name, {"status": "-", "notes": {}, "msg": ""})
                 for t in targets]
            diffs = []
            keys = sorted(set().union(*[x["notes"].keys() for x in r]))
            for k in keys:
                vals = [str(x["notes"].get(k, "-")) for x in r]
                if len(set(vals)) > 1:
                    diffs.append("%s: %s" % (k, " / ".join(vals)))
            cells = []
            for x in r:
                cell = x["status"]
                if x["status"] == "FAIL":
                    cell += ": " + x["msg"].replace("|", "/")[:160]
                cells.append(cell)
            f.write("| %s | %s | %s |\n" % (c.name, " | ".join(cells),
                                            "; ".join(diffs).replace("|", "/")))


if __name__ == "__main__":
    sys.exit(main())
