#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the built kernel with virtme-ng and run guest suites.
#
#   vm.sh RESULTS_DIR suite...
#
# QEMU topology: the device under test (-device igb, an Intel 82576) and a
# virtio-net peer, both on QEMU hub 0. TCG unless a quick probe shows that
# KVM boots here (nested KVM often hangs at boot).
#
# HOST_CPU=1 runs harness/hostcpu.sh beside the VM, in RESULTS/hostcpu,
# which the guest finds in $HOSTCPU: the benchmarks ask it for the vCPU
# threads' on-CPU time (QEMU names its threads for it: debug-threads=on).
# With INSN_PLUGIN (the built harness/insncount.c) too, QEMU counts the
# guest's instructions between the same marks: the guest finds the counts
# in $HOSTCPU (make bench PROFILE=1's profile, a boot of its own).
#
# Every run is bounded by VM_TIMEOUT. When it is hit, harness/hangdump.py
# asks QEMU's monitor (a unix socket in RESULTS) where each vCPU is and
# prints it with the tail of the console, which is also printed when the
# guest never reaches the test runner.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

RESULTS=$1
shift
KERNEL_IMAGE=${KERNEL_IMAGE:-$KBUILD_OUT/arch/x86/boot/bzImage}
KSFT_DIR=${KSFT_DIR:-$CACHE_DIR/kselftest}
VM_TIMEOUT=${VM_TIMEOUT:-900}
VM_MEMORY=${VM_MEMORY:-2G}
VM_CPUS=${VM_CPUS:-2}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
# The factor upstream's Python tests' waits are stretched by
# (guest/slowwait): make check DEBUG=1 sets it.
SLOW_WAITS=${SLOW_WAITS:-1}
KVM=${KVM:-auto}
# The guest kernel's command line.
VM_APPEND=${VM_APPEND:-kmemleak=on}

[ -f "$KERNEL_IMAGE" ] || die "no kernel at $KERNEL_IMAGE: run 'make kernel'"
[ -x "$VNG" ] || die "$VNG (virtme-ng) not found: run 'make setup'"

# shellcheck disable=SC2054 # commas separate QEMU suboptions
QEMU_NET=(
	-netdev hubport,id=dut0,hubid=0
	-device igb,netdev=dut0,mac=52:54:00:82:57:60
	-netdev hubport,id=peer0,hubid=0
	-device virtio-net-pci,netdev=peer0,mac=52:54:00:82:57:61
)
# QEMU's own log, for a VM that ends before the guest says it is done:
# each CPU reset and a triple fault, what the guest did wrong to a device,
# the run states and who asked for the shutdown (exit_cause below).
# shellcheck disable=SC2054 # a comma list of log items
QEMU_NET+=(-d guest_errors,cpu_reset -D "$RESULTS/qemu.log"
	-trace runstate_set -trace qemu_system_shutdown_request)
host_env=
[ "${HOST_CPU:-0}" = 1 ] && QEMU_NET+=(-name debug-threads=on) && host_env="HOSTCPU=$RESULTS/hostcpu"
# INSN_PLUGIN: harness/insncount.c built, to count the guest's
# instructions between the watcher's marks (make bench PROFILE=1).
if [ -n "${INSN_PLUGIN:-}" ]; then
	[ -n "$host_env" ] || die "INSN_PLUGIN needs HOST_CPU=1: the watcher passes the marks on"
	[ -f "$INSN_PLUGIN" ] || die "no instruction counter at $INSN_PLUGIN"
	QEMU_NET+=(-plugin "$INSN_PLUGIN,dir=$RESULTS/hostcpu")
fi

# Whatever VM_APPEND says, a kernel log buffer far larger than a boot's
# log: the guest's recorder (guest/kmsg.py) starts reading it only once
# userspace runs, and results.py fails a log that does not start at boot
# or lost records. The default (128 KiB, CONFIG_LOG_BUF_SHIFT) is full
# before the KUnit suites end. It costs the guest about 4.5 times its
# size (144 MiB): the text, and a descriptor and a record header for every
# 32 bytes of it.
VNG_CMD=(
	"$VNG" --verbose --run "$KERNEL_IMAGE" --user root --disable-microvm --force-9p
	--cpus "$VM_CPUS" --memory "$VM_MEMORY"
	--append log_buf_len=32M --append "$VM_APPEND"
)

# KVM is used only when it is there and boots a guest within a short time.
use_kvm() {
	[ "$KVM" = 0 ] && return 1
	[ -w /dev/kvm ] || return 1
	[ "$KVM" = 1 ] && return 0
	local stamp
	stamp=$CACHE_DIR/kvm-probe.$(cat /proc/sys/kernel/random/boot_id)
	if [ ! -f "$stamp" ]; then
		info "probing KVM (once per host boot)"
		if timeout -k 5 30 "${VNG_CMD[@]}" --exec true </dev/null >/dev/null 2>&1; then
			echo yes >"$stamp"
		else
			echo no >"$stamp"
		fi
	fi
	[ "$(cat "$stamp")" = yes ]
}

accel=(--disable-kvm)
use_kvm && accel=()
info "booting ${KERNEL_IMAGE#"$CACHE_DIR"/} ($([ ${#accel[@]} -eq 0 ] && echo KVM || echo TCG)): ${*}"

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
monitor=$RESULTS/monitor.sock
QEMU_NET+=(-monitor "unix:$monitor,server=on,wait=off")
echo "$*" >"$RESULTS/suites"
console=$RESULTS/console.log
watcher=
if [ -n "$host_env" ]; then
	mkdir -p "$RESULTS/hostcpu"
	# Before the watcher starts: it tells the plugin's runs by this file.
	[ -z "${INSN_PLUGIN:-}" ] || : >"$RESULTS/hostcpu/insns.req"
	# A process group of its own (setsid), to stop it whole.
	setsid "$HARNESS_DIR/hostcpu.sh" "$RESULTS/hostcpu" $$ </dev/null >/dev/null 2>&1 &
	watcher=$!
fi
start=$(date +%s)
set +e
# The dumper stops QEMU (its monitor's quit) once it has said where the
# guest is; timeout stops whatever is left a minute later.
python3 "$HARNESS_DIR/hangdump.py" "$monitor" "${KERNEL_IMAGE%/arch/x86/boot/bzImage}/System.map" \
	--after "$VM_TIMEOUT" --quit >"$RESULTS/hang.txt" 2>&1 &
dumper=$!
timeout -k 10 $((VM_TIMEOUT + 60)) "${VNG_CMD[@]}" "${accel[@]}" \
	--rwdir="$RESULTS" \
	--qemu-opts="${QEMU_NET[*]}" \
	--exec "TEST_TIMEOUT=$TEST_TIMEOUT SLOW_WAITS=$SLOW_WAITS NIC_DRIVER=${NIC_DRIVER:-igb_rs} GUEST_NET=${GUEST_NET:-1} KSRC=$KERNEL_TREE RACES_SEED=${RACES_SEED:-} RACES_ITERATIONS=${RACES_ITERATIONS:-} RACES_SECS=${RACES_SECS:-} $host_env $HARNESS_DIR/guest/run.sh $RESULTS $KSFT_DIR $*" \
	</dev/null >"$console" 2>&1
rc=$?
set -e
kill "$dumper" 2>/dev/null || true
wait "$dumper" 2>/dev/null || true
[ -z "$watcher" ] || kill -- -"$watcher" 2>/dev/null || true
info "VM ran $(($(date +%s) - start)) s"

if [ -s "$RESULTS/hang.txt" ] || [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	tail -n 40 "$console" >&2
	cat "$RESULTS/hang.txt" >&2
	die "VM did not finish within ${VM_TIMEOUT}s (console tail above; full console: $console)"
fi
# Why QEMU ended, from its log. virtme-ng exits 255 whenever QEMU ends
# without the guest's exit code, and passes -no-reboot and panic=-1: a
# guest reset, a panic's among them, ends QEMU without a shutdown request
# (a panic prints in the console first). The reasons are QEMU's
# ShutdownCause.
exit_cause() {
	local log=$RESULTS/qemu.log req
	[ -f "$log" ] || { echo "QEMU wrote no log"; return; }
	if grep -q 'Triple fault' "$log"; then
		echo "a vCPU triple-faulted, which resets the machine"
	elif req=$(grep -o 'qemu_system_shutdown_request reason=[0-9]*' "$log" | tail -n 1) && [ -n "$req" ]; then
		case ${req##*=} in
		4) echo "QEMU got a signal (its message is in the console)" ;;
		6) echo "the guest powered the machine off" ;;
		*) echo "a shutdown was requested (QEMU's ShutdownCause ${req##*=})" ;;
		esac
	elif grep -q 'new_state [0-9]* (shutdown)' "$log"; then
		echo "the guest reset the machine (after a panic, the console has it)"
	else
		echo "QEMU logged no shutdown: it was killed (SIGKILL) or crashed"
	fi
}

if ! grep -q '^\[guest\] done' "$console"; then
	tail -n 40 "$console" >&2
	die "VM exited ($rc) before the test runner finished: $(exit_cause) (console tail above; full console: $console; QEMU's log: $RESULTS/qemu.log)"
fi
# The runner finished; the machine must then power off. A panic or a
# reset on the way (a device's shutdown, say) comes after the log
# recorder stopped.
cause=$(exit_cause)
if [ "$cause" != "the guest powered the machine off" ]; then
	tail -n 40 "$console" >&2
	die "the test runner finished, then $cause (VM exit $rc; console tail above; full console: $console; QEMU's log: $RESULTS/qemu.log)"
fi
exit 0
