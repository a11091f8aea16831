// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: a receive and a transmit ring on one MSI-X vector and one
//! NAPI instance, and their counters. What the core runs on them is in
//! `queue_ops.rs`.

use crate::{
    hw,
    regs::*,
    ring::{
        RxRing,
        TxRing,
        RING_SIZE, //
    },
};
use kernel::{
    device::Bound,
    net::{
        driver::{
            RxQueueStats,
            TxQueueStats, //
        },
        napi::{
            Napi,
            NapiPoll, //
        },
    },
    new_spinlock_bh,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        SpinLockBh, //
    },
};

/// One queue pair: rings, NAPI, counters.
#[pin_data]
pub(crate) struct QueuePair {
    pub(crate) idx: usize,
    /// The Linux interrupt number of the pair's MSI-X vector.
    pub(crate) irq: u32,
    /// Before the rings, so that it is dropped (and the instance removed)
    /// first: `open` (netdev.rs) adds it on that promise.
    #[pin]
    pub(crate) napi: Napi<QueuePair>,
    /// The receive ring; `None` while the device is down, or the queue
    /// stopped for a restart. Taken by the NAPI poll (softirq) and by
    /// process context (open, stop, queue restart): bottom halves are off
    /// while it is held. A ring is never dropped under the lock, as its
    /// page pools sleep on the way out: [`QueuePair::take_rx`] and
    /// [`QueuePair::put_rx`] hand rings in and out.
    #[pin]
    pub(crate) rx: SpinLockBh<Option<RxRing>>,
    /// The transmit ring: taken by `start_xmit` and the NAPI poll (bottom
    /// halves off) and by process context (open, stop, ring resize).
    #[pin]
    pub(crate) tx: SpinLockBh<TxRing>,
    pub(crate) rx_packets: Atomic<u64>,
    pub(crate) rx_bytes: Atomic<u64>,
    pub(crate) rx_dropped: Atomic<u64>,
    /// Times refilling the ring found a page pool empty.
    pub(crate) rx_alloc_fail: Atomic<u64>,
    pub(crate) tx_packets: Atomic<u64>,
    pub(crate) tx_bytes: Atomic<u64>,
    pub(crate) tx_dropped: Atomic<u64>,
    /// Times the ring filled up and stopped the transmit queue.
    pub(crate) tx_stops: Atomic<u64>,
    /// Times completions woke it again.
    pub(crate) tx_wakes: Atomic<u64>,
    /// Frames the device segmented, their bytes, and the segments'.
    pub(crate) tso_packets: Atomic<u64>,
    pub(crate) tso_bytes: Atomic<u64>,
    pub(crate) tso_wire_packets: Atomic<u64>,
    pub(crate) tso_wire_bytes: Atomic<u64>,
    /// The interval between the vector's interrupts now, µs: written by
    /// `Nic::set_itr` while the pair's NAPI is off, and by its poll.
    itr: Atomic<u32>,
    /// The vector's frames since its poll last chose the interval
    /// (adaptive moderation): bytes and frames received, then sent.
    pub(crate) itr_load: [Atomic<u64>; 4],
}

impl QueuePair {
    pub(crate) fn new(
        dev: &kernel::device::Device<Bound>,
        idx: usize,
        irq: u32,
    ) -> impl PinInit<Self, Error> + '_ {
        try_pin_init!(Self {
            idx,
            irq,
            napi <- Napi::new(),
            rx <- new_spinlock_bh!(None),
            tx <- new_spinlock_bh!(TxRing::new(dev, RING_SIZE)?),
            rx_packets: Atomic::new(0),
            rx_bytes: Atomic::new(0),
            rx_dropped: Atomic::new(0),
            rx_alloc_fail: Atomic::new(0),
            tx_packets: Atomic::new(0),
            tx_bytes: Atomic::new(0),
            tx_dropped: Atomic::new(0),
            tx_stops: Atomic::new(0),
            tx_wakes: Atomic::new(0),
            tso_packets: Atomic::new(0),
            tso_bytes: Atomic::new(0),
            tso_wire_packets: Atomic::new(0),
            tso_wire_bytes: Atomic::new(0),
            itr: Atomic::new(u32::MAX),
            itr_load: [const { Atomic::new(0) }; 4],
        })
    }

    /// The MSI-X vector of the pair, and its bit in EIMS/EIMC.
    pub(crate) fn vector(&self) -> u32 {
        // CAST: below QUEUES.
        self.idx as u32 + 1
    }

    pub(crate) fn eims(&self) -> u32 {
        1 << self.vector()
    }

    /// Gives the pair's vector an interval of `usecs` between interrupts,
    /// unless it has it.
    pub(crate) fn set_itr(&self, r: &impl hw::Regs, usecs: u32) {
        if self.itr.xchg(usecs, Relaxed) != usecs {
            r.wr(eitr(self.vector()), hw::eitr_value(usecs));
        }
    }

    /// Forgets the load adaptive moderation counted, and the interval, so
    /// that `set_itr` writes the next one whatever it is.
    pub(crate) fn reset_itr(&self) {
        self.itr.store(u32::MAX, Relaxed);
        for c in &self.itr_load {
            c.store(0, Relaxed);
        }
    }

    /// Counts a poll's frames for adaptive moderation: `rx` and `tx` are
    /// bytes and frames received and sent.
    pub(crate) fn count_itr_load(&self, rx: (u64, u64), tx: (u64, u64)) {
        for (c, n) in self.itr_load.iter().zip([rx.0, rx.1, tx.0, tx.1]) {
            if n > 0 {
                c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
            }
        }
    }

    /// The pair's receive counters, with the frames its queue dropped for
    /// lack of descriptors (`overruns`, the device's count).
    pub(crate) fn rx_stats(&self, overruns: u64) -> RxQueueStats {
        RxQueueStats {
            packets: Some(self.rx_packets.load(Relaxed)),
            bytes: Some(self.rx_bytes.load(Relaxed)),
            hw_drops: Some(self.rx_dropped.load(Relaxed) + overruns),
            hw_drop_overruns: Some(overruns),
            alloc_fail: Some(self.rx_alloc_fail.load(Relaxed)),
            ..Default::default()
        }
    }

    /// The pair's transmit counters.
    pub(crate) fn tx_stats(&self) -> TxQueueStats {
        TxQueueStats {
            packets: Some(self.tx_packets.load(Relaxed)),
            bytes: Some(self.tx_bytes.load(Relaxed)),
            hw_drops: Some(self.tx_dropped.load(Relaxed)),
            stop: Some(self.tx_stops.load(Relaxed)),
            wake: Some(self.tx_wakes.load(Relaxed)),
            hw_gso_packets: Some(self.tso_packets.load(Relaxed)),
            hw_gso_bytes: Some(self.tso_bytes.load(Relaxed)),
            hw_gso_wire_packets: Some(self.tso_wire_packets.load(Relaxed)),
            hw_gso_wire_bytes: Some(self.tso_wire_bytes.load(Relaxed)),
            ..Default::default()
        }
    }

    /// Takes the receive ring out, now that the queue does no DMA (`off`,
    /// which must be the pair's). The guard is gone when this returns, so
    /// the caller may drop the ring, which sleeps (page pools).
    pub(crate) fn take_rx(&self, off: hw::RxOff) -> Option<RxRing> {
        if off.queue() != self.idx {
            return None;
        }
        let mut rx = self.rx.lock();
        rx.take()
    }

    /// Empties the transmit ring, now that the queue does no DMA (`off`,
    /// which must be the pair's): frames not sent are freed, and their
    /// mappings for `dev`, the device, undone.
    pub(crate) fn reset_tx(&self, dev: &kernel::device::Device<Bound>, off: hw::TxOff) {
        if off.queue() == self.idx {
            self.tx.lock().reset(dev);
        }
    }

    /// Puts `ring` in as the receive ring and returns the one it replaces,
    /// to be dropped by the caller outside the lock.
    #[must_use = "the old ring must be dropped outside the lock"]
    pub(crate) fn put_rx(&self, ring: RxRing) -> Option<RxRing> {
        let mut rx = self.rx.lock();
        rx.replace(ring)
    }

    /// The pair's transmit queue, as the stack numbers it.
    pub(crate) fn txq(&self) -> u16 {
        // CAST: below QUEUES.
        self.idx as u16
    }

    /// Frees what the device sent off `tx`, the pair's ring, and tells
    /// byte queue limits: from the pair's poll `napi` at once, with what
    /// was freed before outside it; from `start_xmit` or the watchdog (no
    /// `napi`) through the poll, scheduled here, which alone tells a
    /// queue's completions. Returns the frames freed and their bytes: from
    /// the poll, by it or outside it since its last run, so that the poll
    /// wakes a queue stopped for room that the watchdog made. `dev` is the
    /// device, which the ring's mappings are undone for.
    pub(crate) fn complete_tx(
        &self,
        dev: &kernel::device::Device<Bound>,
        tx: &mut TxRing,
        napi: Option<&NapiPoll<'_, Self>>,
    ) -> (u32, u32) {
        let (frames, bytes) = tx.clean(dev, napi);
        match napi {
            Some(napi) => {
                let (f, b) = tx.take_unreported();
                let (f, b) = (f.wrapping_add(frames), b.wrapping_add(bytes));
                if f > 0 {
                    napi.tx_completed(f, b);
                }
                (f, b)
            }
            None => {
                if frames > 0 {
                    tx.defer_completions(frames, bytes);
                    self.napi.schedule();
                }
                (frames, bytes)
            }
        }
    }
}
