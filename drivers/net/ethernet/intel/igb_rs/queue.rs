// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: a receive and a transmit ring on one MSI-X vector and one
//! NAPI instance; the NAPI poll, the queue API (one receive queue
//! restarted on a new ring while the others run) and the per-queue
//! statistics.

use crate::{
    hw,
    netdev::Nic,
    regs::*,
    ring::{
        self,
        RxRing,
        TxRing,
        RING_SIZE, //
    },
};
use kernel::{
    dev_err,
    device::Bound,
    net::{
        driver::{
            Device,
            LockedDevice,
            QueueConfig,
            QueueMgmt,
            QueueStats,
            RxQueueStats,
            TxQueueStats, //
        },
        napi::{
            Napi,
            NapiPoll,
            Poll, //
        },
        netlink::request::ExtAck,
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
    rx_alloc_fail: Atomic<u64>,
    pub(crate) tx_packets: Atomic<u64>,
    pub(crate) tx_bytes: Atomic<u64>,
    pub(crate) tx_dropped: Atomic<u64>,
    /// Times the ring filled up and stopped the transmit queue.
    pub(crate) tx_stops: Atomic<u64>,
    /// Times completions woke it again.
    tx_wakes: Atomic<u64>,
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
    itr_load: [Atomic<u64>; 4],
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
    pub(crate) fn set_itr(&self, nic: &Nic, usecs: u32) {
        if self.itr.xchg(usecs, Relaxed) != usecs {
            nic.wr(eitr(self.vector()), hw::eitr_value(usecs));
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
    fn count_itr_load(&self, rx: (u64, u64), tx: (u64, u64)) {
        for (c, n) in self.itr_load.iter().zip([rx.0, rx.1, tx.0, tx.1]) {
            if n > 0 {
                c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
            }
        }
    }

    /// At the end of a poll that re-enables the vector: the interval the
    /// next interrupts get, from `ethtool -C rx-usecs` and, adaptive, from
    /// the frames since the last choice.
    fn update_itr(&self, nic: &Nic) {
        let setting = nic.itr_usecs.load(Relaxed);
        if !hw::itr_adaptive(setting) {
            self.set_itr(nic, setting);
            return;
        }
        let [rb, rf, tb, tf] =
            [0, 1, 2, 3].map(|i| self.itr_load.get(i).map_or(0, |c| c.xchg(0, Relaxed)));
        let load = hw::ItrLoad {
            rx: (rb, rf),
            tx: (tb, tf),
        };
        if let Some(usecs) = hw::itr_adapt(setting, nic.link_mbps.load(Relaxed), load) {
            self.set_itr(nic, usecs);
        }
    }

    /// The pair's receive counters, with the frames its queue dropped for
    /// lack of descriptors (`overruns`, the device's count).
    fn rx_stats(&self, overruns: u64) -> RxQueueStats {
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
    fn tx_stats(&self) -> TxQueueStats {
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

    /// Frees what the device sent, in the pair's poll; returns the bytes
    /// and frames sent since the last poll.
    fn clean_tx(&self, dev: &Device<Nic>, napi: &NapiPoll<'_, Self>) -> (u64, u64) {
        let mut tx = self.tx.lock();
        let (frames, bytes) = self.complete_tx(dev.parent(), &mut tx, Some(napi));
        if frames > 0 && dev.queue_stopped(self.txq()) && tx.unused() >= ring::TX_FRAME_MAX {
            dev.wake_queue(self.txq());
            self.tx_wakes.add(1, Relaxed);
        }
        (u64::from(bytes), u64::from(frames))
    }
}

impl Poll for QueuePair {
    type Data = Nic;

    fn poll(this: &Self, mut napi: NapiPoll<'_, Self>) -> i32 {
        let dev = napi.dev();
        let nic = dev.data();
        let budget = napi.budget();
        let sent = this.clean_tx(dev, &napi);
        let Some(mut rx) = napi.rx() else {
            // Netpoll, for transmit completions only: the ring and its
            // pools are left to the next poll with a budget.
            return 0;
        };
        let learn = |frame: &[u8], hash: u32| nic.learn_syn(frame, hash);
        let watch: Option<ring::SynWatch<'_>> = if nic.learning.load(Relaxed) {
            Some(&learn)
        } else {
            None
        };
        let (done, tail) = match &mut *this.rx.lock() {
            Some(ring) => ring.poll(&mut rx, budget, watch),
            None => Default::default(),
        };
        if let Some(tail) = tail {
            nic.wr(rxq(this.idx) + Q_TAIL, tail);
        }
        this.rx_packets.add(done.packets, Relaxed);
        this.rx_bytes.add(done.bytes, Relaxed);
        this.rx_dropped.add(done.dropped, Relaxed);
        this.rx_alloc_fail.add(done.alloc_fail, Relaxed);
        this.count_itr_load((done.bytes, done.packets), sent);
        if done.starved {
            // No buffer to receive into, so no interrupt will come: poll
            // until the pool has memory again.
            return budget;
        }
        // CAST: at most `budget`.
        let work = done.packets as i32 + done.dropped as i32;
        if work < budget && napi.complete_done(work) {
            this.update_itr(nic);
            nic.wr(EIMS, this.eims());
        }
        work.min(budget)
    }
}

#[vtable]
impl QueueMgmt for Nic {
    type RxQueueMem = RxRing;

    const RX_PAGE_SIZE: bool = true;

    fn default_config(_dev: &Device<Self>) -> QueueConfig {
        QueueConfig {
            // CAST: a page fits a u32.
            rx_page_size: kernel::page::PAGE_SIZE as u32,
        }
    }

    fn validate_config(_dev: &Device<Self>, cfg: &QueueConfig, extack: &ExtAck<'_>) -> Result {
        if ring::rx_buf_size(cfg).is_none() {
            extack.set_msg(c"igb_rs: rx-page-size must be a power of 2 from PAGE_SIZE to 16 KiB");
            return Err(EINVAL);
        }
        Ok(())
    }

    fn rx_mem_alloc(dev: &LockedDevice<Self>, cfg: &QueueConfig, idx: u32) -> Result<RxRing> {
        let nic = dev.data();
        let q = nic.queue(idx)?;
        nic.new_rx_ring(dev, q.idx, cfg)
    }

    fn rx_stop(dev: &LockedDevice<Self>, idx: u32) -> Result<RxRing> {
        let nic = dev.data();
        let q = nic.queue(idx)?;
        // The queues restart while the device is up, their NAPIs added.
        let napi = q.napi.added().ok_or(EINVAL)?;
        // NAPI first: no tail write races with the stop.
        napi.disable(dev);
        // Unlike the C igb, which resets the whole device, one queue stops
        // here while the others run: the ring may go only once the queue's
        // ENABLE bit reads 0 (the device can finish a descriptor fetch or
        // a write-back after the bit is cleared). If it never does, the
        // restart is refused and the queue keeps its ring: the core then
        // leaves the queue as it was.
        let ring = match hw::rx_stop(nic, q.idx) {
            Ok(off) => q.take_rx(off).ok_or(EINVAL),
            Err(hw::Stuck) => {
                dev_err!(nic.pdev, "receive queue {} did not stop\n", q.idx);
                nic.wr(rxq(q.idx) + Q_DCTL, RXDCTL_VALUE);
                Err(EBUSY)
            }
        };
        match ring {
            Ok(mut r) => {
                // The core frees the ring after the queue restarts, with
                // the NAPI running: the pool comes back from the NAPI,
                // disabled just above. Should that fail, it stays with the
                // NAPI, which destroys it when removed.
                let _ = r.detach_napi(napi, dev);
                Ok(r)
            }
            Err(e) => {
                napi.enable(dev);
                // What came while NAPI was off, as in `rx_start`.
                q.napi.schedule();
                Err(e)
            }
        }
    }

    fn rx_start(
        dev: &LockedDevice<Self>,
        mut ring: RxRing,
        idx: u32,
    ) -> Result<(), (Error, RxRing)> {
        let nic = dev.data();
        let Some((q, napi)) = nic.queue(idx).ok().and_then(|q| Some((q, q.napi.added()?))) else {
            return Err((EINVAL, ring));
        };
        if ring.is_starved() {
            // The pools gave no buffer: the old ring, which has some, is
            // started again instead.
            return Err((ENOMEM, ring));
        }
        // The queue is off (`rx_stop`); `start_rx` programs it while it is,
        // enables it, waits until it runs, and only then gives it the
        // descriptors.
        let setup = match nic.rx_setup(&mut ring) {
            Ok(setup) => setup,
            Err(e) => return Err((e, ring)),
        };
        if let Err(e) = nic.start_rx(q.idx, setup) {
            if e == hw::StartError::Stuck {
                // The queue may use the ring: it goes back to the core
                // only once the device is reset.
                let _ = nic.stuck_reset();
            }
            return Err((e.into(), ring));
        }
        // The queue's NAPI is disabled (`rx_stop`) until just below: it
        // takes the ring's pool, which its poll alone allocates from.
        if let Err(e) = ring.attach_napi(napi, dev) {
            return Err((e, ring));
        }
        // The queue was stopped: there is no old ring.
        drop(q.put_rx(ring));
        napi.enable(dev);
        // The vector may have fired while NAPI was off: the handler masked
        // it and its schedule was dropped. One poll takes what came
        // meanwhile and unmasks the vector when it completes.
        q.napi.schedule();
        Ok(())
    }
}

impl QueueStats for Nic {
    fn rx_queue_stats(dev: &Device<Self>, idx: u32) -> RxQueueStats {
        let nic = dev.data();
        nic.read_drops();
        nic.queue(idx).map_or_else(
            |_| RxQueueStats::default(),
            |q| q.rx_stats(nic.drops.queue(q.idx)),
        )
    }

    fn tx_queue_stats(dev: &Device<Self>, idx: u32) -> TxQueueStats {
        dev.data()
            .queue(idx)
            .map_or_else(|_| TxQueueStats::default(), QueuePair::tx_stats)
    }

    fn base_stats(dev: &Device<Self>) -> (RxQueueStats, TxQueueStats) {
        // What the pairs out of use counted while they were in use; zero
        // otherwise, which says which counters there are.
        let nic = dev.data();
        let mut rx = RxQueueStats {
            packets: Some(0),
            bytes: Some(0),
            hw_drops: Some(0),
            hw_drop_overruns: Some(0),
            alloc_fail: Some(0),
            ..Default::default()
        };
        let mut tx = TxQueueStats {
            packets: Some(0),
            bytes: Some(0),
            hw_drops: Some(0),
            stop: Some(0),
            wake: Some(0),
            hw_gso_packets: Some(0),
            hw_gso_bytes: Some(0),
            hw_gso_wire_packets: Some(0),
            hw_gso_wire_bytes: Some(0),
            ..Default::default()
        };
        for q in nic.queues.get(nic.active().len()..).unwrap_or(&[]) {
            rx.add(&q.rx_stats(nic.drops.queue(q.idx)));
            tx.add(&q.tx_stats());
        }
        (rx, tx)
    }
}
