"""All checks, in report order.

A host check is fn(facts) -> [Finding]; an interface check is
fn(facts, iface) -> [Finding].  A check that raises is turned into an
"unknown" finding (the doctor must never die on an odd machine); set
TERN_DOCTOR_DEBUG=1 to get the traceback instead.
"""
from __future__ import annotations

import os

from .. import persist
from ..model import unknown
from . import cpu, netfilter, nic, pcie, placement, softnet, steering, sysctl

HOST_CHECKS = [cpu.check, netfilter.check, steering.check_host, sysctl.check, softnet.check]
IFACE_CHECKS = [nic.check, steering.check, pcie.check, placement.check]


def _guard(fn, name, *args):
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - reported as a finding instead
        if os.environ.get("TERN_DOCTOR_DEBUG"):
            raise
        subject = args[1] if len(args) > 1 else None
        return [unknown("internal." + name, "%s: %s" % (type(exc).__name__, exc),
                        "The check failed on this machine's data; please report it.", subject=subject)]


def run_all(facts):
    findings = []
    for fn in HOST_CHECKS:
        findings += _guard(fn, fn.__module__.rsplit(".", 1)[-1], facts)
    for iface in facts.ifaces:
        for fn in IFACE_CHECKS:
            findings += _guard(fn, fn.__module__.rsplit(".", 1)[-1], facts, iface)
    for f in findings:  # every fix says how it survives a reboot
        f.persist = persist.for_finding(facts, f)
    return findings
