#!/usr/bin/env bash
# Load runs of Chirp (Docs/Reliability.md, "Load"), with real processes and real avahi-daemons.
#
#   run.sh broadcast [--hosts 3] [--peers 16] [--seconds 60] [--window 4096]
#       One sender broadcasts as fast as its acknowledgement window lets it, for --seconds, to --peers receiver
#       processes spread over --hosts simulated hosts (network namespaces, scripts/netns/netns.sh). Prints per-peer
#       and aggregate figures; exits non-zero on any lost, duplicated, reordered or skipped delivery.
#   run.sh many [--peers 64] [--per-process 1] [--timeout 180] [--hold 5] [--netns 0|1] [--hosts 1]
#       --peers transceivers in one service (--per-process of them in each process), until each has --peers - 1
#       connected peers: on one host, or spread over --hosts simulated hosts (network namespaces, each with its own
#       dbus and avahi-daemon; --hosts 16 --peers 16 is one peer per host). All processes are started at once. Prints
#       the time to full mesh from the first launch and from the last one, and memory per peer; exits non-zero
#       unless all connect.
#
# Environment: LOAD_BIN (the chirp-load executable; default: a release build), LOAD_NETNS=0 (loopback only),
# NETNS_SH (default scripts/netns/netns.sh), LOAD_OUT (where logs go; default a fresh directory under /tmp).
# Every process this script starts, and the namespaces, are cleaned up on exit and on SIGINT/SIGTERM.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
NETNS_SH="${NETNS_SH:-$ROOT/scripts/netns/netns.sh}"
export AVAHI_COMPAT_NOWARN=1

say() { printf '==> %s\n' "$*"; }
die() { printf '==> ERROR: %s\n' "$*" >&2; exit 2; }

mode="${1:-}"
[[ "$mode" == broadcast || "$mode" == many ]] || die "usage: run.sh broadcast|many [options] (see the header of $0)"
shift
hosts="" peers="" seconds=60 window=4096 per_process=1 timeout=180 hold=5 many_netns=0
while (($#)); do
    case "$1" in
        --hosts) hosts="$2" ;;
        --peers) peers="$2" ;;
        --seconds) seconds="$2" ;;
        --window) window="$2" ;;
        --per-process) per_process="$2" ;;
        --timeout) timeout="$2" ;;
        --hold) hold="$2" ;;
        --netns) many_netns="$2" ;;  # many: 1 = run the peers on one namespace host (its own dbus + avahi)
        *) die "unknown option $1" ;;
    esac
    shift 2
done
if [[ -z "$peers" ]]; then
    if [[ $mode == broadcast ]]; then peers=16; else peers=64; fi
fi
if [[ -z "$hosts" ]]; then
    if [[ $mode == broadcast ]]; then hosts=3; else hosts=1; fi
fi
if [[ $mode == many && $hosts -gt 1 ]]; then many_netns=1; fi

# A fresh service type per run (at most 15 characters).
service="ld$(printf '%04x' $((RANDOM % 65536)))$(printf '%x' $(($(date +%s) % 65536)))"
service="${service:0:15}"
OUT="${LOAD_OUT:-$(mktemp -d /tmp/chirp-load.XXXXXX)}"
mkdir -p "$OUT"

if [[ -z "${LOAD_BIN:-}" ]]; then
    say "building chirp-load (release)"
    (cd "$ROOT" && swift build -c release --product chirp-load >"$OUT/build.log" 2>&1) || { tail -20 "$OUT/build.log"; die "build failed"; }
    LOAD_BIN="$(cd "$ROOT" && swift build -c release --show-bin-path)/chirp-load"
fi
[[ -x "$LOAD_BIN" ]] || die "no executable at $LOAD_BIN"

# ------------------------------------------------------------------ hosts
# A host is a command prefix: empty for this machine's loopback avahi, `netns.sh exec hK` for a namespace host.
use_netns=0
netns_up=0
if [[ "${LOAD_NETNS:-1}" != 0 && ( ($mode == broadcast && $hosts -gt 1) || ($mode == many && $many_netns == 1) ) ]]; then
    if [[ -x "$NETNS_SH" ]]; then
        if reason="$("$NETNS_SH" available 2>&1)"; then
            use_netns=1
        else
            say "network namespaces unavailable ($reason): all receivers on this machine's loopback avahi-daemon"
        fi
    else
        say "no $NETNS_SH: all receivers on this machine's loopback avahi-daemon (hosts collapse to one)"
    fi
fi
if ((use_netns == 0)); then
    hosts_used=1
    "$ROOT/scripts/avahi-up.sh" >"$OUT/avahi-up.log" 2>&1 || { cat "$OUT/avahi-up.log"; die "avahi-up.sh failed"; }
    interface=lo
else
    hosts_used=$hosts
    export NETNS_PREFIX="${NETNS_PREFIX:-cl$(printf '%04x' $((RANDOM % 65536)))}"
    interface=any
fi

pids=()
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.5
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
    if ((netns_up)); then "$NETNS_SH" down >"$OUT/netns-down.log" 2>&1 || true; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

host_prefix() {  # host_prefix K: the command prefix that runs a command on host K (1-based)
    if ((use_netns)); then printf '%s\0' "$NETNS_SH" exec "h$1"; fi
}

# start NAME HOST ARGS...: runs chirp-load ARGS on HOST in a process group of its own, stdout to NAME.json.
start() {
    local name="$1" host="$2"
    shift 2
    local prefix=()
    if ((use_netns)); then prefix=("$NETNS_SH" exec "h$host"); fi
    setsid "${prefix[@]}" "$LOAD_BIN" "$@" --label "h$host" >"$OUT/$name.json" 2>"$OUT/$name.err" </dev/null &
    pids+=($!)
    last_pid=$!
}

if ((use_netns)); then
    say "building $hosts hosts (NETNS_PREFIX=$NETNS_PREFIX)"
    netns_up=1
    "$NETNS_SH" up "$hosts" >"$OUT/netns-up.log" 2>&1 || { cat "$OUT/netns-up.log"; die "netns.sh up $hosts failed"; }
fi

# ------------------------------------------------------------------ broadcast
if [[ $mode == broadcast ]]; then
    say "broadcast: 1 sender, $peers receivers on $hosts_used host(s), $seconds s, window $window, service _$service._tcp, logs in $OUT"
    for ((i = 1; i <= peers; i++)); do
        host=$(( (i - 1) % hosts_used + 1 ))
        start "recv-$i" "$host" receiver --service "$service" --name "recv-$i" --interface "$interface" \
            --timeout $((seconds + 300))
    done
    # The sender on host 1 (its receivers there see it on the same daemon, the others across the bridge).
    start sender 1 sender --service "$service" --receivers "$peers" --seconds "$seconds" --window "$window" \
        --interface "$interface" --connect-timeout 120 --report-timeout 60
    sender_pid=$last_pid
    sender_status=0
    wait "$sender_pid" || sender_status=$?
    cat "$OUT/sender.err" >&2
    # The receivers end once the sender disconnects (bounded inside them: 15 s).
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    python3 "$HERE/summarize.py" broadcast "$OUT" "$peers" "$hosts_used" "$sender_status"
    exit $?
fi

# ------------------------------------------------------------------ many
processes=$(( (peers + per_process - 1) / per_process ))
((processes * per_process == peers)) || die "--peers must be a multiple of --per-process"
say "many: $peers peers in $processes process(es) of $per_process, on $hosts_used host(s) ($( ((use_netns)) && echo "namespace hosts" || echo "loopback avahi")), service _$service._tcp, logs in $OUT"
started_at=$(date +%s.%N)
for ((i = 1; i <= processes; i++)); do
    start "mesh-$i" $(( (i - 1) % hosts_used + 1 )) mesh --service "$service" --name "p$i" --count "$per_process" \
        --expect $((peers - 1)) --interface "$interface" --timeout $((timeout + 60))
done
last_started_at=$(date +%s.%N)
deadline=$(( $(date +%s) + timeout ))
full=0
while (( $(date +%s) < deadline )); do
    full=$( (grep -l '"type":"full"' "$OUT"/mesh-*.json 2>/dev/null || true) | wc -l)
    ((full == processes)) && break
    sleep 1
done
if ((full == processes)); then
    say "all $processes process(es) report full mesh; holding $hold s"
    sleep "$hold"
else
    say "only $full of $processes process(es) reached full mesh within $timeout s"
fi
for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
python3 "$HERE/summarize.py" many "$OUT" "$peers" "$per_process" "$started_at" "$last_started_at" "$hosts_used"
