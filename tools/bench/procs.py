"""Running the programs under test: one-shot clients with a time limit,
servers in the background, and the CPU time they use."""
import json
import os
import resource
import signal
import subprocess
import threading
import time


class RunError(Exception):
    """A program failed; the message says how, in one line."""


def cpu_busy_seconds():
    """Busy CPU-seconds of the whole machine so far (/proc/stat: every
    state but idle and iowait, all CPUs)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    ticks = [int(x) for x in fields[:8]]   # user nice system idle iowait irq softirq steal
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid):
    """user + system CPU-seconds of one live process, None when gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def last_line(text):
    lines = [l for l in (text or "").strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""


def parse_json_object(stdout, what):
    """The last line of stdout that is a JSON object."""
    for line in reversed((stdout or "").strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    raise RunError("%s printed no JSON object (stdout: %r)" % (what, last_line(stdout)[:120]))


def run(argv, timeout, what=None):
    """Runs argv to completion. Returns (stdout, stderr, cpu) where cpu is the
    child's user+system seconds. Raises RunError on a non-zero exit or when
    the time limit passes (the process group is killed)."""
    what = what or os.path.basename(argv[0])
    c0 = children_cpu_seconds()
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    except OSError as e:
        raise RunError("cannot start %s: %s" % (what, e))
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        out, err = p.communicate()
        raise RunError("%s did not finish within %.0f s (stderr: %s)"
                       % (what, timeout, last_line(err)[:160] or "-"))
    cpu = children_cpu_seconds() - c0
    if p.returncode != 0:
        raise RunError("%s %s: %s" % (what, exit_text(p.returncode),
                                      last_line(err)[:200] or last_line(out)[:200] or "-"))
    return out, err, cpu


def exit_text(code):
    """'exited with status N' or 'was killed by SIGSEGV'."""
    if code is not None and code < 0:
        try:
            return "was killed by %s" % signal.Signals(-code).name
        except ValueError:
            return "was killed by signal %d" % -code
    return "exited with status %s" % code


def kill_group(p, sig=signal.SIGKILL):
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Server:
    """A server in the background, in its own process group; stopped with
    SIGINT, when it prints its figures."""

    def __init__(self, argv, what, port=None, kernel=False, settle=0.5):
        self.argv = argv
        self.what = what
        self.port = port
        self.kernel = kernel
        self.settle = settle
        self.p = None
        self._err = []
        self._out = []

    def _pump(self, stream, into):
        for line in stream:
            into.append(line)

    def _listening(self):
        """True once the server's network namespace has a TCP listener on
        the port (read through /proc/PID/net/tcp and tcp6, which show the
        namespace of that process; a dual-stack server is only in tcp6)."""
        for table in ("tcp", "tcp6"):
            try:
                with open("/proc/%d/net/%s" % (self.p.pid, table)) as f:
                    next(f)
                    for line in f:
                        fields = line.split()
                        if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == self.port:
                            return True
            except (OSError, StopIteration, IndexError, ValueError):
                pass
        return False

    def start(self, timeout=10.0):
        """Starts the server and waits until it is ready: a kernel server
        until it listens, a tern server (no kernel socket to see) for
        `settle` seconds. RunError when it exits meanwhile."""
        try:
            self.p = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      stdin=subprocess.DEVNULL, text=True,
                                      start_new_session=True)
        except OSError as e:
            raise RunError("cannot start %s: %s" % (self.what, e))
        threading.Thread(target=self._pump, args=(self.p.stderr, self._err), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.p.stdout, self._out), daemon=True).start()
        t0 = time.monotonic()
        while True:
            if self.p.poll() is not None:
                time.sleep(0.05)
                raise RunError("%s %s at start: %s" % (self.what, exit_text(self.p.returncode),
                                                      self.stderr_tail()[:200] or "-"))
            waited = time.monotonic() - t0
            if self.kernel and self.port:
                if self._listening():
                    return self
                if waited > timeout:
                    raise RunError("%s not listening on port %d after %.0f s"
                                   % (self.what, self.port, timeout))
            elif waited >= self.settle:
                return self
            time.sleep(0.01)

    def wait(self, timeout):
        """Waits for a server that exits by itself (--once); its JSON."""
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            kill_group(self.p)
            self.p.wait()
            raise RunError("%s did not exit within %.0f s after the client" % (self.what, timeout))
        time.sleep(0.05)
        if self.p.returncode != 0:
            raise RunError("%s %s: %s" % (self.what, exit_text(self.p.returncode),
                                         self.stderr_tail()[:200] or "-"))
        return parse_json_object("".join(self._out), self.what)

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def cpu_seconds(self):
        return proc_cpu_seconds(self.p.pid) if self.p else None

    def stderr_tail(self):
        return last_line("".join(self._err))

    def stop(self, timeout=5.0):
        """SIGINT, then SIGKILL; returns the server's JSON figures or None."""
        if self.p is None:
            return None
        if self.p.poll() is None:
            kill_group(self.p, signal.SIGINT)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                kill_group(self.p)
                self.p.wait()
        time.sleep(0.05)
        try:
            return parse_json_object("".join(self._out), self.what)
        except RunError:
            return None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
