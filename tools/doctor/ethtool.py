"""ethtool: run the read-only queries and parse their text output.

Parsers take the text `ethtool OPT IFACE` prints and return plain dicts; an
empty result means "nothing we understood" (typically the driver answered
"Operation not supported").  The Ethtool class runs each query at most once
per interface through the host's runner and reports why data is missing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


def _value(text):
    """'1024' -> 1024, 'n/a' -> None, 'on' stays 'on'."""
    text = text.strip()
    if text in ("n/a", ""):
        return None
    try:
        return int(text)
    except ValueError:
        return text


def _key(text):
    return text.strip().lower().replace(" ", "_")


def parse_kv(text):
    """'Key: value' lines -> {"key": value}.  Used for -i, -a and -S."""
    out = {}
    for line in (text or "").splitlines():
        if ":" not in line or line.rstrip().endswith(":"):
            continue
        key, value = line.split(":", 1)
        out[_key(key)] = _value(value)
    return out


def parse_max_current(text):
    """-l (channels) and -g (rings): two blocks of the same keys.

    -> {"max": {"rx": 8192, ...}, "current": {"rx": 1024, ...}}
    """
    out, block = {}, None
    for line in (text or "").splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            block = out.setdefault("max", {})
        elif low.startswith("current hardware settings"):
            block = out.setdefault("current", {})
        elif block is not None and ":" in line:
            key, value = line.split(":", 1)
            block[_key(key)] = _value(value)
    return out if "current" in out else {}


def parse_coalesce(text):
    """-c -> {"adaptive-rx": "on", "rx-usecs": 8, ...}."""
    out = {}
    for line in (text or "").splitlines():
        m = re.match(r"\s*Adaptive RX:\s*(\S+)\s+TX:\s*(\S+)", line)
        if m:
            out["adaptive-rx"] = _value(m.group(1))
            out["adaptive-tx"] = _value(m.group(2))
            continue
        m = re.match(r"\s*([a-z][a-z0-9-]*):\s*(\S+)\s*$", line)
        if m:
            out[m.group(1)] = _value(m.group(2))
    return out


def parse_pause(text):
    """-a -> {"autonegotiate": True, "rx": False, "tx": False}."""
    out = {}
    for key, value in parse_kv(text).items():
        if value in ("on", "off"):
            out[key] = value == "on"
    return out


def parse_features(text):
    """-k -> {"generic-receive-offload": {"on": True, "fixed": False}, ...}."""
    out = {}
    for line in (text or "").splitlines():
        m = re.match(r"\s*([a-z0-9-]+):\s*(on|off)\b(.*)$", line)
        if m:
            out[m.group(1)] = {"on": m.group(2) == "on", "fixed": "[fixed]" in m.group(3)}
    return out


def parse_ntuple(text):
    """-n -> {"rings": 24, "rules": [{"id": 1023, "type": ..., "queue": 2}]}.

    "rules" is None when the driver cannot list rules (no ntuple support).
    """
    out = {"rings": None, "rules": None}
    rule = None
    for line in (text or "").splitlines():
        s = line.strip()
        m = re.match(r"(\d+) RX rings available", s)
        if m:
            out["rings"] = int(m.group(1))
            continue
        if re.match(r"Total \d+ rules", s):
            out["rules"] = out["rules"] or []
            continue
        m = re.match(r"Filter:\s*(\d+)", s)
        if m:
            rule = {"id": int(m.group(1)), "type": None, "action": None, "queue": None}
            out["rules"] = (out["rules"] or []) + [rule]
            continue
        if rule is not None and s.startswith("Rule Type:"):
            rule["type"] = s.split(":", 1)[1].strip()
        if rule is not None and s.startswith("Action:"):
            rule["action"] = s.split(":", 1)[1].strip()
            m = re.search(r"queue (\d+)", s)
            if m:
                rule["queue"] = int(m.group(1))
    if out["rings"] is None and out["rules"] is None:
        return {}
    return out


def parse_rss(text):
    """-x -> {"rings": 24, "table": [0, 1, ...] or None, "hfunc": "toeplitz"}."""
    out = {"rings": None, "table": None, "hfunc": None}
    in_table = in_hfunc = False
    for line in (text or "").splitlines():
        s = line.strip()
        m = re.match(r"RX flow hash indirection table .* with (\d+) RX ring", s)
        if m:
            out["rings"] = int(m.group(1))
            in_table = True
            continue
        if s.startswith("RSS hash key"):
            in_table = False
            continue
        if s.startswith("RSS hash function"):
            in_hfunc = True
            continue
        m = re.match(r"\d+:\s+([\d\s]+)$", s)
        if in_table and m:
            out["table"] = (out["table"] or []) + [int(t) for t in m.group(1).split()]
            continue
        m = re.match(r"([a-z0-9]+):\s*on$", s)
        if in_hfunc and m:
            out["hfunc"] = m.group(1)
    if out["rings"] is None:
        return {}
    return out


def parse_stats(text):
    """-S -> {"rx_dropped": 0, ...}: integer counters only."""
    return {k: v for k, v in parse_kv(text).items() if isinstance(v, int)}


def parse_info(text):
    """-i -> {"driver": "mlx5_core", "bus-info": "0000:c1:00.0", ...}."""
    out = {}
    for line in (text or "").splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            out[key.strip()] = value.strip()
    return out if "driver" in out else {}


PARSERS = {"-i": parse_info, "-l": parse_max_current, "-g": parse_max_current,
           "-c": parse_coalesce, "-a": parse_pause, "-k": parse_features,
           "-n": parse_ntuple, "-x": parse_rss, "-S": parse_stats}


@dataclass
class Answer:
    """Result of one query: data when status == "ok", else why not."""
    status: str                  # "ok" | "unsupported" | "missing"
    data: dict = field(default_factory=dict)
    error: str = ""

    @property
    def ok(self):
        return self.status == "ok"

    def reason(self, opt):
        if self.status == "missing":
            return "ethtool not installed"
        return "driver does not answer `ethtool %s`%s" % (
            opt, (": " + self.error) if self.error else "")


class Ethtool:
    """Cached read-only ethtool queries for one host."""

    def __init__(self, host):
        self.host = host
        self._cache = {}

    def query(self, opt, iface):
        key = (opt, iface)
        if key not in self._cache:
            self._cache[key] = self._query(opt, iface)
        return self._cache[key]

    def _query(self, opt, iface):
        res = self.host.run(["ethtool", opt, iface])
        if res is None:
            return Answer("missing")
        data = PARSERS[opt](res.out)
        if not data:
            err = (res.err or res.out).strip().splitlines()
            return Answer("unsupported", error=err[0] if err else "rc=%d" % res.rc)
        return Answer("ok", data)

    def stats(self, iface):
        """Fresh `ethtool -S` counters (never cached: --during diffs them)."""
        res = self.host.run(["ethtool", "-S", iface])
        return parse_stats(res.out) if res is not None else {}
