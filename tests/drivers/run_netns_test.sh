#!/bin/sh
# run_netns_test.sh [netns.sh up options] -- PROGRAM [ARGS...]
#
# Run PROGRAM inside the tern-side namespace of fresh test hosts made by
# tools/netns.sh (variables NS_K, IF_T, ... in its environment), and always
# remove the hosts afterwards. Exits 77 (ctest SKIP_RETURN_CODE) when the
# machine cannot host the test: not root, no network namespaces, no ping.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, raw sockets)"
command -v ip >/dev/null 2>&1 || skip "iproute2 ('ip') is not installed"
command -v ping >/dev/null 2>&1 || skip "ping (iputils-ping) is not installed"
probe="tern-probe-$$"
ip netns add "$probe" >/dev/null 2>&1 || skip "cannot create network namespaces here"
ip netns del "$probe" >/dev/null 2>&1

opts=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    opts="$opts $1"
    shift
done
[ $# -ge 2 ] || { echo "usage: $0 [up options] -- PROGRAM [ARGS...]" >&2; exit 2; }
shift
# shellcheck disable=SC2086
exec sh "$root/tools/netns.sh" run --prefix "td$$" $opts -- \
    sh -c 'exec ip netns exec "$NS_T" "$@"' sh "$@"
