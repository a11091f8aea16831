// SPDX-License-Identifier: GPL-2.0

//! A page pool on a queue with a memory provider, without a NIC, for KUnit
//! and the allocation benchmark.
//!
//! The netdev is allocated but never registered; its one rx queue gets the
//! provider parameters directly, under the instance lock, where
//! `netif_mp_open_rxq` would put them on a real device.
//!
//! `Rig::with_queue_api`, which the netlink tests add, instead lets
//! `netif_mp_open_rxq` and `netif_mp_close_rxq` do it, as on a device whose
//! driver has the queue API, for tests of installing bindings on queues.

use super::binding::{
    Binding,
    Handle, //
};
use core::ptr::{
    self,
    NonNull, //
};
use kernel::{
    bindings,
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
        netdev::{
            NetDevice,
            RxQueue, //
        },
        page_pool::{
            self,
            MemoryProvider,
            Pool,
            PoolNetmem,
            ProviderOps, //
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

/// A netdev with two rx queues: the first with the provider `ops` over
/// private data `mp_priv` and a page pool on it ([`Rig::new`]), or both
/// restarted by the core as providers come and go
/// (`Rig::with_queue_api`); torn down on drop.
///
/// # Invariants
///
/// `netdev` was allocated by `empty` and is freed by `drop`, after `pool`.
pub(crate) struct Rig {
    pool: Option<Pool>,
    netdev: NonNull<bindings::net_device>,
}

impl Rig {
    /// A netdev with two rx and tx queues, no provider and no pool.
    pub(crate) fn empty() -> Result<Self> {
        // SAFETY: valid name and setup function; two rx and tx queues.
        let netdev = unsafe {
            bindings::alloc_netdev_mqs(
                0,
                c"devmemrs%d".as_char_ptr(),
                0,
                Some(bindings::ether_setup),
                2,
                2,
            )
        };
        Ok(Self {
            pool: None,
            // INVARIANT: allocated here.
            netdev: NonNull::new(netdev).ok_or(ENOMEM)?,
        })
    }

    /// A pool of `order` on a queue whose provider is `ops` over `mp_priv`,
    /// mapping for `dev`. `mp_priv` must outlive the rig.
    pub(crate) fn new<T: MemoryProvider>(
        ops: &'static ProviderOps<T>,
        mp_priv: &T,
        dev: &Device<Bound>,
        order: u32,
    ) -> Result<Self> {
        let mut rig = Self::empty()?;
        let netdev = rig.netdev.as_ptr();
        // SAFETY: the netdev is ours and has rx queues; the first one's
        // provider parameters are set before any pool reads them.
        unsafe {
            let rxq = (*netdev)._rx;
            (*rxq).mp_params.mp_ops = ops.as_raw();
            (*rxq).mp_params.mp_priv = ptr::from_ref(mp_priv).cast_mut().cast();
        }
        rig.new_pool(dev, order)?;
        Ok(rig)
    }

    /// Replaces the pool with a new one of `order` on queue 0.
    pub(crate) fn new_pool(&mut self, dev: &Device<Bound>, order: u32) -> Result {
        self.pool = None;
        // The page pool core reads the queue's provider under the instance
        // lock.
        let locked = self.netdev().lock();
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
        // SAFETY: allocated until the rig is dropped (type invariant).
        unsafe { NetDevice::from_raw(self.netdev.as_ptr()) }
    }

    /// Rx queue `idx` (0 or 1) of the netdev; the pool is on queue 0.
    pub(crate) fn rx_queue(&self, idx: usize) -> &RxQueue {
        assert!(idx < 2);
        // SAFETY: the netdev has two rx queues, allocated with it.
        unsafe { RxQueue::from_raw((*self.netdev.as_ptr())._rx.add(idx)) }
    }

    /// How many buffers wait in the pool's allocation cache.
    pub(crate) fn cached(&self) -> u32 {
        self.pool.as_ref().map_or(0, |p| {
            // SAFETY: the pool is valid; read by the allocating context.
            unsafe { (*p.as_page_pool().as_raw()).alloc.count }
        })
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // The pool goes first: it is listed on the netdev.
        self.pool = None;
        // SAFETY: allocated by `new`, freed once (type invariant).
        unsafe { bindings::free_netdev(self.netdev.as_ptr()) };
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
