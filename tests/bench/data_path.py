#!/usr/bin/env python3
"""The bulk programs' data path, as their output names it (no timing):

  - tern-bulk by default does an application's work: data_path
    "application", the payload generated (gen_s reported) and verified;
  - each shortcut is named: --app-sum, --offload rxsum, --offload csum,
    --offload tso,lro (by reference);
  - kern-bulk does the same application work and refuses --app-sum;
  - the lwIP peer does it too (bulk verified, echo completes its count).

    data_path.py --build-dir BUILD
"""
import argparse
import json
import os
import subprocess
import sys
import unittest

BUILD = None


def run(prog, *args, ok=True):
    argv = [os.path.join(BUILD, "bin", prog), "--bytes", "8M", "--json"] + list(args)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if ok and p.returncode != 0:
        raise AssertionError("%s failed (%d): %s" % (" ".join(argv), p.returncode, p.stderr))
    return p, (json.loads(p.stdout) if p.returncode == 0 else None)


class TernBulk(unittest.TestCase):
    def test_default_is_the_application_path(self):
        _, d = run("tern-bulk")
        self.assertEqual(d["data_path"], "application")
        self.assertTrue(d["verified"])
        self.assertEqual(d["bytes"], 8 << 20)
        self.assertGreater(d["gen_s"], 0)
        self.assertIn("gen_pct", d)
        self.assertNotIn("offload", d)

    def test_shortcuts_are_named(self):
        cases = [
            (["--app-sum"], "app-sum"),
            (["--offload", "rxsum"], "link-rx-sum"),
            (["--offload", "csum"], "tx-csum-offload+rx-csum-offload"),
            (["--offload", "csum,tso,lro"],
             "tx-csum-offload+rx-csum-offload+tso+lro+by-ref"),
            (["--offload", "csum,tso,lro,copy"],
             "tx-csum-offload+rx-csum-offload+tso+lro"),
        ]
        for args, want in cases:
            with self.subTest(args=args):
                _, d = run("tern-bulk", *args)
                self.assertEqual(d["data_path"], want)
                self.assertTrue(d["verified"])

    def test_bad_offload_names_the_choices(self):
        p, _ = run("tern-bulk", "--offload", "bogus", ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("rxsum", p.stderr)


class KernBulk(unittest.TestCase):
    def test_same_application_work(self):
        _, d = run("kern-bulk", "--cores", "0")
        self.assertEqual(d["data_path"], "application")
        self.assertTrue(d["verified"])
        self.assertGreater(d["gen_s"], 0)

    def test_refuses_app_sum(self):
        p, _ = run("kern-bulk", "--app-sum", ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--app-sum", p.stderr)


class LwipPeer(unittest.TestCase):
    def setUp(self):
        self.prog = os.path.join(BUILD, "bin", "lwip-peer")
        if not os.path.exists(self.prog):
            self.skipTest("lwip-peer not built (liblwip-dev not installed)")

    def test_bulk_application_work(self):
        p = subprocess.run([self.prog, "bulk", "--conns", "3", "--bytes", "8M", "--json"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        self.assertEqual(d["data_path"], "application")
        self.assertTrue(d["verified"])
        self.assertEqual(d["bytes"], 8 << 20)
        self.assertGreater(d["gen_s"], 0)

    def test_echo_counts(self):
        p = subprocess.run([self.prog, "echo", "--conns", "4", "--requests", "2000", "--json"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["requests"], 2000)

    def test_bad_flag_says_why(self):
        p = subprocess.run([self.prog, "echo", "--conns", "0"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--conns", p.stderr)


def main():
    global BUILD
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    a, rest = ap.parse_known_args()
    BUILD = os.path.abspath(a.build_dir)
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
