#!/usr/bin/env bash
# Stop the avahi-daemon that scripts/avahi-up.sh started (recognised by its config
# path on the command line). An avahi-daemon started by anyone else is left alone.
# The system D-Bus is left running: other programs may use it.
# Not used by any make target; handy by hand.
set -euo pipefail

RUN_DIR="${CHIRP_RUN_DIR:-/run/chirp}"
AVAHI_CONF="$RUN_DIR/avahi-daemon.conf"
AVAHI_PID_FILE=/run/avahi-daemon/pid
PATH="$PATH:/usr/sbin:/sbin"

say() { printf '==> %s\n' "$*"; }
die() { printf '==> ERROR: %s\n' "$*" >&2; exit 1; }

as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root to run '$*' (not root, and no sudo found)"
    fi
}

if ! avahi-daemon --check >/dev/null 2>&1; then
    say "avahi-daemon: not running; nothing to do"
    exit 0
fi

pid=$(cat "$AVAHI_PID_FILE" 2>/dev/null || true)
cmdline=""
[[ -n $pid && -r /proc/$pid/cmdline ]] && cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline")
if [[ $cmdline != *"$AVAHI_CONF"* ]]; then
    say "avahi-daemon: running (pid ${pid:-?}) but not started by scripts/avahi-up.sh; leaving it alone"
    exit 0
fi

as_root avahi-daemon -k
for ((i = 0; i < 50; i++)); do
    if ! avahi-daemon --check >/dev/null 2>&1; then
        say "avahi-daemon: stopped (was pid $pid)"
        exit 0
    fi
    sleep 0.1
done
die "avahi-daemon: sent it SIGTERM (avahi-daemon -k) but pid $pid still runs after 5 s"
