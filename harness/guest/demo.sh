#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The devmem demo, run in the guest by run.sh with the topology wired and
# NETIF etc. exported. It shows what a driver developer would look at: the
# device and its driver, the peer, and ncdevmem's attempt to bind a udmabuf
# to RX queues of NETIF, with its own messages and exit status.
#
# Exit status: 0 when every step ran and reported honestly, whatever the
# binding's outcome; the outcome is in the output.

set -u
NCDEVMEM=$KSFT/drivers/net/hw/ncdevmem

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

hdr "devmem: bind a udmabuf to RX queues of $NETIF (ncdevmem -f $NETIF)"
echo 64 >/proc/sys/vm/nr_hugepages
run timeout 60 "$NCDEVMEM" -f "$NETIF"
rc=$?
echo
if [ $rc -eq 0 ]; then
	echo "RESULT: ncdevmem bound a udmabuf to RX queues of $NETIF (exit 0)"
else
	drv=$(basename "$(readlink -f "/sys/class/net/$NETIF/device/driver")")
	echo "RESULT: binding failed (ncdevmem exit $rc) on the $drv driver; its"
	echo "        last lines above say which step. devmem needs header split,"
	echo "        the queue management API, RSS control (ethtool -X) and, to"
	echo "        bind, page pools that take the memory provider; then flow"
	echo "        steering (ethtool -N) for traffic. igb_rs has the first three"
	echo "        so far (see notes/igb-rs-design.md)."
fi
exit 0
