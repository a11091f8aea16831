// SPDX-License-Identifier: GPL-2.0

//! A page pool on a queue with a memory provider, without a NIC, for KUnit
//! and the allocation benchmark.
//!
//! The netdev is allocated but never registered; its one rx queue gets the
//! provider parameters directly, under the instance lock, where
//! `netif_mp_open_rxq` would put them on a real device.
//!
//! [`Rig::with_queue_api`] instead lets `netif_mp_open_rxq` and
//! `netif_mp_close_rxq` do it, as on a device whose driver has the queue
//! API, for tests of installing bindings on queues.

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
    dma_buf::{
        test_exporter,
        DmaBuf, //
    },
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
    time::{
        delay::fsleep,
        Delta, //
    },
};

/// A page of the test exporter's segments.
// CAST: a page fits a u32 segment length.
pub(crate) const PAGE: u32 = PAGE_SIZE as u32;

/// A netdev with two rx queues: the first with the provider `ops` over
/// private data `mp_priv` and a page pool on it ([`Rig::new`]), or both
/// restarted by the core as providers come and go
/// ([`Rig::with_queue_api`]); torn down on drop.
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
    fn empty() -> Result<Self> {
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

    /// A netdev with two rx queues, neither provider nor pool, whose
    /// queues restart as those of a driver with the queue API do
    /// ([`QUEUE_OPS`]): providers go on and off them through the core
    /// (`netif_mp_open_rxq`, `netif_mp_close_rxq`), checks included. The
    /// device is down, so a restart makes the queue's new page pool, which
    /// the core checks took the queue's provider, and frees the pool at
    /// once. `dev` is the netdev's parent, the DMA device of its pools; it
    /// must outlive the rig.
    pub(crate) fn with_queue_api(dev: &Device<Bound>) -> Result<Self> {
        let rig = Self::empty()?;
        let netdev = rig.netdev.as_ptr();
        // `Device` is a transparent wrapper of `struct device`.
        let parent = ptr::from_ref(dev).cast_mut().cast::<bindings::device>();
        // SAFETY: the netdev is ours and not registered: nothing else reads
        // these fields yet. The ops tables are constants, alive forever.
        unsafe {
            (*netdev).dev.parent = parent;
            (*netdev).netdev_ops = NETDEV_OPS;
            (*netdev).queue_mgmt_ops = QUEUE_OPS;
            // Providers need header split (`netif_mp_open_rxq` checks).
            // CAST: the enum value fits the `u8` field, as in C.
            (*(*netdev).cfg).hds_config =
                bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_ENABLED as u8;
        }
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

    /// The provider data of rx queue `idx` (`mp_params.mp_priv`): null
    /// when the queue has no provider.
    pub(crate) fn mp_priv(&self, idx: usize) -> *const c_void {
        // SAFETY: the queue lives as long as the rig; the tests read this
        // while no restart of the queue runs.
        unsafe { (*self.rx_queue(idx).as_raw()).mp_params.mp_priv }.cast_const()
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

/// No device operations: the netdev is never registered or opened, but the
/// core reads the table (`netdev_need_ops_lock` looks for shaper ops).
const NETDEV_OPS: &bindings::net_device_ops = &{
    // SAFETY: all-zero is a valid ops table: every op absent.
    unsafe { core::mem::zeroed() }
};

/// The queue API of [`Rig::with_queue_api`]: a queue's memory is the page
/// pool made for it.
const QUEUE_OPS: &bindings::netdev_queue_mgmt_ops = &bindings::netdev_queue_mgmt_ops {
    ndo_queue_mem_size: core::mem::size_of::<Pool>(),
    ndo_queue_mem_alloc: Some(queue_mem_alloc),
    ndo_queue_mem_free: Some(queue_mem_free),
    ndo_queue_start: Some(queue_start),
    ndo_queue_stop: Some(queue_stop),
    // SAFETY: all-zero is valid for the remaining fields: no op.
    ..unsafe { core::mem::zeroed() }
};

/// Makes the page pool of rx queue `idx` into `mem`, as a driver does for a
/// restart: the pool takes the queue's provider, if it has one.
///
/// # Safety
///
/// Called by the core, under the instance lock of a netdev made by
/// [`Rig::with_queue_api`], with a per-queue memory area of
/// `ndo_queue_mem_size` bytes.
unsafe extern "C" fn queue_mem_alloc(
    dev: *mut bindings::net_device,
    _qcfg: *mut bindings::netdev_queue_config,
    mem: *mut c_void,
    idx: c_int,
) -> c_int {
    let Ok(idx) = u32::try_from(idx) else {
        return EINVAL.to_errno();
    };
    // SAFETY: the rig's netdev, alive during the call; its parent is the
    // bound device `Rig::with_queue_api` was given, which outlives the rig.
    let (netdev, parent) = unsafe {
        (
            NetDevice::from_raw(dev),
            Device::<Bound>::from_raw((*dev).dev.parent),
        )
    };
    // SAFETY: the core holds the instance lock across a restart.
    let params = unsafe { page_pool::Params::new(parent, 0, 256).rx_queue(netdev, idx) };
    match Pool::new(&params) {
        Ok(pool) => {
            // SAFETY: `mem` is `size_of::<Pool>()` bytes from `kvzalloc`,
            // aligned for any field, and holds nothing yet.
            unsafe { mem.cast::<Pool>().write(pool) };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// Destroys the pool [`queue_mem_alloc`] made.
///
/// # Safety
///
/// As for [`queue_mem_alloc`], with `mem` filled by it: the core frees only
/// memory it allocated successfully.
unsafe extern "C" fn queue_mem_free(_dev: *mut bindings::net_device, mem: *mut c_void) {
    // SAFETY: `queue_mem_alloc` wrote a pool there, which the core gives
    // up now.
    drop(unsafe { mem.cast::<Pool>().read() });
}

/// The device is never up, so the core never starts a queue; refused in
/// case it did.
///
/// # Safety
///
/// As for [`queue_mem_alloc`].
unsafe extern "C" fn queue_start(
    _dev: *mut bindings::net_device,
    _qcfg: *mut bindings::netdev_queue_config,
    _mem: *mut c_void,
    _idx: c_int,
) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// As [`queue_start`], for stopping.
///
/// # Safety
///
/// As for [`queue_mem_alloc`].
unsafe extern "C" fn queue_stop(
    _dev: *mut bindings::net_device,
    _mem: *mut c_void,
    _idx: c_int,
) -> c_int {
    EOPNOTSUPP.to_errno()
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

/// Waits (up to a second) for every mapping of `buf` to go: a binding's
/// last reference frees it from a work item, after an RCU grace period.
pub(crate) fn wait_unmapped(buf: &DmaBuf) -> bool {
    for _ in 0..100 {
        if test_exporter::live_maps(buf) == 0 {
            return true;
        }
        fsleep(Delta::from_millis(10));
    }
    false
}
