#!/bin/sh
# tap.sh DPDK_PEER MODE [DRIVER_OPTS]
#
# tern on the dpdk driver's net_tap, the Linux kernel as the peer, in a
# network namespace made for the run (kernel 198.18.1.1, tern 198.18.1.2).
#   MODE ping_udp: the kernel pings tern (ping -c 3); Python sends 100 UDP
#                  datagrams of 5..1400 bytes that tern echoes back (the
#                  kernel drops any with a wrong checksum); tern pings the
#                  kernel too
#   MODE tcp:      tern connects to a Python TCP echo server (200 rounds of
#                  64 bytes), and Python connects to tern's echo server (200
#                  rounds of 64 bytes, then 20 of 16 KiB)
# Exits 77 (SKIP) when the machine cannot host it (not root, no netns, no
# ping/python3) or DPDK cannot be initialised.
set -u
peer=$1
mode=$2
opts=${3:-}
here=$(cd "$(dirname "$0")" && pwd)

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (DPDK EAL, tap, namespaces)"
command -v ip >/dev/null 2>&1 || skip "iproute2 is not installed"
command -v ping >/dev/null 2>&1 || skip "ping is not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 is not installed"
[ -e /dev/net/tun ] || skip "/dev/net/tun is missing"

ns="tdpdk$$"
ifn="tdtap$$"
dir=$(mktemp -d /tmp/tern-dpdk-tap.XXXXXX)
pid=
srv=
cleanup() {
    [ -n "$srv" ] && kill "$srv" 2>/dev/null
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM
ip netns add "$ns" 2>/dev/null || skip "cannot create network namespaces"
ip -n "$ns" link set lo up

eal="--no-huge -m 256 --no-pci --no-shconf --no-telemetry --vdev=net_tap0,iface=$ifn"
x=${opts:+--extra $opts}
case "$mode" in
    ping_udp) cargs="--ping 3" ;;
    tcp) cargs="--tcp 200 --size 64" ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
ip netns exec "$ns" "$peer" --iface net_tap0 --ip 198.18.1.2 \
    --peer 198.18.1.1 --serve $cargs --seconds 40 $x --eal "$eal" \
    --ready "$dir/ready" --go "$dir/go" --done "$dir/done" >"$dir/tern.log" 2>&1 &
pid=$!
i=0
while [ ! -e "$dir/ready" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid"; rc=$?; pid=
        cat "$dir/tern.log"
        [ "$rc" = 77 ] && skip "DPDK cannot be initialised here"
        echo "FAIL: tern did not start"; exit 1
    fi
    i=$((i + 1))
    [ $i -gt 200 ] && { cat "$dir/tern.log"; echo "FAIL: not ready"; exit 1; }
    sleep 0.05
done
ip -n "$ns" addr add 198.18.1.1/24 dev "$ifn"
ip -n "$ns" link set "$ifn" up
fail=0
if [ "$mode" = tcp ]; then
    ip netns exec "$ns" python3 "$here/kern_peer.py" tcp-server 198.18.1.1 \
        7778 "$dir/listening" &
    srv=$!
    i=0
    while [ ! -e "$dir/listening" ] && [ $i -lt 100 ]; do
        i=$((i + 1))
        sleep 0.1
    done
fi
touch "$dir/go"

if [ "$mode" = ping_udp ]; then
    ip netns exec "$ns" ping -c 3 -i 0.2 -W 2 198.18.1.2 || fail=1
    ip netns exec "$ns" python3 "$here/kern_peer.py" udp 198.18.1.2 7777 100 || fail=1
else
    ip netns exec "$ns" python3 "$here/kern_peer.py" tcp-client 198.18.1.2 7778 200 64 || fail=1
    ip netns exec "$ns" python3 "$here/kern_peer.py" tcp-client 198.18.1.2 7778 20 16384 || fail=1
fi
# tern's own client role (ping or TCP rounds against the kernel): wait for
# it, then stop tern; its exit status is that role's verdict.
i=0
while [ ! -e "$dir/done" ] && [ $i -lt 300 ] && kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    sleep 0.1
done
kill "$pid" 2>/dev/null
wait "$pid"
rc=$?
pid=
cat "$dir/tern.log"
[ "$rc" = 0 ] || fail=1
[ "$fail" = 0 ] && echo "PASS" || echo "FAIL"
exit "$fail"
