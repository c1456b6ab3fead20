#!/bin/sh
# make install works: install the build into a temporary prefix, then build
# a program against it through pkg-config (shared) and statically, and run
# both.
set -eu
build=$1
src=$(cd "$(dirname "$0")" && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
# Both libraries give the API (tern_*) and none of the core's internal
# names (eth_input, conn_alloc, ...), which could clash with a program's.
check_names() {  # $1: the library, $2: its global definitions
    others=$(printf '%s\n' "$2" | grep -v '^tern_' || true)
    if [ -n "$others" ]; then
        echo "install: $1 defines non-API global symbols:" $others >&2
        exit 1
    fi
    printf '%s\n' "$2" | grep -qx tern_stack_init || {
        echo "install: $1 does not define tern_stack_init" >&2
        exit 1
    }
}
check_names libtern.so "$(nm -D --defined-only "$prefix"/lib/libtern.so.0 |
                          awk '$2 ~ /^[TDBR]$/ {print $3}')"
check_names libtern.a "$(nm --defined-only "$prefix"/lib/libtern.a |
                         awk '$2 ~ /^[TDBRC]$/ {print $3}')"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc "$src/embed.c" $(pkg-config --cflags --libs tern) \
    -Wl,-rpath,"$prefix/lib" -o "$prefix/embed"
"$prefix/embed"
cc -static "$src/embed.c" $(pkg-config --cflags tern) "$prefix/lib/libtern.a" \
    -o "$prefix/embed-static"
"$prefix/embed-static"
echo "install: shared and static programs built against $prefix and ran"
