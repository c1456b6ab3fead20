"""The report: the JSON document (schema.json) and the terminal table."""
from __future__ import annotations

import datetime
import os
import shutil
import textwrap

from . import procfs
from .model import RANK, SEVERITIES, worst

SCHEMA_VERSION = 1
TOOL_VERSION = "0.1"


def host_info(facts):
    h = facts.host
    model = None
    for line in (h.read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {
        "hostname": h.read_line("/proc/sys/kernel/hostname"),
        "kernel": h.read_line("/proc/sys/kernel/osrelease"),
        "cpu_model": model,
        "cpus_online": procfs.format_cpulist(facts.cpus),
        "ncpus": len(facts.cpus),
        "cmdline": (h.read_line("/proc/cmdline") or "").split(" -- ")[0] or None,
    }


def fails(severity, fail_on):
    return fail_on != "never" and RANK[severity] >= RANK[fail_on] and severity not in ("unknown", "info")


def build(facts, findings, options, during=None):
    """The JSON document (see schema.json and docs/doctor.md)."""
    counts = {s: 0 for s in SEVERITIES}
    for f in findings:
        counts[f.severity] += 1
    top = worst(f.severity for f in findings)
    failed = [f for f in findings if fails(f.severity, options["fail_on"])]
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "tern doctor", "version": TOOL_VERSION},
        "generated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "root": facts.host.root,
        "host": host_info(facts),
        "profile": facts.profile,
        "options": options,
        "findings": [f.to_json() for f in findings],
        "during": during,
        "summary": {"counts": counts, "worst": top, "fail_on": options["fail_on"],
                    "failed": len(failed), "exit_code": 1 if failed else 0},
    }


COLOURS = {"ok": "32", "unknown": "90", "info": "36", "warn": "33", "crit": "1;31"}


def _paint(text, sev, colour):
    return "\x1b[%sm%s\x1b[0m" % (COLOURS[sev], text) if colour else text


def render(doc, colour=False, quiet=False, verbose=False, width=None):
    """Human table: one row per finding; why/fix under warn and crit rows
    (under every row with a fix when verbose)."""
    width = width or shutil.get_terminal_size((120, 24)).columns
    width = max(width, 80)
    host = doc["host"]
    lines = ["tern doctor: %s, kernel %s, %s CPUs (%s), profile %s%s" % (
        host["hostname"] or "?", host["kernel"] or "?", host["ncpus"], host["cpu_model"] or "?",
        doc["profile"], "" if doc["root"] == "/" else ", root " + doc["root"])]
    rows = [f for f in doc["findings"] if not quiet or f["severity"] in ("warn", "crit")]
    idw = max([len(_label(f)) for f in rows] + [5])
    cur_w = max(20, (width - idw - 9) * 3 // 5)
    rec_w = max(14, width - idw - 9 - cur_w - 2)
    lines.append("%-7s %-*s %-*s  %s" % ("SEV", idw, "CHECK", cur_w, "CURRENT", "RECOMMENDED"))
    for f in rows:
        cur = _cut(f["current"] or "-", cur_w)
        rec = _cut(f["recommended"] or "-", rec_w)
        sev = _paint("%-7s" % f["severity"], f["severity"], colour)
        lines.append("%s %-*s %-*s  %s" % (sev, idw, _label(f), cur_w, cur, rec))
        remedy = f["fix"] or f.get("note") or f.get("persist")
        if f["severity"] in ("warn", "crit") or (verbose and remedy):
            lines += _details(f, cur_w, width)
    if not rows:
        lines.append("        (no warn or crit findings)")
    s = doc["summary"]
    c = s["counts"]
    lines.append("summary: %d crit, %d warn, %d info, %d unknown, %d ok; fail-on %s -> exit %d" % (
        c["crit"], c["warn"], c["info"], c["unknown"], c["ok"], s["fail_on"], s["exit_code"]))
    return "\n".join(lines) + "\n"


def _details(f, cur_w, width):
    """now/why/fix/note/reboot lines under a row; fix commands one per line, unwrapped
    so they can be copied."""
    pad, out = " " * 8, []

    def para(tag, text):
        return textwrap.wrap("%s: %s" % (tag, text), width - 8, initial_indent=pad,
                             subsequent_indent=pad + " " * (len(tag) + 2), break_on_hyphens=False)
    if len(f["current"] or "") > cur_w:
        out += para("now", f["current"])
    out += para("why", f["why"])
    for n, cmd in enumerate((f["fix"] or "").splitlines()):
        out.append(pad + ("fix: " if n == 0 else "     ") + cmd)
    if f.get("note"):
        out += para("note" if f["fix"] else "do", f["note"])
    for p in f.get("persist") or []:
        text = p["how"]
        if p["method"] == "cmdline":
            text = "%s (%s)" % (" ".join(p["lines"]), text)
        elif p["file"]:
            text += " (--export writes it)"
        out += para("reboot", text)
    return out


def _label(f):
    return f["id"] + ("[%s]" % f["subject"] if f["subject"] else "")


def _cut(text, n):
    return text if len(text) <= n else text[:n - 1] + "~"


def use_colour(stream):
    return hasattr(stream, "isatty") and stream.isatty() and not os.environ.get("NO_COLOR") \
        and os.environ.get("TERM") != "dumb"
