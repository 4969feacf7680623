#!/usr/bin/env bash
# Chirp Console in a real browser: a real logdemo (logs, HTTP calls, a record made of markup) feeds a real
# chirp-console, and headless Chromium, driven through chromedriver by Console/Tests/ConsoleBrowser/browser_check.py,
# checks the page: live records, the level filter, search with highlighting, the URL keeping the filters, the HTTP tab
# with pretty JSON, markup shown as text, the peers tab; it saves screenshots to .build/test-logs/.
#
# usage: scripts/console-browser-test.sh (after `make console-build`, which builds chirp-console and the logdemo that
#        feeds it into .build/debug; BIN_DIR to use other binaries)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN_DIR=${BIN_DIR:-$(swift build --package-path Console --scratch-path "$PWD/.build" --show-bin-path)}
WORK=$(mktemp -d /tmp/chirp-console-browser.XXXXXX)
SERVICE="cb$(printf '%06x' $((RANDOM * RANDOM % 16777216)))"
LOGS=.build/test-logs
mkdir -p "$LOGS"
PIDS=()
# Whether process $1 has ended: gone, or a zombie that nobody reaps (a logdemo the restart check started is not this
# shell's child, and PID 1 of some containers reaps nothing).
ended() { [[ ! -e /proc/$1/stat ]] || [[ $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) == Z ]]; }
cleanup() {
    # A logdemo that the app-restart check started is not this shell's child: its pid is in the file.
    if [[ -f "$WORK/logdemo.pid" ]]; then PIDS+=("$(cat "$WORK/logdemo.pid")"); fi
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do for _ in $(seq 1 200); do ended "$pid" && break; sleep 0.05; done; done
    rm -rf "$WORK"
}
trap cleanup EXIT

HOSTILE='<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> markup from an app'
# logdemo keeps a spool, so that a restart continues its stream: the check "app restart" kills it (SIGKILL) and starts
# it again through $WORK/restart-app.sh, and the page must go on with no gap and no duplicate.
LOGDEMO=("$BIN_DIR/logdemo" --name shop --rate 40 --http-interval 0.2 --markup-sample --spool "$WORK/spool"
    --service "$SERVICE" --interface lo)
AVAHI_COMPAT_NOWARN=1 "${LOGDEMO[@]}" >>"$WORK/logdemo.out" 2>&1 &
echo $! >"$WORK/logdemo.pid"
PIDS+=($!)
{
    echo '#!/usr/bin/env bash'
    echo 'set -e'
    echo "pid=\$(cat '$WORK/logdemo.pid')"
    echo "$(declare -f ended)"
    echo 'kill -KILL "$pid"; for _ in $(seq 1 200); do ended "$pid" && break; sleep 0.05; done'
    printf 'AVAHI_COMPAT_NOWARN=1'; printf ' %q' "${LOGDEMO[@]}"; echo " >>'$WORK/logdemo.out' 2>&1 </dev/null &"
    echo "echo \$! >'$WORK/logdemo.pid'"
} >"$WORK/restart-app.sh"
chmod +x "$WORK/restart-app.sh"
AVAHI_COMPAT_NOWARN=1 "$BIN_DIR/chirp-console" --listen 127.0.0.1:0 --data "$WORK/data" --service "$SERVICE" \
    --interface lo >"$WORK/console.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 400); do
    grep -q "^Chirp Console: http" "$WORK/console.out" && break
    sleep 0.05
done
URL=$(sed -n 's/^Chirp Console: //p' "$WORK/console.out" | head -1)
[[ -n $URL ]] || { echo "chirp-console did not start:"; cat "$WORK/console.out"; exit 1; }
echo "==> console at $URL, fed by logdemo on _$SERVICE._tcp"
# Some history first, so that every tab has something to show.
python3 - "$URL" <<'PY'
import json, sys, time, urllib.request
deadline = time.time() + 30
while time.time() < deadline:
    records = json.load(urllib.request.urlopen(sys.argv[1] + "api/records?http=1&limit=5", timeout=10))["records"]
    if len(records) >= 5:
        sys.exit(0)
    time.sleep(0.2)
sys.exit("no HTTP exchange reached the console within 30 s")
PY
status=0
# A time limit, as every test suite has (a run takes under a minute here, 30 s on a loaded 2-core machine).
timeout --signal=TERM 600 python3 Console/Tests/ConsoleBrowser/browser_check.py --url "$URL" --expect-live \
    --hostile-text "$HOSTILE" \
    --json-body-path /orders --search-word order --url-state-word declined --screenshot-dir "$LOGS" \
    --restart-app "$WORK/restart-app.sh" || status=$?
((status == 124)) && echo "==> the browser checks did not end within 600 s"
if ((status != 0)); then
    echo "==> chirp-console's output:"; sed 's/^/    /' "$WORK/console.out"
fi
exit $status
