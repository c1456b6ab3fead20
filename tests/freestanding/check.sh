#!/bin/sh
# Freestanding proof: compile src/core with gcc and clang as
# -std=c11 -ffreestanding -nostdlib -pedantic -Werror, with only the
# compiler's own headers reachable (-nostdinc), link it with start.c into a
# program without libc, and run it.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Only <stdint.h>, <stddef.h>, <stdbool.h>, <stdalign.h> and the core's own
# headers may be included.
bad=$(grep -rhoE '#include *<[^>]+>' "$src/src/core" "$src/include" |
      grep -vE '<(stdint|stddef|stdbool|stdalign)\.h>' || true)
if [ -n "$bad" ]; then
    echo "freestanding: forbidden include in the core: $bad" >&2
    exit 1
fi

for cc in gcc clang; do
    if ! command -v $cc >/dev/null; then
        echo "freestanding: $cc not installed" >&2
        exit 1
    fi
    case $cc in
        gcc) sysinc=$($cc -print-file-name=include) ;;
        clang) sysinc=$($cc -print-resource-dir)/include ;;
    esac
    extra=""
    [ $cc = clang ] && extra="-Wno-unused-command-line-argument"
    flags="-std=c11 -O2 -ffreestanding -nostdlib -nostdinc -isystem $sysinc
           -Wall -Wextra -pedantic -Werror -fno-stack-protector -fno-pie $extra
           -I$src/include -I$src/src/core"
    objs=""
    for f in "$src"/src/core/*.c "$src"/src/core/*/*.c; do
        [ -f "$f" ] || continue
        o="$out/$cc-$(echo "$f" | tr / _).o"
        $cc $flags -c "$f" -o "$o"
        objs="$objs $o"
    done
    $cc $flags -static -no-pie -e _start "$(dirname "$0")/start.c" $objs \
        -o "$out/prog-$cc"
    if nm "$out/prog-$cc" | grep -q ' U '; then
        echo "freestanding: $cc: undefined symbols:" >&2
        nm "$out/prog-$cc" | grep ' U ' >&2
        exit 1
    fi
    "$out/prog-$cc" || { echo "freestanding: $cc program exited $?" >&2; exit 1; }
    echo "freestanding: $cc ok ($(echo $objs | wc -w) core objects, no libc)"
done
