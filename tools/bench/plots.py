"""PNG plots of a result document, readable at a glance:

  rr_cores.png     echo requests/s vs cores, one line per stack and poll mode
                   (busy: filled, blocking: hollow and dashed; min-max bars)
  latency.png      echo latency percentiles p50/p99/p99.9 per stack (log scale)
  http.png         HTTP requests/s vs cores
  bulk.png         bulk Gbit/s vs flows

Needs matplotlib. Run as a script so the harness can use whichever Python
has it:  python3 plots.py RESULT.json OUTDIR   (prints the files written)."""
import json
import os
import sys

COLORS = {"tern-mem": "#1f77b4", "tern-afxdp": "#2ca02c", "tern-afpacket": "#98df8a",
          "kern-lo": "#d62728", "kern-veth": "#ff9896", "smoltcp-mem": "#9467bd"}
ORDER = ["tern-mem", "smoltcp-mem", "kern-lo", "tern-afxdp", "tern-afpacket", "kern-veth"]


def _ok(points, **match):
    return [p for p in points if p["status"] == "ok"
            and all(p.get(k) == v for k, v in match.items())]


def _med(p, m):
    s = p["summary"].get(m)
    return (s["median"], s["min"], s["max"]) if s else (None, None, None)


def _subtitle(doc):
    m, c = doc["machine"], doc["conditions"]
    return "%s, %s CPUs, kernel %s; median of %d runs, bars = min-max; commit %s" % (
        m["cpu_model"], m["ncpus"], m["kernel"], c["repeat"], (doc["git"].get("commit") or "?")[:8])


def _stacks(points):
    present = {p["stack"] for p in points}
    return [s for s in ORDER if s in present] + sorted(present - set(ORDER))


def eng(v):
    """864k, 6.6k, 25.1, 1.2M: short labels for the points."""
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return "%.3g%s" % (v / div, suf)
    return "%.3g" % v


def _lines_vs(ax, points, xkey, metric):
    """One line per stack over the x values (evenly spaced categories), each
    stack nudged sideways so error bars never hide each other. Returns the
    x values drawn (empty when nothing was)."""
    xvals = sorted({p[xkey] for p in points})
    names = _stacks(points)
    for i, st in enumerate(names):
        for poll in ("busy", "block"):
            pts = sorted((p for p in points if p["stack"] == st and p["poll"] == poll),
                         key=lambda p: p[xkey])
            if not pts:
                continue
            nudge = (i - (len(names) - 1) / 2.0) * 0.06
            xs = [xvals.index(p[xkey]) + nudge for p in pts]
            med = [_med(p, metric)[0] for p in pts]
            lo = [m - _med(p, metric)[1] for p, m in zip(pts, med)]
            hi = [_med(p, metric)[2] - m for p, m in zip(pts, med)]
            label = st + (" (%s)" % pts[0]["client"].split(" on ")[0]
                          if pts[0].get("client", "").startswith("wrk") else "")
            style = {}
            if poll == "block":
                label += ", blocking"
                style = {"markerfacecolor": "white", "linestyle": "--"}
            ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=4, label=label,
                        color=COLORS.get(st), **style)
            for x, y in zip(xs, med):
                ax.annotate(eng(y), (x, y), textcoords="offset points", xytext=(7, -3),
                            fontsize=7, color=COLORS.get(st, "#333333"))
    if xvals:
        ax.set_xticks(range(len(xvals)))
        ax.set_xticklabels([str(x) for x in xvals])
        ax.set_xlim(-0.5, len(xvals) - 0.5)
    return xvals


def _finish(fig, ax, doc, title, xlabel, ylabel, path):
    import matplotlib.ticker as mt
    ax.set_title(title, fontsize=12)
    fig.text(0.5, 0.01, _subtitle(doc), ha="center", fontsize=7, color="#555555")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if ax.get_yscale() == "linear":
        ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(mt.EngFormatter())
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)


def plot_all(doc, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    pts = doc["points"]
    written = []

    # 1. echo requests/s vs cores (64 B, busy)
    rr = [p for p in _ok(pts, workload="rr") if p.get("size") == max(
        [q.get("size", 0) for q in _ok(pts, workload="rr")] or [0])]
    fig, ax = plt.subplots(figsize=(10, 5))
    if rr and _lines_vs(ax, rr, "cores", "rps"):
        ax.set_yscale("log")   # the stacks differ by 100x: every one readable
        size = rr[0]["size"] if rr else 0
        path = os.path.join(outdir, "rr_cores.png")
        _finish(fig, ax, doc, "Echo request/response: requests/s vs cores (%d B, 16 conns/core)"
                % size, "cores", "requests/s (log)", path)
        written.append(("echo requests/s vs cores", path))
    plt.close(fig)

    # 2. latency percentiles at cores 1, 64 B, busy
    lat = [p for p in rr if p["cores"] == 1 and p["poll"] == "busy"]
    if lat:
        fig, ax = plt.subplots(figsize=(10, 5))
        names = _stacks(lat)
        pcts = [("p50_us", "p50"), ("p99_us", "p99"), ("p999_us", "p99.9")]
        w = 0.8 / len(pcts)
        for j, (m, lab) in enumerate(pcts):
            vals, los, his = [], [], []
            for st in names:
                p = next(q for q in lat if q["stack"] == st)
                med, lo, hi = _med(p, m)
                vals.append(med or 0)
                los.append((med - lo) if med else 0)
                his.append((hi - med) if med else 0)
            xs = [i + (j - 1) * w for i in range(len(names))]
            bars = ax.bar(xs, vals, w, yerr=[los, his], capsize=3, label=lab,
                          color=["#4c72b0", "#dd8452", "#c44e52"][j])
            for b, v in zip(bars, vals):
                if v:
                    ax.annotate(eng(v), (b.get_x() + b.get_width() / 2, v),
                                textcoords="offset points", xytext=(0, 2), ha="center", fontsize=6)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=8)
        ax.set_yscale("log")
        path = os.path.join(outdir, "latency.png")
        _finish(fig, ax, doc, "Echo latency percentiles (1 core, 16 conns, %d B, busy poll)"
                % lat[0]["size"], "stack", "round-trip latency, us (log)", path)
        written.append(("echo latency percentiles", path))
        plt.close(fig)

    # 3. HTTP requests/s vs cores
    http = _ok(pts, workload="http")
    fig, ax = plt.subplots(figsize=(10, 5))
    if _lines_vs(ax, http, "cores", "rps"):
        ax.set_yscale("log")
        path = os.path.join(outdir, "http.png")
        _finish(fig, ax, doc, "HTTP keep-alive (151-byte response): requests/s vs cores",
                "cores", "requests/s (log)", path)
        written.append(("HTTP requests/s vs cores", path))
    plt.close(fig)

    # 4. bulk Gbit/s vs flows
    bulk = _ok(pts, workload="bulk")
    fig, ax = plt.subplots(figsize=(10, 5))
    if _lines_vs(ax, bulk, "conns", "gbps"):
        path = os.path.join(outdir, "bulk.png")
        _finish(fig, ax, doc, "Bulk transfer (payload verified): Gbit/s vs flows",
                "flows (TCP connections)", "Gbit/s", path)
        written.append(("bulk Gbit/s vs flows", path))
    plt.close(fig)
    return written


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: plots.py RESULT.json OUTDIR\n")
        return 2
    with open(argv[0]) as f:
        doc = json.load(f)
    for title, path in plot_all(doc, argv[1]):
        print("%s\t%s" % (path, title))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
