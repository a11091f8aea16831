// SPDX-License-Identifier: GPL-2.0

//! The network device: its data (`Nic`), bringing the device up and down,
//! transmit, the receive filters (`set_rx_mode`), the MTU, and the
//! device-wide counters.

use crate::{
    hw,
    max_frame,
    queue::QueuePair,
    regs::*,
    ring::{
        self,
        RxRing,
        TxError,
        TxRing,
        DESC_SIZE,
        RING_SIZE, //
    },
    rss::{
        Rss,
        RETA_SIZE, //
    },
    steer,
    DEFAULT_QUEUES,
    MAX_MTU,
    QUEUES, //
};
use kernel::{
    dev_dbg, dev_err,
    device::Bound,
    io::Io,
    net::{
        driver::{
            self,
            BoundResource,
            Busy,
            Device,
            DeviceWork,
            LockedDevice,
            Operations,
            QueueConfig,
            RxMode,
            Stats64,
            TxQueue,
            ETH_ALEN, //
        },
        ethtool,
        skbuff::{
            DropReason,
            SkBuff, //
        },
    },
    new_mutex, new_spinlock_bh, new_spinlock_irq, pci,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{
            Atomic,
            Relaxed, //
        },
        Mutex,
        SpinLockBh,
        SpinLockIrq, //
    },
    time::{
        delay::fsleep,
        Delta,
        Instant,
        Monotonic, //
    },
};

/// The watchdog's work item.
pub(crate) const WATCHDOG: u64 = 0;
/// The reset's.
pub(crate) const RESET_TASK: u64 = 1;

/// RCTL bits of the receive filters: unicast and multicast promiscuous.
const RCTL_FILTERS: u32 = RCTL_UPE | RCTL_MPE;

/// RCTL, and the receive address and multicast table registers, as last
/// written: what a device reset loses.
pub(crate) struct RxFilters {
    rctl: u32,
    /// RAL and RAH of each receive address register.
    rar: [[u32; 2]; RAR_COUNT],
    mta: [u32; MTA_REGS],
}

impl RxFilters {
    const fn new() -> Self {
        Self {
            rctl: 0,
            rar: [[0; 2]; RAR_COUNT],
            mta: [0; MTA_REGS],
        }
    }
}

/// Flow control: as asked for, and as the MAC does it.
pub(crate) struct FcState {
    /// What `ethtool -A` asked for; until then, the NVM's default, read
    /// when first needed.
    pub(crate) requested: Option<hw::Fc>,
    /// Pause autonegotiation: `requested` is advertised, and the link's
    /// flow control resolved from both sides' advertisements; else
    /// `requested` is forced.
    pub(crate) autoneg: bool,
    /// What the MAC does (CTRL.RFCE, TFCE).
    pub(crate) current: hw::Fc,
}

impl FcState {
    const fn new() -> Self {
        Self {
            requested: None,
            autoneg: true,
            current: hw::Fc::NONE,
        }
    }
}

/// Where multicast address `a` hashes in the multicast table (RCTL.MO 0,
/// the reset value): register and bit, from address bits 36 to 47.
fn mta_bit(a: &[u8; ETH_ALEN]) -> (usize, u32) {
    let h = (u32::from(a[4]) >> 4) | (u32::from(a[5]) << 4);
    // CAST: 7 bits.
    (((h >> 5) & 0x7f) as usize, h & 0x1f)
}

/// The per-device data of the network device: register access and the
/// queue pairs.
#[pin_data]
pub(crate) struct Nic {
    pub(crate) pdev: ARef<pci::Device>,
    /// Header split (`ethtool -G tcp-data-split`), applied when the
    /// receive rings start.
    pub(crate) split: Atomic<bool>,
    /// Descriptors per receive and per transmit ring (`ethtool -G`);
    /// changed only while the device is down, under the instance lock.
    pub(crate) rx_ring_size: Atomic<u32>,
    pub(crate) tx_ring_size: Atomic<u32>,
    /// RSS indirection table and key (`ethtool -X`), flow steering rules
    /// (`ethtool -N`); taken from NAPI too.
    #[pin]
    pub(crate) rss: SpinLockIrq<Rss>,
    /// Some flow steering rule learns its flows from their SYNs.
    pub(crate) learning: Atomic<bool>,
    /// Queue pairs in use (`ethtool -L`); changed only while the device
    /// is down, under the instance lock.
    pub(crate) active: Atomic<usize>,
    /// RCTL and the address filters as last written: the promiscuous bits
    /// and the filters are `set_rx_mode`'s (under the address list lock,
    /// bottom halves off), the rest of RCTL `open`'s and `stop`'s.
    #[pin]
    rctl: SpinLockBh<RxFilters>,
    /// A device reset (a queue that would not stop) wiped the address
    /// filters: `configure` writes them again.
    pub(crate) filters_lost: Atomic<bool>,
    /// Pause frames received and sent: the device's counters clear when
    /// read, so every read adds to these.
    pub(crate) pause_rx: Atomic<u64>,
    pub(crate) pause_tx: Atomic<u64>,
    /// The device's drop counters (MPC, RNBC, RQDPC), as the pause frames.
    pub(crate) drops: hw::Drops<QUEUES>,
    /// The longest frame received, from the MTU (RLPML).
    max_frame: Atomic<u32>,
    /// The shortest interval between a queue vector's interrupts, µs, or
    /// adaptive moderation (1 and 3, `hw::itr_adaptive`): `ethtool -C
    /// rx-usecs`.
    pub(crate) itr_usecs: Atomic<u32>,
    /// The link's speed, Mb/s, for adaptive moderation: set by the
    /// watchdog when the link comes up.
    pub(crate) link_mbps: Atomic<u32>,
    /// The watchdog: link changes and speed, transmit work stuck behind a
    /// lost link, hung transmit rings, the drop counters; every 2 s and on
    /// a link interrupt, while the device is up (`watchdog_on`).
    #[pin]
    pub(crate) watchdog: DeviceWork<Nic, WATCHDOG>,
    /// The watchdog is enabled: set at the end of `open`, cleared in
    /// `stop`, both under the instance lock.
    pub(crate) watchdog_on: Atomic<bool>,
    /// A device reset (down and up), for a transmit hang, or after a reset
    /// the driver did not ask for (DRSTA).
    #[pin]
    pub(crate) reset_task: DeviceWork<Nic, RESET_TASK>,
    /// Transmit hangs: the core's timeouts, rings the watchdog found hung,
    /// and transmit work left behind by a lost link.
    pub(crate) tx_timeouts: Atomic<u64>,
    /// Times the device reported its transmit DMA out of sync (DOUTSYNC).
    pub(crate) dma_out_of_sync: Atomic<u64>,
    /// The watchdog's clock: transmit hang detection counts from here.
    pub(crate) epoch: Instant<Monotonic>,
    /// Flow control; held around the PHY accesses of `ethtool -A` and of
    /// the watchdog, so that their MDIC transactions do not interleave.
    #[pin]
    pub(crate) phy: Mutex<FcState>,
    /// An LSC came since the watchdog last looked: the link may have gone
    /// and come back, renegotiated, between two runs (C's
    /// get_link_status).
    pub(crate) link_changed: Atomic<bool>,
    #[pin]
    pub(crate) queues: [QueuePair; QUEUES],
    /// BAR 0, mapped for as long as the driver is bound: filled before the
    /// network device is registered, and empty only if that failed. Last,
    /// so that it is unmapped after everything else went.
    #[pin]
    pub(crate) bar: BoundResource<pci::Bar<'static, BAR0_SIZE>>,
}

impl Nic {
    pub(crate) fn new<'a>(
        pdev: &'a pci::Device<Bound>,
        has_filters: bool,
        irqs: [u32; QUEUES],
    ) -> impl PinInit<Self, Error> + 'a {
        try_pin_init!(Self {
            bar <- BoundResource::new(),
            split: Atomic::new(false),
            rx_ring_size: Atomic::new(RING_SIZE),
            tx_ring_size: Atomic::new(RING_SIZE),
            rss <- new_spinlock_irq!(Rss::new(has_filters)),
            learning: Atomic::new(false),
            active: Atomic::new(DEFAULT_QUEUES),
            rctl <- new_spinlock_bh!(RxFilters::new()),
            filters_lost: Atomic::new(false),
            pause_rx: Atomic::new(0),
            pause_tx: Atomic::new(0),
            drops: hw::Drops::new(),
            max_frame: Atomic::new(max_frame(1500)),
            itr_usecs: Atomic::new(hw::ITR_DEFAULT),
            link_mbps: Atomic::new(1000),
            watchdog <- DeviceWork::new(
                c"igb_rs::watchdog",
                kernel::sync::static_lock_class!(),
                kernel::sync::static_lock_class!()
            ),
            watchdog_on: Atomic::new(false),
            reset_task <- DeviceWork::new(
                c"igb_rs::reset_task",
                kernel::sync::static_lock_class!(),
                kernel::sync::static_lock_class!()
            ),
            tx_timeouts: Atomic::new(0),
            dma_out_of_sync: Atomic::new(0),
            epoch: Instant::now(),
            phy <- new_mutex!(FcState::new(), "Nic::phy"),
            link_changed: Atomic::new(false),
            queues <- pin_init::pin_init_array_from_fn(|i| {
                QueuePair::new(pdev.as_ref(), i, irqs.get(i).copied().unwrap_or(0))
            }),
            // Last: the field shadows the parameter in what follows it.
            pdev: pdev.into(),
        })
    }

    /// Writes register `reg`: a plain MMIO write, the BAR being mapped for
    /// as long as the data lives.
    pub(crate) fn wr(&self, reg: usize, val: u32) {
        if let Some(bar) = self.bar.get() {
            let _ = bar.try_write32(val, reg);
        }
    }

    /// Reads register `reg`; all ones if the device is gone (a surprise
    /// removal reads so).
    pub(crate) fn rd(&self, reg: usize) -> u32 {
        self.bar
            .get()
            .and_then(|b| b.try_read32(reg).ok())
            .unwrap_or(!0)
    }

    /// Adds what the device's drop counters counted since they were last
    /// read (they clear when read) to the totals: MPC, RNBC, and RQDPC of
    /// every pair's queue, as a queue counts while it is out of use too.
    pub(crate) fn read_drops(&self) {
        self.drops.update(self);
    }

    /// What flow control is asked for: `ethtool -A`'s, else the NVM's
    /// (both directions if it cannot be read).
    pub(crate) fn fc_requested(&self, st: &mut FcState) -> hw::Fc {
        *st.requested
            .get_or_insert_with(|| hw::nvm_fc(self).unwrap_or(hw::Fc::FULL))
    }

    /// Flow control for a device coming up (`configure`): its registers,
    /// the MAC doing what is asked until the link resolves it, and the
    /// PHY advertising it to the autonegotiation `open` restarts. The
    /// receive thresholds are those of the longest frame the device takes,
    /// so that an MTU change needs none.
    fn configure_fc(&self) {
        let mut st = self.phy.lock();
        let fc = self.fc_requested(&mut st);
        hw::setup_fc(self, fc, max_frame(MAX_MTU));
        hw::force_fc(self, fc);
        st.current = fc;
        // A new advertisement counts only from an autonegotiation: the
        // one `start_link` does when the link is down, or this one.
        match hw::advertise_pause(self, fc) {
            Ok(true) => {
                if let Err(e) = hw::restart_autoneg(self) {
                    dev_dbg!(self.pdev, "autonegotiation not restarted: {:?}\n", e);
                }
            }
            Ok(false) => {}
            Err(e) => dev_dbg!(self.pdev, "pause advertisement not written: {:?}\n", e),
        }
    }

    /// The link came up: settles its flow control and makes the MAC do it
    /// (the watchdog).
    pub(crate) fn link_up_fc(&self) -> hw::Fc {
        let mut st = self.phy.lock();
        let req = self.fc_requested(&mut st);
        let fc = hw::fc_after_link_up(self, req, st.autoneg).unwrap_or_else(|e| {
            dev_dbg!(
                self.pdev,
                "PHY unreadable, flow control as asked: {:?}\n",
                e
            );
            hw::force_fc(self, req);
            req
        });
        st.current = fc;
        fc
    }

    /// Gives the vectors of the pairs in use the interval they start with
    /// under rx-usecs `usecs`. Their NAPI instances are off: while they
    /// run, their polls alone write the intervals.
    pub(crate) fn set_itr(&self, usecs: u32) {
        let start = hw::itr_start(usecs);
        for q in self.active() {
            q.reset_itr();
            q.set_itr(self, start);
        }
    }

    /// The queue pairs in use.
    pub(crate) fn active(&self) -> &[QueuePair] {
        let n = self.active.load(Relaxed);
        self.queues.get(..n).unwrap_or(&self.queues)
    }

    /// Programs MSI-X routing, the rings and the receive and transmit
    /// units of `parent`, the device, and gives the receive rings their
    /// buffers.
    fn configure(&self, parent: &kernel::device::Device<Bound>) -> Result {
        self.wr(GPIE, GPIE_MSIX_MODE | GPIE_PBA | GPIE_EIAME | GPIE_NSICR);
        self.wr(IVAR_MISC, (VEC_OTHER | IVAR_VALID) << 8);
        for q in &self.queues {
            // Pairs out of use fire no vector.
            self.wr(IVAR0 + 4 * q.idx, 0);
        }
        for q in self.active() {
            // Queue q < 8 uses IVAR0[q]: receive in byte 0, transmit in 1.
            let v = q.vector() | IVAR_VALID;
            self.wr(IVAR0 + 4 * q.idx, v | v << 8);
        }
        // Moderate, so that one poll takes a batch of frames: adaptive by
        // default, from 162 µs, each poll choosing the next interval.
        self.set_itr(self.itr_usecs.load(Relaxed));
        hw::take_control(self);
        self.configure_fc();
        if self.filters_lost.xchg(false, Relaxed) {
            self.restore_filters();
        }
        self.configure_rss();
        // Before the queues start: one with header split splits only the
        // frame types PSRTYPE enables.
        hw::setup_rx_unit(self);

        for q in self.active() {
            // The queue is off (`stop`, or reset at probe) and its ring
            // empty (`stop` emptied it, or it is new): the lock is held for
            // the ring only, not across the waits of `tx_start`, which
            // sleep.
            let ring = {
                let mut tx = q.tx.lock();
                tx.reset(parent);
                hw::Ring {
                    dma: tx.dma_address(),
                    // CAST: at most 64 KiB.
                    bytes: (tx.len() * DESC_SIZE) as u32,
                }
            };
            hw::tx_start(self, q.idx, ring)?;
        }
        self.wr(TCTL, TCTL_EN | TCTL_PSP | TCTL_CT | TCTL_COLD | TCTL_RTLC);

        for q in self.active() {
            // The pair's NAPI is not enabled yet: nothing else takes the
            // ring, and the lock is not held across the waits.
            let setup = {
                let mut rx = q.rx.lock();
                let ring = Option::as_mut(&mut *rx).ok_or(EINVAL)?;
                self.rx_setup(ring)?
            };
            self.start_rx(q.idx, setup)?;
        }
        // Frames up to RLPML, rather than to 1518 bytes (LPE).
        self.wr(RLPML, self.max_frame.load(Relaxed));
        self.set_rctl(|v| (v & RCTL_FILTERS) | RCTL_EN | RCTL_BAM | RCTL_SECRC | RCTL_LPE);
        Ok(())
    }

    /// What receive queue programming takes from `ring`: where it is, its
    /// buffer size (256-byte header buffers with header split), and its
    /// head and tail once its descriptors are armed. No register access:
    /// callable under the ring's lock.
    pub(crate) fn rx_setup(&self, ring: &mut RxRing) -> Result<RxSetup> {
        let (head, tail) = ring.rearm()?;
        // With more than one queue and receive flow control off, a queue
        // without descriptors (stopped, or its pool empty) drops its
        // frames rather than fill the packet buffer that all queues share
        // (the C igb's rule).
        let drop_en = self.active().len() > 1 && self.rd(CTRL) & CTRL_RFCE == 0;
        Ok(RxSetup {
            ring: hw::Ring {
                dma: ring.dma_address(),
                // CAST: at most 64 KiB.
                bytes: (ring.len() * DESC_SIZE) as u32,
            },
            srrctl: hw::srrctl(ring.buf_size(), ring.split(), drop_en),
            head_tail: (head, tail),
        })
    }

    /// Starts receive queue `idx` on a ring described by `setup`. Process
    /// context (the enable bit is waited for, sleeping).
    pub(crate) fn start_rx(&self, idx: usize, setup: RxSetup) -> Result<(), hw::StartError> {
        hw::rx_start(self, idx, setup.ring, setup.srrctl, setup.head_tail)
    }

    /// A queue would not stop: resets the device, which stops every queue.
    /// The device then needs `configure` (the interface down and up).
    pub(crate) fn stuck_reset(&self) -> hw::Stopped {
        dev_err!(
            self.pdev,
            "a queue did not stop: device reset; bring the interface down and up\n"
        );
        self.filters_lost.store(true, Relaxed);
        hw::reset(self).0
    }

    /// A new receive ring for queue pair `idx` as configured now: header
    /// split, and the buffer size and memory provider of the queue.
    pub(crate) fn new_rx_ring(
        &self,
        dev: &LockedDevice<Nic>,
        idx: usize,
        cfg: &QueueConfig,
    ) -> Result<RxRing> {
        self.new_rx_ring_split(dev, idx, cfg, self.split.load(Relaxed))
    }

    /// A new receive ring as [`Nic::new_rx_ring`] makes, with header split
    /// as `split` says.
    pub(crate) fn new_rx_ring_split(
        &self,
        dev: &LockedDevice<Nic>,
        idx: usize,
        cfg: &QueueConfig,
        split: bool,
    ) -> Result<RxRing> {
        if idx >= QUEUES {
            return Err(EINVAL);
        }
        // CAST: below QUEUES.
        let idx = idx as u32;
        RxRing::new(
            dev.parent(),
            dev,
            idx,
            split,
            cfg,
            (
                self.rx_ring_size.load(Relaxed),
                self.max_frame.load(Relaxed),
            ),
        )
    }

    /// Stops the receive and transmit units and every queue, and waits
    /// until no queue does DMA; a queue that does not stop takes a device
    /// reset. Process context.
    fn quiesce(&self) -> hw::Stopped {
        self.set_rctl(|v| v & RCTL_FILTERS);
        self.wr(TCTL, TCTL_PSP);
        let stopped = hw::stop_queues(self, QUEUES);
        if stopped.by_reset() {
            dev_err!(self.pdev, "a queue did not stop: device reset\n");
            self.filters_lost.store(true, Relaxed);
        }
        stopped
    }

    /// Sets the PHY up for autonegotiation; restarts it only if a setting
    /// changed or there is no link (a restart would drop a BMC's link for
    /// nothing). A link that is down comes up later, with an LSC
    /// interrupt. Sleeps (the PHY semaphore): process context.
    fn start_link(&self) {
        if let Err(e) = hw::link_setup(self) {
            dev_err!(self.pdev, "PHY setup failed: {:?}\n", e);
        }
    }

    /// Changes RCTL to `f` of its old value.
    fn set_rctl(&self, f: impl FnOnce(u32) -> u32) {
        let mut filters = self.rctl.lock();
        filters.rctl = f(filters.rctl);
        self.wr(RCTL, filters.rctl);
    }

    /// Writes the address filters again, after a device reset; the
    /// five-tuple filters are all written by the next `configure_rss`.
    fn restore_filters(&self) {
        self.rss.lock().steer.forget_hw();
        let filters = self.rctl.lock();
        for (n, [lo, hi]) in filters.rar.iter().enumerate() {
            self.wr(RAL0 + 8 * n, *lo);
            self.wr(RAH0 + 8 * n, *hi);
        }
        for (i, v) in filters.mta.iter().enumerate() {
            self.wr(MTA + 4 * i, *v);
        }
    }

    /// Programs the receive filters: the device's address and the extra
    /// unicast ones in the receive address registers, multicast addresses
    /// hashed into the multicast table; promiscuous modes for the rest.
    fn set_filters(&self, mode: &RxMode<'_>) {
        let mut upe = mode.promiscuous();
        let mut mpe = upe || mode.all_multicast();
        let ctl = self.rd(RAH0) & RAH_CTL;
        let mut filters = self.rctl.lock();
        let mut rar = |n: usize, a: &[u8; ETH_ALEN]| {
            let lo = u32::from_le_bytes([a[0], a[1], a[2], a[3]]);
            let hi = u32::from(u16::from_le_bytes([a[4], a[5]])) | ctl | RAH_AV;
            self.wr(RAL0 + 8 * n, lo);
            self.wr(RAH0 + 8 * n, hi);
            if let Some(r) = filters.rar.get_mut(n) {
                *r = [lo, hi];
            }
        };
        rar(0, &mode.address());
        let mut n = 1;
        for a in mode.unicast() {
            if n == RAR_COUNT {
                upe = true;
                break;
            }
            rar(n, &a);
            n += 1;
        }
        for k in n..RAR_COUNT {
            self.wr(RAH0 + 8 * k, 0);
            if let Some(r) = filters.rar.get_mut(k) {
                r[1] = 0;
            }
        }
        let mut mta = [0u32; MTA_REGS];
        for a in mode.multicast() {
            let (reg, bit) = mta_bit(&a);
            if let Some(r) = mta.get_mut(reg) {
                *r |= 1 << bit;
            } else {
                mpe = true;
            }
        }
        for (i, v) in mta.iter().enumerate() {
            self.wr(MTA + 4 * i, *v);
        }
        filters.mta = mta;
        let bits = if upe { RCTL_UPE } else { 0 } | if mpe { RCTL_MPE } else { 0 };
        filters.rctl = (filters.rctl & !RCTL_FILTERS) | bits;
        self.wr(RCTL, filters.rctl);
    }

    /// Descriptors per receive and per transmit ring.
    pub(crate) fn ring_sizes(&self) -> (u32, u32) {
        (
            self.rx_ring_size.load(Relaxed),
            self.tx_ring_size.load(Relaxed),
        )
    }

    /// Gives every ring `rx` and `tx` descriptors, and header split as
    /// `split` says: the device restarts on new rings if it is up. On
    /// failure the old sizes stay.
    pub(crate) fn resize_rings(
        &self,
        dev: &LockedDevice<Nic>,
        (rx, tx): (u32, u32),
        split: ethtool::TcpDataSplit,
    ) -> Result {
        // Every transmit ring is made first, pairs out of use too (`-L`
        // may take them later): a failure leaves the device as it was.
        let mut rings = KVec::with_capacity(QUEUES, GFP_KERNEL)?;
        if tx != self.tx_ring_size.load(Relaxed) {
            for _ in &self.queues {
                rings.push(TxRing::new(dev.parent(), tx)?, GFP_KERNEL)?;
            }
        }
        let running = dev.is_running();
        if running {
            <Nic as Operations>::stop(dev)?;
        }
        let (old, old_split) = (self.ring_sizes(), self.split.load(Relaxed));
        // The old transmit rings are kept until the device runs on the new
        // ones, then freed outside the locks.
        self.swap_tx_rings(&mut rings);
        self.rx_ring_size.store(rx, Relaxed);
        self.tx_ring_size.store(tx, Relaxed);
        self.split
            .store(split == ethtool::TcpDataSplit::Enabled, Relaxed);
        if !running {
            return Ok(());
        }
        let opened = <Nic as Operations>::open(dev);
        if opened.is_err() {
            // The receive rings could not be made (memory, or a provider
            // that needs header split): back on the old sizes, header
            // split and transmit rings, which worked.
            self.swap_tx_rings(&mut rings);
            self.rx_ring_size.store(old.0, Relaxed);
            self.tx_ring_size.store(old.1, Relaxed);
            self.split.store(old_split, Relaxed);
            <Nic as Operations>::open(dev)?;
        }
        opened
    }

    /// Gives each pair a transmit ring of `rings` (none if it is empty)
    /// and leaves the pair's old one in its place. No queue may be using
    /// a transmit ring: `stop` waited for every queue to stop (or reset
    /// the device), a failed `open` stopped those it started, and a device
    /// that is down had its queues stopped by the last `stop`, or never
    /// started them.
    fn swap_tx_rings(&self, rings: &mut [TxRing]) {
        for (q, ring) in self.queues.iter().zip(rings) {
            core::mem::swap(&mut *q.tx.lock(), ring);
        }
    }

    /// Queue pair `idx`, if it is in use.
    pub(crate) fn queue(&self, idx: u32) -> Result<&QueuePair> {
        // CAST: u32 to usize is lossless on Linux.
        self.active().get(idx as usize).ok_or(EINVAL)
    }
}

impl hw::Regs for Nic {
    fn rd(&self, reg: usize) -> u32 {
        Nic::rd(self, reg)
    }

    fn wr(&self, reg: usize, val: u32) {
        Nic::wr(self, reg, val);
    }

    fn sleep_us(&self, us: u32) {
        fsleep(Delta::from_micros(i64::from(us)));
    }
}

/// A receive queue's programming, from its ring.
pub(crate) struct RxSetup {
    ring: hw::Ring,
    srrctl: u32,
    head_tail: (u32, u32),
}

#[vtable]
impl Operations for Nic {
    fn open(dev: &LockedDevice<Self>) -> Result {
        let nic = dev.data();
        dev.carrier_off();
        // Each pair's NAPI goes on the device first, disabled, to take its
        // new ring's payload pool: only its poll allocates from the pool
        // once the ring is the pair's.
        let prepared = nic.active().iter().try_for_each(|q| {
            // SAFETY: the owner is the pair the instance is in, declared
            // before the fields the poll uses that have anything to drop
            // (the rings), so dropped, which removes it, first, and it has
            // no `Drop` of its own; the pair is in the data of `dev`, the
            // only device it is added to, which outlives it. Its index is
            // the pair's, no other pair's.
            // CAST: below QUEUES.
            let napi = unsafe { q.napi.add(dev, q, q.idx as u32)? };
            napi.set_irq(dev, q.irq);
            // CAST: below QUEUES.
            let cfg = dev.queue_config(q.idx as u32);
            let mut ring = nic.new_rx_ring(dev, q.idx, &cfg)?;
            ring.attach_napi(napi, dev)?;
            // The pair has no ring here (`stop`, or the unwinding below,
            // took it): nothing to drop.
            drop(q.put_rx(ring));
            Ok(())
        });
        if let Err(e) = prepared.and_then(|()| nic.configure(dev.parent())) {
            // The core does not call `stop` after a failed open: give back
            // what the pairs before the failure got, once the queues are
            // off. Removing a NAPI destroys the pool its ring gave it.
            let stopped = nic.quiesce();
            for q in nic.active() {
                drop(stopped.rx(q.idx).and_then(|off| q.take_rx(off)));
                if let Some(off) = stopped.tx(q.idx) {
                    q.reset_tx(dev.parent(), off);
                }
                if let Some(napi) = q.napi.added() {
                    napi.remove(dev);
                }
            }
            hw::release_control(nic);
            return Err(e);
        }
        let polled = nic.active().iter().try_for_each(|q| {
            let napi = q.napi.added().ok_or(EINVAL)?;
            napi.enable(dev);
            napi.serve_queues(dev, true)
        });
        if let Err(e) = polled {
            // Not with the pairs' indexes below the device's queue count,
            // but `stop` would undo it all.
            let _ = Self::stop(dev);
            return Err(e);
        }
        nic.irq_enable();
        // A ring the pools gave no buffer (memory was short) gets no
        // frame, so no interrupt: a first poll of each queue refills what
        // it can, and polls again while its ring stays empty (a pair out
        // of use has its NAPI off: nothing to schedule). C's `open` does
        // not fail for buffers either; its watchdog raises the interrupts.
        for q in &nic.queues {
            q.napi.schedule();
        }
        nic.start_link();
        // The carrier comes on from the watchdog, once the link is up and
        // its flow control settled.
        nic.watchdog_start(dev);
        // Wake, not start: `open` also brings the device back from new
        // rings or channels, and the qdiscs may have packets waiting.
        dev.wake_all_queues();
        Ok(())
    }

    fn stop(dev: &LockedDevice<Self>) -> Result {
        let nic = dev.data();
        // First: the watchdog turns the carrier on and reads the rings.
        nic.watchdog_stop();
        dev.carrier_off();
        nic.irq_disable();
        // Disabled first, so that no poll runs while the rings go; each is
        // removed below, once its rings are gone, and destroys the payload
        // pool its ring handed it then.
        for q in nic.active() {
            if let Some(napi) = q.napi.added() {
                napi.disable(dev);
            }
        }
        // Then the queues, under their transmit locks: no `start_xmit` is
        // left running, and no poll wakes a queue again (one that frees
        // descriptors does). A frame sent between the resets below and
        // those of `open` would be on no ring, yet counted by byte queue
        // limits for good: the queue would never send again.
        dev.disable_tx();
        let stopped = nic.quiesce();
        for q in nic.active() {
            // The device no longer reads or writes the buffers (`stopped`
            // says so); the pools go outside the lock.
            drop(stopped.rx(q.idx).and_then(|off| q.take_rx(off)));
            if let Some(off) = stopped.tx(q.idx) {
                q.reset_tx(dev.parent(), off);
            }
            if let Some(napi) = q.napi.added() {
                // Disabled above: byte queue limits forget the frames the
                // ring dropped, then the instance forgets its queues and
                // goes.
                let _ = napi.tx_reset(dev);
                napi.remove(dev);
            }
        }
        Ok(())
    }

    fn change_mtu(dev: &LockedDevice<Self>, mtu: u32) -> Result {
        let nic = dev.data();
        let (old, new) = (nic.max_frame.load(Relaxed), max_frame(mtu));
        if !dev.is_running() {
            nic.max_frame.store(new, Relaxed);
            return Ok(());
        }
        if ring::fits_in_place(old) == ring::fits_in_place(new) {
            // The rings stay: a frame longer than a buffer takes several.
            nic.max_frame.store(new, Relaxed);
            nic.wr(RLPML, new);
            return Ok(());
        }
        // Rings that build frames in place leave no room for longer ones
        // in their buffers, and rings that cannot would waste it: the
        // device restarts on new rings before it takes the new length.
        <Nic as Operations>::stop(dev)?;
        nic.max_frame.store(new, Relaxed);
        let opened = <Nic as Operations>::open(dev);
        if opened.is_err() {
            // The MTU stays as it was: back on rings for it.
            nic.max_frame.store(old, Relaxed);
            <Nic as Operations>::open(dev)?;
        }
        opened
    }

    fn start_xmit(dev: &Device<Self>, queue: &mut TxQueue<'_>, skb: SkBuff) -> Result<(), Busy> {
        let nic = dev.data();
        let qi = queue.index();
        let Some(q) = nic.active().get(usize::from(qi)) else {
            // A queue that is not (or no longer) set up.
            skb.drop_reason(DropReason::DevReady);
            return Ok(());
        };
        let mut tx = q.tx.lock();
        let sent = match tx.push(dev.parent(), skb) {
            Ok(sent) => sent,
            Err(e) => {
                // Frames queued before, told `xmit_more`, wait for a tail
                // write that this one was to make.
                let tail = tx.tail();
                let status = match e {
                    TxError::Dropped => {
                        q.tx_dropped.add(1, Relaxed);
                        Ok(())
                    }
                    TxError::Full(skb) => {
                        // Stopped with the ring's lock held, which the poll
                        // frees descriptors and wakes the queue under: a
                        // poll that empties the ring after this wakes it.
                        // Stopped after the lock, a poll in between would
                        // find the queue running and leave it stopped. The
                        // stack keeps the frame and retries it.
                        q.tx_stops.add(1, Relaxed);
                        Err(queue.busy(skb))
                    }
                };
                drop(tx);
                nic.wr(txq(q.idx) + Q_TAIL, tail);
                return status;
            }
        };
        q.tx_packets.add(sent.segs.into(), Relaxed);
        q.tx_bytes.add(sent.bytes.into(), Relaxed);
        if let Some(len) = sent.tso_len {
            q.tso_packets.add(1, Relaxed);
            q.tso_bytes.add(len.into(), Relaxed);
            q.tso_wire_packets.add(sent.segs.into(), Relaxed);
            q.tso_wire_bytes.add(sent.bytes.into(), Relaxed);
        }
        if tx.unused() < ring::TX_FRAME_MAX {
            q.complete_tx(dev.parent(), &mut tx, None);
            if tx.unused() < ring::TX_FRAME_MAX {
                dev.stop_queue(qi);
                q.tx_stops.add(1, Relaxed);
            }
        }
        // The completions in the queue's poll need the ring, not the tail:
        // the register write, slow on some machines (a VM exit), goes
        // outside the lock. The queue's lock keeps the tails in order.
        drop(tx);
        if queue.sent(sent.bytes, driver::xmit_more()) {
            nic.wr(txq(q.idx) + Q_TAIL, sent.tail);
        }
        Ok(())
    }

    fn set_rx_mode(dev: &Device<Self>, mode: &RxMode<'_>) -> Result {
        dev.data().set_filters(mode);
        Ok(())
    }

    fn tx_timeout(dev: &Device<Self>, txqueue: u32) {
        let nic = dev.data();
        nic.tx_timeouts.add(1, Relaxed);
        dev_err!(nic.pdev, "transmit queue {} timed out: reset\n", txqueue);
        nic.reset_task.schedule(dev, 0, false);
    }

    fn get_stats64(dev: &Device<Self>, stats: &mut Stats64) {
        let nic = dev.data();
        nic.read_drops();
        nic.drops.fill(stats);
        for q in &nic.queues {
            stats.rx_packets += q.rx_packets.load(Relaxed);
            stats.rx_bytes += q.rx_bytes.load(Relaxed);
            stats.rx_dropped += q.rx_dropped.load(Relaxed);
            stats.tx_packets += q.tx_packets.load(Relaxed);
            stats.tx_bytes += q.tx_bytes.load(Relaxed);
            stats.tx_dropped += q.tx_dropped.load(Relaxed);
        }
    }
}

impl Nic {
    /// Spreads flows over the queue pairs by their Toeplitz hash, as the
    /// RSS configuration says, and brings the five-tuple filters to what
    /// the steering rules want. Register writes only (no wait), under the
    /// RSS lock: two rule changes cannot interleave their filter writes.
    pub(crate) fn configure_rss(&self) {
        let mut rss = self.rss.lock();
        // Only the filters that changed, without a gap for a flow steered
        // before and after (steer.rs); before the table, so that a rule
        // moving from an RSS bucket to a filter has the filter on before
        // its bucket goes back to the table's queue.
        rss.steer.program(self);
        for (i, k) in rss.key.chunks_exact(4).enumerate() {
            self.wr(RSSRK + 4 * i, u32::from_le_bytes([k[0], k[1], k[2], k[3]]));
        }
        for g in 0..RETA_SIZE / 4 {
            self.wr(RETA + 4 * g, rss.reta_reg(g));
        }
        self.learning.store(rss.steer.learns(), Relaxed);
        let mrqc = rss.fields.mrqc();
        drop(rss);
        self.wr(RXCSUM, RXCSUM_PCSD | RXCSUM_IPOFLD | RXCSUM_TUOFLD);
        self.wr(MRQC, mrqc);
    }

    /// A SYN-looking frame arrived with RSS hash `hash`: if a flow steering
    /// rule learns from it, its bucket now goes to the rule's queue.
    pub(crate) fn learn_syn(&self, frame: &[u8], hash: u32) {
        let Some(t) = steer::syn_tuple(frame) else {
            return;
        };
        let mut rss = self.rss.lock();
        if let Some(b) = rss.steer.learn(&t, hash) {
            let g = b / 4;
            self.wr(RETA + 4 * g, rss.reta_reg(g));
        }
    }

    /// Starts the watchdog, at once: the end of `open`, under the instance
    /// lock.
    pub(crate) fn watchdog_start(&self, dev: &Device<Nic>) {
        if !self.watchdog_on.xchg(true, Relaxed) {
            self.watchdog.enable();
        }
        self.watchdog.schedule(dev, 0, true);
    }

    /// Stops the watchdog and waits for a run in progress: the start of
    /// `stop`, under the instance lock, which the watchdog never takes.
    pub(crate) fn watchdog_stop(&self) {
        if self.watchdog_on.xchg(false, Relaxed) {
            self.watchdog.disable_sync();
        }
    }
}
