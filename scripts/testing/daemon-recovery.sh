#!/usr/bin/env bash
# Runs inside `unshare --mount --net` (a private network namespace with only `lo`, and a private /run), so the
# D-Bus and avahi-daemon started here are invisible to the rest of the machine and nothing leaves it.
#
#   unshare --mount --net scripts/testing/daemon-recovery.sh BIN_DIR
#
# Its waits are generous (a loaded 2-core machine starts a process slowly); a run that passes takes about 15 s.
#
# Story: a peer of the library starts with no daemon (it must say so and keep retrying), the daemons start (it must
# recover by itself), a second peer finds it; avahi-daemon restarts (it must re-advertise by itself), a third peer finds
# it. The first peer is chirp-probe (Examples/Probe), a plain library peer: the command-line tools and examples exit 69
# at once without a daemon (Docs/CLI.md), while the library itself keeps retrying, which is what this checks. The
# visitors are chat peers (the daemon runs by then).
# Prints "namespace net:[INODE]" first (its private network namespace, where the test looks for leftovers), then
# "PASS" on success, or "FAIL: why" and the first peer's output.
#
# SIGTERM (or SIGINT, SIGHUP) ends it at any point through its cleanup, which stops every process it started: a test
# ends it that way on every path, and waits for it. (SIGKILL would leave its dbus-daemon and avahi-daemon running.)
set -euo pipefail
BIN=${1:?usage: daemon-recovery.sh BIN_DIR}
WORK=$(mktemp -d)
TYPE="recov$RANDOM"
FIRST_OUT="$WORK/first.out"

ip link set lo up
mount -t tmpfs tmpfs /run
mkdir -p /run/dbus /run/avahi-daemon
cat > "$WORK/avahi.conf" <<CONF
[server]
use-ipv4=yes
use-ipv6=no
allow-interfaces=lo
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
CONF

cleanup() {
    trap '' TERM INT HUP  # a second signal does not cut the cleanup short
    kill "${FIRST_PID:-}" 2>/dev/null || true
    rm -rf "$WORK"
    avahi-daemon -k 2>/dev/null || true
    [ -f /run/dbus/pid ] && kill "$(cat /run/dbus/pid)" 2>/dev/null || true
    # Every other process in this private network namespace was started by this script. `avahi-daemon -k` goes by
    # the pid file, which a daemon stopped and started again in quick succession can leave pointing at the old one.
    # (Only when the namespace is the private one `unshare --net` made: nothing but `lo` in it.)
    [ "$(ip -o link show | wc -l)" = 1 ] || return 0
    local ours pid
    ours=$(readlink /proc/self/ns/net)
    # TERM first, then KILL: a dbus-daemon started here ignored TERM and outlived the test.
    for signal in TERM KILL; do
        for pid in $(ls /proc | grep -E '^[0-9]+$'); do
            [ "$pid" = $$ ] && continue
            [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" = "$ours" ] && kill -s "$signal" "$pid" 2>/dev/null
        done
        [ "$signal" = TERM ] && sleep 0.3
    done
    return 0
}
trap cleanup EXIT
# A signal ends the script through its EXIT trap (bash runs the trap after the command in progress, at most a short
# sleep or grep here; `wait` returns at once).
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP
echo "namespace $(readlink /proc/$$/ns/net)"

fail() {
    echo "FAIL: $*"
    echo "--- first peer's output:"
    cat "$FIRST_OUT" || true
    exit 1
}

# wait_for FILE REGEX SECONDS: polls FILE until a line matches.
wait_for() {
    local deadline=$((SECONDS + $3))
    until grep -qE "$2" "$1" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.1
    done
}

# wait_for_more FILE REGEX COUNT SECONDS: polls FILE until more than COUNT lines match (a line printed before does not
# count again).
wait_for_more() {
    local deadline=$((SECONDS + $4))
    until [ "$(grep -cE "$2" "$1" 2>/dev/null)" -gt "$3" ]; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.1
    done
}

start_avahi() {
    avahi-daemon -D --no-drop-root --no-chroot --no-rlimits --no-proc-title -f "$WORK/avahi.conf" </dev/null >/dev/null 2>&1
}

# A peer that talks to the first one and exits: prints "* connected to first" when it finds it.
visit() {
    local name=$1
    mkfifo "$WORK/$name.in"
    timeout 60 "$BIN/chat" --name "$name" --service "$TYPE" --loopback < "$WORK/$name.in" > "$WORK/$name.out" 2>&1 &
    local pid=$!
    exec 5> "$WORK/$name.in"   # keeps its stdin open until we close it
    wait_for "$WORK/$name.out" '^\* connected to first$' 45 || {
        kill $pid 2>/dev/null || true
        echo "--- $name's output:"
        cat "$WORK/$name.out" || true
        fail "$name did not find the first peer"
    }
    exec 5>&-
    kill $pid 2>/dev/null || true
    wait $pid 2>/dev/null || true
}

# The first peer's stdin is a FIFO held open by this script (fd 4): no helper process outlives the script.
mkfifo "$WORK/first.in"
"$BIN/chirp-probe" --name first --service "$TYPE" --log-level info < "$WORK/first.in" > "$FIRST_OUT" 2>&1 &
FIRST_PID=$!
exec 4> "$WORK/first.in"

wait_for "$FIRST_OUT" 'no DNS-SD daemon answered' 30 || fail "no clear message without a daemon"
grep -q 'WARNING' "$FIRST_OUT" && fail "the compat layer's warning banner reached the user"

dbus-daemon --system --fork </dev/null >/dev/null 2>&1
start_avahi
wait_for "$FIRST_OUT" 'DNS-SD daemon answers again' 30 || fail "did not recover once the daemon started"
visit second

before=$(grep -cE 'failed: no DNS-SD daemon answered' "$FIRST_OUT")
recovered=$(grep -cE 'DNS-SD daemon answers again' "$FIRST_OUT")
avahi-daemon -k
wait_for_more "$FIRST_OUT" 'failed: no DNS-SD daemon answered' "$before" 30 || fail "did not notice the daemon going away"
start_avahi
# The third visitor is a command-line tool: it exits 69 if it starts before the new daemon answers, so it starts once
# the first peer has seen the daemon back (a line printed after the restart, not the one of the first recovery).
wait_for_more "$FIRST_OUT" 'DNS-SD daemon answers again' "$recovered" 30 || fail "did not recover once the daemon restarted"
visit third

echo PASS
