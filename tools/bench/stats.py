"""Summaries of repeated runs: never a single number without its spread."""
import statistics


def quantile(sorted_vals, q):
    """Linear-interpolated quantile of an already sorted list."""
    if not sorted_vals:
        return None
    pos = (len(sorted_vals) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def summarize(values):
    """{n, median, min, max, q1, q3, spread_pct} of the numbers given (None
    values are left out); None when there is nothing to summarize."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    med = statistics.median(vals)
    out = {
        "n": len(vals),
        "median": med,
        "min": vals[0],
        "max": vals[-1],
        "q1": quantile(vals, 0.25),
        "q3": quantile(vals, 0.75),
    }
    # Spread as a share of the median: (max - min) / median.
    out["spread_pct"] = 100.0 * (vals[-1] - vals[0]) / med if med else None
    return out


def ratio(a, b):
    """a / b of two medians, None when either is missing or b is 0."""
    if a is None or b in (None, 0):
        return None
    return a / b
