#!/bin/sh
# run_conformance.sh BINDIR [conformance.py options]
#
# ctest entry of the differential TCP conformance suite. Runs the suite
# against the Linux kernel, and also against tern when TERN_CONFORMANCE_TERN=1
# is set (BINDIR holds tern-echo, and tern-httpd if built). Exits 77 (ctest's
# SKIP_RETURN_CODE) when the machine cannot host it: not root, no network
# namespaces, no ethtool, no scapy for /usr/bin/python3.
set -u
here=$(cd "$(dirname "$0")" && pwd)

skip() { echo "SKIP: $*"; exit 77; }

[ $# -ge 1 ] || { echo "usage: $0 BINDIR [options]" >&2; exit 2; }
bindir=$1
shift

[ "$(id -u)" = 0 ] || skip "the conformance suite needs root (network namespaces, raw sockets)"
command -v ip >/dev/null 2>&1 || skip "iproute2 ('ip') is not installed"
command -v ethtool >/dev/null 2>&1 || skip "ethtool is not installed (veth offloads must be off)"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import scapy' 2>/dev/null ||
    skip "scapy for /usr/bin/python3 is missing (apt-get install python3-scapy)"
probe="tcfprobe-$$"
ip netns add "$probe" >/dev/null 2>&1 || skip "cannot create network namespaces here"
ip netns del "$probe" >/dev/null 2>&1

targets=linux
if [ "${TERN_CONFORMANCE_TERN:-0}" = 1 ]; then
    targets=linux,tern
else
    echo "note: tern target off; set TERN_CONFORMANCE_TERN=1 to run it too"
fi
# conformance.py removes its namespaces itself, also on SIGTERM/SIGINT.
exec /usr/bin/python3 "$here/conformance.py" --bin "$bindir" --targets "$targets" "$@"
