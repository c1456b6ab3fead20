"""The Markdown report of a result document: conditions, then one table per
workload (medians with their min-max spread, the ratio to the Linux twin),
the instruction counts, and the plots."""
import os

from . import hostinfo, stats
from .stacks import BY_NAME, WORKLOAD_TITLES


def fmt_rate(v):
    if v is None:
        return "-"
    if v >= 1e6:
        return "%.2fM" % (v / 1e6)
    if v >= 1e3:
        return "%.1fk" % (v / 1e3)
    return "%.0f" % v


def fmt_num(v, digits=3):
    if v is None:
        return "-"
    if v >= 100:
        return "%.0f" % v
    return ("%%.%dg" % digits) % v


def median(p, metric):
    s = (p.get("summary") or {}).get(metric)
    return s["median"] if s else None


def spread(p, metric, f):
    s = (p.get("summary") or {}).get(metric)
    if not s:
        return "-"
    return "%s [%s-%s]" % (f(s["median"]), f(s["min"]), f(s["max"]))


def twin_of(p, points):
    st = BY_NAME.get(p["stack"])
    twin = st.twin if st else None
    if not twin:
        return None
    for q in points:
        if q["stack"] == twin and q["status"] == "ok" and all(
                q.get(k) == p.get(k) for k in ("workload", "cores", "conns", "size", "poll", "bytes")):
            return q
    return None


def client_kind(p):
    """in-process (both ends in one program), wrk, or an external client."""
    c = p.get("client", "")
    if c.startswith("wrk"):
        return "wrk"
    if c in ("in-process", "built-in generator"):
        return "in-process"
    return "external"


def ratio_cell(p, points, metric):
    q = twin_of(p, points)
    if q is None or p["status"] != "ok":
        return "-"
    if client_kind(p) != client_kind(q):
        return "n/a (%s: other client)" % q["stack"]
    r = stats.ratio(median(p, metric), median(q, metric))
    return "%.2fx %s" % (r, q["stack"]) if r is not None else "-"


def status_row(p, ncols):
    """Unavailable: pending (the reason is in the Stacks table); failed: why."""
    if p["status"] == "unavailable":
        text = "pending (stack unavailable, see Stacks)"
    else:
        text = "FAILED: %s" % p.get("reason", "").replace("|", "/")[:140]
    return [text] + [""] * (ncols - 1)


def rr_table(points, workload):
    pts = [p for p in points if p["workload"] == workload]
    if not pts:
        return []
    head = ["stack", "cores", "conns"] + (["size B"] if workload == "rr" else []) + \
        ["poll", "client", "req/s median [min-max]", "p50 us", "p99 us", "p99.9 us",
         "CPU us/req (machine)", "CPU us/req (own)", "vs Linux"]
    rows = []
    for p in pts:
        lead = [p["stack"], str(p["cores"]), str(p["conns"])] + \
            ([str(p["size"])] if workload == "rr" else []) + [p["poll"]]
        if p["status"] != "ok":
            rows.append(lead + status_row(p, len(head) - len(lead)))
            continue
        rows.append(lead + [
            p.get("client", "-"),
            spread(p, "rps", fmt_rate),
            fmt_num(median(p, "p50_us")), fmt_num(median(p, "p99_us")),
            fmt_num(median(p, "p999_us")),
            fmt_num(median(p, "cpu_us_per_req")), fmt_num(median(p, "own_cpu_us_per_req")),
            ratio_cell(p, points, "rps"),
        ])
    return table(head, rows)


def bulk_table(points):
    pts = [p for p in points if p["workload"] == "bulk"]
    if not pts:
        return []
    head = ["stack", "flows", "MiB", "poll", "client", "Gbit/s median [min-max]",
            "CPU s/GB (machine)", "CPU s/GB (own)", "retransmits", "verified", "vs Linux"]
    rows = []
    for p in pts:
        lead = [p["stack"], str(p["conns"]), "%d" % (p["bytes"] >> 20), p["poll"]]
        if p["status"] != "ok":
            rows.append(lead + status_row(p, len(head) - len(lead)))
            continue
        ver = all(r.get("verified", True) for r in p["runs"])
        rows.append(lead + [
            p.get("client", "-"), spread(p, "gbps", lambda v: "%.2f" % v),
            fmt_num(median(p, "cpu_s_per_gb")), fmt_num(median(p, "own_cpu_s_per_gb")),
            fmt_num(median(p, "retransmits")), "yes" if ver else "NO",
            ratio_cell(p, points, "gbps"),
        ])
    return table(head, rows)


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def callgrind_section(doc):
    cg = doc.get("callgrind") or []
    if not cg:
        return []
    out = ["## Instructions per round trip (callgrind, both ends in one process)", ""]
    rows = []
    for c in cg:
        if c.get("status", "ok") != "ok":
            rows.append([c["stack"], "pending: %s" % c.get("reason", "")[:100], "", ""])
        else:
            rows.append([c["stack"], "%.0f" % c["instructions_per_request"],
                         "%d - %d" % (c["n_large"], c["n_small"]),
                         "`%s`" % " ".join(os.path.basename(a) if i == 0 else a
                                           for i, a in enumerate(c["command"][3:]))])
    out += table(["stack", "instructions / round trip", "round trips (large - small)",
                  "command (under valgrind --tool=callgrind)"], rows)
    for c in cg:
        if c.get("top_functions"):
            out += ["", "Top functions of %s (self instructions, %d round trips):" %
                    (c["stack"], c["n_large"]), ""]
            out += table(["function", "share", "instructions"],
                         [[f["function"].replace("|", "/")[:90], "%.1f%%" % f["pct"],
                           "{:,}".format(f["ir"])] for f in c["top_functions"][:12]])
    return out + [""]


def render(doc, plot_paths, rel_to):
    m = doc["machine"]
    c = doc["conditions"]
    g = doc["git"]
    lines = [
        "# tern bench: %s (%s mode)" % (doc["generated_at"], doc["mode"]),
        "",
        "- machine: %s, %s CPUs (%s online), %s GiB, kernel %s, %s" % (
            m["cpu_model"], m["ncpus"], m.get("cpus_online"), m.get("mem_gib"), m["kernel"],
            m.get("os")),
        "- commit: %s%s" % (g.get("commit"), " (with uncommitted changes)" if g.get("dirty") else ""),
        "- command: `%s`" % " ".join(doc["command_line"]),
        "- every figure: median of %d runs [min-max] after %d warm-up run discarded; "
        "%g s per run (bulk: %d MiB per run)" % (
            c["repeat"], c["warmup_runs"], c["duration_s"], c.get("bulk_bytes", 0) >> 20),
        "- load average before / after: %s / %s (other work on the machine shows here)" % (
            c.get("loadavg_start"), c.get("loadavg_end")),
        "- placement: %s" % c.get("placement", "-"),
        "- CPU us/req (machine) = busy CPU-seconds of all CPUs from /proc/stat over the run / "
        "requests (both ends, the kernel's softirq work, and anything else running); "
        "(own) = user+system time of the benchmark's own processes / requests",
    ]
    warns = hostinfo.doctor_summary(doc.get("doctor") or {})
    if warns:
        lines.append("- tern doctor (%s profile) warnings: %s" % (
            doc["doctor"].get("profile", "?"),
            "; ".join("%s = %s" % (i, cur) for i, _, cur in warns)))
    elif doc["doctor"].get("error"):
        lines.append("- tern doctor: %s" % doc["doctor"]["error"])
    lines += ["", "## Stacks", ""]
    lines += table(["stack", "status", "what"],
                   [[n, "available" if s["available"] else "pending: " + s.get("reason", ""),
                     s.get("description", "")] for n, s in doc["stacks"].items()])
    for w in ("rr", "http"):
        t = rr_table(doc["points"], w)
        if t:
            lines += ["", "## %s" % WORKLOAD_TITLES[w], ""] + t
    t = bulk_table(doc["points"])
    if t:
        lines += ["", "## %s" % WORKLOAD_TITLES["bulk"], ""] + t
    lines += [""] + callgrind_section(doc)
    if plot_paths:
        lines += ["## Plots", ""]
        for title, path in plot_paths:
            lines.append("![%s](%s)" % (title, os.path.relpath(path, rel_to)))
        lines.append("")
    elif doc["outputs"].get("plots_error"):
        lines += ["Plots: %s" % doc["outputs"]["plots_error"], ""]
    return "\n".join(lines) + "\n"
