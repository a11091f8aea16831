// SPDX-License-Identifier: GPL-2.0

//! A page pool on a queue with a memory provider, without a NIC, for KUnit
//! and the allocation benchmark.
//!
//! The netdev is allocated but never registered; its one rx queue gets the
//! provider parameters directly, under the instance lock, where
//! `netif_mp_open_rxq` would put them on a real device.

use super::binding::{
    Binding,
    Handle, //
};
use core::ptr;
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
        page_pool,
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

/// A netdev with two rx queues, the first with the provider `ops` over
/// private data `mp_priv` and a page pool on it; torn down on drop.
pub(crate) struct Rig {
    netdev: *mut bindings::net_device,
    pool: *mut bindings::page_pool,
}

impl Rig {
    /// A pool of `order` on a queue whose provider is `ops` over `mp_priv`.
    /// `mp_priv` must outlive the rig.
    pub(crate) fn new<T>(
        ops: &'static bindings::memory_provider_ops,
        mp_priv: &T,
        dev: &Device,
        order: u32,
    ) -> Result<Self> {
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
        if netdev.is_null() {
            return Err(ENOMEM);
        }
        let mut rig = Self {
            netdev,
            pool: ptr::null_mut(),
        };
        // SAFETY: all-zero is a valid `page_pool_params` to fill in.
        let mut pp: bindings::page_pool_params = unsafe { core::mem::zeroed() };
        // SAFETY: only the named fields of the parameter groups are set.
        unsafe {
            let fast = &mut pp.__bindgen_anon_1.__bindgen_anon_1;
            fast.order = order;
            fast.pool_size = 256;
            fast.nid = bindings::NUMA_NO_NODE;
            // `Device` is a transparent wrapper of `struct device`.
            fast.dev = ptr::from_ref(dev).cast_mut().cast();
            fast.dma_dir = DataDirection::FromDevice.into();
            fast.max_len = PAGE << order;
            let slow = &mut pp.__bindgen_anon_2.__bindgen_anon_1;
            slow.netdev = netdev;
            slow.queue_idx = 0;
            slow.flags = page_pool::PP_FLAG_DMA_MAP
                | page_pool::PP_FLAG_DMA_SYNC_DEV
                | page_pool::PP_FLAG_ALLOW_UNREADABLE_NETMEM;
        }
        // SAFETY: `netdev` is valid and has rx queues; the first one's provider
        // parameters are set under its instance lock, under which
        // `page_pool_create` reads them.
        let pool = unsafe {
            bindings::netdev_lock(netdev);
            let rxq = (*netdev)._rx;
            (*rxq).mp_params.mp_ops = ops;
            (*rxq).mp_params.mp_priv = ptr::from_ref(mp_priv).cast_mut().cast();
            let pool = bindings::page_pool_create(&pp);
            bindings::netdev_unlock(netdev);
            pool
        };
        rig.pool = kernel::error::from_err_ptr(pool)?;
        Ok(rig)
    }

    /// Allocates from the pool (`page_pool_alloc_netmems`); 0 when dry.
    pub(crate) fn alloc(&self) -> bindings::netmem_ref {
        // SAFETY: the pool is valid.
        unsafe { bindings::page_pool_alloc_netmems(self.pool, bindings::GFP_KERNEL) }
    }

    /// Gives a buffer back to the pool (`page_pool_put_full_netmem`).
    pub(crate) fn put(&self, netmem: bindings::netmem_ref) {
        // SAFETY: `netmem` came from this pool, with its one reference.
        unsafe { bindings::page_pool_put_full_netmem(self.pool, netmem, false) }
    }

    /// The netdev.
    pub(crate) fn netdev(&self) -> &NetDevice {
        // SAFETY: allocated until the rig is dropped.
        unsafe { NetDevice::from_raw(self.netdev) }
    }

    /// Rx queue `idx` (0 or 1) of the netdev; the pool is on queue 0.
    pub(crate) fn rx_queue(&self, idx: usize) -> &RxQueue {
        assert!(idx < 2);
        // SAFETY: the netdev has two rx queues, allocated with it.
        unsafe { RxQueue::from_raw((*self.netdev)._rx.add(idx)) }
    }

    /// How many buffers wait in the pool's allocation cache.
    pub(crate) fn cached(&self) -> u32 {
        // SAFETY: the pool is valid; read by the allocating context.
        unsafe { (*self.pool).alloc.count }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // SAFETY: the pool (if created) and the netdev are ours; the pool
        // goes first, it is listed on the netdev.
        unsafe {
            if !self.pool.is_null() {
                bindings::page_pool_destroy(self.pool);
            }
            bindings::free_netdev(self.netdev);
        }
    }
}

/// Runs `f` with a device and a binding of `pages` 4 KiB `net_iov`s in one
/// DMA segment, from the test exporter.
pub(crate) fn with_binding(pages: u32, f: impl FnOnce(&Binding, &Device) -> Result) -> Result {
    with_handle(pages, |h, dev| f(h, dev))
}

/// As [`with_binding`], with the owner's handle.
pub(crate) fn with_handle(pages: u32, f: impl FnOnce(&mut Handle, &Device) -> Result) -> Result {
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
