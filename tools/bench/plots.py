"""PNG plots of a result document, one question each:

  echo.png      echo requests/s per point: grouped bars, one panel per kind
                of stack (in-memory, real path, loopback), min-max bars
  http.png      the same for HTTP
  bulk.png      bulk Gbit/s per flow count; tern's shortcuts as hatched
                bars beside the application's data path
  latency.png   echo latency p50 / p99 / p99.9 per stack (1 core, busy)
  poll.png      busy polling against blocking: requests/s and CPU per request
  loss.png      throughput against loss rate: plot_loss, from the JSON of
                `tern bench loss` (python3 plots.py --loss LOSS.json OUT.png)

Needs matplotlib. Run as a script so the harness can use whichever Python
has it:  python3 plots.py RESULT.json OUTDIR   (prints the files written)."""
import json
import os
import sys

# Okabe-Ito: told apart with any colour vision; tern's stacks in blues and
# purple, peers in orange and green, the kernel in vermilion and grey.
COLORS = {"tern-mem": "#0072B2", "smoltcp-mem": "#E69F00", "lwip-mem": "#009E73",
          "tern-afxdp": "#56B4E9", "tern-afpacket": "#CC79A7", "kern-veth": "#D55E00",
          "kern-lo": "#999999", "linux": "#D55E00"}
ORDER = ["tern-mem", "smoltcp-mem", "lwip-mem", "tern-afxdp", "tern-afpacket", "kern-veth",
         "kern-lo"]
KIND_ORDER = ["in-memory", "real-path", "loopback"]
KIND_TITLE = {"in-memory": "in-memory (no kernel)", "real-path": "real path (veth, kernel client)",
              "loopback": "Linux loopback (reference)"}


def _ok(points, **match):
    return [p for p in points if p["status"] == "ok"
            and all(p.get(k) == v for k, v in match.items())]


def _med(p, m):
    s = (p.get("summary") or {}).get(m)
    return (s["median"], s["min"], s["max"]) if s else (None, None, None)


KIND_OF = {"tern-mem": "in-memory", "smoltcp-mem": "in-memory", "lwip-mem": "in-memory",
           "tern-afxdp": "real-path", "tern-afpacket": "real-path", "kern-veth": "real-path",
           "kern-lo": "loopback"}


def _kind(p):
    return p.get("kind") or KIND_OF.get(p["stack"], "loopback")


def _subtitle(doc):
    m, c = doc["machine"], doc["conditions"]
    load = c.get("loadavg_start")
    return "%s, %s CPUs, kernel %s; median of %d runs, bars = min-max; load %s; commit %s" % (
        m["cpu_model"], m["ncpus"], m["kernel"], c["repeat"],
        "%.1f" % load[0] if load else "?", (doc["git"].get("commit") or "?")[:8])


def eng(v):
    """864k, 6.6k, 25.1, 1.2M: short labels for the bars."""
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return "%.3g%s" % (v / div, suf)
    return "%.3g" % v


def _series_of(p):
    """(label, stack, hatched) of a point's bar."""
    if p.get("variant"):
        return "%s (%s)" % (p["stack"], p["variant"]), p["stack"], True
    return p["stack"], p["stack"], False


def _grouped(ax, points, group_of, metric, log=False):
    """Bars per group (x) and series (colour); min-max whiskers; the median
    above each bar. Returns whether anything was drawn."""
    groups = []
    for p in points:
        g = group_of(p)
        if g is not None and g[0] not in [x[0] for x in groups]:
            groups.append(g)
    groups.sort()
    series = []
    for p in sorted(points, key=lambda p: (ORDER.index(p["stack"]) if p["stack"] in ORDER
                                           else 99, p.get("variant") or "")):
        s = _series_of(p)
        if s not in series and group_of(p) is not None:
            series.append(s)
    if not groups or not series:
        return False
    width = 0.8 / len(series)

    def at(key, label):
        return next((q for q in points if _series_of(q)[0] == label and group_of(q)
                     and group_of(q)[0] == key and _med(q, metric)[0] is not None), None)
    # each group centres the bars it has (a group may lack some series)
    present = {key: [s[0] for s in series if at(key, s[0])] for key, _ in groups}
    for label, stack, hatched in series:
        xs, vals, lo, hi = [], [], [], []
        for i, (key, _) in enumerate(groups):
            p = at(key, label)
            if p is None:
                continue
            med, mn, mx = _med(p, metric)
            here = present[key]
            xs.append(i + (here.index(label) - (len(here) - 1) / 2.0) * width)
            vals.append(med)
            lo.append(med - mn)
            hi.append(mx - med)
        if not xs:
            continue
        bars = ax.bar(xs, vals, width * 0.92, yerr=[lo, hi], capsize=3, label=label,
                      color=COLORS.get(stack, "#555555"), edgecolor="black", linewidth=0.5,
                      hatch="//" if hatched else None, error_kw={"elinewidth": 1})
        for b, v, h in zip(bars, vals, hi):
            ax.annotate(eng(v), (b.get_x() + b.get_width() / 2, v + h),
                        textcoords="offset points", xytext=(0, 2), ha="center",
                        fontsize=7, rotation=90 if len(series) > 3 else 0)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[1] for g in groups], fontsize=8)
    if log:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.15)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    return True


def _panels(plt, points, title, doc, draw, ylabel):
    """One panel per kind of stack present; draw(ax, kind_points) per panel."""
    kinds = [k for k in KIND_ORDER if any(_kind(p) == k for p in points)]
    if not kinds:
        return None
    import matplotlib.ticker as mt
    widths = [3 if k != "loopback" else 1.6 for k in kinds]
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.2 * sum(widths) / 2.2 + 2, 4.8),
                             gridspec_kw={"width_ratios": widths}, squeeze=False)
    drawn = False
    for ax, k in zip(axes[0], kinds):
        ok = draw(ax, [p for p in points if _kind(p) == k])
        drawn = drawn or ok
        ax.set_title(KIND_TITLE[k], fontsize=10)
        if ax.get_yscale() == "linear":
            ax.yaxis.set_major_formatter(mt.EngFormatter())
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title, fontsize=12)
    fig.text(0.5, 0.01, _subtitle(doc), ha="center", fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    return fig if drawn else None


def _save(plt, fig, outdir, name, title, written):
    if fig is None:
        return
    path = os.path.join(outdir, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append((title, path))


def _rr_group(p):
    if p["poll"] != "busy":
        return None
    key = (p["cores"], -(p.get("size") or 0))
    text = "%d core%s" % (p["cores"], "s" if p["cores"] > 1 else "")
    if p.get("size"):
        text += ", %d B" % p["size"]
    return key, text


def plot_latency(plt, doc, rr):
    size = max([p.get("size", 0) for p in rr] or [0])
    lat = [p for p in rr if p["cores"] == 1 and p["poll"] == "busy" and p.get("size") == size]
    pcts = [("p50_us", "p50", "#BBCCEE"), ("p99_us", "p99", "#4477AA"),
            ("p999_us", "p99.9", "#222255")]

    def draw(ax, pts):
        names = [s for s in ORDER if any(p["stack"] == s for p in pts)]
        if not names:
            return False
        w = 0.8 / len(pcts)
        for j, (m, lab, col) in enumerate(pcts):
            xs, vals = [], []
            for i, st in enumerate(names):
                p = next(q for q in pts if q["stack"] == st)
                v = _med(p, m)[0]
                if v:
                    xs.append(i + (j - 1) * w)
                    vals.append(v)
            bars = ax.bar(xs, vals, w * 0.92, label=lab, color=col, edgecolor="black",
                          linewidth=0.5)
            for b, v in zip(bars, vals):
                ax.annotate(eng(v), (b.get_x() + b.get_width() / 2, v),
                            textcoords="offset points", xytext=(0, 2), ha="center", fontsize=6)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=8)
        ax.set_yscale("log")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        return True
    return _panels(plt, lat, "Echo round-trip latency (1 core, %d B, 16 connections, busy poll)"
                   % size, doc, draw, "microseconds (log)")


def plot_poll(plt, doc, rr):
    """Busy vs blocking: per stack with both, req/s and CPU us per request.
    Stacks that wait for a kernel (real path, loopback) only: with both ends
    in one thread an in-memory stack always has work, so it never blocks."""
    pairs = []
    for p in rr:
        if p["poll"] != "busy" or _kind(p) == "in-memory":
            continue
        q = next((x for x in rr if x["stack"] == p["stack"] and x["poll"] == "block" and
                  all(x.get(k) == p.get(k) for k in ("cores", "conns", "size"))), None)
        if q:
            pairs.append((p, q))
    if not pairs:
        return None
    import matplotlib.ticker as mt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    for ax, (m, ylabel) in zip(axes, (("rps", "requests/s"),
                                      ("cpu_us_per_req", "CPU us per request (all CPUs)"))):
        for j, (poll, hatch) in enumerate((("busy", None), ("block", "..."))):
            xs, vals, lo, hi, cols = [], [], [], [], []
            for i, (p, q) in enumerate(pairs):
                med, mn, mx = _med(p if poll == "busy" else q, m)
                if med is None:
                    continue
                xs.append(i + (j - 0.5) * 0.38)
                vals.append(med)
                lo.append(med - mn)
                hi.append(mx - med)
                cols.append(COLORS.get(p["stack"], "#555555"))
            bars = ax.bar(xs, vals, 0.36, yerr=[lo, hi], capsize=3, color=cols,
                          edgecolor="black", linewidth=0.5, hatch=hatch,
                          label="busy polling" if poll == "busy" else "blocking")
            for b, v, h in zip(bars, vals, hi):
                ax.annotate(eng(v), (b.get_x() + b.get_width() / 2, v + h),
                            textcoords="offset points", xytext=(0, 2), ha="center", fontsize=7)
        ax.set_xticks(range(len(pairs)))
        ax.set_xticklabels(["%s\n%d core" % (p["stack"], p["cores"]) for p, _ in pairs],
                           fontsize=8)
        ax.set_ylabel(ylabel)
        ax.yaxis.set_major_formatter(mt.EngFormatter())
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.12)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("Busy polling vs blocking, servers behind a kernel (echo; plain = busy, "
                 "dotted = blocking)", fontsize=12)
    fig.text(0.5, 0.01, _subtitle(doc), ha="center", fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    return fig


def loss_points(loss_doc):
    """The runs of `tern bench loss` (loss.py: {"runs": [{stack, cc,
    direction, loss in %, gbps, ...}]}) as plot_loss's points: one series
    per stack, direction and (Linux) congestion control, the median and
    spread of its runs at each loss rate. Failed runs are left out."""
    from statistics import median
    series = {}
    for r in loss_doc.get("runs", []):
        if r.get("error") or r.get("gbps") is None or r.get("loss") is None:
            continue
        name = "%s %s" % (r["stack"] if r["stack"].startswith("tern") else
                          "linux " + r.get("cc", ""), r["direction"])
        series.setdefault((name, r["loss"]), []).append(r["gbps"])
    return {"points": [{"stack": name, "loss": pct / 100.0,
                        "gbps": {"median": median(v), "min": min(v), "max": max(v)}}
                       for (name, pct), v in sorted(series.items())]}


def plot_loss(plt, loss_doc, subtitle=""):
    """Throughput against loss: loss_doc["points"] = [{"stack", "loss" (0..1),
    "gbps" or "rps" summary {median, min, max}}] (or the runs of `tern bench
    loss`, converted by loss_points); one line per stack."""
    if "runs" in loss_doc and "points" not in loss_doc:
        loss_doc = loss_points(loss_doc)
    pts = [p for p in loss_doc.get("points", []) if p.get("loss") is not None]
    metric = "gbps" if any("gbps" in p for p in pts) else "rps"
    stacks = [s for s in ORDER if any(p["stack"] == s for p in pts)] + \
        sorted({p["stack"] for p in pts} - set(ORDER))
    if not stacks:
        return None
    import matplotlib.ticker as mt
    fig, ax = plt.subplots(figsize=(8, 4.6))
    for st in stacks:
        sp = sorted((p for p in pts if p["stack"] == st), key=lambda p: p["loss"])
        xs = [100 * p["loss"] for p in sp]
        med = [p[metric]["median"] for p in sp]
        lo = [m - p[metric]["min"] for p, m in zip(sp, med)]
        hi = [p[metric]["max"] - m for p, m in zip(sp, med)]
        ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, label=st,
                    color=COLORS.get(st.split(" ")[0]),
                    linestyle="--" if st.endswith(" recv") else "-")
    ax.set_xlabel("frames lost, %")
    ax.set_ylabel("Gbit/s" if metric == "gbps" else "requests/s")
    ax.yaxis.set_major_formatter(mt.EngFormatter())
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Throughput under loss", fontsize=12)
    if subtitle:
        fig.text(0.5, 0.01, subtitle, ha="center", fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def plot_all(doc, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    pts = doc["points"]
    written = []
    rr = _ok(pts, workload="rr")
    fig = _panels(plt, rr, "Echo request/response: requests/s (16 connections per core, "
                  "busy poll)", doc, lambda ax, p: _grouped(ax, p, _rr_group, "rps"),
                  "requests/s")
    _save(plt, fig, outdir, "echo.png", "echo requests/s", written)

    http = _ok(pts, workload="http")
    fig = _panels(plt, http, "HTTP keep-alive, 151-byte response: requests/s (busy poll)",
                  doc, lambda ax, p: _grouped(ax, p, _rr_group, "rps"), "requests/s")
    _save(plt, fig, outdir, "http.png", "HTTP requests/s", written)

    bulk = _ok(pts, workload="bulk")
    flows = lambda p: ((p["conns"],), "%d flow%s" % (p["conns"], "s" if p["conns"] > 1 else ""))
    fig = _panels(plt, bulk, "Bulk transfer, every byte written, summed and checked: Gbit/s "
                  "(hatched: tern's shortcuts)", doc,
                  lambda ax, p: _grouped(ax, p, flows, "gbps"), "Gbit/s")
    _save(plt, fig, outdir, "bulk.png", "bulk Gbit/s", written)

    _save(plt, plot_latency(plt, doc, rr), outdir, "latency.png", "echo latency", written)
    _save(plt, plot_poll(plt, doc, rr), outdir, "poll.png", "busy polling vs blocking",
          written)
    if doc.get("loss"):
        _save(plt, plot_loss(plt, doc["loss"], _subtitle(doc)), outdir, "loss.png",
              "throughput under loss", written)
    return written


def main(argv):
    if len(argv) == 3 and argv[0] == "--loss":
        # the JSON of `tern bench loss` -> one PNG
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        with open(argv[1]) as f:
            doc = json.load(f)
        fig = plot_loss(plt, doc, "commit %s; load %s; median and min-max of the runs" % (
            (doc.get("commit") or "?")[:8], doc.get("loadavg_start")))
        if fig is None:
            sys.stderr.write("plots.py: no completed runs in %s\n" % argv[1])
            return 1
        fig.savefig(argv[2], dpi=110)
        print("%s\tthroughput under loss" % argv[2])
        return 0
    if len(argv) != 2:
        sys.stderr.write("usage: plots.py RESULT.json OUTDIR | plots.py --loss LOSS.json OUT.png\n")
        return 2
    with open(argv[0]) as f:
        doc = json.load(f)
    for title, path in plot_all(doc, argv[1]):
        print("%s\t%s" % (path, title))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
