// SPDX-License-Identifier: GPL-2.0

//! The dma-buf memory provider: page pools on a bound queue take their
//! buffers from the binding's `net_iov`s.
//!
//! As the C core does, the provider hands the pool one `net_iov` per call
//! and leaves the pool's allocation cache to the pool. Filling the cache
//! in bulk (up to `PP_ALLOC_CACHE_REFILL`, as io_uring's zero-copy receive
//! provider does) would park up to 63 `net_iov`s more in each pool than
//! its ring asks for: taken from the other queues bound to the same
//! dma-buf, and counted in the pool's `inflight` though nothing uses them.

use super::binding::Binding;
use kernel::{
    net::{
        netdev::{
            Locked,
            RxQueue, //
        },
        netdev_genl::attr,
        netlink::request::ExtAck,
        netmem::NetmemRef,
        page_pool::{
            self,
            AllocCache,
            FillMsg,
            MemoryProvider,
            MpParams,
            PagePool,
            PoolInit,
            ProviderOps, //
        },
    },
    page::PAGE_SHIFT,
    prelude::*,
};

/// The provider's ops table, in read-only data as the page pool requires;
/// its address identifies the provider.
pub static DEVMEM_OPS: ProviderOps<Binding> = ProviderOps::new();

/// The provider parameters of `binding`. A binding of large `net_iov`s
/// asks the queue for buffers of that size; one of `PAGE_SIZE` asks for
/// nothing, so drivers without `rx-page-size` support take it.
fn params(binding: &Binding) -> MpParams {
    // CAST: PAGE_SHIFT is small.
    let size = if binding.niov_shift() == PAGE_SHIFT as u32 {
        0
    } else {
        1 << binding.niov_shift()
    };
    MpParams::new(&DEVMEM_OPS, binding, size)
}

/// Installs `binding` on receive queue `idx` of `dev`, which restarts the
/// queue (`net_devmem_bind_dmabuf_to_queue`).
pub fn install(binding: &Binding, dev: &Locked<'_>, idx: u32, extack: &ExtAck<'_>) -> Result {
    let p = params(binding);
    // SAFETY: the binding stays alive until the queue is closed by
    // `uninstall_all`, which its owner calls before letting go of it, or
    // until the core calls `uninstall` for the queue.
    unsafe { p.open_rxq(dev, idx, extack)? };
    let recorded = dev
        .rx_queue(idx)
        .ok_or(EINVAL)
        .and_then(|q| binding.add_rxq(q));
    if let Err(e) = recorded {
        // Opened just above, with these parameters, under the same lock.
        let _ = p.close_rxq(dev, idx);
        return Err(e);
    }
    Ok(())
}

/// Closes every queue `binding` is installed on; `dev` is the binding's
/// device, locked, or `None` when it is installed on none.
pub fn uninstall_all(binding: &Binding, dev: Option<&Locked<'_>>) {
    let rxqs = binding.take_rxqs();
    let Some(dev) = dev else {
        return;
    };
    let p = params(binding);
    for q in rxqs {
        // SAFETY: the queues of a binding are queues of its device, which
        // is locked.
        let q = unsafe { q.as_ref() };
        // Each was opened with these parameters, and is closed once: as
        // the binding unbinds, or by the core as the device goes, after
        // which this finds nothing to close.
        let _ = p.close_rxq(dev, q.index());
    }
}

// SAFETY:
// - `alloc_netmems` hands out one `net_iov` of the binding per call, taken
//   off its free list (so used by no one else), cleared and adopted by the
//   pool it returns it to; the binding's `net_iov`s were initialised for
//   it, as `Dmabuf` in its chunks, when it was bound.
// - The pool's reference to the binding (taken in `init`, dropped in
//   `destroy`) keeps the `net_iov`s, pinned with the binding, alive while
//   the pool holds any; a `net_iov` goes back on the free list only in
//   `release_netmem`, when the pool gives it back.
// - Each `net_iov` stands for `1 << niov_shift` bytes of the mapped
//   dma-buf at its DMA address: the binding carves its chunks so.
// - `init` takes the reference last, so it has nothing to undo when it
//   fails; `destroy` drops it.
#[vtable]
unsafe impl MemoryProvider for Binding {
    fn niov_shift(this: &Self) -> u32 {
        this.niov_shift()
    }

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
        // One per call, as `mp_dmabuf_devmem_alloc_netmems` does: the pool
        // calls again when its cache and ring are empty, and what it does
        // not ask for stays on the binding for its other queues.
        let niov = this.alloc()?;
        // SAFETY: the `net_iov` came off the free list: no one else uses
        // it.
        unsafe { niov.reset_pp() };
        // SAFETY: a free `net_iov` of the binding, just cleared, returned
        // to the pool below; the pool's reference to the binding keeps it
        // alive until the pool gives it back.
        unsafe { cache.adopt(niov) };
        niov.to_netmem()
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

    fn nl_fill(this: &Self, msg: &mut FillMsg<'_>, rxq: Option<&RxQueue>) -> Result {
        let attr = if rxq.is_some() {
            attr::QUEUE_DMABUF
        } else {
            attr::PAGE_POOL_DMABUF
        };
        msg.put_u32(attr, this.id())
    }

    fn uninstall(this: &Self, rxq: &RxQueue) {
        this.forget_rxq(rxq);
    }
}

#[kunit_tests(devmem_rs_provider)]
mod tests {
    use super::*;
    use crate::test_netdev::{
        with_binding,
        with_handle,
        Rig, //
    };
    use kernel::net::{
        netmem::NetIov,
        page_pool::{
            self,
            Pool,
            PoolNetmem, //
        },
    };

    /// Allocates up to `n` buffers from `rig`'s pool, fewer if it runs dry.
    fn take(rig: &mut Rig<'_>, n: usize) -> Result<KVec<PoolNetmem>> {
        let mut got = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            let Some(m) = rig.alloc() else { break };
            got.push(m, GFP_KERNEL)?;
        }
        Ok(got)
    }

    #[test]
    fn pool_takes_one_net_iov_per_allocation() -> Result {
        with_binding(100, |b, dev| {
            let mut rig = Rig::new(&DEVMEM_OPS, b, dev, 0)?;
            let first = rig.alloc().ok_or(ENOMEM)?;
            let niov = first.netmem().net_iov().ok_or(EINVAL)?;
            // SAFETY: the pool handed out a `net_iov` of the binding.
            let niov = unsafe { NetIov::from_raw(niov.as_ptr()) };
            assert!(b.index_of(niov).is_some());
            assert_eq!(page_pool::pp_ref_count(niov), 1);
            // As in C: one handed out, none parked in the pool's cache.
            assert_eq!(rig.cached(), 0);
            let second = rig.alloc().ok_or(ENOMEM)?;
            assert!(second.netmem().is_net_iov());
            assert!(second.netmem().as_raw() != first.netmem().as_raw());
            assert_eq!(rig.cached(), 0);
            drop(first);
            drop(second);
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
    fn two_pools_share_one_binding_evenly() -> Result {
        const HALF: usize = 100;
        // CAST: a small count.
        with_binding(2 * HALF as u32, |b, dev| {
            // Two queues bound to one dma-buf, each filling a ring of HALF.
            let mut pa = Rig::new(&DEVMEM_OPS, b, dev, 0)?;
            let mut pb = Rig::new(&DEVMEM_OPS, b, dev, 0)?;
            let got_a = take(&mut pa, HALF)?;
            // The first pool kept nothing beyond what it handed out, so the
            // second gets the other half (C: 100 and 100; with the cache
            // filled 64 at a time it was 100 and 72).
            let got_b = take(&mut pb, HALF)?;
            // And then the binding is dry.
            let extra = pb.alloc();
            let counts = (got_a.len(), got_b.len());
            let dry = extra.is_none();
            // Each buffer goes back to its pool, before the pools go.
            drop((got_a, got_b, extra));
            drop(pa);
            drop(pb);
            assert_eq!(counts, (HALF, HALF));
            assert!(dry);
            // Destroying the pools gave every net_iov back.
            let mut n = 0;
            while b.alloc().is_some() {
                n += 1;
            }
            assert_eq!(n, 2 * HALF);
            Ok(())
        })
    }

    #[test]
    fn small_binding_runs_dry() -> Result {
        with_binding(3, |b, dev| {
            let mut rig = Rig::new(&DEVMEM_OPS, b, dev, 0)?;
            let got = take(&mut rig, 3)?;
            assert_eq!(got.len(), 3);
            assert!(got.iter().all(|m| m.netmem().is_net_iov()));
            assert!(rig.alloc().is_none());
            drop(got);
            Ok(())
        })
    }

    #[test]
    fn pools_of_queues_the_device_lacks_are_refused() -> Result {
        with_binding(4, |_b, dev| {
            let rig = Rig::with_queue_api(dev)?;
            let locked = rig.netdev().lock()?;
            // The rig has two receive queues.
            for idx in [2, 100_000, u32::MAX] {
                // SAFETY: the instance lock is held.
                let params = unsafe { page_pool::Params::new(dev, 0, 256).rx_queue(&locked, idx) };
                assert_eq!(Pool::new(&params).err(), Some(EINVAL));
            }
            // SAFETY: as above.
            let params = unsafe { page_pool::Params::new(dev, 0, 256).rx_queue(&locked, 1) };
            drop(Pool::new(&params)?);
            Ok(())
        })
    }

    /// A provider that takes any pool and hands out nothing: what the
    /// page pool abstraction's own size check stands in front of.
    struct Lenient;

    // SAFETY: it hands out no buffer; `init` takes nothing.
    #[vtable]
    unsafe impl MemoryProvider for Lenient {
        fn niov_shift(_this: &Self) -> u32 {
            // CAST: PAGE_SHIFT is small.
            PAGE_SHIFT as u32
        }

        fn init(_this: &Self, _pool: &mut PoolInit<'_>) -> Result {
            Ok(())
        }

        fn destroy(_this: &Self, _pool: &PagePool) {}

        fn alloc_netmems(_this: &Self, _cache: &mut AllocCache<'_>) -> Option<NetmemRef> {
            None
        }

        fn release_netmem(_this: &Self, _pool: &PagePool, _netmem: NetmemRef) -> bool {
            false
        }
    }

    static LENIENT_OPS: ProviderOps<Lenient> = ProviderOps::new();

    #[test]
    fn pools_of_buffers_larger_than_a_net_iov_are_refused() -> Result {
        with_binding(4, |_b, dev| {
            let lenient = Lenient;
            // Buffers of two pages, net_iovs of one: refused before the
            // provider's `init`, which would take them.
            match Rig::new(&LENIENT_OPS, &lenient, dev, 1) {
                Err(e) => assert_eq!(e, E2BIG),
                Ok(_) => return Err(EINVAL),
            }
            drop(Rig::new(&LENIENT_OPS, &lenient, dev, 0)?);
            Ok(())
        })
    }

    #[test]
    fn closing_what_a_queue_does_not_hold_is_refused() -> Result {
        with_binding(4, |b, dev| {
            let lenient = Lenient;
            // The binding's provider on queue 0 of two.
            let rig = Rig::new(&DEVMEM_OPS, b, dev, 0)?;
            let locked = rig.netdev().lock()?;
            // Another provider, a queue without one, a queue the device
            // lacks: refused, where the core would WARN.
            let other = MpParams::new(&LENIENT_OPS, &lenient, 0);
            assert_eq!(other.close_rxq(&locked, 0), Err(EINVAL));
            assert_eq!(params(b).close_rxq(&locked, 1), Err(EINVAL));
            assert_eq!(params(b).close_rxq(&locked, 2), Err(EINVAL));
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

    #[test]
    fn uninstall_forgets_the_queue_and_then_the_device() -> Result {
        with_handle(4, |h, dev| {
            // SAFETY: `h` outlives the rig, dropped in this closure.
            let rig = unsafe { Rig::with_provider(&DEVMEM_OPS, &**h, dev, 0) }?;
            h.set_netdev(rig.netdev(), None)?;
            h.add_rxq(rig.rx_queue(0).ok_or(EINVAL)?)?;
            assert_eq!(h.dev_ptr(), core::ptr::from_ref(rig.netdev()).cast_mut());
            assert!(h.rx_dev().is_some());
            let uninstall = DEVMEM_OPS.as_raw().uninstall.ok_or(EINVAL)?;
            // As the core does when the device goes, for a queue the
            // binding is not on, then for its queue.
            let other = rig.rx_queue(1).ok_or(EINVAL)?.as_raw();
            // SAFETY: the provider's own parameters and a live queue.
            unsafe { uninstall(core::ptr::from_ref(&**h).cast_mut().cast(), other) };
            assert!(!h.dev_ptr().is_null());
            // SAFETY: as above.
            unsafe {
                uninstall(
                    core::ptr::from_ref(&**h).cast_mut().cast(),
                    rig.rx_queue(0).ok_or(EINVAL)?.as_raw(),
                )
            };
            assert!(h.dev_ptr().is_null());
            assert!(h.rx_dev().is_none());
            assert!(h.take_rxqs().is_empty());
            Ok(())
        })
    }
}
