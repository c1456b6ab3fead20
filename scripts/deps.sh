#!/bin/sh
# deps.sh GROUP... - install the Debian packages a make command needs.
#
#   build  compile everything `make` builds: the libraries with every
#          driver (libxdp/libbpf for AF_XDP, DPDK), the programs, the tests,
#          the lwIP benchmark peer
#   test   build + what `make test` runs: clang (fuzzers, freestanding and
#          C++ checks), Python with scapy and redis, curl, wrk, nftables,
#          iproute2, valgrind, tcpdump, DPDK's tools, redis-server/-tools
#   demo   build + what `make demo` runs: curl, wrk, Python, iproute2,
#          redis-server and redis-benchmark
#
# Prints one line per group. What apt prints goes to $DEPS_LOG (default
# build/deps.log). Does nothing when everything is present; otherwise needs
# root (without it, names the missing packages and fails).
# `make install-lib` needs none of this: a C compiler and CMake suffice.
set -eu

BUILD="build-essential cmake ninja-build pkg-config libcmocka-dev
libbpf-dev libxdp-dev libdpdk-dev liblwip-dev"
TEST="$BUILD clang llvm libclang-rt-14-dev python3 python3-scapy curl wrk
nftables ethtool iproute2 iputils-ping valgrind tcpdump dpdk-dev
python3-matplotlib procps redis-server redis-tools python3-redis"
DEMO="$BUILD python3 curl wrk iproute2 ethtool nftables procps redis-server
redis-tools"

LOG=${DEPS_LOG:-build/deps.log}
[ $# -gt 0 ] || set -- build

missing_of() {
    for p in $1; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
            printf ' %s' "$p"
    done
}

for group in "$@"; do
    case $group in
        build) pkgs=$BUILD ;;
        test) pkgs=$TEST ;;
        demo) pkgs=$DEMO ;;
        *) echo "deps: unknown group '$group' (build, test, demo)" >&2; exit 2 ;;
    esac
    missing=$(missing_of "$pkgs")
    if [ -z "$missing" ]; then
        echo "deps: $group: all $(echo $pkgs | wc -w) packages present"
        continue
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "deps: $group: missing Debian packages:$missing (run as root or install them)" >&2
        exit 1
    fi
    mkdir -p "$(dirname "$LOG")"
    n=$(echo $missing | wc -w)
    printf 'deps: %s: installing %s packages (apt output: %s) ... ' "$group" "$n" "$LOG"
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    if apt-get update -q >>"$LOG" 2>&1 &&
       apt-get install -y -q --no-install-recommends $missing >>"$LOG" 2>&1; then
        echo "done"
    else
        echo "failed"
        tail -n 20 "$LOG" >&2
        echo "deps: $group: apt-get failed; the whole output is in $LOG" >&2
        exit 1
    fi
done
