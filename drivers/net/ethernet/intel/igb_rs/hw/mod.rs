// SPDX-License-Identifier: GPL-2.0

//! Register access, and the control-path procedures of the 82576 on it, one
//! module per hardware unit: reset (`reset`), queue start and stop
//! (`queues`), the NVM (`nvm`), the MAC address and flow control (`mac`),
//! the PHY (`phy`), interrupt moderation (`itr`) and the drop counters
//! (`stats`).
//!
//! The procedures are generic over [`Regs`], which the driver implements
//! on its BAR and the KUnit suite `igb_rs_hw_model` on a strict model of
//! the device (`model.rs`): a model that, unlike QEMU's, takes time to stop
//! a queue, to finish its DMA requests and to load its NVM. Each use is
//! monomorphised; nothing here is on the per-packet path, which writes the
//! BAR directly.
//!
//! The waits are those of the C driver (`e1000_82575.c` reset,
//! `e1000_mac.c` master disable, `e1000_nvm.c` EERD, `e1000_phy.c` MDIC)
//! and, for the queue enable bits, of the datasheet's queue enable and
//! disable sequences, which the C igb skips because it resets the whole
//! device where this driver restarts one queue.
//!
//! C driver: [`e1000_82575.c`](srctree/drivers/net/ethernet/intel/igb/e1000_82575.c)

use kernel::prelude::*;

mod itr;
mod mac;
mod nvm;
mod phy;
mod queues;
mod reset;
mod stats;

pub(crate) use itr::*;
pub(crate) use mac::*;
pub(crate) use nvm::*;
pub(crate) use phy::*;
pub(crate) use queues::*;
pub(crate) use reset::*;
pub(crate) use stats::*;

/// A register window of an 82576.
pub(crate) trait Regs {
    /// Reads register `reg`.
    fn rd(&self, reg: usize) -> u32;

    /// Writes `val` to register `reg`.
    fn wr(&self, reg: usize, val: u32);

    /// Waits at least `us` microseconds, sleeping: process context, no
    /// spinlock held.
    fn sleep_us(&self, us: u32);
}

/// Queues with registers (`rxq`, `txq`): a device reset stops them all.
pub(crate) const HW_QUEUES: usize = 16;
// TIMEOUT: the manageability configuration cycle, 100 polls 1 ms apart
// (PHY_CFG_TIMEOUT in C). QEMU never sets CFG_DONE either.
const CFG_DONE_POLLS: u32 = 100;
const MS: u32 = 1000;

/// Reads `reg` until `done` says yes of its value, `polls` more times
/// `step_us` apart after the first read. The last value read, as `Ok` if
/// `done` took it.
fn poll<R: Regs>(
    r: &R,
    reg: usize,
    polls: u32,
    step_us: u32,
    done: impl Fn(u32) -> bool,
) -> Result<u32, u32> {
    let mut v = r.rd(reg);
    for _ in 0..polls {
        if done(v) {
            return Ok(v);
        }
        r.sleep_us(step_us);
        v = r.rd(reg);
    }
    if done(v) {
        Ok(v)
    } else {
        Err(v)
    }
}
