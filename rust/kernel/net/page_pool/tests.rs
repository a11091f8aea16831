// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of page pools and memory providers: the suite
//! `rust_kernel_page_pool`.

#[macros::kunit_tests(rust_kernel_page_pool)]
mod suite {
    use super::super::*;
    use crate::{
        faux,
        page::PAGE_SIZE, //
    };

    // CAST: a page fits a u32.
    const PAGE: u32 = PAGE_SIZE as u32;

    #[test]
    fn max_len_stays_within_a_buffer() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let refused = |order, len| Params::new(dev, order, 16).max_len(len).err() == Some(EINVAL);
        assert!(!refused(0, PAGE) && !refused(0, 1500));
        assert!(!refused(2, 4 * PAGE));
        assert!(refused(0, PAGE + 1) && refused(2, 4 * PAGE + 1));
        assert!(refused(0, 0) && refused(0, u32::MAX));
        Ok(())
    }

    #[test]
    fn frags_larger_than_a_buffer_are_refused() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let mut pool = Pool::new(&Params::new(dev, 0, 16).unmapped())?;
        assert!(pool.alloc_frag(PAGE + 1).is_none());
        assert!(pool.alloc_frag(u32::MAX).is_none());
        let whole = pool.alloc_frag(PAGE).ok_or(ENOMEM)?;
        assert_eq!((whole.offset(), whole.size()), (0, PAGE));
        Ok(())
    }

    /// The references to `dev`, read as its kobject counts them.
    fn refs(dev: &Device) -> i32 {
        // SAFETY: a live device; the count is an `atomic_t`, read
        // atomically, as others may change it meanwhile.
        unsafe {
            crate::sync::atomic::Atomic::<i32>::from_ptr(
                &raw mut (*dev.as_raw()).kobj.kref.refcount.refs.counter,
            )
        }
        .load(crate::sync::atomic::Relaxed)
    }

    #[test]
    fn a_pool_holds_its_device_until_destroyed() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let before = refs(dev);
        let pool = Pool::new(&Params::new(dev, 0, 16).unmapped())?;
        assert_eq!(refs(dev), before + 1);
        drop(pool);
        assert_eq!(refs(dev), before);
        Ok(())
    }

    #[test]
    fn a_pool_dropped_with_bottom_halves_off_is_destroyed_later() -> Result {
        use crate::time::{
            delay::fsleep,
            Delta, //
        };
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let before = refs(dev);
        let pool = Pool::new(&Params::new(dev, 0, 16).unmapped())?;
        let ring = KBox::pin_init(crate::new_spinlock_bh!(Some(pool)), GFP_KERNEL)?;
        {
            let mut guard = ring.lock();
            // As a poll would drop a ring it took: in place, this would
            // sleep with bottom halves off, which
            // `CONFIG_DEBUG_ATOMIC_SLEEP` reports.
            drop(guard.take());
            // Not destroyed yet: the work that destroys it, queued on this
            // CPU, cannot run before the lock goes (preemption is off
            // under it), and holds the device until then.
            assert_eq!(refs(dev), before + 1);
        }
        // The system workqueue destroys it, and lets the device go.
        for _ in 0..500 {
            if refs(dev) == before {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        assert_eq!(refs(dev), before);
        Ok(())
    }

    #[test]
    fn unmapped_pools_give_pages_without_addresses() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        // A faux device has no DMA mask: a pool that maps could not use it.
        let mut pool = Pool::new(&Params::new(dev, 0, 16).unmapped())?;
        let buf = pool.alloc().ok_or(ENOMEM)?;
        assert!(buf.is_readable());
        assert_eq!(buf.size(), PAGE);
        assert_eq!(buf.dma_addr(&pool), None);
        // Nothing to sync, and nothing to sync with.
        let synced = buf.sync_for_cpu(&pool, 0, PAGE);
        assert_eq!(synced.len(), PAGE);
        let mut head = [0xffu8; 64];
        synced.copy_to(&mut head)?;
        // A new page of a pool that does not sync: whatever it holds, the
        // whole page reads, and no more.
        let mut page = KVec::from_elem(0u8, PAGE_SIZE + 1, GFP_KERNEL)?;
        assert!(synced.copy_to(&mut page[..PAGE_SIZE]).is_ok());
        assert_eq!(synced.copy_to(&mut page), Err(EINVAL));
        // A range past the end is cut at it.
        assert_eq!(buf.sync_for_cpu(&pool, PAGE - 16, 64).len(), 16);
        assert_eq!(buf.sync_for_cpu(&pool, PAGE + 1, 1).len(), 0);
        drop(buf);
        Ok(())
    }

    #[test]
    fn another_pool_neither_syncs_nor_addresses_a_buffer() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let mut pool = Pool::new(&Params::new(dev, 0, 16).unmapped())?;
        let other = Pool::new(&Params::new(dev, 0, 16).unmapped())?;
        let buf = pool.alloc().ok_or(ENOMEM)?;
        assert!(buf.is_from(&pool) && !buf.is_from(&other));
        assert_eq!(buf.dma_addr(&other), None);
        // Nothing synced: the range is empty, and nothing can be read.
        let synced = buf.sync_for_cpu(&other, 0, PAGE);
        assert!(synced.is_empty());
        let mut head = [0u8; 1];
        assert_eq!(synced.copy_to(&mut head), Err(EINVAL));
        // Its own pool still reads it whole.
        assert_eq!(buf.sync_for_cpu(&pool, 0, PAGE).len(), PAGE);
        drop(buf);
        drop(other);
        Ok(())
    }

    /// Whether `page` is among the next `n` buffers `pool` gives; those are
    /// given back before the return.
    fn comes_back(pool: &mut Pool, page: NetmemRef, n: usize) -> Result<bool> {
        let mut held = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut seen = false;
        for _ in 0..n {
            let buf = pool.alloc().ok_or(ENOMEM)?;
            seen |= buf.netmem() == page;
            held.push(buf, GFP_KERNEL)?;
        }
        drop(held);
        Ok(seen)
    }

    /// A pool to test reusable pages with: a ring larger than every
    /// buffer a test gives back, so that the pool keeps them all, and more
    /// allocations than it and the cache hold ([`comes_back`]): a buffer
    /// given back is among them.
    fn reuse_pool(dev: &Device<Bound>) -> Result<Pool> {
        Pool::new(&Params::new(dev, 0, 1024).unmapped())
    }

    #[test]
    fn reusable_pages_flip_while_their_halves_come_back() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let mut pool = reuse_pool(dev)?;
        let page = pool.alloc_reusable().ok_or(ENOMEM)?;
        let raw = page.netmem();
        assert_eq!((page.offset(), page.size()), (0, PAGE / 2));
        // Nothing out: the page is kept, turned to its second half.
        let (a, page) = page.give(&pool);
        let page = page.ok_or(EINVAL)?;
        assert!(a.netmem() == raw && a.is_from(&pool));
        assert_eq!((a.offset(), a.size()), (0, PAGE / 2));
        assert_eq!(page.offset(), PAGE / 2);
        // Each half reads alone, and only its own bytes.
        assert_eq!(a.sync_for_cpu(&pool, 0, PAGE).len(), PAGE / 2);
        // The first half is out: the second is given, the page not kept.
        let (b, page) = page.give(&pool);
        assert!(page.is_none());
        assert_eq!((b.offset(), b.size()), (PAGE / 2, PAGE / 2));
        drop(a);
        assert!(!comes_back(&mut pool, raw, 256)?);
        drop(b);
        assert!(comes_back(&mut pool, raw, 512)?);
        Ok(())
    }

    #[test]
    fn reusable_pages_take_more_references_when_theirs_run_out() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let mut pool = reuse_pool(dev)?;
        let mut page = pool.alloc_reusable().ok_or(ENOMEM)?;
        let raw = page.netmem();
        // Twice through the references taken at once, and past.
        for i in 0..2 * REUSE_BIAS + 3 {
            let (half, next) = page.give(&pool);
            assert_eq!(half.offset(), if i % 2 == 0 { 0 } else { PAGE / 2 });
            drop(half);
            page = next.ok_or(EINVAL)?;
        }
        // Still held: the pool does not give it.
        assert!(!comes_back(&mut pool, raw, 256)?);
        drop(page);
        assert!(comes_back(&mut pool, raw, 512)?);
        Ok(())
    }

    #[test]
    fn reusable_pages_are_not_reused_while_a_page_reference_is_out() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let mut pool = reuse_pool(dev)?;
        let page = pool.alloc_reusable().ok_or(ENOMEM)?;
        let raw = page.netmem();
        let (a, page) = page.give(&pool);
        let page = page.ok_or(EINVAL)?;
        // What TCP's splice does with a half in an skb: a reference to
        // the page itself, held past the skb's.
        // SAFETY: a page, held by `a`.
        unsafe { bindings::get_netmem(raw.as_raw()) };
        drop(a);
        let (b, page) = page.give(&pool);
        assert!(page.is_none());
        drop(b);
        // SAFETY: the reference taken above.
        unsafe { bindings::put_netmem(raw.as_raw()) };
        // The page went back to the pool with its last pool reference;
        // the pool frees it rather than recycle it, with a page reference
        // out: nothing to check of it here, but that nothing leaked
        // (kmemleak, the pool's inflight count at destruction).
        drop(pool);
        Ok(())
    }

    #[test]
    fn reusable_pages_of_another_pool_are_not_reused() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let mut pool = reuse_pool(dev)?;
        let other = reuse_pool(dev)?;
        let page = pool.alloc_reusable().ok_or(ENOMEM)?;
        let raw = page.netmem();
        assert_eq!(page.dma_addr(&other), None);
        let (a, page) = page.give(&other);
        assert!(page.is_none() && a.is_from(&pool));
        assert_eq!(a.offset(), 0);
        drop(a);
        assert!(comes_back(&mut pool, raw, 512)?);
        drop(other);
        Ok(())
    }

    #[test]
    fn buffers_dropped_with_hard_irqs_off_stay_out_of_the_pool() -> Result {
        use crate::interrupt::local_interrupt_disable;

        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let mut pool = reuse_pool(dev)?;
        let buf = pool.alloc().ok_or(ENOMEM)?;
        let raw = buf.netmem();
        {
            // As in a hard IRQ handler.
            let _irqs_off = local_interrupt_disable();
            drop(buf);
        }
        // Leaked: the pool does not have it back.
        assert!(!comes_back(&mut pool, raw, 256)?);
        // SAFETY: the reference the dropped buffer held, leaked, given
        // back here, where it may be.
        unsafe { bindings::page_pool_put_full_netmem(pool.ptr.as_ptr(), raw.as_raw(), false) };
        assert!(comes_back(&mut pool, raw, 512)?);
        // A reusable page's references, likewise, in a new pool: the ring
        // of this one holds the 512 buffers given back above, which its
        // next allocations take first.
        drop(pool);
        let mut pool = reuse_pool(dev)?;
        let page = pool.alloc_reusable().ok_or(ENOMEM)?;
        let (raw, bias) = (page.netmem(), page.bias);
        {
            let _irqs_off = local_interrupt_disable();
            drop(page);
        }
        assert!(!comes_back(&mut pool, raw, 256)?);
        // SAFETY: the references the dropped page held, leaked; the last
        // one gives the page back to its pool.
        unsafe {
            if bindings::page_pool_unref_netmem(raw.as_raw(), bias) == 0 {
                bindings::page_pool_put_unrefed_netmem(
                    pool.ptr.as_ptr(),
                    raw.as_raw(),
                    u32::MAX,
                    false,
                );
            }
        }
        assert!(comes_back(&mut pool, raw, 512)?);
        Ok(())
    }

    #[test]
    fn orders_beyond_the_page_allocator_are_refused() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let order = bindings::MAX_PAGE_ORDER;
        assert!(Params::new(dev, order, 16).check().is_ok());
        for order in [order + 1, 32, 64, u32::MAX] {
            let params = Params::new(dev, order, 16);
            assert_eq!(params.check(), Err(EINVAL));
            assert_eq!(params.max_len(PAGE).err(), Some(EINVAL));
            assert_eq!(Pool::new(&Params::new(dev, order, 16)).err(), Some(EINVAL));
        }
        Ok(())
    }
}
