"""Shared helpers for the tern doctor tests: paths, running the CLI, fixtures."""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
TOOLS = os.path.join(REPO, "tools")
TERN = os.path.join(TOOLS, "tern")
FIXTURES = os.path.join(HERE, "fixtures")

if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)


def run_tern(*args, env=None):
    """Run tools/tern ARGS; returns (exit code, stdout, stderr)."""
    full_env = dict(os.environ, NO_COLOR="1", **(env or {}))
    proc = subprocess.run([sys.executable, TERN] + list(args), capture_output=True, text=True,
                          env=full_env, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def run_doctor(*args):
    """`tern doctor ARGS` in this process (a fresh interpreter per run costs
    ~0.5 s here); returns (exit code, stdout, stderr) like run_tern."""
    from doctor import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(list(args))
        except SystemExit as exc:  # argparse usage errors
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc, out.getvalue(), err.getvalue()


def doctor_json(*args):
    """`tern doctor --json ARGS`; returns (exit code, parsed report, stderr)."""
    rc, out, err = run_doctor("--json", *args)
    try:
        doc = json.loads(out)
    except ValueError as exc:
        raise AssertionError("not JSON (%s); rc=%d stderr=%s stdout=%s" % (exc, rc, err, out[:500]))
    return rc, doc, err


def fixture(name):
    return os.path.join(FIXTURES, name)


def fixture_names():
    """Every fixture tree (a directory under fixtures/)."""
    return sorted(n for n in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, n))
                  and not n.startswith((".", "_")))


def fixture_copy(testcase, name):
    """A private copy of a fixture tree, removed when the test ends."""
    tmp = tempfile.mkdtemp(prefix="tern-doctor-")
    testcase.addCleanup(shutil.rmtree, tmp, True)
    dst = os.path.join(tmp, name)
    shutil.copytree(fixture(name), dst, symlinks=True)
    return dst


def by_id(doc, fid, subject=None):
    """The findings with this id (and subject, when given)."""
    return [f for f in doc["findings"] if f["id"] == fid and (subject is None or f["subject"] == subject)]


def one(testcase, doc, fid, subject=None):
    hits = by_id(doc, fid, subject)
    testcase.assertEqual(len(hits), 1, "expected one %s finding, got %r" % (fid, hits))
    return hits[0]


def severities(doc, levels=("warn", "crit")):
    return {(f["id"], f["subject"]): f["severity"] for f in doc["findings"] if f["severity"] in levels}


def internal_errors(doc):
    return [f for f in doc["findings"] if f["id"].startswith("internal.")]
