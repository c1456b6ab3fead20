"""Helpers of the interop tests: throw-away test hosts (tools/netns.sh) that
are always removed, tern programs in the tern-side namespace and Linux peers
in the kernel-side one, every process bounded in time and killed on any
failure, and a watchdog that fails the run (with clean-up) before ctest's
own TIMEOUT would kill it without any."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.environ.get("TERN_BIN") or os.path.join(SRC, "build", "bin")
NETNS = os.path.join(SRC, "tools", "netns.sh")
PEER = os.path.join(HERE, "peer.py")
SKIP = 77

# SHA-256 of the first 100 MiB of a bulk stream's pattern (apps/common/
# pattern.h: byte i is byte i%8, little endian, of word w = i/8, which is
# b(w / 8192) + (w % 8192) * STEP, see pattern_period() below), computed
# once in Python with hashlib; pattern_sha256() below recomputes it (~2 s).
MIB100 = 100 << 20
PATTERN_SHA256_100M = \
    "fa430b34c4f65b45ec59c770473c462020fb3dad6f00ee50236e6f73afb5c5b0"
PATTERN_STEP = 0x278DDE6E5FD29
PERIOD_WORDS = 8192


def pattern_base(period):
    """The first word of a 64 KiB period: mix63(period + 1)."""
    m63, k, k2 = (1 << 63) - 1, 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9
    x = ((period + 1) * k) & m63
    x ^= x >> 32
    x = (x * k2) & m63
    return x ^ (x >> 29)


def pattern_period(period):
    """The bytes of one 64 KiB period: a progression from its base."""
    import struct
    base = pattern_base(period)
    return struct.pack("<%dQ" % PERIOD_WORDS,
                       *[base + j * PATTERN_STEP for j in range(PERIOD_WORDS)])


def pattern_sha256(nbytes):
    import hashlib
    assert nbytes % (PERIOD_WORDS * 8) == 0
    h = hashlib.sha256()
    for period in range(nbytes // (PERIOD_WORDS * 8)):
        h.update(pattern_period(period))
    return h.hexdigest()


def pattern_head(n=64):
    """The first n bytes of the pattern, hex."""
    assert n <= PERIOD_WORDS * 8
    return pattern_period(0)[:n].hex()


def last_json(text):
    """The last JSON object line a program printed (its --json report)."""
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError("no JSON report in:\n" + text[-2000:])


def finish_json(tc, p, what, bound_s):
    """Wait up to bound_s for Proc p to exit 0 (else fail test case tc,
    stopping it) and return its JSON report."""
    rc = p.wait(bound_s)
    if rc is None:
        p.stop()
        tc.fail("%s did not finish within %d s:\n%s"
                % (what, bound_s, p.describe()))
    tc.assertEqual(rc, 0, p.describe())
    return last_json(p.out)


def log(msg):
    sys.stderr.write("[interop %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def skip_unless_possible():
    """Exit 77 (ctest SKIP) with one line when this machine cannot host the
    tests: not root, or no network namespaces."""
    def skip(why):
        print("SKIP: %s" % why)
        sys.exit(SKIP)
    if os.geteuid() != 0:
        skip("needs root (network namespaces, AF_PACKET/AF_XDP, raw sockets)")
    if subprocess.run(["sh", "-c", "command -v ip"], capture_output=True
                      ).returncode != 0:
        skip("iproute2 ('ip') is not installed")
    probe = "tern-iprobe-%d" % os.getpid()
    if subprocess.run(["ip", "netns", "add", probe],
                      capture_output=True).returncode != 0:
        skip("cannot create network namespaces here")
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)


class Watchdog:
    """SIGALRM after `seconds`, and SIGTERM/SIGHUP at any time, raise in
    the main thread: the running test fails and every tearDown still runs,
    so hosts and processes are cleaned up even when the run is cut short."""

    class Expired(Exception):
        pass

    expired = False           # later tests fail at once (Base.setUp)

    @classmethod
    def arm(cls, seconds):
        def fire(sig, frame):
            cls.expired = True
            raise cls.Expired("interop watchdog: signal %d after the run's "
                              "time budget or from outside; cleaning up" % sig)
        signal.signal(signal.SIGALRM, fire)
        signal.signal(signal.SIGTERM, fire)
        signal.signal(signal.SIGHUP, fire)
        signal.alarm(int(seconds))


class Hosts:
    """tools/netns.sh hosts with a name unique to this run; `down` always
    removes them (idempotent)."""

    def __init__(self, tag, tap=False, wire=False):
        self.prefix = "ti%d%s" % (os.getpid() % 100000, tag)
        self.envfile = "/tmp/tern-interop-%s.env" % self.prefix
        args = ["sh", NETNS, "up", "--env", self.envfile,
                "--prefix", self.prefix]
        if tap:
            args.append("--tap")
        if wire:
            args.append("--wire")
        self.tap, self.wire = tap, wire
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            self.down()
            raise RuntimeError("netns.sh up failed: %s" % r.stderr.strip())
        self.env = {}
        for line in r.stdout.splitlines():
            if "=" in line and not line.startswith("export"):
                k, v = line.split("=", 1)
                self.env[k] = v.strip("'")
        for k in ("NS_K", "NS_T", "IF_K", "IF_T", "IP_K", "IP_T", "MAC_K",
                  "NS_W", "IP6_K", "IP6_T"):
            setattr(self, k.lower(), self.env.get(k, ""))
        log("hosts %s up (%s%s)" % (self.prefix, "tap" if tap else "veth",
                                     ", wire" if wire else ""))

    def tern_mac(self):
        """The MAC tern uses by default (docs/drivers.md): the veth's own,
        or on a tap the tap's with the local bit set and the last bit
        flipped."""
        mac = subprocess.run(
            ["ip", "netns", "exec", self.ns_t, "cat",
             "/sys/class/net/%s/address" % self.if_t],
            capture_output=True, text=True, check=True).stdout.strip()
        if not self.tap:
            return mac
        b = [int(x, 16) for x in mac.split(":")]
        b[0] |= 0x02
        b[5] ^= 0x01
        return ":".join("%02x" % x for x in b)

    def loss(self, percent):
        r = subprocess.run(["sh", NETNS, "--env", self.envfile, "loss",
                            str(percent)], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            raise RuntimeError("netns.sh loss failed: %s" % r.stderr.strip())

    def down(self):
        subprocess.run(["sh", NETNS, "down", "--env", self.envfile,
                        "--prefix", self.prefix], capture_output=True,
                       timeout=60)


class Proc:
    """A program in a namespace, in the background. Every Proc is tracked
    so a test's tearDown can kill whatever is left."""

    live = []

    def __init__(self, ns, argv, name=None, raw=False):
        """raw: stdout and stderr as bytes, untranslated (HTTP's CRLF)."""
        self.name = name or os.path.basename(argv[0])
        self.argv = argv
        self.p = subprocess.Popen(["ip", "netns", "exec", ns] + argv,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=not raw)
        self.out = self.err = None
        Proc.live.append(self)

    def readline(self, timeout):
        """One stdout line (for 'ready' lines), or None on timeout/EOF."""
        import select
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            return None
        return self.p.stdout.readline() or None

    def wait(self, timeout):
        """Wait for exit; on timeout kill it and return None."""
        try:
            self.out, self.err = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        return self.p.returncode

    def wait_or_interrupt(self, timeout):
        """Wait for exit; on timeout SIGINT it (so a tern program still
        prints its figures), reap it and return None."""
        try:
            self.out, self.err = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            return None
        return self.p.returncode

    def stop(self, timeout=10):
        """SIGINT (tern/kern programs then print their figures), then
        SIGKILL if it does not exit."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        rc = self.wait(timeout)
        return rc

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        try:
            self.out, self.err = self.p.communicate(timeout=10)
        except (subprocess.TimeoutExpired, ValueError):
            pass

    def json(self):
        """The last line of stdout as JSON."""
        lines = [l for l in (self.out or "").splitlines() if l.strip()]
        if not lines:
            raise AssertionError("%s printed nothing; stderr: %s"
                                 % (self.name, (self.err or "").strip()))
        return json.loads(lines[-1])

    def describe(self):
        return "%s (rc %s)\n  stdout: %s\n  stderr: %s" % (
            " ".join(self.argv), self.p.returncode,
            (self.out or "").strip()[-2000:], (self.err or "").strip()[-2000:])

    @classmethod
    def kill_all(cls):
        for p in cls.live:
            p.kill()
        cls.live = []


def run(ns, argv, timeout, raw=False):
    """Run to completion in a namespace; returns the finished Proc
    (returncode None if it had to be killed at `timeout`)."""
    p = Proc(ns, argv, raw=raw)
    p.wait(timeout)
    Proc.live.remove(p)
    return p


def prog(name):
    return os.path.join(BIN, name)


def wait_listen(ns, port, timeout=10.0):
    """Until a kernel socket in `ns` listens on TCP `port`."""
    end = time.time() + timeout
    while time.time() < end:
        r = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Htln",
                            "sport = :%d" % port], capture_output=True,
                           text=True)
        if r.stdout.strip():
            return True
        time.sleep(0.05)
    return False


def wait_ping(ns, ip, timeout=15.0, proc=None):
    """Until `ip` answers a ping from `ns`: the tern stack is up (and, as
    it listens before its loop starts, its listener too), without opening
    a TCP connection that would count in its figures."""
    end = time.time() + timeout
    while time.time() < end and not (proc and proc.p.poll() is not None):
        r = subprocess.run(["ip", "netns", "exec", ns, "ping", "-c", "1",
                            "-W", "1", "-q", ip], capture_output=True)
        if r.returncode == 0:
            return True
        time.sleep(0.05)
    return False


def ping6(ns, ip, count=1):
    """ping -6 from ns to ip, count echoes 0.2 s apart."""
    return subprocess.run(["ip", "netns", "exec", ns, "ping", "-6", "-c",
                           str(count), "-i", "0.2", "-W", "1", "-q", ip],
                          capture_output=True, text=True)


def wait_ping6(ns, ip, proc, timeout=15.0):
    """Until ip answers ping -6 from ns; False when proc exits first."""
    end = time.time() + timeout
    while time.time() < end and proc.p.poll() is None:
        if ping6(ns, ip).returncode == 0:
            return True
        time.sleep(0.1)
    return False


def tern_server6(tc, h, argv):
    """A tern server (argv) on the tern side of hosts h, once it answers
    ping -6 from the kernel side; fails tc when it does not in 15 s."""
    p = Proc(h.ns_t, argv)
    if not wait_ping6(h.ns_k, h.ip6_t, p):
        p.stop()
        tc.fail("%s does not answer ping -6 within 15 s:\n%s"
                % (os.path.basename(argv[0]), p.describe()))
    return p


def httpd_body(size):
    """What tern-httpd --body-size size serves: a-z over and over, then a
    newline."""
    return bytes(ord("a") + i % 26 for i in range(size - 1)) + b"\n"


def curl6_wrk_ok(tc, ns, url, size):
    """curl -6 from ns gets 200 and exactly httpd_body(size) from url, then
    wrk_ok. Returns wrk's request count."""
    c = run(ns, ["curl", "-6", "-g", "-sS", "-i", "-m", "10", url],
            timeout=20, raw=True)
    tc.assertEqual(c.p.returncode, 0, c.describe())
    head, _, body = c.out.partition(b"\r\n\r\n")
    tc.assertEqual(head.split(b"\r\n")[0], b"HTTP/1.1 200 OK")
    tc.assertEqual(body, httpd_body(size))
    return wrk_ok(tc, ns, url)


def wrk_ok(tc, ns, url):
    """wrk -c16 for 2 s against url from ns: some requests, only 2xx, no
    socket errors. Returns the request count."""
    import re
    w = run(ns, ["wrk", "-t1", "-c16", "-d2", "--timeout", "5s", url],
            timeout=30)
    tc.assertEqual(w.p.returncode, 0, w.describe())
    m = re.search(r"(\d+) requests in", w.out)
    tc.assertTrue(m and int(m.group(1)) > 0, w.out)
    tc.assertNotIn("Non-2xx", w.out, w.out)
    tc.assertNotIn("Socket errors", w.out, w.out)
    return int(m.group(1))


def need_tools(*tools):
    missing = [t for t in tools
               if subprocess.run(["sh", "-c", "command -v %s" % t],
                                 capture_output=True).returncode != 0]
    if missing:
        raise AssertionError("missing tools %s (scripts/deps.sh installs "
                             "them)" % ", ".join(missing))


def main(argv_extra):
    """unittest.main without our own arguments."""
    unittest.main(argv=[sys.argv[0]] + argv_extra, verbosity=2)
