#!/bin/sh
# make install works for an embedder: install the build into a temporary
# prefix, then
#   - check that libtern and libtern-linux (shared and static) define their
#     API's names and no other global name;
#   - build a program against libtern through pkg-config (shared) and
#     statically, and run both;
#   - compile a translation unit that includes every installed header as
#     C11 and as C++11..20 with g++ and clang++, -Wall -Wextra -Werror;
#   - build every example of examples/ against the installed libraries
#     through pkg-config and run the three that need no NIC (core_echo,
#     core_echo_cpp, mem_pair), mem_pair also linked statically, and (as
#     root) echo_server on AF_PACKET between two test hosts;
#   - build tests/install/rt_extras.c (the runtime's steering, loop hook
#     and per-core statistics) against the installed library as C and as
#     C++, run its
#     checks that need no device, and as root a run on a test host;
#   - check that README.md shows examples/core_echo.c's marked part as is.
set -eu
build=$1
src=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$src/../.." && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
fail() { echo "install: $*" >&2; exit 1; }

# $1: the library, $2: its global definitions, $3: the names it may define
# (a grep -x pattern file or "tern_*" for any tern_ name), $4: one it must.
check_names() {
    if [ "$3" = "tern_*" ]; then
        others=$(printf '%s\n' "$2" | grep -v '^tern_' || true)
    else
        others=$(printf '%s\n' "$2" | grep -vxF -f "$3" || true)
    fi
    [ -z "$others" ] || fail "$1 defines non-API global symbols:" $others
    printf '%s\n' "$2" | grep -qx "$4" || fail "$1 does not define $4"
}
dyn() { nm -D --defined-only "$1" | awk '$2 ~ /^[TDBR]$/ {print $3}'; }
sta() { nm --defined-only "$1" | awk '$2 ~ /^[TDBRC]$/ {print $3}'; }
syms=$root/src/io/tern_linux.syms
check_names libtern.so "$(dyn "$prefix"/lib/libtern.so.0)" "tern_*" tern_stack_init
check_names libtern.a "$(sta "$prefix"/lib/libtern.a)" "tern_*" tern_stack_init
check_names libtern-linux.so "$(dyn "$prefix"/lib/libtern-linux.so.0)" "$syms" tern_rt_run
check_names libtern-linux.a "$(sta "$prefix"/lib/libtern-linux.a)" "$syms" tern_dev_open
# Every name the list promises is there.
for n in $(cat "$syms"); do
    dyn "$prefix"/lib/libtern-linux.so.0 | grep -qx "$n" ||
        fail "libtern-linux.so does not define $n"
done

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc "$src/embed.c" $(pkg-config --cflags --libs tern) \
    -Wl,-rpath,"$prefix/lib" -o "$prefix/embed"
"$prefix/embed"
cc -static "$src/embed.c" $(pkg-config --cflags tern) "$prefix/lib/libtern.a" \
    -o "$prefix/embed-static"
"$prefix/embed-static"

# Every installed header, in C and in C++ (tern.h first, then the rest).
tu=$prefix/headers
for h in "$prefix"/include/*.h; do
    echo "#include <$(basename "$h")>"
done > "$tu.h"
printf '#include "%s.h"\nint main(void) { return 0; }\n' "$tu" > "$tu.c"
cp "$tu.c" "$tu.cpp"
cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$prefix/include" -c "$tu.c" \
    -o "$tu.o"
ncxx=0
for cxx in g++ clang++; do
    command -v $cxx >/dev/null 2>&1 || continue
    for std in 11 14 17 20; do
        $cxx -std=c++$std -Wall -Wextra -Werror -pedantic -I"$prefix/include" \
            -c "$tu.cpp" -o "$tu.o" || fail "headers do not compile as $cxx -std=c++$std"
        ncxx=$((ncxx + 1))
    done
done
[ "$ncxx" -gt 0 ] || fail "no C++ compiler (g++ or clang++) to check the headers"

# The examples, as a user builds them.
make -s -C "$root/examples" OUT="$prefix" CFLAGS="-O2 -Wall -Wextra -Werror" \
    CXXFLAGS="-O2 -Wall -Wextra -Werror"
"$prefix/core_echo"
"$prefix/core_echo_cpp"
"$prefix/mem_pair"
[ -x "$prefix/echo_server" ] || fail "echo_server was not built"
# mem_pair on the static libraries (the drivers' own libraries stay shared)
# shellcheck disable=SC2046
cc -std=c11 "$root/examples/mem_pair.c" $(pkg-config --cflags tern-linux) \
    "$prefix/lib/libtern-linux.a" "$prefix/lib/libtern.a" \
    $(pkg-config --static --libs tern-linux | tr ' ' '\n' | grep -v '^-ltern') \
    -o "$prefix/mem_pair_static"
"$prefix/mem_pair_static" >/dev/null

# The runtime's optional fields, from the installed library.
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$src/rt_extras.c" \
    $(pkg-config --cflags --libs tern-linux) \
    -Wl,-rpath,"$(pkg-config --variable=libdir tern)" -o "$prefix/rt_extras"
# ... and the same source as C++, as a C++ embedder's program.
# shellcheck disable=SC2046
c++ -std=c++11 -Wall -Wextra -Werror -x c++ "$src/rt_extras.c" \
    $(pkg-config --cflags --libs tern-linux) \
    -Wl,-rpath,"$(pkg-config --variable=libdir tern)" -o "$prefix/rt_extras_cpp"
"$prefix/rt_extras_cpp"
"$prefix/rt_extras"

# echo_server on AF_PACKET between two test hosts (root only): the kernel
# side sends 100 KB and must get every byte back.
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1; then
    env=$prefix/hosts.env
    ns_prefix=tinst$$
    es=
    # (each step may fail: set -e must not cut the cleanup short)
    trap '[ -n "$es" ] && kill "$es" 2>/dev/null || true
          sh "$root/tools/netns.sh" down --prefix "$ns_prefix" >/dev/null 2>&1 || true
          rm -rf "$prefix"' EXIT
    if sh "$root/tools/netns.sh" up --env "$env" --prefix "$ns_prefix" >/dev/null 2>&1; then
        . "$env"
        ip netns exec "$NS_T" "$prefix/echo_server" afpacket "$IF_T" "$IP_T/24"             >"$prefix/es.out" 2>&1 &
        es=$!
        ip netns exec "$NS_K" python3 - "$IP_T" <<'PY' || fail "echo_server did not echo (see its output above)"
import socket, sys, time
data = bytes(range(256)) * 400
for attempt in range(50):          # until the server answers ARP and SYN
    try:
        s = socket.create_connection((sys.argv[1], 7), timeout=2)
        break
    except OSError:
        time.sleep(0.2)
else:
    sys.exit("no connection to echo_server")
s.settimeout(30)
s.sendall(data)
got = b""
while len(got) < len(data):
    chunk = s.recv(65536)
    if not chunk:
        break
    got += chunk
sys.exit(0 if got == data else "echo differs: %d of %d bytes" % (len(got), len(data)))
PY
        kill -INT "$es"
        wait "$es" || true
        es=
        grep -q "serving $IP_T:7 on afpacket $IF_T" "$prefix/es.out" ||
            { cat "$prefix/es.out"; fail "echo_server did not name its address"; }
        echo "install: echo_server on afpacket echoed 100 KB and named $IP_T:7"
        ip netns exec "$NS_T" "$prefix/rt_extras" afpacket "$IF_T" "$IP_T" ||
            fail "rt_extras on afpacket failed"
    else
        echo "install: no test hosts (tools/netns.sh); echo_server not run"
    fi
fi

# README.md's embedding code is the example's marked part, unchanged.
python3 - "$root/examples/core_echo.c" "$root/README.md" <<'PY'
import sys
src = open(sys.argv[1]).read().split("\n")
marks = [i for i, l in enumerate(src) if "README.md shows" in l]
if len(marks) != 2:
    sys.exit("install: core_echo.c needs two 'README.md shows' marker lines")
part = "\n".join(src[marks[0] + 1:marks[1]])
if part not in open(sys.argv[2]).read():
    sys.exit("install: README.md does not show examples/core_echo.c's marked part")
PY
echo "install: libraries, headers (C, C++ x$ncxx), examples and README checked against $prefix"
