#!/bin/sh
# bench_steer.sh - software steering against direct queues.
#
# tern-echo --server on two cores behind one veth (or tap), kern-echo
# --client in the kernel-side namespace: 64-byte request/response over
# CONNS connections for DUR seconds, REPS times per setup, setups
# interleaved so that drifting background load hits them all alike:
#
#   1core      one core, one queue (what --steer must beat)
#   direct     two cores, two queues spread by the kernel (AF_PACKET
#              fanout=hash, multi-queue tap)
#   steer      two cores, ONE queue read by core 0, --steer (core 1 gets
#              its flows and sends through core 0)
#   steer2q    two cores, two queues as in direct, plus --steer
#              (frames the kernel put on the wrong queue are handed over)
#
# Prints one line per run and the median per setup. Root only.
# Usage: tests/steer/bench_steer.sh [afpacket|tap] (env: DUR, REPS, CONNS,
# BIN). (AF_XDP is left out: a queue only sees its own veth rx queue, so
# one queue on a two-queue veth loses half the flows, and a one-queue
# veth cannot host the direct setup.)
set -eu
DRV=${1:-afpacket}
DUR=${DUR:-10}
REPS=${REPS:-3}
CONNS=${CONNS:-32}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=${BIN:-$SRC/build/bin}
P=sb$$
OUT=/tmp/tern-steer-bench-$$.txt
case $DRV in
tap) UP="--tap" ;;
*) UP="" ;;
esac
# shellcheck disable=SC2086
eval "$(sh "$SRC/tools/netns.sh" up --prefix "$P" $UP)"
trap 'sh "$SRC/tools/netns.sh" down --prefix "$P" >/dev/null 2>&1; rm -f "$OUT"' EXIT INT TERM

run() { # name, tern flags...
    name=$1
    shift
    ip netns exec "$NS_T" "$BIN/tern-echo" --server --port 7007 \
        --driver "$DRV" --iface "$IF_T" --ip "$IP_T/24" "$@" --json \
        >"$OUT.srv" 2>&1 &
    srv=$!
    i=0
    until ip netns exec "$NS_K" ping -c1 -W1 -q "$IP_T" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -ge 10 ]; then
            # e.g. direct AF_PACKET queues: the ARP reply to a core's
            # request lands on the other core (docs/performance.md)
            echo "$name: tern does not answer ping" | tee -a "$OUT"
            kill -INT $srv
            wait $srv || true
            return 0
        fi
    done
    ip netns exec "$NS_K" "$BIN/kern-echo" --client "$IP_T:7007" \
        --conns "$CONNS" --duration "$DUR" --json >"$OUT.cli" 2>&1 || true
    kill -INT $srv
    wait $srv || true
    python3 - "$name" "$OUT.cli" "$OUT.srv" <<'EOF' | tee -a "$OUT"
import json, sys
name, cli, srv = sys.argv[1:]
c = json.loads(open(cli).read().strip().splitlines()[-1])
s = json.loads(open(srv).read().strip().splitlines()[-1])
pc = s.get("per_core", {})
acc = [pc[k]["passive_opens"] for k in sorted(pc)] or [s.get("accepted")]
# share of the requests each core served (64-byte requests)
share = [round(pc[k]["bytes_in"] / max(1, s["counters"]["tcp_bytes_in"]), 2)
         for k in sorted(pc)] or [1.0]
hand = sum(v.get("steer_out", 0) for v in pc.values())
tx = sum(v.get("steer_tx_forwarded", 0) for v in pc.values())
print("%-8s rps %8d p50_us %6s p99_us %6s accepts/core %s share/core %s "
      "handed %d tx_fwd %d retrans %d" % (
          name, c["rps"], c["p50_us"], c["p99_us"], acc, share, hand, tx,
          s["retransmits"]))
EOF
}

r=0
while [ $r -lt "$REPS" ]; do
    run 1core --cores 0
    run direct --cores 0,1
    run steer --cores 0,1 --steer
    run steer2q --cores 0,1 --steer --steer-queues 2
    r=$((r + 1))
done
python3 - "$OUT" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[1] == "rps":
        runs.setdefault(f[0], []).append(int(f[2]))
for name, v in runs.items():
    print("median %-8s %8d rps over %d runs %s" % (
        name, statistics.median(v), len(v), v))
EOF
