"""The veth test hosts: two namespaces joined by a veth pair, made by
tools/netns.sh (198.18.0.1 = the kernel side "k", 198.18.0.2 = side "t").

The tern stacks get one pair with no address on the t side (tern owns
198.18.0.2 there). The kern-veth stack gets a second, separate pair and the
kernel's own 198.18.0.2 on its t side, so the two never answer for each
other."""
import os
import shlex
import subprocess

TOOLS_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
NETNS_SH = os.path.join(TOOLS_DIR, "netns.sh")


class HostsError(Exception):
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
    """One pair of test hosts; `up()` makes them, `down()` removes them."""

    def __init__(self, prefix, kernel_address_on_t=False, queues=1):
        self.prefix = prefix
        self.kernel_t = kernel_address_on_t
        self.queues = max(1, queues)   # one rx/tx queue pair per server core
        self.env = {}

    def _sh(self, *args, timeout=60):
        p = subprocess.run(["sh", NETNS_SH] + list(args), capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0:
            raise HostsError("netns.sh %s: %s" % (args[0], (p.stderr or p.stdout).strip()[-300:]))
        return p.stdout

    def up(self):
        out = self._sh("up", "--prefix", self.prefix, "--queues", str(self.queues))
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

    def in_ns(self, side, argv):
        """argv run inside side 'k' or 't'."""
        ns = self.env["NS_K" if side == "k" else "NS_T"]
        return ["ip", "netns", "exec", ns] + list(argv)

    def describe(self):
        e = self.env
        return {"ns_k": e.get("NS_K"), "ns_t": e.get("NS_T"), "if_k": e.get("IF_K"),
                "if_t": e.get("IF_T"), "ip_k": e.get("IP_K"), "ip_t": e.get("IP_T"),
                "mtu": e.get("MTU"), "queues": self.queues, "kernel_owns_t": self.kernel_t}
