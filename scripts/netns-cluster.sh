#!/bin/sh
# netns-cluster.sh - a cluster of N "hosts" on this machine, for multi-host
# tests: each host is a network namespace (its own address on a private
# bridge, loopback up), a UTS namespace (its own hostname) and a mount
# namespace with its own tmpfs /dev/shm, so no shared memory can cross hosts.
#
#   netns-cluster.sh up N      create hosts 1..N (root; replaces an old cluster)
#   netns-cluster.sh down      remove them (idempotent)
#   netns-cluster.sh exec I CMD...   run CMD on host I
#   netns-cluster.sh addr I    host I's address
#   netns-cluster.sh status    the hosts that exist
#   netns-cluster.sh launch-args [RANKS]   mpirun options for these hosts
#
# Hosts are named tcah1..tcahN and live on 10.213.77.0/24 (the bridge in the
# root namespace is .254): a range of the project's own, so traffic stays
# between these namespaces.  mpirun reaches them through netns-rsh (its
# plm_rsh_agent), which maps an address to its host.  Override the prefix or
# the subnet with TCA_NETNS_PREFIX / TCA_NETNS_NET (first three octets).
set -eu

prefix=${TCA_NETNS_PREFIX:-tcah}
net=${TCA_NETNS_NET:-10.213.77}
bridge=${prefix}br0
state=/run/${prefix}-cluster   # bind-mounted namespace handles, one pair per host
shm_size=${TCA_NETNS_SHM_SIZE:-512m}

die() { echo "netns-cluster: $*" >&2; exit 1; }

can_make() {
    [ "$(id -u)" = 0 ] || { echo "not root"; return 1; }
    command -v ip >/dev/null || { echo "no ip(8)"; return 1; }
    command -v unshare >/dev/null && command -v nsenter >/dev/null || { echo "no unshare/nsenter"; return 1; }
    ip netns add "${prefix}probe" 2>/dev/null || { echo "ip netns add is refused here"; return 1; }
    ip netns del "${prefix}probe"
    unshare -m -u true 2>/dev/null || { echo "unshare -m -u is refused here"; return 1; }
    return 0
}

down() {
    # Whatever still runs on a host (a rank a timeout left behind) goes with it.
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
        case $ns in "$prefix"[0-9]*) pids=$(ip netns pids "$ns" 2>/dev/null); [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true ;; esac
    done
    for f in "$state"/*.mnt; do
        [ -e "$f" ] || continue
        umount "$f" 2>/dev/null || true
    done
    for f in "$state"/*.uts; do
        [ -e "$f" ] || continue
        umount "$f" 2>/dev/null || true
    done
    if mountpoint -q "$state" 2>/dev/null; then umount "$state" || true; fi
    rm -rf "$state"
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
        case $ns in "$prefix"[0-9]*) ip netns del "$ns" 2>/dev/null || true ;; esac
    done
    ip link del "$bridge" 2>/dev/null || true
}

up() {
    n=$1
    case $n in ''|*[!0-9]*) die "up needs a host count" ;; esac
    [ "$n" -ge 1 ] && [ "$n" -le 32 ] || die "1..32 hosts"
    why=$(can_make) || die "cannot make namespaces: $why"
    down
    ip link add "$bridge" type bridge
    ip addr add "$net.254/24" dev "$bridge"
    ip link set "$bridge" up
    mkdir -p "$state"
    # Namespace handles are bind mounts of files; they must sit on a private
    # mount so that the hosts' own mount namespaces do not hold copies of them.
    mount --bind "$state" "$state"
    mount --make-private "$state"
    i=1
    while [ "$i" -le "$n" ]; do
        h=$prefix$i
        ip netns add "$h"
        ip link del "${h}v" 2>/dev/null || true  # left by a cluster taken down for fewer hosts than it had
        ip link add "${h}v" type veth peer name "${h}p"
        ip link set "${h}p" netns "$h"
        ip link set "${h}v" master "$bridge" up
        ip -n "$h" link set lo up
        ip -n "$h" link set "${h}p" name eth0
        ip -n "$h" addr add "$net.$i/24" dev eth0
        ip -n "$h" link set eth0 up
        touch "$state/$h.mnt" "$state/$h.uts"
        # A persistent mount + UTS namespace per host: its own hostname and
        # an empty tmpfs on /dev/shm (mounts made inside stay inside).
        # (nsenter, not `ip netns exec`: that one makes a mount namespace of
        # its own, where the handles' bind mounts would stay.)
        nsenter --net="/run/netns/$h" unshare --mount="$state/$h.mnt" --uts="$state/$h.uts" --propagation private \
            sh -c "mount -t tmpfs -o size=$shm_size,mode=1777 ${prefix}shm /dev/shm && hostname $h"
        i=$((i + 1))
    done
    echo "netns-cluster: $n hosts up ($net.1 .. $net.$n, bridge $bridge)"
}

# mpirun's options for a job on these hosts: the daemons' and btl tcp's
# traffic only on the cluster subnet, and placement.  Every host's daemon
# believes it has the machine to itself: left to bind, it binds its first rank
# to core 0, so the ranks of all hosts share one core and each message waits
# for the scheduler's tick (4 ms on a 2-core VM) - hence --bind-to none.  And
# no host is oversubscribed in its own eyes, so a waiting rank spins out its
# time slice before the rank it waits for (on another host, same cores) runs
# (an 8 B broadcast at np 4 on 2 cores: 440 us instead of 19) - hence
# mpi_yield_when_idle, as --oversubscribe sets it on one host, where RANKS
# (all hosts together) outnumber the cores; without RANKS always (the tests,
# which also run beside a load).
launch_args() {
    agent=$(cd "$(dirname "$0")" && pwd)/netns-rsh
    printf '%s' "--mca plm_rsh_agent $agent --mca btl_tcp_if_include $net.0/24"
    # The daemons' own traffic: 4.1's ORTE is told the subnet; 5.0's PRRTE
    # daemons reject it ("did not find interface matching this subnet") yet
    # need nothing: a host has no interface but its eth0 on the subnet.
    case $(mpirun --version 2>/dev/null | head -1) in
    *" 4."*) printf ' %s' "--mca oob_tcp_if_include $net.0/24" ;;
    esac
    printf ' %s' "--bind-to none"
    if [ -z "${1:-}" ] || [ "$1" -gt "$(nproc)" ]; then printf ' %s' "--mca mpi_yield_when_idle 1"; fi
    echo
}

host_exec() {
    i=$1; shift
    h=$prefix$i
    [ -e "$state/$h.mnt" ] || die "no host $i (run: $0 up N)"
    exec nsenter --net="/run/netns/$h" --mount="$state/$h.mnt" --uts="$state/$h.uts" "$@"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    up) up "${1:-}" ;;
    down) down ;;
    exec) [ $# -ge 2 ] || die "exec I CMD..."; host_exec "$@" ;;
    addr) echo "$net.${1:?host}" ;;
    can) why=$(can_make) && echo yes || { echo "$why"; exit 1; } ;;
    status) ls "$state" 2>/dev/null | sed -n 's/\.mnt$//p' ;;
    launch-args) launch_args "${1:-}" ;;
    *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac
