#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Jumbo frames through the device under test, run in the guest by run.sh
# (suite nic-jumbo) with the topology wired and NETIF etc. exported. With
# a 9000-byte MTU on both ends a frame no longer fits one receive buffer:
# the driver takes it from several descriptors. The cases check the MTU
# range, frames of the full MTU both ways, TCP streams whose bytes arrive
# intact with and without header split, devmem RX into a udmabuf with
# validation, and that a frame longer than the MTU allows is dropped
# (RLPML) without stopping the ring. Prints TAP.

set -u
NCDEVMEM=$KSFT/drivers/net/hw/ncdevmem
RINGS=$(dirname "$0")/rings.py
# shellcheck source=harness/guest/lib.sh
. "$(dirname "$0")/lib.sh"

PEER=$(ip -n ns-remote -o link show | awk -F': ' '$2 != "lo" { print $2; exit }')
MTU=9000
TAP_N=0
TAP_FAIL=0

set_mtu() { # local-mtu peer-mtu
	ip link set "$NETIF" mtu "$1" && ip -n ns-remote link set "$PEER" mtu "$2"
}

max_mtu_is() { # n
	ip -d link show "$NETIF" | grep -q "maxmtu $1 "
}

# Sends $1 bytes of random data from the peer over TCP and checks that
# what arrives here has the same SHA-256.
tcp_intact() { # bytes
	local port=5301 src got want
	src=$(mktemp)
	head -c "$1" /dev/urandom >"$src"
	want=$(sha256sum <"$src" | cut -d' ' -f1)
	got=$(mktemp)
	timeout 120 socat -u "TCP6-LISTEN:$port,reuseaddr" - | sha256sum >"$got" &
	local rx=$!
	listening $port || return 1
	ip netns exec ns-remote timeout 120 socat -u - "TCP6:[$LOCAL_V6]:$port" <"$src"
	wait $rx
	rm -f "$src"
	local sum
	sum=$(cut -d' ' -f1 <"$got")
	rm -f "$got"
	[ "$sum" = "$want" ] || {
		echo "sha256 $sum, sent $want"
		return 1
	}
}

# ncdevmem receives 1 MiB into a udmabuf through a bound queue and checks
# every byte (-v 7).
devmem_rx() {
	local port=5302 size=$((1024 * 1024)) log data rc got
	log=$(mktemp)
	timeout 120 "$NCDEVMEM" -l -f "$NETIF" -s "$LOCAL_V6" -p $port \
		-c "$REMOTE_V6" -v 7 >"$log" 2>&1 &
	local rx=$!
	listening $port || {
		cat "$log"
		return 1
	}
	data=$(mktemp)
	yes "$(printf '\001\002\003\004\005\006')" | head -c $size >"$data"
	ip netns exec ns-remote socat -u - "TCP6:[$LOCAL_V6]:$port,bind=[$REMOTE_V6]:$port" <"$data"
	rm -f "$data"
	wait $rx
	rc=$?
	got=$(grep -o '^total_received=[0-9]*' "$log" | tail -1 | cut -d= -f2)
	grep -vE '^(recvmsg ret|received frag|Validated buffer|total_received)' "$log" | tail -n 5
	rm -f "$log"
	[ $rc -eq 0 ] && [ "${got:-0}" -eq $size ]
}

not() { ! "$@"; }

echo "TAP version 13"
echo "1..13"
t "max MTU 9216" max_mtu_is 9216
t "MTU 9217 refused" not ip link set "$NETIF" mtu 9217
t "MTU $MTU on both ends" set_mtu $MTU $MTU
t "carrier" wait_carrier "$NETIF"
t "ping $REMOTE_V4, 9000-byte packets, not fragmented" \
	ping -c 3 -W 2 -M "do" -s $((MTU - 28)) "$REMOTE_V4"
t "ping $REMOTE_V6, 9000-byte packets, not fragmented" \
	ping -6 -c 3 -W 2 -M "do" -s $((MTU - 48)) "$REMOTE_V6"
t "TCP 8 MiB intact, not split" tcp_intact $((8 << 20))
t "tcp-data-split on" python3 "$RINGS" "$NETIF" split on
t "TCP 8 MiB intact, split" tcp_intact $((8 << 20))
t "devmem RX 1 MiB validated" devmem_rx
# The peer still sends 9000-byte frames: longer than RLPML now.
t "MTU 1500 here: a 9000-byte frame is dropped" sh -c \
	"ip link set $NETIF mtu 1500 && ! ping -c 2 -W 1 -M do -s $((MTU - 28)) $REMOTE_V4"
t "the ring still receives" ping -c 2 -W 2 -s 1000 "$REMOTE_V4"
t "MTU 1500 on both ends, split off" sh -c \
	"ip -n ns-remote link set $PEER mtu 1500 && python3 $RINGS $NETIF split off &&
	 sleep 1 && ping -c 2 -W 2 $REMOTE_V4"
exit $TAP_FAIL
