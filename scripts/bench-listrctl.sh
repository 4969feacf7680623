#!/usr/bin/env bash
# Benchmark: `listrctl item list` against a running listr, from process start to exit.
#
#     scripts/bench-listrctl.sh [RUNS]        # default 50 runs, after 5 warm-up runs
#
# Builds listr and listrctl in release mode with a static Swift standard library (as a CLI is
# shipped: it starts in ~5 ms instead of ~13 ms; `make bench` builds the same way), starts one listr (loopback only, a fresh
# service type, a store with 20 items), waits until it is advertised, then times RUNS
# invocations of `listrctl item list`. Uses hyperfine when installed (apt-get install -y
# hyperfine), otherwise a loop with `date +%s%N`. Prints the median, and the same figure
# with --peer NAME (which needs no decision about several apps).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-50}
WARMUP=5
scripts/avahi-up.sh >/dev/null
FLAGS=(-c release --static-swift-stdlib)
swift build "${FLAGS[@]}" --product listr >/dev/null
swift build "${FLAGS[@]}" --product listrctl >/dev/null
BIN=$(swift build "${FLAGS[@]}" --show-bin-path)

SERVICE="bench$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
WORK=$(mktemp -d)
APP_PID=""
cleanup() {
    [[ -n $APP_PID ]] && kill "$APP_PID" 2>/dev/null && wait "$APP_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

"$BIN/listr" --store "$WORK/store.json" --name bench --service "$SERVICE" --loopback 2>"$WORK/listr.log" &
APP_PID=$!
for _ in $(seq 1 200); do
    grep -q "ready:" "$WORK/listr.log" && break
    kill -0 "$APP_PID" 2>/dev/null || { cat "$WORK/listr.log" >&2; exit 1; }
    sleep 0.05
done
grep -q "ready:" "$WORK/listr.log" || { echo "listr did not start" >&2; cat "$WORK/listr.log" >&2; exit 1; }

CTL=("$BIN/listrctl" item list --service "$SERVICE" --loopback --timeout 5)
for i in $(seq 1 20); do "$BIN/listrctl" item add "item number $i" --service "$SERVICE" --loopback >/dev/null; done
"${CTL[@]}" | grep -q "#20 " || { echo "listrctl item list does not work" >&2; exit 1; }

# Median of RUNS timings (in ms) of the command "$@".
median_ms() {
    if command -v hyperfine >/dev/null 2>&1; then
        local json="$WORK/hyperfine.json"
        hyperfine --style none --warmup "$WARMUP" --runs "$RUNS" -N --export-json "$json" "$(printf '%q ' "$@")" >/dev/null 2>&1
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.1f ms (min %.1f, max %.1f)" % (r["median"]*1e3, r["min"]*1e3, r["max"]*1e3))' "$json"
    else
        local times=() start end
        for _ in $(seq 1 "$WARMUP"); do "$@" >/dev/null; done
        for _ in $(seq 1 "$RUNS"); do
            start=$(date +%s%N); "$@" >/dev/null; end=$(date +%s%N)
            times+=($(( (end - start) / 1000 )))
        done
        printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END {
            m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
            printf "%.1f ms (min %.1f, max %.1f)\n", m / 1000, a[1] / 1000, a[NR] / 1000 }'
    fi
}

echo "listrctl item list, $RUNS runs, release build, loopback, one listr with 20 items"
echo "  median:            $(median_ms "${CTL[@]}")"
echo "  median, --peer:    $(median_ms "${CTL[@]}" --peer bench)"
echo "  (process start-up alone, listrctl --help: $(median_ms "$BIN/listrctl" --help))"
