#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The devmem TX send path, run in the guest by run.sh (suite bench-tx) with
# the topology wired and NETIF etc. exported. A holder (races.py --hold tx)
# binds a udmabuf of PAGES pages for TX on the 82576; devmem_send (built
# by kselftest.sh from devmem_send.c) then sends from it for BENCH_TX_SECS
# seconds with 1 thread and with twice the CPUs' threads, each thread on a
# connection of its own into a socat sink on the peer (ns-remote), LEN
# bytes a sendmsg() with the binding's id in an SCM_DEVMEM_DMABUF cmsg.
# Every such sendmsg() looks the binding up by its id
# (net_devmem_get_binding): the many-thread figure is where a lookup that
# serialises its callers would show. Prints the median of BENCH_TX_ROUNDS
# rounds, sendmsg() calls a second in all:
#
#   devmem-tx-send: 1 thread <calls/s> calls/s, 4 threads <calls/s> calls/s
#
# LEN is small (BENCH_TX_LEN, 64 bytes) so that the sender's per-call path,
# not the bytes the peer must take in, sets the pace: the "# " lines say
# how long the senders waited for room in their sockets (the peer's and
# the path's share) and the CPU time a call cost them.
# Exit status 0 when every run sent, from every thread.

set -u
SEND=$KSFT/drivers/net/hw/devmem_send
SECS=${BENCH_TX_SECS:-3}
ROUNDS=${BENCH_TX_ROUNDS:-5}
LEN=${BENCH_TX_LEN:-64}
PAGES=64
PORT=5401
THREADS="1 $(($(nproc) * 2))"
fail=0

log() { echo "# $*"; }

# shellcheck source=harness/guest/lib.sh
. "$(dirname "$0")/lib.sh"

[ -x "$SEND" ] || {
	log "no $SEND: run make kselftests"
	exit 1
}

# The median of a thread count's runs, 0 without any.
declare -A RUNS=()
median() { # threads
	# shellcheck disable=SC2086 # one run a word
	printf '%s\n' ${RUNS[$1]:-0} | sort -n |
		awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); print (NR % 2) ? v[m] : int((v[m] + v[m + 1]) / 2) }'
}

# The sink: a socat process per connection, all writing to /dev/null.
ip netns exec ns-remote socat -u "TCP6-LISTEN:$PORT,reuseaddr,fork" OPEN:/dev/null \
	>/dev/null 2>&1 &
sink=$!
listening $PORT ns-remote || {
	log "no sink listening on [$REMOTE_V6]:$PORT"
	kill "$sink" 2>/dev/null
	exit 1
}

# The binding, held by a process of its own until it reads "exit".
coproc HOLD { exec python3 "$(dirname "$0")/races.py" --hold tx \
	"$(cat "/sys/class/net/$NETIF/ifindex")" 0 "$PAGES" 2>&1; }
holder=$HOLD_PID
said=
read -r -t 120 said <&"${HOLD[0]:-}"
id=${said#bound }
case "$said" in
"bound "[0-9]*) log "bind-tx of a $PAGES-page udmabuf on $NETIF: binding $id" ;;
*)
	log "the holder said: ${said:-nothing}"
	kill "$holder" "$sink" 2>/dev/null
	exit 1
	;;
esac
size=$((PAGES * $(getconf PAGESIZE)))

# One run of n threads; adds its calls/s to RUNS[n].
run() { # threads
	local out err rc sends secs rate
	err=$(mktemp)
	out=$(timeout -k 5 $((SECS + 60)) "$SEND" -a "$REMOTE_V6" -p "$PORT" -d "$id" \
		-t "$1" -s "$SECS" -l "$LEN" -z "$size" 2>"$err")
	rc=$?
	read -r _ sends _ _ _ secs _ _ <<<"$out"
	rate=$(echo "${sends:-0} ${secs:-0}" | awk '{ if ($2 > 0) printf "%.0f", $1 / $2; else print 0 }')
	log "round $r, $1 thread(s): $rate calls/s; $out"
	sed 's/^# //; s/^/#   /' "$err"
	rm -f "$err"
	if [ "$rc" != 0 ] || [ "$rate" = 0 ]; then
		log "round $r, $1 thread(s): devmem_send failed ($rc)"
		fail=1
		return
	fi
	RUNS[$1]+="$rate "
}

# Round by round, each thread count once, so that the host's drift falls
# on both alike.
for r in $(seq 1 "$ROUNDS"); do
	for n in $THREADS; do
		run "$n"
	done
done

# The holder lets go of the binding and exits (a dead one would have
# failed the sends).
if kill -0 "$holder" 2>/dev/null && [ -n "${HOLD[1]:-}" ]; then
	echo exit >&"${HOLD[1]}"
fi
wait "$holder" || { log "the holder exited with $?"; fail=1; }
kill "$sink" 2>/dev/null
wait "$sink" 2>/dev/null

line=
for n in $THREADS; do
	[ "$n" = 1 ] && unit=thread || unit=threads
	line+="${line:+, }$n $unit $(median "$n") calls/s"
done
echo "devmem-tx-send: $line"
exit $fail
