#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The TX benchmarks, run in the guest by run.sh (suite bench-tx) with the
# topology wired and NETIF etc. exported; make bench boots the Rust core's
# kernel and the C core's in turn and reads the "tx-round:" lines of each
# boot (harness/bench.sh). devmem_send (built by kselftest.sh from
# harness/guest/devmem_send.c) sends to tcp_sink (harness/guest/tcp_sink.c,
# which takes the bytes without copying them) on the peer (ns-remote),
# each thread on a connection of its own; a holder
# (races.py --hold tx) binds a udmabuf of PAGES pages for TX on the 82576
# for the devmem sends. Two passes:
#
# calls: devmem sends of LEN bytes (BENCH_TX_LEN, 64), for BENCH_TX_SECS
# seconds with 1 thread and with twice the CPUs' threads. Every such
# sendmsg() looks the binding up by its id (net_devmem_get_binding): the
# many-thread figure is where a lookup that serialises its callers would
# show, and the bytes are too few for the peer to set the pace. A line a
# run, sendmsg() calls a second in all:
#
#   tx-round: calls THREADS CALLS_PER_S
#
# cpu: the sender's CPU per KiB sent, for each mode of devmem_send (send:
# a plain send() from host memory, copied; zerocopy: MSG_ZEROCOPY from
# host memory; devmem: from the bound udmabuf), at each MTU of
# BENCH_TX_MTUS on both ends and each flow count of BENCH_TX_FLOWS, sends
# of 64 KiB for BENCH_TX_CPU_SECS seconds, paced to BENCH_TX_CPU_MBPS
# (600) Mbit/s in all (devmem_send -r: SO_MAX_PACING_RATE), below what
# any mode sends unpaced here. The sender's CPU per KiB falls as its rate
# rises (larger bursts, fewer ACKs and completions per KiB), and an
# unpaced rate follows the host's scheduling of the two vCPUs, which
# differs from run to run and from boot to boot by more than the cores
# do: at one rate, every mode and both cores are measured at the same
# load. The sender runs on CPU 0 with the 82576's interrupts (its
# transmit completions and the ACKs), the sink on CPU 1 with the peer's.
# The figure is the host's: the on-CPU time of vCPU 0's thread over the
# run (harness/hostcpu.sh), which leaves out the time the vCPU waited for
# a host CPU, per KiB sent; vCPU 1's share of the run says how busy the
# sink was. A run that sent less than 90% of the offered rate has no
# figure (n/a), so no ratio, and its goals are not met. A line a run:
#
#   tx-round: cpu MODE MTU FLOWS NS_PER_KIB SINK_BUSY_PCT MBIT_PER_S
#
# Round by round, every case once, the modes' order rotating, so that the
# host's drift falls on every mode alike.
#
# profile (not run by default; make bench PROFILE=1 boots each core with
# QEMU counting the guest's instructions, harness/insncount.c, for it):
# each mode once at each MTU of BENCH_TX_MTUS, 1 flow, sends of 64 KiB
# for BENCH_TX_PROFILE_SECS seconds (3), on the cpu pass's CPUs; the
# instructions the sender's CPU ran per KiB sent, by function
# (guest/insns.py), HOSTCPU/tx.MODE.MTU.per keeping every function's
# count (and .counts, .kallsyms, .run, harness/annotate.py's input). A
# line a run:
#
#   tx-profile: MODE MTU INSNS_PER_KIB BLOCKS_PER_KIB: FUNC P%, ...
#
# "# " lines say what each run did. Exit status 0 when every run sent,
# from every thread; never on timing.

set -u
SEND=$KSFT/drivers/net/hw/devmem_send
SINK=$KSFT/drivers/net/hw/tcp_sink
SECS=${BENCH_TX_SECS:-3}
ROUNDS=${BENCH_TX_ROUNDS:-3}
LEN=${BENCH_TX_LEN:-64}
CPU_SECS=${BENCH_TX_CPU_SECS:-3}
CPU_ROUNDS=${BENCH_TX_CPU_ROUNDS:-2}
CPU_MBPS=${BENCH_TX_CPU_MBPS:-600}
PROFILE_SECS=${BENCH_TX_PROFILE_SECS:-3}
CPU_LEN=65536
MTUS=${BENCH_TX_MTUS:-1500 9000}
FLOWS=${BENCH_TX_FLOWS:-1 4}
MODES=${BENCH_TX_MODES:-send zerocopy devmem}
PASSES=${BENCH_TX_PASSES:-calls cpu}
PAGES=64
PORT=5401
THREADS="1 $(($(nproc) * 2))"
TX_CPU=0
SINK_CPU=1
fail=0

log() { echo "# $*"; }

# shellcheck source=harness/guest/lib.sh
. "$(dirname "$0")/lib.sh"

for f in "$SEND" "$SINK"; do
	[ -x "$f" ] || {
		log "no $f: run make kselftests"
		exit 1
	}
done
PEER=$(ip -n ns-remote -o link show | awk -F': ' '$2 != "lo" { sub(/@.*/, "", $2); print $2; exit }')
size=$((PAGES * $(getconf PAGESIZE)))

# The sink, tcp_sink on SINK_CPU: it takes every connection's bytes
# with recv(MSG_TRUNC), no copy, so that it keeps up with the sender.
sink=
sink_start() {
	taskset -c "$SINK_CPU" ip netns exec ns-remote "$SINK" -p "$PORT" >/dev/null 2>&1 &
	sink=$!
	listening $PORT ns-remote && return 0
	log "no sink listening on [$REMOTE_V6]:$PORT"
	return 1
}
sink_stop() {
	[ -n "$sink" ] || return 0
	kill "$sink" 2>/dev/null
	wait "$sink" 2>/dev/null
	sink=
}

# The binding, held by a process of its own until it reads "exit"; sets
# ID.
ID=
holder=
hold() {
	coproc HOLD { exec python3 "$(dirname "$0")/races.py" --hold tx \
		"$(cat "/sys/class/net/$NETIF/ifindex")" 0 "$PAGES" 2>&1; }
	holder=$HOLD_PID
	local said=
	read -r -t 120 said <&"${HOLD[0]:-}"
	ID=${said#bound }
	case "$said" in
	"bound "[0-9]*)
		log "bind-tx of a $PAGES-page udmabuf on $NETIF: binding $ID"
		return 0
		;;
	esac
	log "the holder said: ${said:-nothing}"
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	holder=
	return 1
}
# The holder lets go of the binding and exits (a dead one would have
# failed the sends).
unhold() {
	[ -n "$holder" ] || return 0
	if kill -0 "$holder" 2>/dev/null && [ -n "${HOLD[1]:-}" ]; then
		echo exit >&"${HOLD[1]}"
	fi
	wait "$holder" || { log "the holder exited with $?"; fail=1; }
	holder=
}

# One devmem_send run: mode $1, $2 threads, $3 seconds, $4 bytes a send,
# pinned to CPU $5, paced to $6 Mbit/s if given, between two host
# readings. Sets OUT (its stdout line:
# "sends N bytes N secs S threads N"), SENDS, BYTES, RUN_SECS, HOST and
# RUN_KEY (the readings' key: the instruction counts of the run, when
# QEMU counts, are HOSTCPU/insns.RUN_KEY); fails when it did.
OUT=
SENDS=0
BYTES=0
RUN_SECS=0
RUN_KEY=
send_run() { # mode threads secs len cpu [mbps]
	local err rc key
	err=$(mktemp)
	key=tx${EPOCHREALTIME/./}
	RUN_KEY=$key
	host_mark begin "$key"
	OUT=$(timeout -k 5 $(($3 + 60)) taskset -c "$5" "$SEND" -a "$REMOTE_V6" -p "$PORT" \
		-m "$1" ${ID:+-d "$ID"} -t "$2" -s "$3" -l "$4" -z "$size" ${6:+-r "$6"} 2>"$err")
	rc=$?
	host_mark end "$key"
	read -r _ SENDS _ BYTES _ RUN_SECS _ _ <<<"$OUT"
	sed 's/^# //; s/^/#   /' "$err"
	rm -f "$err"
	if [ "$rc" != 0 ] || [ "${SENDS:-0}" = 0 ]; then
		log "$1, $2 thread(s): devmem_send failed ($rc)"
		fail=1
		return 1
	fi
}

# The calls pass.
calls_pass() {
	local r n rate
	for r in $(seq 1 "$ROUNDS"); do
		for n in $THREADS; do
			send_run devmem "$n" "$SECS" "$LEN" "0-$(($(nproc) - 1))" || continue
			rate=$(echo "$SENDS $RUN_SECS" | awk '{ if ($2 > 0) printf "%.0f", $1 / $2; else print 0 }')
			log "round $r, $n thread(s): $rate calls/s; $OUT"
			echo "tx-round: calls $n $rate"
		done
	done
}

# Sets the MTU on both ends (a restart of the 82576's queues: the link
# comes back first).
set_mtu() { # mtu
	ip link set "$NETIF" mtu "$1" && ip -n ns-remote link set "$PEER" mtu "$1" &&
		wait_carrier "$NETIF" && ping -6 -c 1 -W 5 "$REMOTE_V6" >/dev/null
}

# The cpu pass, at MTU $1.
cpu_pass() { # mtu
	local mtu=$1 r n i mode per busy mbps hw hv
	local -a modes hvs
	read -ra modes <<<"$MODES"
	for r in $(seq 1 "$CPU_ROUNDS"); do
		for n in $FLOWS; do
			for i in $(seq 0 $((${#modes[@]} - 1))); do
				mode=${modes[$(((i + r - 1) % ${#modes[@]}))]}
				send_run "$mode" "$n" "$CPU_SECS" "$CPU_LEN" "$TX_CPU" "$CPU_MBPS" || continue
				per=n/a busy=n/a
				if [ -n "$HOST" ]; then
					read -r hw hv _ <<<"$HOST"
					IFS=, read -ra hvs <<<"$hv"
					per=$((${hvs[TX_CPU]:-0} * 1024 / BYTES))
					busy=$((${hvs[SINK_CPU]:-0} * 100 / (hw > 0 ? hw : 1)))
				fi
				mbps=$(echo "$BYTES $RUN_SECS" | awk '{ if ($2 > 0) printf "%.0f", $1 * 8 / $2 / 1e6; else print 0 }')
				if ((mbps * 10 < CPU_MBPS * 9)); then
					log "round $r, MTU $mtu, $n flow(s), $mode: sent $mbps Mbit/s of the $CPU_MBPS offered: no figure"
					per=n/a
				fi
				log "round $r, MTU $mtu, $n flow(s), $mode: vCPU $TX_CPU $per ns/KiB, sink's vCPU $SINK_CPU busy $busy%, $mbps Mbit/s; $OUT"
				echo "tx-round: cpu $mode $mtu $n $per $busy $mbps"
			done
		done
	done
}

# The profile pass, at MTU $1.
profile_pass() { # mtu
	local mode counts insns blocks top
	for mode in $MODES; do
		send_run "$mode" 1 "$PROFILE_SECS" "$CPU_LEN" "$TX_CPU" || continue
		counts=$HOSTCPU/insns.$RUN_KEY
		if [ ! -s "$counts" ]; then
			log "$mode, MTU $1: no instruction counts in $counts"
			fail=1
			continue
		fi
		# After the run: every module it used is loaded.
		grep ' [tTwW] ' /proc/kallsyms >"$HOSTCPU/tx.kallsyms"
		read -r insns blocks < <(python3 "$(dirname "$0")/insns.py" "$counts" \
			"$HOSTCPU/tx.kallsyms" "$TX_CPU" "$BYTES" "$HOSTCPU/tx.$mode.$1.per")
		# For harness/annotate.py (a function, instruction by
		# instruction): the raw counts, the addresses, CPU and bytes.
		mv "$counts" "$HOSTCPU/tx.$mode.$1.counts"
		mv "$HOSTCPU/tx.kallsyms" "$HOSTCPU/tx.$mode.$1.kallsyms"
		echo "$TX_CPU $BYTES" >"$HOSTCPU/tx.$mode.$1.run"
		if [ "${insns:-0}" -le 0 ]; then
			log "$mode, MTU $1: no instructions counted on CPU $TX_CPU"
			fail=1
			continue
		fi
		top=$(head -n 12 "$HOSTCPU/tx.$mode.$1.per" | awk -F '\t' -v t="$insns" '{
			printf "%s%s %.1f%%", (NR > 1 ? ", " : ""), $1, 100 * $2 / t }')
		log "$mode, MTU $1: CPU $TX_CPU ran $insns instructions per KiB sent; $OUT"
		echo "tx-profile: $mode $1 $insns $blocks: $top"
	done
}

if [[ " $PASSES " == *" profile "* ]] && ! [ -f "${HOSTCPU:-/nonexistent}/insns.req" ]; then
	log "no instruction counter: make bench PROFILE=1 boots QEMU with harness/insncount.c"
	exit 1
fi
# The kernel's addresses in /proc/kallsyms, for the profile.
echo 0 >/proc/sys/kernel/kptr_restrict
sink_start || {
	sink_stop
	exit 1
}
mtu_was=$(cat "/sys/class/net/$NETIF/mtu")
peer_mtu_was=$(ip netns exec ns-remote cat "/sys/class/net/$PEER/mtu")
for pass in $PASSES; do
	case "$pass" in
	calls)
		hold || { fail=1; continue; }
		calls_pass
		unhold
		;;
	cpu | profile)
		place_irqs $TX_CPU $SINK_CPU
		for mtu in $MTUS; do
			if ! set_mtu "$mtu"; then
				log "could not set MTU $mtu on $NETIF and $PEER"
				fail=1
				continue
			fi
			# The binding after the MTU: its sends then meet the
			# device as it runs.
			hold || { fail=1; continue; }
			if [ "$pass" = cpu ]; then
				cpu_pass "$mtu"
			else
				profile_pass "$mtu"
			fi
			unhold
		done
		ID=
		set_mtu "$mtu_was" && ip -n ns-remote link set "$PEER" mtu "$peer_mtu_was" ||
			{ log "MTU $mtu_was not restored"; fail=1; }
		;;
	*)
		log "no pass $pass"
		fail=1
		;;
	esac
done
sink_stop
exit $fail
