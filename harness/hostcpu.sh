#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The host's view of a guest's CPU time, for the benchmarks.
#
#   hostcpu.sh DIR ROOT_PID
#
# Under TCG a guest's own busy time (its span less its idle time) counts
# the time its vCPU thread waited for a host CPU as busy: the guest has no
# steal time, and two host CPUs carry two vCPU threads and QEMU's I/O
# thread. The host knows better: a vCPU thread is on a CPU only while it
# runs guest code (an idle vCPU sleeps in QEMU), and its schedstat counts
# exactly that time.
#
# A guest asks for a reading by appending a line to DIR/req (DIR is shared
# with it over 9p):
#
#   begin KEY      the host reads every QEMU thread's on-CPU time
#   end KEY        and again, and reports the difference
#
# and waits for the answer in DIR/ack:
#
#   KEY begin
#   KEY end WALL_NS VCPU0_NS,VCPU1_NS,... OTHER_NS
#
# WALL_NS is the host's time between the two readings, VCPUn_NS the on-CPU
# time of vCPU n's thread (named by QEMU's -name debug-threads=on) and
# OTHER_NS that of every other QEMU thread (the main loop and its helpers:
# device models, the 9p server, the hub between the NICs). The guest sends
# "begin" before the work it times starts and "end" after it stopped, and
# waits for each answer, so the host's latency is not in the figure. The
# QEMU process is the one descended from ROOT_PID (vm.sh); the watcher
# exits with it.
#
# When QEMU runs harness/insncount.c (vm.sh with INSN_PLUGIN, which makes
# DIR/insns.req for it), each "begin" and "end" is passed on to it after
# the reading, and answered once the plugin has noted or written its
# counts (DIR/insns.KEY): the guest then finds them there.

set -uo pipefail

DIR=$1
ROOT=$2
req=$DIR/req
ack=$DIR/ack
declare -A BEGIN=()
QEMU=
PLUGIN=
[ -f "$DIR/insns.req" ] && PLUGIN=1

# The QEMU process below ROOT, or nothing yet.
find_qemu() {
	local p q
	for p in $(pgrep '^qemu-system'); do
		q=$p
		while [ -n "$q" ] && [ "$q" -gt 1 ]; do
			read -r _ _ _ q _ </proc/"$q"/stat 2>/dev/null || break
			if [ "$q" = "$ROOT" ]; then
				echo "$p"
				return
			fi
		done
	done
}

# "WALL VCPU0,VCPU1,... OTHER": the host's monotonic time and the threads'
# on-CPU time, in ns.
sample() {
	local t comm ns rest now=${EPOCHREALTIME/./}000
	local -a vcpu=()
	local other=0 i out=
	for t in /proc/"$QEMU"/task/*; do
		read -r comm <"$t/comm" 2>/dev/null || continue
		read -r ns rest <"$t/schedstat" 2>/dev/null || continue
		if [[ $comm =~ ^CPU\ ([0-9]+)/ ]]; then
			vcpu[BASH_REMATCH[1]]=$ns
		else
			other=$((other + ns))
		fi
	done
	for i in "${!vcpu[@]}"; do
		out+=${out:+,}${vcpu[i]}
	done
	echo "$now $out $other"
}

# Passes "$1 $2" (begin|end KEY) on to the plugin and waits, 10 s at
# most, for its answer; fails when there is none, or an error.
plugin() { # begin|end key
	local i line
	echo "$1 $2" >>"$DIR/insns.req"
	for ((i = 0; i < 2000; i++)); do
		line=$(grep -m 1 "^$2 \($1\|error\)\$" "$DIR/insns.ack" 2>/dev/null)
		[ "$line" = "$2 $1" ] && return 0
		[ -n "$line" ] && return 1
		sleep 0.005
	done
	return 1
}

# Both files exist before the guest starts, so that tail follows DIR/req
# with inotify; -s bounds its wait where it has to poll.
: >"$ack"
: >"$req"
tail -n +1 -s 0.01 -F "$req" 2>/dev/null | while read -r verb key; do
	[ -n "$QEMU" ] || QEMU=$(find_qemu)
	if [ -z "$QEMU" ] || [ ! -d /proc/"$QEMU" ]; then
		echo "$key error no QEMU process below $ROOT" >>"$ack"
		continue
	fi
	case "$verb" in
	begin)
		BEGIN[$key]=$(sample)
		if [ -n "$PLUGIN" ] && ! plugin begin "$key"; then
			echo "$key error no answer from the instruction counter" >>"$ack"
			continue
		fi
		echo "$key begin" >>"$ack"
		;;
	end)
		if [ -z "${BEGIN[$key]:-}" ]; then
			echo "$key error no begin" >>"$ack"
			continue
		fi
		read -r w0 v0 o0 <<<"${BEGIN[$key]}"
		read -r w1 v1 o1 <<<"$(sample)"
		unset "BEGIN[$key]"
		if [ -n "$PLUGIN" ] && ! plugin end "$key"; then
			echo "$key error no counts from the instruction counter" >>"$ack"
			continue
		fi
		IFS=, read -ra a <<<"$v0"
		IFS=, read -ra b <<<"$v1"
		d=
		for i in "${!b[@]}"; do
			d+=${d:+,}$((b[i] - ${a[i]:-0}))
		done
		echo "$key end $((w1 - w0)) $d $((o1 - o0))" >>"$ack"
		;;
	esac
done
