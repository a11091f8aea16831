# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Shell functions the guest scripts share; sourced by run.sh, demo.sh,
# bench_net.sh, bench_rx.sh, bench_tx.sh and jumbo.sh; the sourcing script
# defines log (a "# " line).

# Waits, 10 s at most, for a TCP listener on port $1, in netns $2 if given.
listening() { # port [netns]
	local ns=()
	[ $# -ge 2 ] && ns=(ip netns exec "$2")
	for _ in $(seq 1 100); do
		"${ns[@]}" ss -Htln "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# Waits, 10 s at most, for carrier on device $2 in netns $1, or on device
# $1 here.
wait_carrier() { # [netns] dev
	local ns=()
	[ $# -eq 2 ] && ns=(ip netns exec "$1") && shift
	for _ in $(seq 1 100); do
		[ "$("${ns[@]}" cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

# One TAP check: runs the command, prints "ok N description" or "not ok",
# with the tail of its output as comments; counts in TAP_N, TAP_FAIL.
t() { # description command...
	local d=$1 out
	shift
	TAP_N=$((TAP_N + 1))
	if out=$("$@" 2>&1); then
		echo "ok $TAP_N $d"
	else
		echo "not ok $TAP_N $d"
		printf '%s\n' "$out" | tail -n 5 | sed 's/^/# /'
		# shellcheck disable=SC2034 # the caller's exit status
		TAP_FAIL=1
	fi
}

# Sets the interrupts of PCI device $1 (a sysfs directory) to CPU $2, or
# says which cannot move ("# " lines).
irqs_to() { # pci-dir cpu
	local irq
	for irq in "$1"/msi_irqs/*; do
		irq=$(basename "$irq")
		echo "$2" 2>/dev/null >"/proc/irq/$irq/smp_affinity_list" ||
			echo "# interrupt $irq of $(basename "$1") cannot move to CPU $2"
	done
	return 0
}

# The two ends of a transfer as two machines: the interrupts of the 82576
# (NETIF) on CPU $1, those of the peer's device (in ns-remote) on CPU $2.
place_irqs() { # dut-cpu peer-cpu
	local peer
	irqs_to "$(readlink -f "/sys/class/net/$NETIF/device")" "$1"
	# The virtio device's parent is its PCI function.
	# shellcheck disable=SC2016 # expanded in the netns
	for peer in $(ip netns exec ns-remote sh -c \
		'for d in /sys/class/net/*/device; do readlink -f "$d/.."; done'); do
		irqs_to "$peer" "$2"
	done
}

# udev renames a new interface (eth0 to enp0s10): wait until it has
# handled every event the kernel sent before naming the interface. On the
# debug kernel under TCG that took more than 10 s, and the harness then
# configured eth0 just before it was renamed.
udev_settle() {
	udevadm settle -t 120 || echo "udev still busy after 120 s" >&2
}

# Rebinds the 82576 (NETIF; its PCI function, NIC_PCI, is found from NETIF
# the first time) to driver $1 and wires it again as run.sh did:
# addresses, link up, carrier, then its interrupts on CPU $2 and the
# peer's on CPU $3 (place_irqs). Sets NETIF to the new interface's name,
# which udev may change. Fails when the driver does not take the device;
# the device then has no driver, and a rebind to another still works.
rebind() { # driver dut-cpu peer-cpu
	local dev
	: "${NIC_PCI:=$(basename "$(readlink -f "/sys/class/net/$NETIF/device")")}"
	dev=/sys/bus/pci/devices/$NIC_PCI
	if [ -e "$dev/driver" ]; then
		echo "$NIC_PCI" >"$dev/driver/unbind"
	fi
	echo "$NIC_PCI" >"/sys/bus/pci/drivers/$1/bind" || return 1
	udev_settle
	for _ in $(seq 1 100); do
		NETIF=$(basename "$dev"/net/* 2>/dev/null)
		[ -e "/sys/class/net/$NETIF" ] && break
		sleep 0.1
	done
	ip addr add "$LOCAL_V4/24" dev "$NETIF"
	ip addr add "$LOCAL_V6/64" dev "$NETIF" nodad
	ip link set "$NETIF" up
	wait_carrier "$NETIF"
	ping -6 -c 1 -W 5 "$REMOTE_V6" >/dev/null
	place_irqs "$2" "$3"
}

# The host's reading of the vCPU threads (harness/hostcpu.sh), when vm.sh
# runs its watcher and says where in HOSTCPU. host_mark begin|end KEY asks
# for a reading and waits for the answer (10 s at most); after "end" it
# sets HOST to "WALL_NS VCPU0_NS,VCPU1_NS,... OTHER_NS". Without the
# watcher, or when it does not answer, HOST is empty and the host's lines
# say n/a.
HOST=
host_mark() { # begin|end key
	local i line
	HOST=
	[ -n "${HOSTCPU:-}" ] && [ -d "$HOSTCPU" ] || return 0
	echo "$1 $2" >>"$HOSTCPU/req"
	for ((i = 0; i < 1000; i++)); do
		# Keys are letters and digits, each used once.
		line=$(grep -m 1 "^$2 \($1\|error\)" "$HOSTCPU/ack" || true)
		case "$line" in
		"") sleep 0.01 ;;
		"$2 begin") return 0 ;;
		"$2 end "*)
			# shellcheck disable=SC2034 # the sourcing script's
			HOST=${line#"$2 end "}
			return 0
			;;
		*)
			log "the host's reading for $2: ${line#"$2 "}"
			return 0
			;;
		esac
	done
	log "the host did not answer $1 $2 within 10 s"
	HOSTCPU=
}
