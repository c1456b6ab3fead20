#!/usr/bin/env python3
"""The CI smoke test of tern bench: run `tools/tern bench --quick` and check
what it wrote, never how fast anything was:

  - the JSON document has the schema's shape (tools/bench/schema.py),
  - every stack that was available completed all its points,
  - every unavailable stack says why,
  - the Markdown report has its tables, and every PNG exists and is not empty,
  - the run left the source tree as it was (git status, results in --out).

    smoke.py --build-dir BUILD --out DIR
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools"))

from bench import schema, stacks  # noqa: E402


def git_status():
    try:
        return subprocess.run(["git", "-C", REPO, "status", "--porcelain"], capture_output=True,
                              text=True, timeout=30).stdout
    except OSError:
        return None


def fail(msg):
    print("bench smoke: FAIL: %s" % msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    argv = [sys.executable, os.path.join(REPO, "tools", "tern"), "bench", "--quick",
            "--build-dir", a.build_dir, "--out", a.out, "--name", "smoke"]
    print("bench smoke: %s" % " ".join(argv), flush=True)
    before = git_status()
    rc = subprocess.call(argv)
    if git_status() != before:
        fail("the run changed the source tree (git status before/after differ)")
    jpath = os.path.join(a.out, "smoke.json")
    if not os.path.exists(jpath):
        fail("no %s (tern bench exited with %d)" % (jpath, rc))
    with open(jpath) as f:
        doc = json.load(f)
    checks = 0

    bad = schema.problems(doc)
    if bad:
        fail("schema: " + "; ".join(bad[:5]))
    checks += 1

    avail = [n for n, s in doc["stacks"].items() if s["available"]]
    if not avail:
        fail("no stack was available (reasons: %s)" % {n: s.get("reason") for n, s in doc["stacks"].items()})
    for p in doc["points"]:
        if p["stack"] in avail and p["status"] != "ok":
            fail("%s did not complete: %s" % (p["id"], p.get("reason")))
    for n, s in doc["stacks"].items():
        if not s["available"]:
            print("bench smoke: %s unavailable: %s" % (n, s.get("reason")))
    for n in avail:
        works = {p["workload"] for p in doc["points"] if p["stack"] == n}
        if works != set(stacks.BY_NAME[n].workloads):
            fail("%s ran only %s" % (n, sorted(works)))
    for c in doc["callgrind"]:
        if c.get("status") == "failed":
            fail("callgrind %s failed: %s" % (c["stack"], c.get("reason")))
    checks += 1

    if rc != 0:
        fail("tern bench exited with status %d" % rc)
    checks += 1

    md = open(doc["outputs"]["markdown"]).read()
    for needle in ("| stack |", "## request/response", "## HTTP", "## bulk transfer",
                   "median", doc["machine"]["kernel"]):
        if needle not in md:
            fail("the Markdown report lacks %r" % needle)
    checks += 1

    plots = doc["outputs"].get("plots") or []
    if not plots:
        fail("no plots: %s" % doc["outputs"].get("plots_error", "?"))
    for path in plots:
        if not os.path.exists(path) or os.path.getsize(path) < 1000:
            fail("plot %s missing or empty" % path)
        with open(path, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                fail("plot %s is not a PNG" % path)
        if os.path.basename(path) + ")" not in md:
            fail("the Markdown report does not show %s" % path)
    checks += 1

    print("bench smoke: %d stacks available (%s), %d points, %d plots" % (
        len(avail), ", ".join(avail), len(doc["points"]), len(plots)))
    print("bench smoke: ok (%d checks)" % checks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
