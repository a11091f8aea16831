#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Interrupt moderation and flow control of the device under test, run in
# the guest by run.sh (suite nic-ethtool) with the topology wired and
# NETIF etc. exported: `ethtool -c/-C` within the range of the 82576's
# EITR and adaptive moderation, `ethtool -a/-A` with pause autonegotiation and forced modes, and
# the link the driver's watchdog reports after each change. Puts back the
# settings it found. Prints TAP.

set -u
# shellcheck source=harness/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TAP_N=0
TAP_FAIL=0

# The value ethtool prints for "name:" with option $1 (-c, -a).
field() { # option name
	ethtool "$1" "$NETIF" 2>/dev/null |
		awk -F: -v n="$2" '$1 == n { gsub(/[ \t]/, "", $2); print $2; exit }'
}

# The output of the command is $1.
is() { # expected command...
	local want=$1 got
	shift
	got=$("$@") || return 1
	[ "$got" = "$want" ] || {
		echo "got '$got', want '$want'"
		return 1
	}
}

# The command fails and says $1 (extack, or ethtool's own message).
fails_with() { # message command...
	local msg=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "succeeded: $out"
		return 1
	fi
	printf '%s\n' "$out" | grep -qi -- "$msg" || {
		printf '%s\n' "$out"
		return 1
	}
}

# rx-usecs and adaptive-rx, as "3/on".
coalesce_state() {
	echo "$(field -c rx-usecs)/$(ethtool -c "$NETIF" 2>/dev/null | awk '/^Adaptive RX:/ { print $3; exit }')"
}

# Pause autonegotiation, receive and transmit, as "on/on/off".
pause_state() {
	echo "$(field -a Autonegotiate)/$(field -a RX)/$(field -a TX)"
}

pause_an_rx() {
	echo "$(field -a Autonegotiate)/$(field -a RX)"
}

link_and_ping() {
	wait_carrier "$NETIF" && ping -c 2 -W 2 "$REMOTE_V4"
}

# Writes marker $1 to the kernel log (line counts do not work: the log
# buffer is full after KUnit).
mark() { # marker
	echo "nic-ethtool: $1" >/dev/kmsg
}

# The driver logged the link coming up at 1000/full, as the PCI device,
# after marker $1; waits 10 s for it.
logged_link_up() { # marker
	for _ in $(seq 1 100); do
		dmesg | sed -n "/nic-ethtool: $1\$/,\$p" |
			grep -q "igb_rs .*: link up, 1000 Mb/s, full duplex" && return 0
		sleep 0.1
	done
	return 1
}

echo "TAP version 13"
echo "1..33"
usecs=$(field -c rx-usecs)
pause_an=$(field -a Autonegotiate)
pause_rx=$(field -a RX)
pause_tx=$(field -a TX)

t "rx-usecs 3 by default: adaptive, conservative, as the C igb" is 3/on coalesce_state
t "traffic with adaptive moderation" ping -c 5 -i 0.2 -W 2 "$REMOTE_V4"
t "rx-usecs 100 taken" ethtool -C "$NETIF" rx-usecs 100
t "reads rx-usecs 100, adaptive-rx off" is 100/off coalesce_state
t "traffic with rx-usecs 100" ping -c 5 -i 0.2 -W 2 "$REMOTE_V4"
t "adaptive-rx on taken" ethtool -C "$NETIF" adaptive-rx on
t "reads rx-usecs 3 (conservative), adaptive-rx on" is 3/on coalesce_state
t "adaptive-rx off taken" ethtool -C "$NETIF" adaptive-rx off
t "reads rx-usecs 49 (EITR 196, the C igb's 20k/s), adaptive-rx off" is 49/off coalesce_state
t "rx-usecs 1 taken: adaptive, down to short intervals" ethtool -C "$NETIF" rx-usecs 1
t "reads rx-usecs 1, adaptive-rx on" is 1/on coalesce_state
t "traffic with rx-usecs 1" ping -c 5 -i 0.2 -W 2 "$REMOTE_V4"
t "rx-usecs 0 (no moderation) taken" ethtool -C "$NETIF" rx-usecs 0
t "rx-usecs 2 refused: no mode" fails_with "0, 1 or 3 (adaptive), or 10 to 8191" \
	ethtool -C "$NETIF" rx-usecs 2
t "rx-usecs 5 refused" fails_with "0, 1 or 3 (adaptive), or 10 to 8191" ethtool -C "$NETIF" rx-usecs 5
t "rx-usecs 9000 refused" fails_with "0, 1 or 3 (adaptive), or 10 to 8191" \
	ethtool -C "$NETIF" rx-usecs 9000
t "adaptive-rx on with an interval refused" fails_with "takes rx-usecs 1 or 3" \
	ethtool -C "$NETIF" adaptive-rx on rx-usecs 100
t "tx-usecs refused: the pair shares its vector" \
	fails_with "unsupported parameter" ethtool -C "$NETIF" tx-usecs 10
t "a refused value changed nothing" is 0/off coalesce_state
t "rx-usecs back to $usecs" ethtool -C "$NETIF" rx-usecs "$usecs"

t "pause autonegotiation on, both ways (QEMU's NVM and PHY ask for both)" \
	is "on/on/on" pause_state
t "forced pause: rx on, tx off" ethtool -A "$NETIF" autoneg off rx on tx off
t "reads autoneg off, rx on, tx off" is "off/on/off" pause_state
t "traffic with forced pause" link_and_ping
# A new pause advertisement (transmit only: asymmetric direction alone)
# renegotiates the link (so briefly under QEMU that the carrier may stay
# on); receiving was not asked for, so the resolution cannot turn it on.
t "pause autonegotiated, transmit only asked" ethtool -A "$NETIF" autoneg on rx off tx on
t "link back, traffic" link_and_ping
t "reads autoneg on, rx off" is "on/off" pause_an_rx
t "both ways asked again: the link renegotiates" ethtool -A "$NETIF" autoneg on rx on tx on
t "link back again, traffic" link_and_ping
t "resolved both ways with QEMU's partner" is "on/on/on" pause_state
mark down-up
t "down and up" sh -c "ip link set $NETIF down && ip link set $NETIF up"
t "link after down and up, traffic" link_and_ping
t "the watchdog logged the link at 1000/full" logged_link_up down-up
ethtool -A "$NETIF" autoneg "$pause_an" rx "$pause_rx" tx "$pause_tx" >/dev/null 2>&1
exit $TAP_FAIL
