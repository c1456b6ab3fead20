"""Netfilter: is conntrack loaded, and do packets traverse firewall rules?"""
from __future__ import annotations

from .. import persist, procfs
from ..model import Finding, unknown

NF_MODULES = ("nf_conntrack", "nf_tables", "ip_tables", "ip6_tables", "x_tables",
              "iptable_filter", "iptable_nat", "iptable_mangle", "iptable_raw",
              "nf_nat", "br_netfilter", "nft_ct", "xt_conntrack")

WHY_CT = ("Conntrack hashes and tracks every packet and netfilter hooks cost cycles even "
          "when idle; measure with it disabled.")
PERSIST = persist.manual("the rules come back at boot from the firewall service that loads them: "
                         "disable it (systemctl disable nftables, firewalld or docker) or "
                         "benchmark in a network namespace without rules")
WHY_RULES = "Every packet walks the hooked chains, so rules add per-packet cost the other stack may not pay."


def check(facts):
    return [conntrack(facts), rules(facts)]


def conntrack(f):
    h = f.host
    modules_text = h.read("/proc/modules")
    mods = procfs.parse_modules(modules_text)
    loaded = sorted(m for m in mods if m in NF_MODULES)
    table = h.exists("/proc/net/nf_conntrack") or h.exists("/proc/sys/net/netfilter/nf_conntrack_count")
    count = h.read_int("/proc/sys/net/netfilter/nf_conntrack_count")
    data = {"modules": loaded, "conntrack": table or "nf_conntrack" in mods, "count": count,
            "modules_readable": modules_text is not None}
    if not data["conntrack"] and not loaded:
        if modules_text is None and not h.exists("/proc/net"):
            return unknown("netfilter.conntrack", "no /proc/modules or /proc/net", WHY_CT, data=data)
        return Finding("netfilter.conntrack", "ok", "not loaded", "not loaded", WHY_CT, data=data)
    parts = []
    if loaded:
        parts.append("modules: " + ", ".join(loaded))
    if data["conntrack"]:
        parts.append("conntrack %s" % ("built in" if "nf_conntrack" not in mods else "loaded"))
        parts.append("%s tracked" % ("?" if count is None else count))
    flush = _flush_commands(f)
    fix = "\n".join(flush + (["modprobe -r nf_conntrack"] if "nf_conntrack" in mods else []))
    note = None if "nf_conntrack" in mods else \
        "conntrack is built into this kernel: boot one without it, or add notrack rules"
    sev = "warn" if (count or 0) > 0 else "info"
    return Finding("netfilter.conntrack", sev, "; ".join(parts), "not loaded", WHY_CT,
                   fix=fix or None, note=note, fix_kind="manual", data=data, persist=[PERSIST])


def _nft_counts(text):
    """(rules, hooked chains) in `nft list ruleset` output."""
    rules = hooked = 0
    depth_chain = False
    for line in (text or "").splitlines():
        s = line.strip()
        if s.startswith("chain "):
            depth_chain = True
            continue
        if not depth_chain or not s:
            continue
        if s == "}":
            depth_chain = False
        elif s.startswith("type ") and " hook " in s:
            hooked += 1
        elif not s.startswith(("policy ", "comment ", "devices ")):
            rules += 1
    return rules, hooked


def rules(f):
    nft = f.host.run(["nft", "list", "ruleset"])
    ipt = f.host.run(["iptables-save"])
    if nft is None and ipt is None:
        return unknown("netfilter.rules", "neither nft nor iptables-save installed", WHY_RULES)
    nft_rules, hooked = _nft_counts(nft.out) if nft is not None and nft.rc == 0 else (0, 0)
    ipt_rules = 0
    if ipt is not None and ipt.rc == 0:
        ipt_rules = sum(1 for l in ipt.out.splitlines() if l.startswith("-A "))
    data = {"nft_rules": nft_rules if nft is not None else None, "nft_hooked_chains": hooked,
            "iptables_rules": ipt_rules if ipt is not None else None}
    cur = "; ".join(part for part in (
        None if nft is None else "nft: %d rules in %d hooked chains" % (nft_rules, hooked),
        None if ipt is None else "iptables: %d rules" % ipt_rules) if part)
    if nft_rules == 0 and hooked == 0 and ipt_rules == 0:
        return Finding("netfilter.rules", "ok", cur, "no rules on the benchmark path", WHY_RULES, data=data)
    return Finding("netfilter.rules", "warn", cur, "no rules on the benchmark path", WHY_RULES,
                   fix="\n".join(_flush_commands(f)) or None,
                   note="or benchmark inside a network namespace that has no rules",
                   fix_kind="manual", data=data, persist=[PERSIST])


def _flush_commands(f):
    """Commands that empty the rule sets of the tools that are installed."""
    out = []
    if f.host.run(["nft", "list", "ruleset"]) is not None:
        out.append("nft flush ruleset")
    if f.host.run(["iptables-save"]) is not None:
        out += ["iptables -F", "iptables -t nat -F"]
    return out
