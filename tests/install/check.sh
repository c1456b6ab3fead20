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
# The shared library exports the API (tern_*) and none of the core's
# internal names.
lib=$(ls "$prefix"/lib/libtern.so.0)
api=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ {print $3}')
others=$(printf '%s\n' "$api" | grep -v '^tern_' || true)
if [ -n "$others" ]; then
    echo "install: libtern.so exports non-API symbols:" $others >&2
    exit 1
fi
printf '%s\n' "$api" | grep -qx tern_stack_init || {
    echo "install: libtern.so does not export tern_stack_init" >&2
    exit 1
}
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc "$src/embed.c" $(pkg-config --cflags --libs tern) \
    -Wl,-rpath,"$prefix/lib" -o "$prefix/embed"
"$prefix/embed"
cc -static "$src/embed.c" $(pkg-config --cflags tern) "$prefix/lib/libtern.a" \
    -o "$prefix/embed-static"
"$prefix/embed-static"
echo "install: shared and static programs built against $prefix and ran"
