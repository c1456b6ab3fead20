"""--apply and --revert: make the runtime changes the checks recommend, and
undo them exactly.

Before each write the file's old content is saved in the state file (JSON);
ethtool changes are saved with the command that undoes them.  Applying twice
keeps the *first* saved value of a file, so --revert always returns to the
state before the first --apply.  Kernel command-line fixes are only printed.
"""
from __future__ import annotations

import datetime
import json
import os

STATE_VERSION = 1
DEFAULT_STATE = "/var/lib/tern/doctor-state.json"


def state_path(host, path):
    """--state FILE as given, or the default under the audited root."""
    return path if path else host.path(DEFAULT_STATE)


def load_state(path):
    try:
        with open(path) as f:
            state = json.load(f)
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ValueError("%s is not a doctor state file: %s" % (path, exc))
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise ValueError("%s: not a version-%d doctor state file" % (path, STATE_VERSION))
    return state


def save_state(path, state):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def _ordered(findings):
    """Actions of all findings; SMT off last (it offlines CPUs other writes target)."""
    acts = [(f, a) for f in findings for a in f.actions]
    return sorted(acts, key=lambda fa: fa[1].path.endswith("/smt/control"))


def apply(host, findings, path, log):
    """Make every change; returns (changes made, failures).  log(str) reports."""
    state = load_state(path) or {"version": STATE_VERSION, "root": host.root, "changes": []}
    state["updated_at"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    saved = {c["path"] for c in state["changes"] if c["kind"] == "write"}
    made = failed = 0
    for finding, act in _ordered(findings):
        label = finding.id + ("[%s]" % finding.subject if finding.subject else "")
        if act.kind == "write":
            old = host.read(act.path)
            if old is None:
                log("skip  %-28s %s: cannot read" % (label, act.path))
                failed += 1
                continue
            try:
                host.write(act.path, act.value + "\n")
            except OSError as exc:
                log("FAIL  %-28s %s <- %s: %s" % (label, act.path, act.value, exc.strerror or exc))
                failed += 1
                continue
            if act.path not in saved:  # keep the value from before the first --apply
                state["changes"].append({"kind": "write", "path": act.path, "old": old,
                                         "new": act.value, "finding": finding.id})
                saved.add(act.path)
            log("set   %-28s %s: %s -> %s" % (label, act.path, old.strip(), act.value))
        else:
            res = host.run(act.argv)
            if res is None or res.rc != 0:
                why = "not installed" if res is None else (res.err or res.out).strip() or "rc %d" % res.rc
                log("FAIL  %-28s %s: %s" % (label, " ".join(act.argv), why))
                failed += 1
                continue
            state["changes"].append({"kind": "run", "argv": act.argv, "undo": act.undo,
                                     "finding": finding.id})
            log("ran   %-28s %s" % (label, " ".join(act.argv)))
        made += 1
    for f in findings:
        for p in f.persist:
            if p.method == "cmdline" and f.severity in ("info", "warn", "crit"):
                log("note  %-28s boot parameter, not applied: %s" % (f.id, " ".join(p.lines)))
    if state["changes"]:
        save_state(path, state)
        log("saved previous values to %s (undo with --revert)" % path)
    return made, failed


def revert(host, path, log):
    """Undo the changes in the state file, newest first; returns (undone, failures)."""
    state = load_state(path)
    if state is None:
        log("nothing to revert: no state file %s" % path)
        return 0, 0
    undone = failed = 0
    remaining = []
    for change in reversed(state["changes"]):
        if change["kind"] == "write":
            try:
                host.write(change["path"], change["old"])
                log("restored %s = %s" % (change["path"], change["old"].strip()))
                undone += 1
                continue
            except OSError as exc:
                log("FAIL restoring %s: %s" % (change["path"], exc.strerror or exc))
        else:
            res = host.run(change["undo"])
            if res is not None and res.rc == 0:
                log("ran %s" % " ".join(change["undo"]))
                undone += 1
                continue
            log("FAIL %s" % " ".join(change["undo"]))
        failed += 1
        remaining.insert(0, change)
    if remaining:  # keep what could not be undone, so a second --revert can retry
        state["changes"] = remaining
        save_state(path, state)
    else:
        os.remove(path)
        log("removed %s" % path)
    return undone, failed
