"""CPU checks: boost/turbo, frequency governor, SMT, C-states, mitigations,
and how steadily the cores run (the speed probe)."""
from __future__ import annotations

from .. import persist
from ..model import Action, Finding, by_profile, unknown

CPU = "/sys/devices/system/cpu"

# Idle states that wake up within this many microseconds count as "shallow"
# (POLL and C1 on current x86); deeper ones add wake-up jitter.
SHALLOW_US = 2


def check(facts):
    return [boost(facts), governor(facts), smt(facts), cstates(facts), mitigations(facts),
            core_speed(facts)]


def boost(f):
    h, why = f.host, ("Turbo/boost clocks a core up while others idle, so results "
                      "depend on how many cores are busy and scaling curves bend.")
    knobs = []  # (path, value meaning "boost off", is boost on?)
    no_turbo = h.read_line(CPU + "/intel_pstate/no_turbo")
    if no_turbo in ("0", "1"):
        knobs.append((CPU + "/intel_pstate/no_turbo", "1", no_turbo == "0"))
    else:
        glob_boost = h.read_line(CPU + "/cpufreq/boost")
        if glob_boost in ("0", "1"):
            knobs.append((CPU + "/cpufreq/boost", "0", glob_boost == "1"))
        else:
            for path in h.glob(CPU + "/cpufreq/policy*/boost"):
                val = h.read_line(path)
                if val in ("0", "1"):
                    knobs.append((path, "0", val == "1"))
    if not knobs:
        return unknown("cpu.boost", "no intel_pstate/no_turbo or cpufreq boost file", why)
    on = any(k[2] for k in knobs)
    rec = by_profile(f.profile, reproducible="off", latency="off (steadier; on gives lower but jumpier latency)",
                     throughput="either, the same on every host compared")
    if not on:
        return Finding("cpu.boost", "ok", "off", rec, why, data={"on": False})
    sev = by_profile(f.profile, reproducible="crit", default="info")
    knob = knobs[0][0]
    target = knob if len(knobs) == 1 else CPU + "/cpufreq/policy*/boost"
    fix = "echo %s > %s" % (knobs[0][1], knob) if len(knobs) == 1 else \
        'for f in %s; do echo 0 > "$f"; done' % target
    actions = [Action("write", path=p, value=v) for p, v, is_on in knobs if is_on] \
        if f.profile in ("reproducible", "latency") else []
    label = "/".join(knob.split("/")[-2:])
    return Finding("cpu.boost", sev, "on (%s)" % label, rec, why, fix=fix,
                   fix_kind="runtime", data={"on": True}, actions=actions,
                   persist=[persist.sysfs([(target, knobs[0][1])])])


def governor(f):
    h, why = f.host, ("A power-saving governor changes the clock with load, so the "
                      "same code runs at different speeds from run to run.")
    paths = h.glob(CPU + "/cpufreq/policy*/scaling_governor") or \
        h.glob(CPU + "/cpu[0-9]*/cpufreq/scaling_governor")
    govs = {p: h.read_line(p) for p in paths}
    govs = {p: g for p, g in govs.items() if g}
    if not govs:
        return unknown("cpu.governor", "no cpufreq driver: frequency is fixed or set by a hypervisor", why)
    names = sorted(set(govs.values()))
    if names == ["performance"]:
        return Finding("cpu.governor", "ok", "performance", "performance", why, data={"governors": names})
    sev = by_profile(f.profile, throughput="info", default="warn")
    actions = [Action("write", path=p, value="performance") for p, g in govs.items() if g != "performance"]
    files = CPU + ("/cpufreq/policy*/scaling_governor" if "/policy" in next(iter(govs))
                   else "/cpu[0-9]*/cpufreq/scaling_governor")
    return Finding("cpu.governor", sev, ", ".join(names), "performance", why,
                   fix='for f in %s; do echo performance > "$f"; done' % files,
                   note="cpupower frequency-set -g performance does the same",
                   fix_kind="runtime", data={"governors": names}, actions=actions,
                   persist=[persist.sysfs([(files, "performance")])])


def smt(f):
    h, why = f.host, ("SMT siblings share one core's execution units and caches, "
                      "so a sibling's load changes your numbers (benchmarks usually turn it off).")
    control = h.read_line(CPU + "/smt/control")
    active = h.read_line(CPU + "/smt/active")
    data = {"control": control, "active": active}
    if control is None and active is None:
        return unknown("cpu.smt", "no /sys/devices/system/cpu/smt", why, data=data)
    rec = by_profile(f.profile, throughput="off or on (record it)", default="off")
    if active == "0" or control in ("off", "forceoff", "notsupported", "notimplemented"):
        return Finding("cpu.smt", "ok", "off (control=%s)" % control, rec, why, data=data)
    sev = by_profile(f.profile, throughput="info", default="warn")
    actions = [Action("write", path=CPU + "/smt/control", value="off")] \
        if control == "on" and f.profile != "throughput" else []
    return Finding("cpu.smt", sev, "on (control=%s, active=%s)" % (control, active), rec, why,
                   fix="echo off > %s/smt/control" % CPU,
                   fix_kind="runtime", data=data, actions=actions, persist=[persist.cmdline(["nosmt"])])


def _idle_states(h):
    """{state index: {"name", "latency", "enabled_on": [cpus], "paths": [disable files]}}."""
    states = {}
    for sdir in h.glob(CPU + "/cpu[0-9]*/cpuidle/state[0-9]*"):
        cpu = int(sdir.split("/")[5][3:])
        idx = int(sdir.rsplit("state", 1)[1])
        st = states.setdefault(idx, {"name": h.read_line(sdir + "/name") or "state%d" % idx,
                                     "latency": h.read_int(sdir + "/latency"),
                                     "enabled_on": [], "disabled_on": [], "paths": []})
        if h.read_line(sdir + "/disable") == "1":
            st["disabled_on"].append(cpu)
        else:
            st["enabled_on"].append(cpu)
            st["paths"].append(sdir + "/disable")
    return states


def cstates(f):
    h, why = f.host, ("Waking from a deep C-state takes tens to hundreds of microseconds, "
                      "so light load looks slower than heavy load.")
    cmd = {k: f.cmdline[k] for k in ("intel_idle.max_cstate", "processor.max_cstate", "idle")
           if k in f.cmdline}
    cmd_text = " ".join("%s=%s" % kv for kv in cmd.items()) or "no C-state limits"
    driver = h.read_line(CPU + "/cpuidle/current_driver")
    states = _idle_states(h)
    data = {"driver": driver, "cmdline": cmd,
            "states": {s["name"]: {"latency_us": s["latency"], "enabled_cpus": len(s["enabled_on"])}
                       for s in states.values()}}
    rec_text = by_profile(f.profile, throughput="any (deep states save power; little effect on bulk rate)",
                          default="only states waking in <= %d us (POLL, C1)" % SHALLOW_US)
    if not states:
        if cmd:
            return Finding("cpu.cstates", "ok", "no cpuidle states exposed; cmdline: " + cmd_text,
                           rec_text, why, data=data)
        return unknown("cpu.cstates", "no cpuidle states (driver %s): a VM or firmware decides idle"
                       % (driver or "none"), why, data=data)
    deep = {i: s for i, s in states.items()
            if s["enabled_on"] and (s["latency"] is None or s["latency"] > SHALLOW_US)}
    if not deep:
        allowed = [s["name"] for s in states.values() if s["enabled_on"]]
        return Finding("cpu.cstates", "ok", "enabled: %s; cmdline: %s" % (", ".join(allowed), cmd_text),
                       rec_text, why, data=data)
    sev = by_profile(f.profile, throughput="info", default="warn")
    cur = "deep states enabled: %s; cmdline: %s" % (
        ", ".join("%s (%s us)" % (s["name"], s["latency"]) for s in deep.values()), cmd_text)
    idx = " ".join(str(i) for i in sorted(deep))
    fix = 'for s in %s; do for f in %s/cpu*/cpuidle/state$s/disable; do echo 1 > "$f"; done; done' \
        % (idx, CPU)
    actions = [] if f.profile == "throughput" else \
        [Action("write", path=p, value="1") for s in deep.values() for p in s["paths"]]
    return Finding("cpu.cstates", sev, cur, rec_text, why, fix=fix, fix_kind="runtime",
                   data=data, actions=actions,
                   persist=[persist.cmdline(["intel_idle.max_cstate=0", "processor.max_cstate=1"])])


def mitigations(f):
    h, why = f.host, ("Speculation mitigations (retpoline above all) tax every indirect call "
                      "and syscall, so hosts with different settings are not comparable.")
    vdir = CPU + "/vulnerabilities"
    vulns = {name: h.read_line(vdir + "/" + name) for name in h.listdir(vdir)}
    vulns = {k: v for k, v in vulns.items() if v}
    setting = f.cmdline.get("mitigations", "default (auto)")
    if not vulns:
        return unknown("cpu.mitigations", "no %s" % vdir, why, data={"cmdline": setting})
    mitigated = sorted(k for k, v in vulns.items() if v.startswith("Mitigation"))
    vulnerable = sorted(k for k, v in vulns.items() if v.startswith("Vulnerable"))
    v2 = vulns.get("spectre_v2", "")
    retpoline = "Retpoline" in v2 or "retpoline" in v2
    cur = "mitigations=%s; %d mitigated%s, %d vulnerable" % (
        setting, len(mitigated), " (spectre_v2: retpolines)" if retpoline else "", len(vulnerable))
    data = {"cmdline": setting, "retpoline": retpoline, "mitigated": mitigated,
            "vulnerable": vulnerable, "spectre_v2": v2}
    rec = "identical on every host compared; mitigations=off only on an isolated benchmark host"
    if setting == "off" or not mitigated:
        return Finding("cpu.mitigations", "ok", cur, rec, why, data=data)
    return Finding("cpu.mitigations", "info", cur, rec, why,
                   note="mitigations=off on the kernel command line, on isolated benchmark hosts only",
                   fix_kind="cmdline", data=data, persist=[persist.cmdline(["mitigations=off"])])


# The probe's slowest tenth of pieces within this share of its best piece:
# a steady core (the pieces' own noise stays well inside it).
STEADY_LOW = 0.85


def core_speed(f):
    """The speed probe (probe.py) on the app cores: a core whose speed
    changes while nothing of ours changes is shared by someone we cannot
    see (another VM's hyperthread on the same core, the host's clock)."""
    why = ("A core shared with a busy neighbour (another VM's hyperthread, the host lowering the "
           "clock) runs the same code slower for a while, with no steal time in the guest: "
           "figures swing by that much (tern's programs report rps_full/gbps_full, the rate "
           "while their own probe saw the whole core).")
    speeds = f.core_speeds
    if not speeds:
        what = "not measured (--probe-seconds 0)" if f.probe_seconds <= 0 else \
            "no probe results (cannot pin to the CPUs)"
        return unknown("cpu.core_speed", what, why)
    per_cpu, worst_cpu, worst = {}, None, 1.0
    for cpu, rates in sorted(speeds.items()):
        r = sorted(rates)
        best = r[-1]
        low = r[len(r) // 10] / best if best > 0 else 0.0
        med = r[len(r) // 2] / best if best > 0 else 0.0
        per_cpu[str(cpu)] = {"pieces": len(r), "best": round(best, 1),
                             "median_of_best": round(med, 3), "p10_of_best": round(low, 3)}
        if low < worst:
            worst_cpu, worst = cpu, low
    data = {"cpus": per_cpu, "steady_low": STEADY_LOW}
    w = per_cpu[str(worst_cpu)]
    if worst >= STEADY_LOW:
        return Finding("cpu.core_speed", "ok", "steady (slowest tenth at >= %.0f%% of the best)"
                       % (100 * worst), "steady", why, data=data)
    sev = by_profile(f.profile, throughput="info", default="warn")
    cur = ("varies: CPU %d ran its slowest tenth of the time at %.0f%% of its best, the median at %.0f%%"
           % (worst_cpu, 100 * w["p10_of_best"], 100 * w["median_of_best"]))
    return Finding("cpu.core_speed", sev, cur, "steady", why,
                   note="a host whose cores are not shared (dedicated or pinned vCPUs, the sibling "
                       "hyperthread idle); else compare runs alternated, and the *_full figures",
                   fix_kind="manual", data=data)
