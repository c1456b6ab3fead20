"""The Markdown report of a result document: conditions, then per workload
one table per kind of stack (in-memory, real path, loopback), medians with
their min-max spread; ratios only between stacks of the same kind on the
same point; busy polling against blocking; the instruction counts with
their workload; the plots."""
import os

from . import hostinfo, stats
from .stacks import BULK_VARIANTS, BY_NAME, KIND_TITLES, KINDS, WORKLOAD_TITLES

SAME_POINT = ("workload", "cores", "conns", "size", "poll", "bytes")


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


def kind_of(p):
    st = BY_NAME.get(p["stack"])
    return p.get("kind") or (st.kind if st else "?")


def comparable(p, q):
    """Whether a ratio between points p and q means anything: the same kind
    of stack (in-memory with in-memory, real path with real path; never the
    loopback reference), the same point, no data-path shortcut on either."""
    return (p is not q and kind_of(p) == kind_of(q) and kind_of(p) != "loopback"
            and all(p.get(k) == q.get(k) for k in SAME_POINT)
            and not p.get("variant") and not q.get("variant"))


def ratio(p, q, metric):
    """p / q on metric, or None when they are not comparable."""
    if not comparable(p, q) or p.get("status") != "ok" or q.get("status") != "ok":
        return None
    return stats.ratio(median(p, metric), median(q, metric))


def find(points, stack, like):
    for q in points:
        if q["stack"] == stack and comparable(like, q) and q["status"] == "ok":
            return q
    return None


def ratio_cell(p, points, metric):
    """In-memory peers: how many times tern-mem's figure; real path: tern's
    figure over the kernel's on the same veth. '-' otherwise."""
    st = BY_NAME.get(p["stack"])
    twin = st.twin if st else None
    if not twin or p["status"] != "ok" or p.get("variant"):
        return "-"
    q = find(points, twin, p)
    if q is None:
        return "-"
    if twin == "tern-mem":
        r = ratio(q, p, metric)
        return "tern %.2fx" % r if r is not None else "-"
    r = ratio(p, q, metric)
    return "%.2fx %s" % (r, twin) if r is not None else "-"


def status_row(p, ncols):
    if p["status"] == "unavailable":
        text = "not run (stack unavailable, see Stacks)"
    else:
        text = "FAILED: %s" % p.get("reason", "").replace("|", "/")[:140]
    return [text] + [""] * (ncols - 1)


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def rr_table(pts, workload, kind, points):
    sized = workload == "rr"
    head = ["stack", "cores", "conns"] + (["size B"] if sized else []) + \
        ["poll", "client", "req/s median [min-max]", "p50 us", "p99 us", "p99.9 us"]
    if kind == "in-memory":
        head += ["CPU us/req (own)", "tern-mem vs this"]
    else:
        head += ["CPU us/req (own)", "CPU us/req (all CPUs)", "req per busy CPU-s"]
        if kind == "real-path":
            head += ["req/s vs kernel", "req per CPU-s vs kernel"]
    rows = []
    for p in pts:
        lead = [p["stack"], str(p["cores"]), str(p["conns"])] + \
            ([str(p["size"])] if sized else []) + [p["poll"]]
        if p["status"] != "ok":
            rows.append(lead + status_row(p, len(head) - len(lead)))
            continue
        row = lead + [p.get("client", "-"), spread(p, "rps", fmt_rate),
                      fmt_num(median(p, "p50_us")), fmt_num(median(p, "p99_us")),
                      fmt_num(median(p, "p999_us"))]
        if kind == "in-memory":
            row += [fmt_num(median(p, "own_cpu_us_per_req")), ratio_cell(p, points, "rps")]
        else:
            row += [fmt_num(median(p, "own_cpu_us_per_req")), fmt_num(median(p, "cpu_us_per_req")),
                    spread(p, "req_per_cpu_s", fmt_rate)]
            if kind == "real-path":
                row += [ratio_cell(p, points, "rps"), ratio_cell(p, points, "req_per_cpu_s")]
        rows.append(row)
    return table(head, rows)


def data_path_of(p):
    paths = {r.get("data_path") for r in p.get("runs", []) if r.get("data_path")}
    if paths:
        return ", ".join(sorted(paths))
    return BULK_VARIANTS[p["variant"]][0][-1] if p.get("variant") else "application"


def bulk_table(pts, kind, points):
    head = ["stack", "flows", "MiB", "data path", "Gbit/s median [min-max]",
            "sender's payload writing, % of its time"]
    head += ["CPU s/GB (own)"] if kind == "in-memory" else ["CPU s/GB (all CPUs)"]
    head += ["retransmits", "verified"]
    if kind != "loopback":
        head += ["tern-mem vs this" if kind == "in-memory" else "vs kernel"]
    rows = []
    for p in pts:
        lead = [p["stack"], str(p["conns"]), "%d" % (p["bytes"] >> 20)]
        if p["status"] != "ok":
            rows.append(lead + status_row(p, len(head) - len(lead)))
            continue
        ver = all(r.get("verified", True) for r in p["runs"])
        row = lead + [data_path_of(p), spread(p, "gbps", lambda v: "%.2f" % v),
                      fmt_num(median(p, "gen_pct")),
                      fmt_num(median(p, "own_cpu_s_per_gb" if kind == "in-memory"
                                     else "cpu_s_per_gb")),
                      fmt_num(median(p, "retransmits")), "yes" if ver else "NO"]
        if kind != "loopback":
            row.append(ratio_cell(p, points, "gbps"))
        rows.append(row)
    return table(head, rows)


def poll_section(points):
    """Busy polling against blocking: the echo point at one core run both
    ways, per stack that has both."""
    rows = []
    for p in points:
        if p["workload"] != "rr" or p["poll"] != "busy" or p["status"] != "ok":
            continue
        q = next((x for x in points if x["stack"] == p["stack"] and x["poll"] == "block"
                  and x["status"] == "ok" and all(x.get(k) == p.get(k) for k in
                                                  ("workload", "cores", "conns", "size"))),
                 None)
        if q is None:
            continue
        both = lambda m, f: "%s / %s" % (f(median(p, m)), f(median(q, m)))
        rows.append([p["stack"], kind_of(p), str(p["cores"]), str(p["conns"]), str(p["size"]),
                     both("rps", fmt_rate), both("p50_us", fmt_num), both("p99_us", fmt_num),
                     both("cpu_us_per_req", fmt_num), both("req_per_cpu_s", fmt_rate)])
    if not rows:
        return []
    out = ["## Busy polling vs blocking (echo)", "",
           "Each cell: busy / blocking, run in the same bench. Busy: tern --poll busy, the "
           "kernel twins epoll_wait timeout 0; blocking: tern --poll block, epoll_wait "
           "timeout 1000 ms. CPU columns count all CPUs of the machine.", ""]
    out += table(["stack", "kind", "cores", "conns", "size B", "req/s", "p50 us", "p99 us",
                  "CPU us/req (all CPUs)", "req per busy CPU-s"], rows)
    return out + [""]


def callgrind_section(doc):
    cg = doc.get("callgrind") or []
    if not cg:
        return []
    w = next((c for c in cg if c.get("conns")), {})
    what = "echo, %s B, %s connections, 1 core" % (w.get("size", "?"), w.get("conns", "?")) \
        if w else "echo"
    out = ["## Instructions per round trip (callgrind; %s; both ends in one process)" % what,
           "", "Client and server together, per round trip; in-memory stacks only (callgrind "
           "cannot see the kernel's instructions). The count depends on the workload: "
           "fewer connections share less of the per-burst work.", ""]
    rows = []
    for c in cg:
        if c.get("status", "ok") != "ok":
            rows.append([c["stack"], "-", "%s: %s" % (c.get("status"), c.get("reason", "")[:100]),
                         "", ""])
        else:
            rows.append([c["stack"], "%s B, %s conns" % (c.get("size", "?"), c.get("conns", "?")),
                         "%.0f" % c["instructions_per_request"],
                         "%d - %d" % (c["n_large"], c["n_small"]),
                         "`%s`" % " ".join(os.path.basename(a) if i == 0 else a
                                           for i, a in enumerate(c["command"][3:]))])
    out += table(["stack", "workload", "instructions / round trip",
                  "round trips (large - small)", "command (under valgrind --tool=callgrind)"],
                 rows)
    for c in cg:
        if c.get("top_functions"):
            out += ["", "Top functions of %s (self instructions, %d round trips):" %
                    (c["stack"], c["n_large"]), ""]
            out += table(["function", "share", "instructions"],
                         [[f["function"].replace("|", "/")[:90], "%.1f%%" % f["pct"],
                           "{:,}".format(f["ir"])] for f in c["top_functions"][:12]])
    return out + [""]


def workload_sections(points):
    lines = []
    for w in ("rr", "http", "bulk"):
        wpts = [p for p in points if p["workload"] == w]
        if not wpts:
            continue
        lines += ["", "## %s" % WORKLOAD_TITLES[w]]
        for kind in KINDS:
            kpts = [p for p in wpts if kind_of(p) == kind]
            if not kpts:
                continue
            lines += ["", "### %s" % KIND_TITLES[kind], ""]
            lines += bulk_table(kpts, kind, points) if w == "bulk" else \
                rr_table(kpts, w, kind, points)
    return lines


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
        "- load average before / after: %s / %s (other work on the machine shows here; "
        "ratios measured side by side in one run stand up to it better than absolute "
        "figures)" % (c.get("loadavg_start"), c.get("loadavg_end")),
        "- placement: %s" % c.get("placement", "-"),
        "- CPU (all CPUs) = busy CPU-seconds of every CPU from /proc/stat over the run (both "
        "ends, the kernel's softirq work, and anything else running); req per busy CPU-s = "
        "requests / those CPU-seconds; (own) = user+system time of the benchmark's own "
        "processes",
        "- ratios only within a kind: in-memory stacks with each other, the real path with "
        "the kernel on the same veth; the kernel over loopback is a reference with no ratio",
    ]
    warns = hostinfo.doctor_summary(doc.get("doctor") or {})
    if warns:
        lines.append("- tern doctor (%s profile) warnings: %s" % (
            doc["doctor"].get("profile", "?"),
            "; ".join("%s = %s" % (i, cur) for i, _, cur in warns)))
    elif (doc.get("doctor") or {}).get("error"):
        lines.append("- tern doctor: %s" % doc["doctor"]["error"])
    lines += ["", "## Stacks", ""]
    lines += table(["stack", "kind", "status", "what"],
                   [[n, s.get("kind") or (BY_NAME[n].kind if n in BY_NAME else "?"),
                     "available" if s["available"] else "unavailable: " + s.get("reason", ""),
                     s.get("description", "")] for n, s in doc["stacks"].items()])
    lines += workload_sections(doc["points"])
    lines += [""] + poll_section(doc["points"]) + callgrind_section(doc)
    if plot_paths:
        lines += ["## Plots", ""]
        for title, path in plot_paths:
            lines.append("![%s](%s)" % (title, os.path.relpath(path, rel_to)))
        lines.append("")
    elif doc["outputs"].get("plots_error"):
        lines += ["Plots: %s" % doc["outputs"]["plots_error"], ""]
    return "\n".join(lines) + "\n"
