// SPDX-License-Identifier: GPL-2.0

//! The device's drop counters, which clear when read.

use super::Regs;
use crate::regs::*;
use kernel::{
    net::driver::Stats64,
    sync::atomic::{
        Atomic,
        Relaxed, //
    },
};

/// The device's drop counters, added up: MPC, RNBC, and RQDPC of queues
/// `0..N`.
///
/// The device's statistics registers clear when read and stop at all ones
/// rather than wrap. Each reading is therefore added here once, by
/// whichever reader made it (the watchdog every 2 s, `get_stats64`, the
/// queue counters, `ethtool -S`), readers racing with each other included:
/// each gets its own part of the count. A device gone from the bus reads
/// all ones too: a reading of all ones counts only if STATUS shows the
/// device still there.
pub(crate) struct Drops<const N: usize> {
    /// MPC: frames missed, the packet buffer full.
    missed: Atomic<u64>,
    /// RNBC: frames that found their queue without descriptors.
    no_buffer: Atomic<u64>,
    /// RQDPC(n): frames queue n dropped for lack of descriptors
    /// (SRRCTL.DROP_EN).
    queue: [Atomic<u64>; N],
}

impl<const N: usize> Drops<N> {
    pub(crate) fn new() -> Self {
        Self {
            missed: Atomic::new(0),
            no_buffer: Atomic::new(0),
            queue: core::array::from_fn(|_| Atomic::new(0)),
        }
    }

    /// Reads the counters, which clears them, and adds what they counted.
    pub(crate) fn update<R: Regs>(&self, r: &R) {
        let missed = r.rd(MPC);
        let no_buffer = r.rd(RNBC);
        let queue: [u32; N] = core::array::from_fn(|q| r.rd(rxq(q) + Q_DPC));
        let suspect = missed == !0 || no_buffer == !0 || queue.contains(&!0);
        let gone = suspect && r.rd(STATUS) == !0;
        let add = |total: &Atomic<u64>, n: u32| {
            if !(gone && n == !0) {
                total.fetch_add(u64::from(n), Relaxed);
            }
        };
        add(&self.missed, missed);
        add(&self.no_buffer, no_buffer);
        for (total, n) in self.queue.iter().zip(queue) {
            add(total, n);
        }
    }

    /// Frames missed for a full packet buffer (MPC).
    pub(crate) fn missed(&self) -> u64 {
        self.missed.load(Relaxed)
    }

    /// Frames that found their queue without descriptors (RNBC).
    pub(crate) fn no_buffer(&self) -> u64 {
        self.no_buffer.load(Relaxed)
    }

    /// Frames queue `q` dropped for lack of descriptors (RQDPC); 0 for a
    /// queue not counted.
    pub(crate) fn queue(&self, q: usize) -> u64 {
        self.queue.get(q).map_or(0, |t| t.load(Relaxed))
    }

    /// Puts the totals in the device's counters: frames the packet buffer
    /// missed in `rx_missed_errors` (as C), those the queues dropped in
    /// `rx_fifo_errors` (as C, which adds MPC there too: here each frame
    /// is in one counter only). RNBC is in neither: the frames it counts
    /// may still be received; `ethtool -S` shows it, as in C.
    pub(crate) fn fill(&self, stats: &mut Stats64) {
        stats.rx_missed_errors = self.missed();
        stats.rx_fifo_errors = (0..N).map(|q| self.queue(q)).sum();
    }
}
