"""The points to run: stack x workload x cores x connections x size x poll.

Full mode, per stack (the workloads' knobs, not the whole cross product):
  rr    cores 1 and 2 at 64 B, busy polling (16 connections per core)
        cores 1 at 1 B, busy
        cores 1 at 64 B, blocking (busy vs blocking: epoll timeout 0 vs
        1000 ms for the kernel, --poll busy|block for tern)
  http  cores 1 and 2, busy; cores 1 blocking (151-byte response, wrk)
  bulk  1 and 4 flows, cores 1, busy, the application's data path; tern-mem
        also with each shortcut of stacks.BULK_VARIANTS at 1 flow
Quick mode: one point per stack and workload (cores 1, 64 B, 1 flow).
A stack runs only the workloads it has (lwip-mem: rr and bulk).
"""
CONNS_PER_CORE = 16


def point(workload, stack, cores, poll, size=None, flows=None, bulk_bytes=None,
          variant=None):
    p = {"workload": workload, "stack": stack.name, "cores": cores, "poll": poll}
    if workload == "bulk":
        p["conns"] = flows
        p["bytes"] = bulk_bytes
        if variant:
            p["variant"] = variant
    else:
        p["conns"] = CONNS_PER_CORE * cores
        if workload == "rr":
            p["size"] = size
    p["id"] = point_id(p)
    return p


def point_id(p):
    parts = [p["workload"], p["stack"], "c%d" % p["cores"], "n%d" % p["conns"]]
    if "size" in p:
        parts.append("s%d" % p["size"])
    parts.append(p["poll"])
    if p.get("variant"):
        parts.append(p["variant"])
    return "/".join(parts)


def build(stacks, workloads, quick, cores_list, sizes, flows, bulk_bytes):
    """The list of points, in the order they run (grouped by stack so each
    stack's test hosts are made once)."""
    pts = []
    seen = set()

    def add(p):
        if p["id"] not in seen:
            seen.add(p["id"])
            pts.append(p)

    from .stacks import BULK_VARIANTS
    for st in stacks:
        cores_ok = [c for c in cores_list if c <= st.max_cores]
        busy = "busy" if "busy" in st.polls else st.polls[0]
        workloads_here = [w for w in workloads if w in st.workloads]
        if "rr" in workloads_here:
            if quick:
                add(point("rr", st, cores_ok[0], busy, size=sizes[-1]))
            else:
                for c in cores_ok:
                    add(point("rr", st, c, busy, size=sizes[-1]))
                for s in sizes[:-1]:
                    add(point("rr", st, cores_ok[0], busy, size=s))
                for poll in st.polls:
                    add(point("rr", st, cores_ok[0], poll, size=sizes[-1]))
        if "http" in workloads_here:
            if quick:
                add(point("http", st, cores_ok[0], busy))
            else:
                for c in cores_ok:
                    add(point("http", st, c, busy))
                for poll in st.polls:
                    add(point("http", st, cores_ok[0], poll))
        if "bulk" in workloads_here:
            for f in (flows[:1] if quick else flows):
                add(point("bulk", st, 1, busy, flows=f, bulk_bytes=bulk_bytes))
            if st.name == "tern-mem" and not quick:
                for v in BULK_VARIANTS:
                    add(point("bulk", st, 1, busy, flows=flows[0], bulk_bytes=bulk_bytes,
                              variant=v))
    return pts


def parse_int_list(text, what, lo=1, hi=1 << 20):
    """'1,2,4' -> [1, 2, 4]; ValueError with a readable message."""
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError("%s: '%s' is not a comma-separated list of numbers" % (what, text))
    if not vals:
        raise ValueError("%s: empty list" % what)
    for v in vals:
        if not lo <= v <= hi:
            raise ValueError("%s: %d is out of range %d..%d" % (what, v, lo, hi))
    return sorted(set(vals))

