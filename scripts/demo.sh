#!/bin/sh
# demo.sh BUILD_DIR - tern beside the Linux kernel, served to real clients.
#
# With root: two identical test networks from tools/netns.sh (a namespace
# "k" with the clients, joined by a veth pair to a namespace "t"). On one,
# tern-httpd owns the t end through AF_XDP (afpacket if AF_XDP fails); on
# the other, kern-httpd serves from the kernel of the t end. curl fetches a
# page from each, over IPv4 and over IPv6 (curl -6), wrk loads each for a
# few seconds, then redis-benchmark
# loads tern-kv (network a) and redis-server (network b), and a table
# compares requests/s and latency. Everything is torn down on exit.
#
# Without root (no namespaces) the same comparison runs in-process: tern
# over the mem driver against the kernel over loopback.
set -u

BUILD=${1:-build}
BIN=$BUILD/bin
HERE=$(cd "$(dirname "$0")/.." && pwd)
NETNS="$HERE/tools/netns.sh"
SECS=${DEMO_SECONDS:-4}
CONNS=${DEMO_CONNS:-16}
PORT=8080
TMP=$(mktemp -d /tmp/tern-demo.XXXXXX)
PIDS=""
ENVS=""

say() { printf '%s\n' "demo: $*"; }

cleanup() {
    for p in $PIDS; do kill -INT "$p" 2>/dev/null; done
    sleep 0.3
    for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
    for e in $ENVS; do sh "$NETNS" --env "$e" down >/dev/null 2>&1; done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

for p in tern-httpd kern-httpd; do
    [ -x "$BIN/$p" ] || { say "$BIN/$p not built (run make first)"; exit 1; }
done

# ---- result table -------------------------------------------------------
ROWS="$TMP/rows"
: >"$ROWS"
row() { printf '%-34s %12s %10s %10s\n' "$1" "$2" "$3" "$4" >>"$ROWS"; }

# wrk output -> "rps p50 p99" (latencies as wrk prints them, e.g. 52.00us)
wrk_figures() {
    awk '/Requests\/sec:/ {rps=$2}
         /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
         END {printf "%s %s %s\n", rps ? rps : "-", p50 ? p50 : "-", p99 ? p99 : "-"}' "$1"
}

# JSON from our own programs -> "rps p50us p99us"
json_figures() {
    python3 -c 'import json,sys
d=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print("%.0f %.1fus %.1fus" % (d["rps"], d["p50_us"], d["p99_us"]))' "$1" 2>/dev/null ||
        echo "- - -"
}

print_table() {
    printf '\n%-34s %12s %10s %10s\n' "server (client)" "requests/s" "p50" "p99"
    printf '%-34s %12s %10s %10s\n' "----------------------------------" \
        "------------" "----------" "----------"
    cat "$ROWS"
    echo
}

# ---- without root: in-process comparison ---------------------------------
demo_local() {
    say "$1; comparing in-process instead: tern over the mem driver, the kernel over loopback"
    "$BIN/tern-httpd" --driver mem --conns "$CONNS" --duration "$SECS" \
        --poll busy --json >"$TMP/tm.json" 2>"$TMP/tm.err" ||
        say "tern-httpd over mem failed: $(tail -n 1 "$TMP/tm.err")"
    set -- $(json_figures "$TMP/tm.json")
    row "tern-httpd mem (built-in)" "$1" "$2" "$3"

    kp=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
    "$BIN/kern-httpd" --port "$kp" --cores 0 >/dev/null 2>"$TMP/kh.err" &
    PIDS="$PIDS $!"
    sleep 0.5
    code=$(curl -s -o "$TMP/kbody" -w '%{http_code}' "http://127.0.0.1:$kp/")
    say "curl kern-httpd (loopback): HTTP $code, $(wc -c <"$TMP/kbody") byte body"
    "$BIN/kern-httpd" --client "127.0.0.1:$kp" --conns "$CONNS" \
        --duration "$SECS" --cores 1 --json >"$TMP/kc.json" 2>/dev/null
    set -- $(json_figures "$TMP/kc.json")
    row "kern-httpd loopback (built-in)" "$1" "$2" "$3"
    if command -v wrk >/dev/null 2>&1; then
        taskset -c 1 wrk -t 1 -c "$CONNS" -d "$SECS" --latency \
            "http://127.0.0.1:$kp/" >"$TMP/kw.txt" 2>&1
        set -- $(wrk_figures "$TMP/kw.txt")
        row "kern-httpd loopback (wrk)" "$1" "$2" "$3"
    fi
    print_table
    say "tern over mem runs both stacks in one thread with no NIC; run as root for the veth comparison"
}

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
    demo_local "not root: no network namespaces"
    exit 0
fi

# ---- with root: two identical veth test networks -------------------------
up() {
    env="$TMP/$1.env"
    if ! sh "$NETNS" up --env "$env" --prefix "td$$$1" >/dev/null 2>"$TMP/$1.err"; then
        return 1
    fi
    ENVS="$ENVS $env"
}
if ! up a || ! up b; then
    demo_local "tools/netns.sh up failed ($(tail -n 1 "$TMP/a.err" "$TMP/b.err" 2>/dev/null | grep -v '^==' | head -n 1))"
    exit 0
fi

# Network a: tern on the t end.
. "$TMP/a.env"
A_K=$NS_K A_T=$NS_T A_IF=$IF_T A_IP=$IP_T A_IP6=$IP6_T
# Network b: the kernel on the t end (give it the address tern owns in a).
. "$TMP/b.env"
B_K=$NS_K B_T=$NS_T B_IP=$IP_T B_IP6=$IP6_T
ip netns exec "$B_T" ip addr add "$IP_T/$PREFIX_LEN" dev "$IF_T"
# ... and its IPv6 address (netns.sh leaves the kernel's IPv6 off there).
ip netns exec "$B_T" sysctl -qw "net.ipv6.conf.$IF_T.accept_dad=0" \
    "net.ipv6.conf.$IF_T.disable_ipv6=0"
ip netns exec "$B_T" ip addr add "$IP6_T/$PREFIX6_LEN" dev "$IF_T" nodad

reachable() {  # ns ip -> 0 when a page comes back within ~5 s
    i=0
    while [ $i -lt 25 ]; do
        code=$(ip netns exec "$1" curl -s -m 1 -o /dev/null -w '%{http_code}' "http://$2:$PORT/")
        [ "$code" = 200 ] && return 0
        i=$((i + 1))
        sleep 0.2
    done
    return 1
}

start_tern() {  # driver
    ip netns exec "$A_T" "$BIN/tern-httpd" --driver "$1" --iface "$A_IF" \
        --ip "$A_IP/24" --ip6 "$A_IP6/64" --port "$PORT" --cores 1 \
        $TERN_POLL >"$TMP/tern.out" 2>"$TMP/tern.err" &
    TERN_PID=$!
    PIDS="$PIDS $TERN_PID"
    if reachable "$A_K" "$A_IP"; then
        return 0
    fi
    kill -INT "$TERN_PID" 2>/dev/null
    sleep 0.3
    kill -KILL "$TERN_PID" 2>/dev/null
    return 1
}

TERN_POLL="--poll busy"
TERN_DRV=""
if start_tern afxdp; then
    TERN_DRV=afxdp
else
    say "AF_XDP failed ($(tail -n 1 "$TMP/tern.err" 2>/dev/null)); falling back to afpacket"
    if start_tern afpacket; then
        TERN_DRV=afpacket
    else
        say "afpacket failed too ($(tail -n 1 "$TMP/tern.err" 2>/dev/null))"
    fi
fi

ip netns exec "$B_T" "$BIN/kern-httpd" --port "$PORT" --cores 1 --poll busy \
    >"$TMP/kern.out" 2>"$TMP/kern.err" &
PIDS="$PIDS $!"
reachable "$B_K" "$B_IP" || say "kern-httpd did not answer: $(tail -n 1 "$TMP/kern.err")"

fetch() {  # label ns ip
    code=$(ip netns exec "$2" curl -s -m 5 -o "$TMP/body" -w '%{http_code}' "http://$3:$PORT/")
    say "curl $1: HTTP $code, $(wc -c <"$TMP/body" 2>/dev/null || echo 0) byte body"
}
[ -n "$TERN_DRV" ] && fetch "tern-httpd ($TERN_DRV, veth)" "$A_K" "$A_IP"
fetch "kern-httpd (kernel, veth)" "$B_K" "$B_IP"
fetch6() {  # label ns ip6: curl -6, a few tries while the address is new
    i=0
    while [ $i -lt 10 ]; do
        code=$(ip netns exec "$2" curl -6 -g -s -m 2 -o "$TMP/body" \
               -w '%{http_code}' "http://[$3]:$PORT/")
        [ "$code" = 200 ] && break
        i=$((i + 1))
        sleep 0.3
    done
    say "curl -6 $1: HTTP $code, $(wc -c <"$TMP/body" 2>/dev/null || echo 0) byte body"
}
[ -n "$TERN_DRV" ] && fetch6 "tern-httpd ($TERN_DRV, veth)" "$A_K" "$A_IP6"
fetch6 "kern-httpd (kernel, veth)" "$B_K" "$B_IP6"

load() {  # label ns ip
    if ! command -v wrk >/dev/null 2>&1; then
        row "$1" "wrk missing" "-" "-"
        return
    fi
    ip netns exec "$2" taskset -c 0 wrk -t 1 -c "$CONNS" -d "$SECS" --latency \
        "http://$3:$PORT/" >"$TMP/wrk.txt" 2>&1
    if grep -q "Non-2xx\|Socket errors" "$TMP/wrk.txt"; then
        say "$1: wrk saw errors: $(grep 'Non-2xx\|Socket errors' "$TMP/wrk.txt" | tr -s ' ')"
    fi
    set -- "$1" $(wrk_figures "$TMP/wrk.txt")
    row "$1" "$2" "$3" "$4"
}
say "wrk: $CONNS connections, $SECS s each, client on CPU 0, servers on CPU 1 (busy polling)"
if [ -n "$TERN_DRV" ]; then
    load "tern-httpd $TERN_DRV (wrk)" "$A_K" "$A_IP"
else
    row "tern-httpd (no driver worked)" "-" "-" "-"
fi
load "kern-httpd kernel (wrk)" "$B_K" "$B_IP"

# ---- key-value: redis-benchmark against tern-kv and redis-server ----------
# tern-kv takes network a's interface from tern-httpd; redis-server (the
# server people would pick) runs on network b's kernel, pinned to the same
# CPU 1. One key, 3-byte values, 50 connections, no pipelining.
KV_N=${DEMO_KV_REQUESTS:-30000}
kv_bench() {  # label ns ip
    ip netns exec "$2" taskset -c 0 redis-benchmark -h "$3" -c 50 -n "$KV_N" \
        -t set,get --csv >"$TMP/kv.csv" 2>&1
    for t in SET GET; do
        set -- "$1" $(awk -F'","' -v t="\"$t" '$1 == t {printf "%.0f %sms %sms", $2, $5, $7}' \
            "$TMP/kv.csv")
        row "$1 ($t)" "${2:--}" "${3:--}" "${4:--}"
    done
}
kv_up() {  # ns ip -> 0 once it answers PING (~5 s)
    i=0
    while [ $i -lt 25 ]; do
        [ "$(ip netns exec "$1" redis-cli -h "$2" PING 2>/dev/null)" = PONG ] && return 0
        i=$((i + 1))
        sleep 0.2
    done
    return 1
}
if ! command -v redis-benchmark >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1; then
    say "redis-benchmark or redis-server missing (scripts/deps.sh): no key-value comparison"
elif [ -n "$TERN_DRV" ]; then
    kill -INT "$TERN_PID" 2>/dev/null
    wait "$TERN_PID" 2>/dev/null
    ip netns exec "$A_T" "$BIN/tern-kv" --driver "$TERN_DRV" --iface "$A_IF" \
        --ip "$A_IP/24" --cores 1 >/dev/null 2>"$TMP/kv.err" &
    PIDS="$PIDS $!"
    ip netns exec "$B_T" taskset -c 1 redis-server --bind "$B_IP" --save "" \
        --appendonly no --protected-mode no >/dev/null 2>&1 &
    PIDS="$PIDS $!"
    say "redis-benchmark: 50 connections, $KV_N requests per test, client on CPU 0, servers on CPU 1"
    if kv_up "$A_K" "$A_IP"; then
        kv_bench "tern-kv $TERN_DRV" "$A_K" "$A_IP"
    else
        say "tern-kv did not answer: $(tail -n 1 "$TMP/kv.err")"
    fi
    if kv_up "$B_K" "$B_IP"; then
        kv_bench "redis-server kernel" "$B_K" "$B_IP"
    else
        say "redis-server did not answer"
    fi
fi
print_table
exit 0
