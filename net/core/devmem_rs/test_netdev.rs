// SPDX-License-Identifier: GPL-2.0

//! A page pool on a queue with a memory provider, without a NIC, for KUnit
//! and the allocation benchmark.
//!
//! The netdev is a registered Ethernet device with two queues whose driver
//! ([`RigDev`]) has the queue API and nothing else: it never comes up, and
//! a queue's memory is the page pool made for it. Providers go on and off
//! its queues as on a NIC's, through the core (`netif_mp_open_rxq`,
//! `netif_mp_close_rxq`), checks included: [`Rig::new`] puts one on queue
//! 0, and the netlink tests install bindings on [`Rig::with_queue_api`]'s.
//! The device is down, so a restart makes the queue's new page pool, which
//! the core checks took the queue's provider, and frees the pool at once.

use super::binding::{
    Binding,
    Handle, //
};
use kernel::{
    device::{
        Bound,
        Device, //
    },
    dma::{
        DataDirection,
        DmaAddress, //
    },
    dma_buf::test_exporter,
    faux,
    net::{
        driver::{
            self,
            Busy,
            LockedDevice,
            Operations,
            QueueConfig,
            QueueMgmt,
            Registration,
            TxQueue, //
        },
        ethtool::TcpDataSplit,
        netdev::{
            NetDevice,
            RxQueue, //
        },
        netlink::request::ExtAckBuf,
        page_pool::{
            self,
            MemoryProvider,
            MpParams,
            Pool,
            PoolNetmem,
            ProviderOps, //
        },
        skbuff::{
            DropReason,
            SkBuff, //
        },
    },
    page::{
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*,
};

/// A page of the test exporter's segments.
// CAST: a page fits a u32 segment length.
pub(crate) const PAGE: u32 = PAGE_SIZE as u32;

/// A locally administered MAC address, the same for every rig.
const MAC: [u8; 6] = [0x02, 0, 0, 0xde, 0x7e, 0x01];

/// The driver of a rig's netdev: no data, no hardware. The device never
/// comes up, so only the queue API is ever called, by the core restarting
/// a queue as a provider goes on or off it.
struct RigDev;

#[vtable]
impl Operations for RigDev {
    /// Refused: the device stays down, which is what its queue API relies
    /// on.
    fn open(_dev: &LockedDevice<Self>) -> Result {
        Err(EOPNOTSUPP)
    }

    fn stop(_dev: &LockedDevice<Self>) -> Result {
        Ok(())
    }

    /// Never called: the device is never up.
    fn start_xmit(
        _dev: &driver::Device<Self>,
        _txq: &mut TxQueue<'_>,
        skb: SkBuff,
    ) -> Result<(), Busy> {
        skb.drop_reason(DropReason::DevReady);
        Ok(())
    }
}

#[vtable]
impl QueueMgmt for RigDev {
    type RxQueueMem = Pool;

    /// Makes the page pool of rx queue `idx`, as a driver does for a
    /// restart: the pool takes the queue's provider, if it has one.
    fn rx_mem_alloc(dev: &LockedDevice<Self>, _cfg: &QueueConfig, idx: u32) -> Result<Pool> {
        Pool::new(&page_pool::Params::new(dev.parent(), 0, 256).rx_queue_locked(dev, idx))
    }

    /// The device is never up, so the core never stops a queue; refused in
    /// case it did.
    fn rx_stop(_dev: &LockedDevice<Self>, _idx: u32) -> Result<Pool> {
        Err(EOPNOTSUPP)
    }

    /// As [`RigDev::rx_stop`], for starting.
    fn rx_start(_dev: &LockedDevice<Self>, mem: Pool, _idx: u32) -> Result<(), (Error, Pool)> {
        Err((EOPNOTSUPP, mem))
    }
}

/// A netdev with two rx queues: the first with a provider and a page pool
/// on it ([`Rig::new`]), or providers installed by the tests
/// ([`Rig::with_queue_api`]); torn down on drop: the pool destroyed, the
/// provider of [`Rig::new`] closed, the device unregistered.
pub(crate) struct Rig<'a> {
    pool: Option<Pool>,
    /// The provider [`Rig::new`] opened on queue 0.
    mp: Option<MpParams>,
    reg: Registration<'a, RigDev>,
}

impl<'a> Rig<'a> {
    /// A netdev with two rx and tx queues, for parent `dev`, the DMA
    /// device of its pools; no provider and no pool. Its queues restart as
    /// those of a driver with the queue API do: providers go on and off
    /// them through the core (`netif_mp_open_rxq`, `netif_mp_close_rxq`).
    pub(crate) fn with_queue_api(dev: &'a Device<Bound>) -> Result<Self> {
        let reg = Registration::new(dev, 2, 2, &MAC, Ok::<_, Error>(RigDev), |d| {
            d.set_queue_mgmt();
            // Providers need header split (`netif_mp_open_rxq` checks).
            d.set_tcp_data_split(TcpDataSplit::Enabled);
            Ok(())
        })?;
        Ok(Self {
            pool: None,
            mp: None,
            reg,
        })
    }

    /// A pool of `order` on a queue whose provider is `ops` over `mp_priv`,
    /// mapping for `dev`. The provider goes on queue 0 through the core
    /// (`netif_mp_open_rxq`), as a bind-rx puts it there, and comes off it
    /// when the rig goes.
    pub(crate) fn new<T: MemoryProvider>(
        ops: &'static ProviderOps<T>,
        mp_priv: &'a T,
        dev: &'a Device<Bound>,
        order: u32,
    ) -> Result<Self> {
        // SAFETY: `mp_priv` is borrowed for `'a`, which the rig does not
        // outlive.
        unsafe { Self::with_provider(ops, mp_priv, dev, order) }
    }

    /// As [`Rig::new`], for a provider the rig does not borrow: a test may
    /// then change it meanwhile (give its binding the rig's netdev).
    ///
    /// # Safety
    ///
    /// `mp_priv` outlives the rig, which closes the queue when dropped.
    pub(crate) unsafe fn with_provider<T: MemoryProvider>(
        ops: &'static ProviderOps<T>,
        mp_priv: &T,
        dev: &'a Device<Bound>,
        order: u32,
    ) -> Result<Self> {
        let mut rig = Self::with_queue_api(dev)?;
        let mp = MpParams::new(ops, mp_priv, 0);
        let mut extack = ExtAckBuf::new(GFP_KERNEL)?;
        let locked = rig.netdev().lock()?;
        // SAFETY: `mp_priv` outlives the rig (per the caller), which closes
        // the queue in `drop` (`mp` is kept for it just below); the device
        // is not unregistered before, so `uninstall` is not needed.
        let opened = unsafe { mp.open_rxq(&locked, 0, &extack.ext_ack()) };
        drop(locked);
        opened?;
        rig.mp = Some(mp);
        rig.new_pool(dev, order)?;
        Ok(rig)
    }

    /// Replaces the pool with a new one of `order` on queue 0.
    pub(crate) fn new_pool(&mut self, dev: &Device<Bound>, order: u32) -> Result {
        self.pool = None;
        // The page pool core reads the queue's provider under the instance
        // lock.
        let locked = self.netdev().lock()?;
        // SAFETY: the instance lock is held.
        let params = unsafe { page_pool::Params::new(dev, order, 256).rx_queue(&locked, 0) };
        let pool = Pool::new(&params);
        drop(locked);
        self.pool = Some(pool?);
        Ok(())
    }

    /// Destroys the pool.
    #[cfg(CONFIG_NET_DEVMEM_RUST_BENCH)]
    pub(crate) fn drop_pool(&mut self) {
        self.pool = None;
    }

    /// Allocates from the pool; `None` when dry. Dropping the buffer gives
    /// its reference back (`page_pool_put_full_netmem`).
    pub(crate) fn alloc(&mut self) -> Option<PoolNetmem> {
        self.pool.as_mut().and_then(Pool::alloc)
    }

    /// The netdev.
    pub(crate) fn netdev(&self) -> &NetDevice {
        self.reg.device()
    }

    /// Rx queue `idx` (0 or 1) of the netdev; the pool is on queue 0.
    pub(crate) fn rx_queue(&self, idx: u32) -> Option<&RxQueue> {
        self.netdev().rx_queue_unlocked(idx)
    }

    /// How many buffers wait in the pool's allocation cache.
    pub(crate) fn cached(&mut self) -> u32 {
        self.pool.as_mut().map_or(0, Pool::cached)
    }
}

impl Drop for Rig<'_> {
    fn drop(&mut self) {
        // The pool goes first: it is listed on the netdev.
        self.pool = None;
        // Then the provider, as an unbind closes it: the core would
        // otherwise hand the queue to its `uninstall` when the device goes.
        // A test's thread holds no device's lock.
        if let (Some(mp), Ok(locked)) = (self.mp.take(), self.netdev().lock()) {
            let _ = mp.close_rxq(&locked, 0);
        }
        // `reg` unregisters and frees the device.
    }
}

/// Runs `f` with a device and a binding of `pages` 4 KiB `net_iov`s in one
/// DMA segment, from the test exporter.
pub(crate) fn with_binding(
    pages: u32,
    f: impl FnOnce(&Binding, &Device<Bound>) -> Result,
) -> Result {
    with_handle(pages, |h, dev| f(h, dev))
}

/// As [`with_binding`], with the owner's handle.
pub(crate) fn with_handle(
    pages: u32,
    f: impl FnOnce(&mut Handle, &Device<Bound>) -> Result,
) -> Result {
    // CAST: PAGE_SHIFT is small.
    let shift = PAGE_SHIFT as u32;
    let segs: [(DmaAddress, u32); 1] = [(0x1000_0000, pages * PAGE)];
    // CAST: a small size.
    let buf = test_exporter::export(pages as usize * PAGE_SIZE, &segs)?;
    let reg = faux::Registration::new(c"devmem-rs-pp", None)?;
    let fdev: &faux::Device<Bound> = reg.as_ref();
    let dev: &Device<Bound> = fdev.as_ref();
    let mut h =
        Binding::bind(&buf, dev, DataDirection::FromDevice, shift).map_err(|e| e.errno())?;
    f(&mut h, dev)
}
