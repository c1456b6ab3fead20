#!/bin/sh
# apps.sh BINDIR MODE DPDK_FOUND
#
# The programs themselves (tern-echo, tern-bulk) on --driver dpdk:
#   memif_echo  tern-echo --server and tern-echo --client as two processes
#               joined by net_memif (a socket file made for the run):
#               exactly $REQ round trips, both reports checked
#   memif_bulk  tern-bulk --server and tern-bulk --client over
#               net_memif: 64 MiB, every byte checked against the pattern
#   tap_client  tern on net_tap as the client, Linux as the server, in a
#               namespace made for the run: tern-echo --client against
#               kern-echo --server, tern-bulk --client against kern-bulk
#               --server --verify pattern (every byte checked by Linux)
#   tap_server  tern on net_tap as the server, Linux as the client:
#               kern-echo --client against tern-echo --server, kern-bulk
#               --client against tern-bulk --server --once
#   tap6_server the same as tap_server over an IPv6-only link: tern has
#               only --ip6 (no IPv4 address), the kernel end only
#               2001:db8:1::1 (no IPv4), kern-echo and kern-bulk connect
#               to [2001:db8:1::2], curl -6 and wrk fetch from
#               tern-httpd; tern's counters show no ARP or IPv4
# Every program prints --json; the checks read those reports. Nothing here
# is timed: each process has a generous bound only so that a stall fails
# instead of hanging. DPDK_FOUND is CMake's TERN_DPDK_FOUND. Exits 77
# (SKIP) only when CMake did not find libdpdk, or when the host cannot run
# it at all (not root, no namespaces); an EAL that fails to start FAILS.
set -u
bin=$1
mode=$2
found=$3

REQ=3000                  # round trips per echo run
BULK=$((64 << 20))        # bytes per bulk run
CONNS=4                   # echo connections

skip() { echo "SKIP: $*"; exit 77; }
die() { echo "FAIL: $*"; exit 1; }
[ "$found" = ON ] || skip "libdpdk was not found when CMake configured this \
build (apt-get install libdpdk-dev, then reconfigure): no dpdk driver"
[ "$(id -u)" = 0 ] || skip "DPDK's EAL, net_tap and namespaces need root"
for p in tern-echo tern-bulk kern-echo kern-bulk; do
    [ -x "$bin/$p" ] || die "no $bin/$p"
done
command -v python3 >/dev/null 2>&1 || skip "python3 is not installed"

dir=$(mktemp -d /tmp/tern-dpdk-apps.XXXXXX)
ns=
pids=
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# EAL: plain memory, no PCI scan, nothing shared between the processes.
TERN_DPDK_EAL="--no-huge -m 256 --no-pci --no-shconf --no-telemetry"
export TERN_DPDK_EAL
# An idle queue yields its CPU after 64 empty polls (driver option through
# the environment, as the programs have no flag for driver options): the
# busy pollers stay responsive on a loaded machine.
TERN_DPDK_OPTS=idle_yield=64
export TERN_DPDK_OPTS

# One CPU each when there are two, so the two busy-polling processes do not
# time-slice one CPU.
if [ "$(nproc)" -ge 2 ]; then c0=0; c1=1; else c0=0; c1=0; fi

# check NAME FILE PYEXPR: PYEXPR (with d = the JSON report in FILE) holds.
check() {
    if python3 - "$2" "$3" <<'EOF'
import json, sys
try:
    d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except Exception as e:
    print("no JSON report in %s: %s" % (sys.argv[1], e))
    sys.exit(1)
sys.exit(0 if eval(sys.argv[2], {"d": d}) else 1)
EOF
    then
        echo "ok: $1"
    else
        echo "--- $2:"; cat "$2"; die "$1 ($3)"
    fi
}

# start NAME CMD...: run in the background, stdout to $dir/NAME.json,
# stderr to $dir/NAME.err; sets $last.
start() {
    name=$1; shift
    "$@" >"$dir/$name.json" 2>"$dir/$name.err" &
    last=$!
    pids="$pids $last"
}

# finish PID NAME [SIGNAL]: optionally signal, wait (bounded), return rc.
# The signal goes to the program under `timeout`, not to timeout itself:
# timeout passes a signal on to the child AND to its process group, so the
# program would get it twice, and the apps take a second signal as "kill
# now" (exit 130).
finish() {
    if [ -n "${3:-}" ]; then
        pkill "-$3" -P "$1" 2>/dev/null || kill "-$3" "$1" 2>/dev/null
    fi
    i=0
    while kill -0 "$1" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 1500 ]; then
            kill -KILL "$1" 2>/dev/null
            echo "--- $2 did not exit:"; cat "$dir/$2.err"
            break
        fi
        sleep 0.1
    done
    wait "$1"
    rc=$?
    [ -s "$dir/$2.err" ] && { echo "--- $2 stderr:"; cat "$dir/$2.err"; }
    return $rc
}

# must PID NAME [SIGNAL]: finish, and fail the test unless it exited 0.
must() {
    finish "$@" || { cat "$dir/$2.json"; die "$2 exited with status $rc"; }
}

# run NAME CMD...: run in the foreground (bounded by the caller's timeout)
# and fail unless it exits 0.
run() {
    start "$@"
    must "$last" "$1"
}

# wait_for WHAT TEST PID: until the shell test TEST holds (PID must live).
wait_for() {
    i=0
    while ! eval "$2"; do
        kill -0 "$3" 2>/dev/null || { cat "$dir"/*.err; die "$1: process exited"; }
        i=$((i + 1))
        [ $i -gt 300 ] && die "$1: not after 30 s"
        sleep 0.1
    done
}

memif() { echo "net_memif0,role=$1,socket=$dir/memif.sock,socket-abstract=no"; }

case "$mode" in
memif_echo)
    start srv timeout 120 "$bin/tern-echo" --driver dpdk --iface "$(memif server)" \
        --ip 198.18.0.1/24 --cores $c0 --poll busy --server --size 100 --json
    srv=$last
    # The memif server role creates its socket file when the port exists.
    wait_for "memif server socket" "[ -S '$dir/memif.sock' ]" "$srv"
    run cli timeout 120 "$bin/tern-echo" --driver dpdk --iface "$(memif client)" \
        --ip 198.18.0.2/24 --cores $c1 --poll busy --json \
        --client 198.18.0.1:7007 --requests $REQ --conns $CONNS --size 100
    must "$srv" srv TERM
    n=$REQ
    check "client: $n round trips" "$dir/cli.json" "d['requests'] == $n"
    check "client: every byte back" "$dir/cli.json" \
        "d['counters']['tcp_bytes_out'] == $n * 100 == d['counters']['tcp_bytes_in']"
    check "client: $CONNS connections" "$dir/cli.json" \
        "d['counters']['tcp_active_opens'] == $CONNS"
    check "server: $n requests echoed" "$dir/srv.json" \
        "d['requests'] == $n and d['bytes_echoed'] == $n * 100"
    check "server: $CONNS accepted, none left" "$dir/srv.json" \
        "d['accepted'] == $CONNS and d['tcp_conns'] == 0"
    check "frames: what one sent the other received" "$dir/srv.json" \
        "d['link']['frames_rx'] > 0 and d['link']['drops'] == 0"
    ;;
memif_bulk)
    start srv timeout 120 "$bin/tern-bulk" --driver dpdk --iface "$(memif server)" \
        --ip 198.18.0.1/24 --cores $c0 --poll busy --server \
        --verify pattern --json
    srv=$last
    wait_for "memif server socket" "[ -S '$dir/memif.sock' ]" "$srv"
    run cli timeout 120 "$bin/tern-bulk" --driver dpdk --iface "$(memif client)" \
        --ip 198.18.0.2/24 --cores $c1 --poll busy --json \
        --client 198.18.0.1:5001 --bytes $BULK
    # The server is stopped after the client left, not with --once: the
    # side that stays polling when its memif peer leaves risks DPDK 22.11's
    # unmap race (docs/dpdk.md); the server's poller is on the CPU EAL
    # keeps its own threads off, the client's is not.
    must "$srv" srv TERM
    check "client: $BULK bytes sent and acked" "$dir/cli.json" "d['bytes'] == $BULK"
    check "server: $BULK bytes, one stream, pattern verified" "$dir/srv.json" \
        "d['bytes'] == $BULK and d['streams'] == 1 and d['verified'] is True"
    check "server: counters agree" "$dir/srv.json" \
        "d['counters']['tcp_bytes_in'] == $BULK"
    ;;
tap_client|tap_server)
    command -v ip >/dev/null 2>&1 || skip "iproute2 is not installed"
    [ -e /dev/net/tun ] || skip "/dev/net/tun is missing"
    ns="tdapp$$"
    ifn="tdapp$$"
    ip netns add "$ns" 2>/dev/null || skip "cannot create network namespaces"
    ip -n "$ns" link set lo up
    nsx() { ip netns exec "$ns" "$@"; }
    tap="net_tap0,iface=$ifn"
    # tern's process creates the kernel interface; then Linux's end gets
    # its address.
    up_link() {
        wait_for "tap interface" "ip -n '$ns' link show '$ifn' >/dev/null 2>&1" "$1"
        ip -n "$ns" addr add 198.18.1.1/24 dev "$ifn" || die "ip addr"
        ip -n "$ns" link set "$ifn" up || die "ip link up"
    }
    if [ "$mode" = tap_client ]; then
        # echo: Linux serves, tern asks
        start kecho timeout 120 ip netns exec "$ns" "$bin/kern-echo" --server \
            --size 100 --cores $c0 --json
        kecho=$last
        start tcli timeout 120 ip netns exec "$ns" "$bin/tern-echo" \
            --driver dpdk --iface "$tap" --ip 198.18.1.2/24 --cores $c1 \
            --poll busy --json --client 198.18.1.1:7007 --requests $REQ \
            --conns $CONNS --size 100
        tcli=$last
        up_link "$tcli"
        must "$tcli" tcli
        must "$kecho" kecho INT
        check "tern client: $REQ round trips" "$dir/tcli.json" "d['requests'] == $REQ"
        check "tern client: every byte back" "$dir/tcli.json" \
            "d['counters']['tcp_bytes_out'] == $REQ * 100 == d['counters']['tcp_bytes_in']"
        check "Linux server: $REQ requests, $CONNS connections" "$dir/kecho.json" \
            "d['requests'] == $REQ and d['bytes_echoed'] == $REQ * 100 and d['accepted'] == $CONNS"
        # bulk: Linux receives and checks the pattern
        ip -n "$ns" link del "$ifn" 2>/dev/null
        start kbulk timeout 120 ip netns exec "$ns" "$bin/kern-bulk" --server \
            --once --verify pattern --cores $c0 --json
        kbulk=$last
        start tbulk timeout 120 ip netns exec "$ns" "$bin/tern-bulk" \
            --driver dpdk --iface "$tap" --ip 198.18.1.2/24 --cores $c1 \
            --poll busy --json --client 198.18.1.1:5001 --bytes $BULK \
            --verify hash
        tbulk=$last
        up_link "$tbulk"
        must "$tbulk" tbulk
        must "$kbulk" kbulk
        check "tern client: $BULK bytes sent and acked" "$dir/tbulk.json" "d['bytes'] == $BULK"
        check "Linux server: $BULK bytes, pattern verified" "$dir/kbulk.json" \
            "d['bytes'] == $BULK and d['streams'] == 1 and d['verified'] is True"
    else
        # echo: tern serves, Linux asks
        start tsrv timeout 120 ip netns exec "$ns" "$bin/tern-echo" \
            --driver dpdk --iface "$tap" --ip 198.18.1.2/24 --cores $c1 \
            --poll busy --json --server --size 100
        tsrv=$last
        up_link "$tsrv"
        run kcli timeout 120 ip netns exec "$ns" "$bin/kern-echo" --cores $c0 --json \
            --client 198.18.1.2:7007 --requests $REQ --conns $CONNS --size 100
        must "$tsrv" tsrv TERM
        check "Linux client: $REQ round trips" "$dir/kcli.json" "d['requests'] == $REQ"
        check "tern server: $REQ requests echoed, $CONNS accepted" "$dir/tsrv.json" \
            "d['requests'] == $REQ and d['bytes_echoed'] == $REQ * 100 and d['accepted'] == $CONNS"
        # bulk: tern receives and checks the pattern
        start tbsrv timeout 120 ip netns exec "$ns" "$bin/tern-bulk" \
            --driver dpdk --iface "$tap" --ip 198.18.1.2/24 --cores $c1 \
            --poll busy --json --server --once --verify pattern
        tbsrv=$last
        up_link "$tbsrv"
        run kbcli timeout 120 ip netns exec "$ns" "$bin/kern-bulk" --cores $c0 --json \
            --client 198.18.1.2:5001 --bytes $BULK
        must "$tbsrv" tbsrv
        check "Linux client: $BULK bytes sent" "$dir/kbcli.json" "d['bytes'] == $BULK"
        check "tern server: $BULK bytes, pattern verified" "$dir/tbsrv.json" \
            "d['bytes'] == $BULK and d['streams'] == 1 and d['verified'] is True"
    fi
    ;;
tap6_server)
    command -v ip >/dev/null 2>&1 || skip "iproute2 is not installed"
    [ -e /dev/net/tun ] || skip "/dev/net/tun is missing"
    ns="tdap6$$"
    ifn="tdap6$$"
    ip netns add "$ns" 2>/dev/null || skip "cannot create network namespaces"
    ip -n "$ns" link set lo up
    tap="net_tap0,iface=$ifn"
    T6=2001:db8:1::2
    # tern's process creates the kernel interface; Linux's end gets only an
    # IPv6 address (no DAD: it is the test's own), and the test waits until
    # tern's address has passed its DAD and answers echo.
    up_link6() {
        wait_for "tap interface" "ip -n '$ns' link show '$ifn' >/dev/null 2>&1" "$1"
        ip -n "$ns" -6 addr add 2001:db8:1::1/64 dev "$ifn" nodad || die "ip addr"
        ip -n "$ns" link set "$ifn" up || die "ip link up"
        wait_for "tern answers ping -6 after its DAD" \
            "ip netns exec '$ns' ping -6 -c1 -W1 $T6 >/dev/null 2>&1" "$1"
        [ -z "$(ip -n "$ns" -4 addr show dev "$ifn")" ] || die "an IPv4 address on $ifn"
    }
    no_v4='all(d["counters"].get(k, 0) == 0 for k in ("arp_in", "arp_out", "ip_in", "ip_out"))'
    start tsrv timeout 120 ip netns exec "$ns" "$bin/tern-echo" \
        --driver dpdk --iface "$tap" --ip6 $T6/64 --cores $c1 \
        --poll busy --json --server --size 100
    tsrv=$last
    up_link6 "$tsrv"
    run kcli timeout 120 ip netns exec "$ns" "$bin/kern-echo" --cores $c0 --json \
        --client "[$T6]:7007" --requests $REQ --conns $CONNS --size 100
    must "$tsrv" tsrv TERM
    check "Linux client over IPv6: $REQ round trips" "$dir/kcli.json" "d['requests'] == $REQ"
    check "tern server: $REQ requests echoed, $CONNS accepted" "$dir/tsrv.json" \
        "d['requests'] == $REQ and d['bytes_echoed'] == $REQ * 100 and d['accepted'] == $CONNS"
    check "tern server: no ARP, no IPv4" "$dir/tsrv.json" "$no_v4"
    ip -n "$ns" link del "$ifn" 2>/dev/null
    start tbsrv timeout 120 ip netns exec "$ns" "$bin/tern-bulk" \
        --driver dpdk --iface "$tap" --ip6 $T6/64 --cores $c1 \
        --poll busy --json --server --once --verify pattern
    tbsrv=$last
    up_link6 "$tbsrv"
    run kbcli timeout 120 ip netns exec "$ns" "$bin/kern-bulk" --cores $c0 --json \
        --client "[$T6]:5001" --bytes $BULK
    must "$tbsrv" tbsrv
    check "Linux client over IPv6: $BULK bytes sent" "$dir/kbcli.json" "d['bytes'] == $BULK"
    check "tern server: $BULK bytes, pattern verified" "$dir/tbsrv.json" \
        "d['bytes'] == $BULK and d['streams'] == 1 and d['verified'] is True"
    # HTTP: curl -6 gets the whole body, wrk gets only 2xx and no error
    ip -n "$ns" link del "$ifn" 2>/dev/null
    start thttp timeout 120 ip netns exec "$ns" "$bin/tern-httpd" \
        --driver dpdk --iface "$tap" --ip6 $T6/64 --cores $c1 \
        --poll busy --json --body-size 3000
    thttp=$last
    up_link6 "$thttp"
    url="http://[$T6]:8080/"
    command -v curl >/dev/null 2>&1 || die "curl is not installed (scripts/deps.sh installs it)"
    ip netns exec "$ns" curl -6 -g -sS -m 10 -o "$dir/body" "$url" ||
        die "curl -6 $url failed"
    python3 -c "
import sys
b = open(sys.argv[1], 'rb').read()
want = bytes(ord('a') + i % 26 for i in range(2999)) + b'\\n'
sys.exit(0 if b == want else 1)" "$dir/body" || die "curl -6: wrong body"
    echo "ok: curl -6 got the whole body"
    command -v wrk >/dev/null 2>&1 || die "wrk is not installed (scripts/deps.sh installs it)"
    ip netns exec "$ns" wrk -t1 -c16 -d2 --timeout 5s "$url" >"$dir/wrk" 2>&1 ||
        { cat "$dir/wrk"; die "wrk failed"; }
    grep -q " requests in" "$dir/wrk" && ! grep -q "Non-2xx\|Socket errors" "$dir/wrk" ||
        { cat "$dir/wrk"; die "wrk: errors or no requests"; }
    echo "ok: wrk $(grep -o '[0-9]* requests in' "$dir/wrk")"
    must "$thttp" thttp TERM
    check "tern-httpd: no ARP, no IPv4" "$dir/thttp.json" "$no_v4"
    ;;
*)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac
echo PASS
