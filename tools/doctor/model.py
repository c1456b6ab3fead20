"""Findings, severities and profiles: the vocabulary every check speaks."""
from __future__ import annotations

from dataclasses import dataclass, field

PROFILES = ("reproducible", "throughput", "latency")
DEFAULT_PROFILE = "reproducible"

# Order matters: a finding "reaches" --fail-on LEVEL when its rank >= LEVEL's.
SEVERITIES = ("ok", "unknown", "info", "warn", "crit")
RANK = {"ok": 0, "unknown": 1, "info": 1, "warn": 2, "crit": 3}


def worst(severities):
    best = "ok"
    for sev in severities:
        if RANK[sev] > RANK[best] or (RANK[sev] == RANK[best] and sev == "info"):
            best = sev
    return best


@dataclass
class Action:
    """One runtime change --apply may make, and how to undo it.

    kind "write": write `value` to the file `path` (sysctl/sysfs/procfs); the
                  old content is read and saved just before writing.
    kind "run":   run `argv`; `undo` is the argv that restores the old state
                  (known when the check ran, e.g. the old ring size).
    """
    kind: str
    path: str = ""
    value: str = ""
    argv: list = field(default_factory=list)
    undo: list = field(default_factory=list)

    def to_json(self):
        if self.kind == "write":
            return {"kind": "write", "path": self.path, "value": self.value}
        return {"kind": "run", "argv": list(self.argv), "undo": list(self.undo)}


@dataclass
class Finding:
    id: str                      # "nic.rings"
    severity: str                # one of SEVERITIES
    current: str | None          # what the machine has, human readable
    recommended: str | None      # what the profile wants
    why: str                     # one sentence
    fix: str | None = None       # shell commands, one per line, runnable as printed
    subject: str | None = None   # interface name for per-interface checks
    fix_kind: str | None = None  # "runtime" | "cmdline" | "manual"
    data: dict = field(default_factory=dict)   # structured values, per check
    actions: list = field(default_factory=list)
    note: str | None = None      # words: a manual step or an alternative to the fix
    persist: list = field(default_factory=list)  # persist.Persist: how the fix survives a reboot

    def __post_init__(self):
        assert self.severity in SEVERITIES, self.severity

    @property
    def area(self):
        return self.id.split(".", 1)[0]

    def to_json(self):
        return {
            "id": self.id, "area": self.area, "subject": self.subject,
            "severity": self.severity, "current": self.current,
            "recommended": self.recommended, "why": self.why, "fix": self.fix,
            "fix_kind": self.fix_kind if self.fix or self.note or self.persist else None,
            "applicable": bool(self.actions),
            "note": self.note,
            "persist": [p.to_json() for p in self.persist],
            "data": self.data,
        }


def unknown(fid, what, why, subject=None, data=None):
    """A check that could not read its input: says so instead of guessing."""
    return Finding(fid, "unknown", "unknown (%s)" % what, None, why,
                   subject=subject, data=data or {})


def by_profile(profile, **choices):
    """Pick the value for the profile: by_profile(p, reproducible='warn', default='info')."""
    return choices.get(profile, choices.get("default"))
