"""The veth test hosts: two namespaces joined by a veth pair, made by
tools/netns.sh (198.18.0.1 = the kernel side "k", 198.18.0.2 = side "t").

The tern stacks get one pair with no address on the t side (tern owns
198.18.0.2 there). The kern-veth stack gets a second, separate pair and the
kernel's own 198.18.0.2 on its t side, so the two never answer for each
other.

The namespace benches (churn, flood, loss) also share here what runs in the
hosts: the processes started in them (all killed at the end, whatever
happens), the waits for a server, and their JSON result file."""
import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import time

TOOLS_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
REPO = os.path.dirname(TOOLS_DIR)
NETNS_SH = os.path.join(TOOLS_DIR, "netns.sh")

LIVE = []    # every process Hosts.popen started, for kill_live()


class HostsError(RuntimeError):
    pass


def can_make_hosts():
    """None when namespaces can be made here, else the reason why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces); run as root to include it"
    if not os.path.exists(NETNS_SH):
        return "tools/netns.sh is missing"
    for tool in ("ip",):
        if not any(os.access(os.path.join(d, tool), os.X_OK)
                   for d in os.environ.get("PATH", "/usr/sbin:/sbin").split(":") + ["/usr/sbin", "/sbin"]):
            return "iproute2 ('ip') not found"
    return None


class Hosts:
    """One pair of test hosts; `up()` makes them, `down()` removes them.
    wire=True puts a bridge namespace between them, where `loss()` drops
    frames (netns.sh up --wire)."""

    def __init__(self, prefix, kernel_address_on_t=False, queues=1, wire=False):
        self.prefix = prefix
        self.kernel_t = kernel_address_on_t
        self.queues = max(1, queues)   # one rx/tx queue pair per server core
        self.wire = wire
        self.env = {}

    def _sh(self, *args, timeout=60, env=None):
        p = subprocess.run(["sh", NETNS_SH] + list(args), capture_output=True, text=True,
                           timeout=timeout, env=env)
        if p.returncode != 0:
            raise HostsError("netns.sh %s: %s" % (args[0], (p.stderr or p.stdout).strip()[-300:]))
        return p.stdout

    def up(self):
        out = self._sh("up", "--prefix", self.prefix, "--queues", str(self.queues),
                       *(["--wire"] if self.wire else []))
        for line in out.splitlines():
            if "=" in line and not line.startswith("export"):
                k, v = line.split("=", 1)
                self.env[k.strip()] = shlex.split(v)[0] if v.strip() else ""
        for k in ("NS_K", "NS_T", "IF_K", "IF_T", "IP_K", "IP_T", "PREFIX_LEN"):
            if k not in self.env:
                self.down()
                raise HostsError("netns.sh up printed no %s" % k)
        if self.kernel_t:
            cmd = ["ip", "-n", self.env["NS_T"], "addr", "add",
                   "%s/%s" % (self.env["IP_T"], self.env["PREFIX_LEN"]), "dev", self.env["IF_T"]]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                self.down()
                raise HostsError("cannot give the kernel %s: %s" % (self.env["IP_T"], p.stderr.strip()))
        return self

    def down(self):
        try:
            self._sh("down", "--prefix", self.prefix)
        except (HostsError, subprocess.TimeoutExpired):
            pass

    def loss(self, pct):
        """Drops pct% of the frames at random, both ways (0: none)."""
        self._sh("loss", str(pct), "both", env=dict(os.environ, **self.env))

    def in_ns(self, side, argv):
        """argv run inside side 'k' or 't'."""
        ns = self.env["NS_K" if side == "k" else "NS_T"]
        return ["ip", "netns", "exec", ns] + list(argv)

    def run(self, side, argv, **kw):
        """subprocess.run of argv inside side 'k' or 't'."""
        return subprocess.run(self.in_ns(side, argv), **kw)

    def popen(self, side, argv):
        """argv started inside side 'k' or 't' in its own process group,
        text pipes for its output; kill_live() ends it if nothing else does."""
        p = subprocess.Popen(self.in_ns(side, argv), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        LIVE.append(p)
        return p

    def kernel_owns_t(self, yes):
        """Gives the kernel of t the address of t (a Linux row), or takes it
        back (a tern row); k forgets t's MAC either way."""
        e = self.env
        verb = "add" if yes else "del"
        self.run("t", ["ip", "addr", verb, "%s/%s" % (e["IP_T"], e["PREFIX_LEN"]),
                       "dev", e["IF_T"]], capture_output=True)
        self.run("k", ["ip", "neigh", "flush", "dev", e["IF_K"]], capture_output=True)

    def describe(self):
        e = self.env
        return {"ns_k": e.get("NS_K"), "ns_t": e.get("NS_T"), "if_k": e.get("IF_K"),
                "if_t": e.get("IF_T"), "ip_k": e.get("IP_K"), "ip_t": e.get("IP_T"),
                "mtu": e.get("MTU"), "queues": self.queues, "kernel_owns_t": self.kernel_t}


# --- what the namespace benches (churn, flood, loss) run in the hosts --------

def kill_live():
    """SIGKILL to every process popen started that still runs."""
    for p in LIVE:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()


def stop(proc, timeout):
    """Waits up to timeout for proc to exit, then SIGINT, then SIGKILL.
    Returns (stdout, stderr, exit status; None when it had to be stopped)."""
    try:
        out, err = proc.communicate(timeout=timeout)
        return out, err, proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        return out, err, None


def stop_by(proc, sig, timeout):
    """sig to proc's group unless it exited (the apps print their report
    on SIGINT), then stop(proc, timeout)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
    return stop(proc, timeout)


def last_json(text):
    """The last line of text that is a JSON object, {} when none is."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return {}


def wait_ready(hosts, side_from, ip, proc, timeout=15):
    """Until ip answers a ping from side_from; False when proc exits first."""
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        r = hosts.run(side_from, ["ping", "-c", "1", "-W", "1", ip], capture_output=True)
        if r.returncode == 0:
            return True
    return False


def interrupt_on_sigterm():
    """SIGTERM then ends a run as Ctrl-C does: what ran is still written."""
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))


def run_in_hosts(hosts, doc, body):
    """hosts.up(), body(); whatever happens (an error, Ctrl-C, SIGTERM)
    every process started in them is killed and they are removed. An
    interrupt keeps what ran; the load average at the end goes into doc."""
    try:
        hosts.up()
        body()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; writing what ran\n")
    finally:
        kill_live()
        hosts.down()
    doc["loadavg_end"] = os.getloadavg()


def result_doc(what, argv, **more):
    """A bench's JSON document: what ran, when, on which commit, the load
    before; more (the bench's own conditions), then its runs."""
    doc = {"what": what, "date": datetime.datetime.utcnow().isoformat() + "Z",
           "argv": argv, "cpus": os.cpu_count() or 1, "loadavg_start": os.getloadavg(),
           "commit": subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip()}
    doc.update(more)
    doc["runs"] = []
    return doc


def write_result(doc, out, build_dir, name):
    """Writes doc to out, by default <build_dir>/bench-<name>/<date>.json.
    Returns the path."""
    stamp = datetime.datetime.utcnow().strftime("%Y-%m-%dT%H%M%S")
    out = out or os.path.join(build_dir, "bench-" + name, stamp + ".json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    return out


def result_line(doc, out):
    """The line under a bench's table: runs, load, commit, the JSON file."""
    return "\n%d runs, load average %.1f -> %.1f, commit %s, JSON: %s" % (
        len(doc["runs"]), doc["loadavg_start"][0], doc["loadavg_end"][0], doc["commit"], out)
