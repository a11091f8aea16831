#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The devmem demo, run in the guest by run.sh with the topology wired and
# NETIF etc. exported. It shows what a driver developer would look at: the
# device and its driver, the peer, then devmem TCP both ways with
# upstream's ncdevmem and a udmabuf: the peer sends 1 MiB that lands in
# the udmabuf through a bound RX queue and is validated there (-v), and
# ncdevmem sends lines from a udmabuf to the peer, which checks them.
#
# Exit status: 0 when both transfers arrived whole and validated.

set -u
NCDEVMEM=$KSFT/drivers/net/hw/ncdevmem
# shellcheck source=harness/guest/lib.sh
. "$(dirname "$0")/lib.sh"

hdr() { printf '\n== %s ==\n' "$*"; }
run() {
	echo "\$ $*"
	"$@" 2>&1 | sed 's/^/  /'
	return "${PIPESTATUS[0]}"
}
# run_filtered PATTERN cmd...: show only the output lines matching PATTERN.
run_filtered() {
	local pat=$1
	shift
	echo "\$ $* | grep -E '$pat'"
	"$@" 2>&1 | grep -E "$pat" | sed 's/^/  /'
}

hdr "device under test"
run_filtered '^(driver|bus-info)' ethtool -i "$NETIF"
run ip -br addr show dev "$NETIF"
run ethtool -l "$NETIF"
run ethtool -g "$NETIF"

hdr "peer (netns ns-remote)"
run ip -n ns-remote -br addr
run_filtered 'transmitted' ping -c 3 -W 2 "$REMOTE_V4"
run_filtered 'transmitted' ping -6 -c 3 -W 2 "$REMOTE_V6"

PORT_RX=5201
PORT_TX=5202
SIZE=$((1024 * 1024))
echo 64 >/proc/sys/vm/nr_hugepages
fail=0

hdr "devmem RX: the peer sends $SIZE bytes into a udmabuf bound to $NETIF"
echo "\$ $NCDEVMEM -l -f $NETIF -s $LOCAL_V6 -p $PORT_RX -c $REMOTE_V6 -v 7 &"
log=$(mktemp)
timeout 120 "$NCDEVMEM" -l -f "$NETIF" -s "$LOCAL_V6" -p "$PORT_RX" \
	-c "$REMOTE_V6" -v 7 >"$log" 2>&1 &
rx=$!
listening $PORT_RX
run ethtool -n "$NETIF"
# The data ncdevmem -v 7 checks: bytes 1 to 6 and a newline, repeated.
data=$(mktemp)
yes "$(printf '\001\002\003\004\005\006')" | head -c $SIZE >"$data"
echo "\$ ip netns exec ns-remote socat -u - TCP6:[$LOCAL_V6]:$PORT_RX,bind=[$REMOTE_V6]:$PORT_RX <DATA"
ip netns exec ns-remote socat -u - "TCP6:[$LOCAL_V6]:$PORT_RX,bind=[$REMOTE_V6]:$PORT_RX" <"$data"
rm -f "$data"
wait $rx
rc=$?
echo "ncdevmem exit $rc; its messages, the per-buffer lines counted:"
grep -vE '^(recvmsg ret|received frag|Validated buffer|total_received)' "$log" | sed 's/^/  /'
echo "  ($(grep -c '^recvmsg ret' "$log") recvmsg calls, $(grep -c '^received frag' "$log") frags" \
	"in device memory, $(grep -c '^Validated buffer' "$log") buffers validated)"
got=$(grep -o '^total_received=[0-9]*' "$log" | tail -1 | cut -d= -f2)
echo "  total_received=${got:-0}"
if [ $rc -eq 0 ] && [ "${got:-0}" -eq $SIZE ]; then
	echo "RESULT RX: $got bytes received into the udmabuf and validated"
else
	echo "RESULT RX: FAILED (exit $rc, ${got:-0} of $SIZE bytes)"
	fail=1
fi
rm -f "$log"

hdr "devmem TX: ncdevmem sends lines from a udmabuf through $NETIF"
out=$(mktemp)
ip netns exec ns-remote timeout 60 socat -U - "TCP6-LISTEN:$PORT_TX" >"$out" 2>/dev/null &
lsn=$!
listening $PORT_TX ns-remote
text=$(printf 'line %s, sent from device memory\n' $(seq 1 8))
echo "\$ printf '...' | $NCDEVMEM -f $NETIF -s $REMOTE_V6 -p $PORT_TX"
printf '%s\n' "$text" | timeout 60 "$NCDEVMEM" -f "$NETIF" -s "$REMOTE_V6" -p "$PORT_TX" 2>&1 |
	grep -vE '^(sendmsg_ret|tx complete)' | sed 's/^/  /'
rc=${PIPESTATUS[1]}
wait $lsn
echo "the peer received $(wc -c <"$out") bytes:"
sed 's/^/  /' "$out"
if [ "$rc" -eq 0 ] && [ "$(cat "$out")" = "$text" ]; then
	echo "RESULT TX: $(wc -c <"$out") bytes sent from the udmabuf, received intact"
else
	echo "RESULT TX: FAILED (ncdevmem exit $rc)"
	fail=1
fi
rm -f "$out"
exit $fail
