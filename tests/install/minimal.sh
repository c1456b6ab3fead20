#!/bin/sh
# The embedder's build: configure with no pkg-config at all (so no cmocka,
# libxdp, libbpf or DPDK is found), as on a machine with only a compiler,
# CMake and the kernel headers; build and install the libraries only, then
# build and run examples/core_echo.c and examples/mem_pair.c against them.
# The configure summary must say what was left out and why.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_minimal: $*" >&2; exit 1; }

cmake -S "$src" -B "$tmp/build" -DPKG_CONFIG_EXECUTABLE=/nonexistent \
    -DTERN_BUILD_APPS=OFF >"$tmp/configure.log" 2>&1 ||
    { cat "$tmp/configure.log"; fail "configure failed"; }
for want in "libtern-linux         yes, drivers: mem, afpacket, tap\$" \
            "afxdp left out" "dpdk left out" \
            "tests                 no (cmocka not found"; do
    grep -q -- "$want" "$tmp/configure.log" ||
        { cat "$tmp/configure.log"; fail "summary lacks '$want'"; }
done
cmake --build "$tmp/build" -j 2 >"$tmp/build.log" 2>&1 ||
    { tail -n 30 "$tmp/build.log"; fail "build failed"; }
cmake --install "$tmp/build" --prefix "$tmp/prefix" >/dev/null
inc=$tmp/prefix/include
lib=$tmp/prefix/lib
cc -std=c11 "$src/examples/core_echo.c" -I"$inc" -L"$lib" -ltern \
    -Wl,-rpath,"$lib" -o "$tmp/core_echo"
"$tmp/core_echo"
cc -std=c11 "$src/examples/mem_pair.c" -I"$inc" -L"$lib" -ltern-linux -ltern \
    -Wl,-rpath,"$lib" -o "$tmp/mem_pair"
"$tmp/mem_pair"
echo "install_minimal: libraries built without pkg-config's packages, installed, examples ran"
