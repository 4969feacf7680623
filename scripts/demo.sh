#!/usr/bin/env bash
# Demo: two `chat` peers, alice and bob, find each other through DNS-SD (Avahi,
# loopback only) on a fresh service type, then exchange one line each;
# `chirp browse --once` shows them as any developer would see them.
#
#   chat --name NAME --service TYPE
#     reads lines on stdin and broadcasts each one; prints received lines as
#     "[SENDER] TEXT" and "* connected to NAME" when a peer connects.
#   chirp browse TYPE --once
#     lists the peers of TYPE found within --timeout: name, host, address:port,
#     peer id, metadata.
#
# Exits 0 when bob printed alice's line and alice printed bob's within
# DEMO_TIMEOUT seconds (default 20), else 1 with both peers' output.
# Environment: SWIFT (default swift), CHAT_BIN and CHIRP_BIN (default: chat and
# chirp in swift's bin path), DEMO_TIMEOUT.
#
# Structure: one function per step (step_*), run in order by main(); add steps
# there. Helpers: start_peer, send_line, wait_for, show_output, stop_peers.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$PATH:/usr/sbin:/sbin"

SWIFT="${SWIFT:-swift}"
DEMO_TIMEOUT="${DEMO_TIMEOUT:-20}"
SERVICE="demo-$RANDOM"                  # at most 10 characters: letters, digits, hyphen
ALICE_SAYS="hello bob, this is alice"
BOB_SAYS="hi alice, bob here"

WORK_DIR=""
CHAT_BIN="${CHAT_BIN:-}"
CHIRP_BIN="${CHIRP_BIN:-}"
LISTR_PID=""
LOGDEMO_PID=""
CONSOLE_PID=""
LINE_BUFFERED=()                        # stdbuf -oL, so output reaches the log files line by line
PEERS=()
declare -A PEER_PID=() PEER_FD=() SHOWN=()
STEP=0
EXCHANGE_TIME=""
START_MS=0
DEADLINE_MS=0

# ---------------------------------------------------------------- helpers
say()  { printf '==> %s\n' "$*"; }
step() { STEP=$((STEP + 1)); printf '\n==> step %d: %s\n' "$STEP" "$*"; }
now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }
elapsed() { local ms=$(($(now_ms) - START_MS)); printf '%d.%03d s' $((ms / 1000)) $((ms % 1000)); }

fail() {
    printf '\n==> DEMO FAILED: %s\n' "$*" >&2
    if ((${#PEERS[@]})); then
        local name
        for name in "${PEERS[@]}"; do
            printf '==> full output of %s (stdout, then stderr):\n' "$name" >&2
            sed "s/^/    $name | /" "$WORK_DIR/$name.out" >&2 || true
            sed "s/^/    $name ! /" "$WORK_DIR/$name.err" >&2 || true
        done
    fi
    printf '==> hints: is avahi-daemon up (scripts/avahi-up.sh)? does `avahi-browse -a -t -r` list _%s._tcp?\n' "$SERVICE" >&2
    exit 1
}

cleanup() {
    local name pid
    for name in "${PEERS[@]}"; do
        pid=${PEER_PID[$name]:-}
        if [[ -n $pid ]]; then
            disown "$pid" 2>/dev/null || true     # no "Killed" job notice
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    if [[ -n $LISTR_PID ]]; then kill "$LISTR_PID" 2>/dev/null || true; fi
    if [[ -n $LOGDEMO_PID ]]; then kill "$LOGDEMO_PID" 2>/dev/null || true; fi
    if [[ -n $CONSOLE_PID ]]; then kill "$CONSOLE_PID" 2>/dev/null || true; fi
    if [[ -n $WORK_DIR ]]; then rm -rf "$WORK_DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Print the lines each peer wrote since the last call: "name | " stdout, "name ! " stderr.
show_output() {
    local name kind file total shown mark
    for name in "${PEERS[@]}"; do
        for kind in out err; do
            file="$WORK_DIR/$name.$kind"
            total=$(wc -l <"$file")
            shown=${SHOWN[$name.$kind]:-0}
            ((total > shown)) || continue
            mark='|'; [[ $kind == err ]] && mark='!'
            sed -n "$((shown + 1)),${total}p" "$file" | sed "s/^/    $name $mark /"
            SHOWN[$name.$kind]=$total
        done
    done
}

# start_peer NAME: run chat in the background; its stdin is a FIFO we hold open.
start_peer() {
    local name=$1 fifo="$WORK_DIR/$1.in" fd
    mkfifo "$fifo"
    exec {fd}<>"$fifo"              # read-write open never blocks; keeps chat's stdin open until we close it
    : >"$WORK_DIR/$name.out"
    : >"$WORK_DIR/$name.err"
    PEER_FD[$name]=$fd
    PEERS+=("$name")
    (
        # chat must not inherit our ends of the FIFOs (it would never see EOF).
        for f in "${PEER_FD[@]}"; do eval "exec $f>&-"; done
        exec "${LINE_BUFFERED[@]}" "$CHAT_BIN" --name "$name" --service "$SERVICE" \
            <"$fifo" >"$WORK_DIR/$name.out" 2>"$WORK_DIR/$name.err"
    ) &
    PEER_PID[$name]=$!
    say "started $name (pid ${PEER_PID[$name]}): chat --name $name --service $SERVICE"
}

# send_line NAME TEXT: type TEXT into NAME's stdin.
send_line() {
    local name=$1 text=$2
    printf '%s\n' "$text" >&"${PEER_FD[$name]}"
    printf '    %s < %s\n' "$name" "$text"
}

# wait_for NAME TEXT: poll NAME's stdout until a line contains TEXT (fixed string),
# failing if NAME exits or the demo's deadline passes.
wait_for() {
    local name=$1 text=$2
    until grep -qF -- "$text" "$WORK_DIR/$name.out"; do
        show_output
        kill -0 "${PEER_PID[$name]}" 2>/dev/null ||
            fail "$name exited before printing '$text'"
        (($(now_ms) < DEADLINE_MS)) ||
            fail "no '$text' from $name within ${DEMO_TIMEOUT} s"
        sleep 0.1
    done
    show_output
    say "$name printed '$text' (after $(elapsed))"
}

# stop_peers: close every peer's stdin, SIGTERM it, SIGKILL after 3 s.
stop_peers() {
    local name pid i status
    for name in "${PEERS[@]}"; do
        eval "exec ${PEER_FD[$name]}>&-"
        kill -TERM "${PEER_PID[$name]}" 2>/dev/null || true
    done
    for name in "${PEERS[@]}"; do
        pid=${PEER_PID[$name]}
        for ((i = 0; i < 30; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL "$pid" 2>/dev/null || true
            say "$name did not stop within 3 s of SIGTERM; killed it"
        fi
        status=0; wait "$pid" 2>/dev/null || status=$?
        say "$name stopped (exit status $status)"
        PEER_PID[$name]=""
    done
    show_output
}

# ---------------------------------------------------------------- steps
prepare() {
    WORK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/chirp-demo.XXXXXX")
    if [[ -z $CHAT_BIN ]]; then
        CHAT_BIN="$("$SWIFT" build --show-bin-path)/chat"
        if [[ ! -x $CHAT_BIN ]]; then
            say "building the chat example ($SWIFT build --product chat)"
            "$SWIFT" build --product chat
        fi
    fi
    [[ -x $CHAT_BIN ]] || fail "no chat executable at $CHAT_BIN"
    if [[ -z $CHIRP_BIN ]]; then
        CHIRP_BIN="$("$SWIFT" build --show-bin-path)/chirp"
        if [[ ! -x $CHIRP_BIN ]]; then
            say "building the chirp tool ($SWIFT build --product chirp)"
            "$SWIFT" build --product chirp
        fi
    fi
    [[ -x $CHIRP_BIN ]] || fail "no chirp executable at $CHIRP_BIN"
    command -v stdbuf >/dev/null 2>&1 && LINE_BUFFERED=(stdbuf -oL -eL)
    if command -v avahi-daemon >/dev/null 2>&1 && ! avahi-daemon --check >/dev/null 2>&1; then
        fail "avahi-daemon is not running; start it with scripts/avahi-up.sh (or make deps)"
    fi
    say "chat: $CHAT_BIN"
    say "chirp: $CHIRP_BIN"
    say "service type: $SERVICE (fresh for this run); timeout: ${DEMO_TIMEOUT} s"
}

step_start_peers() {
    step "start alice and bob on service type $SERVICE"
    START_MS=$(now_ms)
    DEADLINE_MS=$((START_MS + DEMO_TIMEOUT * 1000))
    start_peer alice
    start_peer bob
    show_output
}

step_wait_connected() {
    step "wait until alice and bob find each other (DNS-SD browse + resolve) and connect"
    wait_for alice "* connected to bob"
    wait_for bob "* connected to alice"
}

step_alice_to_bob() {
    step "alice types a line; bob must print it"
    send_line alice "$ALICE_SAYS"
    wait_for bob "[alice] $ALICE_SAYS"
}

step_bob_to_alice() {
    step "bob answers; alice must print it"
    send_line bob "$BOB_SAYS"
    wait_for alice "[bob] $BOB_SAYS"
    EXCHANGE_TIME=$(elapsed)
}

step_browse() {
    step "chirp browse --once lists the peers of $SERVICE, as any developer would see them"
    local out="$WORK_DIR/browse.out" err="$WORK_DIR/browse.err" status=0 name
    printf '    $ chirp browse %s --once --timeout 2\n' "$SERVICE"
    "$CHIRP_BIN" browse "$SERVICE" --once --timeout 2 >"$out" 2>"$err" || status=$?
    sed 's/^/    chirp | /' "$out"
    sed 's/^/    chirp ! /' "$err"
    ((status == 0)) || fail "chirp browse exited with status $status (see chirp --help: EXIT STATUS)"
    for name in alice bob; do
        grep -q "^$name " "$out" || fail "chirp browse did not list $name"
    done
    say "chirp browse listed alice and bob"
}

step_stop_peers() {
    step "stop alice and bob"
    stop_peers
}

# listr is a small to-do app that keeps running; listrctl drives it from the terminal over Chirp.
step_listr() {
    local bin listr_log="$WORK_DIR/listr.log" store="$WORK_DIR/todo.json" type="$SERVICE-l" out status=0
    bin="$(dirname "$CHAT_BIN")"
    [[ -x $bin/listr && -x $bin/listrctl ]] || fail "listr/listrctl not built (run $SWIFT build)"
    step "start the listr app (a to-do list in $store) on service type $type"
    "$bin/listr" --store "$store" --name kitchen --service "$type" >"$listr_log" 2>&1 &
    LISTR_PID=$!
    local deadline=$(($(now_ms) + DEMO_TIMEOUT * 1000))
    until grep -q "ready" "$listr_log"; do
        (($(now_ms) < deadline)) || fail "listr did not start: $(cat "$listr_log")"
        kill -0 "$LISTR_PID" 2>/dev/null || fail "listr exited: $(cat "$listr_log")"
        sleep 0.05
    done
    say "listr is running (pid $LISTR_PID)"

    step "listrctl drives the running app: add two items, mark one done, list them"
    for args in "item add buy-milk" "item add call-mum" "item done 1" "item list"; do
        printf '    $ listrctl %s --service %s\n' "$args" "$type"
        # shellcheck disable=SC2086
        out=$("$bin/listrctl" $args --service "$type" --timeout 10 2>&1) || status=$?
        printf '%s\n' "$out" | sed 's/^/    listrctl | /'
        ((status == 0)) || fail "listrctl $args exited with status $status"
    done
    grep -q "buy-milk" <<<"$out" || fail "listrctl item list did not show the added item"
    kill "$LISTR_PID" 2>/dev/null || true
    wait "$LISTR_PID" 2>/dev/null || true
    LISTR_PID=""
    say "listr stopped; its store $store kept the list:"
    sed 's/^/    todo.json | /' "$store"
}

# logdemo logs a few records a second and calls its own small HTTP server; chirp logs streams both from another
# process, as a developer on another host would.
step_logs() {
    local bin log="$WORK_DIR/logdemo.out" type="$SERVICE-g" out="$WORK_DIR/logs.out" http="$WORK_DIR/http.out" status=0
    bin="$(dirname "$CHAT_BIN")"
    [[ -x $bin/logdemo ]] || fail "logdemo not built (run $SWIFT build)"
    step "start logdemo, an app that logs and makes HTTP calls, streaming its logs on service type $type"
    "$bin/logdemo" --name shop --rate 5 --http-interval 0.3 --service "$type" --interface lo >"$log" 2>&1 &
    LOGDEMO_PID=$!
    local deadline=$(($(now_ms) + DEMO_TIMEOUT * 1000))
    until grep -q "streaming logs" "$log"; do
        (($(now_ms) < deadline)) || fail "logdemo did not start: $(cat "$log")"
        sleep 0.05
    done
    sed 's/^/    logdemo | /' "$log"

    step "chirp logs shows shop's recent logs (history), then exits"
    printf '    $ chirp logs shop --no-follow --history 8 --service %s --interface lo\n' "$type"
    "$CHIRP_BIN" logs shop --no-follow --history 8 --service "$type" --interface lo --color never >"$out" 2>&1 || status=$?
    sed 's/^/    chirp | /' "$out"
    ((status == 0)) || fail "chirp logs exited with status $status"

    step "chirp logs --http: shop's HTTP API calls, one line each"
    printf '    $ chirp logs shop --http --no-follow --history 40 --service %s --interface lo\n' "$type"
    "$CHIRP_BIN" logs shop --http --no-follow --history 40 --service "$type" --interface lo --color never >"$http" 2>&1 || status=$?
    head -8 "$http" | sed 's/^/    chirp | /'
    ((status == 0)) || fail "chirp logs --http exited with status $status"
    grep -qE "GET|POST" "$http" || fail "chirp logs --http showed no HTTP exchange"

    step "chirp logs --http --detail: one exchange in full, JSON pretty-printed, sensitive headers (Cookie, Authorization...) redacted"
    printf '    $ chirp logs shop --http --detail --no-follow --history 12 --service %s --interface lo\n' "$type"
    "$CHIRP_BIN" logs shop --http --detail --no-follow --history 12 --service "$type" --interface lo --color never >"$http" 2>&1 || status=$?
    awk '/^-- following/ {next} /^$/ {exit} {print}' "$http" | head -40 | sed 's/^/    chirp | /'
    grep -q "<redacted>" "$http" || fail "chirp logs --http --detail showed no redacted header"
    ((status == 0)) || fail "chirp logs --http --detail exited with status $status"
    step_console "$type"
    kill "$LOGDEMO_PID" 2>/dev/null || true
    wait "$LOGDEMO_PID" 2>/dev/null || true
    LOGDEMO_PID=""
}

# Chirp Console beside logdemo: it collects shop's logs and HTTP calls into its store and serves them to a browser.
# The demo prints its URL and fetches the page and the API, as a browser would.
step_console() {
    local type=$1 bin out="$WORK_DIR/console.out" url
    bin="$(dirname "$CHAT_BIN")"
    [[ -x $bin/chirp-console ]] || fail "chirp-console not built (run $SWIFT build)"
    step "start chirp-console: it follows shop from its history on and serves a web page (Docs/Console.md)"
    printf '    $ chirp-console --listen 127.0.0.1:0 --data %s --service %s --interface lo\n' "$WORK_DIR/console" "$type"
    "$bin/chirp-console" --listen 127.0.0.1:0 --data "$WORK_DIR/console" --service "$type" --interface lo >"$out" 2>&1 &
    CONSOLE_PID=$!
    local deadline=$(($(now_ms) + DEMO_TIMEOUT * 1000))
    until grep -q "^Chirp Console: http" "$out"; do
        (($(now_ms) < deadline)) || fail "chirp-console did not start: $(cat "$out")"
        sleep 0.05
    done
    url=$(sed -n 's/^Chirp Console: //p' "$out" | head -1)
    sed 's/^/    chirp-console | /' "$out"
    say "open $url in a browser on this machine (it listens on 127.0.0.1 only)"
    step "fetch the page and the API, as the browser does"
    python3 - "$url" <<'PY' || fail "the console's page or API did not answer as expected"
import json, sys, time, urllib.request
url = sys.argv[1]
page = urllib.request.urlopen(url, timeout=10)
html = page.read().decode()
assert "Chirp Console" in html, "the page has no title"
print(f"    GET / -> {page.status}, {len(html)} bytes; Content-Security-Policy: {page.headers['Content-Security-Policy'][:45]}...")
deadline = time.time() + 20
while True:
    records = json.load(urllib.request.urlopen(url + "api/records?limit=3", timeout=10))["records"]
    if records or time.time() > deadline:
        break
    time.sleep(0.1)
assert records, "no record reached the console"
sources = json.load(urllib.request.urlopen(url + "api/sources", timeout=10))["sources"]
print("    GET /api/sources -> " + ", ".join(f"{s['app']} on {s['host']} (pid {s['pid']}): {s['records']} records, live={s['live']}" for s in sources))
print("    GET /api/records?limit=3 ->")
for r in records:
    print(f"      #{r['id']} {r['time'][11:23]} {r['level']:<8} {r['label']}: {r['message']!r}")
endpoints = json.load(urllib.request.urlopen(url + "api/endpoints", timeout=10))["endpoints"]
print("    GET /api/endpoints -> " + "; ".join(f"{e['method']} {e['path']}: {e['count']} calls, p50 {e['p50']:.1f} ms" for e in endpoints[:3]))
PY
    kill "$CONSOLE_PID" 2>/dev/null || true
    wait "$CONSOLE_PID" 2>/dev/null || true
    CONSOLE_PID=""
}

main() {
    prepare
    step_start_peers
    step_wait_connected
    step_alice_to_bob
    step_bob_to_alice
    step_browse
    step_stop_peers
    step_listr
    step_logs
    printf '\n==> demo OK: alice and bob found each other and exchanged a line each (%s after start); chirp browse listed them; listrctl drove listr; chirp logs streamed the logs and HTTP calls of logdemo; chirp-console stored and served them\n' "$EXCHANGE_TIME"
}

main "$@"
