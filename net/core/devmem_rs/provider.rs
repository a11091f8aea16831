// SPDX-License-Identifier: GPL-2.0

//! The dma-buf memory provider: page pools on a bound queue take their
//! buffers from the binding's `net_iov`s.
//!
//! Unlike the C core, which hands the pool one `net_iov` per call, the
//! provider fills the pool's allocation cache in one go (up to
//! `PP_ALLOC_CACHE_REFILL`), with one exchange on the binding's free list.

use super::binding::Binding;
use kernel::{
    net::{
        netmem::{
            NetIov,
            NetmemRef, //
        },
        page_pool::{
            self,
            AllocCache,
            MemoryProvider,
            PagePool,
            PoolInit,
            ALLOC_CACHE_REFILL, //
        },
    },
    page::PAGE_SHIFT,
    prelude::*,
    warn_on,
};

/// The provider's ops table, in read-only data as the page pool requires;
/// its address identifies the provider.
pub static DEVMEM_OPS: kernel::bindings::memory_provider_ops = page_pool::Adapter::<Binding>::OPS;

impl MemoryProvider for Binding {
    fn init(this: &Self, pool: &mut PoolInit<'_>) -> Result {
        // dma-buf memory must not be synced: the C core clears this first.
        pool.disable_dma_sync();
        // CAST: PAGE_SHIFT is small.
        if pool.pool().order() + PAGE_SHIFT as u32 != this.niov_shift() {
            return Err(E2BIG);
        }
        // The pool's reference, dropped in `destroy`. The C core ignores a
        // failed get and later drops a reference it never took; refuse the
        // pool instead.
        if !this.get_raw() {
            return Err(ENODEV);
        }
        Ok(())
    }

    fn destroy(this: &Self, _pool: &PagePool) {
        // SAFETY: `init` took this reference.
        unsafe { this.put_raw() };
    }

    fn alloc_netmems(this: &Self, cache: &mut AllocCache<'_>) -> Option<NetmemRef> {
        let mut idx = [0u32; ALLOC_CACHE_REFILL];
        let want = cache.room().min(ALLOC_CACHE_REFILL);
        let n = this.alloc_bulk(&mut idx[..want.max(1)]);
        let (last, rest) = idx[..n].split_last()?;
        for &i in &idx[..n] {
            // PANIC: `alloc_bulk` only hands out numbers of this binding.
            let niov = this.net_iov(i)?;
            // SAFETY: the number came off the free list: no one else uses
            // this `net_iov`.
            unsafe { niov.reset_pp() };
            cache.adopt(niov);
        }
        for &i in rest {
            let niov = this.net_iov(i)?;
            // Cannot fail: at most `room() - 1` entries go in.
            let _ = cache.place(niov.to_netmem());
        }
        this.net_iov(*last).map(NetIov::to_netmem)
    }

    fn release_netmem(this: &Self, _pool: &PagePool, netmem: NetmemRef) -> bool {
        let Some(ptr) = netmem.net_iov() else {
            warn_on!(true);
            return false;
        };
        // SAFETY: the pool only holds `net_iov`s this provider gave it,
        // which live as long as the binding.
        let niov = unsafe { NetIov::from_raw(ptr.as_ptr()) };
        if warn_on!(page_pool::pp_ref_count(niov) != 1) {
            return false;
        }
        page_pool::disown(niov);
        this.free(niov);
        // Never let the pool put_page() a net_iov.
        false
    }
}

#[kunit_tests(devmem_rs_provider)]
mod tests {
    use super::*;
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
        dma_buf::test_exporter,
        faux,
        page::PAGE_SIZE, //
    };

    // CAST: a page fits a u32 segment length.
    const PAGE: u32 = PAGE_SIZE as u32;

    /// A netdev with one rx queue whose provider is `binding`, and a page
    /// pool on that queue; torn down on drop.
    struct Rig {
        netdev: *mut bindings::net_device,
        pool: *mut bindings::page_pool,
    }

    impl Rig {
        fn new(binding: &Binding, dev: &Device, order: u32) -> Result<Self> {
            // SAFETY: valid name and setup function; one rx and tx queue.
            let netdev = unsafe {
                bindings::alloc_netdev_mqs(
                    0,
                    c"devmemrs%d".as_char_ptr(),
                    0,
                    Some(bindings::ether_setup),
                    1,
                    1,
                )
            };
            if netdev.is_null() {
                return Err(ENOMEM);
            }
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
                // CAST: a small size.
                fast.max_len = (PAGE_SIZE as u32) << order;
                let slow = &mut pp.__bindgen_anon_2.__bindgen_anon_1;
                slow.netdev = netdev;
                slow.queue_idx = 0;
                slow.flags = page_pool::PP_FLAG_DMA_MAP
                    | page_pool::PP_FLAG_DMA_SYNC_DEV
                    | page_pool::PP_FLAG_ALLOW_UNREADABLE_NETMEM;
            }
            // SAFETY: `netdev` is valid and has one rx queue; its provider
            // parameters are set under its instance lock, as
            // `page_pool_create` reads them under it.
            let pool = unsafe {
                bindings::netdev_lock(netdev);
                let rxq = (*netdev)._rx;
                (*rxq).mp_params.mp_ops = &DEVMEM_OPS;
                (*rxq).mp_params.mp_priv = ptr::from_ref(binding).cast_mut().cast();
                let pool = bindings::page_pool_create(&pp);
                bindings::netdev_unlock(netdev);
                pool
            };
            let mut rig = Self {
                netdev,
                pool: ptr::null_mut(),
            };
            rig.pool = kernel::error::from_err_ptr(pool)?;
            Ok(rig)
        }

        fn alloc(&self) -> bindings::netmem_ref {
            // SAFETY: the pool is valid.
            unsafe { bindings::page_pool_alloc_netmems(self.pool, bindings::GFP_KERNEL) }
        }

        fn put(&self, netmem: bindings::netmem_ref) {
            // SAFETY: `netmem` came from this pool, with its one reference.
            unsafe { bindings::page_pool_put_full_netmem(self.pool, netmem, false) }
        }

        fn cached(&self) -> u32 {
            // SAFETY: the pool is valid; read by the allocating context.
            unsafe { (*self.pool).alloc.count }
        }
    }

    impl Drop for Rig {
        fn drop(&mut self) {
            // SAFETY: the pool (if created) and netdev are ours to free;
            // the pool goes first, it is listed on the netdev.
            unsafe {
                if !self.pool.is_null() {
                    bindings::page_pool_destroy(self.pool);
                }
                bindings::free_netdev(self.netdev);
            }
        }
    }

    fn with_binding(pages: u32, f: impl FnOnce(&Binding, &Device) -> Result) -> Result {
        // CAST: PAGE_SHIFT is small.
        let shift = PAGE_SHIFT as u32;
        let segs: [(DmaAddress, u32); 1] = [(0x10_0000, pages * PAGE)];
        // CAST: a small size.
        let buf = test_exporter::export(pages as usize * PAGE_SIZE, &segs)?;
        let reg = faux::Registration::new(c"devmem-rs-pp", None)?;
        let fdev: &faux::Device<Bound> = reg.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let b =
            Binding::bind(&buf, dev, DataDirection::FromDevice, shift).map_err(|e| e.errno())?;
        f(&b, dev)
    }

    #[test]
    fn pool_fills_its_cache_from_the_binding() -> Result {
        with_binding(100, |b, dev| {
            let rig = Rig::new(b, dev, 0)?;
            let first = rig.alloc();
            let niov = NetmemRef::from_raw(first).net_iov().ok_or(EINVAL)?;
            // SAFETY: the pool handed out a `net_iov` of the binding.
            let niov = unsafe { NetIov::from_raw(niov.as_ptr()) };
            assert!(b.index_of(niov).is_some());
            assert_eq!(page_pool::pp_ref_count(niov), 1);
            // One refill took 64: one handed out, 63 left in the cache.
            assert_eq!(rig.cached(), 63);
            rig.put(first);
            drop(rig);
            // Destroying the pool gave every net_iov back.
            let mut n = 0;
            while b.alloc().is_some() {
                n += 1;
            }
            assert_eq!(n, 100);
            Ok(())
        })
    }

    #[test]
    fn small_binding_runs_dry() -> Result {
        with_binding(3, |b, dev| {
            let rig = Rig::new(b, dev, 0)?;
            let got = [rig.alloc(), rig.alloc(), rig.alloc()];
            assert!(got.iter().all(|&m| NetmemRef::from_raw(m).is_net_iov()));
            assert_eq!(rig.alloc(), 0);
            for m in got {
                rig.put(m);
            }
            Ok(())
        })
    }

    #[test]
    fn wrong_order_is_refused_like_c() -> Result {
        with_binding(4, |b, dev| {
            // Pages of order 1 on a binding of 4 KiB net_iovs.
            match Rig::new(b, dev, 1) {
                Err(e) => assert_eq!(e, E2BIG),
                Ok(_) => return Err(EINVAL),
            }
            Ok(())
        })
    }
}
