#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Network benchmarks, run in the guest by run.sh (suite bench-net) with the
# topology wired and NETIF etc. exported; the 82576 starts on igb_rs and
# ends on it. Prints, best of BENCH_ROUNDS runs of BENCH_MB MiB each, sent
# by the peer (ns-remote) to the 82576:
#
#   driver-tcp-stream: rust <Mbit/s>, c <Mbit/s>, ratio <r>
#       a TCP stream into a socat sink, through igb_rs, then through the
#       C igb driver (the device rebound to it), same VM;
#   devmem-rx: devmem <Mbit/s>, copy <Mbit/s>, ratio <r>
#       through igb_rs: ncdevmem receiving into a udmabuf (devmem TCP: the
#       payload lands in the udmabuf, no copy), then recv() straight into
#       the same kind of udmabuf mapped in memory (one copy per byte).
#
# Under TCG the absolute numbers say little; the ratios compare like with
# like. Exit status 0 when every run moved all its bytes.

set -u
NCDEVMEM=$KSFT/drivers/net/hw/ncdevmem
MB=${BENCH_MB:-64}
ROUNDS=${BENCH_ROUNDS:-3}
BYTES=$((MB * 1024 * 1024))
PORT=5301
fail=0

log() { echo "# $*"; }

# shellcheck source=harness/guest/lib.sh
. "$(dirname "$0")/lib.sh"

# The peer sends BYTES to our PORT; prints the seconds it took, or fails.
send() {
	local t0 t1
	t0=$(date +%s%N)
	ip netns exec ns-remote socat -u "OPEN:/dev/zero,readbytes=$BYTES" \
		"TCP6:[$LOCAL_V6]:$PORT,bind=[$REMOTE_V6]:$PORT" || return 1
	t1=$(date +%s%N)
	echo $((t1 - t0))
}

mbps() { # nanoseconds
	echo "$BYTES $1" | awk '{ printf "%.0f", $1 * 8 / ($2 / 1e9) / 1e6 }'
}

# Best of ROUNDS: runs "$@" (which starts a receiver in the background and
# sets RX to its pid), then the sender; sets BEST to the Mbit/s.
best() { # label start-receiver...
	local label=$1 ns rx r
	shift
	BEST=0
	for r in $(seq 1 "$ROUNDS"); do
		# A new port each time: the peer binds its source port to it,
		# and the last connection's may still be in TIME_WAIT.
		PORT=$((PORT + 1))
		"$@"
		rx=$RX
		listening $PORT || { log "$label: no listener"; fail=1; continue; }
		if ! ns=$(send); then
			log "$label round $r: the transfer failed"
			fail=1
			kill "$rx" 2>/dev/null
			continue
		fi
		wait "$rx" || { log "$label round $r: the receiver failed"; fail=1; }
		ns=$(mbps "$ns")
		log "$label round $r: $ns Mbit/s"
		[ "$ns" -gt "$BEST" ] && BEST=$ns
	done
	return 0
}

# The receivers, started by best().
# shellcheck disable=SC2317
sink() {
	socat -u "TCP6-LISTEN:$PORT,reuseaddr" OPEN:/dev/null >/dev/null 2>&1 &
	RX=$!
}

# shellcheck disable=SC2317
devmem_rx() {
	"$NCDEVMEM" -l -f "$NETIF" -s "$LOCAL_V6" -p "$PORT" -c "$REMOTE_V6" >/dev/null 2>&1 &
	RX=$!
}

# shellcheck disable=SC2317
copy_rx() {
	python3 "$(dirname "$0")/recv_copy.py" "$LOCAL_V6" "$PORT" 64 >/dev/null &
	RX=$!
}

ratio() {
	echo "$1 $2" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else printf "n/a" }'
}

# Rebinds the 82576 to driver $1 and wires it again.
rebind() {
	local pci
	pci=$(basename "$(readlink -f "/sys/class/net/$NETIF/device")")
	echo "$pci" >"/sys/bus/pci/devices/$pci/driver/unbind"
	echo "$pci" >"/sys/bus/pci/drivers/$1/bind" || return 1
	# udev renames the new interface: wait for that before naming it.
	udevadm settle -t 10
	for _ in $(seq 1 100); do
		NETIF=$(basename /sys/bus/pci/devices/"$pci"/net/* 2>/dev/null)
		[ -e "/sys/class/net/$NETIF" ] && break
		sleep 0.1
	done
	ip addr add "$LOCAL_V4/24" dev "$NETIF"
	ip addr add "$LOCAL_V6/64" dev "$NETIF" nodad
	ip link set "$NETIF" up
	for _ in $(seq 1 100); do
		[ "$(cat "/sys/class/net/$NETIF/carrier" 2>/dev/null)" = 1 ] && break
		sleep 0.1
	done
	ping -6 -c 1 -W 5 "$REMOTE_V6" >/dev/null
}

echo 64 >/proc/sys/vm/nr_hugepages
best "igb_rs stream" sink
rust=$BEST
best "devmem" devmem_rx
devmem=$BEST
best "recv+copy" copy_rx
copy=$BEST
if rebind igb; then
	best "igb stream" sink
	c=$BEST
else
	log "could not rebind the 82576 to igb"
	c=0
	fail=1
fi
rebind igb_rs || { log "could not rebind the 82576 to igb_rs"; fail=1; }
echo "driver-tcp-stream: rust $rust Mbit/s, c $c Mbit/s, ratio $(ratio "$rust" "$c")"
echo "devmem-rx: devmem $devmem Mbit/s, copy $copy Mbit/s, ratio $(ratio "$devmem" "$copy")"
exit $fail
