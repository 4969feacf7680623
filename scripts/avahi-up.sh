#!/usr/bin/env bash
# Make sure DNS-SD (Avahi + its Bonjour compat library) works on this machine.
#
# Idempotent: run it as often as you like; when everything is already up it only
# checks and returns. What it does, each step only when needed:
#   1. installs libavahi-compat-libdnssd-dev, libavahi-client-dev, avahi-daemon, avahi-utils, dbus (apt-get)
#   2. starts a system D-Bus (dbus-daemon --system --fork), removing a stale pid file
#   3. starts avahi-daemon CONFINED TO LOOPBACK (allow-interfaces=lo) with a config
#      written to $CHIRP_RUN_DIR (default /run/chirp), never one from the repo.
# An avahi-daemon started by someone else is left alone.
#
# No mDNS packet may leave this machine: this script never starts avahi-daemon
# without allow-interfaces=lo.
set -euo pipefail

RUN_DIR="${CHIRP_RUN_DIR:-/run/chirp}"
AVAHI_CONF="$RUN_DIR/avahi-daemon.conf"
AVAHI_PID_FILE=/run/avahi-daemon/pid
DBUS_SOCKET=/run/dbus/system_bus_socket
DBUS_PID_FILE=/run/dbus/pid
DNS_SD_HEADER=/usr/include/avahi-compat-libdns_sd/dns_sd.h
AVAHI_CLIENT_HEADER=/usr/include/avahi-client/client.h
APT_PACKAGES=(libavahi-compat-libdnssd-dev libavahi-client-dev avahi-daemon avahi-utils dbus)
AVAHI_WAIT_SECONDS=10

say() { printf '==> %s\n' "$*"; }
die() { printf '==> ERROR: %s\n' "$*" >&2; exit 1; }

# Run a command as root: directly if we are root, else through sudo if there is one.
as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root to run '$*' (not root, and no sudo found). Run this script as root."
    fi
}

# Serialize concurrent runs (e.g. two `make` targets at once). The lock is on fd 9;
# daemons are started through detached(), so they do not inherit (and keep holding) it.
LOCK_FILE="${TMPDIR:-/tmp}/chirp-avahi-up.lock"
if command -v flock >/dev/null 2>&1 && { exec 9>>"$LOCK_FILE"; } 2>/dev/null; then
    flock -w 60 9 || die "another avahi-up.sh holds $LOCK_FILE for more than 60 s"
fi

# Run "$@" (as root) with stdin from /dev/null and every fd above 2 closed, so a
# daemon it forks keeps neither our lock nor a pipe of the caller (a CI log pipe
# held open by a daemon would make the caller wait for EOF forever).
detached() {
    (
        for fd in /proc/self/fd/*; do
            fd=${fd##*/}
            if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
        done
        as_root "$@" </dev/null
    )
}

# ---------------------------------------------------------------- 1. packages
ensure_packages() {
    local missing=()
    [[ -f $DNS_SD_HEADER ]]                     || missing+=("libavahi-compat-libdnssd-dev ($DNS_SD_HEADER)")
    [[ -f $AVAHI_CLIENT_HEADER ]]               || missing+=("libavahi-client-dev ($AVAHI_CLIENT_HEADER)")
    command -v avahi-daemon >/dev/null 2>&1 || [[ -x /usr/sbin/avahi-daemon ]] || missing+=(avahi-daemon)
    command -v dbus-daemon  >/dev/null 2>&1     || missing+=(dbus-daemon)
    command -v dbus-send    >/dev/null 2>&1     || missing+=(dbus-send)
    command -v avahi-browse >/dev/null 2>&1     || missing+=("avahi-browse (avahi-utils)")
    if [[ ${#missing[@]} -eq 0 ]]; then
        say "packages: ok"
        return
    fi
    say "packages: missing ${missing[*]}; installing ${APT_PACKAGES[*]}"
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install ${APT_PACKAGES[*]} by hand"
    # Keep package scripts from starting services (an avahi-daemon with the stock
    # config would use every interface): a policy-rc.d that denies, unless one exists.
    local policy=/usr/sbin/policy-rc.d made_policy="" status=0
    if [[ ! -e $policy ]]; then
        as_root sh -c "printf '#!/bin/sh\\nexit 101\\n' >$policy && chmod 755 $policy"
        made_policy=1
    fi
    { as_root apt-get update &&
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${APT_PACKAGES[@]}"; } || status=$?
    [[ -z $made_policy ]] || as_root rm -f "$policy"
    ((status == 0)) || die "packages: apt-get failed (exit $status)"
    say "packages: installed"
}

# avahi-daemon lives in /usr/sbin, which a non-root PATH may lack.
PATH="$PATH:/usr/sbin:/sbin"

# ---------------------------------------------------------------- 2. D-Bus
dbus_answers() {
    # Talks to the bus the clients will use (DBUS_SYSTEM_BUS_ADDRESS if set).
    timeout 5 dbus-send --system --dest=org.freedesktop.DBus --type=method_call \
        --print-reply / org.freedesktop.DBus.ListNames >/dev/null 2>&1
}

ensure_dbus() {
    if dbus_answers; then
        say "dbus: system bus answers"
        return
    fi
    if [[ -n ${DBUS_SYSTEM_BUS_ADDRESS:-} ]]; then
        die "dbus: no bus answers at DBUS_SYSTEM_BUS_ADDRESS=$DBUS_SYSTEM_BUS_ADDRESS; start that bus yourself (this script only starts the default one)"
    fi
    as_root mkdir -p /run/dbus
    if [[ -e $DBUS_PID_FILE ]]; then
        say "dbus: removing stale $DBUS_PID_FILE (pid $(cat "$DBUS_PID_FILE" 2>/dev/null || echo '?'))"
        as_root rm -f "$DBUS_PID_FILE"
    fi
    [[ -S $DBUS_SOCKET ]] && as_root rm -f "$DBUS_SOCKET"   # stale socket, nothing answered on it
    command -v dbus-uuidgen >/dev/null 2>&1 && as_root dbus-uuidgen --ensure
    detached dbus-daemon --system --fork
    local i
    for ((i = 0; i < 50; i++)); do
        dbus_answers && { say "dbus: started system bus ($DBUS_SOCKET)"; return; }
        sleep 0.1
    done
    die "dbus: started dbus-daemon --system, but the bus does not answer"
}

# ---------------------------------------------------------------- 3. avahi
# avahi-daemon --check only tests that the pid in its pid file exists. After an
# unclean death that pid may be a zombie or, in a later session, an unrelated
# process; both count as "not running" here.
avahi_running() {
    avahi-daemon --check >/dev/null 2>&1 || return 1
    local pid
    pid=$(avahi_pid)
    [[ -n $pid ]] || return 0   # --check knows better than we do
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == avahi-daemon ]] || return 1
    ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}

# The pid file names a process that is not a live avahi-daemon: remove it, or
# avahi-daemon would refuse to start for good.
remove_stale_avahi_pid_file() {
    if avahi-daemon --check >/dev/null 2>&1 && ! avahi_running; then
        say "avahi-daemon: removing stale $AVAHI_PID_FILE (pid $(avahi_pid) is not a live avahi-daemon)"
        as_root rm -f "$AVAHI_PID_FILE"
    fi
}

avahi_pid() { cat "$AVAHI_PID_FILE" 2>/dev/null || true; }

# True when the running avahi-daemon was started by this script (with our config).
avahi_is_ours() {
    local pid cmdline
    pid=$(avahi_pid)
    [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline")
    [[ $cmdline == *"$AVAHI_CONF"* ]]
}

avahi_on_bus() {
    timeout 5 dbus-send --system --dest=org.freedesktop.DBus --type=method_call \
        --print-reply / org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Avahi 2>/dev/null |
        grep -q 'boolean true'
}

# Interfaces other than lo on which some process joined the mDNS group 224.0.0.251.
mdns_interfaces_besides_lo() {
    [[ -r /proc/net/igmp ]] || return 0
    awk '/^[0-9]/ { dev = $2 } $1 == "FB0000E0" && dev != "lo" { print dev }' /proc/net/igmp | sort -u | tr '\n' ' ' | sed 's/ $//'
}

write_avahi_conf() {
    as_root mkdir -p "$RUN_DIR"
    local tmp
    tmp=$(mktemp)
    cat >"$tmp" <<'CONF'
# Written by Chirp's scripts/avahi-up.sh. Keeps every mDNS packet on this machine:
# avahi only uses the loopback interface.
[server]
use-ipv4=yes
use-ipv6=no
allow-interfaces=lo
disallow-other-stacks=no
enable-dbus=yes

[wide-area]
enable-wide-area=no

[publish]
publish-hinfo=no
publish-workstation=no

[reflector]
enable-reflector=no
CONF
    as_root install -m 0644 "$tmp" "$AVAHI_CONF"
    rm -f "$tmp"
    # Refuse to go on if the file somehow lacks the loopback confinement.
    grep -qx 'allow-interfaces=lo' "$AVAHI_CONF" || die "avahi: $AVAHI_CONF lacks allow-interfaces=lo; not starting"
}

start_avahi() {
    local out
    if out=$(detached avahi-daemon -D --no-drop-root --no-chroot --no-rlimits --no-proc-title -f "$AVAHI_CONF" 2>&1); then
        return 0
    fi
    if [[ $out == *"already running"* ]]; then
        # After an unclean death avahi-daemon first complains about its stale pid
        # file, removes it, and succeeds when run again.
        say "avahi-daemon: stale pid file from an earlier run (${out//$'\n'/ }); retrying once"
        out=$(detached avahi-daemon -D --no-drop-root --no-chroot --no-rlimits --no-proc-title -f "$AVAHI_CONF" 2>&1) && return 0
    fi
    printf '%s\n' "$out" >&2
    return 1
}

ensure_avahi() {
    if avahi_running; then
        if avahi_is_ours; then
            if avahi_on_bus; then
                say "avahi-daemon: running (pid $(avahi_pid), loopback only, config $AVAHI_CONF)"
                return
            fi
            # Our daemon lost its bus (e.g. dbus-daemon was restarted): restart it.
            say "avahi-daemon: ours (pid $(avahi_pid)) but not on the system bus; restarting it"
            as_root avahi-daemon -k >/dev/null 2>&1 || true
            local i
            for ((i = 0; i < 50; i++)); do avahi_running || break; sleep 0.1; done
        else
            say "avahi-daemon: already running (pid $(avahi_pid)), not started by this script; leaving it alone"
            avahi_on_bus || say "avahi-daemon: WARNING: it is not registered on the system bus (org.freedesktop.Avahi); DNS-SD calls will fail"
            local ifaces
            ifaces=$(mdns_interfaces_besides_lo)
            [[ -z $ifaces ]] || say "avahi-daemon: WARNING: mDNS group joined on $ifaces, not only lo: that daemon's packets leave this machine (stop it, then rerun this script)"
            return
        fi
    fi

    remove_stale_avahi_pid_file
    write_avahi_conf
    start_avahi || die "avahi-daemon: failed to start (config $AVAHI_CONF)"
    local deadline=$((SECONDS + AVAHI_WAIT_SECONDS))
    until avahi_running && avahi_on_bus; do
        ((SECONDS < deadline)) || die "avahi-daemon: started but not up after ${AVAHI_WAIT_SECONDS}s (avahi-daemon --check fails or it is not on the bus)"
        sleep 0.1
    done
    say "avahi-daemon: started on loopback only (pid $(avahi_pid), config $AVAHI_CONF)"
}

ensure_packages
ensure_dbus
ensure_avahi
