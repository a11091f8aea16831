// SPDX-License-Identifier: GPL-2.0

//! Page pools and their memory providers.
//!
//! A driver creates a [`Pool`] per receive queue from [`Params`] and fills
//! its ring with [`PoolNetmem`] buffers, which go back to the pool when
//! dropped or, once in an skb, when the skb is freed. Allocation takes
//! `&mut Pool`: one context at a time. Once the ring is the queue's, the
//! pool goes to the queue's NAPI instance
//! ([`Added::attach_pool`](super::napi::Added::attach_pool)), whose poll
//! alone allocates from it from then on
//! ([`NapiRx::pool`](super::napi::NapiRx::pool)).
//!
//! A memory provider supplies a page pool with `net_iov`s instead of pages
//! (devmem TCP's dma-buf provider, io_uring zero-copy receive). It
//! implements [`MemoryProvider`], an unsafe trait: the page pool core
//! takes the buffers it hands out on trust. [`ProviderOps`] is its C ops
//! table, which must be put in a `static`:
//!
//! ```ignore
//! static OPS: ProviderOps<MyProvider> = ProviderOps::new();
//! ```
//!
//! The page pool core refuses an ops table outside read-only data, and
//! identifies a provider by the address of its table, so there must be
//! exactly one.
//!
//! C headers: [`include/net/page_pool/types.h`](srctree/include/net/page_pool/types.h),
//! [`include/net/page_pool/memory_provider.h`](srctree/include/net/page_pool/memory_provider.h)

use crate::{
    device::{
        Bound,
        Device, //
    },
    dma::{
        DataDirection,
        DmaAddress, //
    },
    error::{
        from_err_ptr,
        from_result,
        to_result, //
    },
    net::{
        netdev::{
            Locked,
            NetDevice,
            RxQueue, //
        },
        netlink::request::ExtAck,
        netmem::{
            NetIov,
            NetmemRef, //
        },
    },
    prelude::*,
    sync::atomic::{
        Atomic,
        Relaxed, //
    },
    types::Opaque, //
};
use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

/// `PP_FLAG_DMA_MAP`: the pool maps pages for DMA.
pub const PP_FLAG_DMA_MAP: u32 = 1 << 0;
/// `PP_FLAG_DMA_SYNC_DEV`: the pool syncs pages for the device.
pub const PP_FLAG_DMA_SYNC_DEV: u32 = 1 << 1;
/// `PP_FLAG_ALLOW_UNREADABLE_NETMEM`: the pool may hold memory the CPU
/// cannot read, from the memory provider of its queue.
pub const PP_FLAG_ALLOW_UNREADABLE_NETMEM: u32 = 1 << 3;

/// How many entries a provider should put in the allocation cache at once
/// (`PP_ALLOC_CACHE_REFILL`).
// CAST: 64.
pub const ALLOC_CACHE_REFILL: usize = bindings::PP_ALLOC_CACHE_REFILL as usize;

/// A `struct page_pool`, as its memory provider sees it.
#[repr(transparent)]
pub struct PagePool(Opaque<bindings::page_pool>);

impl PagePool {
    /// The pool at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a page pool that stays valid for `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::page_pool) -> &'a Self {
        // SAFETY: transparent wrapper; valid per the caller.
        unsafe { &*ptr.cast() }
    }

    /// The C `struct page_pool`.
    pub fn as_raw(&self) -> *mut bindings::page_pool {
        self.0.get()
    }

    /// The provider's private pointer (`mp_priv`).
    pub fn mp_priv(&self) -> *mut c_void {
        // SAFETY: set before the provider is called, read-only afterwards.
        unsafe { (*self.as_raw()).mp_priv }
    }

    /// The allocation order of the pool's buffers (`p.order`).
    pub fn order(&self) -> u32 {
        // SAFETY: set at creation, read-only afterwards.
        unsafe { (*self.as_raw()).p.order }
    }
}

/// A page pool being initialised for its provider (the `init` op): the
/// provider may still change how the pool treats its memory.
pub struct PoolInit<'a>(&'a PagePool);

impl PoolInit<'_> {
    /// The pool.
    pub fn pool(&self) -> &PagePool {
        self.0
    }

    /// Stops the pool from syncing buffers for the device and the CPU:
    /// provider memory is not the pool's to sync.
    pub fn disable_dma_sync(&mut self) {
        // SAFETY: during `init` the pool is not in use yet; `&mut self`
        // is the only access to it.
        let raw = unsafe { &mut *self.0.as_raw() };
        raw.set_dma_sync(false);
        raw.set_dma_sync_for_cpu(false);
    }
}

/// The allocation side of a page pool, handed to
/// [`MemoryProvider::alloc_netmems`]: only the allocating context touches
/// the pool's allocation cache, so it may be filled here.
pub struct AllocCache<'a>(&'a PagePool);

impl AllocCache<'_> {
    /// The pool.
    pub fn pool(&self) -> &PagePool {
        self.0
    }

    fn cache(&mut self) -> &mut bindings::pp_alloc_cache {
        // SAFETY: the allocation context owns `alloc` (the page pool API
        // contract), and `&mut self` is the only access to it here.
        unsafe { &mut (*self.0.as_raw()).alloc }
    }

    /// How many more entries the cache takes.
    pub fn room(&mut self) -> usize {
        let c = self.cache();
        // CAST: the count is below the cache size.
        c.cache.len() - c.count as usize
    }

    /// Makes `niov` the pool's: stamps it with the pool, takes the pool's
    /// reference to it and counts it as held (`net_mp_niov_set_page_pool`).
    ///
    /// Stamping a `net_iov` that another pool holds would corrupt both
    /// pools' accounting, so safe code cannot:
    ///
    /// ```ignore,compile_fail,E0133
    /// use kernel::net::{
    ///     netmem::NetIov,
    ///     page_pool::AllocCache, //
    /// };
    ///
    /// fn steal(cache: &mut AllocCache<'_>, in_use: &NetIov) {
    ///     cache.adopt(in_use);
    /// }
    /// ```
    ///
    /// # Safety
    ///
    /// - `niov` is a `net_iov` of the provider's own memory, which no pool
    ///   holds and no one else uses: the provider took it out of use for
    ///   this pool, and cleared it with [`NetIov::reset_pp`];
    /// - it stays valid, in place, until the pool gives it back to
    ///   [`MemoryProvider::release_netmem`];
    /// - the caller hands it to the pool in this call, once: returned from
    ///   [`MemoryProvider::alloc_netmems`] or put in the cache with
    ///   [`AllocCache::place`] (the pool counts it as held from now on).
    pub unsafe fn adopt(&mut self, niov: &NetIov) {
        // SAFETY: the pool is valid, `niov` is a free `net_iov` the
        // provider owns and gives to this pool, per the caller.
        unsafe { bindings::net_mp_niov_set_page_pool(self.0.as_raw(), niov.as_raw()) }
    }

    /// Puts `netmem` in the cache for the pool's next allocations
    /// (`net_mp_netmem_place_in_cache`), or gives it back when full.
    ///
    /// The pool hands out what its cache holds without a look, so safe
    /// code cannot put anything there:
    ///
    /// ```ignore,compile_fail,E0133
    /// use kernel::net::{
    ///     netmem::NetmemRef,
    ///     page_pool::AllocCache, //
    /// };
    ///
    /// fn plant(cache: &mut AllocCache<'_>, other_pools: NetmemRef) {
    ///     let _ = cache.place(other_pools);
    /// }
    /// ```
    ///
    /// # Safety
    ///
    /// `netmem` carries a `net_iov` that [`AllocCache::adopt`] gave to this
    /// pool in this call, and that is not returned from
    /// [`MemoryProvider::alloc_netmems`] or placed again.
    pub unsafe fn place(&mut self, netmem: NetmemRef) -> Result<(), NetmemRef> {
        let c = self.cache();
        // CAST: the count is below the cache size.
        let n = c.count as usize;
        let slot = c.cache.get_mut(n).ok_or(netmem)?;
        *slot = netmem.as_raw();
        c.count += 1;
        Ok(())
    }
}

/// The page pool's reference count of a `net_iov` it holds
/// (`pp_ref_count`).
pub fn pp_ref_count(niov: &NetIov) -> i64 {
    // SAFETY: `pp_ref_count` is an `atomic_long_t`, whose `counter` is an
    // aligned `s64` that is only accessed atomically.
    let a = unsafe { Atomic::<i64>::from_ptr(&raw mut (*niov.as_raw()).desc.pp_ref_count.counter) };
    a.load(Relaxed)
}

/// Takes a `net_iov` back from its pool, in
/// [`MemoryProvider::release_netmem`]: checks that `netmem` is a `net_iov`
/// the pool holds exactly once and clears the pool's marks on it
/// (`net_mp_niov_clear_page_pool`). Anything else is a bug elsewhere: it
/// warns and returns `None`, and the buffer is not taken back.
///
/// # Safety
///
/// `netmem` is a buffer the pool is releasing, and if it is a `net_iov`,
/// the provider's and valid for `'a`.
pub unsafe fn take_back<'a>(netmem: NetmemRef) -> Option<&'a NetIov> {
    let Some(ptr) = netmem.net_iov() else {
        crate::warn_on!(true);
        return None;
    };
    // SAFETY: a `net_iov` of the provider, valid for `'a` per the caller.
    let niov = unsafe { NetIov::from_raw(ptr.as_ptr()) };
    if crate::warn_on!(pp_ref_count(niov) != 1) {
        return None;
    }
    // SAFETY: `niov` is a valid `net_iov` being released by its pool.
    unsafe { bindings::net_mp_niov_clear_page_pool(niov.as_raw()) };
    Some(niov)
}

/// A message under construction to which a provider adds the attributes
/// that describe it (`nl_fill`): a queue-get reply or a page pool
/// notification.
pub struct FillMsg<'a> {
    skb: *mut bindings::sk_buff,
    _msg: PhantomData<&'a mut bindings::sk_buff>,
}

impl FillMsg<'_> {
    /// Adds a `u32` attribute (`nla_put_u32`); `EMSGSIZE` without room.
    pub fn put_u32(&mut self, attrtype: u16, value: u32) -> Result {
        let len = core::mem::size_of::<u32>();
        // SAFETY: `skb` is the message being built, ours for `'a`; `value`
        // is readable for `len` bytes.
        to_result(unsafe {
            bindings::nla_put(
                self.skb,
                attrtype.into(),
                // CAST: 4.
                len as c_int,
                core::ptr::from_ref(&value).cast(),
            )
        })
    }
}

/// A page pool memory provider. `Self` is what the queue's provider
/// parameters point to (`mp_priv`).
///
/// The page pool core calls `alloc_netmems` and `release_netmem` in atomic
/// context, from any CPU.
///
/// The core hands out and accounts for whatever the provider gives it, so
/// only an `unsafe impl` makes a provider:
///
/// ```ignore,compile_fail,E0200
/// use kernel::net::{
///     netmem::NetmemRef,
///     page_pool::{
///         AllocCache,
///         MemoryProvider,
///         PagePool,
///         PoolInit, //
///     },
/// };
/// # struct Dummy;
/// # impl kernel::ModuleMetadata for Dummy {
/// #     const NAME: &'static kernel::str::CStr = c"compile_fail";
/// #     // SAFETY: never loaded: there is no `THIS_MODULE`.
/// #     const THIS_MODULE: kernel::ThisModule =
/// #         unsafe { kernel::ThisModule::from_ptr(core::ptr::null_mut()) };
/// # }
///
/// struct Careless;
///
/// #[vtable]
/// impl MemoryProvider for Careless {
/// #   type OwnerModule = Dummy;
///     fn init(_: &Self, _: &mut PoolInit<'_>) -> Result {
///         Ok(())
///     }
///     fn destroy(_: &Self, _: &PagePool) {}
///     fn alloc_netmems(_: &Self, _: &mut AllocCache<'_>) -> Option<NetmemRef> {
///         None
///     }
///     fn release_netmem(_: &Self, _: &PagePool, _: NetmemRef) -> bool {
///         false
///     }
/// }
/// ```
///
/// # Safety
///
/// An implementation guarantees what the page pool core trusts of it:
///
/// - Every buffer [`MemoryProvider::alloc_netmems`] returns, and every one
///   it puts in the pool's cache ([`AllocCache::place`]), is a `net_iov`
///   (never a page) of the provider's own memory, initialised for it
///   ([`NetIov::init`]), that no other pool holds and no one else uses:
///   the provider cleared it ([`NetIov::reset_pp`]) and gave it to this
///   pool ([`AllocCache::adopt`]) in the same call, once. It counts as
///   held by the pool from then on.
/// - A `net_iov` the pool holds stays valid and in place, with its area,
///   and the provider gives it to no one else, until the pool hands it
///   back to [`MemoryProvider::release_netmem`] (then the pool no longer
///   uses it). A `true` return for a `net_iov` is ignored: the core would
///   `put_page()` it.
/// - [`MemoryProvider::init`] leaves nothing to undo when it fails: the
///   core calls [`MemoryProvider::destroy`] once for each pool whose
///   `init` succeeded, after every buffer of the pool came back, and never
///   for one whose `init` failed. Whatever `init` takes for the pool (a
///   reference on `Self`'s memory, for one), `destroy` gives back.
#[vtable]
pub unsafe trait MemoryProvider: Sized + Sync {
    /// A pool is created on a queue with this provider.
    fn init(this: &Self, pool: &mut PoolInit<'_>) -> Result;

    /// The pool is gone; all its buffers came back.
    fn destroy(this: &Self, pool: &PagePool);

    /// The pool needs a buffer: return one, and optionally fill the cache
    /// with more. `None` when the provider has nothing left.
    fn alloc_netmems(this: &Self, cache: &mut AllocCache<'_>) -> Option<NetmemRef>;

    /// The pool gives a buffer back. Returns whether the pool should free
    /// it as a page (never, for `net_iov`s).
    fn release_netmem(this: &Self, pool: &PagePool, netmem: NetmemRef) -> bool;

    /// Adds the provider's attributes to a netlink message describing
    /// queue `rxq`, or a page pool when `rxq` is `None`.
    fn nl_fill(_this: &Self, _msg: &mut FillMsg<'_>, _rxq: Option<&RxQueue>) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The device of `rxq` goes away, or the queue's lease ends, with the
    /// provider still installed: forget the queue. The device's instance
    /// lock is held.
    fn uninstall(_this: &Self, _rxq: &RxQueue) {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }
}

/// What a receive queue's memory provider is: the provider, its ops and
/// the buffer size it wants (`struct pp_memory_provider_params`).
#[repr(transparent)]
pub struct MpParams(bindings::pp_memory_provider_params);

impl MpParams {
    /// The parameters of `provider`, whose ops table is `ops` (its
    /// [`ProviderOps`] `static`), asking for buffers of `rx_page_size`
    /// bytes, or the device's default if 0.
    ///
    /// The core passes `provider` to the ops, so they must be the ops of
    /// `provider`'s type:
    ///
    /// ```ignore,compile_fail,E0308
    /// use kernel::net::page_pool::{
    ///     MemoryProvider,
    ///     MpParams,
    ///     ProviderOps, //
    /// };
    ///
    /// fn confuse<A: MemoryProvider, B: MemoryProvider>(
    ///     ops_of_a: &'static ProviderOps<A>,
    ///     b: &B,
    /// ) -> MpParams {
    ///     MpParams::new(ops_of_a, b, 0)
    /// }
    /// ```
    pub fn new<T: MemoryProvider>(
        ops: &'static ProviderOps<T>,
        provider: &T,
        rx_page_size: u32,
    ) -> Self {
        Self(bindings::pp_memory_provider_params {
            mp_priv: core::ptr::from_ref(provider).cast_mut().cast(),
            mp_ops: ops.as_raw(),
            rx_page_size,
        })
    }

    /// The C `struct pp_memory_provider_params`.
    pub fn as_raw(&self) -> *const bindings::pp_memory_provider_params {
        &self.0
    }

    /// Installs the provider on receive queue `idx` of `dev` and restarts
    /// the queue with it (`netif_mp_open_rxq`). Follows a lease to the
    /// device the queue is leased from. Errors come with the `extack`
    /// messages the core and the driver set.
    ///
    /// # Safety
    ///
    /// The provider stays valid until the queue gives it up:
    /// [`MpParams::close_rxq`] with the same parameters, or the provider's
    /// `uninstall` when the device or the lease goes away.
    pub unsafe fn open_rxq(&self, dev: &Locked<'_>, idx: u32, extack: &ExtAck<'_>) -> Result {
        // SAFETY: the device is locked; the parameters are copied.
        to_result(unsafe {
            bindings::netif_mp_open_rxq(dev.as_raw(), idx, self.as_raw(), extack.as_raw())
        })
    }

    /// Removes the provider from receive queue `idx` of `dev` and restarts
    /// the queue without it (`netif_mp_close_rxq`). The core compares the
    /// provider and ops with what the queue holds, and WARNs on a mismatch.
    pub fn close_rxq(&self, dev: &Locked<'_>, idx: u32) {
        // SAFETY: the device is locked; the parameters are only compared.
        unsafe { bindings::netif_mp_close_rxq(dev.as_raw(), idx, self.as_raw()) }
    }
}

/// The bytes of a buffer of `order` (`PAGE_SIZE << order`), if the page
/// allocator has buffers of that order (at most `MAX_PAGE_ORDER`).
fn buf_len(order: u32) -> Option<u32> {
    if order > bindings::MAX_PAGE_ORDER {
        return None;
    }
    u32::try_from(crate::page::PAGE_SIZE << order).ok()
}

/// How a [`Pool`] is made (`struct page_pool_params`). Pools made here map
/// their buffers for DMA from the device and sync them for it when they
/// come back, unless made [`Params::unmapped`].
pub struct Params<'a> {
    raw: bindings::page_pool_params,
    _refs: PhantomData<(&'a Device<Bound>, &'a NetDevice)>,
}

impl<'a> Params<'a> {
    /// A pool of `pool_size` buffers of `PAGE_SIZE << order` bytes, mapped
    /// for `dev` to write into.
    pub fn new(dev: &'a Device<Bound>, order: u32, pool_size: u32) -> Self {
        let mut this = Self {
            // All zeroes: no device, no netdev, no callback.
            raw: bindings::page_pool_params::default(),
            _refs: PhantomData,
        };
        let fast = this.fast();
        fast.order = order;
        fast.pool_size = pool_size;
        fast.nid = bindings::NUMA_NO_NODE;
        fast.dev = dev.as_raw();
        fast.dma_dir = DataDirection::FromDevice.into();
        // An order the page allocator has no buffers of leaves 0, which
        // `Pool::new` refuses.
        fast.max_len = buf_len(order).unwrap_or(0);
        this.slow().flags = PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV;
        this
    }

    /// Checks what C takes on trust: the pool's buffers are of an order
    /// the page allocator has (a memory provider's pool skips that check
    /// in C), and the device sync of a buffer coming back stays inside it.
    fn check(&self) -> Result {
        // SAFETY: as in `fast`, read only.
        let fast = unsafe { &self.raw.__bindgen_anon_1.fast };
        match buf_len(fast.order) {
            Some(len) if (1..=len).contains(&fast.max_len) => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// The hot-path parameters (the `fast` struct group).
    pub(crate) fn fast(
        &mut self,
    ) -> &mut bindings::page_pool_params__bindgen_ty_1_page_pool_params_fast {
        // SAFETY: a struct group is a union of two views of the same
        // plain-data fields; either view is valid.
        unsafe { &mut self.raw.__bindgen_anon_1.fast }
    }

    /// The slow-path parameters (the `slow` struct group).
    fn slow(&mut self) -> &mut bindings::page_pool_params__bindgen_ty_2_page_pool_params_slow {
        // SAFETY: as in `fast`.
        unsafe { &mut self.raw.__bindgen_anon_2.slow }
    }

    /// Syncs only the first `len` bytes of a buffer for the device when it
    /// comes back: the most the device writes. `EINVAL` unless `len` is
    /// within a buffer (`PAGE_SIZE << order`), and not 0: the page pool
    /// syncs `max_len` bytes from the buffer's start without checking.
    pub fn max_len(mut self, len: u32) -> Result<Self> {
        match buf_len(self.fast().order) {
            Some(max) if (1..=max).contains(&len) => {
                self.fast().max_len = len;
                Ok(self)
            }
            _ => Err(EINVAL),
        }
    }

    /// Neither maps the pool's buffers for DMA nor syncs them: a pool of
    /// memory only the CPU touches (a software device's, or a benchmark of
    /// the pool itself). Its buffers have no DMA address
    /// ([`PoolNetmem::dma_addr`] gives 0) and nothing to sync
    /// ([`PoolNetmem::sync_for_cpu`] does nothing). A memory provider
    /// refuses such a pool: [`Pool::new`] fails with `EOPNOTSUPP` on a
    /// queue that has one.
    pub fn unmapped(mut self) -> Self {
        self.slow().flags &= !(PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV);
        self
    }

    /// Whether the pool maps its buffers for DMA.
    fn maps(&self) -> bool {
        // SAFETY: as in `fast`, read only.
        let slow = unsafe { &self.raw.__bindgen_anon_2.slow };
        slow.flags & PP_FLAG_DMA_MAP != 0
    }

    /// Serves receive queue `idx` of `netdev`: the pool is listed on the
    /// device, and takes its buffers from the queue's memory provider if
    /// it has one (`PP_FLAG_ALLOW_UNREADABLE_NETMEM`). Buffers from a
    /// provider may not be readable by the CPU.
    ///
    /// # Safety
    ///
    /// The device's instance lock is held when the pool is created: it
    /// keeps the queue's provider from changing while the pool takes it.
    pub unsafe fn rx_queue(mut self, netdev: &'a NetDevice, idx: u32) -> Self {
        let slow = self.slow();
        slow.netdev = netdev.as_raw();
        slow.queue_idx = idx;
        slow.flags |= PP_FLAG_ALLOW_UNREADABLE_NETMEM;
        self
    }

    /// As [`Params::rx_queue`], for a driver's device whose instance lock
    /// is held (in a callback that runs under it): the parameters borrow
    /// the proof, so the pool is made while the lock is held.
    pub fn rx_queue_locked<T>(self, dev: &'a super::driver::LockedDevice<T>, idx: u32) -> Self {
        // SAFETY: `dev` is locked while the parameters live, so when the
        // pool is made from them.
        unsafe { self.rx_queue(dev, idx) }
    }
}

/// A page pool the driver made (`page_pool_create`); destroyed on drop
/// (`page_pool_destroy`). Buffers still out (in skbs, or held elsewhere)
/// keep the pool's memory alive until they come back.
///
/// # Invariants
///
/// `ptr` is a pool this object created and destroys; `mapped` says whether
/// it maps its buffers for DMA (`PP_FLAG_DMA_MAP`).
pub struct Pool {
    ptr: NonNull<bindings::page_pool>,
    mapped: bool,
}

// SAFETY: the pool may be destroyed from any thread. Allocation needs
// `&mut Pool`, so one context allocates at a time, as the page pool
// requires.
unsafe impl Send for Pool {}

impl Pool {
    /// Creates a pool; `EINVAL` for an order above `MAX_PAGE_ORDER`.
    pub fn new(params: &Params<'_>) -> Result<Self> {
        params.check()?;
        // SAFETY: `params` is valid; the devices it names outlive the call,
        // and for a queue's pool the caller of `Params::rx_queue` holds
        // the instance lock.
        let ptr = from_err_ptr(unsafe { bindings::page_pool_create(&params.raw) })?;
        Ok(Self {
            // INVARIANT: created here, with the flags of `params`.
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            mapped: params.maps(),
        })
    }

    /// Stops buffers going straight back to the cache from the pool's
    /// NAPI (`page_pool_disable_direct_recycling`), so that the pool may be
    /// destroyed later while that NAPI runs.
    ///
    /// # Safety
    ///
    /// The NAPI instance the pool was made with is disabled.
    pub unsafe fn disable_direct_recycling(&self) {
        // SAFETY: a live pool; its NAPI cannot race, per the caller.
        unsafe { bindings::page_pool_disable_direct_recycling(self.ptr.as_ptr()) }
    }

    /// The C `struct page_pool`.
    pub(crate) fn as_raw(&self) -> *mut bindings::page_pool {
        self.ptr.as_ptr()
    }

    /// The NAPI instance the pool recycles from directly (`p.napi`), or
    /// null.
    pub(crate) fn napi(&self) -> *mut bindings::napi_struct {
        // SAFETY: a live pool; the field changes only through the owner of
        // the pool (at creation, or through `napi::Added`'s attach and
        // detach), which `&self` excludes.
        unsafe { (*self.ptr.as_ptr()).p.napi }
    }

    /// The pool as its memory provider sees it.
    pub fn as_page_pool(&self) -> &PagePool {
        // SAFETY: valid while `self` lives.
        unsafe { PagePool::from_raw(self.ptr.as_ptr()) }
    }

    /// Whether buffers come from a memory provider and may be unreadable
    /// (`page_pool_is_unreadable`).
    pub fn is_unreadable(&self) -> bool {
        // SAFETY: set at creation, read-only afterwards.
        !unsafe { (*self.ptr.as_ptr()).mp_ops }.is_null()
    }

    /// A whole buffer (`page_pool_alloc_netmems`), without sleeping; `None`
    /// when memory or the provider's buffers run out.
    pub fn alloc(&mut self) -> Option<PoolNetmem> {
        // SAFETY: the pool is valid; `&mut self` makes this the one
        // allocating context.
        let raw = unsafe {
            bindings::page_pool_alloc_netmems(
                self.ptr.as_ptr(),
                bindings::GFP_ATOMIC | bindings::__GFP_NOWARN,
            )
        };
        // CAST: a buffer of at most `MAX_PAGE_ORDER` (checked in `new`)
        // fits a u32.
        let size = (crate::page::PAGE_SIZE << self.as_page_pool().order()) as u32;
        (raw != 0).then(|| PoolNetmem {
            // SAFETY: a buffer the pool handed out, not 0.
            netmem: unsafe { NetmemRef::from_raw(raw) },
            offset: 0,
            size,
            pool: self.ptr,
            mapped: self.mapped,
        })
    }

    /// `size` bytes of a buffer shared with other allocations
    /// (`page_pool_alloc_frag_netmem`), without sleeping.
    pub fn alloc_frag(&mut self, size: u32) -> Option<PoolNetmem> {
        let mut offset = 0;
        // SAFETY: as in `alloc`; `offset` is written before the return.
        let raw = unsafe {
            bindings::page_pool_alloc_frag_netmem(
                self.ptr.as_ptr(),
                &mut offset,
                size,
                bindings::GFP_ATOMIC | bindings::__GFP_NOWARN,
            )
        };
        (raw != 0).then(|| PoolNetmem {
            // SAFETY: a buffer the pool handed out, not 0.
            netmem: unsafe { NetmemRef::from_raw(raw) },
            offset,
            size,
            pool: self.ptr,
            mapped: self.mapped,
        })
    }
}

impl Drop for Pool {
    /// Destroys the pool. This sleeps (the page pools' mutex, an RCU grace
    /// period for mapped pools), whether or not it does this time: a pool
    /// must not be dropped in atomic context, and with
    /// `CONFIG_DEBUG_ATOMIC_SLEEP` every drop checks it, so that a pool
    /// dropped under a spinlock is reported the first time, not only when
    /// the destruction happens to sleep. Take a pool out of a lock before
    /// dropping it: `let p = lock.lock().take(); drop(p);`, not
    /// `drop(lock.lock().take())`, whose guard lives to the end of the
    /// statement.
    fn drop(&mut self) {
        crate::task::might_sleep();
        // SAFETY: created by `new`, destroyed once; buffers still out come
        // back to it later, which the page pool core allows.
        unsafe { bindings::page_pool_destroy(self.ptr.as_ptr()) };
    }
}

/// A buffer from a [`Pool`], holding one of the pool's references to its
/// memory: a page (or part of one) or a provider's `net_iov`. Dropping it
/// gives the reference back (`page_pool_put_full_netmem`).
///
/// # Invariants
///
/// `netmem` came from `pool`, with one reference that this object holds;
/// the buffer is the `size` bytes `offset` bytes into it, and nothing else
/// uses them while the reference is out. The pool's memory stays allocated
/// while the reference is out. `mapped` says whether the pool maps its
/// buffers for DMA.
pub struct PoolNetmem {
    netmem: NetmemRef,
    offset: u32,
    size: u32,
    pool: NonNull<bindings::page_pool>,
    mapped: bool,
}

// SAFETY: a reference may be given back from any thread.
unsafe impl Send for PoolNetmem {}

impl PoolNetmem {
    /// The memory this buffer is in.
    pub fn netmem(&self) -> NetmemRef {
        self.netmem
    }

    /// Where the buffer starts in [`PoolNetmem::netmem`].
    pub fn offset(&self) -> u32 {
        self.offset
    }

    /// The buffer's length in bytes: what the pool gave.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Whether `len` bytes from `off` are inside the buffer.
    pub fn holds(&self, off: u32, len: u32) -> bool {
        off.checked_add(len).is_some_and(|end| end <= self.size)
    }

    /// Whether the CPU may read the buffer: a page, not a provider's
    /// `net_iov`.
    pub fn is_readable(&self) -> bool {
        !self.netmem.is_net_iov()
    }

    /// The device's address of the buffer; 0 for a buffer of a pool that
    /// does not map ([`Params::unmapped`]), which no device may be given.
    pub fn dma_addr(&self) -> DmaAddress {
        if !self.mapped {
            // The page pool stores no address for it: what the field holds
            // is left over from the page's last use.
            return 0;
        }
        // SAFETY: the pool mapped the memory (`PP_FLAG_DMA_MAP`); the
        // reference keeps the mapping.
        let base = unsafe { bindings::page_pool_get_dma_addr_netmem(self.netmem.as_raw()) };
        base + DmaAddress::from(self.offset)
    }

    /// Makes the `len` bytes the device wrote `off` bytes into the buffer
    /// visible to the CPU, unless the pool does not sync (provider memory)
    /// or does not map. A range past the buffer's end is cut at it.
    /// Returns the range, which the CPU may read from now on
    /// ([`Synced::copy_to`]); only a synced range can be read:
    ///
    /// ```ignore,compile_fail,E0599
    /// use kernel::net::page_pool::PoolNetmem;
    ///
    /// fn peek(buf: &PoolNetmem, head: &mut [u8; 64]) {
    ///     let _ = buf.copy_to(head);
    /// }
    /// ```
    ///
    /// and only while the buffer is still the caller's, not once it is
    /// given back to the pool (or to an skb):
    ///
    /// ```ignore,compile_fail,E0505
    /// use kernel::net::page_pool::PoolNetmem;
    ///
    /// fn peek_late(buf: PoolNetmem, head: &mut [u8; 64]) {
    ///     let synced = buf.sync_for_cpu(0, 64);
    ///     drop(buf);
    ///     let _ = synced.copy_to(head);
    /// }
    /// ```
    pub fn sync_for_cpu(&self, off: u32, len: u32) -> Synced<'_> {
        let off = off.min(self.size);
        let len = len.min(self.size - off);
        // The page pool would sync an unmapped pool's buffer at whatever
        // address the page holds (it turns syncing for the CPU on for
        // every pool).
        if self.mapped {
            // SAFETY: the pool is alive while the reference is out, and
            // maps its buffers (checked above); the range is inside the
            // buffer, so inside the pool's mapping of it.
            unsafe {
                bindings::page_pool_dma_sync_netmem_for_cpu(
                    self.pool.as_ptr(),
                    self.netmem.as_raw(),
                    self.offset + off,
                    len,
                )
            }
        }
        // INVARIANT: cut to the buffer above.
        Synced {
            buf: self,
            off,
            len,
        }
    }

    /// Gives up the reference without returning it: the caller now owns
    /// it (an skb frag, for example).
    pub fn into_raw(self) -> (NetmemRef, u32) {
        let r = (self.netmem, self.offset);
        core::mem::forget(self);
        r
    }
}

impl Drop for PoolNetmem {
    fn drop(&mut self) {
        // SAFETY: the pool is alive while the reference is out; this gives
        // the one reference back, from a context that is not necessarily
        // the pool's NAPI (no direct recycling).
        unsafe {
            bindings::page_pool_put_full_netmem(self.pool.as_ptr(), self.netmem.as_raw(), false)
        };
    }
}

/// A range of a [`PoolNetmem`] synced for the CPU
/// ([`PoolNetmem::sync_for_cpu`]): what the device wrote there before the
/// sync is what the CPU reads.
///
/// Reads copy the bytes out with `memcpy`, as the [`dma`](crate::dma)
/// module reads memory a device may write: nothing here takes the
/// device's word that it stopped writing the buffer, so no reference to
/// its bytes is handed out. A device that wrote the range after the sync
/// (a driver that gave its address out again) makes the copy's bytes
/// stale, not the kernel unsound.
///
/// # Invariants
///
/// `off + len` is at most `buf.size()`.
pub struct Synced<'a> {
    buf: &'a PoolNetmem,
    off: u32,
    len: u32,
}

impl Synced<'_> {
    /// Where the range starts in the buffer.
    pub fn offset(&self) -> u32 {
        self.off
    }

    /// The range's length in bytes.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies the range's first `dst.len()` bytes into `dst`. Fails with
    /// `EFAULT` if the CPU cannot read the buffer (a memory provider's
    /// `net_iov`), and with `EINVAL` if the range is shorter than `dst`.
    pub fn copy_to(&self, dst: &mut [u8]) -> Result {
        if !self.buf.is_readable() {
            return Err(EFAULT);
        }
        if dst.len() > self.len as usize {
            return Err(EINVAL);
        }
        // SAFETY: a page of the pool (readable, checked above), mapped in
        // the kernel's address space.
        let base = unsafe { bindings::netmem_address(self.buf.netmem.as_raw()) };
        if base.is_null() {
            return Err(EFAULT);
        }
        // CAST: u32 to usize is lossless on Linux.
        let start = (self.buf.offset + self.off) as usize;
        // SAFETY: `dst.len()` bytes from `start` into the page are inside
        // the buffer (checked above, with the type invariant), which the
        // pool reference borrowed for `'a` keeps allocated and no one else
        // uses; `dst` is writable for as many bytes, and cannot overlap
        // the buffer (it is borrowed mutably while the buffer is borrowed
        // shared). `memcpy`, not a Rust copy, as the `dma` module reads
        // memory a device may write.
        unsafe {
            bindings::memcpy(
                dst.as_mut_ptr().cast(),
                base.cast::<u8>().add(start).cast(),
                dst.len(),
            )
        };
        Ok(())
    }
}

/// The C ops table of memory provider `T` (`struct memory_provider_ops`),
/// to be put in a `static`: the page pool core wants it in read-only data
/// and identifies the provider by its address.
///
/// ```ignore
/// static OPS: ProviderOps<MyProvider> = ProviderOps::new();
/// ```
#[repr(transparent)]
pub struct ProviderOps<T: MemoryProvider> {
    raw: bindings::memory_provider_ops,
    _provider: PhantomData<fn(&T)>,
}

impl<T: MemoryProvider> ProviderOps<T> {
    /// The ops table of `T`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self {
            raw: Adapter::<T>::OPS,
            _provider: PhantomData,
        }
    }

    /// The C ops table.
    pub fn as_raw(&self) -> &bindings::memory_provider_ops {
        &self.raw
    }
}

/// Builds the C ops table of a [`MemoryProvider`].
struct Adapter<T: MemoryProvider>(PhantomData<T>);

impl<T: MemoryProvider> Adapter<T> {
    /// The ops table, for [`ProviderOps::new`].
    const OPS: bindings::memory_provider_ops = bindings::memory_provider_ops {
        alloc_netmems: Some(Self::alloc_netmems),
        release_netmem: Some(Self::release_netmem),
        init: Some(Self::init),
        destroy: Some(Self::destroy),
        nl_fill: if T::HAS_NL_FILL {
            Some(Self::nl_fill)
        } else {
            None
        },
        uninstall: if T::HAS_UNINSTALL {
            Some(Self::uninstall)
        } else {
            None
        },
    };
    /// The provider of `pool`.
    ///
    /// # Safety
    ///
    /// `pool` is a valid pool whose `mp_priv` is a `T` that outlives it.
    unsafe fn provider<'a>(pool: *mut bindings::page_pool) -> (&'a PagePool, &'a T) {
        // SAFETY: valid per the caller.
        let pool = unsafe { PagePool::from_raw(pool) };
        // SAFETY: `mp_priv` is a `T` that outlives the pool, per the
        // caller.
        let this = unsafe { &*pool.mp_priv().cast::<T>() };
        (pool, this)
    }

    /// # Safety
    ///
    /// Called by the page pool core on a pool being created on a queue whose
    /// provider is `T`, with `mp_priv` a `T` that outlives the pool.
    unsafe extern "C" fn init(pool: *mut bindings::page_pool) -> c_int {
        // SAFETY: per this function's contract.
        let (pool, this) = unsafe { Self::provider(pool) };
        from_result(|| {
            T::init(this, &mut PoolInit(pool))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for [`Adapter::init`], on a pool that `init` accepted.
    unsafe extern "C" fn destroy(pool: *mut bindings::page_pool) {
        // SAFETY: per this function's contract.
        let (pool, this) = unsafe { Self::provider(pool) };
        T::destroy(this, pool);
    }

    /// # Safety
    ///
    /// As for [`Adapter::destroy`], from the pool's allocating context.
    unsafe extern "C" fn alloc_netmems(
        pool: *mut bindings::page_pool,
        _gfp: bindings::gfp_t,
    ) -> bindings::netmem_ref {
        // SAFETY: per this function's contract.
        let (pool, this) = unsafe { Self::provider(pool) };
        T::alloc_netmems(this, &mut AllocCache(pool)).map_or(0, NetmemRef::as_raw)
    }

    /// # Safety
    ///
    /// As for [`Adapter::destroy`], with a `netmem` the pool holds.
    unsafe extern "C" fn release_netmem(
        pool: *mut bindings::page_pool,
        netmem: bindings::netmem_ref,
    ) -> bool {
        // SAFETY: per this function's contract.
        let (pool, this) = unsafe { Self::provider(pool) };
        // SAFETY: a buffer the pool holds, so a valid page or `net_iov`.
        let netmem = unsafe { NetmemRef::from_raw(netmem) };
        // The core would put_page() a `net_iov` on `true`.
        T::release_netmem(this, pool, netmem) && !netmem.is_net_iov()
    }

    /// # Safety
    ///
    /// Called by the core with `mp_priv` a `T` installed on a queue, `rsp`
    /// a message being built, and `rxq` null or a queue of a live device.
    unsafe extern "C" fn nl_fill(
        mp_priv: *mut c_void,
        rsp: *mut bindings::sk_buff,
        rxq: *mut bindings::netdev_rx_queue,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let this = unsafe { &*mp_priv.cast::<T>() };
        // SAFETY: per this function's contract.
        let rxq = (!rxq.is_null()).then(|| unsafe { RxQueue::from_raw(rxq) });
        let mut msg = FillMsg {
            skb: rsp,
            _msg: PhantomData,
        };
        from_result(|| {
            T::nl_fill(this, &mut msg, rxq)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core under the device's instance lock, with `mp_priv`
    /// a `T` installed on `rxq`, a queue of a live device.
    unsafe extern "C" fn uninstall(mp_priv: *mut c_void, rxq: *mut bindings::netdev_rx_queue) {
        // SAFETY: per this function's contract.
        let this = unsafe { &*mp_priv.cast::<T>() };
        // SAFETY: per this function's contract.
        T::uninstall(this, unsafe { RxQueue::from_raw(rxq) });
    }
}

#[macros::kunit_tests(rust_kernel_page_pool)]
mod tests {
    use super::*;
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
    fn unmapped_pools_give_pages_without_addresses() -> Result {
        let faux = faux::Registration::new(c"rust-page-pool-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        // A faux device has no DMA mask: a pool that maps could not use it.
        let mut pool = Pool::new(&Params::new(dev, 0, 16).unmapped())?;
        let buf = pool.alloc().ok_or(ENOMEM)?;
        assert!(buf.is_readable());
        assert_eq!(buf.size(), PAGE);
        assert_eq!(buf.dma_addr(), 0);
        // Nothing to sync, and nothing to sync with.
        let synced = buf.sync_for_cpu(0, PAGE);
        assert_eq!(synced.len(), PAGE);
        let mut head = [0xffu8; 64];
        synced.copy_to(&mut head)?;
        // A new page of a pool that does not sync: whatever it holds, the
        // whole page reads, and no more.
        let mut page = KVec::from_elem(0u8, PAGE_SIZE + 1, GFP_KERNEL)?;
        assert!(synced.copy_to(&mut page[..PAGE_SIZE]).is_ok());
        assert_eq!(synced.copy_to(&mut page), Err(EINVAL));
        // A range past the end is cut at it.
        assert_eq!(buf.sync_for_cpu(PAGE - 16, 64).len(), 16);
        assert_eq!(buf.sync_for_cpu(PAGE + 1, 1).len(), 0);
        drop(buf);
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
