#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Network benchmarks, run in the guest by run.sh (suite bench-net) with the
# topology wired and NETIF etc. exported; the 82576 starts on igb_rs and
# ends on it. Prints, the median of BENCH_ROUNDS runs of BENCH_MB MiB each,
# sent by the peer (ns-remote) to the 82576, with the lowest and the
# highest in brackets (the ratio taken round by round):
#
#   driver-tcp-stream: rust <M [lo-hi]> Mbit/s, c <M [lo-hi]> Mbit/s, ratio <M [lo-hi]>
#       a TCP stream into a socat sink, through igb_rs, then through the
#       C igb driver (the device rebound to it), same VM.
#
# (The devmem receive benchmark is bench_rx.sh's.)
#
# Under TCG the absolute numbers say little, and they swing by half from
# run to run with the host's load: the rounds interleave the two
# measurements, so that each sees the same drift, and the median leaves
# out the lucky and the starved runs. The ratios compare like with like.
# Exit status 0 when every run moved all its bytes.

set -u
MB=${BENCH_MB:-64}
ROUNDS=${BENCH_ROUNDS:-5}
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
	ip netns exec ns-remote taskset -c "$TX_CPU" socat -u "OPEN:/dev/zero,readbytes=$BYTES" \
		"TCP6:[$LOCAL_V6]:$PORT,bind=[$REMOTE_V6]:$PORT" || return 1
	t1=$(date +%s%N)
	echo $((t1 - t0))
}

mbps() { # nanoseconds
	echo "$BYTES $1" | awk '{ printf "%.0f", $1 * 8 / ($2 / 1e9) / 1e6 }'
}

# One run: "$@" starts a receiver in the background and sets RX to its
# pid, then the peer sends; adds the Mbit/s to the label's list in RUNS.
declare -A RUNS=()
round() { # label start-receiver...
	local label=$1 ns rx
	shift
	# A new port each time: the peer binds its source port to it, and the
	# last connection's may still be in TIME_WAIT.
	PORT=$((PORT + 1))
	"$@"
	rx=$RX
	listening $PORT || { log "$label: no listener"; fail=1; return; }
	if ! ns=$(send); then
		log "$label: the transfer failed"
		fail=1
		kill "$rx" 2>/dev/null
		return
	fi
	wait "$rx" || { log "$label: the receiver failed"; fail=1; }
	ns=$(mbps "$ns")
	log "$label round $r: $ns Mbit/s"
	RUNS[$label]+="$ns "
	return 0
}

# "M [LO-HI]": the median of a list of numbers with the lowest and the
# highest, as printf format $2 ("%.0f" by default); 0 without any.
spread() { # list [format]
	# shellcheck disable=SC2086 # one value a word
	printf '%s\n' ${1:-0} | sort -g |
		awk -v f="${2:-%.0f}" '{ v[NR] = $1 } END {
			m = int((NR + 1) / 2)
			printf f " [" f "-" f "]\n", (NR % 2) ? v[m] : (v[m] + v[m + 1]) / 2, v[1], v[NR]
		}'
}

# The receivers, started by round().
# shellcheck disable=SC2317
sink() {
	taskset -c "$RX_CPU" socat -u "TCP6-LISTEN:$PORT,reuseaddr" OPEN:/dev/null >/dev/null 2>&1 &
	RX=$!
}

# The two ends of a transfer as two machines: the 82576's interrupts and
# the receiving program on CPU 0, the peer's and the sending program on
# CPU 1. Left to themselves, where a flow's queue interrupts and where the
# scheduler puts the programs change from run to run, and throughput with
# them, by half.
RX_CPU=0
TX_CPU=1

place_irqs $RX_CPU $TX_CPU
# Round by round, each measurement once: the host's load drifts over a
# run, and blocks of rounds one after the other would carry that drift
# into the ratios.
c_bound=1
for r in $(seq 1 "$ROUNDS"); do
	round "igb_rs stream" sink
	if ! rebind igb $RX_CPU $TX_CPU; then
		log "could not rebind the 82576 to igb"
		c_bound=0
		fail=1
	fi
	[ "$c_bound" = 1 ] && round "igb stream" sink
	rebind igb_rs $RX_CPU $TX_CPU || { log "could not rebind the 82576 to igb_rs"; fail=1; break; }
done
# Round by round: the runs of both drivers in the order they ran.
ratios=$(paste -d ' ' <(printf '%s\n' ${RUNS[igb_rs stream]:-}) <(printf '%s\n' ${RUNS[igb stream]:-}) |
	awk 'NF == 2 && $2 > 0 { printf "%.2f ", $1 / $2 }')
echo "driver-tcp-stream: rust $(spread "${RUNS[igb_rs stream]:-}") Mbit/s, c $(spread "${RUNS[igb stream]:-}") Mbit/s, ratio $(spread "$ratios" %.2f)"
exit $fail
