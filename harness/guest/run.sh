#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the guest, as root: wires the test topology, then runs the
# suites named on the command line, writing each one's TAP/KTAP output to
# $RESULTS/<suite>.tap and its exit status to $RESULTS/<suite>.rc.
#
#   run.sh RESULTS_DIR KSELFTEST_DIR suite...
#
# Suites: kunit, net-env (topology and ethtool check), devmem-bind
# (bad-input requests to bind-rx / bind-tx through YNL; needs KSRC, the
# kernel tree), devmem-tokens (what a careless or hostile receiver hands
# SO_DEVMEM_DONTNEED and recvmsg(MSG_SOCK_DEVMEM)), nic-hds (header split
# on and off, with traffic; the driver's, so the C igb fails it),
# nic-filters (which frames the receive filters let in: unicast,
# multicast, promiscuous modes), nic-rss (the RSS
# hash fields, ethtool rx-flow-hash; the receive queue each frame records,
# through xps_rxqs), nic-lifecycle (link down/up and driver
# rebind under traffic), nic-ethtool (interrupt moderation and flow
# control: ethtool -C and -A, the link the watchdog reports), faults (every allocation of bind-rx, bind-tx, queue
# restarts with a binding and ndo_open failing in turn, through fail-nth; the
# debug kernel's), races (teardown races around bindings: driver unbind vs
# kill -9 of the owner, rmmod with a TX binding held, socket close vs queue
# restart, binds vs ethtool -L/-G and link flips under traffic; the debug
# kernel's, whose checkers do the detecting), demo, bench-net (throughput:
# igb_rs vs igb), bench-rx (devmem receive: the receiver's CPU per KiB
# for devmem, copy and MSG_TRUNC, and the peer's, at MTU 1500 and 9000;
# then igb_rs against the C igb; bench-rx-standard, -jumbo and -drivers
# run one of its passes), bench-profile (where devmem receive's CPU goes,
# and igb_rs's against the C igb's: the receiving CPU's instructions by
# function, counted by QEMU, for each receive mode and each driver;
# bench-profile-devmem for the receive modes alone, bench-profile-drivers
# for the drivers alone), bench-tx (devmem TX sendmsg() calls a second,
# and the sender's CPU per KiB for send, MSG_ZEROCOPY and devmem TX),
# bench-tx-profile (the sending CPU's instructions by function, counted
# by QEMU, for each of those), and
# kselftest paths relative to KSELFTEST_DIR (e.g.
# drivers/net/hw/devmem.py).
#
# NIC_DRIVER (igb_rs by default, or igb) is the driver the 82576 is bound to
# before the suites run.
#
# GUEST_NET=0 (make check-series's boot of each commit, which runs the
# kunit suite alone) loads igb_rs, for the suites it runs at its load, and
# wires no network: an early commit of the driver brings the 82576 up
# before it can receive, and QEMU's hub then holds the peer's frames
# until the peer's transmit watchdog fires.
#
# Topology: the device under test is the Intel 82576 (PCI 8086:10c9, QEMU's
# igb model), whichever driver binds it. Its peer is the virtio-net device on
# the same QEMU hub, moved into netns ns-remote.

set -u
RESULTS=$1
KSFT=$2
export KSFT
shift 2

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PYTHONDONTWRITEBYTECODE=1
TEST_TIMEOUT=${TEST_TIMEOUT:-300}

LOCAL_V4=192.0.2.1
REMOTE_V4=192.0.2.2
LOCAL_V6=2001:db8:1::1
REMOTE_V6=2001:db8:1::2
# Where the netkit tests put their namespace's addresses.
LOCAL_PREFIX_V6=2001:db8:2::/64

log() { echo "[guest] $*"; }
# shellcheck source=harness/guest/lib.sh
. "$(dirname "$0")/lib.sh"

netdev_by_pci_id() { # vendor device
	local d
	for d in /sys/class/net/*; do
		[ -e "$d/device/vendor" ] || continue
		if [ "$(cat "$d/device/vendor")" = "$1" ] &&
			[ "$(cat "$d/device/device")" = "$2" ]; then
			basename "$d"
			return 0
		fi
	done
	return 1
}

netdev_by_driver() { # driver
	local d
	for d in /sys/class/net/*; do
		[ -e "$d/device/driver" ] || continue
		# virtio-net hangs off a virtio bus device, not the PCI function.
		if [ "$(basename "$(readlink -f "$d/device/driver")")" = "$1" ]; then
			basename "$d"
			return 0
		fi
	done
	return 1
}

# Binds the 82576 to NIC_DRIVER (igb_rs, the Rust driver, by default; igb
# for the C one) when another one has it. igb_rs may be a module (it is in
# our config: virtme-ng serves the build directory's modules); it is loaded
# either way, as the bench switches between the two.
load_igb_rs() {
	[ -d /sys/bus/pci/drivers/igb_rs ] || modprobe igb_rs ||
		log "could not load igb_rs"
}

bind_nic() {
	local want=${NIC_DRIVER:-igb_rs} dev have addr
	load_igb_rs
	for dev in /sys/bus/pci/devices/*; do
		if [ "$(cat "$dev/vendor")" != 0x8086 ] || [ "$(cat "$dev/device")" != 0x10c9 ]; then
			continue
		fi
		addr=$(basename "$dev")
		have=$(basename "$(readlink -f "$dev/driver" 2>/dev/null)" 2>/dev/null)
		[ "$have" = "$want" ] && return 0
		[ -d "/sys/bus/pci/drivers/$want" ] || {
			log "no $want driver in this kernel; the 82576 stays with ${have:-no driver}"
			return 0
		}
		[ -n "$have" ] && echo "$addr" >"$dev/driver/unbind"
		echo "$addr" >"/sys/bus/pci/drivers/$want/bind" ||
			log "binding $addr to $want failed"
		# Before setup_net names the interface.
		udev_settle
	done
}

setup_net() {
	bind_nic
	NETIF=$(netdev_by_pci_id 0x8086 0x10c9) || {
		log "no 82576 (8086:10c9) network device; PCI devices:"
		grep -H . /sys/bus/pci/devices/*/device
		return 1
	}
	PEER=$(netdev_by_driver virtio_net) || {
		log "no virtio-net peer device"
		return 1
	}
	ip link set lo up
	# Tests take the link down and up (stats.py): keep the addresses.
	sysctl -qw net.ipv6.conf.all.keep_addr_on_down=1
	sysctl -qw net.ipv6.conf.default.keep_addr_on_down=1
	ip netns add ns-remote
	ip link set "$PEER" netns ns-remote
	ip -n ns-remote link set lo up
	# The DUT first: QEMU holds what the peer sends while the 82576
	# model cannot receive, and a peer that sends first (IPv6 router
	# solicitations) stalls its transmit queue until the DUT's link is
	# up, which takes longer than the peer's 5 s watchdog on the debug
	# kernel.
	ip addr add "$LOCAL_V4/24" dev "$NETIF"
	ip addr add "$LOCAL_V6/64" dev "$NETIF" nodad
	ip link set "$NETIF" up
	wait_carrier "$NETIF" || log "$NETIF: no carrier after 10 s"
	ip -n ns-remote addr add "$REMOTE_V4/24" dev "$PEER"
	ip -n ns-remote addr add "$REMOTE_V6/64" dev "$PEER" nodad
	ip -n ns-remote link set "$PEER" up
	# drivers/net/README.rst: the endpoint reaches LOCAL_PREFIX_V6 (the
	# namespaces behind netkit on the DUT) through the DUT.
	ip -n ns-remote -6 route add "$LOCAL_PREFIX_V6" via "$LOCAL_V6"
	wait_carrier ns-remote "$PEER" || log "$PEER: no carrier after 10 s"

	export NETIF LOCAL_V4 LOCAL_V6 REMOTE_V4 REMOTE_V6 LOCAL_PREFIX_V6
	export REMOTE_TYPE=netns REMOTE_ARGS=ns-remote
	log "NETIF=$NETIF ($(basename "$(readlink -f "/sys/class/net/$NETIF/device/driver")")) peer=$PEER in ns-remote"
}

# ethtool -L combined N: N receive queues, and the carrier back.
set_channels() { # n
	ethtool -L "$NETIF" combined "$1" || return 1
	[ "$(find "/sys/class/net/$NETIF/queues" -name 'rx-*' | wc -l)" = "$1" ] &&
		wait_carrier "$NETIF"
}

# set_channels while a ping runs, then ping again.
channels_under_traffic() { # n
	local p rc
	ping -q -i 0.05 -c 60 "$REMOTE_V4" >/dev/null 2>&1 &
	p=$!
	sleep 0.5
	set_channels "$1"
	rc=$?
	wait "$p"
	[ "$rc" = 0 ] && ping -c 2 -W 2 "$REMOTE_V4" && ping -6 -c 2 -W 2 "$REMOTE_V6"
}

# The topology itself, as TAP: the drv-net tests assume all of this.
suite_net_env() {
	TAP_N=0 TAP_FAIL=0
	local dev drv
	dev=$(basename "$(readlink -f "/sys/class/net/$NETIF/device")")
	drv=$(basename "$(readlink -f "/sys/class/net/$NETIF/device/driver")")
	echo "TAP version 13"
	echo "1..15"
	t "carrier on $NETIF" wait_carrier "$NETIF"
	t "carrier on peer" wait_carrier ns-remote "$PEER"
	t "ping $REMOTE_V4" ping -c 2 -W 2 "$REMOTE_V4"
	t "ping $REMOTE_V6" ping -6 -c 2 -W 2 "$REMOTE_V6"
	t "peer routes $LOCAL_PREFIX_V6 via $LOCAL_V6" \
		sh -c "ip -n ns-remote -6 route get ${LOCAL_PREFIX_V6%%/*}2 | grep -q 'via $LOCAL_V6 '"
	t "ethtool -i: driver $drv, bus-info $dev" \
		sh -c "ethtool -i $NETIF | grep -qx 'driver: $drv' &&
			ethtool -i $NETIF | grep -qx 'bus-info: $dev'"
	t "ethtool -g: ring sizes" sh -c "ethtool -g $NETIF | grep -q '^RX:[[:space:]]*[1-9]'"
	t "ethtool -l: channels" sh -c "ethtool -l $NETIF | grep -Eq '^(Combined|RX):[[:space:]]*[1-9]'"
	t "RSS: 32 TCP flows reach every queue vector" python3 "$(dirname "$0")/rss_check.py"
	t "ethtool -X equal 1: every bucket on queue 0" sh -c "ethtool -X $NETIF equal 1 &&
		! ethtool -x $NETIF | grep -E '^ +[0-9]+:' | grep -Eq ':.*[1-9]'"
	t "ethtool -X default: buckets on both queues again" sh -c "ethtool -X $NETIF default &&
		ethtool -x $NETIF | grep -E '^ +[0-9]+:' | grep -Eq ':.*[1-9]'"
	t "ethtool -L combined 4: four queue pairs" set_channels 4
	t "RSS over four queues: 32 TCP flows reach every vector" python3 "$(dirname "$0")/rss_check.py"
	t "ethtool -L combined 1 under traffic, then ping" channels_under_traffic 1
	t "ethtool -L combined 2 under traffic, then ping" channels_under_traffic 2
	return $TAP_FAIL
}

# Whether ethtool -g reports rx and tx as the current ring sizes.
ring_sizes_are() { # rx tx
	local cur
	cur=$(ethtool -g "$NETIF" | sed -n '/^Current/,$p')
	echo "$cur"
	echo "$cur" | grep -q "^RX:[[:space:]]*$1\$" &&
		echo "$cur" | grep -q "^TX:[[:space:]]*$2\$"
}

# Whether process pid is alive and some queue of NETIF has a dma-buf
# bound (netdev queue-get).
queue_bound() { # pid
	kill -0 "$1" || return 1
	python3 "$KSRC/tools/net/ynl/pyynl/cli.py" \
		--spec "$KSRC/Documentation/netlink/specs/netdev.yaml" \
		--dump queue-get --json "{\"ifindex\": $(cat "/sys/class/net/$NETIF/ifindex")}" |
		tee /dev/stderr | grep -q dmabuf
}

# Starts ncdevmem listening on NETIF with a udmabuf bound to a queue, in
# the background (pid in NCDEVMEM_PID).
devmem_listen() { # port
	echo 64 >/proc/sys/vm/nr_hugepages
	"$KSFT/drivers/net/hw/ncdevmem" -l -f "$NETIF" -s "$LOCAL_V6" -p "$1" \
		-c "$REMOTE_V6" >/dev/null 2>&1 &
	NCDEVMEM_PID=$!
}

# The NIC's life cycle under traffic: link down and up, driver unbind and
# bind, module unload and load, and both while a devmem binding holds a
# queue; traffic must flow again after each. Leaks and WARNs show up in the
# kmemleak and kernel-log checks.
suite_nic_lifecycle() {
	local pci drv pinger
	netif_back() {
		for _ in $(seq 50); do
			ip link show "$NETIF" >/dev/null 2>&1 && return 0
			sleep 0.1
		done
		return 1
	}
	# A built-in driver fails these: the config must build it as a module.
	unload() {
		[ -e "/sys/module/$drv/refcnt" ] || {
			echo "$drv is built in: no module to unload"
			return 1
		}
		rmmod "$drv" && ! [ -e "/sys/class/net/$NETIF" ]
	}
	reload() { modprobe "$drv" && netif_back; }
	TAP_N=0 TAP_FAIL=0
	readdr() {
		ip addr add "$LOCAL_V4/24" dev "$NETIF" 2>/dev/null
		ip addr add "$LOCAL_V6/64" dev "$NETIF" nodad 2>/dev/null
		ip link set "$NETIF" up && wait_carrier "$NETIF"
	}
	readdr_ping() { readdr && ping -c 2 -W 2 "$REMOTE_V4"; }
	pci=$(basename "$(readlink -f "/sys/class/net/$NETIF/device")")
	drv=$(basename "$(readlink -f "/sys/class/net/$NETIF/device/driver")")
	echo "TAP version 13"
	echo "1..32"
	ping -q -i 0.05 -c 100 "$REMOTE_V4" >/dev/null 2>&1 &
	pinger=$!
	t "link down under traffic" ip link set "$NETIF" down
	t "link up, carrier" readdr
	t "ping after down/up" ping -c 2 -W 2 "$REMOTE_V4"
	t "ethtool -G rx 64 tx 128 under traffic" ethtool -G "$NETIF" rx 64 tx 128
	t "ethtool -g reports 64 and 128" ring_sizes_are 64 128
	t "ping after -G" readdr_ping
	t "ethtool -G rx 100: rounded to 104" sh -c "ethtool -G $NETIF rx 100 &&
		ethtool -g $NETIF | grep -A1 Current | grep -q 'RX:[[:space:]]*104'"
	t "ethtool -G rx 32: refused, ring unchanged" sh -c "! ethtool -G $NETIF rx 32 &&
		ethtool -g $NETIF | grep -A1 Current | grep -q 'RX:[[:space:]]*104'"
	t "unbind $drv under traffic" sh -c "echo $pci >/sys/bus/pci/drivers/$drv/unbind"
	t "bind $drv again" sh -c "echo $pci >/sys/bus/pci/drivers/$drv/bind &&
		for i in \$(seq 50); do ip link show $NETIF && exit 0; sleep 0.1; done; exit 1"
	wait "$pinger"
	t "addresses and carrier after rebind" readdr
	t "ping after rebind" ping -c 2 -W 2 "$REMOTE_V4"
	devmem_listen 5501
	t "ncdevmem binds a udmabuf and listens" listening 5501
	t "ethtool -G rx 512 tx 256 with the binding live" ethtool -G "$NETIF" rx 512 tx 256
	t "the binding keeps its queue across the restart" queue_bound "$NCDEVMEM_PID"
	t "ping with the binding live" readdr_ping
	t "unbind $drv with the binding live" sh -c "echo $pci >/sys/bus/pci/drivers/$drv/unbind"
	kill "$NCDEVMEM_PID" 2>/dev/null
	wait "$NCDEVMEM_PID" 2>/dev/null
	t "bind $drv again" sh -c "echo $pci >/sys/bus/pci/drivers/$drv/bind &&
		for i in \$(seq 50); do ip link show $NETIF && exit 0; sleep 0.1; done; exit 1"
	t "traffic after the binding's device went away" readdr_ping
	ping -q -i 0.05 -c 100 "$REMOTE_V4" >/dev/null 2>&1 &
	pinger=$!
	t "rmmod $drv under traffic" unload
	t "modprobe $drv: the 82576 is back" reload
	wait "$pinger"
	t "ping after the reload" readdr_ping
	devmem_listen 5502
	t "ncdevmem binds a udmabuf and listens" listening 5502
	t "rmmod $drv with the binding live" unload
	t "modprobe $drv with the old binding still open" reload
	# The binding outlived its device and the module: closing it now
	# must not reach either.
	kill "$NCDEVMEM_PID" 2>/dev/null
	wait "$NCDEVMEM_PID" 2>/dev/null
	t "traffic after the binding's module went away" readdr_ping
	# A TX binding holds no reference to its device. When the device goes
	# with the binding's socket still open, the core must unmap the
	# dma-buf before the driver lets go of the device (DMA-API debugging
	# counts a mapping left behind as an error) and forget the device.
	dma_before=$(dma_errors)
	tx_hold
	t "bind-tx holds a udmabuf on $NETIF" tx_held
	t "unbind $drv with the TX binding held" sh -c "echo $pci >/sys/bus/pci/drivers/$drv/unbind"
	t "no DMA mapping of the TX binding left at unbind" no_dma_errors_since "$dma_before"
	t "bind $drv again" sh -c "echo $pci >/sys/bus/pci/drivers/$drv/bind &&
		for i in \$(seq 50); do ip link show $NETIF && exit 0; sleep 0.1; done; exit 1"
	tx_release
	t "the TX binding's socket closes after its device went" tx_released
	t "traffic after the TX binding's device went away" readdr_ping
	return $TAP_FAIL
}

# DMA-API debugging's error count, and whether it is still COUNT.
dma_errors() {
	cat /sys/kernel/debug/dma-api/error_count
}
no_dma_errors_since() { # count
	local now
	now=$(dma_errors) || return 1
	echo "DMA-API errors: $1 before, $now now"
	[ "$now" = "$1" ]
}

# A process holding a TX binding of a udmabuf on NETIF, on a netlink socket
# of its own (races.py's holder). tx_hold starts it and keeps its first
# line, tx_release ends it and keeps its exit status; both run in this
# shell (a coprocess belongs to the shell that started it), and tx_held
# and tx_released judge them.
tx_hold() {
	TX_SAID='' TX_EXIT=''
	coproc TXHOLD { exec python3 "$(dirname "$0")/races.py" --hold tx \
		"$(cat "/sys/class/net/$NETIF/ifindex")" 0 16 2>&1; }
	TX_PID=$TXHOLD_PID
	# Python, YNL and a bind under the debug kernel: SLOW_WAITS times 30 s.
	read -r -t $((30 * ${SLOW_WAITS:-1})) TX_SAID <&"${TXHOLD[0]}"
}
tx_held() {
	echo "the holder said: ${TX_SAID:-nothing}"
	[ "${TX_SAID%% *}" = bound ]
}
tx_release() {
	local i
	# A holder that already exited has no reader for it: the write fails
	# (EPIPE) rather than kill the shell. Not from a subshell: bash closes
	# a coprocess's descriptors in its subshells.
	trap '' PIPE
	{ echo exit 1>&"${TXHOLD[1]}"; } 2>/dev/null
	trap - PIPE
	# One that does not exit is killed (its status says so) rather than
	# waited for until the VM's time runs out.
	for ((i = 0; i < 30 * ${SLOW_WAITS:-1}; i++)); do
		kill -0 "$TX_PID" 2>/dev/null || break
		sleep 1
	done
	kill -KILL "$TX_PID" 2>/dev/null
	wait "$TX_PID"
	TX_EXIT=$?
}
tx_released() {
	echo "the holder exited with ${TX_EXIT:-nothing}"
	[ "$TX_EXIT" = 0 ]
}

# Header split (ethtool -G tcp-data-split) on the NIC: traffic must flow
# with it on and off again.
suite_nic_hds() {
	TAP_N=0 TAP_FAIL=0
	echo "TAP version 13"
	echo "1..8"
	local rings
	rings=$(dirname "$0")/rings.py
	t "tcp-data-split on" python3 "$rings" "$NETIF" split on
	t "rings-get reports it on" sh -c "python3 $rings $NETIF get | grep -q 'tcp-data-split enabled'"
	t "carrier" wait_carrier "$NETIF"
	t "ping $REMOTE_V4, split" ping -c 2 -W 2 "$REMOTE_V4"
	t "ping $REMOTE_V6, split" ping -6 -c 2 -W 2 "$REMOTE_V6"
	t "32 TCP flows, split" python3 "$(dirname "$0")/rss_check.py"
	t "tcp-data-split off" python3 "$rings" "$NETIF" split off
	t "ping $REMOTE_V4, not split" sh -c "sleep 1; ping -c 2 -W 2 $REMOTE_V4"
	return $TAP_FAIL
}

# Every KUnit suite that ran at boot or at a module's load, as one KTAP
# document; results.py checks that those of harness/kunit-suites are in it.
suite_kunit() {
	local d n=0
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	for d in /sys/kernel/debug/kunit/*/; do
		[ -r "$d/results" ] && n=$((n + 1))
	done
	echo "KTAP version 1"
	echo "1..$n"
	for d in /sys/kernel/debug/kunit/*/; do
		[ -r "$d/results" ] && cat "$d/results"
	done
	[ "$n" -gt 0 ]
}

suite_kselftest() { # path
	local dir prog
	dir=$KSFT/$(dirname "$1")
	prog=$(basename "$1")
	[ -x "$dir/$prog" ] || {
		echo "not ok 1 $1 # not installed in $KSFT"
		return 1
	}
	local out rc nfail ntimeout
	# KSFT_MACHINE_SLOW is upstream's word for a machine like this one (a
	# TCG guest): so_txtime.py then schedules its packets 2 s ahead, not
	# 200 ms, which is less than starting its receiver in the peer's netns
	# takes here. Only for the tests it is known to help: gro.py reads it
	# too, and skips its large_ cases.
	case $1 in
	drivers/net/so_txtime.py) export KSFT_MACHINE_SLOW=yes ;;
	*) unset KSFT_MACHINE_SLOW ;;
	esac
	# toeplitz.py's RSS and RPS cases need each queue's interrupt on one
	# CPU, and RPS two CPUs no queue interrupt uses, as an administrator
	# who measures RSS sets them; the kernel spreads them over all.
	[ "$1" != drivers/net/hw/toeplitz.py ] || pin_queue_irqs
	# Upstream's fixed waits, stretched SLOW_WAITS times on the debug
	# kernel, with the evidence of progress when one still runs out
	# (slowwait/sitecustomize.py).
	if [ "${SLOW_WAITS:-1}" != 1 ]; then
		PYTHONPATH=$(cd "$(dirname "$0")" && pwd)/slowwait
		export PYTHONPATH HARNESS_SLOW_WAITS=$SLOW_WAITS
	fi
	# On the shared results directory, so a hung run still leaves it.
	out=$RESULTS/$name.running
	(cd "$dir" && exec timeout --foreground -k 10 "$TEST_TIMEOUT" "./$prog") >"$out" 2>&1
	rc=$?
	# The peer's TCP sockets when a run failed: results.py names what held
	# a port the peer could not bind.
	[ $rc -eq 0 ] || ip netns exec ns-remote ss -Htan >"$RESULTS/$name.peer-sockets" 2>&1 || true
	# Under TCG a listener can take seconds to come up (ncdevmem's bind
	# imports 16000 pages; the C core vmallocs a gen_pool chunk per
	# scatterlist entry), and the tests wait 5 s for the port. A run
	# whose only failures are these is run once more, once; one killed
	# (124, 137) or cut short (retry_counts) is not. The first
	# attempt is kept in $name.attempt1. results.py judges the second,
	# lists what the first failed, counts a case that passed only on the
	# retry as flaky, and fails one that is flaky in two runs in a row.
	# iou-zcrx's "test failed" is not one of these: with the series'
	# iou-zcrx stall patch its server gives up after 20 s without data,
	# which no slow machine needs (upstream gives the whole transfer 5 s
	# from the listen). A run
	# whose client missed the test's own 20 s for it is (Python's
	# TimeoutExpired on `iou-zcrx -c`): the lockdep kernel's first
	# transfer through the netkit-leased queue after boot overran it in 4
	# of 4 boots measured (lockdep added some 2,400 dependency chains
	# during it; the peer's retransmits were spurious, the receiver dropped
	# them as old, and the NIC dropped nothing). The next run of the suite
	# in the same boot passed each time (7 of 7), and so did the first on
	# the same kernel without lockdep.
	# results.py counts the claimed cases that failed and those that
	# failed on one of these timeouts (retry_counts): the unclaimed ones,
	# which fail for what the device or QEMU cannot do, do not stop a
	# retry. It counts nothing if it cannot run, and nothing is retried.
	read -r nfail ntimeout < <(python3 "$(dirname "$0")/../results.py" --retry-counts \
		"$(dirname "$0")/../expectations" "$1" "$out" 2>/dev/null || echo 0 0)
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && [ "$nfail" -gt 0 ] &&
		[ "$nfail" -eq "$ntimeout" ]; then
		mv "$out" "$RESULTS/$name.attempt1"
		mv "$RESULTS/$name.peer-sockets" "$RESULTS/$name.attempt1.peer-sockets" 2>/dev/null || true
		tidy_nic "$RESULTS/$name.attempt1.leftover"
		(cd "$dir" && exec timeout --foreground -k 10 "$TEST_TIMEOUT" "./$prog") >"$out" 2>&1
		rc=$?
		[ $rc -eq 0 ] || ip netns exec ns-remote ss -Htan >"$RESULTS/$name.peer-sockets" 2>&1 || true
	fi
	cat "$out"
	rm -f "$out"
	[ "$1" != drivers/net/hw/toeplitz.py ] || unpin_queue_irqs
	return $rc
}

# The NIC's MSI-X vectors, each on one CPU of the lower half of the
# guest's (vector K on CPU K mod N/2), leaving the upper half to RPS.
pin_queue_irqs() {
	local half k=0 f
	half=$(($(nproc) / 2))
	[ "$half" -gt 0 ] || half=1
	for f in "/sys/class/net/$NETIF/device/msi_irqs/"*; do
		echo $((k % half)) >"/proc/irq/${f##*/}/smp_affinity_list" || true
		k=$((k + 1))
	done
}

unpin_queue_irqs() {
	local f mask
	mask=$(cat /proc/irq/default_smp_affinity)
	for f in "/sys/class/net/$NETIF/device/msi_irqs/"*; do
		echo "$mask" >"/proc/irq/${f##*/}/smp_affinity" || true
	done
}

# What a suite left configured on the NIC for the next one to trip over:
# flow steering rules and a user indirection table. A test that times out
# leaves both when it kills ncdevmem, which undoes its configuration only on
# its own way out (and a rule that goes through the RSS table keeps the
# hash fields from changing). Written to FILE when there is any, then
# undone.
tidy_nic() { # file
	local rules r table
	[ -n "${NETIF:-}" ] || return 0
	rules=$(ethtool -n "$NETIF" 2>/dev/null | sed -n 's/^Filter: \([0-9]*\)$/\1/p')
	for r in $rules; do
		echo "flow steering rule $r: $(ethtool -n "$NETIF" rule "$r" 2>&1 |
			sed -n 's/^[[:space:]]*\(Rule Type\|Action\): //p' | paste -sd' ')" >>"$1"
		ethtool -N "$NETIF" delete "$r"
	done
	table=$(ethtool -x "$NETIF" 2>/dev/null)
	if [ "$table" != "$RXFH_BOOT" ]; then
		echo "a user indirection table" >>"$1"
		ethtool -X "$NETIF" default
		# Reported once, should the channel count have changed.
		RXFH_BOOT=$(ethtool -x "$NETIF" 2>/dev/null)
	fi
	return 0
}

# The transmit queues of netif that byte queue limits still count bytes
# in flight on, 5 s after the traffic of a suite ended, as tx-N:BYTES,...
# (status 1); none: status 0. A healthy queue completes what it sent in
# milliseconds, and stop resets the counts. Bytes that never complete
# (a frame counted, then dropped with a ring without a reset) stop the
# queue for good once they reach its limit, and slow it before: the
# transmit watchdog sees only the first, and only while the queue is
# stopped and has traffic waiting.
bql_stuck() { # netif
	local q n stuck
	for _ in $(seq 50); do
		stuck=
		for q in /sys/class/net/"$1"/queues/tx-*/byte_queue_limits/inflight; do
			n=$(cat "$q" 2>/dev/null) || continue
			[ "$n" = 0 ] && continue
			q=${q%/byte_queue_limits/inflight}
			stuck+="${stuck:+,}${q##*/}:$n"
		done
		[ -z "$stuck" ] && return 0
		sleep 0.1
	done
	echo "$stuck"
	return 1
}

# The kernel's state at a point of the run, appended to kernel-state.txt
# as a line for results.py: WHEN (boot, start or end of a suite, final),
# the suite (- for none), then KEY=VALUE: seq, the sequence number of the
# kernel log's first record from here on (kmsg.py writes one, "harness:
# WHEN SUITE"), except at a suite's end; tainted, the taint bits;
# debug_locks, lockdep's (0 once it turned itself off; left out on a
# kernel without lockdep); dma_disabled and dma_errors, DMA-API
# debugging's (left out without it); at a suite's end and at the last,
# bql_queues, the NIC's transmit queues read, and bql_stuck, those whose
# bytes in flight did not drain (bql_stuck below). A suite is judged on
# what changed between its start and its end, and the kernel log's
# records from its start's seq on are its, until the next one's.
kernel_state() { # when suite
	local f=("$1" "$2") v qs
	if [ "$1" != end ]; then
		v=$(python3 "$(dirname "$0")/kmsg.py" mark "harness: $1 $2") && f+=("seq=$v")
	fi
	# No NIC to read the queues of (results.py allows it to kunit alone).
	[ "$1" = boot ] && [ "${GUEST_NET:-1}" = 0 ] && f+=("net=unwired")
	if [ "$1" = end ] || [ "$1" = final ]; then
		qs=(/sys/class/net/"${NETIF:-lo}"/queues/tx-*/byte_queue_limits/inflight)
		[ -e "${qs[0]}" ] && f+=("bql_queues=${#qs[@]}")
		v=$(bql_stuck "${NETIF:-lo}") || f+=("bql_stuck=$v")
	fi
	f+=("tainted=$(cat /proc/sys/kernel/tainted)")
	v=$(awk '$1 == "debug_locks:" { print $2 }' /proc/lockdep_stats 2>/dev/null)
	[ -z "$v" ] || f+=("debug_locks=$v")
	[ -r /sys/kernel/debug/dma-api/disabled ] &&
		f+=("dma_disabled=$(cat /sys/kernel/debug/dma-api/disabled)")
	[ -r /sys/kernel/debug/dma-api/error_count ] &&
		f+=("dma_errors=$(cat /sys/kernel/debug/dma-api/error_count)")
	echo "${f[*]}" >>"$RESULTS/kernel-state.txt"
}

mkdir -p "$RESULTS"
# The kernel log, whole: kmsg.py reads /dev/kmsg from its oldest record
# (vm.sh's log_buf_len keeps every one since boot until then) and copies
# each record to kmsg.txt as it comes, until it is stopped at the end.
python3 "$(dirname "$0")/kmsg.py" record "$RESULTS/kmsg.txt" &
kmsg_pid=$!
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
kernel_state boot -
if [ "${GUEST_NET:-1}" = 0 ]; then
	load_igb_rs
else
	setup_net || echo "setup_net failed" >"$RESULTS/setup.err"
fi
RXFH_BOOT=$(ethtool -x "${NETIF:-lo}" 2>/dev/null)

for suite in "$@"; do
	name=${suite//\//_}
	log "suite $suite at $(date +%T), on CPUs $(awk '$1 == "Cpus_allowed_list:" { print $2 }' /proc/$$/status)"
	kernel_state start "$suite"
	# In a subshell of its own: a suite that dies (a signal, an exit in a
	# shell function) fails itself, and the runner goes on to the next.
	(case "$suite" in
	kunit) suite_kunit ;;
	net-env) suite_net_env ;;
	nic-lifecycle) suite_nic_lifecycle ;;
	nic-hds) suite_nic_hds ;;
	nic-filters) python3 "$(dirname "$0")/rx_filters.py" ;;
	nic-jumbo) "$(dirname "$0")/jumbo.sh" ;;
	nic-ethtool) "$(dirname "$0")/ethtool_ops.sh" ;;
	nic-rss) python3 "$(dirname "$0")/rss_fields.py" ;;
	devmem-bind) python3 "$(dirname "$0")/devmem_bind.py" ;;
	devmem-tokens) timeout -k 10 "$TEST_TIMEOUT" python3 "$(dirname "$0")/devmem_tokens.py" ;;
	nic-rx-alloc-fail) timeout -k 10 "$TEST_TIMEOUT" python3 "$(dirname "$0")/rx_alloc_fail.py" ;;
	faults) python3 "$(dirname "$0")/faults.py" ;;
	races) python3 "$(dirname "$0")/races.py" ;;
	demo) "$(dirname "$0")/demo.sh" ;;
	bench-net) "$(dirname "$0")/bench_net.sh" ;;
	bench-rx) "$(dirname "$0")/bench_rx.sh" ;;
	# One pass of it: bench-rx-standard, -jumbo, -drivers.
	bench-rx-*) "$(dirname "$0")/bench_rx.sh" "${suite#bench-rx-}" ;;
	devmem-rx-check) "$(dirname "$0")/bench_rx.sh" check ;;
	bench-profile) "$(dirname "$0")/bench_rx.sh" profile ;;
	bench-profile-devmem) "$(dirname "$0")/bench_rx.sh" profile-devmem ;;
	bench-profile-drivers) "$(dirname "$0")/bench_rx.sh" profile-drivers ;;
	bench-tx) "$(dirname "$0")/bench_tx.sh" ;;
	bench-tx-profile) BENCH_TX_PASSES=profile "$(dirname "$0")/bench_tx.sh" ;;
	*) suite_kselftest "$suite" ;;
	esac) >"$RESULTS/$name.tap" 2>&1
	rc=$?
	echo $rc >"$RESULTS/$name.rc"
	cat "$RESULTS/$name.tap"
	# timeout's exit statuses: it sent TERM (124), or KILL after -k (137).
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		log "suite $suite killed (exit $rc): it ran past TEST_TIMEOUT"
	fi
	# A suite that rebinds the 82576 (bench-rx, bench-net) leaves a new
	# interface, which udev may have named differently. Without a wired
	# network (GUEST_NET=0) there is none to follow.
	if [ -n "${NETIF:-}" ] && dev=$(netdev_by_pci_id 0x8086 0x10c9); then
		NETIF=$dev
	fi
	tidy_nic "$RESULTS/$name.leftover"
	[ -e "$RESULTS/$name.leftover" ] && log "$suite left: $(paste -sd';' "$RESULTS/$name.leftover")"
	kernel_state end "$suite"
done
# Every page pool that was destroyed has its buffers back: one that
# still holds some 60 s after the last suite lost a reference (a page's,
# a net_iov's), and never frees its memory, nor a binding its dma-buf.
# The kernel says so at 60 s too (page_pool_release_retry), past the end
# of the run. A time here is when a dump began: the dump itself takes
# seconds under TCG (Python reading the netlink spec), more on the debug
# kernel, so the 60 s are counted to the start of the last dump, and the
# pools' time is not the dump's. page-pools.txt says it for results.py,
# "ok: ...", "left: POOLS" or "not checked: WHY". The netlink dump lists
# the pools of the devices of this namespace: the NIC's, and those of a
# device unregistered, which move to the loopback device (the peer's
# virtio-net in ns-remote is not under test).
pools_left() {
	local start=$SECONDS at dumps=0 out left err=$RESULTS/page-pools.err
	while :; do
		at=$((SECONDS - start))
		dumps=$((dumps + 1))
		if ! out=$(python3 "$KSRC/tools/net/ynl/pyynl/cli.py" \
			--spec "$KSRC/Documentation/netlink/specs/netdev.yaml" \
			--dump page-pool-get --output-json 2>"$err"); then
			echo "not checked: the page-pool-get dump failed: $(tail -n 1 "$err")"
			return
		fi
		if ! left=$(echo "$out" | python3 -c '
import json, sys
pools = [p for p in json.load(sys.stdin) if "detach-time" in p and p.get("inflight", 0)]
print(" ".join("pool %d (ifindex %s, %d in flight%s)" % (p["id"], p.get("ifindex", "-"), p["inflight"],
               ", dma-buf %d" % p["dmabuf"] if "dmabuf" in p else "") for p in pools))
' 2>"$err"); then
			echo "not checked: the dump did not read as JSON: $(tail -n 1 "$err")"
			return
		fi
		if [ -z "$left" ]; then
			echo "ok: every destroyed page pool has its buffers back (dump $dumps, begun $at s after the last suite, $((SECONDS - start - at)) s long)"
			return
		fi
		[ "$at" -lt 60 ] || break
		sleep 1
	done
	echo "left: $left"
}
pools_left >"$RESULTS/page-pools.txt"
rm -f "$RESULTS/page-pools.err"
log "page pools: $(cat "$RESULTS/page-pools.txt")"
if [ -e /sys/kernel/debug/kmemleak ]; then
	# kmemleak reports only objects older than 5 s: let what the last
	# test leaked age before the scan.
	sleep 6
	# A kmemleak that turned itself off refuses the scan (EPERM) and
	# lists nothing: the scan's outcome goes to results.py too.
	if err=$( (echo scan >/sys/kernel/debug/kmemleak) 2>&1); then
		echo ok >"$RESULTS/kmemleak-scan.txt"
	else
		echo "failed: ${err:-no message}" >"$RESULTS/kmemleak-scan.txt"
	fi
	cat /sys/kernel/debug/kmemleak >"$RESULTS/kmemleak.txt"
fi
# DMA-API debugging prints its first error only and counts the rest.
if [ -e /sys/kernel/debug/dma-api/error_count ]; then
	cat /sys/kernel/debug/dma-api/error_count >"$RESULTS/dma-api-errors.txt"
fi
kernel_state final -
# The recorder reads what is left and ends; dmesg.txt is its copy in
# dmesg's form. Without one (the recorder failed), dmesg's own, which
# holds what the buffer still has.
kill -TERM "$kmsg_pid"
wait "$kmsg_pid" || log "the kernel log recorder exited with status $?"
python3 "$(dirname "$0")/kmsg.py" dmesg "$RESULTS/kmsg.txt" >"$RESULTS/dmesg.txt" ||
	dmesg >"$RESULTS/dmesg.txt"
log "done"
