// SPDX-License-Identifier: GPL-2.0

//! What the core runs on the queue pairs: the NAPI poll, the queue
//! management API (one receive queue restarted on a new ring while the
//! others run) and the per-queue statistics.

use crate::{
    hw,
    netdev::Nic,
    queue::QueuePair,
    regs::{
        EIMS,
        Q_DCTL,
        Q_TAIL,
        RXDCTL_VALUE,
        *, //
    },
    ring::{
        self,
        RxRing, //
    },
};
use kernel::{
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
            NapiPoll,
            Poll, //
        },
        netlink::request::ExtAck, //
    },
    prelude::*,
    sync::atomic::Relaxed, //
};

impl QueuePair {
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
        // The queues restart while the device is up, their NAPIs added. A
        // device whose reopen failed (`Nic::resize_rings`) is up with no
        // queue running: as for a device that is down, which the core
        // takes when it uninstalls a memory provider, and the provider
        // reaches the queue when it next opens.
        let napi = q.napi.added().ok_or(ENETDOWN)?;
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
        // A ring the pools gave no buffer (memory was short, or a
        // provider's buffers are all with user space) starts as in `open`:
        // its first poll, scheduled below, refills it as buffers come. Were
        // it refused, the core would start the old ring again, which an
        // uninstall has just taken the provider from, and warn if that
        // ring, as empty, were refused too.
        //
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
