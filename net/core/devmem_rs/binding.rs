// SPDX-License-Identifier: GPL-2.0

//! A dma-buf bound for devmem TCP.
//!
//! Binding imports the dma-buf, maps it for the NIC's DMA device in one
//! direction, carves the mapping into `net_iov`s ([`super::carve`]) and
//! keeps the free ones on a [`FreeList`].
//!
//! # Lifetime
//!
//! A [`Binding`] is referenced by a per-CPU count: the [`Handle`] returned
//! by [`Binding::bind`] holds the owner's reference (the netlink socket's),
//! and every page pool and in-flight frag that uses the binding's
//! `net_iov`s holds one more ([`BindingRef`]). Dropping the handle kills the
//! count; when the last reference goes the binding is freed from a work
//! item, in process context, since the last put may come from softirq.
//!
//! # Devices
//!
//! A binding names its device by pointer, as C does, for the send path's
//! route check and for `validate_xmit_unreadable_skb`, and takes no
//! reference to it. An RX binding learns that its device goes from its
//! provider's `uninstall` ([`Binding::forget_rxq`]). A TX binding is listed
//! from [`Handle::set_netdev`] until it is freed, and [`TxDevices`], a
//! netdevice notifier the core registers at boot, makes every listed
//! binding forget a device that is unregistered ([`forget_device`]): its
//! pointer is cleared, so that a device allocated later at the same address
//! matches no stale binding, and the dma-buf is unmapped while the driver
//! still owns the device. Frags that still hold `net_iov`s of the binding
//! are dropped at transmit (their binding's device matches none).
//!
//! # Layout in memory
//!
//! All `net_iov`s of a binding live in one array, numbered as the layout
//! numbers them. Each DMA segment has a [`Chunk`] whose C `net_iov_area`
//! the `net_iov`s point to (`net_iov->owner`), and each chunk points back
//! to its binding, so the binding of a `net_iov` is two loads away.

use super::{
    carve::{
        CarveError,
        Layout, //
    },
    freelist::FreeList,
};
use core::{
    mem::ManuallyDrop,
    ptr::{
        self,
        NonNull, //
    },
};
use kernel::{
    alloc::{
        AllocError,
        KVVec, //
    },
    device::Device,
    devres::Devres,
    dma::{
        DataDirection,
        DmaAddress, //
    },
    dma_buf::{
        Attachment,
        DmaBuf,
        Mapping, //
    },
    net::{
        netdev::{
            DeviceEvents,
            NetDevice,
            RxQueue, //
        },
        netdev_genl::SockLink,
        netmem::{
            NetIov,
            NetIovArea,
            NetIovType, //
        },
    },
    new_mutex,
    page::{
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    pr_warn_once,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{
            Atomic,
            Relaxed, //
        },
        global_lock,
        percpu_ref::{
            PercpuRef,
            PercpuRefGuard,
            Release, //
        },
        rcu,
        Mutex, //
    },
    types::ForeignOwnable,
    workqueue::{
        self,
        impl_has_work,
        new_work,
        Work,
        WorkItem, //
    },
    xarray::RcuForeignOwnable,
};

/// Why a dma-buf cannot be bound. Each says what the netlink handler
/// reports; the texts are those of the C core.
#[derive(Debug)]
pub enum BindError {
    /// `dma_buf_attach` failed.
    Attach(Error),
    /// `dma_buf_map_attachment_unlocked` failed.
    Map(Error),
    /// A TX dma-buf whose size is not a multiple of `PAGE_SIZE`.
    TxSize,
    /// A TX dma-buf whose mapping is larger than the dma-buf: C's
    /// `tx_vec`, of the dma-buf's pages, would be written past its end.
    TxMapping,
    /// The mapping does not carve into `net_iov`s.
    Carve(CarveError),
    /// Out of memory.
    NoMemory,
}

impl BindError {
    /// The errno user space sees.
    pub fn errno(&self) -> Error {
        match self {
            Self::Attach(e) | Self::Map(e) => *e,
            Self::TxSize | Self::TxMapping => EINVAL,
            Self::Carve(e) => (*e).into(),
            Self::NoMemory => ENOMEM,
        }
    }

    /// The extack message, when the C core sets one.
    pub fn message(&self) -> Option<&'static CStr> {
        match self {
            Self::Attach(_) => Some(c"Failed to bind dmabuf to device"),
            Self::Map(_) => Some(c"Failed to map dmabuf attachment"),
            Self::TxSize => Some(c"TX dma-buf size must be a multiple of PAGE_SIZE"),
            // The C core has no check, nor message, for this.
            Self::TxMapping => Some(c"TX dma-buf mapping is larger than the dma-buf"),
            // Formatted: see `CarveError`'s `Display`.
            Self::Carve(_) | Self::NoMemory => None,
        }
    }
}

impl From<AllocError> for BindError {
    fn from(_: AllocError) -> Self {
        Self::NoMemory
    }
}

/// The `net_iov`s of one DMA segment.
///
/// `#[repr(C)]` with the area first: a `net_iov`'s owner pointer is the
/// chunk's address. The layout is C's `struct dmabuf_genpool_chunk_owner`,
/// whose accessors in `devmem.h` C callers compile against.
#[repr(C)]
pub struct Chunk {
    pub(crate) area: NetIovArea,
    pub(crate) binding: *const Binding,
    pub(crate) base_dma_addr: DmaAddress,
}

/// The state of a binding that changes under its lock.
struct Bound {
    /// The receive queues the binding is installed on, of [`Binding::dev`]
    /// (for a leased queue, the lessee's queue).
    rxqs: KVec<NonNull<RxQueue>>,
    /// The dma-buf, attached to the device and mapped; `None` once the
    /// binding's device is gone ([`Binding::forget_rxq`],
    /// [`forget_device`]). Were the DMA device unbound before that (it
    /// is not: its driver unregisters the netdev first), the `Devres`
    /// would unmap it then.
    mapping: Option<Devres<Mapping>>,
    /// Whether the binding is on [`TX_BINDINGS`].
    listed: bool,
}

/// A bound dma-buf.
///
/// The first fields are those C code reads, in the order of
/// `struct net_devmem_dmabuf_binding` as `net/core/devmem.h` declares it
/// for the Rust core (checked at build time in [`crate::exports`]).
///
/// # Invariants
///
/// - Every `net_iov` in `niovs` belongs to the chunk of `chunks` its layout
///   number falls in, and every chunk points to this binding.
/// - `free` numbers exactly the `net_iov`s of `niovs`.
/// - The binding is pinned in a `KBox` that [`Release::release`] frees.
/// - `dev` is null, or the device the binding was made for, which the
///   binding outlives only if it clears `dev` first (from the provider's
///   `uninstall`) or installed nothing on it (TX).
/// - Every queue in `bound.rxqs` has this binding's provider installed.
#[repr(C)]
#[pin_data]
pub struct Binding {
    pub(crate) dev: Atomic<*mut NetDevice>,
    pub(crate) id: Atomic<u32>,
    pub(crate) niov_shift: u32,
    #[pin]
    pub(crate) refs: PercpuRef<Binding>,
    vdev: Atomic<*mut NetDevice>,
    direction: DataDirection,
    #[pin]
    bound: Mutex<Bound>,
    /// The binding's place on its socket's list ([`crate::sock`]).
    #[pin]
    link: SockLink,
    #[pin]
    free_work: Work<Binding>,
    niovs: KVVec<NetIov>,
    chunks: KVec<Chunk>,
    free: FreeList,
    layout: Layout,
    buf: ARef<DmaBuf>,
}

// SAFETY: the raw pointers between chunks and the binding point into the
// binding itself, which is shared between CPUs by its reference count.
unsafe impl Send for Binding {}

// SAFETY: the methods taking `&self` are the free list's (lock-free) and
// reads of data fixed at creation.
unsafe impl Sync for Binding {}

impl_has_work! {
    impl HasWork<Self> for Binding { self.free_work }
}

impl Binding {
    /// Binds `buf` for DMA by `dev` in direction `dir`, in `net_iov`s of
    /// `1 << niov_shift` bytes for RX; a TX binding's are pages, which the
    /// send path looks up by page ([`Binding::tx_net_iov_at`]), whatever
    /// `niov_shift` says.
    pub fn bind(
        buf: &DmaBuf,
        dev: &Device<kernel::device::Bound>,
        dir: DataDirection,
        niov_shift: u32,
    ) -> Result<Handle, BindError> {
        let mapping = Attachment::new(buf, dev)
            .map_err(BindError::Attach)?
            .map(dev, dir)
            .map_err(BindError::Map)?;
        let tx = dir == DataDirection::ToDevice;
        if tx && buf.size() % PAGE_SIZE != 0 {
            return Err(BindError::TxSize);
        }
        // CAST: PAGE_SHIFT is small.
        let niov_shift = if tx { PAGE_SHIFT as u32 } else { niov_shift };
        let segments = mapping
            .access(dev)
            .map_err(BindError::Map)?
            .sg_table()
            .iter()
            // CAST: a segment length fits `usize`, it is a 32-bit field.
            .map(|sg| (sg.dma_address(), sg.dma_len() as usize));
        let layout = Layout::carve(segments, niov_shift, GFP_KERNEL).map_err(BindError::Carve)?;
        // A TX send looks `net_iov`s up by offset in the dma-buf: with a
        // mapping (the bytes carved, `Layout`'s invariant) no larger than
        // the dma-buf, the ones it finds are those inside it
        // ([`Binding::tx_net_iov_at`]).
        let count = layout.count();
        if tx && layout.virtual_addr(count) > buf.size() {
            return Err(BindError::TxMapping);
        }
        // CAST: u32 to usize is lossless on Linux.
        let mut niovs = KVVec::with_capacity(count as usize, GFP_KERNEL)?;
        for _ in 0..count {
            niovs.push(NetIov::zeroed(), GFP_KERNEL)?;
        }
        let mut chunks = KVec::with_capacity(layout.chunks().len(), GFP_KERNEL)?;
        for _ in layout.chunks() {
            chunks.push(
                Chunk {
                    area: NetIovArea::zeroed(),
                    binding: core::ptr::null(),
                    base_dma_addr: 0,
                },
                GFP_KERNEL,
            )?;
        }
        // `count` is at most `MAX_ENTRIES`: `Layout::carve` refused a larger
        // mapping with `CarveError::TooLarge` (`E2BIG`) above, before the
        // allocations here, so the free list fails only for memory.
        let free = FreeList::new(count, GFP_KERNEL).map_err(|_| BindError::NoMemory)?;

        let mut this = KBox::pin_init(
            try_pin_init!(Self {
                dev: Atomic::new(core::ptr::null_mut()),
                id: Atomic::new(0),
                niov_shift: layout.shift(),
                refs <- PercpuRef::new(GFP_KERNEL),
                vdev: Atomic::new(core::ptr::null_mut()),
                direction: dir,
                bound <- new_mutex!(Bound {
                    rxqs: KVec::new(),
                    mapping: Some(mapping),
                    listed: false,
                }),
                link: SockLink::new(),
                free_work <- new_work!("devmem::Binding::free_work"),
                niovs,
                chunks,
                free,
                layout,
                buf: buf.into(),
            }? Error),
            GFP_KERNEL,
        )
        .map_err(|_| BindError::NoMemory)?;

        // Wire the chunks and `net_iov`s to each other, now that nothing of
        // the binding moves any more.
        let me: *const Self = &*this;
        let proj = this.as_mut().project();
        let base = proj.niovs.as_mut_ptr();
        let shift = proj.layout.shift();
        for (chunk, c) in proj.chunks.iter_mut().zip(proj.layout.chunks()) {
            chunk.binding = me;
            chunk.base_dma_addr = c.base_dma;
            // CAST: u32 to usize is lossless on Linux.
            let (first, n) = (c.first as usize, c.count as usize);
            // SAFETY: `first..first + n` is inside `niovs` (the layout's
            // invariant), which is never resized and is freed with the
            // chunks; `chunks` is never resized either, and the binding is
            // pinned, so the area stays in place. No `net_iov` points to
            // it yet: they are initialised below.
            unsafe { chunk.area.init(base.add(first).cast(), n, c.base_virtual) };
            for (j, niov) in proj.niovs[first..first + n].iter_mut().enumerate() {
                // CAST: `j` is below a segment's niov count.
                let dma = c.base_dma + ((j as u64) << shift);
                // SAFETY: `niov` is in the array the area was just pointed
                // at; both are pinned with the binding and freed with it.
                // The area starts the chunk, a `dmabuf_genpool_chunk_owner`
                // as C reads it for `Dmabuf`. `dma` is the address, in the
                // binding's mapping, of this `net_iov`'s slice of the
                // dma-buf (the layout numbers the slices).
                unsafe { niov.init(&chunk.area, NetIovType::Dmabuf, dma) };
            }
        }

        // INVARIANT: wired above; the box is freed by `Release::release`.
        // SAFETY: the binding stays pinned: only `release` turns the
        // pointer back into a box.
        let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(this) });
        // INVARIANT: the new handle holds the initial reference.
        // SAFETY: `KBox::into_raw` does not return null.
        let binding = unsafe { NonNull::new_unchecked(raw) };
        Ok(Handle(ManuallyDrop::new(BindingRef(binding))))
    }

    /// The binding a `net_iov` of it belongs to.
    ///
    /// # Safety
    ///
    /// `niov` is a `net_iov` of a live binding (its owner is a [`Chunk`]).
    pub unsafe fn of_net_iov(niov: &NetIov) -> &Binding {
        let chunk = niov.owner().cast::<Chunk>();
        // SAFETY: a binding's `net_iov`s point to their chunk (the type
        // invariant), whose binding outlives the reference per the caller.
        unsafe { &*(*chunk).binding }
    }

    /// The binding's id, 0 until it is published ([`crate::ids`]).
    pub fn id(&self) -> u32 {
        self.id.load(Relaxed)
    }

    /// Records the id the binding was published under.
    pub fn set_id(&self, id: u32) {
        self.id.store(id, Relaxed);
    }

    /// The device that does DMA for the binding, or null once every queue
    /// it was installed on went away with its device (`READ_ONCE` as C
    /// reads it; only compared, never dereferenced here).
    pub fn dev_ptr(&self) -> *mut NetDevice {
        self.dev.load(Relaxed)
    }

    /// The virtual device a TX binding was requested on, if other than
    /// [`Binding::dev_ptr`]; only compared, never dereferenced.
    pub fn vdev_ptr(&self) -> *mut NetDevice {
        self.vdev.load(Relaxed)
    }

    /// Whether the binding is for transmit.
    pub fn is_tx(&self) -> bool {
        self.direction == DataDirection::ToDevice
    }

    /// The device whose receive queues the binding is installed on, with
    /// a reference; `None` when it is installed on none (a TX binding, or
    /// every queue went away with its device).
    ///
    /// A TX binding holds no reference to its device, as in C, so its
    /// device pointer may dangle after the device is unregistered: it is
    /// only ever compared.
    pub fn rx_dev(&self) -> Option<ARef<NetDevice>> {
        let bound = self.bound.lock();
        if bound.rxqs.is_empty() {
            return None;
        }
        // SAFETY: while the binding is installed on a queue of `dev`, the
        // device is alive: it uninstalls the provider from every queue
        // (clearing them from `bound` under this lock) before it goes.
        let dev = unsafe { &*self.dev_ptr() };
        let dev: ARef<NetDevice> = dev.into();
        drop(bound);
        Some(dev)
    }

    /// Records that the binding's provider is installed on `rxq`.
    pub fn add_rxq(&self, rxq: &RxQueue) -> Result {
        self.bound
            .lock()
            .rxqs
            .push(NonNull::from(rxq), GFP_KERNEL)?;
        Ok(())
    }

    /// Forgets `rxq`, whose device or lease goes away with the binding
    /// installed; the last one clears [`Binding::dev_ptr`].
    ///
    /// When that was the binding's last queue, its device is gone (the
    /// core uninstalls providers when it unregisters the device, after
    /// closing it) or its queue lease is (after the physical queue
    /// restarted without the provider): no queue can write into the
    /// dma-buf any more. The dma-buf is then unmapped and detached at once,
    /// not when the last frag comes back, which may be long after: the
    /// driver is unbound from the device right after, and a mapping it
    /// left behind is a leak (DMA-API debugging reports it), or worse
    /// behind an IOMMU. The `net_iov`s stay, with DMA addresses nothing
    /// uses again: the binding is on no queue, and no page pool of the
    /// device is left to allocate from it.
    pub fn forget_rxq(&self, rxq: &RxQueue) {
        let mut bound = self.bound.lock();
        let Some(i) = bound
            .rxqs
            .iter()
            .position(|q| core::ptr::eq(q.as_ptr(), rxq))
        else {
            return;
        };
        // In range: found just above.
        let _ = bound.rxqs.remove(i);
        if !bound.rxqs.is_empty() {
            return;
        }
        // INVARIANT: no queue of the device holds the binding now.
        self.dev.store(core::ptr::null_mut(), Relaxed);
        let mapping = bound.mapping.take();
        drop(bound);
        // Unmapping takes the dma-buf's reservation lock: not under ours.
        drop(mapping);
    }

    /// Takes the list of queues the binding is installed on, to close
    /// them. Each pointer is valid while the instance lock of
    /// [`Binding::dev`] is held.
    pub fn take_rxqs(&self) -> KVec<NonNull<RxQueue>> {
        core::mem::take(&mut self.bound.lock().rxqs)
    }

    /// Forgets `dev`, which is being unregistered, if it is the TX
    /// binding's device or virtual device: the pointer is cleared, and
    /// with the device goes the mapping, which is returned for the caller
    /// to drop (see the module's documentation). Called under the lock of
    /// [`TX_BINDINGS`].
    fn forget_tx_device(&self, dev: *mut NetDevice) -> Option<Devres<Mapping>> {
        if self.vdev_ptr() == dev {
            self.vdev.store(core::ptr::null_mut(), Relaxed);
        }
        if self.dev_ptr() != dev {
            return None;
        }
        // A send through the virtual device would go out of this one.
        self.vdev.store(core::ptr::null_mut(), Relaxed);
        self.dev.store(core::ptr::null_mut(), Relaxed);
        self.bound.lock().mapping.take()
    }

    /// The binding's link, for its socket's list.
    pub fn link(&self) -> NonNull<SockLink> {
        NonNull::from(&self.link)
    }

    /// The binding whose list link is at `link`.
    ///
    /// # Safety
    ///
    /// `link` is the link of a binding.
    pub unsafe fn from_link(link: NonNull<SockLink>) -> NonNull<Self> {
        // SAFETY: `link` is the `link` field of a binding, per the caller.
        let b = unsafe { kernel::container_of!(link.as_ptr(), Binding, link) };
        // SAFETY: inside a binding, so not null.
        unsafe { NonNull::new_unchecked(b) }
    }

    /// The number of `net_iov`s.
    pub fn niov_count(&self) -> u32 {
        self.layout.count()
    }

    /// The `net_iov` numbered `idx`.
    pub fn net_iov(&self, idx: u32) -> Option<&NetIov> {
        // CAST: u32 to usize is lossless on Linux.
        self.niovs.get(idx as usize)
    }

    /// The number of a `net_iov` of this binding, from its place in the
    /// array, or `None` if it is not one of ours.
    pub fn index_of(&self, niov: &NetIov) -> Option<u32> {
        let base = self.niovs.as_ptr().addr();
        let off = core::ptr::from_ref(niov).addr().checked_sub(base)?;
        let idx = u32::try_from(off / core::mem::size_of::<NetIov>()).ok()?;
        (idx < self.niov_count()).then_some(idx)
    }

    /// The `net_iov` at dma-buf offset `virt`.
    pub fn net_iov_at(&self, virt: usize) -> Option<&NetIov> {
        // `niovs` holds the layout's `net_iov`s in the order of their
        // offsets, each `1 << shift` bytes: the one at `virt` is number
        // `virt >> shift`, if there is one.
        self.niovs.get(virt >> self.layout.shift())
    }

    /// The `net_iov` at dma-buf offset `virt` of a TX binding, whose
    /// `net_iov`s are pages: `None` past the end of the dma-buf or of its
    /// mapping. The send path's per-page lookup (`net_devmem_get_niov_at`),
    /// one constant shift and one bounds check: the mapping of a TX
    /// binding is no larger than the dma-buf ([`Binding::bind`]). In an RX
    /// binding whose `net_iov`s are not pages, another of its `net_iov`s,
    /// or `None`.
    pub fn tx_net_iov_at(&self, virt: usize) -> Option<&NetIov> {
        self.niovs.get(virt >> PAGE_SHIFT)
    }

    /// The dma-buf offset of a `net_iov` of this binding.
    pub fn virtual_addr(&self, niov: &NetIov) -> Option<usize> {
        self.index_of(niov).map(|i| self.layout.virtual_addr(i))
    }

    /// log2 of the size of a `net_iov`.
    pub fn niov_shift(&self) -> u32 {
        self.layout.shift()
    }

    /// The bound dma-buf.
    pub fn dma_buf(&self) -> &DmaBuf {
        &self.buf
    }

    /// Takes a free `net_iov`, or `None` when all are in use.
    pub fn alloc(&self) -> Option<&NetIov> {
        self.free.pop().and_then(|i| self.net_iov(i))
    }

    /// Puts back a `net_iov` taken with [`Binding::alloc`]. A `net_iov` of
    /// another binding, or one that is free already, is refused with a
    /// warning.
    pub fn free(&self, niov: &NetIov) {
        match self.index_of(niov) {
            Some(i) => self.free.push(i),
            None => pr_warn_once!("net_iov freed to the wrong binding\n"),
        }
    }

    /// Takes a reference that is not tied to a [`BindingRef`], for a holder
    /// that lives in C (a page pool); `false` if the binding is gone.
    pub fn get_raw(&self) -> bool {
        self.refs.tryget().map(PercpuRefGuard::into_raw).is_some()
    }

    /// Drops a reference taken with [`Binding::get_raw`].
    ///
    /// # Safety
    ///
    /// The caller holds such a reference, and does not use the binding
    /// after this call unless it holds another.
    pub unsafe fn put_raw(&self) {
        // SAFETY: the caller gives up a reference taken by `get_raw`, which
        // no guard holds.
        unsafe { self.refs.put() };
    }

    /// Takes a reference unless the binding is gone (`percpu_ref_tryget`).
    pub fn tryget(&self) -> Option<BindingRef> {
        self.refs.tryget()?.into_raw();
        // INVARIANT: the new `BindingRef` holds the reference the guard
        // gave up.
        Some(BindingRef(NonNull::from(self)))
    }
}

// SAFETY: `release` only queues the binding's own work item, which waits
// for an RCU grace period before freeing: `release` always runs inside the
// RCU read-side section of `percpu_ref_put_many`, so it has returned by
// then.
unsafe impl Release for Binding {
    fn release(this: &PercpuRef<Self>) {
        let ptr = core::ptr::from_ref(this);
        // SAFETY: every `PercpuRef<Binding>` is the `refs` field of a
        // binding made by `Binding::bind`.
        let binding = unsafe { kernel::container_of!(ptr, Binding, refs) };
        // SAFETY: `Binding::bind` leaked this box; the count reached zero
        // once, so this is the only place that takes it back.
        let boxed = unsafe { Pin::new_unchecked(KBox::from_raw(binding.cast_mut())) };
        workqueue::system().enqueue(boxed);
    }
}

impl WorkItem for Binding {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        // Wait for `release`, which queued us, to have returned.
        rcu::synchronize_rcu();
        let listed = this.bound.lock().listed;
        if listed {
            let me: *const Self = &*this;
            TX_BINDINGS
                .lock()
                .0
                .retain(|b| !core::ptr::eq(b.as_ptr(), me));
        }
        // Unmaps, detaches and drops the dma-buf, then frees everything.
        drop(this);
    }
}

/// The owner's reference to a binding: dropping it starts the teardown
/// (`percpu_ref_kill`), which finishes when the last [`BindingRef`] goes.
///
/// The initial reference of the count, held like any [`BindingRef`] but
/// given up by killing the count instead of a put.
///
/// # Invariants
///
/// The inner [`BindingRef`] holds the initial reference of the binding's
/// count, which only the handle's drop gives up, and never drops.
pub struct Handle(ManuallyDrop<BindingRef>);

impl Handle {
    /// Records the device the binding is for, and the virtual device a TX
    /// binding was requested on; before the binding is published. A TX
    /// binding is listed for [`forget_device`], which needs memory.
    ///
    /// The caller holds the instance lock of `dev`, which is registered:
    /// its unregistration, and the notification of it, come after.
    pub fn set_netdev(&mut self, dev: &NetDevice, vdev: Option<&NetDevice>) -> Result {
        let vdev = vdev.map_or(core::ptr::null_mut(), |v| ptr::from_ref(v).cast_mut());
        let dev = ptr::from_ref(dev).cast_mut();
        if !self.is_tx() {
            // INVARIANT: nothing is installed yet; the caller installs
            // queues of `dev` only through this binding's provider, whose
            // `uninstall` clears `dev`.
            self.dev.store(dev, Relaxed);
            self.vdev.store(vdev, Relaxed);
            return Ok(());
        }
        let me = NonNull::from(&**self);
        let mut list = TX_BINDINGS.lock();
        let mut bound = self.bound.lock();
        if !bound.listed {
            list.0.push(me, GFP_KERNEL)?;
            bound.listed = true;
        }
        // INVARIANT: a TX binding installs nothing, and it is listed for
        // `forget_device` to clear `dev` when the device goes.
        self.dev.store(dev, Relaxed);
        self.vdev.store(vdev, Relaxed);
        Ok(())
    }

    /// Gives up the handle to a C owner: the binding keeps its initial
    /// reference until [`Handle::from_raw`] takes it back.
    pub fn into_raw(self) -> NonNull<Binding> {
        let me = ManuallyDrop::new(self);
        (me.0).0
    }

    /// The handle given up by [`Handle::into_raw`].
    ///
    /// # Safety
    ///
    /// `ptr` came from [`Handle::into_raw`] and is taken back once.
    pub unsafe fn from_raw(ptr: NonNull<Binding>) -> Self {
        // INVARIANT: the initial reference came back with the pointer.
        Self(ManuallyDrop::new(BindingRef(ptr)))
    }
}

impl core::ops::Deref for Handle {
    type Target = Binding;

    fn deref(&self) -> &Binding {
        &self.0
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Kill drops the initial reference; the inner `BindingRef` is not
        // dropped, so it puts nothing.
        // SAFETY: the handle owns the initial reference (invariant), which
        // no guard holds, and gives it up here, once: a handle is dropped
        // once, and one given up by `into_raw` not until `from_raw` takes
        // it back. The binding is freed only after `Release::release` ran.
        unsafe { self.refs.kill() };
    }
}

/// A counted reference to a binding, as page pools and frags hold one.
///
/// # Invariants
///
/// Points to a binding and holds one reference to it.
pub struct BindingRef(NonNull<Binding>);

// SAFETY: references may be dropped on any thread.
unsafe impl Send for BindingRef {}

// SAFETY: `&BindingRef` only gives `&Binding`, which is `Sync`.
unsafe impl Sync for BindingRef {}

impl BindingRef {
    /// Gives the reference to C, which drops it with `percpu_ref_put` on
    /// the binding's count.
    pub fn into_raw(self) -> NonNull<Binding> {
        ManuallyDrop::new(self).0
    }
}

impl core::ops::Deref for BindingRef {
    type Target = Binding;

    fn deref(&self) -> &Binding {
        // SAFETY: alive while the reference is held (invariant).
        unsafe { self.0.as_ref() }
    }
}

impl Drop for BindingRef {
    fn drop(&mut self) {
        // SAFETY: the binding is alive until this put, and the reference
        // it drops is the one this `BindingRef` holds (invariant), which no
        // guard holds and which it gives up here, once.
        unsafe { self.0.as_ref().refs.put() };
    }
}

// SAFETY: `into_foreign` gives the binding's address, which is not null and
// aligned as a `Binding` is, with the reference: `from_foreign` takes both
// back. `borrow` and `borrow_mut` give `&Binding`, as `&BindingRef` does,
// valid while the reference is held, and the caller keeps it held (not
// passed to `from_foreign`) for their lifetime.
unsafe impl ForeignOwnable for BindingRef {
    const FOREIGN_ALIGN: usize = core::mem::align_of::<Binding>();
    type Borrowed<'a> = &'a Binding;
    type BorrowedMut<'a> = &'a Binding;

    fn into_foreign(self) -> *mut c_void {
        self.into_raw().as_ptr().cast()
    }

    unsafe fn from_foreign(ptr: *mut c_void) -> Self {
        // INVARIANT: the reference `into_foreign` gave up comes back.
        // SAFETY: `ptr` came from `into_foreign`, which does not return
        // null.
        Self(unsafe { NonNull::new_unchecked(ptr.cast()) })
    }

    unsafe fn borrow<'a>(ptr: *mut c_void) -> &'a Binding {
        // SAFETY: `ptr` came from `into_foreign`: it points to a binding
        // alive while the reference it carries is held, for `'a` at least
        // (per the caller).
        unsafe { &*ptr.cast::<Binding>() }
    }

    unsafe fn borrow_mut<'a>(ptr: *mut c_void) -> &'a Binding {
        // SAFETY: as for `borrow`, whose contract `borrow_mut`'s includes.
        unsafe { Self::borrow(ptr) }
    }
}

// SAFETY: a `BindingRef` gives only `&Binding`, borrowed or owned, and
// `Binding` is `Sync`. A binding is freed only by its work item
// (`WorkItem::run`), which `Release::release` queues when the last
// reference goes, and which waits for an RCU grace period before it frees
// anything. A `BindingRef` taken back from an array is one of the
// references, so the last one goes at the earliest when it is dropped,
// and the grace period the work item waits for starts after that: it
// waits for every RCU read-side critical section that began before the
// `BindingRef` was taken back. Until then, what `&Binding` reaches stays
// allocated; fields change only through their own locks and atomics.
unsafe impl RcuForeignOwnable for BindingRef {}

/// The TX bindings made for a device ([`Handle::set_netdev`]), until they
/// are freed.
struct TxBindings(KVec<NonNull<Binding>>);

// SAFETY: the pointers are to bindings, which are `Sync`; they are only
// used under the lock, and a binding is taken off the list under it before
// it is freed (`WorkItem::run`).
unsafe impl Send for TxBindings {}

global_lock! {
    // SAFETY: initialised by `init`, from the core's module init, before a
    // binding can be made for a device.
    unsafe(uninit) static TX_BINDINGS: Mutex<TxBindings> = TxBindings(KVec::new());
}

/// Initialises the list of TX bindings.
///
/// # Safety
///
/// Called once, before [`Handle::set_netdev`] or [`forget_device`].
pub unsafe fn init() {
    // SAFETY: per the caller.
    unsafe { TX_BINDINGS.init() };
}

/// Makes every TX binding forget `dev`, which is being unregistered (see
/// the module's documentation). RX bindings learned it already: the core
/// uninstalled the device's memory providers before.
///
/// The device is closed: nothing transmits from the mappings. Each is
/// dropped (unmapped and detached, under the dma-buf's reservation lock)
/// with no lock of ours held, so the list is walked again after each: a
/// binding that forgot the device does not match it any more.
pub fn forget_device(dev: &NetDevice) {
    loop {
        let mut mapping = None;
        {
            let list = TX_BINDINGS.lock();
            for b in &list.0 {
                // SAFETY: a listed binding is alive until it is taken off
                // the list, under the lock held here.
                mapping = unsafe { b.as_ref() }.forget_tx_device(ptr::from_ref(dev).cast_mut());
                if mapping.is_some() {
                    break;
                }
            }
        }
        match mapping {
            // A `Mapping` holds its attachment and dma-buf, not the
            // binding, which may be freed meanwhile.
            Some(m) => drop(m),
            None => break,
        }
    }
}

/// The core's netdevice notifier: TX bindings forget a device that goes.
pub struct TxDevices;

impl DeviceEvents for TxDevices {
    fn unregister(&self, dev: &NetDevice) {
        forget_device(dev);
    }
}

/// Waits (up to a second) for every mapping of `buf` to go: a binding's
/// last reference frees it from a work item, after an RCU grace period.
/// For tests.
#[cfg(CONFIG_KUNIT)]
pub(crate) fn wait_unmapped(buf: &DmaBuf) -> bool {
    use kernel::{
        dma_buf::test_exporter,
        time::{
            delay::fsleep,
            Delta, //
        },
    };

    for _ in 0..100 {
        if test_exporter::live_maps(buf) == 0 {
            return true;
        }
        fsleep(Delta::from_millis(10));
    }
    false
}

#[kunit_tests(devmem_rs_binding)]
mod tests {
    use super::*;
    use kernel::{
        device::Bound,
        dma_buf::test_exporter,
        faux,
        time::{
            delay::fsleep,
            Delta, //
        },
    };

    // CAST: a page fits a u32 segment length.
    const PAGE: u32 = PAGE_SIZE as u32;

    fn with_device<R>(f: impl FnOnce(&Device<Bound>) -> R) -> Result<R> {
        let reg = faux::Registration::new(c"devmem-rs-test", None)?;
        let fdev: &faux::Device<Bound> = reg.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        Ok(f(dev))
    }

    #[test]
    fn binds_and_numbers_net_iovs() -> Result {
        let segs: [(DmaAddress, u32); 2] = [(0x10_0000, 2 * PAGE), (0x80_0000, PAGE)];
        let buf = test_exporter::export(3 * PAGE_SIZE, &segs)?;
        let ok = with_device(|dev| -> Result {
            let b =
                Binding::bind(&buf, dev, DataDirection::FromDevice, 12).map_err(|e| e.errno())?;
            assert_eq!(b.niov_count(), 3);
            let n2 = b.net_iov(2).ok_or(EINVAL)?;
            assert_eq!(n2.dma_addr(), 0x80_0000);
            assert_eq!(n2.index(), Some(0));
            assert_eq!(b.virtual_addr(n2), Some(2 * PAGE_SIZE));
            // SAFETY: `n2` is a `net_iov` of the live binding `b`.
            let owner = unsafe { Binding::of_net_iov(n2) };
            assert!(core::ptr::eq(owner, &*b));
            assert!(core::ptr::eq(
                b.net_iov_at(2 * PAGE_SIZE + 100).ok_or(EINVAL)?,
                n2
            ));
            assert!(core::ptr::eq(
                b.net_iov_at(3 * PAGE_SIZE - 1).ok_or(EINVAL)?,
                n2
            ));
            assert!(core::ptr::eq(
                b.net_iov_at(PAGE_SIZE - 1).ok_or(EINVAL)?,
                b.net_iov(0).ok_or(EINVAL)?
            ));
            assert!(b.net_iov_at(3 * PAGE_SIZE).is_none());
            assert!(b.net_iov_at(usize::MAX).is_none());
            Ok(())
        })?;
        ok?;
        assert!(wait_unmapped(&buf));
        Ok(())
    }

    #[test]
    fn allocates_every_net_iov_once() -> Result {
        let buf = test_exporter::export(4 * PAGE_SIZE, &[(0x10_0000, 4 * PAGE)])?;
        let ok = with_device(|dev| -> Result {
            let b =
                Binding::bind(&buf, dev, DataDirection::FromDevice, 12).map_err(|e| e.errno())?;
            let mut got = KVec::new();
            while let Some(n) = b.alloc() {
                got.push(b.index_of(n).ok_or(EINVAL)?, GFP_KERNEL)?;
            }
            assert_eq!(&got[..], &[0, 1, 2, 3]);
            b.free(b.net_iov(2).ok_or(EINVAL)?);
            assert_eq!(b.alloc().and_then(|n| b.index_of(n)), Some(2));
            assert!(b.alloc().is_none());
            Ok(())
        })?;
        ok?;
        assert!(wait_unmapped(&buf));
        Ok(())
    }

    #[test]
    fn double_free_hands_the_net_iov_out_once() -> Result {
        let buf = test_exporter::export(3 * PAGE_SIZE, &[(0x10_0000, 3 * PAGE)])?;
        let ok = with_device(|dev| -> Result {
            let b =
                Binding::bind(&buf, dev, DataDirection::FromDevice, 12).map_err(|e| e.errno())?;
            let n = b.alloc().ok_or(EINVAL)?;
            b.free(n);
            // Refused with a warning; C's gen_pool_free() hits a BUG_ON.
            b.free(n);
            // At most twice the count: a free list with a cycle would hand
            // the same `net_iov` out forever.
            let mut got = KVec::new();
            while got.len() < 6 {
                let Some(n) = b.alloc() else { break };
                got.push(b.index_of(n).ok_or(EINVAL)?, GFP_KERNEL)?;
            }
            assert_eq!(&got[..], &[0, 1, 2]);
            Ok(())
        })?;
        ok?;
        assert!(wait_unmapped(&buf));
        Ok(())
    }

    #[cfg(CONFIG_64BIT)]
    #[test]
    fn more_net_iovs_than_the_free_list_numbers_is_e2big() -> Result {
        const NIOV: u32 = 1 << 12;
        // The most 4 KiB `net_iov`s a segment's 32-bit length holds.
        const PER_SEG: u32 = u32::MAX / NIOV;
        // One more `net_iov` than a free list numbers (128 GiB), in 33
        // segments at distinct DMA addresses: few enough for the test
        // exporter's one-page scatterlist.
        let want = crate::freelist::MAX_ENTRIES + 1;
        let mut segs = KVec::new();
        let mut left = want;
        let mut addr: DmaAddress = 0;
        while left > 0 {
            let n = left.min(PER_SEG);
            segs.push((addr, n * NIOV), GFP_KERNEL)?;
            addr += 1 << 32;
            left -= n;
        }
        let buf = test_exporter::export(usize::try_from(want)? << 12, &segs)?;
        let err = with_device(|dev| Binding::bind(&buf, dev, DataDirection::FromDevice, 12).err())?;
        // Refused while carving, before the `net_iov` array (which
        // `kvmalloc` would refuse anyway, beyond `INT_MAX` bytes) is
        // allocated, with the errno of any binding too large to number.
        let e = err.ok_or(EINVAL)?;
        assert!(matches!(e, BindError::Carve(CarveError::TooLarge)));
        assert_eq!(e.errno(), E2BIG);
        assert_eq!(test_exporter::live_maps(&buf), 0);
        Ok(())
    }

    #[test]
    fn misaligned_segment_is_refused_and_unmapped() -> Result {
        let buf = test_exporter::export(2 * PAGE_SIZE, &[(0x10_0800, 2 * PAGE)])?;
        let err = with_device(|dev| Binding::bind(&buf, dev, DataDirection::FromDevice, 12).err())?;
        match err {
            Some(BindError::Carve(e)) => assert_eq!(Error::from(e), EINVAL),
            _ => return Err(EINVAL),
        }
        // Nothing stays mapped after a failed bind.
        assert_eq!(test_exporter::live_maps(&buf), 0);
        Ok(())
    }

    #[test]
    fn tx_size_must_be_page_multiple() -> Result {
        let buf = test_exporter::export(PAGE_SIZE + 1, &[(0x10_0000, PAGE)])?;
        let err = with_device(|dev| Binding::bind(&buf, dev, DataDirection::ToDevice, 12).err())?;
        let e = err.ok_or(EINVAL)?;
        assert_eq!(e.errno(), EINVAL);
        assert_eq!(
            e.message().map(|m| m.to_bytes()),
            Some(&b"TX dma-buf size must be a multiple of PAGE_SIZE"[..])
        );
        assert_eq!(test_exporter::live_maps(&buf), 0);
        Ok(())
    }

    #[test]
    fn tx_mapping_must_fit_the_buffer() -> Result {
        // Two pages whose mapping has three: a send could look up a page
        // past the buffer's end. RX carves what is mapped.
        // CAST: PAGE_SHIFT is small.
        let shift = PAGE_SHIFT as u32;
        let buf = test_exporter::export(2 * PAGE_SIZE, &[(0x10_0000, 3 * PAGE)])?;
        let err =
            with_device(|dev| Binding::bind(&buf, dev, DataDirection::ToDevice, shift).err())?;
        let e = err.ok_or(EINVAL)?;
        assert_eq!(e.errno(), EINVAL);
        assert_eq!(
            e.message().map(|m| m.to_bytes()),
            Some(&b"TX dma-buf mapping is larger than the dma-buf"[..])
        );
        assert_eq!(test_exporter::live_maps(&buf), 0);
        let ok = with_device(|dev| -> Result {
            let b = Binding::bind(&buf, dev, DataDirection::FromDevice, shift)
                .map_err(|e| e.errno())?;
            assert_eq!(b.niov_count(), 3);
            Ok(())
        })?;
        ok?;
        assert!(wait_unmapped(&buf));
        // A TX binding's `net_iov`s are pages, whatever shift it is given.
        let fits = test_exporter::export(2 * PAGE_SIZE, &[(0x10_0000, 2 * PAGE)])?;
        let ok = with_device(|dev| -> Result {
            let b = Binding::bind(&fits, dev, DataDirection::ToDevice, shift + 1)
                .map_err(|e| e.errno())?;
            assert_eq!((b.niov_count(), b.niov_shift()), (2, shift));
            Ok(())
        })?;
        ok?;
        assert!(wait_unmapped(&fits));
        Ok(())
    }

    #[test]
    fn unmaps_in_the_direction_it_mapped() -> Result {
        // The C core once unmapped every binding with `DMA_FROM_DEVICE`,
        // wrong for TX: check both directions, on release and on a failed
        // bind.
        for dir in [DataDirection::FromDevice, DataDirection::ToDevice] {
            let buf = test_exporter::export(2 * PAGE_SIZE, &[(0x10_0000, 2 * PAGE)])?;
            let ok = with_device(|dev| -> Result {
                let b = Binding::bind(&buf, dev, dir, 12).map_err(|e| e.errno())?;
                assert_eq!(b.is_tx(), dir == DataDirection::ToDevice);
                Ok(())
            })?;
            ok?;
            assert!(wait_unmapped(&buf));
            let seen = test_exporter::seen(&buf);
            assert_eq!((seen.maps, seen.unmaps, seen.wrong_direction), (1, 1, 0));
            assert_eq!(seen.last_map, Some(dir));
            assert_eq!(seen.last_unmap, Some(dir));

            // Refused after mapping (a misaligned segment): unmapped at
            // once, in the same direction.
            let bad = test_exporter::export(2 * PAGE_SIZE, &[(0x10_0800, 2 * PAGE)])?;
            let err = with_device(|dev| Binding::bind(&bad, dev, dir, 12).err())?;
            assert!(matches!(err, Some(BindError::Carve(_))));
            let seen = test_exporter::seen(&bad);
            assert_eq!((seen.maps, seen.unmaps, seen.wrong_direction), (1, 1, 0));
            assert_eq!(seen.last_unmap, Some(dir));
        }
        Ok(())
    }

    #[test]
    fn last_reference_frees_everything() -> Result {
        let buf = test_exporter::export(PAGE_SIZE, &[(0x10_0000, PAGE)])?;
        let ok = with_device(|dev| -> Result {
            let b =
                Binding::bind(&buf, dev, DataDirection::FromDevice, 12).map_err(|e| e.errno())?;
            let r = b.tryget().ok_or(EINVAL)?;
            // The owner lets go; a page pool still holds the binding.
            drop(b);
            fsleep(Delta::from_millis(50));
            assert_eq!(test_exporter::live_maps(&buf), 1);
            assert_eq!(r.niov_count(), 1);
            drop(r);
            Ok(())
        })?;
        ok?;
        assert!(wait_unmapped(&buf));
        Ok(())
    }
}
