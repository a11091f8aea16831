// SPDX-License-Identifier: GPL-2.0

//! Interrupts: the moderation of the queue vectors (EITR), fixed or
//! adaptive as in the C igb, and the causes of the other vector's
//! interrupt.

use crate::regs::*;
use kernel::prelude::*;

/// `rx-usecs` values that are not intervals but adaptive moderation, as
/// in the C igb: the interval follows the frames each interrupt brought.
/// With 3 (conservative, the default) it is 49 µs at the shortest; with 1
/// it goes down to a few µs for small frames.
pub(crate) const ITR_ADAPTIVE: u32 = 1;
pub(crate) const ITR_ADAPTIVE_CONSERVATIVE: u32 = 3;
/// The default: adaptive, conservative, as the C igb's.
pub(crate) const ITR_DEFAULT: u32 = ITR_ADAPTIVE_CONSERVATIVE;
/// The interval `adaptive-rx off` gives: 49 µs, about 20000 interrupts
/// per second (the C igb's IGB_20K_ITR, 196 in the register), also the
/// shortest conservative adaptive moderation goes to. QEMU's model makes
/// it about 200 µs.
pub(crate) const ITR_FIXED_USECS: u32 = 49;
/// Where adaptive moderation starts: 162 µs (the C igb's IGB_START_ITR,
/// 648 in the register).
pub(crate) const ITR_START_USECS: u32 = 162;
/// Adaptive moderation below 1000 Mb/s: 245 µs, about 4000 interrupts
/// per second (the C igb's IGB_4K_ITR, 980).
const ITR_SLOW_LINK_USECS: u32 = 245;
/// The longest interval EITR holds: 13 bits of 1 µs.
pub(crate) const ITR_MAX_USECS: u32 = EITR_INTERVAL_MASK >> EITR_INTERVAL_SHIFT;
/// The shortest one besides 0, as in C (IGB_MIN_ITR_USECS).
pub(crate) const ITR_MIN_USECS: u32 = 10;

/// Whether `usecs` can be a vector's setting (`ethtool -C rx-usecs`): 0
/// (no moderation), 1 or 3 (adaptive, [`ITR_ADAPTIVE`]), or an interval
/// of 10 to 8191 µs. The C igb takes up to 10000 µs, which it writes
/// masked to the field (10000 µs becomes 1808 µs).
pub(crate) fn itr_check(usecs: u32) -> Result<(), &'static CStr> {
    match usecs {
        0 | ITR_ADAPTIVE | ITR_ADAPTIVE_CONSERVATIVE => Ok(()),
        ITR_MIN_USECS..=ITR_MAX_USECS => Ok(()),
        _ => Err(c"igb_rs: rx-usecs must be 0, 1 or 3 (adaptive), or 10 to 8191"),
    }
}

/// Whether rx-usecs `usecs` is adaptive moderation.
pub(crate) fn itr_adaptive(usecs: u32) -> bool {
    matches!(usecs, ITR_ADAPTIVE | ITR_ADAPTIVE_CONSERVATIVE)
}

/// The interval a vector starts with under rx-usecs `usecs`.
pub(crate) fn itr_start(usecs: u32) -> u32 {
    if itr_adaptive(usecs) {
        ITR_START_USECS
    } else {
        usecs
    }
}

/// What a vector's frames were since its interval was last chosen: bytes
/// and frames received, bytes and frames sent.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct ItrLoad {
    pub(crate) rx: (u64, u64),
    pub(crate) tx: (u64, u64),
}

/// The next interval of a vector under adaptive moderation (`usecs` 1 or
/// 3), from its `load` since the last choice, on a link of `mbps`; `None`
/// to keep the interval (no frames), as the C igb's policy for vectors of
/// their own (`igb_update_ring_itr`): large frames mean a stream, and
/// longer intervals, up to about 375 µs at 3000 bytes; small ones mean
/// requests and answers, whose latency counts. The interval is the mean
/// frame on the wire (preamble, CRC and gap are 24 bytes more), received
/// or sent, whichever is larger, over 8 ns a byte (over 12 for frames of
/// 300 to 1200 bytes).
pub(crate) fn itr_adapt(usecs: u32, mbps: u32, load: ItrLoad) -> Option<u32> {
    let mean = |(bytes, frames): (u64, u64)| bytes.checked_div(frames).unwrap_or(0);
    let wire = mean(load.rx).max(mean(load.tx));
    if wire == 0 {
        return None;
    }
    if mbps != 1000 {
        return Some(ITR_SLOW_LINK_USECS);
    }
    let wire = wire.saturating_add(24).min(3000);
    // In the register's quarter-µs steps, then whole µs (what the field
    // holds), as C masks it.
    let reg = if wire > 300 && wire < 1200 {
        wire / 3
    } else {
        wire / 2
    };
    // CAST: at most 1500 / 4.
    let usecs_next = (reg >> EITR_INTERVAL_SHIFT) as u32;
    Some(if usecs == ITR_ADAPTIVE_CONSERVATIVE {
        usecs_next.max(ITR_FIXED_USECS)
    } else {
        usecs_next
    })
}

/// EITR for an interval of `usecs` (checked with [`itr_check`], or
/// chosen by [`itr_adapt`]), counters kept. 0 writes the shortest
/// interval the field holds, as C does (`igb_write_itr`).
pub(crate) fn eitr_value(usecs: u32) -> u32 {
    let v = (usecs << EITR_INTERVAL_SHIFT) & EITR_INTERVAL_MASK;
    v.max(1 << EITR_INTERVAL_SHIFT) | EITR_CNT_IGNR
}

/// What the causes of an "other" interrupt ask of the driver (ICR, read
/// once: the read clears it), as the C igb handles them
/// (`igb_msix_other`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OtherCauses {
    /// The link changed (LSC): the watchdog looks at it.
    pub(crate) link: bool,
    /// The device was reset behind the driver (DRSTA): every register is
    /// at its reset value, so the device needs all of its setup again,
    /// the address filters included (C schedules its reset task).
    pub(crate) reset: bool,
    /// The transmit DMA was out of sync (DOUTSYNC): counted, as C does.
    /// C also reads WVBR then, for VFs that spoofed frames; without VFs
    /// nothing sets it.
    pub(crate) dma_out_of_sync: bool,
}

impl OtherCauses {
    pub(crate) fn new(icr: u32) -> Self {
        Self {
            link: icr & ICR_LSC != 0,
            reset: icr & ICR_DRSTA != 0,
            dma_out_of_sync: icr & ICR_DOUTSYNC != 0,
        }
    }
}
