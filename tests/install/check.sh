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
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc "$src/embed.c" $(pkg-config --cflags --libs tern) \
    -Wl,-rpath,"$prefix/lib" -o "$prefix/embed"
"$prefix/embed"
cc -static "$src/embed.c" $(pkg-config --cflags tern) "$prefix/lib/libtern.a" \
    -o "$prefix/embed-static"
"$prefix/embed-static"
echo "install: shared and static programs built against $prefix and ran"
