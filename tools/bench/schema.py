"""The shape of a result document (schema "tern-bench/1"), checked by hand
so no extra package is needed. `tern bench validate FILE.json` prints the
problems and exits 1 when there are any."""
import json

SCHEMA = "tern-bench/1"
STATUSES = ("ok", "unavailable", "failed")
PRIMARY = {"rr": "rps", "http": "rps", "bulk": "gbps"}

TOP = {
    "schema": str, "generated_at": str, "mode": str, "command_line": list,
    "git": dict, "machine": dict, "doctor": dict, "conditions": dict,
    "stacks": dict, "points": list, "callgrind": list, "outputs": dict,
}
POINT = {"id": str, "workload": str, "stack": str, "cores": int, "conns": int,
         "poll": str, "status": str}
MACHINE = ("cpu_model", "ncpus", "kernel", "hostname")
SUMMARY = ("n", "median", "min", "max", "q1", "q3")


def problems(doc):
    """Every way doc departs from the schema, as readable lines."""
    out = []
    if not isinstance(doc, dict):
        return ["the document is not a JSON object"]
    for k, t in TOP.items():
        if k not in doc:
            out.append("missing top-level key '%s'" % k)
        elif not isinstance(doc[k], t):
            out.append("'%s' should be a %s" % (k, t.__name__))
    if out:
        return out
    if doc["schema"] != SCHEMA:
        out.append("schema is %r, expected %r" % (doc["schema"], SCHEMA))
    for k in MACHINE:
        if k not in doc["machine"]:
            out.append("machine lacks '%s'" % k)
    if "commit" not in doc["git"]:
        out.append("git lacks 'commit'")
    for k in ("repeat", "warmup_runs", "duration_s"):
        if k not in doc["conditions"]:
            out.append("conditions lack '%s'" % k)
    repeat = doc["conditions"].get("repeat", 0)
    for name, st in doc["stacks"].items():
        if not isinstance(st, dict) or not isinstance(st.get("available"), bool):
            out.append("stack %s: 'available' must be true or false" % name)
        elif not st["available"] and not st.get("reason"):
            out.append("stack %s is unavailable without a reason" % name)
    for i, p in enumerate(doc["points"]):
        out.extend(_point(i, p, doc["stacks"], repeat))
    for c in doc["callgrind"]:
        if not isinstance(c, dict) or "stack" not in c:
            out.append("callgrind entry without 'stack'")
        elif c.get("status", "ok") == "ok" and not isinstance(
                c.get("instructions_per_request"), (int, float)):
            out.append("callgrind %s: no instructions_per_request" % c["stack"])
    return out


def _point(i, p, stacks, repeat):
    where = "point %d (%s)" % (i, p.get("id", "?") if isinstance(p, dict) else "?")
    if not isinstance(p, dict):
        return [where + ": not an object"]
    out = []
    for k, t in POINT.items():
        if not isinstance(p.get(k), t):
            out.append("%s: '%s' missing or not a %s" % (where, k, t.__name__))
    if out:
        return out
    if p["status"] not in STATUSES:
        out.append("%s: status %r not one of %s" % (where, p["status"], STATUSES))
    if p["stack"] not in stacks:
        out.append("%s: stack %s not described in 'stacks'" % (where, p["stack"]))
    if p["workload"] not in PRIMARY:
        out.append("%s: unknown workload %r" % (where, p["workload"]))
        return out
    if p["status"] != "ok":
        if not p.get("reason"):
            out.append("%s: %s without a reason" % (where, p["status"]))
        return out
    runs = p.get("runs")
    if not isinstance(runs, list) or len(runs) != repeat:
        out.append("%s: expected %d runs, found %s" % (where, repeat,
                                                      len(runs) if isinstance(runs, list) else "none"))
    if not isinstance(p.get("warmup"), dict):
        out.append("%s: no warm-up run recorded" % where)
    s = (p.get("summary") or {}).get(PRIMARY[p["workload"]])
    if not isinstance(s, dict) or any(k not in s for k in SUMMARY):
        out.append("%s: no summary of %s (median, spread)" % (where, PRIMARY[p["workload"]]))
    elif not s["median"] or s["median"] <= 0:
        out.append("%s: %s median is not positive" % (where, PRIMARY[p["workload"]]))
    if not p.get("command"):
        out.append("%s: command line not recorded" % where)
    return out


def validate_file(path):
    with open(path) as f:
        return problems(json.load(f))
