// SPDX-License-Identifier: GPL-2.0

//! The generic special-purpose allocator (`gen_pool`): hands out ranges of
//! an address space that its user adds to it in chunks (device memory,
//! DMA addresses), never touching the memory behind the addresses.
//!
//! C header: [`include/linux/genalloc.h`](srctree/include/linux/genalloc.h)

use crate::{
    error::to_result,
    ffi::c_void,
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
/// let mut pool = GenPool::new(12)?;
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
    /// Sleeps, to allocate the chunk's bitmap.
    ///
    /// `EINVAL` unless the range is whole units of the pool, not empty,
    /// does not wrap around the address space and overlaps no range the
    /// pool has: C takes each of these on trust, and an overlap would hand
    /// one address out twice. `&mut self` keeps another add from racing
    /// the check.
    ///
    /// ```
    /// use kernel::genalloc::GenPool;
    ///
    /// let mut pool = GenPool::new(12)?;
    /// pool.add(0x10_0000, 0x2000)?;
    /// assert_eq!(pool.add(0x10_1000, 0x2000), Err(EINVAL)); // overlaps
    /// assert_eq!(pool.add(0x0f_f000, 0x2000), Err(EINVAL)); // overlaps
    /// assert_eq!(pool.add(0x0f_0000, 0x2_0000), Err(EINVAL)); // covers it
    /// assert_eq!(pool.add(0x20_0000, 0), Err(EINVAL)); // empty
    /// assert_eq!(pool.add(0x20_0800, 0x1000), Err(EINVAL)); // not a unit
    /// assert_eq!(pool.add(0x20_0000, 0x1800), Err(EINVAL)); // not units
    /// assert_eq!(pool.add(usize::MAX & !0xfff, 0x2000), Err(EINVAL)); // wraps
    /// pool.add(0x10_2000, 0x1000)?; // the next unit
    /// pool.add(0x0f_f000, 0x1000)?; // the unit before
    /// # Ok::<(), Error>(())
    /// ```
    pub fn add(&mut self, addr: usize, size: usize) -> Result {
        let unit = self.unit();
        if size == 0 || addr % unit != 0 || size % unit != 0 {
            return Err(EINVAL);
        }
        let last = addr.checked_add(size - 1).ok_or(EINVAL)?;
        let mut range = Overlap {
            first: addr,
            last,
            found: false,
        };
        // SAFETY: the pool is valid (type invariant); `overlap` reads each
        // chunk it is given and writes only `range`, which outlives the
        // call.
        unsafe {
            bindings::gen_pool_for_each_chunk(
                self.ptr.as_ptr(),
                Some(overlap),
                ptr::from_mut(&mut range).cast(),
            )
        };
        if range.found {
            return Err(EINVAL);
        }
        // SAFETY: the pool is valid (type invariant); whole units that do
        // not wrap and overlap no chunk, no physical address (-1, as
        // `gen_pool_add` passes), no owner.
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

    /// The pool's unit: `1 << min_alloc_order` bytes.
    fn unit(&self) -> usize {
        // SAFETY: the pool is valid (type invariant); `min_alloc_order` is
        // set at creation, below `usize::BITS` (checked in `new`), and
        // never changes.
        1 << unsafe { (*self.ptr.as_ptr()).min_alloc_order }
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

/// A range [`GenPool::add`] checks, and whether a chunk of the pool
/// overlaps it.
struct Overlap {
    first: usize,
    last: usize,
    found: bool,
}

/// Marks `data`, an [`Overlap`], found if `chunk` overlaps its range.
///
/// # Safety
///
/// `chunk` is a chunk of a live pool and `data` an [`Overlap`] no one
/// else uses during the call, as [`GenPool::add`] passes them to
/// `gen_pool_for_each_chunk`.
unsafe extern "C" fn overlap(
    _pool: *mut bindings::gen_pool,
    chunk: *mut bindings::gen_pool_chunk,
    data: *mut c_void,
) {
    // SAFETY: per this function's contract; a chunk's bounds are set when
    // it is added and never change.
    let (range, start, end) = unsafe {
        (
            &mut *data.cast::<Overlap>(),
            (*chunk).start_addr,
            (*chunk).end_addr,
        )
    };
    if start <= range.last && range.first <= end {
        range.found = true;
    }
}

impl Drop for GenPool {
    /// Destroys the pool (`gen_pool_destroy`). Its chunks are freed with
    /// `vfree`, which sleeps in process context but defers the work from
    /// an interrupt: a pool may be dropped in softirq context (as an RCU
    /// callback), not under a spinlock in process context. With ranges
    /// still out, which C would `BUG()` on, it warns and leaks the pool
    /// instead.
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
