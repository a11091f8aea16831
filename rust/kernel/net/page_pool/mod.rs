// SPDX-License-Identifier: GPL-2.0

//! Page pools and their memory providers.
//!
//! A driver creates a [`Pool`] per receive queue from [`Params`] and fills
//! its ring with [`PoolNetmem`] buffers, which go back to the pool when
//! dropped or, once in an skb, when the skb is freed. Allocation takes
//! `&mut Pool`: one context at a time. Once the ring is the queue's, the
//! pool goes to the queue's NAPI instance (`napi::Added::attach_pool`),
//! whose poll alone allocates from it from then on (`napi::NapiRx::pool`).
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
//! The driver's side (pools and their buffers) is here, the provider's in
//! the `provider` module; everything is used through this module.
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
    error::from_err_ptr,
    net::{
        netdev::NetDevice,
        netmem::NetmemRef, //
    },
    prelude::*,
    sync::atomic::{
        Acquire,
        Atomic,
        Relaxed, //
    },
};
use core::{
    cell::Cell,
    marker::PhantomData,
    ptr::NonNull, //
};

mod provider;

pub use provider::{
    pp_ref_count,
    take_back,
    AllocCache,
    FillMsg,
    MemoryProvider,
    MpParams,
    PagePool,
    PoolInit,
    ProviderOps,
    ALLOC_CACHE_REFILL, //
};

/// `PP_FLAG_DMA_MAP`: the pool maps pages for DMA.
pub const PP_FLAG_DMA_MAP: u32 = 1 << 0;
/// `PP_FLAG_DMA_SYNC_DEV`: the pool syncs pages for the device.
pub const PP_FLAG_DMA_SYNC_DEV: u32 = 1 << 1;
/// `PP_FLAG_ALLOW_UNREADABLE_NETMEM`: the pool may hold memory the CPU
/// cannot read, from the memory provider of its queue.
pub const PP_FLAG_ALLOW_UNREADABLE_NETMEM: u32 = 1 << 3;

/// The bytes of a buffer of `order` (`PAGE_SIZE << order`), if the page
/// allocator has buffers of that order (at most `MAX_PAGE_ORDER`).
#[inline]
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
    /// `pool_size` instead, when the queue has a memory provider.
    provider_size: u32,
    _refs: PhantomData<(&'a Device<Bound>, &'a NetDevice)>,
}

impl<'a> Params<'a> {
    /// A pool of `pool_size` buffers of `PAGE_SIZE << order` bytes, mapped
    /// for `dev` to write into.
    pub fn new(dev: &'a Device<Bound>, order: u32, pool_size: u32) -> Self {
        let mut this = Self {
            // All zeroes: no device, no netdev, no callback.
            raw: bindings::page_pool_params::default(),
            provider_size: 0,
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
    /// in C), the device sync of a buffer coming back stays inside it, and
    /// the receive queue of [`Params::rx_queue`] is one the device uses
    /// (`page_pool_init` indexes `dev->_rx` with it unchecked).
    fn check(&self) -> Result {
        // SAFETY: as in `fast`, read only.
        let (fast, slow) = unsafe {
            (
                &self.raw.__bindgen_anon_1.fast,
                &self.raw.__bindgen_anon_2.slow,
            )
        };
        match buf_len(fast.order) {
            Some(len) if (1..=len).contains(&fast.max_len) => (),
            _ => return Err(EINVAL),
        }
        // SAFETY: `rx_queue` set a device that outlives `'a`, whose
        // instance lock its caller holds while the pool is made: the
        // count, which changes under that lock, is the one
        // `page_pool_create` sees. It is at most `num_rx_queues`, the
        // length of `_rx`.
        if !slow.netdev.is_null() && slow.queue_idx >= unsafe { (*slow.netdev).real_num_rx_queues }
        {
            return Err(EINVAL);
        }
        // A pool is listed on its queue's device, which moves the pools it
        // lists to the loopback device as it unregisters
        // (`page_pool_unreg_netdev`): one listed after that would still
        // name the device once it is freed. The state changes under the
        // instance lock, held.
        if !slow.netdev.is_null() {
            // SAFETY: as above, a device that outlives `'a`.
            if !unsafe { NetDevice::from_raw(slow.netdev) }.is_registered() {
                return Err(ENODEV);
            }
        }
        Ok(())
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
    /// ([`PoolNetmem::dma_addr`] gives `None`) and nothing to sync
    /// ([`PoolNetmem::sync_for_cpu`] does nothing). A memory provider
    /// refuses such a pool: [`Pool::new`] fails with `EOPNOTSUPP` on a
    /// queue that has one.
    pub fn unmapped(mut self) -> Self {
        self.slow().flags &= !(PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV);
        self
    }

    /// Holds `size` buffers in the pool's ring (`pool_size`) instead, if
    /// more, when the pool's queue ([`Params::rx_queue`]) has a memory
    /// provider. A provider's buffers come back in the batches a consumer
    /// returns them in, from outside the pool's NAPI (a devmem socket gives
    /// back up to 1024 tokens a call): what the ring cannot hold is
    /// released to the provider, and allocated from it again later. A
    /// larger ring costs a provider's pool nothing but pointers, while
    /// each host page held there is memory taken.
    pub fn provider_pool_size(mut self, size: u32) -> Self {
        self.provider_size = size;
        self
    }

    /// The parameters to create the pool with: `pool_size` as
    /// [`Params::provider_pool_size`] says for the queue's provider.
    fn resolve(&self) -> bindings::page_pool_params {
        let mut raw = self.raw;
        // SAFETY: as in `fast`, read only.
        let (slow, pool_size) = unsafe {
            (
                &self.raw.__bindgen_anon_2.slow,
                self.raw.__bindgen_anon_1.fast.pool_size,
            )
        };
        if self.provider_size <= pool_size
            || slow.flags & PP_FLAG_ALLOW_UNREADABLE_NETMEM == 0
            || slow.netdev.is_null()
        {
            return raw;
        }
        // SAFETY: `rx_queue` set a device that outlives `'a`, whose
        // instance lock its caller holds while the pool is made: the
        // queue's provider, read as `page_pool_create` reads it, cannot
        // change in between. `_rx` has `num_rx_queues` entries, at least
        // `real_num_rx_queues`, which bounds the index before it is used.
        let has_provider = unsafe {
            let dev = slow.netdev;
            slow.queue_idx < (*dev).real_num_rx_queues
                && !(*(*dev)._rx.add(slow.queue_idx as usize))
                    .mp_params
                    .mp_ops
                    .is_null()
        };
        if has_provider {
            raw.__bindgen_anon_1.fast.pool_size = self.provider_size;
        }
        raw
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
    /// provider may not be readable by the CPU. [`Pool::new`] refuses an
    /// `idx` of no queue in use (`real_num_rx_queues`, `EINVAL`).
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
}

/// A page pool the driver made (`page_pool_create`); destroyed on drop
/// (`page_pool_destroy`). Buffers still out (in skbs, or held elsewhere)
/// keep the pool's memory alive until they come back.
///
/// # Invariants
///
/// `ptr` is a pool this object created and destroys; `mapped` says whether
/// it maps its buffers for DMA (`PP_FLAG_DMA_MAP`), `sync_cpu` and
/// `sync_dev` whether it also syncs them for the CPU and for the device
/// (its `dma_sync_for_cpu` and `dma_sync`, which the pool and its memory
/// provider set while it is created and which only its destruction
/// clears, in `page_pool_scrub`); `destroy` is `Some` until the pool is
/// dropped, and holds the device it maps them for
/// (`page_pool_params::dev`).
///
/// The page pool core takes no reference on that device, and uses it until
/// the pool is destroyed: to map what it allocates, to sync what comes
/// back, and, in `page_pool_destroy`, to unmap every buffer still out.
/// Buffers that come back later find nothing left to unmap. So the pool
/// holds the device until it is destroyed, and never maps on a freed one.
///
/// A pool must still be destroyed before its driver unbinds, as in C: a
/// pool handed to a NAPI instance is destroyed when the instance is
/// removed, and one in the device's data when the data drops, both before
/// the device is unregistered. One kept past unbind (taken back with
/// `Added::detach_pool` and put in a global, say) would unmap, once the
/// device is removed from its IOMMU, through direct mapping, its
/// addresses taken for physical ones. This type does not prevent that,
/// for such a pool, nor for one dropped in atomic context at unbind,
/// which the workqueue destroys soon after (see `Drop`).
pub struct Pool {
    ptr: NonNull<bindings::page_pool>,
    mapped: bool,
    sync_cpu: bool,
    sync_dev: bool,
    /// What destroys the pool if it is dropped where it may not sleep.
    destroy: Option<Pin<KBox<Destroy>>>,
}

/// The destruction of a [`Pool`] dropped in atomic context, on the system
/// workqueue (`system_percpu_wq`: on the CPU that dropped it, once it may
/// sleep again): made with the pool, so that its drop allocates nothing.
/// It holds the pool's device (`_dev`).
#[pin_data]
struct Destroy {
    #[pin]
    work: crate::workqueue::Work<Destroy>,
    pool: NonNull<bindings::page_pool>,
    _dev: crate::sync::aref::ARef<Device>,
}

crate::workqueue::impl_has_work! {
    impl HasWork<Self> for Destroy { self.work }
}

// SAFETY: the pool may be destroyed from any thread, and the device is
// reference counted.
unsafe impl Send for Destroy {}

impl crate::workqueue::WorkItem for Destroy {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        // SAFETY: the pool of a `Pool` that was dropped, which queued this
        // in place of destroying it: destroyed once, here, in process
        // context.
        unsafe { bindings::page_pool_destroy(this.pool.as_ptr()) };
    }
}

/// Whether a pool dropped here may be destroyed in place: not in an
/// interrupt (a NAPI poll, a softirq), with bottom halves off (a
/// `SpinLockBh` held) or with hard IRQs off. The page pool core counts
/// these in `preempt_count` whatever the kernel's preemption model, unlike
/// a plain spinlock held on a kernel without `CONFIG_PREEMPT_COUNT`.
fn may_destroy_here() -> bool {
    // SAFETY: reads this CPU's context; no precondition.
    unsafe { !bindings::in_interrupt() && !bindings::irqs_disabled() }
}

// SAFETY: the pool may be destroyed from any thread. Allocation needs
// `&mut Pool`, so one context allocates at a time, as the page pool
// requires.
unsafe impl Send for Pool {}

impl Pool {
    /// Creates a pool; `EINVAL` for an order above `MAX_PAGE_ORDER` or a
    /// receive queue the device does not have, `ENODEV` for a queue of a
    /// device that is not registered.
    pub fn new(params: &Params<'_>) -> Result<Self> {
        params.check()?;
        let raw = params.resolve();
        // SAFETY: `raw` is `params`' (one size aside), valid; the devices
        // it names outlive the call, and for a queue's pool the caller of
        // `Params::rx_queue` holds the instance lock.
        let ptr = from_err_ptr(unsafe { bindings::page_pool_create(&raw) })?;
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        let mapped = params.maps();
        // SAFETY: a pool just created, whose flags its creation (and its
        // memory provider's `init`, which it calls) set; no buffer of it
        // exists yet, and nothing else accesses it.
        let (sync_cpu, sync_dev) = unsafe {
            (
                (*ptr.as_ptr()).dma_sync_for_cpu(),
                (*ptr.as_ptr()).dma_sync(),
            )
        };
        // SAFETY: `fast` is the member `Params` writes, and `Params::new`
        // set its `dev` from a device that outlives `params`; this takes a
        // reference of its own.
        let dev = unsafe { Device::get_device(raw.__bindgen_anon_1.fast.dev) };
        let destroy = pin_init!(Destroy {
            work <- crate::workqueue::new_work!("Pool::destroy"),
            pool: ptr,
            _dev: dev,
        });
        match KBox::pin_init(destroy, GFP_KERNEL) {
            Ok(destroy) => Ok(Self {
                // INVARIANT: created here, with the flags of `params`,
                // for the device `destroy` holds; its sync flags as its
                // creation left them.
                ptr,
                mapped,
                sync_cpu: mapped && sync_cpu,
                sync_dev: mapped && sync_dev,
                destroy: Some(destroy),
            }),
            Err(e) => {
                // SAFETY: created just above, and nothing else has it.
                unsafe { bindings::page_pool_destroy(ptr.as_ptr()) };
                Err(e)
            }
        }
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

    /// The device the pool maps its buffers for, the direction of its
    /// mappings, and the offset into a buffer the device writes from
    /// (`page_pool_params`).
    #[inline(always)]
    fn dma_params(&self) -> (*mut bindings::device, bindings::dma_data_direction, u32) {
        let pp = self.ptr.as_ptr();
        // SAFETY: a live pool. Its creation set these fields and nothing
        // writes them while it lives (`page_pool_enable_direct_recycling`
        // and its twin write `napi`, another one); they are read by value,
        // with no reference to the parameters a write could alias.
        unsafe { ((*pp).p.dev, (*pp).p.dma_dir, (*pp).p.offset) }
    }

    /// The pool as its memory provider sees it.
    #[inline]
    pub fn as_page_pool(&self) -> &PagePool {
        // SAFETY: valid while `self` lives.
        unsafe { PagePool::from_raw(self.ptr.as_ptr()) }
    }

    /// How many buffers wait in the pool's allocation cache (`alloc.count`),
    /// which the allocating context alone touches: `&mut self`, as for
    /// [`Pool::alloc`] (a pool a NAPI instance recycles into directly is
    /// that instance's, not the caller's).
    #[inline]
    pub fn cached(&mut self) -> u32 {
        // SAFETY: the pool is valid; `&mut self` makes this the one
        // allocating context, which owns `alloc`.
        unsafe { (*self.ptr.as_ptr()).alloc.count }
    }

    /// Whether buffers come from a memory provider and may be unreadable
    /// (`page_pool_is_unreadable`).
    #[inline]
    pub fn is_unreadable(&self) -> bool {
        // SAFETY: set at creation, read-only afterwards.
        !unsafe { (*self.ptr.as_ptr()).mp_ops }.is_null()
    }

    /// A whole buffer (`page_pool_alloc_netmems`), without sleeping; `None`
    /// when memory or the provider's buffers run out.
    #[inline]
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
            synced: Cell::new((0, 0)),
        })
    }

    /// A whole page to give out half by half and reuse in place
    /// ([`Reusable`]), without sleeping. `None` when memory runs out, and
    /// from a pool with a memory provider, whose buffers are not pages.
    #[inline]
    pub fn alloc_reusable(&mut self) -> Option<Reusable> {
        if self.is_unreadable() {
            return None;
        }
        let whole = self.alloc()?;
        if !whole.is_readable() {
            return None;
        }
        let half = whole.size() / 2;
        let (netmem, _) = whole.into_raw();
        // SAFETY: `netmem` is a page the pool just handed out, not a
        // fragment (`alloc`): it holds the pool's one reference, which was
        // ours alone (the pool hands a buffer out only once every
        // reference to it came back), and which this turns into
        // `REUSE_BIAS`.
        unsafe { bindings::page_pool_fragment_netmem(netmem.as_raw(), REUSE_BIAS) };
        // INVARIANT: a readable page of the pool, whose references are all
        // held here; nothing uses either half.
        Some(Reusable {
            netmem,
            pool: self.ptr,
            bias: REUSE_BIAS,
            offset: 0,
            half,
        })
    }

    /// `size` bytes of a buffer shared with other allocations
    /// (`page_pool_alloc_frag_netmem`), without sleeping. `None` for more
    /// than a buffer holds, which C warns about.
    #[inline]
    pub fn alloc_frag(&mut self, size: u32) -> Option<PoolNetmem> {
        if size > buf_len(self.as_page_pool().order())? {
            return None;
        }
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
            synced: Cell::new((0, 0)),
        })
    }
}

impl Drop for Pool {
    /// Destroys the pool. This sleeps (the page pools' mutex, an RCU grace
    /// period for mapped pools): where that may not be done, in a NAPI
    /// poll or with bottom halves or hard IRQs off (a ring taken out of a
    /// `SpinLockBh` in the poll and dropped there), the destruction is
    /// left to the system workqueue (not from an NMI, where no work may be
    /// queued). Elsewhere it is done in place, and
    /// with `CONFIG_DEBUG_ATOMIC_SLEEP` every such drop checks that it may
    /// sleep, so that a pool dropped under a plain spinlock is reported the
    /// first time, not only when the destruction happens to sleep.
    fn drop(&mut self) {
        if !may_destroy_here() {
            if let Some(destroy) = self.destroy.take() {
                // SAFETY: `system_percpu_wq` is a C global, always
                // available.
                unsafe { crate::workqueue::Queue::from_raw(bindings::system_percpu_wq) }
                    .enqueue(destroy);
            }
            return;
        }
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
/// It may be dropped on any thread, in process or softirq context. With
/// hard IRQs off (in a hard IRQ handler, or as netpoll's
/// `ndo_start_xmit`) the pool may not take it back (it would take it into
/// its allocation cache, which the NAPI poll the IRQ interrupted may be
/// using), and it is leaked instead, with a warning (once).
///
/// # Invariants
///
/// `netmem` came from `pool`, with one reference that this object holds;
/// the buffer is the `size` bytes `offset` bytes into it, and nothing else
/// uses them while the reference is out. The pool's memory stays allocated
/// while the reference is out; the pool's DMA mapping of it does not: once
/// the [`Pool`] is dropped (`page_pool_destroy`), the page pool core unmaps
/// every buffer still out. So what uses the mapping ([`dma_addr`],
/// [`sync_for_cpu`]) takes the pool, borrowed, as proof that it is still
/// there.
///
/// `synced` is the range, inside the buffer, the last [`sync_for_cpu`]
/// made visible to the CPU, (0, 0) before the first.
///
/// [`dma_addr`]: PoolNetmem::dma_addr
/// [`sync_for_cpu`]: PoolNetmem::sync_for_cpu
pub struct PoolNetmem {
    netmem: NetmemRef,
    offset: u32,
    size: u32,
    pool: NonNull<bindings::page_pool>,
    synced: Cell<(u32, u32)>,
}

// SAFETY: a reference may be given back from any thread.
unsafe impl Send for PoolNetmem {}

impl PoolNetmem {
    /// The memory this buffer is in.
    #[inline]
    pub fn netmem(&self) -> NetmemRef {
        self.netmem
    }

    /// Where the buffer starts in [`PoolNetmem::netmem`].
    #[inline]
    pub fn offset(&self) -> u32 {
        self.offset
    }

    /// The buffer's length in bytes: what the pool gave.
    #[inline]
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Whether `len` bytes from `off` are inside the buffer.
    #[inline]
    pub fn holds(&self, off: u32, len: u32) -> bool {
        off.checked_add(len).is_some_and(|end| end <= self.size)
    }

    /// Whether the CPU may read the buffer: a page, not a provider's
    /// `net_iov`.
    #[inline]
    pub fn is_readable(&self) -> bool {
        !self.netmem.is_net_iov()
    }

    /// Whether the last [`PoolNetmem::sync_for_cpu`] made the `len` bytes
    /// `off` bytes into the buffer visible to the CPU, as what hands them
    /// to the stack (an skb's head or frag) requires. Always for an
    /// unreadable buffer, which the CPU does not read, and for no bytes.
    #[inline]
    pub fn is_synced(&self, off: u32, len: u32) -> bool {
        let (s_off, s_len) = self.synced.get();
        let end = off.checked_add(len);
        !self.is_readable()
            || len == 0
            || (off >= s_off && end.is_some_and(|end| end <= s_off + s_len))
    }

    /// Whether the buffer came from `pool`.
    #[inline]
    pub fn is_from(&self, pool: &Pool) -> bool {
        self.pool == pool.ptr
    }

    /// The device's address of the buffer, in the mapping of `pool`, the
    /// pool it came from; `None` for another pool (the buffer's mapping
    /// is not `pool`'s to vouch for) and for a pool that does not map
    /// ([`Params::unmapped`]).
    ///
    /// Borrowing the pool proves it is not destroyed, which would unmap
    /// the buffer and leave a stale address behind:
    ///
    /// ```ignore,compile_fail,E0382
    /// use kernel::net::page_pool::Pool;
    ///
    /// fn stale(mut pool: Pool) {
    ///     if let Some(buf) = pool.alloc() {
    ///         drop(pool); // misuse
    ///         let _ = buf.dma_addr(&pool);
    ///     }
    /// }
    /// ```
    #[inline]
    pub fn dma_addr(&self, pool: &Pool) -> Option<DmaAddress> {
        // A pool that does not map stores no address: what the field holds
        // is left over from the page's last use.
        if !self.is_from(pool) || !pool.mapped {
            return None;
        }
        // SAFETY: `pool`, alive while borrowed, is the buffer's (checked
        // above) and maps its buffers: the reference keeps the buffer
        // mapped while the pool lives.
        let base = unsafe { bindings::page_pool_get_dma_addr_netmem(self.netmem.as_raw()) };
        Some(base + DmaAddress::from(self.offset))
    }

    /// Makes the `len` bytes the device wrote `off` bytes into the buffer
    /// visible to the CPU, unless the pool does not sync (provider memory)
    /// or does not map. `pool` is the pool the buffer came from, borrowed
    /// as proof that its mapping of the buffer is still there; for another
    /// pool nothing is synced and the range is empty (a driver's bug: the
    /// buffer's bytes are not the device's). A range past the buffer's
    /// end is cut at it. Returns the range, which the CPU may read from
    /// now on ([`Synced::copy_to`]); only a synced range can be read:
    ///
    /// ```ignore,compile_fail,E0599
    /// use kernel::net::page_pool::PoolNetmem;
    /// # // twin: use kernel::net::page_pool::Pool;
    ///
    /// fn peek(buf: &PoolNetmem, head: &mut [u8; 64]) { // misuse
    /// # // twin: fn peek(pool: &Pool, buf: &PoolNetmem, head: &mut [u8; 64]) {
    ///     let _ = buf.copy_to(head); // misuse
    /// #   // twin: let _ = buf.sync_for_cpu(pool, 0, 64).copy_to(head);
    /// }
    /// ```
    ///
    /// and only while the buffer is still the caller's, not once it is
    /// given back to the pool (or to an skb):
    ///
    /// ```ignore,compile_fail,E0505
    /// use kernel::net::page_pool::{
    ///     Pool,
    ///     PoolNetmem, //
    /// };
    ///
    /// fn peek_late(pool: &Pool, buf: PoolNetmem, head: &mut [u8; 64]) {
    ///     let synced = buf.sync_for_cpu(pool, 0, 64);
    ///     drop(buf); // misuse
    ///     let _ = synced.copy_to(head);
    /// }
    /// ```
    ///
    /// The sync needs the pool alive: once destroyed, the page pool core
    /// has unmapped the buffer but left the address and the sync flag, and
    /// a sync of the stale address could, with bounce buffers, copy a
    /// slot that is now another mapping's over memory the CPU does not
    /// own:
    ///
    /// ```ignore,compile_fail,E0382
    /// use kernel::net::page_pool::Pool;
    ///
    /// fn sync_late(mut pool: Pool, head: &mut [u8; 64]) {
    ///     if let Some(buf) = pool.alloc() {
    ///         drop(pool); // misuse
    ///         let _ = buf.sync_for_cpu(&pool, 0, 64).copy_to(head);
    ///     }
    /// }
    /// ```
    #[inline]
    pub fn sync_for_cpu(&self, pool: &Pool, off: u32, len: u32) -> Synced<'_> {
        let off = off.min(self.size);
        let len = if self.is_from(pool) {
            len.min(self.size - off)
        } else {
            0
        };
        // The page pool would sync an unmapped pool's buffer at whatever
        // address the page holds (it turns syncing for the CPU on for
        // every pool): `sync_cpu` is off for those.
        if pool.sync_cpu && len > 0 {
            let (dev, dir, base) = pool.dma_params();
            // SAFETY: the pool's device, which it holds while it lives.
            if unsafe { bindings::dma_dev_need_sync(dev) } {
                // SAFETY: `pool` is the buffer's (or `len` would be 0) and
                // syncs what it maps (checked above), so the reference
                // keeps the buffer mapped; the range is inside the buffer,
                // so inside the pool's mapping of it, at the pool's offset
                // as `page_pool_dma_sync_netmem_for_cpu` takes it.
                unsafe {
                    bindings::dma_sync_single_range_for_cpu(
                        dev,
                        bindings::page_pool_get_dma_addr_netmem(self.netmem.as_raw()),
                        // CAST: u32 to usize is lossless on Linux.
                        self.offset as usize + off as usize + base as usize,
                        len as usize,
                        dir,
                    )
                }
            }
        }
        // INVARIANT: cut to the buffer above; the range synced last.
        self.synced.set((off, len));
        Synced {
            buf: self,
            off,
            len,
        }
    }

    /// Gives up the reference without returning it: the caller now owns
    /// it (an skb frag, for example), and must give it back, or the pool's
    /// destruction waits for it forever (`page_pool_release_retry`). Only
    /// the abstractions that hand the reference to C use it: a driver
    /// gives a buffer away as an skb's head or frag.
    #[inline]
    pub(crate) fn into_raw(self) -> (NetmemRef, u32) {
        let r = (self.netmem, self.offset);
        core::mem::forget(self);
        r
    }
}

/// Whether a buffer may go back to its pool here, where it is dropped:
/// not with hard IRQs off. The page pool core takes a buffer freed in
/// softirq context on the CPU of the pool's NAPI straight into the pool's
/// allocation cache (`page_pool_napi_local`), which only that NAPI's poll
/// may touch: from a hard IRQ that interrupted that poll, the cache would
/// be written under it. Elsewhere, a buffer given back takes the pool's
/// ring lock with `spin_lock_bh`, and may be unmapped and freed, which
/// hard IRQ context allows neither. A C driver is told not to; here the
/// reference is kept instead, and its buffer never comes back (the pool's
/// destruction waits for it): a leak, and a warning once, for what would
/// otherwise corrupt the pool.
#[inline(always)]
fn may_return() -> bool {
    // SAFETY: reads this CPU's interrupt flag; no precondition.
    if unsafe { !bindings::irqs_disabled() } {
        return true;
    }
    leaked_with_irqs_off();
    false
}

#[cold]
fn leaked_with_irqs_off() {
    crate::pr_warn_once!("page_pool: a buffer dropped with hard IRQs off is leaked\n");
}

impl Drop for PoolNetmem {
    #[inline]
    fn drop(&mut self) {
        if !may_return() {
            return;
        }
        // SAFETY: the pool is alive while the reference is out; this gives
        // the one reference back, from a context that is not necessarily
        // the pool's NAPI (no direct recycling asked for), with hard IRQs
        // on (checked above).
        unsafe {
            bindings::page_pool_put_full_netmem(self.pool.as_ptr(), self.netmem.as_raw(), false)
        };
    }
}

/// The references to its page a [`Reusable`] takes at a time: one atomic
/// addition per this many halves given.
const REUSE_BIAS: isize = 0xffff;

/// A page of a [`Pool`] a driver gives out half by half and reuses in
/// place, as the C igb flips its receive pages: each [`Reusable::give`]
/// hands out the half the device wrote, as a [`PoolNetmem`] for an skb,
/// and keeps the page, turned to its other half, when nothing is left of
/// what it gave before; otherwise the page goes back to the pool once the
/// last of its halves does. A page reused this way skips the pool
/// altogether: no allocation, and no trip through the pool's ring when the
/// receiving process, not the NAPI, frees the skb.
///
/// The page holds many of the pool's references (`pp_ref_count`) at
/// once and gives one with each half, so that giving takes no atomic
/// operation; whether the other half is free is the count of references
/// out, read, and the page's own count (`get_page` holders, such as a
/// pipe that TCP spliced the half into), as the pool checks before it
/// recycles a page.
///
/// It may be dropped where a [`PoolNetmem`] may be, on any thread, in
/// process or softirq context, and so may [`Reusable::give`] be called,
/// which drops the page when it does not keep it; with hard IRQs off, the
/// references it holds are leaked, as a [`PoolNetmem`]'s.
///
/// A half given is the caller's until dropped, and a half is given once:
/// [`Reusable::give`] takes the page, and gives it back only turned to
/// the half that is free.
///
/// ```ignore,compile_fail,E0382
/// use kernel::net::page_pool::{
///     Pool,
///     PoolNetmem, //
/// };
///
/// fn twice(pool: &mut Pool) -> Option<(PoolNetmem, PoolNetmem)> {
///     let page = pool.alloc_reusable()?;
///     let (first, rest) = page.give(pool);
///     let (again, _) = page.give(pool); // misuse
/// #   // twin: let (again, _) = rest?.give(pool);
///     Some((first, again))
/// }
/// ```
///
/// # Invariants
///
/// `netmem` is a page (not a `net_iov`) from `pool`, not shared with
/// other allocations; this object holds `bias` of the pool's references
/// to it, at least one (none only as [`Reusable::give`] drops a page it
/// gave its last half of), so the page stays the driver's; every other
/// reference, and any reference to the page itself but the pool's, was
/// taken from a half given before, which is not the `half` bytes at
/// `offset` (0 or `half`): those are used by nothing but this object's
/// owner, who gives them to the device and then with [`Reusable::give`].
pub struct Reusable {
    netmem: NetmemRef,
    pool: NonNull<bindings::page_pool>,
    bias: isize,
    offset: u32,
    half: u32,
}

// SAFETY: as for `PoolNetmem`, the references may be given back from any
// thread.
unsafe impl Send for Reusable {}

impl Reusable {
    /// The page's pool reference count.
    #[inline]
    fn pp_ref_count(&self) -> &Atomic<isize> {
        // SAFETY: a page of the pool, held (the type invariant): its
        // `pp_ref_count`, an `atomic_long_t` whose `counter` is an aligned
        // `long` only accessed atomically, lives while the page does.
        unsafe {
            let count = bindings::netmem_get_pp_ref_count_ref(self.netmem.as_raw());
            Atomic::from_ptr((&raw mut (*count).counter).cast::<isize>())
        }
    }

    /// The memory the page is.
    #[inline]
    pub fn netmem(&self) -> NetmemRef {
        self.netmem
    }

    /// Where the half to give next starts in the page.
    #[inline]
    pub fn offset(&self) -> u32 {
        self.offset
    }

    /// Bytes per half.
    #[inline]
    pub fn size(&self) -> u32 {
        self.half
    }

    /// The device's address of the half to give next, in the mapping of
    /// `pool`, the page's; `None` for another pool and for a pool that
    /// does not map, as [`PoolNetmem::dma_addr`].
    #[inline]
    pub fn dma_addr(&self, pool: &Pool) -> Option<DmaAddress> {
        if self.pool != pool.ptr || !pool.mapped {
            return None;
        }
        // SAFETY: `pool`, alive while borrowed, is the page's and maps its
        // pages: the references held keep the page mapped while it lives.
        let base = unsafe { bindings::page_pool_get_dma_addr_netmem(self.netmem.as_raw()) };
        Some(base + DmaAddress::from(self.offset))
    }

    /// Gives out the half the device wrote, the one at
    /// [`Reusable::offset`], and returns the page turned to its other
    /// half if that is free: nothing given from it before is held
    /// anywhere any more, the page is neither from the emergency reserves
    /// (pfmemalloc) nor from another NUMA node than this CPU's
    /// (`dev_page_is_reusable`, as the C drivers check), and `pool` is the
    /// page's. The other half is then
    /// synced for the device, which the caller gives it to next. `None`
    /// gives the page's references up: it goes back to the pool when the
    /// halves out come back.
    ///
    /// Inline: a driver gives a half per frame it receives.
    #[inline(always)]
    pub fn give(mut self, pool: &Pool) -> (PoolNetmem, Option<Self>) {
        let raw = self.netmem.as_raw();
        // Acquire: what the holders of the other half did with it comes
        // before their references' release, and before the device's
        // writing into it again.
        let out = self.pp_ref_count().load(Acquire) - self.bias;
        // SAFETY: a page (the type invariant), held, so its `struct page`.
        let page = unsafe { bindings::__netmem_to_page(raw) };
        // SAFETY: as above.
        let free = out == 0
            && unsafe { bindings::page_ref_count(page) } == 1
            && unsafe { bindings::dev_page_is_reusable(page) };
        if !free || self.pool != pool.ptr {
            return (self.give_up(out), None);
        }
        if self.bias == 1 {
            // The last reference held here goes with this half, and the
            // page is kept: take more first, so that it stays held. Ours
            // to add to, held.
            self.pp_ref_count().add(REUSE_BIAS - 1, Relaxed);
            self.bias = REUSE_BIAS;
        }
        let given = self.take_half();
        // INVARIANT: no reference but ours was out, so every one out now
        // was taken from the half just given; the other one is unused.
        self.offset = self.half - self.offset;
        if pool.sync_dev {
            // The whole half, from the page's start, whatever the pool's
            // offset: the device may write anywhere in it.
            let (dev, dir, _) = pool.dma_params();
            // SAFETY: the pool's device, which it holds while it lives.
            if unsafe { bindings::dma_dev_need_sync(dev) } {
                // SAFETY: the page's pool (checked above) maps and syncs
                // its pages, and holds the mapping while the page is held;
                // the range is the half at `offset`, inside the page.
                unsafe {
                    bindings::dma_sync_single_range_for_device(
                        dev,
                        bindings::page_pool_get_dma_addr_netmem(raw),
                        // CAST: u32 to usize is lossless on Linux.
                        self.offset as usize,
                        self.half as usize,
                        dir,
                    )
                }
            }
        }
        (given, Some(self))
    }

    /// The half at `offset`, with one of the references held.
    #[inline(always)]
    fn take_half(&mut self) -> PoolNetmem {
        self.bias -= 1;
        // INVARIANT: one of the references, for the half at `offset`,
        // which nothing else uses (the type invariant); taken off `bias`.
        PoolNetmem {
            netmem: self.netmem,
            offset: self.offset,
            size: self.half,
            pool: self.pool,
            synced: Cell::new((0, 0)),
        }
    }

    /// Gives out the half at `offset` and the page up, `out` references
    /// being out besides those held here: [`Reusable::give`] when the page
    /// is not kept. The page may give its last reference with the half:
    /// dropped with none left, it gives none back.
    #[cold]
    fn give_up(mut self, out: isize) -> PoolNetmem {
        // Fewer than held: a reference given back twice elsewhere, which
        // the references held here would hide from the page pool's check.
        crate::warn_on!(out < 0);
        self.take_half()
    }
}

impl Drop for Reusable {
    #[inline]
    fn drop(&mut self) {
        if self.bias == 0 {
            // The last one went with the last half given.
            return;
        }
        if !may_return() {
            return;
        }
        let raw = self.netmem.as_raw();
        // SAFETY: the references held here, given back at once, with hard
        // IRQs on (checked above); the pool is alive while any is out.
        if unsafe { bindings::page_pool_unref_netmem(raw, self.bias) } == 0 {
            // SAFETY: the last reference: the page is the pool's again,
            // synced for the device as far as the pool syncs its pages.
            unsafe {
                bindings::page_pool_put_unrefed_netmem(self.pool.as_ptr(), raw, u32::MAX, false)
            }
        }
    }
}

/// A range of a [`PoolNetmem`] synced for the CPU
/// ([`PoolNetmem::sync_for_cpu`]): what the device wrote there before the
/// sync is what the CPU reads. Reading it needs no pool: it goes through
/// the kernel's mapping of the page, which the buffer's reference keeps
/// allocated, not through the DMA API.
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

#[cfg(CONFIG_KUNIT)]
mod tests;
