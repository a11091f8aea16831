# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Shell functions the guest scripts share; sourced by run.sh, demo.sh,
# bench_net.sh, bench_tx.sh and jumbo.sh.

# Waits, 10 s at most, for a TCP listener on port $1, in netns $2 if given.
listening() { # port [netns]
	local ns=()
	[ $# -ge 2 ] && ns=(ip netns exec "$2")
	for _ in $(seq 1 100); do
		"${ns[@]}" ss -Htln "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# Waits, 10 s at most, for carrier on device $2 in netns $1, or on device
# $1 here.
wait_carrier() { # [netns] dev
	local ns=()
	[ $# -eq 2 ] && ns=(ip netns exec "$1") && shift
	for _ in $(seq 1 100); do
		[ "$("${ns[@]}" cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

# One TAP check: runs the command, prints "ok N description" or "not ok",
# with the tail of its output as comments; counts in TAP_N, TAP_FAIL.
t() { # description command...
	local d=$1 out
	shift
	TAP_N=$((TAP_N + 1))
	if out=$("$@" 2>&1); then
		echo "ok $TAP_N $d"
	else
		echo "not ok $TAP_N $d"
		printf '%s\n' "$out" | tail -n 5 | sed 's/^/# /'
		# shellcheck disable=SC2034 # the caller's exit status
		TAP_FAIL=1
	fi
}
