#!/bin/sh
# test_netns.sh NETNS_SH - behaviour of tools/netns.sh: up makes two
# namespaces joined by a veth with the promised settings (IPv4 and IPv6 on
# the Linux peer, the kernel's IPv6 off on tern's side), loss drops what it
# says (IPv6 too), down removes everything and is idempotent, run always tears down.
set -u
netns=$1
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v ping >/dev/null 2>&1 || { echo "SKIP: ping is not installed"; exit 77; }
probe="tern-probe-$$"
ip netns add "$probe" >/dev/null 2>&1 || { echo "SKIP: no network namespaces"; exit 77; }
ip netns del "$probe"

pass=0 fail=0
check() { # check "what" command...
    what=$1; shift
    if "$@" >/dev/null 2>&1; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $what"; fi
}
env=$(mktemp /tmp/tern-netns-test.XXXXXX)
prefix="tn$$"
trap 'sh "$netns" --env "$env" down >/dev/null 2>&1; rm -f "$env"' EXIT INT TERM

check "up" sh "$netns" up --env "$env" --prefix "$prefix"
. "$env"
check "NS_K exists" sh -c "ip netns list | grep -q '^$NS_K'"
check "NS_T exists" sh -c "ip netns list | grep -q '^$NS_T'"
check "IP_K on IF_K" sh -c "ip -n $NS_K -4 addr show dev $IF_K | grep -q '198.18.0.1/24'"
check "no address on IF_T" sh -c "! ip -n $NS_T -4 addr show dev $IF_T | grep -q inet"
check "MAC_T is IF_T's" sh -c "ip -n $NS_T link show dev $IF_T | grep -q '$MAC_T'"
for side in K T; do
    eval "ns=\$NS_$side ifc=\$IF_$side"
    for f in tx-checksumming tcp-segmentation-offload generic-segmentation-offload generic-receive-offload; do
        check "$f off on $ifc" sh -c "ip netns exec $ns ethtool -k $ifc | grep -q '^$f: off'"
    done
done
# IPv6: the Linux peer speaks it, the kernel on tern's interface does not.
check "IPv6 on on IF_K" sh -c "[ \$(ip netns exec $NS_K sysctl -n net.ipv6.conf.$IF_K.disable_ipv6) = 0 ]"
check "IPv6 off on IF_T" sh -c "[ \$(ip netns exec $NS_T sysctl -n net.ipv6.conf.$IF_T.disable_ipv6) = 1 ]"
check "IP6_K on IF_K, no DAD" sh -c "ip -n $NS_K -6 addr show dev $IF_K | grep -q '$IP6_K/$PREFIX6_LEN scope global nodad'"
check "no IPv6 address on IF_T" sh -c "! ip -n $NS_T -6 addr show dev $IF_T | grep -q inet6"
check "IP6_T is 2001:db8::2" test "$IP6_T" = 2001:db8::2
# Give the tern side an address for a moment to test the wire and loss.
ip -n "$NS_T" addr add 198.18.0.2/24 dev "$IF_T"
v6_on_t() { # give the tern side's kernel IPv6 for a moment (Linux-to-Linux)
    ip netns exec "$NS_T" sysctl -qw net.ipv6.conf.$IF_T.accept_dad=0
    ip netns exec "$NS_T" sysctl -qw net.ipv6.conf.$IF_T.disable_ipv6=0
    ip -n "$NS_T" -6 addr add "$IP6_T/$PREFIX6_LEN" dev "$IF_T" nodad
}
v6_on_t
check "ping over the veth" ip netns exec "$NS_K" ping -c 2 -i 0.2 -W 1 198.18.0.2
check "ping -6 over the veth" ip netns exec "$NS_K" ping -6 -c 2 -i 0.2 -W 1 "$IP6_T"
check "loss 100" sh "$netns" --env "$env" loss 100
check "100% loss drops all" sh -c "! ip netns exec $NS_K ping -c 3 -i 0.2 -W 1 198.18.0.2"
check "100% loss drops IPv6 too" sh -c "! ip netns exec $NS_K ping -6 -c 3 -i 0.2 -W 1 $IP6_T"
check "loss 0" sh "$netns" --env "$env" loss 0
check "no rule left" sh -c "! ip netns exec $NS_K nft list tables | grep -q tern_loss"
check "ping after loss 0" ip netns exec "$NS_K" ping -c 2 -i 0.2 -W 1 198.18.0.2
check "ping -6 after loss 0" ip netns exec "$NS_K" ping -6 -c 2 -i 0.2 -W 1 "$IP6_T"
check "bad loss rejected" sh -c "! sh $netns --env $env loss 101"
check "down" sh "$netns" --env "$env" down
check "namespaces gone" sh -c "! ip netns list | grep -q '^$prefix-'"
check "down again (idempotent)" sh "$netns" --env "$env" down
check "down by prefix (idempotent)" sh "$netns" down --prefix "$prefix"
# run: always tears down, passes the status through.
sh "$netns" run --prefix "${prefix}r" -- sh -c 'test -n "$NS_K" && exit 7'
check "run passes exit status" test $? = 7
check "run tore down" sh -c "! ip netns list | grep -q '^${prefix}r-'"
sh "$netns" run --tap --prefix "${prefix}p" -- sh -c 'ip -n "$NS_K" link show "$IF_K" | grep -q tap || ip -n "$NS_K" -d link show "$IF_K" | grep -q tun' 
check "tap mode makes a tap" test $? = 0
sh "$netns" run --tap --prefix "${prefix}q" -- sh -c 'ip -n "$NS_K" -6 addr show dev "$IF_K" | grep -q "$IP6_K/64"'
check "tap mode: the tap carries IP6_K" test $? = 0
check "tap run tore down" sh -c "! ip netns list | grep -q '^${prefix}p-'"
# The wire: loss in flight, both directions, invisible to the senders.
wenv=$(mktemp /tmp/tern-netns-test.XXXXXX)
trap 'sh "$netns" --env "$env" down >/dev/null 2>&1; sh "$netns" --env "$wenv" down >/dev/null 2>&1; rm -f "$env" "$wenv"' EXIT INT TERM
check "up --wire" sh "$netns" up --wire --env "$wenv" --prefix "${prefix}w"
. "$wenv"
check "NS_W exists" sh -c "ip netns list | grep -q '^$NS_W'"
ip -n "$NS_T" addr add 198.18.0.2/24 dev "$IF_T"
check "IPv6 off on the bridge ports" sh -c "[ \$(ip netns exec $NS_W sysctl -n net.ipv6.conf.$WIF_K.disable_ipv6) = 1 ] && [ \$(ip netns exec $NS_W sysctl -n net.ipv6.conf.$WIF_T.disable_ipv6) = 1 ]"
v6_on_t
check "ping over the wire" ip netns exec "$NS_K" ping -c 2 -i 0.2 -W 1 198.18.0.2
check "ping -6 over the wire" ip netns exec "$NS_K" ping -6 -c 2 -i 0.2 -W 1 "$IP6_T"
check "wire loss 100 out" sh "$netns" --env "$wenv" loss 100 out
check "wire loss drops IPv6" sh -c "! ip netns exec $NS_K ping -6 -c 2 -i 0.2 -W 1 $IP6_T"
# A drop on the wire is not a local send error: ping counts every request.
out=$(ip netns exec "$NS_K" ping -c 3 -i 0.2 -W 1 198.18.0.2 2>&1)
check "wire drops are silent for the sender" sh -c "echo '$out' | grep -q '3 packets transmitted, 0 received'"
check "wire loss 100 in" sh "$netns" --env "$wenv" loss 100 in
check "in-loss drops replies" sh -c "! ip netns exec $NS_K ping -c 2 -i 0.2 -W 1 198.18.0.2"
check "wire loss 0" sh "$netns" --env "$wenv" loss 0
check "ping after wire loss 0" ip netns exec "$NS_K" ping -c 2 -i 0.2 -W 1 198.18.0.2
check "ping -6 after wire loss 0" ip netns exec "$NS_K" ping -6 -c 2 -i 0.2 -W 1 "$IP6_T"
check "wire down" sh "$netns" --env "$wenv" down
check "wire namespaces gone" sh -c "! ip netns list | grep -q '^${prefix}w-'"
sh "$netns" run --tap --wire --prefix "${prefix}x" -- sh -c '[ "$NS_T" = "$NS_W" ] && [ "$IF_K" != "$IF_T" ]'
check "tap on the wire" test $? = 0
echo "netns.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
