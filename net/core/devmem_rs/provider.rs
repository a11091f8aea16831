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
        netmem::NetmemRef,
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
        // One for the caller, the rest for the cache.
        let want = cache.room().clamp(1, ALLOC_CACHE_REFILL);
        let n = this.alloc_bulk(&mut idx[..want]);
        let mut out = None;
        for (k, &i) in idx[..n].iter().enumerate() {
            // The free list holds only numbers of this binding's `net_iov`s.
            let Some(niov) = this.net_iov(i) else {
                continue;
            };
            // SAFETY: the number came off the free list: no one else uses
            // this `net_iov`.
            unsafe { niov.reset_pp() };
            cache.adopt(niov);
            if k + 1 < n {
                // Cannot fail: at most `room()` entries go in.
                let _ = cache.place(niov.to_netmem());
            } else {
                out = Some(niov.to_netmem());
            }
        }
        out
    }

    fn release_netmem(this: &Self, _pool: &PagePool, netmem: NetmemRef) -> bool {
        // SAFETY: the pool only holds `net_iov`s this provider gave it,
        // which live as long as the binding.
        if let Some(niov) = unsafe { page_pool::take_back(netmem) } {
            this.free(niov);
        }
        // Never let the pool put_page() a net_iov.
        false
    }
}

#[kunit_tests(devmem_rs_provider)]
mod tests {
    use super::*;
    use crate::rig::{
        with_binding,
        Rig, //
    };
    use kernel::net::netmem::NetIov;

    #[test]
    fn pool_fills_its_cache_from_the_binding() -> Result {
        with_binding(100, |b, dev| {
            let rig = Rig::new(&DEVMEM_OPS, b, dev, 0)?;
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
            let rig = Rig::new(&DEVMEM_OPS, b, dev, 0)?;
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
            match Rig::new(&DEVMEM_OPS, b, dev, 1) {
                Err(e) => assert_eq!(e, E2BIG),
                Ok(_) => return Err(EINVAL),
            }
            Ok(())
        })
    }
}
