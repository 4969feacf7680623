#!/usr/bin/env bash
# The demo of `make demo`: Chirp's programs on this machine find each other through DNS-SD (Avahi, on the loopback
# interface) and talk, one step after the other, each shown as the command a person would type:
#
#   1. two `chat` peers, alice and bob, find each other and connect;
#   2. `chirp listen` joins their chat room and prints every message it receives;
#   3. alice and bob exchange a line;
#   4. `chirp browse` lists the peers; `chirp ping` times round trips to alice;
#   5. `chirp send` sends a line to everyone in the room;
#   6. `listrctl` drives a running `listr` (a to-do app): adds items, marks one done, lists them;
#   7. `chirp logs` shows the logs and HTTP calls of `logdemo` (an app that streams them), from another process;
#   8. `chirp-console` collects them and serves them to a browser; the demo fetches the page and the API.
#
# Every command is printed as it is run, from the project's directory, with the executables' real paths
# (.build/debug/...) and the examples' own service types (chirp-chat, listrctl,
# chirp-logs): each can be copied into another terminal and run as printed. The programs that keep running (the peers, listr, logdemo, the console) show
# their output as "NAME | line"; what the demo types into a chat peer shows as "NAME < line".
#
# Exits 0 when every step did what it shows, else 1, printing what failed and the output of the programs it started.
# KEEP=1: at the end, leaves everything running and prints what to open and try, until Ctrl-C; then exits 0.
# Everything the demo started is stopped when it ends, however it ends. Its files (the programs' output, listr's
# store, the console's data) are in .build/demo/, emptied at the start of each run.
#
# Environment: KEEP (0), DEMO_TIMEOUT (seconds each wait may take; default 20), DEMO_BIN (where the executables are;
# default .build/debug), DEMO_CONSOLE_BIN (where chirp-console is; default the same: make demo builds the Console
# package's chirp-console in this checkout's build folder).
# The executables must be built first: `make demo` does it (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$PATH:/usr/sbin:/sbin"

KEEP="${KEEP:-0}"
[[ $KEEP == 0 || -z $KEEP ]] && KEEP=0 || KEEP=1
DEMO_TIMEOUT="${DEMO_TIMEOUT:-20}"
BIN="${DEMO_BIN:-.build/debug}"
CONSOLE_BIN="${DEMO_CONSOLE_BIN:-$BIN}"
DIR=.build/demo
CHAT=chirp-chat # the chat example's service type (its default)
ALICE_SAYS="hello bob, this is alice"
BOB_SAYS="hi alice, bob here"
TOOL_SAYS="hello from the chirp tool"

PROCS=()                  # the programs started in the background, by name, in order
declare -A PID=() INPUT=() SHOWN=()
LINE_BUFFERED=()          # stdbuf -oL: the programs' output reaches their log files line by line
CONSOLE_URL=""
START=$SECONDS
WIDTH=5                   # the width of the names in "NAME | line"

# ---------------------------------------------------------------- helpers
section() { printf '\n==> %s\n' "$*"; }
note() { printf '    (%s)\n' "$*"; }
now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }

# A command as a person would type it: words quoted only when they need it.
quoted() {
    local word out=""
    for word in "$@"; do
        if [[ $word =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then out+=" $word"; else out+=" '${word//\'/\'\\\'\'}'"; fi
    done
    printf '%s' "${out# }"
}
show_command() { printf '    $ %s\n' "$(quoted "$@")"; }

fail() {
    printf '\n==> DEMO FAILED: %s\n' "$*" >&2
    local name
    for name in "${PROCS[@]}"; do
        [[ -s $DIR/$name.log ]] || continue
        printf '==> the output of %s (%s):\n' "$name" "$DIR/$name.log" >&2
        sed "s/^/    $name | /" "$DIR/$name.log" >&2 || true
    done
    if ((${#PROCS[@]})); then
        printf '==> hints: is avahi-daemon up (make deps)? does `avahi-browse -a -t -r` list the services above?\n' >&2
    fi
    exit 1
}

# Print the lines each program wrote since the last call, as "NAME | line".
show_output() {
    local name total shown
    for name in "${PROCS[@]}"; do
        [[ -f $DIR/$name.log ]] || continue
        total=$(wc -l <"$DIR/$name.log")
        shown=${SHOWN[$name]:-0}
        ((total > shown)) || continue
        sed -n "$((shown + 1)),${total}p" "$DIR/$name.log" | while IFS= read -r line; do
            printf '    %-*s | %s\n' "$WIDTH" "$name" "$line"
        done
        SHOWN[$name]=$total
    done
}

# start NAME COMMAND...: run COMMAND in the background, its output (both streams) in $DIR/NAME.log. A chat peer
# (start_chat) reads its standard input from a FIFO the demo holds open; the others read nothing.
start() {
    local name=$1
    shift
    show_command "$@"
    : >"$DIR/$name.log"
    PROCS+=("$name")
    ((${#name} <= WIDTH)) || WIDTH=${#name}
    (
        # The program must hold neither the chat peers' FIFOs (a peer would never see its input end) nor the lock.
        for fd in "${INPUT[@]}" "$LOCK_FD"; do [[ -z $fd ]] || eval "exec $fd>&-"; done
        if [[ -n ${INPUT[$name]:-} ]]; then
            exec "${LINE_BUFFERED[@]}" "$@" <"$DIR/$name.in" >>"$DIR/$name.log" 2>&1
        else
            exec "${LINE_BUFFERED[@]}" "$@" </dev/null >>"$DIR/$name.log" 2>&1
        fi
    ) &
    PID[$name]=$!
}

start_chat() {
    local name=$1 fd
    mkfifo "$DIR/$name.in"
    exec {fd}<>"$DIR/$name.in"      # a read-write open never blocks; the peer's input stays open until we close it
    INPUT[$name]=$fd
    start "$name" "$BIN/chat" --name "$name" --loopback
}

# type_line NAME TEXT: type TEXT into chat peer NAME.
type_line() {
    printf '%s\n' "$2" >&"${INPUT[$1]}"
    printf '    %-*s < %s\n' "$WIDTH" "$1" "$2"
}

# wait_for NAME TEXT: until a line of NAME's output contains TEXT (a fixed string), showing the output meanwhile;
# fails when NAME exits first or after DEMO_TIMEOUT seconds.
wait_for() {
    local name=$1 text=$2 deadline=$(($(now_ms) + DEMO_TIMEOUT * 1000))
    until grep -qF -- "$text" "$DIR/$name.log"; do
        show_output
        kill -0 "${PID[$name]}" 2>/dev/null || fail "$name exited before printing '$text'"
        (($(now_ms) < deadline)) || fail "$name did not print '$text' within $DEMO_TIMEOUT s"
        sleep 0.1
    done
    show_output
}

# settle: show what the programs print until they have been quiet for 0.3 s (at most 3 s): a command that joins the
# chat room as a peer (ping, send) is seen joining and leaving just after it ends.
settle() {
    local quiet=0 deadline=$(($(now_ms) + 3000)) before after
    before=$(cat "$DIR"/*.log | wc -c)
    while ((quiet < 3 && $(now_ms) < deadline)); do
        sleep 0.1
        after=$(cat "$DIR"/*.log | wc -c)
        if ((after == before)); then quiet=$((quiet + 1)); else quiet=0 before=$after; fi
    done
    show_output
}

# run COMMAND...: run a command in the foreground, as printed; show its output (both streams), indented.
# Its output stays in $DIR/last.out. Fails the demo when it exits with a status other than 0.
run() {
    local status=0
    show_command "$@"
    "$@" </dev/null >"$DIR/last.out" 2>&1 || status=$?
    sed 's/^/    /' "$DIR/last.out"
    ((status == 0)) || fail "$(quoted "$@") exited with status $status"
}

# stop_all: end every program the demo started, the way a person would: a chat peer's input ends, the others get
# Ctrl-C (SIGINT). A program still running 5 s later is killed, and said so.
stop_all() {
    local name pid i
    for name in "${PROCS[@]}"; do
        pid=${PID[$name]:-}
        [[ -n $pid ]] || continue
        if [[ -n ${INPUT[$name]:-} ]]; then
            eval "exec ${INPUT[$name]}>&-"
            INPUT[$name]=""
        else
            kill -INT "$pid" 2>/dev/null || true
        fi
    done
    for name in "${PROCS[@]}"; do
        pid=${PID[$name]:-}
        [[ -n $pid ]] || continue
        for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL "$pid" 2>/dev/null || true
            printf '    (%s did not stop within 5 s of Ctrl-C or the end of its input: killed it)\n' "$name"
        fi
        wait "$pid" 2>/dev/null || true
        PID[$name]=""
    done
}

on_exit() {
    local status=$?
    trap - INT TERM
    stop_all
    exit "$status"
}

# ---------------------------------------------------------------- steps
prepare() {
    mkdir -p .build
    exec {LOCK_FD}>.build/demo.lock
    flock -n "$LOCK_FD" || { echo "==> another make demo runs in this directory (.build/demo.lock)" >&2; exit 1; }
    rm -rf "$DIR"
    mkdir -p "$DIR"
    trap on_exit EXIT
    trap 'printf "\n==> interrupted: stopping what the demo started\n"; exit 130' INT TERM
    local program
    for program in chat chirp listr listrctl logdemo; do
        [[ -x $BIN/$program ]] || fail "no $BIN/$program: build it first (make demo does)"
    done
    [[ -x $CONSOLE_BIN/chirp-console ]] || fail "no $CONSOLE_BIN/chirp-console: build it first (make demo does)"
    command -v stdbuf >/dev/null 2>&1 && LINE_BUFFERED=(stdbuf -oL -eL)
    if command -v avahi-daemon >/dev/null 2>&1 && ! avahi-daemon --check >/dev/null 2>&1; then
        fail "avahi-daemon is not running: start it with make deps (scripts/avahi-up.sh)"
    fi
    check_others
    printf '\n==> The Chirp demo: programs on this machine find each other through DNS-SD and talk (loopback only).\n'
    printf '    Each command is printed as it runs ("$ ..."); from this directory (%s) it runs as printed\n' "$PWD"
    printf '    in a terminal of your own. The programs that keep running print as "NAME | line"; what the demo types\n'
    printf '    into a chat peer shows as "NAME < line".\n'
}

# Programs of the demo's service types that already run here (a chat peer of your own from an earlier
# `make demo KEEP=1`, say) show up in the demo too; another listr would make listrctl ask which one to drive.
check_others() {
    local type others=() listrs
    for type in "$CHAT" listrctl chirp-logs; do
        "$BIN/chirp" browse "$type" --once --timeout 1 --interface lo >"$DIR/before-$type.out" 2>/dev/null &
    done
    wait
    listrs=$(awk 'NR > 1 { printf "%s%s", sep, $1; sep = ", " }' "$DIR/before-listrctl.out")
    [[ -z $listrs ]] || fail "a listr app already runs on this machine ($listrs): listrctl would ask which one to drive. Stop it (Ctrl-C where it runs), then run make demo again."
    for type in "$CHAT" chirp-logs; do
        mapfile -t -O "${#others[@]}" others < <(awk -v type="$type" 'NR > 1 { print $1 " (" type ")" }' "$DIR/before-$type.out")
    done
    if ((${#others[@]})); then
        note "already running on this machine, they will show up in the demo too: $(printf '%s, ' "${others[@]}" | sed 's/, $//')"
    fi
}

step_chat() {
    section "1. Two chat peers, alice and bob, start and find each other (DNS-SD), then connect (TCP)"
    local started
    started=$(now_ms)
    start_chat alice
    start_chat bob
    WIDTH=8 # room for "listener"
    wait_for alice "* connected to bob"
    wait_for bob "* connected to alice"
    local ms=$(($(now_ms) - started))
    note "connected $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s after they started"

    section "2. chirp listen joins their chat room and prints every message it receives"
    start listener "$BIN/chirp" listen "$CHAT" --name listener --interface lo
    wait_for alice "* connected to listener"
    wait_for bob "* connected to listener"

    section "3. alice types a line, bob answers"
    type_line alice "$ALICE_SAYS"
    wait_for bob "[alice] $ALICE_SAYS"
    wait_for listener "$ALICE_SAYS"
    type_line bob "$BOB_SAYS"
    wait_for alice "[bob] $BOB_SAYS"
    wait_for listener "$BOB_SAYS"

    section "4. chirp browse: who is in the room; chirp ping: round trips to alice"
    # listener has connected to alice and bob already; DNS-SD announces it a moment later (Avahi checks that its
    # name is free first), and only then do chirp browse and the commands that join (send, ping) see it.
    wait_until_advertised "$CHAT" listener
    run "$BIN/chirp" browse "$CHAT" --once --timeout 2 --interface lo
    local name
    for name in alice bob listener; do
        grep -q "^$name " "$DIR/last.out" || fail "chirp browse did not list $name"
    done
    run "$BIN/chirp" ping "$CHAT" --peer alice -c 3 -i 0.2 --interface lo
    settle

    section "5. chirp send: a line to everyone in the room (a chat line is the JSON {\"text\": ...})"
    run "$BIN/chirp" send "$CHAT" chat.line "{\"text\":\"$TOOL_SAYS\"}" --interface lo
    wait_for alice "$TOOL_SAYS"
    wait_for bob "$TOOL_SAYS"
    wait_for listener "$TOOL_SAYS"
    settle
}

# wait_until_advertised TYPE NAME: until `chirp browse` finds NAME among the peers of TYPE (nothing shown).
wait_until_advertised() {
    local type=$1 name=$2 deadline=$(($(now_ms) + DEMO_TIMEOUT * 1000))
    until "$BIN/chirp" browse "$type" --once --timeout 0.5 --interface lo 2>/dev/null | grep -q "^$name "; do
        show_output
        kill -0 "${PID[$name]}" 2>/dev/null || fail "$name exited before it was found"
        (($(now_ms) < deadline)) || fail "chirp browse $type did not find $name within $DEMO_TIMEOUT s"
    done
}

# listr is a small to-do app that keeps running; listrctl drives it from the terminal over Chirp.
step_listr() {
    section "6. listr, a to-do app, keeps running; listrctl drives it from the terminal"
    start kitchen "$BIN/listr" --name kitchen --store "$DIR/todo.json" --loopback --log-level notice
    wait_until_advertised listrctl kitchen # listr's service type is listrctl; at --log-level notice it prints nothing
    run "$BIN/listrctl" item add buy milk --loopback
    run "$BIN/listrctl" item add call the plumber --loopback
    run "$BIN/listrctl" item "done" 1 --loopback
    run "$BIN/listrctl" item list --loopback
    grep -q "buy milk" "$DIR/last.out" || fail "listrctl item list did not show the added item"
    show_output
    note "listr keeps the list in $DIR/todo.json"
}

# logdemo logs a few records a second and calls its own small HTTP server; chirp logs shows both from another
# process, as a developer on another host would.
step_logs() {
    section "7. logdemo, an app that streams its logs and HTTP calls; chirp logs shows them from another process"
    start shop "$BIN/logdemo" --name shop --rate 5 --http-interval 0.3 --interface lo
    wait_for shop "streaming logs"
    sleep 1.5 # a few records and HTTP calls to show
    run "$BIN/chirp" logs shop --no-follow --history 6 --interface lo
    run "$BIN/chirp" logs shop --http --no-follow --history 20 --interface lo
    grep -qE "GET|POST" "$DIR/last.out" || fail "chirp logs --http showed no HTTP call"
    note "add --detail for the headers and bodies, sensitive headers redacted; without --no-follow it goes on live"
}

# Chirp Console beside logdemo: it collects shop's logs and HTTP calls into its store and serves them to a browser.
# The demo fetches the page and the API, as a browser would.
step_console() {
    section "8. chirp-console collects shop's logs and HTTP calls and serves them to a browser"
    local listen=()
    # Its default address is 127.0.0.1:7777; when that port is taken, any free one.
    if (exec 3<>/dev/tcp/127.0.0.1/7777) 2>/dev/null; then listen=(--listen 127.0.0.1:0); fi
    start console "$CONSOLE_BIN/chirp-console" "${listen[@]}" --data "$DIR/console" --interface lo
    wait_for console "Chirp Console: http"
    CONSOLE_URL=$(sed -n 's/^Chirp Console: \(http[^ ]*\).*/\1/p' "$DIR/console.log" | head -1)
    printf '    the page and its API, fetched as a browser does:\n'
    python3 - "$CONSOLE_URL" <<'PY' || fail "the console's page or API did not answer as expected"
import json, sys, time, urllib.request
url = sys.argv[1]
page = urllib.request.urlopen(url, timeout=10)
html = page.read().decode()
assert "Chirp Console" in html, "the page has no title"
print(f"    GET {url} -> {page.status}, {len(html)} bytes")
deadline = time.time() + 20
while True:
    records = json.load(urllib.request.urlopen(url + "api/records?limit=3", timeout=10))["records"]
    if records or time.time() > deadline:
        break
    time.sleep(0.1)
assert records, "no record reached the console"
sources = json.load(urllib.request.urlopen(url + "api/sources", timeout=10))["sources"]
for s in sources:
    print(f"    GET /api/sources -> {s['app']} on {s['host']} (pid {s['pid']}): {s['records']} records so far")
print("    GET /api/records?limit=3 -> the newest records:")
for r in records:
    print(f"      #{r['id']} {r['time'][11:23]} {r['level']:<8} {r['label']}: {r['message']}")
PY
}

finish() {
    local took=$((SECONDS - START))
    if ((!KEEP)); then
        stop_all
        section "The demo worked (${took} s). It has stopped what it started: alice, bob, listener, kitchen, shop, console."
        printf '    To keep them running and try the commands yourself (the console in a browser, a chat peer of your own):\n'
        printf '        make demo KEEP=1\n'
        printf '    Next: README.md (Quick start: your own program), Docs/GettingStarted.md, Docs/CLI.md.\n'
        return
    fi
    local port=${CONSOLE_URL##*:}
    port=${port%%/*}
    section "The demo worked (${took} s). Its programs keep running until you press Ctrl-C here."
    printf '    Try, from another terminal in %s:\n' "$PWD"
    printf '    open %s in a browser: Chirp Console, with shop'"'"'s logs and HTTP calls, live\n' "$CONSOLE_URL"
    printf '        (from another machine: ssh -L %s:127.0.0.1:%s THIS-HOST, then the same URL there)\n' "$port" "$port"
    printf '    %s\n        join the chat room and type a line: alice, bob and listener print it below\n' \
        "$(quoted "$BIN/chat" --name carol --loopback)"
    printf '    %s\n        a line to everyone in the room\n' \
        "$(quoted "$BIN/chirp" send "$CHAT" chat.line '{"text":"hi all"}' --interface lo)"
    printf '    %s\n        every service on this machine, live (Ctrl-C to stop)\n' \
        "$(quoted "$BIN/chirp" browse --interface lo)"
    printf '    %s\n        shop'"'"'s logs, live (Ctrl-C to stop)\n' "$(quoted "$BIN/chirp" logs shop --interface lo)"
    printf '    %s\n        kitchen'"'"'s to-do list\n' "$(quoted "$BIN/listrctl" item list --loopback)"
    printf '    What the programs started here print shows below.\n'
    trap 'section "Stopping what the demo started."; stop_all; printf "==> Stopped.\n"; exit 0' INT TERM
    local name
    declare -A gone=()
    while true; do
        show_output
        for name in "${PROCS[@]}"; do
            if [[ -z ${gone[$name]:-} ]] && ! kill -0 "${PID[$name]}" 2>/dev/null; then
                gone[$name]=1
                note "$name has exited"
            fi
        done
        sleep 0.3
    done
}

main() {
    prepare
    step_chat
    step_listr
    step_logs
    step_console
    finish
}

main "$@"
