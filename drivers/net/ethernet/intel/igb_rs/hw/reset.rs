// SPDX-License-Identifier: GPL-2.0

//! Device reset, as the C driver's (`e1000_82575.c`, with `e1000_mac.c`'s
//! master disable), and taking control of the device from the firmware and
//! giving it back.

use super::{
    poll,
    Regs,
    Stopped,
    CFG_DONE_POLLS,
    HW_QUEUES,
    MS, //
};
use crate::regs::*;

// TIMEOUT: DMA requests in flight after CTRL.GIO_MASTER_DISABLE, 800 polls
// 100 µs apart (MASTER_DISABLE_TIMEOUT in C).
const MASTER_POLLS: u32 = 800;
const MASTER_POLL_US: u32 = 100;
/// What the receive and transmit units finish before CTRL.RST, as in C.
const RESET_SETTLE_US: u32 = 10_000;
// TIMEOUT: the NVM auto-read after reset, 10 polls 1 ms apart
// (AUTO_READ_DONE_TIMEOUT in C). QEMU never sets AUTO_RD: the wait runs
// out and the reset goes on, as in C.
const AUTO_RD_POLLS: u32 = 10;

/// The waits of a reset that ended before the time allowed: DMA requests
/// drained, NVM loaded, manageability configuration done. Only the first
/// matters for DMA; QEMU does neither of the others.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResetWaits {
    pub(crate) master: bool,
    pub(crate) auto_rd: bool,
    pub(crate) cfg_done: bool,
}

/// The port (PCI function) of the device on its card.
pub(crate) fn port<R: Regs>(r: &R) -> u32 {
    (r.rd(STATUS) & STATUS_FUNC_MASK) >> STATUS_FUNC_SHIFT
}

/// Raises the PCIe completion timeout from its default (50 µs to 50 ms) to
/// 10 ms to 200 ms, if nothing set it, and turns off resending on timeout.
/// With capability version 2 the range is in configuration space (DEVCTL2)
/// and stays as the firmware set it.
fn set_completion_timeout<R: Regs>(r: &R) {
    let mut gcr = r.rd(GCR);
    if gcr & (GCR_CMPL_TMOUT_MASK | GCR_CAP_VER2) == 0 {
        gcr |= GCR_CMPL_TMOUT_10MS;
    }
    r.wr(GCR, gcr & !GCR_CMPL_TMOUT_RESEND);
}

/// Resets the device: no interrupts, no DMA, every register at its reset
/// value, the NVM loaded (MAC address in RAR0). Process context.
///
/// DMA requests in flight when CTRL.RST hits can hang the PCIe link, so
/// new ones are blocked first and the pending ones drained
/// (STATUS.GIO_MASTER_ENABLE reads 0); the receive and transmit units are
/// stopped and given 10 ms. After CTRL.RST the device reloads its NVM
/// (EECD.AUTO_RD) and its manageability configuration (EEMNGCTL.CFG_DONE);
/// RAL/RAH hold the address only once the first is done. None of the
/// waits failing stops the reset (C does the same: a device without NVM
/// never sets AUTO_RD, nor does QEMU's).
pub(crate) fn reset<R: Regs>(r: &R) -> (Stopped, ResetWaits) {
    r.wr(CTRL, r.rd(CTRL) | CTRL_GIO_MASTER_DISABLE);
    let master = poll(r, STATUS, MASTER_POLLS, MASTER_POLL_US, |v| {
        v & STATUS_GIO_MASTER_ENABLE == 0
    })
    .is_ok();
    set_completion_timeout(r);
    r.wr(EIMC, !0);
    r.wr(IMC, !0);
    r.wr(RCTL, 0);
    r.wr(TCTL, TCTL_PSP);
    // Posted writes: the read flushes them before the wait.
    let _ = r.rd(STATUS);
    r.sleep_us(RESET_SETTLE_US);
    r.wr(CTRL, r.rd(CTRL) | CTRL_RST);
    let auto_rd = poll(r, EECD, AUTO_RD_POLLS, MS, |v| v & EECD_AUTO_RD != 0).is_ok();
    let done = EEMNGCTL_CFG_DONE_PORT_0 << port(r);
    let cfg_done = poll(r, EEMNGCTL, CFG_DONE_POLLS, MS, |v| v & done != 0).is_ok();
    r.wr(EIMC, !0);
    r.wr(IMC, !0);
    let _ = r.rd(ICR);
    (
        Stopped {
            queues: HW_QUEUES,
            by_reset: true,
        },
        ResetWaits {
            master,
            auto_rd,
            cfg_done,
        },
    )
}

/// Tells the firmware a driver runs the device (CTRL_EXT.DRV_LOAD).
pub(crate) fn take_control<R: Regs>(r: &R) {
    r.wr(CTRL_EXT, r.rd(CTRL_EXT) | CTRL_EXT_DRV_LOAD);
}

/// Gives the device back to the firmware: on remove, and when no driver
/// runs it. A reset does not clear DRV_LOAD.
pub(crate) fn release_control<R: Regs>(r: &R) {
    r.wr(CTRL_EXT, r.rd(CTRL_EXT) & !CTRL_EXT_DRV_LOAD);
}
