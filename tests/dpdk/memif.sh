#!/bin/sh
# memif.sh DPDK_PEER MODE [DRIVER_OPTS]
#
# Two tern processes on the dpdk driver joined by net_memif (a socket file
# under /tmp, unique per run): the server (198.18.0.1) answers; the client
# (198.18.0.2) checks.
#   MODE ping_udp: 5 pings answered, 300 UDP datagrams of 5..1400 bytes
#                  echoed back intact (checksums verified by both stacks)
#   MODE tcp:      200 request/response rounds of 64 bytes, then 20 of
#                  16 KiB, every byte checked
# DRIVER_OPTS go to both ends (e.g. offloads=0). Exits 77 (SKIP) when DPDK
# cannot be initialised here.
set -u
peer=$1
mode=$2
opts=${3:-}

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "DPDK's EAL needs root here"
[ -x "$peer" ] || { echo "no $peer" >&2; exit 2; }

dir=$(mktemp -d /tmp/tern-memif.XXXXXX)
sock="$dir/memif.sock"
srv_pid=
cli_pid=
cleanup() {
    for p in $srv_pid $cli_pid; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

eal="--no-huge -m 256 --no-pci --no-shconf --no-telemetry"
memif="socket=$sock,socket-abstract=no"
x=${opts:+--extra $opts}

# server LOG: start the server, wait until its port is open.
server() {
    rm -f "$dir/ready"
    # shellcheck disable=SC2086
    "$peer" --iface net_memif0 --ip 198.18.0.1 --serve --seconds 60 $x \
        --eal "$eal --vdev=net_memif0,role=server,$memif" \
        --ready "$dir/ready" >"$1" 2>&1 &
    srv_pid=$!
    i=0
    while [ ! -e "$dir/ready" ]; do
        if ! kill -0 "$srv_pid" 2>/dev/null; then
            wait "$srv_pid"; rc=$?
            srv_pid=
            cat "$1"
            [ "$rc" = 77 ] && skip "$(grep SKIP "$1" | head -1)"
            echo "FAIL: the memif server did not start"; exit 1
        fi
        i=$((i + 1))
        [ $i -gt 200 ] && { echo "FAIL: server not ready"; cat "$1"; exit 1; }
        sleep 0.05
    done
}

# One client run against a server of its own. The side that stays must
# not poll while the other leaves: DPDK 22.11's memif PMD unmaps the rings
# from its interrupt thread under a poller that may be inside rx_burst
# (seen as a server SIGSEGV in about 1 run of 40). So the client, once
# done, holds its port unpolled (--hold); the server is stopped and must
# exit 0; only then the client is released, and its status is the test's.
client() {
    server "$dir/server.log"
    rm -f "$dir/done"
    # shellcheck disable=SC2086
    "$peer" --iface net_memif0 "$@" $x --done "$dir/done" --hold \
        --eal "$eal --vdev=net_memif0,role=client,$memif" \
        >"$dir/client.log" 2>&1 &
    cli_pid=$!
    while [ ! -e "$dir/done" ] && kill -0 "$cli_pid" 2>/dev/null; do
        sleep 0.02
    done
    kill "$srv_pid" 2>/dev/null
    wait "$srv_pid"; src=$?
    srv_pid=
    kill "$cli_pid" 2>/dev/null
    wait "$cli_pid"; crc=$?
    cli_pid=
    cat "$dir/client.log"
    echo "--- server (exit $src):"
    cat "$dir/server.log"
    [ "$crc" = 0 ] || return "$crc"
    [ "$src" = 0 ] || { echo "FAIL: the server exited $src"; return 1; }
    return 0
}

case "$mode" in
    ping_udp) args="--ping 5 --udp 300" ;;
    tcp) args="--tcp 200 --size 64" ;;
    tcp_big) args="--tcp 20 --size 16384" ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
client --ip 198.18.0.2 --peer 198.18.0.1 $args --seconds 30
rc=$?
if [ "$rc" = 0 ] && [ "$mode" = tcp ]; then
    # and bigger requests: several segments per request, both ways
    client --ip 198.18.0.3 --peer 198.18.0.1 --tcp 20 --size 16384 \
        --seconds 30
    rc=$?
fi
[ "$rc" = 77 ] && skip "DPDK cannot be initialised here"
[ "$rc" = 0 ] && echo "PASS" || echo "FAIL (client exit $rc)"
exit "$rc"
