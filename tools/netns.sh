#!/bin/sh
# netns.sh - throw-away test hosts for tern: network namespaces joined by a
# veth pair (or a tap device), in 198.18.0.0/15 and 2001:db8::/32.
#
#   netns.sh up [--env FILE] [--prefix P] [--tap] [--wire] [--mtu N]
#               [--queues N]
#       Create the hosts and print shell-sourceable variables (also written to
#       FILE with --env):
#         NS_K IF_K IP_K MAC_K   the kernel side "k" (198.18.0.1/24)
#         IP6_K                  its IPv6 address (2001:db8::1/64, nodad)
#         NS_T IF_T IP_T MAC_T   the tern side "t": no address on IF_T, tern
#                                owns IP_T (198.18.0.2) itself
#         IP6_T                  tern's IPv6 address (2001:db8::2)
#         PREFIX6_LEN            64
#         NS_W WIF_K WIF_T       the wire (with --wire, else empty)
#         TERN_NETNS_PREFIX PREFIX_LEN MTU QUEUES MODE (veth|tap)
#       veth mode: NS_K=<P>-k and NS_T=<P>-t, IF_K/IF_T a veth pair.
#       tap mode (--tap): IF_T is a persistent multi-queue tap that tern
#                  opens by name from inside NS_T and plays the wire end of;
#                  without --wire it is also the kernel's end (NS_T = NS_K,
#                  IF_K = IF_T, carrying IP_K); MAC_T is empty (tern picks).
#       --wire: a third namespace NS_W=<P>-w with a bridge between the two
#                  ends (veth K<->W, and veth W<->T or the tap in W), where
#                  `loss` drops frames in flight, unseen by either end.
#       --queues N: N rx/tx queues on the veths (multi-queue AF_XDP and
#                  fanout tests; default 1).
#       On every interface: checksum/TSO/GSO/GRO offloads off (so a user
#       space stack sees complete checksums and MTU sized frames). IPv6 is
#       on only on IF_K (the Linux peer, no DAD); everywhere else the
#       kernel's IPv6 is off (disable_ipv6=1), so on IF_T the kernel never
#       answers NDP for tern's MAC-derived link-local address, while
#       AF_PACKET/AF_XDP/tap still carry IPv6 frames to tern.
#   netns.sh down [--env FILE | --prefix P]   remove everything (idempotent)
#   netns.sh exec k|t CMD...                  run CMD in NS_K or NS_T
#   netns.sh loss P [in|out|both]             drop P% of frames with nftables
#       (numgen random mod 100 < P; out = kernel -> tern); P=0 removes it.
#       Every frame counts, IPv4, IPv6 and ARP/NDP alike.
#       With --wire hosts, on the bridge; else on IF_K (netdev ingress and
#       egress hooks: egress drops are seen by the kernel as local drops).
#   netns.sh run [up options] -- CMD...       up, run CMD with the variables
#       exported, always down (trap), exit with CMD's status
#
# exec/loss/down find the hosts through the variables in the environment, or
# through --env FILE given before the subcommand's own arguments, e.g.
#   netns.sh --env /tmp/h.env exec k ping -c 1 198.18.0.2
# The default prefix is tern-<pid>, or $TERN_NETNS_PREFIX. Needs root, and
# iproute2; ethtool (offloads) and nft (loss) when those are used.
set -eu

die() { echo "netns.sh: $*" >&2; exit 1; }

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qxF "$1"; }

need_root() {
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
    command -v ip >/dev/null 2>&1 || die "iproute2 ('ip') not found"
}

ENV_FILE=""
PREFIX="${TERN_NETNS_PREFIX:-}"
TAP=0
MTU_ARG=1500
QUEUES=1
WIRE=0
IP6_K=2001:db8::1
IP6_T=2001:db8::2
PREFIX6_LEN=64

parse_common() {
    # Sets ARGS_LEFT to the index of the first unparsed argument.
    while [ $# -gt 0 ]; do
        case "$1" in
            --env) [ $# -ge 2 ] || die "--env needs a file"; ENV_FILE=$2; shift 2 ;;
            --env=*) ENV_FILE=${1#--env=}; shift ;;
            --prefix) [ $# -ge 2 ] || die "--prefix needs a value"; PREFIX=$2; shift 2 ;;
            --prefix=*) PREFIX=${1#--prefix=}; shift ;;
            --tap) TAP=1; shift ;;
            --wire) WIRE=1; shift ;;
            --mtu) [ $# -ge 2 ] || die "--mtu needs a value"; MTU_ARG=$2; shift 2 ;;
            --queues) [ $# -ge 2 ] || die "--queues needs a value"; QUEUES=$2; shift 2 ;;
            *) break ;;
        esac
    done
    REST_COUNT=$#
}

load_env() {
    if [ -n "$ENV_FILE" ] && [ -f "$ENV_FILE" ]; then
        # shellcheck disable=SC1090
        . "$ENV_FILE"
    fi
}

# Run a command in a namespace; quiet on failure when asked to be tolerant.
nsx() { ns=$1; shift; ip netns exec "$ns" "$@"; }

offloads_off() {
    ns=$1 ifc=$2
    if command -v ethtool >/dev/null 2>&1; then
        # One feature at a time: a device that cannot change one still gets
        # the others.
        for f in tx rx tso gso gro lro ufo sg tx-checksum-ip-generic \
                 rx-gro-list rx-udp-gro-forwarding; do
            nsx "$ns" ethtool -K "$ifc" "$f" off >/dev/null 2>&1 || true
        done
    else
        echo "netns.sh: warning: ethtool not found, offloads stay on" >&2
    fi
}

ipv6_off() {
    ns=$1 ifc=$2
    nsx "$ns" sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1" >/dev/null 2>&1 || true
}

# The Linux peer's IPv6: on, no DAD (the address is usable at once, and the
# link-local one too), the documentation prefix.
ipv6_peer() { # ipv6_peer NS IF
    nsx "$1" sysctl -qw "net.ipv6.conf.$2.accept_dad=0" >/dev/null 2>&1 || true
    nsx "$1" sysctl -qw "net.ipv6.conf.$2.disable_ipv6=0" >/dev/null 2>&1 ||
        die "cannot enable IPv6 on $2 (is IPv6 compiled in?)"
    nsx "$1" ip -6 addr add "$IP6_K/$PREFIX6_LEN" dev "$2" nodad ||
        die "cannot add $IP6_K to $2"
}

mac_of() { nsx "$1" cat "/sys/class/net/$2/address"; }

emit_env() {
    cat <<EOF
TERN_NETNS_PREFIX='$PREFIX'
MODE='$MODE'
NS_K='$NS_K'
NS_T='$NS_T'
IF_K='$IF_K'
IF_T='$IF_T'
IP_K='198.18.0.1'
IP_T='198.18.0.2'
PREFIX_LEN='24'
IP6_K='$IP6_K'
IP6_T='$IP6_T'
PREFIX6_LEN='$PREFIX6_LEN'
MAC_K='$MAC_K'
MAC_T='$MAC_T'
MTU='$MTU_ARG'
QUEUES='$QUEUES'
NS_W='$NS_W'
WIF_K='$WIF_K'
WIF_T='$WIF_T'
export TERN_NETNS_PREFIX MODE NS_K NS_T IF_K IF_T IP_K IP_T PREFIX_LEN IP6_K IP6_T PREFIX6_LEN MAC_K MAC_T MTU QUEUES NS_W WIF_K WIF_T
EOF
}

mkveth() { # mkveth NS1 IF1 NS2 IF2
    ip link add "$2" netns "$1" mtu "$MTU_ARG" \
        numtxqueues "$QUEUES" numrxqueues "$QUEUES" type veth \
        peer name "$4" netns "$3" mtu "$MTU_ARG" \
        numtxqueues "$QUEUES" numrxqueues "$QUEUES" ||
        die "cannot create veth pair $2/$4"
}

mkns() {
    ns_exists "$1" && die "namespace $1 exists already (down it first)"
    ip netns add "$1" || die "cannot create namespace $1"
    nsx "$1" ip link set lo up
}

# The bridge's ports forward only once the kernel has handled their
# carrier event (which also gives the port its queue); on a busy machine
# that can take seconds, and a first frame sent meanwhile is lost. Called
# when both ends of every veth are up: wait (up to 10 s) until every port
# with a carrier forwards (a tap has none until tern opens it).
wait_forwarding() { # wait_forwarding NS BRIDGE
    i=0
    while [ $i -lt 100 ]; do
        if ! nsx "$1" bridge link show 2>/dev/null | grep "master $2 " |
            grep LOWER_UP | grep -qv "state forwarding"; then
            return 0
        fi
        sleep 0.1
        i=$((i + 1))
    done
    echo "netns.sh: warning: bridge $2 ports not all forwarding after 10 s" >&2
}

# A quiet end of the wire: no offloads, no IPv6, up.
port_setup() { # port_setup NS IF
    offloads_off "$1" "$2"
    ipv6_off "$1" "$2"
    nsx "$1" ip link set "$2" up
}

do_up() {
    need_root
    [ -n "$PREFIX" ] || PREFIX="tern-$$"
    case "$QUEUES" in ''|*[!0-9]*|0) die "--queues takes a number >= 1" ;; esac
    case "$PREFIX" in
        *[!A-Za-z0-9_.-]*) die "prefix '$PREFIX': use letters, digits, _ . -" ;;
    esac
    # Interface names are limited to 15 bytes; derive short unique ones.
    short=$(printf '%s' "$PREFIX" | tr -cd 'A-Za-z0-9' | tail -c 11)
    NS_K="$PREFIX-k"
    NS_W=""
    WIF_K=""
    WIF_T=""
    mkns "$NS_K"
    # From here on, undo on failure.
    trap 'do_down_quiet' EXIT
    if [ "$WIRE" = 1 ]; then
        NS_W="$PREFIX-w"
        mkns "$NS_W"
        br="b${short}"
        WIF_K="wk${short}"
        nsx "$NS_W" ip link add "$br" type bridge stp_state 0 \
            forward_delay 0 mcast_snooping 0 ||
            die "cannot create bridge $br"
        ipv6_off "$NS_W" "$br"
        IF_K="k${short}"
        mkveth "$NS_K" "$IF_K" "$NS_W" "$WIF_K"
        nsx "$NS_W" ip link set "$WIF_K" master "$br"
        port_setup "$NS_W" "$WIF_K"
    fi
    if [ "$TAP" = 1 ]; then
        MODE=tap
        IF_T="tp${short}"
        if [ "$WIRE" = 1 ]; then
            # The tap is a bridge port of the wire; tern opens it there.
            NS_T=$NS_W
            WIF_T=$IF_T
        else
            # The tap itself is the kernel's end and carries IP_K.
            NS_T=$NS_K
            IF_K=$IF_T
        fi
        nsx "$NS_T" ip tuntap add dev "$IF_T" mode tap multi_queue ||
            die "cannot create tap device $IF_T (is /dev/net/tun there?)"
        nsx "$NS_T" ip link set "$IF_T" mtu "$MTU_ARG"
        [ "$WIRE" = 1 ] && nsx "$NS_W" ip link set "$IF_T" master "$br"
        port_setup "$NS_T" "$IF_T"
        # On a tap, tern picks its own MAC (the tap's is the kernel's).
        MAC_T=""
    else
        MODE=veth
        NS_T="$PREFIX-t"
        IF_T="t${short}"
        mkns "$NS_T"
        if [ "$WIRE" = 1 ]; then
            WIF_T="wt${short}"
            mkveth "$NS_W" "$WIF_T" "$NS_T" "$IF_T"
            nsx "$NS_W" ip link set "$WIF_T" master "$br"
            port_setup "$NS_W" "$WIF_T"
        else
            IF_K="k${short}"
            mkveth "$NS_K" "$IF_K" "$NS_T" "$IF_T"
        fi
        port_setup "$NS_T" "$IF_T"
        MAC_T=$(mac_of "$NS_T" "$IF_T")
    fi
    [ "$WIRE" = 1 ] && nsx "$NS_W" ip link set "$br" up
    port_setup "$NS_K" "$IF_K"
    # The kernel side's port gets its carrier only now, with IF_K up.
    [ "$WIRE" = 1 ] && wait_forwarding "$NS_W" "$br"
    nsx "$NS_K" ip addr add 198.18.0.1/24 dev "$IF_K"
    ipv6_peer "$NS_K" "$IF_K"
    MAC_K=$(mac_of "$NS_K" "$IF_K")
    trap - EXIT
    if [ -n "$ENV_FILE" ]; then
        emit_env >"$ENV_FILE"
    fi
    emit_env
}

do_down_quiet() {
    for ns in "${NS_K:-}" "${NS_T:-}" "${NS_W:-}" "${PREFIX:+$PREFIX-k}" \
              "${PREFIX:+$PREFIX-t}" "${PREFIX:+$PREFIX-w}"; do
        [ -n "$ns" ] || continue
        if ns_exists "$ns"; then
            # A persistent tap lives until deleted, even with its netns gone
            # it would move to init_net: delete devices first.
            for d in $(ip netns exec "$ns" ls /sys/class/net 2>/dev/null); do
                [ "$d" = lo ] && continue
                ip netns exec "$ns" ip link del "$d" >/dev/null 2>&1 || true
            done
            ip netns del "$ns" >/dev/null 2>&1 || true
        fi
    done
}

do_down() {
    need_root
    load_env
    if [ -z "${NS_K:-}${PREFIX:-}" ]; then
        # Idempotent: an env file already removed means nothing is left.
        [ -n "$ENV_FILE" ] && return 0
        die "down: which hosts? give --env FILE or --prefix P"
    fi
    do_down_quiet
    if [ -n "$ENV_FILE" ]; then rm -f "$ENV_FILE"; fi
}

do_exec() {
    need_root
    load_env
    [ $# -ge 2 ] || die "usage: exec k|t CMD..."
    side=$1; shift
    case "$side" in
        k|K) ns=${NS_K:-} ;;
        t|T) ns=${NS_T:-} ;;
        *) die "exec: side is k or t, not '$side'" ;;
    esac
    [ -n "$ns" ] || die "exec: no hosts known (source the env or give --env FILE)"
    exec ip netns exec "$ns" "$@"
}

do_loss() {
    need_root
    load_env
    [ $# -ge 1 ] || die "usage: loss P [in|out|both]"
    p=$1 dir=${2:-both}
    case "$p" in ''|*[!0-9]*) die "loss: P is a percentage 0..100" ;; esac
    [ "$p" -le 100 ] || die "loss: P is a percentage 0..100"
    [ -n "${NS_K:-}" ] || die "loss: no hosts known (source the env or give --env FILE)"
    command -v nft >/dev/null 2>&1 || die "loss: nft (nftables) not found"
    case "$dir" in in|out|both) ;; *) die "loss: direction is in, out or both" ;; esac
    if [ -n "${NS_W:-}" ]; then lns=$NS_W; else lns=$NS_K; fi
    nsx "$lns" nft delete table bridge tern_loss >/dev/null 2>&1 || true
    nsx "$lns" nft delete table netdev tern_loss >/dev/null 2>&1 || true
    [ "$p" -gt 0 ] || return 0
    nl='
'
    # nft checks the range of the compared value: 100% is a plain drop.
    if [ "$p" = 100 ]; then verdict="drop"; else verdict="numgen random mod 100 < $p counter drop"; fi
    if [ -n "${NS_W:-}" ]; then
        # On the wire: the bridge drops frames in flight, unseen by both
        # ends ("out" = from the kernel side towards tern).
        rules="table bridge tern_loss {$nl chain wire { type filter hook forward priority 0;"
        if [ "$dir" = out ] || [ "$dir" = both ]; then
            rules="$rules$nl iifname \"$WIF_K\" $verdict;"
        fi
        if [ "$dir" = in ] || [ "$dir" = both ]; then
            rules="$rules$nl iifname \"$WIF_T\" $verdict;"
        fi
        rules="$rules$nl }$nl}"
    else
        # On the kernel side's device. Ingress drops look like wire loss;
        # egress drops are reported to the kernel's sender as local drops
        # (ping does not count them, TCP resends at once): use --wire for
        # faithful loss towards tern.
        rules="table netdev tern_loss {"
        if [ "$dir" = in ] || [ "$dir" = both ]; then
            rules="$rules$nl chain in { type filter hook ingress device \"$IF_K\" priority 0; $verdict; }"
        fi
        if [ "$dir" = out ] || [ "$dir" = both ]; then
            rules="$rules$nl chain out { type filter hook egress device \"$IF_K\" priority 0; $verdict; }"
        fi
        rules="$rules$nl}"
    fi
    echo "$rules" | nsx "$lns" nft -f - || die "loss: nft rejected the rule"
}

do_run() {
    need_root
    [ $# -ge 1 ] && [ "$1" = "--" ] && shift
    [ $# -ge 1 ] || die "usage: run [up options] -- CMD..."
    [ -n "$PREFIX" ] || PREFIX="tern-$$"
    tmp_env=${ENV_FILE:-$(mktemp /tmp/tern-netns.XXXXXX)}
    ENV_FILE=$tmp_env
    do_up >/dev/null
    # shellcheck disable=SC1090
    . "$ENV_FILE"
    trap 'do_down_quiet; rm -f "$tmp_env"' EXIT
    trap 'exit 130' INT TERM HUP
    TERN_NETNS_ENV=$ENV_FILE
    export TERN_NETNS_ENV
    set +e
    "$@"
    rc=$?
    set -e
    exit $rc
}

parse_common "$@"
shift $(($# - REST_COUNT))
[ $# -ge 1 ] || { sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
cmd=$1; shift
case "$cmd" in
    up) parse_common "$@"; shift $(($# - REST_COUNT)); [ $# -eq 0 ] || die "up: unexpected '$1'"; do_up ;;
    down) parse_common "$@"; shift $(($# - REST_COUNT)); do_down ;;
    exec) do_exec "$@" ;;
    loss) do_loss "$@" ;;
    run) parse_common "$@"; shift $(($# - REST_COUNT)); do_run "$@" ;;
    -h|--help|help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//' ;;
    *) die "unknown subcommand '$cmd' (up, down, exec, loss, run)" ;;
esac
