"""How steadily a CPU runs: a fixed piece of work timed again and again.

A vCPU that shares its physical core with another tenant's busy
hyperthread, or whose clock the host lowers, runs the same instructions
slower for a while, and the guest sees no steal time for it (on the
2-vCPU KVM guest tern was measured on, a core ran at its full speed for a
few hundred ms, then at exactly half for the next few hundred). The probe
pins this thread to the CPU, times `sum(range(PIECE))` (a C loop inside
the interpreter: a few hundred microseconds) for `seconds`, and returns
each piece's rate in million additions per second. The check
(checks/cpu.py, core_speed) reads the spread, not the level.
"""
from __future__ import annotations

import os
import time

PIECE = 20000


def measure(cpu, seconds=1.0):
    """Rates of the pieces run on `cpu` over `seconds`; None when this
    thread cannot be pinned there."""
    try:
        old = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu})
    except (AttributeError, OSError, ValueError):
        return None
    rates = []
    try:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t = time.perf_counter()
            sum(range(PIECE))
            dt = time.perf_counter() - t
            if dt > 0:
                rates.append(PIECE / dt / 1e6)
    finally:
        os.sched_setaffinity(0, old)
    return rates
