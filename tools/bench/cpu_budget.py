"""A CPU budget for one process: a cgroup of its own with a CPU quota
(cgroup v2 cpu.max, or v1 cpu.cfs_quota_us), so that every server of a
bench gets the same share of a CPU.

The kernel charges a task for what runs while it is current, softirq work
done inside its system calls included (veth delivers a sent frame to the
peer's stack within the sender's call); work in ksoftirqd or interrupts
on another CPU is not charged to it. nr_throttled says whether the quota
was the limit."""
import os

V2_ROOT = "/sys/fs/cgroup"


def v1_cpu_root(mounts="/proc/mounts"):
    """Where the cgroup v1 cpu controller is mounted, or None."""
    try:
        with open(mounts) as f:
            for line in f:
                dev, where, kind, opts = line.split()[:4]
                if kind == "cgroup" and "cpu" in opts.split(","):
                    return where
    except OSError:
        pass
    return None


def quota_values(cpus, period_us):
    """The quota for `cpus` CPUs per period: (quota_us, period_us); the
    kernel's floor is 1 ms."""
    if not cpus > 0:
        raise ValueError("the CPU budget must be above 0")
    quota = int(round(cpus * period_us))
    if quota < 1000:
        raise ValueError("a budget of %g CPU over %d us is under the kernel's "
                         "1 ms floor" % (cpus, period_us))
    return quota, period_us


class CpuBudget:
    """`with CpuBudget(name, cpus, period_us) as b: b.add(pid)`."""

    def __init__(self, name, cpus, period_us=10000):
        self.quota, self.period = quota_values(cpus, period_us)
        self.name = name
        self.path = None
        self.v2 = False

    def __enter__(self):
        ctl = os.path.join(V2_ROOT, "cgroup.controllers")
        if os.path.exists(ctl) and "cpu" in open(ctl).read().split():
            sub = os.path.join(V2_ROOT, "cgroup.subtree_control")
            if "cpu" not in open(sub).read().split():
                with open(sub, "w") as f:
                    f.write("+cpu")
            self.v2 = True
            self.path = os.path.join(V2_ROOT, self.name)
        else:
            root = v1_cpu_root()
            if not root:
                raise OSError("no cgroup CPU controller (v2 cpu or v1 cpu) "
                              "to set a CPU budget with")
            self.path = os.path.join(root, self.name)
        os.makedirs(self.path, exist_ok=True)
        if self.v2:
            self._write("cpu.max", "%d %d" % (self.quota, self.period))
        else:
            self._write("cpu.cfs_period_us", str(self.period))
            self._write("cpu.cfs_quota_us", str(self.quota))
        return self

    def _write(self, name, text):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(text)

    def add(self, pid):
        """Move the process (all its threads; later ones are born in)."""
        self._write("cgroup.procs", str(pid))

    def throttled(self):
        """Periods in which the quota ran out so far."""
        try:
            with open(os.path.join(self.path, "cpu.stat")) as f:
                for line in f:
                    k, v = line.split()[:2]
                    if k == "nr_throttled":
                        return int(v)
        except OSError:
            pass
        return 0

    def __exit__(self, *exc):
        if self.path:
            try:
                os.rmdir(self.path)
            except OSError:
                pass            # a process still in it: left for the admin
        return False
