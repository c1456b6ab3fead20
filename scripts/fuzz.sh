#!/bin/sh
# fuzz.sh [SECONDS] [HARNESS...] - build the libFuzzer harnesses with clang
# (ASan + UBSan) and run each for SECONDS (default 60). Corpora grow in
# build-fuzz/corpus-<harness>/ (TERN_FUZZ_OUT names another directory); a
# crash leaves its input there and makes this script fail. Extra libFuzzer
# flags can come in TERN_FUZZ_FLAGS, e.g. "-runs=10000000".
set -eu
seconds=${1:-60}
[ $# -gt 0 ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
out=${TERN_FUZZ_OUT:-$root/build-fuzz}
harnesses=${*:-"fuzz_frame fuzz_sequence fuzz_options fuzz_resp fuzz_ip6"}
mkdir -p "$out"
cd "$out"
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -DTERN_USE_BUILTIN_MEM -I$root/include -I$root/src/core"
kv="$root/apps/common/resp.c $root/apps/common/kv_store.c
    $root/apps/common/kv_cmd.c $root/apps/common/kv_conn.c"
for h in $harnesses; do
    if [ "$h" = fuzz_resp ]; then
        # shellcheck disable=SC2086
        clang $flags -I"$root/apps/common" "$root/tests/fuzz/$h.c" $kv \
            -o "$out/$h"
    else
        # shellcheck disable=SC2086
        env_c="$root/tests/fuzz/fuzz_pool.c"
        [ "$h" = fuzz_ip6 ] || env_c="$env_c $root/tests/fuzz/fuzz_env.c"
        clang $flags "$root/tests/fuzz/$h.c" $env_c \
            "$root"/src/core/*.c "$root"/src/core/*/*.c -o "$out/$h"
    fi
    case $h in
        fuzz_options) seeds=opts_ ;;
        fuzz_resp) seeds=resp_ ;;
        fuzz_ip6) seeds=ip6_ ;;
        *) seeds=frame_ ;;
    esac
    corpus=$out/corpus-$h
    if [ ! -d "$corpus" ]; then
        mkdir -p "$corpus"
        python3 "$root/tests/fuzz/make_corpus.py" "$out/seeds"
        case $h in
            fuzz_sequence) cp "$out"/seeds/seq_* "$corpus"/ ;;
            *) cp "$out"/seeds/"$seeds"* "$corpus"/ ;;
        esac
    fi
    echo "fuzz: $h for ${seconds}s"
    "$out/$h" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 \
        ${TERN_FUZZ_FLAGS:-} -artifact_prefix="$out/$h-" "$corpus" 2>"$out/$h.log" || {
        tail -40 "$out/$h.log" >&2
        echo "fuzz: $h FAILED (log: $out/$h.log)" >&2
        exit 1
    }
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$out/$h.log" |
        sed "s/^/fuzz: $h: /"
done
