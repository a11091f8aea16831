// SPDX-License-Identifier: GPL-2.0

//! The generic special-purpose allocator (`gen_pool`): hands out ranges of
//! an address space that its user adds to it in chunks (device memory,
//! DMA addresses), never touching the memory behind the addresses.
//!
//! C header: [`include/linux/genalloc.h`](srctree/include/linux/genalloc.h)

use crate::{
    error::to_result,
    prelude::*, //
};
use core::ptr::{
    self,
    NonNull, //
};

/// A pool of address ranges (`struct gen_pool`), allocated in units of
/// `1 << min_alloc_order` bytes, first fit. Allocating and freeing are
/// lock-free and may run in any context but NMI.
///
/// # Invariants
///
/// `ptr` is a pool made by `gen_pool_create`, owned by this object, which
/// destroys it on drop.
///
/// # Examples
///
/// ```
/// use kernel::genalloc::GenPool;
///
/// let pool = GenPool::new(12)?;
/// pool.add(0x10_0000, 0x2000)?;
/// let a = pool.alloc(0x1000).ok_or(ENOMEM)?;
/// let b = pool.alloc(0x1000).ok_or(ENOMEM)?;
/// assert!(pool.alloc(0x1000).is_none());
/// assert!(pool.has_addr(a, 0x1000) && pool.has_addr(b, 0x1000));
/// assert!(!pool.has_addr(0x20_0000, 0x1000));
/// // SAFETY: both came from `alloc` with these sizes, freed once each.
/// unsafe {
///     pool.free(a, 0x1000);
///     pool.free(b, 0x1000);
/// }
/// # Ok::<(), Error>(())
/// ```
pub struct GenPool {
    ptr: NonNull<bindings::gen_pool>,
}

// SAFETY: a pool may be used and destroyed from any thread.
unsafe impl Send for GenPool {}

// SAFETY: allocating and freeing are lock-free (`cmpxchg` on the chunks'
// bitmaps, the chunk list under RCU); adding a chunk takes the pool's
// spinlock.
unsafe impl Sync for GenPool {}

impl GenPool {
    /// A pool with no address ranges yet, allocating in units of
    /// `1 << min_alloc_order` bytes (`gen_pool_create`, on no particular
    /// NUMA node). `EINVAL` if the unit does not fit a `usize`.
    pub fn new(min_alloc_order: u32) -> Result<Self> {
        if min_alloc_order >= usize::BITS {
            return Err(EINVAL);
        }
        // CAST: below `usize::BITS`, checked above.
        let order = min_alloc_order as i32;
        // SAFETY: a valid order, checked above; any node will do.
        let ptr = unsafe { bindings::gen_pool_create(order, bindings::NUMA_NO_NODE) };
        // INVARIANT: made just above, owned from here.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// Adds the `size` bytes from `addr` to the pool (`gen_pool_add`).
    /// Sleeps, to allocate the chunk's bitmap. `EINVAL` if the range
    /// wraps around the address space.
    pub fn add(&self, addr: usize, size: usize) -> Result {
        if addr.checked_add(size).is_none() {
            return Err(EINVAL);
        }
        // SAFETY: the pool is valid (type invariant); a range that does not
        // wrap, no physical address (-1, as `gen_pool_add` passes), no
        // owner.
        to_result(unsafe {
            bindings::gen_pool_add_owner(
                self.ptr.as_ptr(),
                addr,
                bindings::phys_addr_t::MAX,
                size,
                bindings::NUMA_NO_NODE,
                ptr::null_mut(),
            )
        })
    }

    /// Allocates `size` bytes, rounded up to the pool's unit
    /// (`gen_pool_alloc`): their start, or `None` if no chunk has that
    /// much free in one piece (or `size` is 0). A range at address 0 is
    /// never handed out, as in C, where 0 means failure.
    pub fn alloc(&self, size: usize) -> Option<usize> {
        let raw = self.ptr.as_ptr();
        // SAFETY: the pool is valid (type invariant); its algorithm and
        // its data are set at creation, and nothing here changes them, so
        // they go together, as `gen_pool_alloc` passes them.
        let addr = unsafe {
            bindings::gen_pool_alloc_algo_owner(
                raw,
                size,
                (*raw).algo,
                (*raw).data,
                ptr::null_mut(),
            )
        };
        (addr != 0).then_some(addr)
    }

    /// Whether the `size` bytes from `addr` are all in one chunk of the
    /// pool (`gen_pool_has_addr`).
    pub fn has_addr(&self, addr: usize, size: usize) -> bool {
        // SAFETY: the pool is valid (type invariant).
        unsafe { bindings::gen_pool_has_addr(self.ptr.as_ptr(), addr, size) }
    }

    /// Gives the `size` bytes at `addr` back (`gen_pool_free`).
    ///
    /// # Safety
    ///
    /// `addr` came from [`GenPool::alloc`] of this pool with `size`, and
    /// is freed once: freeing a range someone else holds would hand it out
    /// twice, and users of a pool rely on holding their ranges alone.
    pub unsafe fn free(&self, addr: usize, size: usize) {
        // SAFETY: the pool is valid (type invariant); an allocated range,
        // per the caller.
        unsafe { bindings::gen_pool_free_owner(self.ptr.as_ptr(), addr, size, ptr::null_mut()) }
    }
}

impl Drop for GenPool {
    /// Destroys the pool (`gen_pool_destroy`). With ranges still out,
    /// which C would `BUG()` on, it warns and leaks the pool instead.
    fn drop(&mut self) {
        let raw = self.ptr.as_ptr();
        // SAFETY: the pool is valid (type invariant).
        let (avail, size) =
            unsafe { (bindings::gen_pool_avail(raw), bindings::gen_pool_size(raw)) };
        if crate::warn_on!(avail != size) {
            return;
        }
        // SAFETY: owned (type invariant), with nothing allocated, destroyed
        // once.
        unsafe { bindings::gen_pool_destroy(raw) }
    }
}
