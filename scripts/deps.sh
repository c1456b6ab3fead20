#!/bin/sh
# deps.sh - install the Debian packages tern's build, tests and demo need.
# Does nothing when everything is present; otherwise apt-get installs what is
# missing (needs root; without root it names the packages and fails).
set -eu

PACKAGES="build-essential cmake ninja-build pkg-config clang lld llvm
libclang-rt-14-dev libcmocka-dev libbpf-dev libxdp-dev xdp-tools libpcap-dev
tcpdump python3 python3-scapy curl wrk iperf3 nftables ethtool iproute2 iputils-ping
netcat-openbsd valgrind liblwip-dev dpdk-dev libdpdk-dev python3-matplotlib procps
redis-server redis-tools python3-redis"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "deps: missing Debian packages:$missing (run as root or install them)" >&2
    exit 1
fi

echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
