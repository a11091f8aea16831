#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The receive benchmarks, run in the guest by run.sh (suite bench-rx) with
# the topology wired and NETIF etc. exported, in three passes, each a run
# of this script of its own: "bench_rx.sh PASS", or all three in turn
# without an argument.
#
# standard: devmem_rx_bench (the series' selftests, next to ncdevmem)
# receives on the 82576 through igb_rs in four modes that share its
# socket code:
# devmem (the payload in a bound udmabuf, tokens given back in batches),
# copy (recv() into the same kind of udmabuf, mapped), trunc (MSG_TRUNC:
# no copy, the ceiling) and devmem-trunc (bound, MSG_TRUNC: the
# device-memory path without the tokens); and zcrx_rx_bench
# (harness/guest/zcrx_rx_bench.c, with liburing) in two more, io_uring
# zero-copy receive on the same queue, rule and header split: zcrx (the
# area in user memory) and zcrx-dmabuf (the area a udmabuf of the same
# size as devmem's), buffers given back through the refill ring. The
# peer (ns-remote, virtio-net) sends with tcp_sendfile
# (harness/guest/tcp_sendfile.c: sendfile() from a memfd, no copy from
# user space), BENCH_RX_MB MiB a run (256) over N flows to one port,
# paced to BENCH_RX_STANDARD_MBPS (500) Mbit/s in all, below what every
# mode receives unpaced here, for the reason the drivers pass gives
# (below): unpaced, copy sets its own rate (its receiver is the
# bottleneck) and devmem and zcrx the sender's, and a receiver's CPU per
# KiB falls as its load rises, so that the ratios would compare two
# loads, and each round's devmem figure would follow its rate. A run then
# lasts about four seconds: 64 MiB unpaced took half a second, short
# enough for a stall of the host to move a round's figure by a third. A
# round in which a mode received less than 90% of the offered rate has
# no ratio with it (n/a).
#
# jumbo: the same at MTU 9000 on both ends, with 16 KiB net_iovs (the
# binding's rx-page-size 16384, zcrx's rx_buf_len; the udmabuf and the
# zcrx area of every mode then come from 2 MiB huge pages): a frame's
# payload lands in one net_iov, where copy and trunc take it from several
# 2 KiB halves of host pages. Five modes (devmem-trunc left out): 50
# timed runs to the standard pass's 60, of 256 MiB each, paced the same
# way, to BENCH_RX_JUMBO_MBPS (500) Mbit/s.
#
# drivers: igb_rs against the C igb on the same rig, sender and flows,
# without devmem, at MTU 1500: each round runs every flow count on one
# driver, rebinds the 82576 to the other (rebind, lib.sh) and runs them
# there; which driver goes first alternates, so that a round starts on
# the driver the last one ended on and a round costs one rebind. The
# device ends on the driver it started with. The mode is trunc, not copy:
# the copy to user space is the same code on the same bytes whichever
# driver received them, so it adds the same to both and only pulls the
# ratio towards 1; without it, what is measured is the driver, the stack
# above it up to the socket, and the interrupts. The configuration is the
# one both drivers take: header split off, no flow rule, the default RSS
# table; each flow's ACKs leave by the transmit queue paired with the
# receive queue the flow comes in on (xps_rxqs; BENCH_RX_DRIVER_XPS=0
# leaves the choice to the socket's hash, a coin toss per connection:
# igb_rs cleans a pair's transmit ring in the poll of its receive ring,
# on one vector, and the C igb on this 2-CPU guest takes a vector for
# each ring, so where the ACKs leave would change igb_rs's interrupts
# per byte, not the C igb's, by chance from round to round). After each
# bind an untimed run (copy, every byte checked) warms the driver's
# rings and says where its interrupts come (below). The peer
# paces its flows to BENCH_RX_DRIVER_MBPS (500) Mbit/s in all, below what
# either driver receives unpaced here: a receiver's CPU per KiB falls as
# its load rises (more frames an interrupt and a poll), and an unpaced
# sender's rate follows the host's scheduling of its vCPU, which differs
# from run to run by more than the drivers differ. A run carries 1 GiB,
# about seventeen seconds at that rate: a run of four seconds can drift
# with the host by a fifth, further than the drivers differ. A round in
# which a driver received less than 90% of the offered rate has no ratio
# (n/a), so its goal is not met.
#
# Every mode of a pass runs on the same device configuration, set once
# for the pass and undone at its end; in the standard and jumbo passes:
# header split on, the RSS table on the queues below the last, a flow
# rule steering the port to the last queue (which devmem binds), the
# pass's MTU on both ends. The receiver is pinned to CPU 0 and the sender
# to CPU 1, where place_irqs puts each device's interrupts too. This guest
# refuses some of those moves: when the 82576's interrupts come on CPU 1
# in the correctness run (in the drivers pass, the untimed run after a
# bind), the two swap. The "# " lines say which CPUs took each device's
# interrupts in each run.
#
# A run's CPU cost is the host's reading (harness/hostcpu.sh, which vm.sh
# runs for make bench) of the on-CPU time of each vCPU's thread from just
# before the sender starts to the receiver's result line (printed at its
# last EOF, before it unbinds): the receiver's vCPU per KiB received is the
# figure; the peer's vCPU, and its share of the span (busy), say whether
# the sender set the pace; QEMU's other threads (device models and the hub
# between the NICs, for both ends) are printed beside. Prints, the median
# of BENCH_RX_ROUNDS rounds with the lowest and the highest in brackets,
# "M [lo-hi]" (the modes' or drivers' order rotating from round to round;
# the ratios are taken within each round, then their median and spread),
# for 1 flow and then "(N flows)" for each other count of BENCH_RX_FLOWS;
# standard:
#
#   devmem-rx-cpu: devmem A ns/KiB, copy B ns/KiB, trunc C ns/KiB, ratio copy/devmem R, devmem/trunc T
#   devmem-rx-trunc: devmem-trunc D ns/KiB, trunc C ns/KiB, ratio devmem-trunc/trunc R
#   devmem-rx-peer: devmem A ns/KiB (busy P%), copy B ns/KiB (busy Q%), trunc C ns/KiB (busy S%); other QEMU threads: ...
#   devmem-rx-zcrx: zcrx Z ns/KiB (peer busy P%), zcrx-dmabuf Y ns/KiB (peer busy Q%), devmem A ns/KiB, ratio zcrx/devmem R, zcrx-dmabuf/devmem S, copy/zcrx T
#   devmem-rx-rate: offered O Mbit/s, received devmem X Mbit/s, copy Y Mbit/s, ...
#   goal: copy/devmem at least 1.3 (MTU 1500, N flow(s)): met|NOT met (each round's ratio)
#
# jumbo (and devmem-rx-jumbo-trunc if BENCH_RX_MODES has devmem-trunc):
#
#   devmem-rx-jumbo: devmem A ns/KiB, copy B ns/KiB, trunc C ns/KiB, ratio copy/devmem R, devmem/trunc T
#   devmem-rx-jumbo-peer: devmem A ns/KiB (busy P%), copy B ns/KiB (busy Q%), trunc C ns/KiB (busy S%); other QEMU threads: ...
#   devmem-rx-jumbo-zcrx: zcrx Z ns/KiB (peer busy P%), zcrx-dmabuf ..., devmem A ns/KiB, ratio zcrx/devmem R, ...
#   devmem-rx-jumbo-rate: offered O Mbit/s, received devmem X Mbit/s, copy Y Mbit/s, ...
#   goal: copy/devmem at least 3 (MTU 9000, N flow(s)): ...
#
# drivers (rust: igb_rs, c: the C igb):
#
#   driver-rx-cpu: rust A ns/KiB, c B ns/KiB, ratio rust/c R
#   driver-rx: offered O Mbit/s, received rust X Mbit/s, c Y Mbit/s; interrupts rust I, c J a MiB
#   driver-rx-peer: rust A ns/KiB (busy P%), c B ns/KiB (busy Q%); other QEMU threads: ...
#   goal: igb_rs/igb at most 1.0 (MTU 1500, N flow(s)): ...
#
# A goal is met only when every round meets it. Without the host's
# watcher the figures are n/a. BENCH_VERBOSE=1 adds, as -guest lines, the
# guest's own busy time of each CPU (the span less the idle time the
# kernel keeps with NO_HZ, see read_idle): under TCG it counts the time a
# vCPU waited for a host CPU as busy, and disagrees with the host's by up
# to 5x.
#
# Mbit/s from the receiver's own first byte to its last EOF. Before the
# timed rounds of the standard and jumbo passes, an untimed correctness
# run: devmem, copy, zcrx and zcrx-dmabuf with -v (every byte checked)
# with the largest flow count. Exit status 0 when every run received every byte and every check
# passed; never on timing.
#
# profile (not one of the three run without an argument; make bench
# PROFILE=1 runs it, in a boot of its own whose QEMU counts the guest's
# instructions: harness/insncount.c): the standard pass's configuration
# and 1 flow, one untimed run of BENCH_RX_PROFILE_MB MiB (64) per mode
# (devmem, devmem-trunc, trunc, copy, zcrx). For each mode, the guest
# instructions the receiver's CPU ran per KiB received, between the same
# marks as a timed run's, and the functions that ran the most of them;
# then those devmem ran more of than trunc (where devmem's cost over the
# no-copy ceiling goes) and than zcrx (where the two zero-copy paths
# differ). Then the same for trunc through each driver on the
# drivers pass's configuration, and what igb_rs runs over the C igb.
# profile-devmem: the receive modes alone (make bench's C core boot);
# profile-drivers: the drivers alone (harness/annotate.py's input).
# check (not one of the three either; make check's suite devmem-rx-check):
# no timing, the standard pass's configuration and devmem receives with
# every byte checked and every batch of tokens given back twice (-v): 4
# flows of BENCH_RX_CHECK_MB MiB, then 1 flow received 1000 bytes at a
# time, so that most receives end inside a frag, then 1 flow with room
# for 3 cmsgs a receive, so that most receives end inside an skb and the
# kernel takes back the tokens it reserved for the rest, then 1 flow
# while a second thread gives back guessed tokens (devmem_rx_bench -g),
# after which every destroyed page pool must drain, and 1 flow whose
# receiver is stopped until its window closes. Prints TAP.
# Under TCG, instructions (and the translated blocks they come in) are
# what a receive path costs the host; a profiler in the guest samples the
# guest's time, which counts the vCPU's waits for a host CPU and for
# QEMU's lock in MMIO accesses.
#
#   devmem-rx-profile: MODE N insns/KiB, B blocks/KiB: FUNC P%, FUNC P%, ...
#   devmem-rx-profile-extra: devmem over trunc +N insns/KiB: FUNC +n, FUNC +n, ...
#   devmem-rx-profile-extra: devmem over zcrx +N insns/KiB: FUNC +n, FUNC +n, ...
#   driver-rx-profile: DRIVER N insns/KiB, B blocks/KiB: FUNC P%, FUNC P%, ...
#   driver-rx-profile-extra: igb_rs over igb +N insns/KiB: FUNC +n, FUNC +n, ...
#
# The BENCH_RX_* knobs apply to every pass they are given to; without
# them, each pass has its own defaults (below).

set -u
if [ $# -eq 0 ]; then
	rc=0
	for pass in standard jumbo drivers; do
		"$0" "$pass" || rc=1
	done
	exit $rc
fi
PASS=$1
case "$PASS" in
standard) mtu=1500 page='' flows='1 4' modes='devmem copy trunc devmem-trunc zcrx zcrx-dmabuf' mb=256 ;;
jumbo) mtu=9000 page=16384 flows='1 4' modes='devmem copy trunc zcrx zcrx-dmabuf' mb=256 ;;
drivers) mtu=1500 page='' flows='1 4' modes=trunc mb=1024 ;;
profile | profile-devmem | profile-drivers) mtu=1500 page='' flows=1 modes='devmem devmem-trunc trunc copy zcrx' mb=64 ;;
check) mtu=1500 page='' flows='1 4' modes=devmem mb=64 ;;
*)
	echo "usage: $0 [standard|jumbo|drivers|profile|profile-devmem|profile-drivers|check]" >&2
	exit 2
	;;
esac
BENCH=$KSFT/drivers/net/hw/devmem_rx_bench
ZCRX=$KSFT/drivers/net/hw/zcrx_rx_bench
SEND=$KSFT/drivers/net/hw/tcp_sendfile
RINGS=$(dirname "$0")/rings.py
MB=${BENCH_RX_MB:-$mb}
CHECK_MB=${BENCH_RX_CHECK_MB:-8}
ROUNDS=${BENCH_RX_ROUNDS:-5}
FLOWS=${BENCH_RX_FLOWS:-$flows}
# The drivers pass runs trunc alone, whatever the knob says.
MODES=${BENCH_RX_MODES:-$modes}
[ "$PASS" = drivers ] && MODES=$modes
MTU=${BENCH_RX_MTU:-$mtu}
# rx-page-size of the binding (e.g. 16384); the udmabuf then comes from
# 2 MiB huge pages. Empty: the page size.
PAGE=${BENCH_RX_PAGE-$page}
# The drivers pass: the Rust driver and the C one, both fed at the same
# offered load, DRIVER_MBPS Mbit/s (all flows together; see drivers_pass).
RUST_DRV=igb_rs
C_DRV=igb
DRIVER_MBPS=${BENCH_RX_DRIVER_MBPS:-500}
# The standard and jumbo passes' offered loads (see those passes above).
STANDARD_MBPS=${BENCH_RX_STANDARD_MBPS:-500}
JUMBO_MBPS=${BENCH_RX_JUMBO_MBPS:-500}
# 1: the drivers pass sends each flow's ACKs by its own queue pair
# (xps_rxqs, set_xps_rxqs); 0: by the queue the socket's hash picks.
DRIVER_XPS=${BENCH_RX_DRIVER_XPS:-1}
# The sender's rate (tcp_sendfile -r), when a pass paces it.
PACE=
# A run's bound: a test's (vm.sh's TEST_TIMEOUT, 300 s; 900 s on the
# debug kernel, whose checkers slow every receive).
RUN_TIMEOUT=${TEST_TIMEOUT:-300}
PORT=5601
RX_CPU=0
TX_CPU=1
HZ=$(getconf CLK_TCK)
fail=0

log() { echo "# $*"; }

# shellcheck source=harness/guest/lib.sh
. "$(dirname "$0")/lib.sh"

progs=("$BENCH" "$SEND")
[[ " $MODES " == *" zcrx"* ]] && progs+=("$ZCRX")
for f in "${progs[@]}"; do
	[ -x "$f" ] || {
		log "no $f: run make kselftests"
		exit 1
	}
done

# Idle time of every CPU since boot, in ns, IDLE[n] for CPU n (idle and
# iowait from /proc/stat), read with shell builtins only: no process of
# ours runs on either CPU while it reads. With NO_HZ the kernel keeps
# idle time from the idle loop's own entry and exit times, not from ticks
# (the busy fields are tick samples: at HZ 250 a run's few hundred
# milliseconds of busy time would be a hundred samples, +-10% and worse);
# /proc/stat prints it in USER_HZ units, so a reading is within one of
# those. A CPU's busy time over a span is the span less its idle time.
declare -a IDLE=()
read_idle() {
	local name idle iowait
	while read -r name _ _ _ idle iowait _; do
		case "$name" in
		cpu[0-9]*) IDLE[${name#cpu}]=$(((idle + iowait) * 1000000000 / HZ)) ;;
		esac
	done </proc/stat
}

# The interrupts of PCI device $1 (a sysfs directory) so far: a line
# "NAME n0 n1 ..." for each of its vectors, NAME the handler's as
# /proc/interrupts has it ("enp0s10-rx-0", "igb_rs-rxtx-1", ...), nC the
# count on CPU C.
irqs_of() { # pci-dir
	local irqs
	irqs=$(ls "$1/msi_irqs" 2>/dev/null)
	awk -v list="$irqs" '
		BEGIN { n = split(list, l); for (i = 1; i <= n; i++) want[l[i] ":"] = 1 }
		NR == 1 { ncpu = NF; next }
		$1 in want {
			printf "%s", $NF
			for (c = 1; c <= ncpu; c++) printf " %d", $(c + 1)
			print ""
		}' /proc/interrupts
}

# Between two irqs_of readings, the interrupts on each CPU, all vectors
# together: "d0 d1 ...".
cpu_delta() { # before after
	awk 'FILENAME == ARGV[1] { for (c = 2; c <= NF; c++) d[c - 1] -= $c }
		FILENAME != ARGV[1] { for (c = 2; c <= NF; c++) d[c - 1] += $c }
		NF - 1 > n { n = NF - 1 }
		END { for (c = 1; c <= n; c++) printf "%s%d", (c > 1 ? " " : ""), d[c] }' \
		<(echo "$1") <(echo "$2")
}

# Between two irqs_of readings, "NAME +d, ..." for each vector that took
# interrupts, all CPUs together.
vector_delta() { # before after
	awk 'function total(   c, t) { for (c = 2; c <= NF; c++) t += $c; return t }
		FILENAME == ARGV[1] { a[$1] = total(); next }
		total() > a[$1] { printf "%s%s +%d", (n++ ? ", " : ""), $1, total() - a[$1] }' \
		<(echo "$1") <(echo "$2")
}

# "cpuN +d, ..." for a cpu_delta.
cpu_list() { # delta
	awk -v d="$1" 'BEGIN {
		n = split(d, x)
		for (c = 1; c <= n; c++) printf "%scpu%d +%d", (c > 1 ? ", " : ""), c - 1, x[c]
	}'
}

# The device configuration every mode shares, and what it was before.
RULE=
SPLIT_WAS=
MTU_WAS=
PEER_MTU_WAS=
HUGE_WAS=
# devmem_rx_bench's arguments naming the device and the bound queue: the
# standard and jumbo passes only (with them it checks that header split
# is on, which the C igb does not do).
DEV_ARGS=()
PEER=$(ip -n ns-remote -o link show | awk -F': ' '$2 != "lo" { sub(/@.*/, "", $2); print $2; exit }')
# What every pass sets: the MTU on both ends, and with PAGE, huge pages
# for the udmabuf.
setup_common() {
	DUT_PCI=$(readlink -f "/sys/class/net/$NETIF/device")
	# The virtio device's parent is its PCI function.
	PEER_PCI=$(ip netns exec ns-remote readlink -f "/sys/class/net/$PEER/device/..")
	MTU_WAS=$(cat "/sys/class/net/$NETIF/mtu")
	PEER_MTU_WAS=$(ip netns exec ns-remote cat "/sys/class/net/$PEER/mtu")
	if [ "$MTU" != "$MTU_WAS" ] || [ "$MTU" != "$PEER_MTU_WAS" ]; then
		ip link set "$NETIF" mtu "$MTU" && ip -n ns-remote link set "$PEER" mtu "$MTU" || return 1
	fi
	if [ -n "$PAGE" ] && [ "$(cat /proc/sys/vm/nr_hugepages)" -lt 64 ]; then
		# devmem_rx_bench's udmabuf: 16000 pages, in 2 MiB huge pages.
		HUGE_WAS=$(cat /proc/sys/vm/nr_hugepages)
		echo 64 >/proc/sys/vm/nr_hugepages || return 1
		[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 32 ] || {
			log "only $(cat /proc/sys/vm/nr_hugepages) huge pages: the udmabuf needs 32"
			return 1
		}
	fi
	return 0
}
setup() {
	local nq out
	setup_common || return 1
	nq=$(find "/sys/class/net/$NETIF/queues" -name 'rx-*' | wc -l)
	[ "$nq" -ge 2 ] || {
		log "$NETIF has $nq receive queue(s): the bound queue needs another for the rest"
		return 1
	}
	QUEUE=$((nq - 1))
	DEV_ARGS=(-f "$NETIF" -q "$QUEUE")
	SPLIT_WAS=$(python3 "$RINGS" "$NETIF" get | awk '{ print $2 }')
	python3 "$RINGS" "$NETIF" split on || return 1
	# As ncdevmem: RSS on the other queues, the port's flows on QUEUE.
	ethtool -X "$NETIF" equal "$QUEUE" || return 1
	out=$(ethtool -N "$NETIF" flow-type tcp6 dst-ip "$LOCAL_V6" dst-port "$PORT" action "$QUEUE") ||
		return 1
	RULE=$(sed -n 's/^Added rule with ID \([0-9]*\)$/\1/p' <<<"$out")
	[ -n "$RULE" ] || {
		log "ethtool -N said: $out"
		return 1
	}
	wait_carrier "$NETIF" && ping -6 -c 1 -W 5 "$REMOTE_V6" >/dev/null || return 1
	place_irqs $RX_CPU $TX_CPU
	log "$NETIF: header split on, RSS on queues 0-$((QUEUE - 1)), rule $RULE: port $PORT to queue $QUEUE, MTU $MTU${PAGE:+, rx-page-size $PAGE}"
}
teardown_common() {
	local rc=0
	if [ -n "$MTU_WAS" ] && [ "$MTU_WAS" != "$(cat "/sys/class/net/$NETIF/mtu")" ]; then
		ip link set "$NETIF" mtu "$MTU_WAS" || { log "$NETIF: MTU $MTU_WAS not restored"; rc=1; }
	fi
	if [ -n "$PEER_MTU_WAS" ]; then
		ip -n ns-remote link set "$PEER" mtu "$PEER_MTU_WAS" ||
			{ log "peer $PEER: MTU $PEER_MTU_WAS not restored"; rc=1; }
	fi
	if [ -n "$HUGE_WAS" ]; then
		echo "$HUGE_WAS" >/proc/sys/vm/nr_hugepages ||
			{ log "nr_hugepages $HUGE_WAS not restored"; rc=1; }
	fi
	return $rc
}
teardown() {
	local rc=0
	if [ -n "$RULE" ]; then
		ethtool -N "$NETIF" delete "$RULE" || rc=1
	fi
	ethtool -X "$NETIF" default || rc=1
	if [ -n "$SPLIT_WAS" ] && [ "$SPLIT_WAS" != enabled ]; then
		python3 "$RINGS" "$NETIF" split off || rc=1
	fi
	teardown_common || rc=1
	[ "$rc" = 0 ] || log "could not undo the device configuration"
	return $rc
}

# One run: devmem_rx_bench in mode $1 receives $3 bytes over $2 flows,
# with extra arguments after them. Sets RES[key] to the receiver's result
# line's values, and RX_NS, TX_NS (the two CPUs' busy time), WIN_US (the
# span they were measured over), DUT_DELTA (the 82576's interrupts on
# each CPU, "n0 n1 ..."), DUT_IRQS (their sum), IRQS (both devices'
# interrupts, the 82576's vector by vector too, to log) and
# SENT (the sender's line) and HOST (the host's reading, host_mark);
# returns non-zero when anything failed. The receiver's stdout is a FIFO:
# its first line says it listens, its last one comes at its last EOF,
# which ends the measured span; it then closes the connections (the
# sender waits for that) and waits (-w) for its stdin, another FIFO, to
# close before it unbinds, so that the host's reading at the end does not
# include the unbinding.
declare -A RES=()
DUT_IRQS=0
run() { # mode flows bytes [args...]
	local mode=$1 n=$2 per=$(($3 / $2)) dir line kv rxfd rxpid spid rc src infd key
	local prog=$BENCH
	local -a b0 b1
	local irq0 irq1 pirq0 pirq1 t0 t1 wpid
	shift 3
	RES=()
	[[ $mode == zcrx* ]] && prog=$ZCRX
	dir=$(mktemp -d)
	mkfifo "$dir/out" "$dir/in"
	timeout -k 5 "$RUN_TIMEOUT" taskset -c "$RX_CPU" "$prog" \
		-s "$LOCAL_V6" -p "$PORT" -m "$mode" -n "$n" "${DEV_ARGS[@]}" \
		-e "$per" ${PAGE:+-z "$PAGE"} -w "$@" <"$dir/in" >"$dir/out" 2>"$dir/err" &
	rxpid=$!
	exec {infd}>"$dir/in"
	exec {rxfd}<"$dir/out"
	line=
	read -r -t 120 line <&"$rxfd"
	if [ "$line" != "listening port=$PORT" ]; then
		log "$mode, $n flow(s): the receiver did not listen: ${line:-nothing}"
		kill "$rxpid" 2>/dev/null
		exec {infd}>&-
		wait "$rxpid"
		exec {rxfd}<&-
		sed 's/^/#   /' "$dir/err"
		rm -rf "$dir"
		return 1
	fi
	# Unique across the passes and suites of a boot, which share the
	# files: the time in microseconds.
	key=run${EPOCHREALTIME/./}
	RUN_KEY=$key
	host_mark begin "$key"
	irq0=$(irqs_of "$DUT_PCI")
	pirq0=$(irqs_of "$PEER_PCI")
	read_idle
	t0=$EPOCHREALTIME
	b0=("${IDLE[@]}")
	# From the peer's CPU, the launch included.
	taskset -c "$TX_CPU" ip netns exec ns-remote "$SEND" -a "$LOCAL_V6" -p "$PORT" \
		-n "$n" -b "$per" ${PACE:+-r "$PACE"} >"$dir/sent" 2>&1 &
	spid=$!
	stall_watch "$rxpid" "$dir/stall" &
	wpid=$!
	[ -z "${RX_PAUSE:-}" ] || pause_receiver "$rxpid" "$RX_PAUSE"
	line=
	read -r -t "$RUN_TIMEOUT" line <&"$rxfd"
	t1=$EPOCHREALTIME
	# A watcher writing its dump finishes it (it ignores TERM then).
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	read_idle
	b1=("${IDLE[@]}")
	irq1=$(irqs_of "$DUT_PCI")
	pirq1=$(irqs_of "$PEER_PCI")
	wait "$spid"
	src=$?
	host_mark end "$key"
	exec {infd}>&-
	wait "$rxpid"
	rc=$?
	exec {rxfd}<&-
	SENT=$(cat "$dir/sent")
	for kv in $line; do
		case "$kv" in
		*=*) RES[${kv%%=*}]=${kv#*=} ;;
		esac
	done
	WIN_US=$((10#${t1/./} - 10#${t0/./}))
	RX_NS=$((WIN_US * 1000 - (b1[RX_CPU] - b0[RX_CPU])))
	TX_NS=$((WIN_US * 1000 - (b1[TX_CPU] - b0[TX_CPU])))
	((RX_NS < 0)) && RX_NS=0
	((TX_NS < 0)) && TX_NS=0
	DUT_DELTA=$(cpu_delta "$irq0" "$irq1")
	DUT_IRQS=$(awk '{ for (i = 1; i <= NF; i++) s += $i } END { print s + 0 }' <<<"$DUT_DELTA")
	IRQS="82576 $(cpu_list "$DUT_DELTA") ($(vector_delta "$irq0" "$irq1")); peer $(cpu_list "$(cpu_delta "$pirq0" "$pirq1")")"
	if [ "$rc" != 0 ] || [ "$src" != 0 ] || [ "${RES[bytes]:-0}" != $((per * n)) ] ||
		[ "${RES[wall_ns]:-0}" = 0 ]; then
		log "$mode, $n flow(s): failed (receiver $rc, sender $src); it said: ${line:-nothing}"
		sed 's/^/#   /' "$dir/err" "$dir/sent"
		if [ -s "$dir/stall" ]; then
			log "no byte received for ${STALL_S} s; then:"
			sed 's/^/#   /' "$dir/stall"
		fi
		rm -rf "$dir"
		return 1
	fi
	rm -rf "$dir"
	if [[ $mode == zcrx* ]] && ! zcrx_released; then
		log "$mode, $n flow(s): queue $QUEUE still has io_uring's memory provider 30 s after the receiver exited"
		return 1
	fi
	return 0
}

# Whether the bound queue has no io_uring memory provider (waiting up to
# 30 s): io_uring closes a zcrx interface queue in a work item after its
# ring's last reference is gone, not by the time the receiver has exited,
# and the next run would find the queue taken.
zcrx_released() {
	local i out
	for ((i = 0; i < 30; i++)); do
		out=$(python3 "$KSRC/tools/net/ynl/pyynl/cli.py" \
			--spec "$KSRC/Documentation/netlink/specs/netdev.yaml" \
			--do queue-get --output-json \
			--json "{\"ifindex\": $(cat "/sys/class/net/$NETIF/ifindex"), \"id\": $QUEUE, \"type\": \"rx\"}") ||
			return 1
		grep -q '"io-uring"' <<<"$out" || return 0
		sleep 1
	done
	return 1
}

# Values of the timed runs: VALS["flows mode what"] is a list, one a run.
declare -A VALS=()
add() { # key value
	VALS[$1]+="$2 "
}

# x/y with two decimals, n/a when either is 0, n/a or missing.
div() {
	echo "${1:-0} ${2:-0}" | awk '{ if ($1 + 0 > 0 && $2 + 0 > 0) printf "%.2f", $1 / $2; else printf "n/a" }'
}

# The median of a list of numbers, as printf format $2 ("%.0f" by
# default); n/a without any.
median() { # key [format]
	# shellcheck disable=SC2086 # one value a word
	printf '%s\n' ${VALS[$1]:-} | awk 'NF && $1 != "n/a"' | sort -g |
		awk -v f="${2:-%.0f}" '{ v[NR] = $1 } END {
			if (!NR) { print "n/a"; exit }
			m = int((NR + 1) / 2)
			printf f "\n", (NR % 2) ? v[m] : (v[m] + v[m + 1]) / 2
		}'
}

# One timed run of mode $1 with $2 flows in round $3; records its values
# under $4 (the mode by default; the drivers pass names the driver).
timed() { # mode flows round [label]
	local mode=$1 n=$2 what=${4:-$1} bytes wall per own tx_per mbps rxb txb sender
	local hw hv ho hrx=n/a htx=n/a hoth=n/a host_log=
	local -a hvs
	if ! run "$mode" "$n" $((MB * 1024 * 1024)); then
		fail=1
		return
	fi
	bytes=${RES[bytes]}
	wall=${RES[wall_ns]}
	# A CPU whose idle time came out as long as the span or longer (the
	# guest's idle clock and its wall clock disagree under TCG: seen on
	# the receiver's CPU, busy with the run) has no busy time to give:
	# n/a, which the medians and ratios leave out, not 0.
	per=n/a tx_per=n/a rxb=n/a txb=n/a
	if ((RX_NS > 0)); then
		per=$((RX_NS * 1024 / bytes))
		rxb=$((RX_NS / 10 / (WIN_US > 0 ? WIN_US : 1)))
	fi
	if ((TX_NS > 0)); then
		tx_per=$((TX_NS * 1024 / bytes))
		txb=$((TX_NS / 10 / (WIN_US > 0 ? WIN_US : 1)))
	fi
	own=$(((RES[user_ns] + RES[sys_ns]) * 1024 / bytes))
	mbps=$((bytes * 8000 / wall))
	read -r _ _ _ _ _ sender <<<"$SENT"
	if [ -n "$HOST" ]; then
		read -r hw hv ho <<<"$HOST"
		IFS=, read -ra hvs <<<"$hv"
		hrx=$((${hvs[RX_CPU]:-0} * 1024 / bytes))
		htx=$((${hvs[TX_CPU]:-0} * 1024 / bytes))
		hoth=$((ho * 1024 / bytes))
		host_log="; host: vCPU $RX_CPU $hrx ns/KiB, vCPU $TX_CPU $htx ns/KiB, other QEMU threads $hoth ns/KiB over $((hw / 1000000)) ms"
	fi
	log "round $3, $n flow(s), ${4:+$4, }$mode: $mbps Mbit/s; CPU $RX_CPU $per ns/KiB (busy $rxb%, the receiver itself $own ns/KiB); peer CPU $TX_CPU $tx_per ns/KiB (busy $txb%, the sender itself $((${sender:-0} * 1024 / bytes)) ns/KiB); over $((WIN_US / 1000)) ms$host_log; interrupts: $IRQS; recvs ${RES[recvs]:-n/a} frags ${RES[frags]:-n/a} ranges ${RES[ranges]:-n/a} dontneed ${RES[dontneed]:-n/a}${RES[linear_bytes]:+ linear ${RES[linear_bytes]} B}${RES[rearms]:+ rearms ${RES[rearms]}}"
	add "$n $what host" "$hrx"
	add "$n $what host peer" "$htx"
	[ -z "$HOST" ] || add "$n $what host busy" $((${hvs[TX_CPU]:-0} * 100 / (hw > 0 ? hw : 1)))
	add "$n $what host other" "$hoth"
	ROUND["$n $what host"]=$hrx
	add "$n $what cpu" "$per"
	add "$n $what peer" "$tx_per"
	add "$n $what busy" "$txb"
	add "$n $what mbps" "$mbps"
	add "$n $what irqs" $((DUT_IRQS * 1048576 / bytes))
	ROUND["$n $what cpu"]=$per
	ROUND["$n $what mbps"]=$mbps
}

# Where the 82576's interrupts came in the last run: when place_irqs could
# not move them (this QEMU guest refuses some affinity writes) and they
# came on the sender's CPU, the two swap, so that the receiving program
# shares its CPU with its own device's interrupts, as on a real receiver.
pick_cpus() {
	local cpu
	cpu=$(awk '{ m = 1; for (c = 2; c <= NF; c++) if ($c > $m) m = c; if (NF && $m > 0) print m - 1 }' \
		<<<"${DUT_DELTA:-}")
	[ -n "$cpu" ] && [ "$cpu" != "$RX_CPU" ] || return 0
	log "the 82576's interrupts came on CPU $cpu (${DUT_DELTA// /, }): the receiver runs there, the sender on CPU $RX_CPU"
	TX_CPU=$RX_CPU
	RX_CPU=$cpu
	pin_others
}

# The median of flow count n's values of what.
med() { median "$n $1"; }

# "M [LO-HI]": the median of a list of numbers with the lowest and the
# highest, as printf format $2 ("%.0f" by default); n/a without any.
spread() { # key [format]
	# shellcheck disable=SC2086 # one value a word
	printf '%s\n' ${VALS[$1]:-} | awk 'NF && $1 != "n/a"' | sort -g |
		awk -v f="${2:-%.0f}" '{ v[NR] = $1 } END {
			if (!NR) { print "n/a"; exit }
			m = int((NR + 1) / 2)
			printf f " [" f "-" f "]\n", (NR % 2) ? v[m] : (v[m] + v[m + 1]) / 2, v[1], v[NR]
		}'
}
sp() { spread "$n $1"; }
spr() { spread "$n $1" %.2f; }

# "goal: TEXT: met (R R ...)" when every round's value of key meets
# "OP BOUND" (awk's >= or <=), "NOT met (...)" otherwise.
goal() { # key op bound text
	# shellcheck disable=SC2086 # one value a word
	printf '%s\n' ${VALS[$1]:-} | awk -v op="$2" -v b="$3" -v t="$4" '
		NF { v = v (n++ ? " " : "") $1
			if ($1 == "n/a" || (op == ">=" && $1 + 0 < b) || (op == "<=" && $1 + 0 > b)) bad = 1 }
		END { printf "goal: %s: %s (%s)\n", t, (n && !bad) ? "met" : "NOT met", n ? v : "no rounds" }'
}

# The zcrx-dmabuf part of the zcrx line, for flow count n, when the pass
# runs it: its figure, or with "ratio" its ratio to devmem.
zcrx_dmabuf() { # [ratio]
	case " $MODES " in
	*" zcrx-dmabuf "*) ;;
	*) return 0 ;;
	esac
	if [ -n "${1:-}" ]; then
		printf ', zcrx-dmabuf/devmem %s' "$(spr "zcrx-dmabuf/devmem host")"
	else
		printf ', zcrx-dmabuf %s ns/KiB (peer busy %s%%)' "$(sp "zcrx-dmabuf host")" "$(med "zcrx-dmabuf host busy")"
	fi
}

# The modes of this round and flow count that received less than 90% of
# a paced sender's rate, as " mode mode ... ".
SHORT=' '
# Adds to "n KEY" this round's ratio of mode A's figure FIG to mode B's,
# for flow count n: n/a when either has none, or is in SHORT (not the
# same load on both).
paired() { # key a b fig
	case "$SHORT" in
	*" $2 "* | *" $3 "*)
		add "$n $1" n/a
		return 0
		;;
	esac
	add "$n $1" "$(div "${ROUND[$n $2 $4]:-}" "${ROUND[$n $3 $4]:-}")"
}

# " mode R [LO-HI] Mbit/s, ..." for every mode of the pass, flow count n.
received() {
	local mode sep=''
	for mode in $MODES; do
		printf '%s %s %s Mbit/s' "$sep" "$mode" "$(sp "$mode mbps")"
		sep=,
	done
}

# The standard and jumbo passes: every mode on one device configuration.
modes_pass() {
	local max=0 n mode r i cpu_line peer_line trunc_line rate_line zcrx_line sfx busy
	local -a modes
	if ! setup; then
		log "could not configure $NETIF for the benchmark"
		teardown
		return 1
	fi
	# The correctness run, untimed: every byte checked where it landed.
	for n in $FLOWS; do
		[ "$n" -gt "$max" ] && max=$n
	done
	for mode in devmem copy zcrx zcrx-dmabuf; do
		case " $MODES " in
		*" $mode "*) ;;
		*) continue ;;
		esac
		if run "$mode" "$max" $((CHECK_MB * 1024 * 1024)) -v; then
			log "correctness: $mode, $max flow(s), $CHECK_MB MiB, every byte checked: ok (frags ${RES[frags]}, ranges ${RES[ranges]}, dontneed ${RES[dontneed]})"
		else
			log "correctness: $mode, $max flow(s): FAILED"
			fail=1
		fi
	done
	pick_cpus
	PACE=$STANDARD_MBPS
	[ "$PASS" = jumbo ] && PACE=$JUMBO_MBPS
	log "the peer sends $PACE Mbit/s in the timed runs"

	# Round by round, every mode once for each flow count, the modes'
	# order rotating: the host's load drifts, and a fixed order would give
	# one mode the same place in it every round.
	read -ra modes <<<"$MODES"
	for r in $(seq 1 "$ROUNDS"); do
		for n in $FLOWS; do
			ROUND=()
			for i in $(seq 0 $((${#modes[@]} - 1))); do
				timed "${modes[$(((i + r - 1) % ${#modes[@]}))]}" "$n" "$r"
			done
			SHORT=' '
			for mode in "${modes[@]}"; do
				kept_up "$n" "$mode" || SHORT+="$mode "
			done
			paired copy/devmem copy devmem cpu
			paired devmem/trunc devmem trunc cpu
			paired devmem-trunc/trunc devmem-trunc trunc cpu
			paired "devmem-trunc/trunc host" devmem-trunc trunc host
			paired "copy/devmem host" copy devmem host
			paired "devmem/trunc host" devmem trunc host
			paired "zcrx/devmem host" zcrx devmem host
			paired "zcrx-dmabuf/devmem host" zcrx-dmabuf devmem host
			paired "copy/zcrx host" copy zcrx host
		done
	done
	local offered=$PACE
	PACE=

	teardown || fail=1

	if [ "$PASS" = jumbo ]; then
		cpu_line=devmem-rx-jumbo trunc_line=devmem-rx-jumbo-trunc
		peer_line=devmem-rx-jumbo-peer zcrx_line=devmem-rx-jumbo-zcrx
		rate_line=devmem-rx-jumbo-rate
	else
		cpu_line=devmem-rx-cpu trunc_line=devmem-rx-trunc
		peer_line=devmem-rx-peer zcrx_line=devmem-rx-zcrx
		rate_line=devmem-rx-rate
	fi
	for n in $FLOWS; do
		sfx=
		[ "$n" = 1 ] || sfx=" ($n flows)"
		echo "$cpu_line: devmem $(sp "devmem host") ns/KiB, copy $(sp "copy host") ns/KiB, trunc $(sp "trunc host") ns/KiB, ratio copy/devmem $(spr "copy/devmem host"), devmem/trunc $(spr "devmem/trunc host")$sfx"
		case " $MODES " in
		*" devmem-trunc "*)
			echo "$trunc_line: devmem-trunc $(sp "devmem-trunc host") ns/KiB, trunc $(sp "trunc host") ns/KiB, ratio devmem-trunc/trunc $(spr "devmem-trunc/trunc host")$sfx"
			;;
		esac
		echo "$peer_line: devmem $(sp "devmem host peer") ns/KiB (busy $(med "devmem host busy")%), copy $(sp "copy host peer") ns/KiB (busy $(med "copy host busy")%), trunc $(sp "trunc host peer") ns/KiB (busy $(med "trunc host busy")%); other QEMU threads: devmem $(sp "devmem host other"), copy $(sp "copy host other"), trunc $(sp "trunc host other") ns/KiB$sfx"
		case " $MODES " in
		*" zcrx "*)
			echo "$zcrx_line: zcrx $(sp "zcrx host") ns/KiB (peer busy $(med "zcrx host busy")%)$(zcrx_dmabuf), devmem $(sp "devmem host") ns/KiB, ratio zcrx/devmem $(spr "zcrx/devmem host")$(zcrx_dmabuf ratio), copy/zcrx $(spr "copy/zcrx host")$sfx"
			;;
		esac
		echo "$rate_line: offered $offered Mbit/s, received$(received)$sfx"
		if [ -n "${BENCH_VERBOSE:-}" ]; then
			echo "$cpu_line-guest: devmem $(sp "devmem cpu") ns/KiB, copy $(sp "copy cpu") ns/KiB, trunc $(sp "trunc cpu") ns/KiB, ratio copy/devmem $(spr copy/devmem), devmem/trunc $(spr devmem/trunc); peer: devmem $(sp "devmem peer"), copy $(sp "copy peer"), trunc $(sp "trunc peer") ns/KiB (the guest's busy time, which under TCG counts the vCPU's waits for a host CPU)$sfx"
		fi
		case "$PASS" in
		standard) goal "$n copy/devmem host" ">=" 1.3 "copy/devmem at least 1.3 (MTU $MTU, $n flow(s))" ;;
		jumbo) goal "$n copy/devmem host" ">=" 3 "copy/devmem at least 3 (MTU $MTU, $n flow(s))" ;;
		esac
		for mode in $MODES; do
			busy=$(med "$mode host busy")
			# An if, not &&: a false test as the function's last command
			# would be its exit status, and fail the pass.
			if [ "$busy" != n/a ] && [ "$busy" -ge 90 ]; then
				log "$n flow(s), $mode: the peer's vCPU was busy $busy% of the time: the sender may have set the pace"
			fi
		done
	done
}

# The driver the 82576 is bound to.
driver_now() {
	basename "$(readlink -f "$DUT_PCI/driver" 2>/dev/null)" 2>/dev/null
}

# Binds the 82576 to driver $1 unless it has it already, and sets the
# pass's MTU on it (a new interface starts at 1500) and, with DRIVER_XPS,
# the flows' ACKs on their own queue pair (a new interface has no XPS).
bind_driver() { # driver
	[ "$(driver_now)" = "$1" ] && return 0
	rebind "$1" "$RX_CPU" "$TX_CPU" || return 1
	if [ "$MTU" != "$(cat "/sys/class/net/$NETIF/mtu")" ]; then
		ip link set "$NETIF" mtu "$MTU" && wait_carrier "$NETIF" || return 1
	fi
	[ "$DRIVER_XPS" = 1 ] || return 0
	set_xps_rxqs pair
}

# After a bind: an untimed run through the driver, copy with every byte
# checked, which warms its rings and says where its interrupts come.
check_driver() { # driver
	local max=0 n
	for n in $FLOWS; do
		[ "$n" -gt "$max" ] && max=$n
	done
	if run copy "$max" $((CHECK_MB * 1024 * 1024)) -v; then
		log "correctness: $1, copy, $max flow(s), $CHECK_MB MiB, every byte checked: ok"
	else
		log "correctness: $1, copy, $max flow(s): FAILED"
		fail=1
	fi
	pick_cpus
}

# XPS by receive queue on the 82576: with "pair", transmit queue N
# sends the packets of the sockets whose packets come in on receive
# queue N (the flows' ACKs leave by their own queue pair); with "off",
# the stack picks by the socket's hash, as by default.
set_xps_rxqs() { # pair|off
	local q i
	for q in /sys/class/net/"$NETIF"/queues/tx-*; do
		[ -e "$q" ] || continue
		i=${q##*tx-}
		if [ "$1" = pair ]; then
			printf '%x' $((1 << i))
		else
			echo 0
		fi >"$q/xps_rxqs" || {
			log "$NETIF: tx-$i: xps_rxqs refused"
			return 1
		}
	done
	[ "$1" = off ] ||
		log "$(driver_now): transmit queue N sends for the sockets of receive queue N (xps_rxqs)"
}

# The configuration the drivers take, both: the two drivers loaded, the
# pass's MTU, header split off (the C igb has none). Sets START, the
# driver the 82576 had, and NIC_PCI, rebind's device whatever the
# interface is called by then.
START=
drivers_setup() {
	local drv
	for drv in "$RUST_DRV" "$C_DRV"; do
		[ -d "/sys/bus/pci/drivers/$drv" ] || modprobe "$drv" 2>/dev/null
		[ -d "/sys/bus/pci/drivers/$drv" ] || {
			log "no $drv driver in this kernel"
			return 1
		}
	done
	if ! setup_common; then
		log "could not configure $NETIF for the benchmark"
		teardown_common
		return 1
	fi
	START=$(driver_now)
	NIC_PCI=$(basename "$DUT_PCI")
	if [ "$DRIVER_XPS" = 1 ] && ! set_xps_rxqs pair; then
		teardown_common
		return 1
	fi
	SPLIT_WAS=$(python3 "$RINGS" "$NETIF" get | awk '{ print $2 }')
	if [ "$SPLIT_WAS" = enabled ]; then
		python3 "$RINGS" "$NETIF" split off || {
			log "could not turn header split off on $NETIF"
			teardown_common
			return 1
		}
	fi
}

# Back on the driver drivers_setup found, as it was.
drivers_teardown() {
	local rc=0
	if ! DRIVER_XPS=0 bind_driver "${START:-$RUST_DRV}"; then
		log "could not bind the 82576 back to ${START:-$RUST_DRV}"
		rc=1
	fi
	set_xps_rxqs off || rc=1
	if [ "$SPLIT_WAS" = enabled ]; then
		python3 "$RINGS" "$NETIF" split on || {
			log "$NETIF: header split not back on"
			rc=1
		}
	fi
	teardown_common || rc=1
	return $rc
}

# Whether the run of driver or mode $2 with $1 flows this round received
# at 90% of the offered load (PACE) or more; logs it when not.
kept_up() { # flows driver|mode
	local got=${ROUND[$1 $2 mbps]:-0}
	((got * 10 >= PACE * 9)) && return 0
	log "round $r, $1 flow(s), $2: received $got Mbit/s of the $PACE offered: no ratio this round"
	return 1
}

# The drivers pass: igb_rs and the C igb, the device rebound between them.
drivers_pass() {
	local drv r i n sfx mode busy
	local -a drivers=("$RUST_DRV" "$C_DRV")
	mode=$MODES
	drivers_setup || return 1
	# Header split off restarted the queues: give the link a moment.
	if ! { wait_carrier "$NETIF" && ping -6 -c 3 -i 0.5 -W 5 "$REMOTE_V6" >/dev/null; }; then
		log "$NETIF: no carrier, or no answer from $REMOTE_V6, after header split went off"
		fail=1
	fi
	place_irqs $RX_CPU $TX_CPU
	log "$NETIF on $START: header split off, the default RSS table, MTU $MTU; mode $mode; the peer sends $DRIVER_MBPS Mbit/s"
	PACE=$DRIVER_MBPS
	check_driver "$START"

	# Round r runs the drivers in the order rotated by r - 1: with two,
	# round r + 1 starts on the driver round r ended on.
	for r in $(seq 1 "$ROUNDS"); do
		ROUND=()
		for i in 0 1; do
			drv=${drivers[$(((i + r - 1) % 2))]}
			if [ "$(driver_now)" != "$drv" ]; then
				if ! bind_driver "$drv"; then
					log "could not bind the 82576 to $drv"
					fail=1
					continue
				fi
				check_driver "$drv"
			fi
			for n in $FLOWS; do
				timed "$mode" "$n" "$r" "$drv"
			done
		done
		for n in $FLOWS; do
			add "$n rust/c" "$(div "${ROUND[$n $RUST_DRV cpu]:-}" "${ROUND[$n $C_DRV cpu]:-}")"
			if kept_up "$n" "$RUST_DRV" && kept_up "$n" "$C_DRV"; then
				add "$n rust/c host" "$(div "${ROUND[$n $RUST_DRV host]:-}" "${ROUND[$n $C_DRV host]:-}")"
			else
				# Not the same load on both: no ratio, and so no goal.
				add "$n rust/c host" n/a
			fi
		done
	done
	PACE=

	drivers_teardown || fail=1

	for n in $FLOWS; do
		sfx=
		[ "$n" = 1 ] || sfx=" ($n flows)"
		echo "driver-rx-cpu: rust $(sp "$RUST_DRV host") ns/KiB, c $(sp "$C_DRV host") ns/KiB, ratio rust/c $(spr "rust/c host")$sfx"
		echo "driver-rx: offered $DRIVER_MBPS Mbit/s, received rust $(sp "$RUST_DRV mbps") Mbit/s, c $(sp "$C_DRV mbps") Mbit/s; interrupts rust $(sp "$RUST_DRV irqs"), c $(sp "$C_DRV irqs") a MiB$sfx"
		echo "driver-rx-peer: rust $(sp "$RUST_DRV host peer") ns/KiB (busy $(med "$RUST_DRV host busy")%), c $(sp "$C_DRV host peer") ns/KiB (busy $(med "$C_DRV host busy")%); other QEMU threads: rust $(sp "$RUST_DRV host other"), c $(sp "$C_DRV host other") ns/KiB$sfx"
		if [ -n "${BENCH_VERBOSE:-}" ]; then
			echo "driver-rx-cpu-guest: rust $(sp "$RUST_DRV cpu") ns/KiB, c $(sp "$C_DRV cpu") ns/KiB, ratio rust/c $(spr rust/c) (the guest's busy time, which under TCG counts the vCPU's waits for a host CPU)$sfx"
		fi
		goal "$n rust/c host" "<=" 1.0 "igb_rs/igb at most 1.0 (MTU $MTU, $n flow(s))"
		for drv in "${drivers[@]}"; do
			busy=$(med "$drv host busy")
			if [ "$busy" != n/a ] && [ "$busy" -ge 90 ]; then
				log "$n flow(s), $drv: the peer's vCPU was busy $busy% of the time: the sender may have set the pace"
			fi
		done
	done
}

# The profile pass: each mode once, its instructions counted, on the
# standard pass's configuration.
PROFILE_MB=${BENCH_RX_PROFILE_MB:-64}
INSNS=$(dirname "$0")/insns.py
# One profiled run: mode $2 with 1 flow, PROFILE_MB MiB; "$3: $1 ..."
# (with $3) prints the functions that ran the most instructions on the
# receiver's CPU, and $PDIR/$1.per keeps every function's instructions
# per KiB. P_INSNS and P_BLOCKS are the run's instructions and translated
# blocks per KiB. The instruction counter's vCPUs are numbered as the
# guest's CPUs.
PDIR=
P_INSNS=
P_BLOCKS=
profile_run() { # label mode [line]
	local label=$1 mode=$2 counts insns blocks
	run "$mode" 1 $((PROFILE_MB * 1024 * 1024)) || return 1
	counts=$HOSTCPU/insns.$RUN_KEY
	[ -s "$counts" ] || {
		log "$label: no instruction counts in $counts"
		return 1
	}
	# After the run: the driver's module is loaded.
	grep ' [tTwW] ' /proc/kallsyms >"$PDIR/kallsyms"
	read -r insns blocks < <(python3 "$INSNS" "$counts" "$PDIR/kallsyms" "$RX_CPU" \
		"${RES[bytes]}" "$PDIR/$label.per")
	# The raw counts stay in the results directory for a closer look
	# (harness/annotate.py: instruction by instruction), with what reads
	# them: the kernel's addresses, the receiver's CPU and the bytes.
	mv "$counts" "$HOSTCPU/$label.counts"
	cp "$PDIR/kallsyms" "$HOSTCPU/$label.kallsyms"
	echo "$RX_CPU ${RES[bytes]}" >"$HOSTCPU/$label.run"
	[ "${insns:-0}" -gt 0 ] || {
		log "$label: no instructions counted on CPU $RX_CPU"
		return 1
	}
	log "$label: CPU $RX_CPU ran $insns instructions per KiB in $blocks translated blocks"
	P_INSNS=$insns
	P_BLOCKS=$blocks
	[ -z "${3:-}" ] || profile_line "$3" "$label" "$insns" "$blocks"
}

# "line: label N insns/KiB, B blocks/KiB: FUNC P%, ...", from
# $PDIR/label.per.
profile_line() { # line label insns blocks
	local top
	top=$(head -n 12 "$PDIR/$2.per" | awk -F '\t' -v t="$3" '{
		printf "%s%s %.1f%%", (NR > 1 ? ", " : ""), $1, 100 * $2 / t }')
	echo "$1: $2 $3 insns/KiB, $4 blocks/KiB: $top"
}

# $PDIR/label.per: each function's mean over the runs named after it.
profile_mean() { # label run...
	local label=$1
	shift
	awk -F '\t' -v n=$# '{ s[$1] += $2 }
		END { for (f in s) printf "%s\t%.1f\n", f, s[f] / n }' \
		"${@/#/$PDIR/}" | sort -t "$(printf '\t')" -k2,2gr >"$PDIR/$label.per.tmp"
	mv "$PDIR/$label.per.tmp" "$PDIR/$label.per"
}

# "line: a over b +N insns/KiB: FUNC +n, ...": the functions that ran
# more instructions per KiB in profile a than in profile b, most first.
profile_extra() { # line a b
	local extra total top
	[ -s "$PDIR/$2.per" ] && [ -s "$PDIR/$3.per" ] || return 0
	extra=$(awk -F '\t' 'NR == FNR { t[$1] = $2; next }
		{ d[$1] = $2 - t[$1]; delete t[$1] }
		END {
			for (k in t) d[k] = -t[k]
			for (k in d) { sum += d[k]; printf "%s\t%s\n", d[k], k }
			printf "%s\tTOTAL\n", sum
		}' "$PDIR/$3.per" "$PDIR/$2.per" | sort -t "$(printf '\t')" -k1,1gr)
	total=$(awk -F '\t' '$2 == "TOTAL" { printf "%+.0f", $1 }' <<<"$extra")
	top=$(awk -F '\t' '$2 != "TOTAL" && $1 > 0' <<<"$extra" | head -n 15 |
		awk -F '\t' '{ printf "%s%s +%.1f", (NR > 1 ? ", " : ""), $2, $1 }')
	echo "$1: $2 over $3 $total insns/KiB: $top"
}

# The drivers under the profiler: trunc through igb_rs and through the C
# igb on the drivers pass's configuration (header split off, the default
# RSS table, no rule), each bound after a warming run. Twice each, in the
# order igb_rs, igb, igb, igb_rs, so that what drifts over the boot (the
# stack's batching changes from one run to the next) weighs on both
# alike; each driver's line is the mean of its two runs, which the log
# gives too. The device ends on the driver it had.
#
#   driver-rx-profile: DRIVER N insns/KiB, B blocks/KiB: FUNC P%, ...
#   driver-rx-profile-extra: igb_rs over igb +N insns/KiB: FUNC +n, ...
profile_drivers() {
	local drv k rc=0
	local -A insns=() blocks=()
	DEV_ARGS=()
	drivers_setup || return 1
	for drv in "$RUST_DRV" "$C_DRV" "$C_DRV" "$RUST_DRV"; do
		if [ "$(driver_now)" != "$drv" ]; then
			if ! bind_driver "$drv"; then
				log "could not bind the 82576 to $drv"
				rc=1
				continue
			fi
			check_driver "$drv"
		fi
		k=1
		[ -f "$PDIR/$drv.1.per" ] && k=2
		if profile_run "$drv.$k" trunc; then
			insns[$drv]+=" $P_INSNS"
			blocks[$drv]+=" $P_BLOCKS"
		else
			rc=1
		fi
	done
	for drv in "$RUST_DRV" "$C_DRV"; do
		[ -f "$PDIR/$drv.1.per" ] && [ -f "$PDIR/$drv.2.per" ] || {
			rc=1
			continue
		}
		profile_mean "$drv" "$drv.1.per" "$drv.2.per"
		log "$drv: ${insns[$drv]# } instructions per KiB in its two runs"
		profile_line driver-rx-profile "$drv" \
			"$(awk '{ printf "%d", ($1 + $2) / 2 + 0.5 }' <<<"${insns[$drv]}")" \
			"$(awk '{ printf "%d", ($1 + $2) / 2 + 0.5 }' <<<"${blocks[$drv]}")"
	done
	profile_extra driver-rx-profile-extra "$RUST_DRV" "$C_DRV"
	drivers_teardown || rc=1
	return $rc
}

profile_pass() {
	local mode
	[ -n "${HOSTCPU:-}" ] && [ -f "$HOSTCPU/insns.req" ] || {
		log "no instruction counter: make bench PROFILE=1 boots QEMU with harness/insncount.c"
		return 1
	}
	if ! setup; then
		log "could not configure $NETIF for the profile"
		teardown
		return 1
	fi
	PDIR=$(mktemp -d)
	# The kernel's addresses in /proc/kallsyms.
	echo 0 >/proc/sys/kernel/kptr_restrict
	# As the correctness run of the other passes: the receiver on the CPU
	# the 82576 interrupts.
	run trunc 1 $((CHECK_MB * 1024 * 1024)) && pick_cpus
	if [ "$PASS" != profile-drivers ]; then
		for mode in $MODES; do
			profile_run "$mode" "$mode" devmem-rx-profile || fail=1
		done
		profile_extra devmem-rx-profile-extra devmem trunc
		profile_extra devmem-rx-profile-extra devmem zcrx
	fi
	teardown || fail=1
	[ "$PASS" = profile-devmem ] || profile_drivers || fail=1
	# Every function's count, for a closer look than the lines': the
	# results directory's hostcpu/LABEL.per (instructions per KiB, tab,
	# function; most first).
	cp "$PDIR"/*.per "$HOSTCPU/" 2>/dev/null || true
	rm -rf "$PDIR"
}

# This script's own processes (the sender's launch, the readings between
# runs) on the peer's CPU, not the receiver's; and every other process of
# user space: the receiver's CPU runs the receiver, the softirqs and the
# kernel's per-CPU threads. (A profile once counted udev's work after a
# rebind on it: 18 user-space instructions per KiB in one run of a driver,
# 0.7 in the others.) Processes started later inherit their parent's CPU.
# Each process gets its own CPUs back when this script exits: the suites
# after this one in the same boot (make check runs devmem-rx-check among
# them, make bench bench-net after bench-rx) are not to run on one CPU.
# (They did: userns_devmem.py's listeners then missed their 5 s to start.)
declare -A PINNED=()
pin_others() {
	local p pid allowed
	for p in /proc/[0-9]*; do
		# Kernel threads have no executable.
		[ -e "$p/exe" ] || continue
		pid=${p#/proc/}
		if [ -z "${PINNED[$pid]:-}" ]; then
			allowed=$(awk '$1 == "Cpus_allowed_list:" { print $2 }' "$p/status" 2>/dev/null) || continue
			[ -n "$allowed" ] || continue
			PINNED[$pid]=$allowed
		fi
		taskset -a -p -c "$TX_CPU" "$pid" >/dev/null 2>&1 || true
	done
}
unpin_others() {
	local p pid online
	online=$(cat /sys/devices/system/cpu/online)
	# Those started since (a udev worker after a rebind) inherited the
	# pin from a parent that had every CPU.
	for p in /proc/[0-9]*; do
		[ -e "$p/exe" ] || continue
		pid=${p#/proc/}
		taskset -a -p -c "${PINNED[$pid]:-$online}" "$pid" >/dev/null 2>&1 || true
	done
}
# What a run that stopped making progress is waiting for: the two ends
# of the connection, the receiver's state, the device's and the peer's
# counters, the queues' (netdev qstats) and TCP's drop counters. Written
# by stall_watch before the receiver is killed, so that a failed run says
# whether it was slow or stuck, and where.
stall_dump() { # receiver-pid
	local t p
	# run starts the receiver under timeout, which forks it and waits
	# (taskset then execs it in the child): the receiver is the child.
	p=$(pgrep -P "$1" | head -n 1)
	[ -n "$p" ] || p=$1
	echo "receiver $p: $(awk '{ print "state", $3 }' "/proc/$p/stat" 2>/dev/null), wchan $(cat "/proc/$p/wchan" 2>/dev/null), $(awk '{ print "utime", $14, "stime", $15, "ticks" }' "/proc/$p/stat" 2>/dev/null)"
	for t in /proc/"$p"/task/*; do
		echo "task ${t##*/}: $(awk '{ print "state", $3 }' "$t/stat" 2>/dev/null), wchan $(cat "$t/wchan" 2>/dev/null), $(awk '/ctxt_switches/ { printf "%s %s ", $1, $2 }' "$t/status" 2>/dev/null)"
		sed 's/^/  /' "$t/stack" 2>/dev/null
	done
	# A running task has no stack in /proc: whether it spins in the
	# kernel or in user space shows in its CPU time over 5 s, and where
	# in the kernel in the backtraces of the CPUs (sysrq-l, twice).
	echo "receiver over 5 s: $(cpu_ticks "$p") ticks; then $(sleep 5; cpu_ticks "$p")"
	echo "TCP counters (not 0):"
	nstat -az 2>/dev/null | awk '$2 != 0 && /Prune|Collapse|Drop|Zero|OFO|Backlog|Retrans|Timeout|RcvQ|Memory|Devmem/'
	cpu_backtraces
	cpu_backtraces
	# Whether it could run and did not: what else was runnable.
	echo "runnable threads:"
	ps -eLo pid,tid,stat,psr,pri,comm 2>&1 | awk 'NR == 1 || $3 ~ /^R/'
	echo "listener:"
	ss -tlnp "( sport = :$PORT )" 2>&1
	echo "receiver's sockets, with their process:"
	ss -tmniep "( sport = :$PORT )" 2>&1
	echo "sender's sockets:"
	ip netns exec ns-remote ss -tmnie "( dport = :$PORT )" 2>&1
	echo "$NETIF counters (not 0):"
	ethtool -S "$NETIF" 2>&1 | awk -F: '$2 + 0 != 0'
	echo "$NETIF queue stats:"
	python3 "$KSRC/tools/net/ynl/pyynl/cli.py" \
		--spec "$KSRC/Documentation/netlink/specs/netdev.yaml" \
		--dump qstats-get --json "{\"ifindex\": $(cat "/sys/class/net/$NETIF/ifindex"), \"scope\": \"queue\"}" 2>&1
	echo "$PEER (peer):"
	ip -n ns-remote -s link show "$PEER" 2>&1
}

cpu_ticks() { # pid
	awk '{ print "utime", $14, "stime", $15 }' "/proc/$1/stat" 2>/dev/null
}

# The backtrace of every CPU (sysrq-l; no checker of the kernel log
# counts it as a finding), as the kernel log has it.
cpu_backtraces() {
	local from
	from=$(wc -l < <(dmesg))
	echo l 2>/dev/null >/proc/sysrq-trigger || {
		echo "no backtraces of the CPUs: no /proc/sysrq-trigger"
		return 0
	}
	sleep 2
	echo "backtraces of the CPUs (sysrq-l):"
	dmesg | tail -n +$((from + 1)) | sed 's/^/  /'
}

# Stops run's receiver (the child of the timeout that runs it) for SECS
# seconds, from when the sender starts, so that its receive queue fills
# and the window closes, then lets it read on.
pause_receiver() { # receiver-pid secs
	local p
	for _ in $(seq 50); do
		p=$(pgrep -P "$1" | head -n 1)
		[ -n "$p" ] && break
		sleep 0.1
	done
	[ -n "$p" ] || p=$1
	kill -STOP "$p"
	sleep "$2"
	kill -CONT "$p"
}

# Watches run's receiver: when the flows have received nothing for
# STALL_S seconds, writes stall_dump to $2 (once) and lets run's timeout
# end it. A receiver stopped on purpose (pause_receiver) is not stalled.
STALL_S=60
stall_watch() { # receiver-pid file
	local last=-1 now still=0
	[ -z "${RX_PAUSE:-}" ] || sleep "$RX_PAUSE"
	while kill -0 "$1" 2>/dev/null; do
		sleep 5
		now=$(ss -tnie "( sport = :$PORT )" 2>/dev/null |
			awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^bytes_received:/) { sub(/.*:/, "", $i); s += $i } } END { print s + 0 }')
		if [ "$now" = "$last" ]; then
			still=$((still + 5))
		else
			still=0
			last=$now
		fi
		if ((still >= STALL_S)); then
			trap '' TERM
			stall_dump "$1" >"$2" 2>&1
			return
		fi
	done
}

# Whether every page pool of NETIF that was destroyed (detach-time) has
# given back all its buffers (inflight 0) within 30 s: a net_iov whose
# reference was lost keeps its pool, and the binding, for ever.
pools_drained() {
	local i left ifindex
	ifindex=$(cat "/sys/class/net/$NETIF/ifindex")
	for ((i = 0; i < 30; i++)); do
		left=$(python3 "$KSRC/tools/net/ynl/pyynl/cli.py" \
			--spec "$KSRC/Documentation/netlink/specs/netdev.yaml" \
			--dump page-pool-get --output-json |
			python3 -c '
import json, sys
pools = [p for p in json.load(sys.stdin)
         if p.get("ifindex") == int(sys.argv[1]) and "detach-time" in p and p.get("inflight", 0)]
print(" ".join("pool %d (%d in flight%s)" % (p["id"], p["inflight"], ", dma-buf %d" % p["dmabuf"] if "dmabuf" in p else "") for p in pools))
' "$ifindex") || return 1
		if [ -z "$left" ]; then
			log "no destroyed page pool of $NETIF holds a buffer (after ${i} s)"
			return 0
		fi
		sleep 1
	done
	log "destroyed pools still holding buffers after 30 s: $left"
	return 1
}

# A devmem run while a second thread (-g, on the peer's CPU) gives back
# tokens 1 to 1024 over and over, those the receiver holds and those a
# receive has reserved but not handed out; then no buffer may be left in
# flight once the binding is gone.
# A receiver that stops reading while the sender goes on: its receive
# queue fills with device-memory skbs, the window closes, TCP prunes and
# collapses what it can, and the sender probes the zero window. Read on,
# every byte must come, in order.
PAUSE_S=10
paused_run() {
	RX_PAUSE=$PAUSE_S run devmem 1 $((2 * 1024 * 1024)) -v
}

guessed_run() {
	run devmem 1 $((CHECK_MB * 1024 * 1024)) -g "$TX_CPU" || return 1
	log "the second thread freed ${RES[guessed]:-?} of ${RES[frags]:-?} frags"
	((${RES[guessed]:-0} > 0)) && pools_drained
}

# The check pass, as TAP: a case a step.
check_pass() {
	local n=0
	tcase() { # name command...
		n=$((n + 1))
		if "${@:2}"; then
			echo "ok $n $1"
		else
			echo "not ok $n $1"
			fail=1
		fi
	}
	echo "TAP version 13"
	echo "1..7"
	tcase "configure $NETIF: header split, RSS, flow rule" setup
	tcase "devmem, 4 flows, $CHECK_MB MiB, every byte checked, tokens given back twice" \
		run devmem 4 $((CHECK_MB * 1024 * 1024)) -v
	log "frags ${RES[frags]:-?}, ranges ${RES[ranges]:-?}, dontneed calls ${RES[dontneed]:-?}, receives ${RES[recvs]:-?}"
	tcase "devmem, 1 flow, 2 MiB in 1000-byte receives, every byte checked" \
		run devmem 1 $((2 * 1024 * 1024)) -v -r 1000
	log "frags ${RES[frags]:-?}, ranges ${RES[ranges]:-?}, dontneed calls ${RES[dontneed]:-?}, receives ${RES[recvs]:-?}"
	tcase "devmem, 1 flow, 2 MiB, room for 3 cmsgs a receive, every byte checked" \
		run devmem 1 $((2 * 1024 * 1024)) -v -c 3
	log "frags ${RES[frags]:-?}, ranges ${RES[ranges]:-?}, dontneed calls ${RES[dontneed]:-?}, receives ${RES[recvs]:-?}"
	tcase "devmem, 1 flow, 2 MiB, the receiver stopped ${PAUSE_S} s with its window closed, every byte checked" \
		paused_run
	log "frags ${RES[frags]:-?}, ranges ${RES[ranges]:-?}, dontneed calls ${RES[dontneed]:-?}, receives ${RES[recvs]:-?}"
	tcase "devmem, 1 flow, $CHECK_MB MiB, a second thread giving back guessed tokens, then no buffer left in flight" \
		guessed_run
	tcase "undo the configuration" teardown
}

trap unpin_others EXIT
pin_others
declare -A ROUND=()
if [ "$PASS" = check ]; then
	check_pass
elif [ "$PASS" = drivers ]; then
	drivers_pass || fail=1
elif [[ $PASS == profile* ]]; then
	profile_pass || fail=1
else
	modes_pass || fail=1
fi
exit $fail
