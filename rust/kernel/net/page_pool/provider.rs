// SPDX-License-Identifier: GPL-2.0

//! Memory providers: what supplies a page pool with `net_iov`s instead of
//! pages, the [`MemoryProvider`] trait, its C ops table ([`ProviderOps`]),
//! and the parameters that install one on a receive queue ([`MpParams`]).
//!
//! C header:
//! [`include/net/page_pool/memory_provider.h`](srctree/include/net/page_pool/memory_provider.h)

use crate::{
    error::{
        from_result,
        to_result, //
    },
    net::{
        netdev::{
            Locked,
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
use core::marker::PhantomData;

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
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::page_pool) -> &'a Self {
        // SAFETY: transparent wrapper; valid per the caller.
        unsafe { &*ptr.cast() }
    }

    /// The C `struct page_pool`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::page_pool {
        self.0.get()
    }

    /// The provider's private pointer (`mp_priv`).
    #[inline]
    pub fn mp_priv(&self) -> *mut c_void {
        // SAFETY: set before the provider is called, read-only afterwards.
        unsafe { (*self.as_raw()).mp_priv }
    }

    /// The allocation order of the pool's buffers (`p.order`).
    #[inline]
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
    ///     cache.adopt(in_use); // misuse
    /// #   // twin: // SAFETY: what `adopt` asks of `niov`, the caller's.
    /// #   // twin: unsafe { cache.adopt(in_use) };
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
    #[inline]
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
    ///     let _ = cache.place(other_pools); // misuse
    /// #   // twin: // SAFETY: what `place` asks of `netmem`, the caller's.
    /// #   // twin: let _ = unsafe { cache.place(other_pools) };
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
#[inline]
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
/// impl MemoryProvider for Careless { // misuse
/// # // twin: // SAFETY: it never hands out a buffer.
/// # // twin: unsafe impl MemoryProvider for Careless {
/// #   type OwnerModule = Dummy;
///     fn niov_shift(_: &Self) -> u32 {
///         12
///     }
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
/// - Every `net_iov` it hands out stands for `1 << niov_shift` bytes
///   ([`MemoryProvider::niov_shift`]) of its memory at the `net_iov`'s DMA
///   address, which the device may write whole: the pool's buffers of
///   `PAGE_SIZE << order` bytes are addressed, split and synced as if
///   they were that long, so a pool of larger buffers is refused
///   (`E2BIG`) before [`MemoryProvider::init`] sees it.
/// - [`MemoryProvider::init`] leaves nothing to undo when it fails: the
///   core calls [`MemoryProvider::destroy`] once for each pool whose
///   `init` succeeded, after every buffer of the pool came back, and never
///   for one whose `init` failed. Whatever `init` takes for the pool (a
///   reference on `Self`'s memory, for one), `destroy` gives back.
#[vtable]
pub unsafe trait MemoryProvider: Sized + Sync {
    /// The size of each `net_iov` of the provider, as a shift (12 for 4 KiB).
    fn niov_shift(this: &Self) -> u32;

    /// A pool is created on a queue with this provider; its buffers fit a
    /// `net_iov` (checked before).
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
    ///     b: &B, // misuse
    /// #   // twin: a: &A,
    /// ) -> MpParams {
    ///     MpParams::new(ops_of_a, b, 0) // misuse
    /// #   // twin: MpParams::new(ops_of_a, a, 0)
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
    #[inline]
    pub fn as_raw(&self) -> *const bindings::pp_memory_provider_params {
        &self.0
    }

    /// Installs the provider on receive queue `idx` of `dev` and restarts
    /// the queue with it (`netif_mp_open_rxq`). Follows a lease to the
    /// device the queue is leased from. Errors come with the `extack`
    /// messages the core and the driver set. `EINVAL` for ops outside the
    /// kernel's read-only data (not a `static` of built-in code), which
    /// the page pool core would WARN on when the queue's next pool is
    /// made.
    ///
    /// # Safety
    ///
    /// The provider stays valid until the queue gives it up
    /// ([`MpParams::close_rxq`] with the same parameters, or the provider's
    /// `uninstall` when the device or the lease goes away) and the pools
    /// made with it are destroyed (its `destroy`, which for a pool dropped
    /// in atomic context runs on a workqueue, after the drop).
    pub unsafe fn open_rxq(&self, dev: &Locked<'_>, idx: u32, extack: &ExtAck<'_>) -> Result {
        // SAFETY: reads no memory; the address is compared.
        if !unsafe { bindings::is_kernel_rodata(self.0.mp_ops as usize) } {
            return Err(EINVAL);
        }
        // SAFETY: the device is locked; the parameters are copied.
        to_result(unsafe {
            bindings::netif_mp_open_rxq(dev.as_raw(), idx, self.as_raw(), extack.as_raw())
        })
    }

    /// Removes the provider from receive queue `idx` of `dev` and restarts
    /// the queue without it (`netif_mp_close_rxq`). Follows a lease from a
    /// virtual device to the device it leases the queue from, as
    /// [`MpParams::open_rxq`] does. `EINVAL`, with nothing done, for a
    /// queue the device does not use, a lease the other way, or a queue
    /// whose provider is another (on all of which the core WARNs); `Ok`
    /// with nothing done for a queue whose provider went with its device.
    pub fn close_rxq(&self, dev: &Locked<'_>, idx: u32) -> Result {
        let own = dev.rx_queue(idx).ok_or(EINVAL)?;
        let queue = match dev.rx_lease(idx) {
            None => own,
            // SAFETY: a live device; the parent is set before registration.
            Some(phys) if unsafe { (*dev.as_raw()).dev.parent }.is_null() => phys,
            Some(_) => return Err(EINVAL),
        };
        // SAFETY: a queue of a live device (a leased queue's device stays
        // alive under this device's lock); the fields are read as C reads
        // them. For a lease, the core compares them again under the other
        // device's lock, which this does not hold: only a close racing
        // this one for the same queue could make the two disagree.
        let (ops, provider) = unsafe {
            let p = &raw const (*queue.as_raw()).mp_params;
            (
                (&raw const (*p).mp_ops).read_volatile(),
                (&raw const (*p).mp_priv).read_volatile(),
            )
        };
        if ops.is_null() && !queue.dev().is_registered() {
            // Uninstalled as the device went (`dev_memory_provider_uninstall`).
            return Ok(());
        }
        if ops != self.0.mp_ops || provider != self.0.mp_priv {
            return Err(EINVAL);
        }
        // SAFETY: the device is locked; the parameters are only compared.
        unsafe { bindings::netif_mp_close_rxq(dev.as_raw(), idx, self.as_raw()) };
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
    #[inline]
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
            // CAST: PAGE_SHIFT is small.
            if pool.order().saturating_add(crate::page::PAGE_SHIFT as u32) > T::niov_shift(this) {
                return Err(E2BIG);
            }
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
