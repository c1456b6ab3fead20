"""--app-cores: where the application runs relative to the NIC's IRQ cores.

Measured by hand on a 100G reader: the reader on a core that shares L3 with the queue's IRQ
core got 52.3 Gbit/s, on a core of another L3 37.9.  The same core as the
IRQ is also bad: the softirq steals the application's cycles.
"""
from __future__ import annotations

from ..model import Finding, unknown
from ..procfs import format_cpulist

WHY = ("The application should run on a different core of the same L3 as the IRQ core that "
       "receives its flow: same core steals cycles, another L3 or socket moves every byte "
       "across the interconnect.")


def check(facts, iface):
    if not facts.app_cores or not facts.is_physical(iface):
        return []
    return [placement(facts, iface)]


def placement(f, iface):
    # --app-cores are online CPUs: the command line checks that before any check runs
    if not f.irqs(iface):
        return unknown("placement.app_cores", "no queue IRQs found for %s" % iface, WHY, subject=iface)
    steered = f.ntuple_queues(iface)
    cores, source = f.irq_cores(iface, steered or None)
    if steered:
        source += ", queues %s from ntuple rules" % format_cpulist(steered)
    if not cores:
        return unknown("placement.app_cores", "cannot tell which CPUs take %s's IRQs" % iface, WHY,
                       subject=iface)
    if not any(f.l3_of(c) for c in cores + f.app_cores):
        return unknown("placement.app_cores", "no L3 topology (cache/index3/shared_cpu_list)", WHY,
                       subject=iface)
    per_core, worst = {}, "ok"
    irq_pkgs = {f.package_of(c) for c in cores}
    for c in f.app_cores:
        l3 = set(f.l3_of(c) or [c])
        if c in cores:
            # what nic.irq_affinity recommends with --app-cores (each core serves its own
            # queues): worth knowing, since the softirq shares the core's cycles
            verdict, sev = "same core as an IRQ (its softirq shares this core)", "info"
        elif l3 & set(cores):
            verdict, sev = "shares L3 with IRQ core %s" % format_cpulist(sorted(l3 & set(cores))), "ok"
        elif f.package_of(c) is not None and None not in irq_pkgs and f.package_of(c) not in irq_pkgs:
            verdict, sev = "other socket than the IRQ cores", "warn"
        else:
            verdict, sev = "no IRQ core in its L3 (%s)" % format_cpulist(sorted(l3)), "warn"
        per_core[str(c)] = verdict
        if sev == "warn" or (sev == "info" and worst == "ok"):
            worst = sev
    good = sorted({p for c in cores for p in (f.l3_of(c) or [])} - set(cores))
    data = {"app_cores": f.app_cores, "irq_cores": cores, "irq_source": source,
            "verdicts": per_core, "good_cores": good}
    cur = "IRQ cores %s (%s); %s" % (format_cpulist(cores), source,
                                     "; ".join("app %s: %s" % kv for kv in per_core.items()))
    rec = ("app on %s (same L3 as the IRQ cores, not the IRQ cores)" % format_cpulist(good) if good
           else "free one core of the IRQ cores' L3 from IRQs and run the app there")
    if worst != "warn":
        return Finding("placement.app_cores", worst, cur, rec, WHY, subject=iface, data=data)
    note = ("start the application under `taskset -c %s`, or pin the queue IRQs onto the app cores "
            "(nic.irq_affinity)" % format_cpulist(good) if good else
            "pin the queue IRQs onto the app cores (nic.irq_affinity), or move the application "
            "next to the IRQ cores")
    return Finding("placement.app_cores", worst, cur, rec, WHY, note=note, fix_kind="manual",
                   subject=iface, data=data)
