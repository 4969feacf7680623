#!/usr/bin/env bash
# Chirp's multi-host harness: N "hosts" on one machine, each a network namespace with its own
# dbus-daemon and avahi-daemon, joined by a bridge that lives in a namespace of its own.
# Nothing leaves the machine: no interface is added to (or used in) the root network namespace,
# and every avahi-daemon is confined to its host's veth (allow-interfaces=).
#
# Usage (as root):
#   netns.sh available [impair]   exit 0 if the harness can run here, else ONE line with the reason, exit 1.
#                                 Installs nftables (apt-get) when it is missing; with `impair`, also fails (one line)
#                                 when the impairments below cannot run (no nft, or the kernel has no nf_tables)
#   netns.sh up N [--subnets 2] [--ip ipv4|dual|link-local|global] [--links 2]
#                                 build hosts h1..hN (fails if any of them already exists). With --subnets 2: two
#                                 subnets on two bridges, odd hosts on the first and even hosts on the second,
#                                 joined by a router host ("router": IP forwarding, and an avahi-daemon with
#                                 enable-reflector=yes on both links); every host routes through it.
#                                 --ip (one subnet only) picks the addresses of eth0: ipv4 (the default: IPv4 only,
#                                 avahi use-ipv6=no), dual (IPv4 + IPv6 link-local + global fd00:213:X::K/64, avahi
#                                 on both), link-local (IPv6 link-local only: no IPv4 address on eth0, avahi
#                                 use-ipv4=no) or global (IPv6 fd00:213:X::K/64 + link-local, no IPv4). IPv6 hosts
#                                 skip duplicate address detection (accept_dad=0, so no address stays "tentative")
#                                 and avahi starts once eth0's IPv6 addresses are usable.
#                                 --links 2 (one subnet, IPv4 only): a second link between the same hosts, eth1 on a
#                                 bridge of its own (br1) with a subnet of its own (10.215.X.(10+K)/24); each
#                                 avahi-daemon works on both (allow-interfaces=eth0,eth1)
#   netns.sh exec HOST CMD [ARG...]
#                                 run CMD on HOST (its network + mount namespace) with DBUS_SYSTEM_BUS_ADDRESS
#                                 set to HOST's bus and AVAHI_COMPAT_NOWARN=1. The script exec's itself into
#                                 nsenter, then env, then CMD: the PID the caller started IS CMD's PID, so
#                                 signals sent to it reach CMD; stdio and the exit status pass through.
#   netns.sh link-down HOST       cut HOST's link (its bridge port goes down; HOST's veth sees no carrier)
#   netns.sh link-up HOST         restore it
#   netns.sh ifdown HOST IF       take HOST's interface IF (eth0, eth1) down inside HOST (its addresses stay, its
#                                 routes go; HOST's avahi-daemon sees the interface go), as a cable pulled or Wi-Fi off
#   netns.sh ifup HOST IF         bring it up again
#   netns.sh readdress HOST [IF [ADDRESS]]
#                                 give HOST's IF (default eth0) a new IPv4 address while everything runs, as DHCP after
#                                 a reconnect: every IPv4 address of IF is removed, then ADDRESS/24 is added (default:
#                                 .(100+K) of IF's subnet, or .(10+K) again when that is the current one). Prints it
#   netns.sh restart-avahi HOST   kill HOST's avahi-daemon, start it again, wait until it answers
#   netns.sh address HOST [IF]    print HOST's addresses on eth0 (or IF), the one to dial first on the first line: its IPv4
#                                 address, then its global IPv6 one, then its link-local one as fe80::...%eth0
#   netns.sh hosts                print the names of the hosts that exist (one a line)
#   netns.sh loss HOST IN [OUT]   drop IN% of the packets arriving at HOST and OUT% (default 0) of those it sends, at
#                                 random (nftables `numgen random mod 100 < N drop`, in input and output hook chains
#                                 of HOST's namespace, not on lo). Replaces HOST's previous loss; `loss HOST 0` removes
#                                 it. "20% each way" between two hosts: `loss h1 20` and `loss h2 20`
#   netns.sh dropped HOST         print "IN OUT": how many packets HOST's loss rules have dropped (0 0 without rules)
#   netns.sh rate HOST RATE       limit HOST's link to RATE (tc units: 10mbit, 512kbit) each way: netem `rate` where
#                                 the kernel has netem, else tbf (burst 64 KiB, queue 200 ms) on HOST's eth0 and
#                                 its bridge port; `rate HOST off` removes it
#   netns.sh freeze HOST          SIGSTOP every process of HOST (its daemons and whatever `exec` started there): a
#                                 suspended laptop, except that HOST's kernel side (TCP, ARP) still answers
#   netns.sh thaw HOST            SIGCONT them
#   netns.sh down                 remove everything (processes in the hosts, namespaces, bridge, runtime folder),
#                                 also after a partial `up`
#
# Environment:
#   NETNS_PREFIX (default chirp; letters, digits and '-', at most 12 characters) prefixes every namespace
#   (${NETNS_PREFIX}-hK, ${NETNS_PREFIX}-br), avahi host name and the runtime folder /run/chirp-netns/${NETNS_PREFIX}.
#   Two runs with different prefixes never share anything. Interfaces live only inside those namespaces
#   (br0 in ${NETNS_PREFIX}-br with ports hK; eth0 in each host), so their names cannot collide either.
#
# Layout of host hK: address 10.213.X.(10+K)/24 on eth0, where X is 1 for the default prefix and derived from
# the prefix otherwise; with --subnets 2, even hosts are on 10.214.X.0/24 (bridge br1), and the router is .1 on
# both subnets. Its mount namespace (bound to /run/chirp-netns/PREFIX/hK/mntns) has private tmpfs
# mounts on /run/dbus and /run/avahi-daemon: there its dbus-daemon keeps socket + pid, avahi-daemon its pid.
set -euo pipefail

PATH="$PATH:/usr/sbin:/sbin"
PREFIX="${NETNS_PREFIX:-chirp}"
RUN_BASE=/run/chirp-netns
RUN_DIR="$RUN_BASE/$PREFIX"
BR_NS="$PREFIX-br"
BUS_ADDRESS="unix:path=/run/dbus/system_bus_socket"
WAIT_SECONDS=20

die() { printf 'netns.sh: %s\n' "$*" >&2; exit 1; }
log() { [[ -n ${NETNS_QUIET:-} ]] || printf 'netns.sh: %s\n' "$*" >&2; }

[[ $PREFIX =~ ^[a-z0-9][a-z0-9-]{0,11}$ ]] || die "NETNS_PREFIX '$PREFIX' must be 1-12 of [a-z0-9-], starting with a letter or digit"

# Third octet of the subnet: 1 for the default prefix, else from a checksum of the prefix (2..250).
subnet_octet() {
    if [[ $PREFIX == chirp ]]; then echo 1; return; fi
    local sum
    sum=$(printf '%s' "$PREFIX" | cksum | cut -d' ' -f1)
    echo $((sum % 249 + 2))
}
SUBNET="10.213.$(subnet_octet)"
SUBNET_B="10.214.$(subnet_octet)"
SUBNET6="fd00:213:$(subnet_octet)::"
SUBNET_L2="10.215.$(subnet_octet)"

host_ns()   { echo "$PREFIX-$1"; }
host_dir()  { echo "$RUN_DIR/$1"; }
host_num()  { [[ $1 =~ ^h([1-9][0-9]*)$ ]] || die "bad host name '$1' (want h1, h2, ...)"; echo "${BASH_REMATCH[1]}"; }
subnet_count()  { cat "$RUN_DIR/subnets" 2>/dev/null || echo 1; }
subnet_prefix() { if [[ $1 == 1 ]]; then echo "$SUBNET_B"; else echo "$SUBNET"; fi; }
host_subnet()   { echo $(( ($(host_num "$1") - 1) % $(subnet_count) )); }
host_addr() { echo "$(subnet_prefix "$(host_subnet "$1")").$((10 + $(host_num "$1")))"; }
host_addr6() { echo "$SUBNET6$(host_num "$1")"; }
ip_mode()    { cat "$RUN_DIR/ip" 2>/dev/null || echo ipv4; }
link_count() { cat "$RUN_DIR/links" 2>/dev/null || echo 1; }
# The subnet of interface $1 (eth0: the host's subnet; eth1: the second link's) for host $2.
iface_subnet() { if [[ $1 == eth1 ]]; then echo "$SUBNET_L2"; else subnet_prefix "$(host_subnet "$2")"; fi; }

host_exists() {
    local h=$1
    host_num "$h" >/dev/null
    [[ -e /run/netns/$(host_ns "$h") && -e $(host_dir "$h")/mntns ]] || die "host $h does not exist (NETNS_PREFIX=$PREFIX; run 'netns.sh up N' first)"
}

# Run "$@" in host $1's network + mount namespace with its bus (no exec).
in_host() {
    local h=$1; shift
    nsenter --mount="$(host_dir "$h")/mntns" --net="/run/netns/$(host_ns "$h")" --wd=/ -- \
        env DBUS_SYSTEM_BUS_ADDRESS="$BUS_ADDRESS" AVAHI_COMPAT_NOWARN=1 "$@"
}

# Like in_host, with stdin from /dev/null and every fd above 2 closed, so a daemon it forks keeps no pipe of ours.
in_host_detached() {
    (
        for fd in /proc/self/fd/*; do
            fd=${fd##*/}
            if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
        done
        in_host "$@" </dev/null
    )
}

# ------------------------------------------------------------------------------------------------ available
cmd_available() {
    local tool reason
    [[ $EUID -eq 0 ]] || { echo "netns harness unavailable: needs root"; return 1; }
    for tool in ip unshare nsenter avahi-daemon dbus-daemon dbus-send; do
        command -v "$tool" >/dev/null 2>&1 || { echo "netns harness unavailable: $tool not found"; return 1; }
    done
    ip netns list >/dev/null 2>&1 || { echo "netns harness unavailable: 'ip netns' does not work here"; return 1; }
    unshare --net --mount true >/dev/null 2>&1 || { echo "netns harness unavailable: cannot create network/mount namespaces (unshare --net --mount failed)"; return 1; }
    reason=$(impair_unavailable)
    if [[ ${1:-} == impair && -n $reason ]]; then echo "$reason"; return 1; fi
    return 0
}

# ------------------------------------------------------------------------------------------------ up
write_dbus_conf() {
    cat >"$1" <<'CONF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<!-- Written by Chirp's scripts/netns/netns.sh: the system bus of one harness host.
     It lives in the host's private mount namespace (tmpfs on /run/dbus). -->
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <pidfile>/run/dbus/pid</pidfile>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
CONF
}

write_avahi_conf() {
    local file=$1 h=$2 interfaces=${3:-eth0} reflect=${4:-no} v4=yes v6=no
    case $(ip_mode) in
        dual) v6=yes ;;
        link-local | global) v4=no v6=yes ;;
    esac
    cat >"$file" <<CONF
# Written by Chirp's scripts/netns/netns.sh for host $h of harness '$PREFIX'.
# avahi only uses this host's veths ($interfaces inside network namespace $(host_ns "$h")).
[server]
host-name=$PREFIX-$h
use-ipv4=$v4
use-ipv6=$v6
allow-interfaces=$interfaces
deny-interfaces=lo
disallow-other-stacks=no
enable-dbus=yes
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[wide-area]
enable-wide-area=no

[publish]
publish-hinfo=no
publish-workstation=no
publish-addresses=yes

[reflector]
enable-reflector=$reflect
reflect-ipv=no
CONF
}

dbus_answers() {
    in_host "$1" timeout 5 dbus-send --system --dest=org.freedesktop.DBus --type=method_call \
        --print-reply / org.freedesktop.DBus.ListNames >/dev/null 2>&1
}

# avahi answers on the bus and reports state 2 (AVAHI_SERVER_RUNNING: host name established).
avahi_answers() {
    in_host "$1" timeout 5 dbus-send --system --dest=org.freedesktop.Avahi --type=method_call \
        --print-reply / org.freedesktop.Avahi.Server.GetState 2>/dev/null | grep -q 'int32 2'
}

wait_for() {
    local what=$1 h=$2 deadline=$((SECONDS + WAIT_SECONDS))
    until "$what" "$h"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}

start_avahi() {
    local h=$1 dir
    dir=$(host_dir "$h")
    in_host "$h" rm -f /run/avahi-daemon/pid
    in_host_detached "$h" avahi-daemon -D --no-drop-root --no-chroot --no-rlimits --no-proc-title \
        -f "$dir/avahi-daemon.conf" >>"$dir/avahi.log" 2>&1 || die "$h: avahi-daemon failed to start (see $dir/avahi.log)"
    wait_for avahi_answers "$h" || die "$h: avahi-daemon does not answer after ${WAIT_SECONDS}s (see $dir/avahi.log)"
}

make_host() {
    local h=$1 ns dir subnet
    ns=$(host_ns "$h")
    dir=$(host_dir "$h")
    subnet=$(host_subnet "$h")
    mkdir -p "$dir"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add name eth0 netns "$ns" type veth peer name "$h" netns "$BR_NS"
    ip -n "$BR_NS" link set "$h" master "br$subnet"
    ip -n "$BR_NS" link set "$h" up
    local mode
    mode=$(ip_mode)
    if [[ $mode == ipv4 ]]; then
        ip -n "$ns" addr add "$(host_addr "$h")/24" dev eth0
    else
        # IPv6 on: no duplicate address detection (the harness picks unique addresses), so that no address is
        # "tentative" (unusable) for a second after the link comes up.
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.eth0.disable_ipv6=0 \
            net.ipv6.conf.eth0.accept_dad=0 net.ipv6.conf.default.accept_dad=0
        if [[ $mode == dual ]]; then ip -n "$ns" addr add "$(host_addr "$h")/24" dev eth0; fi
        if [[ $mode == dual || $mode == global ]]; then ip -n "$ns" addr add "$(host_addr6 "$h")/64" dev eth0; fi
    fi
    ip -n "$ns" link set eth0 up
    if (($(subnet_count) > 1)); then ip -n "$ns" route add default via "$(subnet_prefix "$subnet").1"; fi
    if [[ $mode != ipv4 ]]; then
        wait_for ipv6_ready "$h" || die "$h: eth0 has no usable IPv6 link-local address after ${WAIT_SECONDS}s"
    fi
    local interfaces=eth0
    if (($(link_count) > 1)); then
        # The second link: eth1 on br1, a subnet of its own.
        ip link add name eth1 netns "$ns" type veth peer name "${h}b" netns "$BR_NS"
        ip -n "$BR_NS" link set "${h}b" master br1
        ip -n "$BR_NS" link set "${h}b" up
        ip -n "$ns" addr add "$SUBNET_L2.$((10 + $(host_num "$h")))/24" dev eth1
        ip -n "$ns" link set eth1 up
        interfaces=eth0,eth1
    fi
    start_daemons "$h" "$interfaces" no
}

# eth0 of host $1 has a link-local IPv6 address and no address is still tentative.
ipv6_ready() {
    local out
    out=$(ip -n "$(host_ns "$1")" -6 addr show dev eth0 2>/dev/null) || return 1
    [[ $out == *"scope link"* && $out != *tentative* ]]
}

# The router between the two subnets: a host with a leg on each bridge, IP forwarding, and an avahi-daemon that
# reflects mDNS between its two links (enable-reflector=yes, an existing Avahi feature).
make_router() {
    local h=router ns dir i
    ns=$(host_ns "$h")
    dir=$(host_dir "$h")
    mkdir -p "$dir"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    for i in 0 1; do
        ip link add name "eth$i" netns "$ns" type veth peer name "r$i" netns "$BR_NS"
        ip -n "$BR_NS" link set "r$i" master "br$i"
        ip -n "$BR_NS" link set "r$i" up
        ip -n "$ns" addr add "$(subnet_prefix "$i").1/24" dev "eth$i"
        ip -n "$ns" link set "eth$i" up
    done
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
    start_daemons "$h" eth0,eth1 yes
}

# start_daemons HOST INTERFACES REFLECT: HOST's private mount namespace, its dbus-daemon and its avahi-daemon.
start_daemons() {
    local h=$1 dir
    dir=$(host_dir "$h")

    # A private mount namespace that outlives this command: bound to a file in the runtime folder.
    : >"$dir/mntns"
    # Inside it: no copies of the namespace files of other hosts or harnesses (they would keep those namespaces
    # alive until this one goes), and private tmpfs mounts for the daemons' runtime files.
    unshare --mount="$dir/mntns" --propagation private sh -c '
        awk '\''$2 ~ "^/run/(netns|chirp-netns)(/|$)" { print $2 }'\'' /proc/self/mounts | sort -r |
            while read -r m; do umount -l "$m" 2>/dev/null || true; done
        mkdir -p /run/dbus /run/avahi-daemon &&
        mount -t tmpfs -o mode=0755,size=4m chirp-netns /run/dbus &&
        mount -t tmpfs -o mode=0755,size=4m chirp-netns /run/avahi-daemon' ||
        die "$h: could not make its mount namespace"

    write_dbus_conf "$dir/dbus.conf"
    write_avahi_conf "$dir/avahi-daemon.conf" "$h" "$2" "$3"
    in_host_detached "$h" dbus-daemon --config-file="$dir/dbus.conf" --fork >>"$dir/dbus.log" 2>&1 ||
        die "$h: dbus-daemon failed to start (see $dir/dbus.log)"
    wait_for dbus_answers "$h" || die "$h: its dbus-daemon does not answer after ${WAIT_SECONDS}s"
    start_avahi "$h"
}

cmd_up() {
    local n=${1:-} subnets=1 mode=ipv4 links=1
    shift || true
    while (($#)); do
        case $1 in
            --subnets) subnets=${2:-}; shift 2 || shift ;;
            --ip) mode=${2:-}; shift 2 || shift ;;
            --links) links=${2:-}; shift 2 || shift ;;
            *) die "usage: netns.sh up N [--subnets 2] [--ip ipv4|dual|link-local|global] [--links 2] (unknown option '$1')" ;;
        esac
    done
    [[ $n =~ ^[1-9][0-9]*$ ]] && ((n <= 200)) || die "usage: netns.sh up N [--subnets 2] (N: 1..200)"
    [[ $subnets == 1 || $subnets == 2 ]] || die "usage: netns.sh up N [--subnets 2] (1 or 2 subnets)"
    [[ $mode =~ ^(ipv4|dual|link-local|global)$ ]] || die "usage: netns.sh up N [--ip ipv4|dual|link-local|global]"
    [[ $mode == ipv4 || $subnets == 1 ]] || die "--ip $mode works on one subnet only"
    [[ $links == 1 || $links == 2 ]] || die "usage: netns.sh up N --links 2 (1 or 2 links)"
    [[ $links == 1 || ($subnets == 1 && $mode == ipv4) ]] || die "--links 2 works on one IPv4 subnet only"
    local reason
    reason=$(cmd_available) || die "$reason"
    [[ ! -e /run/netns/$BR_NS && ! -e $RUN_DIR ]] ||
        die "harness '$PREFIX' already exists (/run/netns/$BR_NS or $RUN_DIR); run 'NETNS_PREFIX=$PREFIX netns.sh down' first"

    # The runtime folder is a private bind mount of itself: unshare --mount=FILE needs a parent mount
    # whose propagation is private.
    mkdir -p "$RUN_DIR"
    mount --bind "$RUN_DIR" "$RUN_DIR"
    mount --make-private "$RUN_DIR"

    ip netns add "$BR_NS"
    ip -n "$BR_NS" link set lo up
    echo "$subnets" >"$RUN_DIR/subnets"
    echo "$mode" >"$RUN_DIR/ip"
    echo "$links" >"$RUN_DIR/links"
    local b
    for ((b = 0; b < subnets || b < links; b++)); do
        ip -n "$BR_NS" link add "br$b" type bridge stp_state 0 forward_delay 0 mcast_snooping 0
        ip -n "$BR_NS" link set "br$b" up
    done
    if ((subnets > 1)); then
        make_router
        log "router up: $SUBNET.1 and $SUBNET_B.1 (namespace $(host_ns router), avahi reflector on)"
    fi

    local k
    for ((k = 1; k <= n; k++)); do
        make_host "h$k"
        log "h$k up: $(cmd_address "h$k" | paste -sd' ') (namespace $(host_ns "h$k"), avahi host name $PREFIX-h$k)"
    done
}

# ------------------------------------------------------------------------------------------------ exec
cmd_exec() {
    local h=${1:-}
    [[ $# -ge 2 ]] || die "usage: netns.sh exec HOST CMD [ARGS...]"
    shift
    host_exists "$h"
    exec nsenter --mount="$(host_dir "$h")/mntns" --net="/run/netns/$(host_ns "$h")" --wd="$PWD" -- \
        env DBUS_SYSTEM_BUS_ADDRESS="$BUS_ADDRESS" AVAHI_COMPAT_NOWARN=1 "$@"
}

# ------------------------------------------------------------------------------------------------ faults
cmd_link() {
    local state=$1 h=${2:-}
    [[ -n $h ]] || die "usage: netns.sh link-$state HOST"
    host_exists "$h"
    ip -n "$BR_NS" link set "$h" "$state"
}

cmd_restart_avahi() {
    local h=${1:-}
    [[ -n $h ]] || die "usage: netns.sh restart-avahi HOST"
    host_exists "$h"
    local pid
    pid=$(in_host "$h" cat /run/avahi-daemon/pid 2>/dev/null || true)
    if [[ -n $pid ]]; then
        kill "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + WAIT_SECONDS))
        while kill -0 "$pid" 2>/dev/null; do
            ((SECONDS < deadline)) || { kill -KILL "$pid" 2>/dev/null || true; break; }
            sleep 0.05
        done
    fi
    start_avahi "$h"
    log "$h: avahi-daemon restarted (pid $(in_host "$h" cat /run/avahi-daemon/pid 2>/dev/null || echo '?'))"
}

cmd_address() {
    local h=${1:-} dev=${2:-eth0}
    [[ -n $h ]] || die "usage: netns.sh address HOST [IF]"
    host_num "$h" >/dev/null
    local mode
    mode=$(ip_mode)
    if [[ $mode == ipv4 ]]; then
        # What the interface has now (readdress changes it), else what `up` gave it.
        local current=""
        if [[ -e /run/netns/$(host_ns "$h") ]]; then current=$(current_ipv4 "$h" "$dev"); fi
        if [[ -n $current ]]; then echo "$current"; elif [[ $dev == eth0 ]]; then host_addr "$h"; else die "$h has no IPv4 address on $dev"; fi
        return
    fi
    host_exists "$h"
    if [[ $mode == dual ]]; then host_addr "$h"; fi
    if [[ $mode == dual || $mode == global ]]; then host_addr6 "$h"; fi
    local linklocal
    linklocal=$(ip -n "$(host_ns "$h")" -6 -o addr show dev eth0 scope link | awk '{ sub("/.*", "", $4); print $4; exit }')
    [[ -n $linklocal ]] || die "$h has no link-local IPv6 address"
    echo "$linklocal%eth0"
}

# The IPv4 address on interface $2 of host $1, without its prefix length (empty when none).
current_ipv4() {
    ip -n "$(host_ns "$1")" -4 -o addr show dev "$2" 2>/dev/null | awk '{ sub("/.*", "", $4); print $4; exit }'
}

cmd_ifstate() {
    local state=$1 h=${2:-} dev=${3:-}
    [[ -n $h && $dev =~ ^eth[0-9]$ ]] || die "usage: netns.sh if$state HOST IF (eth0, eth1)"
    host_exists "$h"
    ip -n "$(host_ns "$h")" link set "$dev" "$state"
    log "$h: $dev $state"
}

cmd_readdress() {
    local h=${1:-} dev=${2:-eth0} address=${3:-}
    [[ -n $h && $dev =~ ^eth[0-9]$ ]] || die "usage: netns.sh readdress HOST [IF [ADDRESS]]"
    host_exists "$h"
    [[ $(ip_mode) == ipv4 ]] || die "readdress works on IPv4 hosts only"
    local ns old subnet k
    ns=$(host_ns "$h")
    old=$(current_ipv4 "$h" "$dev")
    subnet=$(iface_subnet "$dev" "$h")
    k=$(host_num "$h")
    if [[ -z $address ]]; then
        address="$subnet.$((100 + k))"
        [[ $old != "$address" ]] || address="$subnet.$((10 + k))"
    fi
    [[ $address =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "bad IPv4 address '$address'"
    ip -n "$ns" -4 addr flush dev "$dev"
    ip -n "$ns" addr add "$address/24" dev "$dev"
    if (($(subnet_count) > 1)) && [[ $dev == eth0 ]]; then
        ip -n "$ns" route replace default via "$(subnet_prefix "$(host_subnet "$h")").1"
    fi
    log "$h: $dev ${old:-(none)} -> $address"
    echo "$address"
}

cmd_hosts() {
    local f
    for f in /run/netns/"$PREFIX"-h*; do
        [[ -e $f ]] || continue
        f=${f##*/}
        echo "${f#"$PREFIX"-}"
    done | sort -V
}

# ------------------------------------------------------------------------------------------------ impairments
LOSS_TABLE=chirp_loss

# Installs nftables when nft is missing, the way scripts/avahi-up.sh installs its packages: apt-get install, and
# apt-get update only when that fails first. Never starts a service (policy-rc.d). Quiet unless it installs.
ensure_nft() {
    command -v nft >/dev/null 2>&1 && return 0
    [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null 2>&1 || return 1
    log "installing nftables (apt-get)"
    local policy=/usr/sbin/policy-rc.d made_policy="" status=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=1
    fi
    local install=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y nftables)
    "${install[@]}" >/dev/null 2>&1 ||
        { apt-get -o DPkg::Lock::Timeout=300 update >/dev/null 2>&1 && "${install[@]}" >/dev/null 2>&1; } ||
        status=$?
    [[ -z $made_policy ]] || rm -f "$policy"
    ((status == 0)) && command -v nft >/dev/null 2>&1
}

# Why impairments cannot run here (one line), or nothing.
impair_unavailable() {
    ensure_nft || { echo "netns impairments unavailable: nft not found and apt-get could not install nftables"; return; }
    unshare --net nft add table inet probe >/dev/null 2>&1 ||
        echo "netns impairments unavailable: the kernel refuses nftables tables (no nf_tables?)"
}

percent() { [[ $1 =~ ^[0-9]+$ ]] && (($1 <= 100)) || die "bad percentage '$1' (want 0..100)"; }

cmd_loss() {
    local h=${1:-} in=${2:-} out=${3:-0}
    [[ -n $h && -n $in ]] || die "usage: netns.sh loss HOST IN% [OUT%]"
    percent "$in"
    percent "$out"
    host_exists "$h"
    command -v nft >/dev/null 2>&1 || ensure_nft || die "loss needs nft (nftables), which could not be installed"
    local ns
    ns=$(host_ns "$h")
    ip netns exec "$ns" nft delete table inet "$LOSS_TABLE" 2>/dev/null || true
    ((in > 0 || out > 0)) || { log "$h: no loss"; return 0; }
    # Both chains always exist (with "< 0" when a direction has no loss), so `dropped` reads two counters.
    ip netns exec "$ns" nft -f - <<NFT
table inet $LOSS_TABLE {
    chain input {
        type filter hook input priority 0; policy accept;
        iifname != "lo" numgen random mod 100 < $in counter drop
    }
    chain output {
        type filter hook output priority 0; policy accept;
        oifname != "lo" numgen random mod 100 < $out counter drop
    }
}
NFT
    log "$h: dropping $in% of incoming and $out% of outgoing packets"
}

cmd_dropped() {
    local h=${1:-} ns chain count counts=()
    [[ -n $h ]] || die "usage: netns.sh dropped HOST"
    host_exists "$h"
    ns=$(host_ns "$h")
    for chain in input output; do
        count=$(ip netns exec "$ns" nft list chain inet "$LOSS_TABLE" "$chain" 2>/dev/null |
            sed -n 's/.*counter packets \([0-9]*\) .*/\1/p' | head -n 1)
        counts+=("${count:-0}")
    done
    echo "${counts[0]} ${counts[1]}"
}

# The qdisc behind `rate`: netem where the kernel has it (checked once, in a throwaway namespace), else tbf.
rate_qdisc() {
    if unshare --net sh -c 'ip link add d0 type dummy && tc qdisc add dev d0 root netem rate 1mbit' >/dev/null 2>&1; then
        echo "netem rate $1"
    else
        echo "tbf rate $1 burst 64kb latency 200ms"
    fi
}

cmd_rate() {
    local h=${1:-} rate=${2:-}
    [[ -n $h && -n $rate ]] || die "usage: netns.sh rate HOST RATE|off"
    host_exists "$h"
    local ns
    ns=$(host_ns "$h")
    # The host's sending side is its eth0; its receiving side is the bridge's port towards it.
    tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
    tc -n "$BR_NS" qdisc del dev "$h" root 2>/dev/null || true
    [[ $rate != off ]] || { log "$h: no rate limit"; return 0; }
    [[ $rate =~ ^[0-9]+(\.[0-9]+)?([kmg]?(bit|bps))$ ]] || die "bad rate '$rate' (want e.g. 10mbit, 512kbit)"
    local qdisc
    read -r -a qdisc <<<"$(rate_qdisc "$rate")"
    tc -n "$ns" qdisc add dev eth0 root "${qdisc[@]}"
    tc -n "$BR_NS" qdisc add dev "$h" root "${qdisc[@]}"
    log "$h: link limited to $rate each way (${qdisc[0]})"
}

cmd_freeze() {
    local signal=$1 h=${2:-} pids
    [[ -n $h ]] || die "usage: netns.sh freeze|thaw HOST"
    host_exists "$h"
    pids=$(ip netns pids "$(host_ns "$h")" 2>/dev/null || true)
    [[ -z $pids ]] || kill "-$signal" $pids 2>/dev/null || true
    log "$h: SIG$signal sent to $(echo $pids | wc -w) processes"
}

# ------------------------------------------------------------------------------------------------ down
kill_ns_processes() {
    local ns=$1 pids i
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -n $pids ]] || return 0
    kill $pids 2>/dev/null || true
    for ((i = 0; i < 30; i++)); do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [[ -n $pids ]] || return 0
        sleep 0.1
    done
    kill -KILL $pids 2>/dev/null || true
}

cmd_down() {
    local f ns h
    for f in /run/netns/"$PREFIX"-h* /run/netns/"$PREFIX"-router; do
        [[ -e $f ]] || continue
        ns=${f##*/}
        kill_ns_processes "$ns"
    done
    for f in /run/netns/"$PREFIX"-h* /run/netns/"$PREFIX"-router; do
        [[ -e $f ]] || continue
        ns=${f##*/}
        h=${ns#"$PREFIX"-}
        ip netns del "$ns" 2>/dev/null || true
    done
    if [[ -d $RUN_DIR ]]; then
        for f in "$RUN_DIR"/h*/mntns "$RUN_DIR"/router/mntns; do
            [[ -e $f ]] || continue
            umount "$f" 2>/dev/null || umount -l "$f" 2>/dev/null || true
        done
    fi
    if [[ -e /run/netns/$BR_NS ]]; then
        kill_ns_processes "$BR_NS"
        ip netns del "$BR_NS" 2>/dev/null || true
    fi
    if [[ -d $RUN_DIR ]]; then
        while mountpoint -q "$RUN_DIR"; do umount "$RUN_DIR" 2>/dev/null || umount -l "$RUN_DIR" || break; done
        rm -rf "$RUN_DIR"
    fi
    rmdir "$RUN_BASE" 2>/dev/null || true
}

# ------------------------------------------------------------------------------------------------ main
command=${1:-}
shift || true
case $command in
    available)     cmd_available "$@" ;;
    up)            cmd_up "$@" ;;
    exec)          cmd_exec "$@" ;;
    link-down)     cmd_link down "$@" ;;
    link-up)       cmd_link up "$@" ;;
    ifdown)        cmd_ifstate down "$@" ;;
    ifup)          cmd_ifstate up "$@" ;;
    readdress)     cmd_readdress "$@" ;;
    restart-avahi) cmd_restart_avahi "$@" ;;
    address)       cmd_address "$@" ;;
    hosts)         cmd_hosts ;;
    loss)          cmd_loss "$@" ;;
    dropped)       cmd_dropped "$@" ;;
    rate)          cmd_rate "$@" ;;
    freeze)        cmd_freeze STOP "$@" ;;
    thaw)          cmd_freeze CONT "$@" ;;
    down)          cmd_down ;;
    *)             die "usage: netns.sh available [impair] | up N | exec HOST CMD [ARGS...] | link-down HOST | link-up HOST | restart-avahi HOST | ifdown HOST IF | ifup HOST IF | readdress HOST [IF [ADDRESS]] | address HOST [IF] | hosts | loss HOST IN [OUT] | dropped HOST | rate HOST RATE|off | freeze HOST | thaw HOST | down" ;;
esac
