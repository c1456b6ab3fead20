"""The stacks under test and how each one runs each workload.

A plan says which server to start (if any) and which client to run, as
argv lists; in-process stacks (both ends in one program) have no server.

Every stack has a kind, and figures are compared only within a kind:

  in-memory (both ends in one thread over an in-memory link, no kernel):
    tern-mem       tern over the mem driver
    smoltcp-mem    smoltcp (crates.io), bench/peers/smoltcp
    lwip-mem       lwIP (Debian's liblwip), bench/peers/lwip
  real-path (a server on a veth in a namespace, the kernel's client in another):
    tern-afxdp     tern server on AF_XDP
    tern-afpacket  tern server on AF_PACKET
    kern-veth      the Linux kernel server
  loopback (a reference only: the kernel with both ends on this machine):
    kern-lo        the Linux kernel over loopback
"""
import os

from . import addr, wrk

WORKLOADS = ("rr", "http", "bulk")
WORKLOAD_TITLES = {"rr": "request/response (echo)", "http": "HTTP (keep-alive GET)",
                   "bulk": "bulk transfer"}
KINDS = ("in-memory", "real-path", "loopback")
KIND_TITLES = {
    "in-memory": "in-memory stacks (both ends in one thread, no kernel)",
    "real-path": "real path (server on a veth, Linux client in another namespace)",
    "loopback": "Linux loopback (reference only: not comparable with the others)",
}

# Bulk data paths beyond the application's (tern-mem only): extra flags, and
# what the figure then leaves out. The default path is the application's.
BULK_VARIANTS = {
    "app-sum": (["--app-sum"], "the app hands the stack the payload's checksum"),
    "rxsum": (["--offload", "rxsum"], "the link sums what it copies (CHECKSUM_COMPLETE)"),
    "offload": (["--offload", "csum,tso,lro"],
                "NIC checksums, TSO/LRO, payload passed by reference"),
}


class Plan:
    def __init__(self, client, server=None, parser="json", client_desc="in-process",
                 http_target=None, port=None, kernel_server=False, server_per_run=False):
        self.client = client            # argv(duration, requests) of the load / in-process program
        self.server = server            # argv of a background server, or None
        self.parser = parser            # "json" (tern/kern/smoltcp) or "wrk"
        self.client_desc = client_desc  # who generates the load
        self.http_target = http_target  # (host, port) to check the response size
        self.port = port                # the server's port
        self.kernel_server = kernel_server  # a kernel socket: ready when it listens
        self.server_per_run = server_per_run  # bulk: a --once server per run, the
                                              # receiver's figures are the result


class Env:
    """What the plans need: binaries, CPUs, test hosts, ports."""

    def __init__(self, bin_dir, smoltcp_bin, cpus, make_hosts=None):
        self.bin_dir = bin_dir
        self.smoltcp_bin = smoltcp_bin
        self.cpus = cpus
        # make_hosts(kind, queues) -> netns.Hosts: "tern" (no address on
        # side t) or "kern" (the kernel owns side t); one rx/tx queue per
        # server core, so an N-core server sees all the traffic.
        self._make_hosts = make_hosts
        self._hosts = {}
        self._port = 20000 + os.getpid() % 20000
        self.body_size = wrk.body_for()

    def bin(self, name):
        return os.path.join(self.bin_dir, name)

    def hosts(self, kind, queues):
        """The test hosts of this kind with this many queues, made on first
        use (netns.HostsError when they cannot be)."""
        key = (kind, queues)
        if key not in self._hosts:
            self._hosts[key] = self._make_hosts(kind, queues)
        return self._hosts[key]

    def next_port(self):
        self._port += 1
        return self._port

    def server_cpus(self, n):
        """The CPUs of the stack under test: the last n."""
        return self.cpus[-n:]

    def client_cpus(self):
        """The load generator's CPU: the first one (shared with the server
        when the server takes them all: recorded with every point)."""
        return self.cpus[:1]


def cpulist(cpus):
    return ",".join(str(c) for c in cpus)


def kern_poll(poll):
    """--epoll-timeout: 0 = busy, 1000 = blocking."""
    return ["--epoll-timeout", "0" if poll == "busy" else "1000"]


def tern_poll(poll):
    return ["--poll", poll]


class Stack:
    name = ""
    family = ""        # tern | kern | smoltcp | lwip
    link = ""          # mem | loopback | veth
    kind = ""          # one of KINDS: figures compare only within a kind
    description = ""
    max_cores = 64
    polls = ("busy", "block")
    workloads = WORKLOADS
    twin = None        # the stack it is compared with, of the same kind
    # what to run when it is missing (shown in the error)
    build_hint = "run: make, or cmake --build build"

    def binaries(self, env):
        return []

    def needs_hosts(self):
        return self.link == "veth"

    def hosts(self, env, cores):
        return None

    def plan(self, point, env):
        raise NotImplementedError


# --- in-process stacks -------------------------------------------------------

class TernMem(Stack):
    name, family, link, kind = "tern-mem", "tern", "mem", "in-memory"
    description = "tern, both ends in one process over the mem driver (every frame copied)"

    def binaries(self, env):
        return [env.bin("tern-echo"), env.bin("tern-httpd"), env.bin("tern-bulk")]

    def plan(self, pt, env):
        common = ["--driver", "mem", "--cores", cpulist(env.server_cpus(pt["cores"]))] + \
            tern_poll(pt["poll"]) + ["--json"]
        w = pt["workload"]
        if w == "rr":
            return Plan(lambda d, n: [env.bin("tern-echo"), "--conns", str(pt["conns"]),
                                      "--size", str(pt["size"])] + run_len(d, n) + common)
        if w == "http":
            return Plan(lambda d, n: [env.bin("tern-httpd"), "--conns", str(pt["conns"]),
                                      "--body-size", str(env.body_size)] + run_len(d, n) + common,
                        client_desc="built-in generator")
        extra = BULK_VARIANTS[pt["variant"]][0] if pt.get("variant") else []
        return Plan(lambda d, n: [env.bin("tern-bulk"), "--conns", str(pt["conns"]),
                                  "--bytes", str(pt["bytes"])] + extra + common)


class KernLo(Stack):
    name, family, link, kind = "kern-lo", "kern", "loopback", "loopback"
    description = "the Linux kernel over loopback (echo, bulk: both ends in one process; HTTP: wrk)"

    def binaries(self, env):
        return [env.bin("kern-echo"), env.bin("kern-httpd"), env.bin("kern-bulk")]

    def plan(self, pt, env):
        cores = ["--cores", cpulist(env.server_cpus(pt["cores"]))] + kern_poll(pt["poll"])
        w = pt["workload"]
        if w == "rr":
            return Plan(lambda d, n: [env.bin("kern-echo"), "--conns", str(pt["conns"]),
                                      "--size", str(pt["size"])] + run_len(d, n) + cores + ["--json"])
        if w == "bulk":
            return Plan(lambda d, n: [env.bin("kern-bulk"), "--conns", str(pt["conns"]),
                                      "--bytes", str(pt["bytes"])] + cores + ["--json"])
        port = env.next_port()
        server = [env.bin("kern-httpd"), "--server", "--port", str(port),
                  "--body-size", str(env.body_size)] + cores + ["--json"]
        url = "http://127.0.0.1:%d/" % port
        client = lambda d, n: ["taskset", "-c", cpulist(env.client_cpus())] + \
            wrk.command(url, pt["conns"], d)
        return Plan(client, server, parser="wrk", client_desc="wrk -t1 on CPU %s" %
                    cpulist(env.client_cpus()), http_target=("127.0.0.1", port),
                    port=port, kernel_server=True)


class PeerMem(Stack):
    """A peer stack's program with both ends in one thread (echo, httpd,
    bulk subcommands and tern's JSON), pinned to the stack's CPU."""
    kind, link = "in-memory", "mem"
    max_cores = 1
    polls = ("busy",)
    twin = "tern-mem"

    def program(self, env):
        raise NotImplementedError

    def binaries(self, env):
        prog = self.program(env)
        return [prog] if prog else []

    def plan(self, pt, env):
        pin = ["taskset", "-c", cpulist(env.server_cpus(1)), self.program(env)]
        w = pt["workload"]
        if w == "rr":
            return Plan(lambda d, n: pin + ["echo", "--conns", str(pt["conns"]), "--size",
                                            str(pt["size"]), "--json"] + run_len(d, n))
        if w == "http":
            return Plan(lambda d, n: pin + ["httpd", "--conns", str(pt["conns"]), "--body-size",
                                            str(env.body_size), "--json"] + run_len(d, n),
                        client_desc="built-in generator")
        return Plan(lambda d, n: pin + ["bulk", "--conns", str(pt["conns"]), "--bytes",
                                        str(pt["bytes"]), "--json"])


class SmoltcpMem(PeerMem):
    name, family = "smoltcp-mem", "smoltcp"
    description = ("smoltcp 0.12 (crates.io), both ends in one thread over an in-memory "
                   "link (bench/peers/smoltcp)")
    build_hint = "cargo (rustup, or apt-get install cargo); tern bench builds the peer itself"

    def program(self, env):
        return env.smoltcp_bin


class LwipMem(PeerMem):
    name, family = "lwip-mem", "lwip"
    description = ("lwIP 2.1 (Debian's liblwip, raw API), both ends in one thread over an "
                   "in-memory link (bench/peers/lwip)")
    workloads = ("rr", "bulk")
    build_hint = ("run: apt-get install liblwip-dev (scripts/deps.sh), then "
                  "cmake -S . -B build && cmake --build build --target lwip-peer")

    def program(self, env):
        return env.bin("lwip-peer")


def run_len(duration, requests):
    """--requests N when given, else --duration S."""
    if requests:
        return ["--requests", str(requests)]
    return ["--duration", "%g" % duration]


# --- veth stacks: a server on side t, the kernel's client on side k -----------

class VethStack(Stack):
    link, kind = "veth", "real-path"
    twin = "kern-veth"
    prog = "tern"

    def hosts(self, env, cores):
        return env.hosts("tern", cores)

    def server_args(self, env, h, cores):
        return []

    def server_cpus(self, env, cores):
        return env.server_cpus(cores)

    def binaries(self, env):
        return [env.bin(self.prog + "-echo"), env.bin(self.prog + "-httpd"),
                env.bin(self.prog + "-bulk"), env.bin("kern-echo"), env.bin("kern-bulk")]

    def plan(self, pt, env):
        h = self.hosts(env, pt["cores"])
        ip_t = h.env["IP_T"]
        port = env.next_port()
        poll = tern_poll(pt["poll"]) if self.prog == "tern" else kern_poll(pt["poll"])
        srv_common = ["--server", "--port", str(port), "--cores",
                      cpulist(self.server_cpus(env, pt["cores"]))] + poll + \
            self.server_args(env, h, pt["cores"]) + ["--json"]
        ccpu = cpulist(env.client_cpus())
        kw = {"port": port, "kernel_server": self.prog == "kern"}
        w = pt["workload"]
        if w == "rr":
            server = h.in_ns("t", [env.bin(self.prog + "-echo")] + srv_common)
            client = lambda d, n: h.in_ns("k", [
                env.bin("kern-echo"), "--client", addr.hostport(ip_t, port),
                "--conns", str(pt["conns"]), "--size", str(pt["size"]),
                "--cores", ccpu] + kern_poll(pt["poll"]) + run_len(d, n) + ["--json"])
            return Plan(client, server, client_desc="kern-echo on CPU %s" % ccpu, **kw)
        if w == "http":
            server = h.in_ns("t", [env.bin(self.prog + "-httpd"), "--body-size",
                                   str(env.body_size)] + srv_common)
            url = addr.url(ip_t, port)
            client = lambda d, n: h.in_ns("k", ["taskset", "-c", ccpu] +
                                          wrk.command(url, pt["conns"], d))
            return Plan(client, server, parser="wrk", client_desc="wrk -t1 on CPU %s" % ccpu, **kw)
        server = h.in_ns("t", [env.bin(self.prog + "-bulk"), "--once", "--verify", "pattern",
                               "--conns", str(pt["conns"])] + srv_common)
        client = lambda d, n: h.in_ns("k", [
            env.bin("kern-bulk"), "--client", addr.hostport(ip_t, port), "--conns",
            str(pt["conns"]), "--bytes", str(pt["bytes"]), "--cores", ccpu] +
            kern_poll(pt["poll"]) + ["--json"])
        return Plan(client, server, client_desc="kern-bulk on CPU %s (receiver's figures)" % ccpu,
                    server_per_run=True, **kw)


class TernAfxdp(VethStack):
    name, family = "tern-afxdp", "tern"
    description = "tern server over AF_XDP on a veth (netns t); Linux client in netns k"
    driver = "afxdp"

    def server_args(self, env, h, cores):
        return ["--driver", self.driver, "--iface", h.env["IF_T"],
                "--ip", "%s/%s" % (h.env["IP_T"], h.env["PREFIX_LEN"])]


class TernAfpacket(TernAfxdp):
    name = "tern-afpacket"
    description = ("tern server over AF_PACKET on a veth (netns t); Linux client in netns k; "
                   "with 2+ cores, --steer")
    driver = "afpacket"

    def server_args(self, env, h, cores):
        # AF_PACKET's fanout=hash spreads by the kernel's hash, not tern's:
        # an ARP reply or a flow can land on a core that did not ask for it
        # (docs/drivers.md, "Software steering"). One queue, steered by tern.
        steer = ["--steer"] if cores > 1 else []
        return super().server_args(env, h, cores) + steer

    def server_cpus(self, env, cores):
        # With --steer, core 0 reads the one queue and sends for the
        # others: put it on a CPU the client does not use.
        cpus = env.server_cpus(cores)
        return list(reversed(cpus)) if cores > 1 else cpus


class KernVeth(VethStack):
    name, family = "kern-veth", "kern"
    description = "the Linux kernel server on a veth (netns t); Linux client in netns k"
    prog = "kern"
    twin = None

    def hosts(self, env, cores):
        return env.hosts("kern", cores)


ALL = [TernMem(), SmoltcpMem(), LwipMem(), TernAfxdp(), TernAfpacket(), KernVeth(), KernLo()]
BY_NAME = {s.name: s for s in ALL}
