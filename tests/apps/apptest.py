"""Helpers for the program tests: where the binaries are, running them with
a time limit, servers that are always killed, free ports."""
import json
import os
import socket
import subprocess
import time
import unittest

BIN = os.environ.get("TERN_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "bin")
SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = ["tern-echo", "tern-bulk", "tern-httpd",
            "kern-echo", "kern-bulk", "kern-httpd"]


def prog(name):
    return os.path.join(BIN, name)


def run(args, timeout=60, **kw):
    """Run a program to completion; returns CompletedProcess (text)."""
    return subprocess.run([prog(args[0])] + list(args[1:]), capture_output=True,
                          text=True, timeout=timeout, **kw)


def run_json(testcase, args, timeout=120):
    r = run(args, timeout=timeout)
    testcase.assertEqual(r.returncode, 0, "%s failed: %s" % (args, r.stderr))
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    testcase.assertEqual(len(lines), 1, "one JSON line expected: %r" % r.stdout)
    return json.loads(lines[0])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, host="127.0.0.1", timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


class Server:
    """A program in the background, interrupted (SIGINT) and reaped on exit,
    killed if it does not stop."""

    def __init__(self, args):
        self.p = subprocess.Popen([prog(args[0])] + list(args[1:]),
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)

    def stop(self, timeout=10):
        if self.p.poll() is None:
            self.p.send_signal(2)
        try:
            out, err = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
        return out, err

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def tcp_stub_present():
    return os.path.exists(os.path.join(SRC, "src", "core", "tcp",
                                       "tcp_stub.c"))


def main():
    unittest.main(verbosity=2)
