"""What a user sees: --help names every driver this build has (the same
list the error for an unknown driver gives); without --cores a program
runs on the CPU it was started on (taskset), not on CPU 0; a client whose
peer never answers ARP says so, naming the address (root: test hosts from
tools/netns.sh); a server prints the address it serves on."""
import os
import re
import subprocess
import time
import unittest

from apptest import PROGRAMS, SRC, main, prog, run

NETNS = os.path.join(SRC, "tools", "netns.sh")


def interrupt(p):
    """SIGINT, then wait; kill if it does not stop. Returns its output."""
    p.send_signal(2)
    try:
        return p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.communicate()


def thread_cpus(pid):
    """Cpus_allowed_list of every thread of pid, main thread first."""
    out = []
    for tid in sorted(os.listdir("/proc/%d/task" % pid), key=int):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                m = re.search(r"^Cpus_allowed_list:\s*(\S+)", f.read(), re.M)
        except OSError:
            continue
        if m:
            out.append((int(tid), m.group(1)))
    return out


class Help(unittest.TestCase):
    def test_help_lists_the_built_drivers(self):
        r = run(["tern-echo", "--driver", "nosuch"], timeout=10)
        self.assertEqual(r.returncode, 2)
        m = re.search(r"unknown driver \(built: ([a-z,]+)\)", r.stderr)
        self.assertIsNotNone(m, r.stderr)
        built = m.group(1)
        for d in ("mem", "afpacket", "tap"):
            self.assertIn(d, built.split(","))
        for p in PROGRAMS:
            if p.startswith("kern-"):
                continue
            h = run([p, "--help"], timeout=10).stdout
            self.assertIn("link driver: %s (default mem)" % built,
                          " ".join(h.split()), p)


class Cores(unittest.TestCase):
    def test_default_cpu_is_the_first_allowed(self):
        if os.cpu_count() < 2 or not os.path.exists("/usr/bin/taskset"):
            self.skipTest("needs 2 CPUs and taskset")
        cpu = os.cpu_count() - 1   # not CPU 0, where the old default ran
        p = subprocess.Popen(["taskset", "-c", str(cpu), prog("tern-echo"),
                              "--duration", "30", "--json"],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            threads = []
            for _ in range(400):            # until the worker thread exists
                threads = thread_cpus(p.pid)
                if len(threads) > 1 or p.poll() is not None:
                    break
                time.sleep(0.05)
            self.assertGreater(len(threads), 1, "no worker thread started")
            for tid, cpus in threads[1:]:
                self.assertEqual(cpus, str(cpu), "thread %d" % tid)
        finally:
            interrupt(p)


@unittest.skipUnless(os.geteuid() == 0, "needs root (network namespaces)")
class Network(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = "/tmp/tern-ux-%d.env" % os.getpid()
        up = subprocess.run(["sh", NETNS, "up", "--env", cls.env,
                             "--prefix", "tux%d" % (os.getpid() % 10000)],
                            capture_output=True, text=True, timeout=60)
        if up.returncode != 0:
            raise unittest.SkipTest("no test hosts: " + up.stderr.strip())
        cls.v = {}
        with open(cls.env) as f:
            for line in f:
                k, _, val = line.strip().partition("=")
                cls.v[k] = val.strip("'\"")

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["sh", NETNS, "down", "--env", cls.env],
                       capture_output=True, timeout=60)
        if os.path.exists(cls.env):
            os.unlink(cls.env)

    def tern(self, *args, timeout=120):
        v = self.v
        return subprocess.run(["ip", "netns", "exec", v["NS_T"], prog(args[0]),
                               "--driver", "afpacket", "--iface", v["IF_T"],
                               "--ip", v["IP_T"] + "/24"] + list(args[1:]),
                              capture_output=True, text=True, timeout=timeout)

    def test_client_names_a_peer_that_does_not_answer_arp(self):
        # On the subnet, nobody there. The hang guard (timeout) is wide; the
        # test asserts the message, which only the ARP check prints.
        silent = ".".join(self.v["IP_K"].split(".")[:3] + ["77"])
        for args in (["tern-echo", "--duration", "60"], ["tern-bulk"]):
            p = args[0]
            r = self.tern(p, "--client", silent + ":7", *args[1:])
            self.assertNotEqual(r.returncode, 0, p)
            self.assertIn("%s does not answer ARP" % silent, r.stderr, p)

    def test_client_off_subnet_says_why_in_words(self):
        r = self.tern("tern-echo", "--client", "198.19.5.5:7")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("connect to 198.19.5.5:7: invalid argument", r.stderr)
        self.assertNotIn("error 1", r.stderr)

    def test_server_prints_its_address(self):
        v = self.v
        p = subprocess.Popen(["ip", "netns", "exec", v["NS_T"],
                              prog("tern-echo"), "--driver", "afpacket",
                              "--iface", v["IF_T"], "--ip", v["IP_T"] + "/24",
                              "--server"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            line = p.stderr.readline()
        finally:
            interrupt(p)
        self.assertIn("serving %s:7007 on afpacket %s" % (v["IP_T"], v["IF_T"]),
                      line)


if __name__ == "__main__":
    main()
