// SPDX-License-Identifier: GPL-2.0

//! Network devices seen from the core: looking one up, its instance lock,
//! its receive queues, and hearing when one goes ([`DeviceNotifier`]).
//!
//! A [`NetDevice`] is only ever borrowed: from a [`Locked`] guard, which
//! holds the device's instance lock (`netdev_lock`), or through an
//! [`ARef`](crate::sync::aref::ARef) taken with `dev_hold`. Queue
//! configuration (DMA devices of queues, memory providers in
//! [`super::page_pool`]) needs the lock, so it lives on [`Locked`].
//!
//! C headers: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h),
//! [`include/linux/notifier.h`](srctree/include/linux/notifier.h),
//! [`include/net/netdev_lock.h`](srctree/include/net/netdev_lock.h),
//! [`include/net/netdev_rx_queue.h`](srctree/include/net/netdev_rx_queue.h),
//! [`include/uapi/linux/netdev.h`](srctree/include/uapi/linux/netdev.h)

use crate::{
    device::{
        Bound,
        Device, //
    },
    error::to_result,
    ffi::{
        c_int,
        c_ulong,
        c_void, //
    },
    net::netlink::request::Info,
    prelude::*,
    sync::{
        aref::AlwaysRefCounted,
        atomic::{
            Atomic,
            Relaxed, //
        },
    },
    task::Task,
    types::Opaque,
    workqueue::{
        self,
        impl_has_work,
        new_work,
        Work,
        WorkItem, //
    },
};
use core::{
    marker::{
        PhantomData,
        PhantomPinned, //
    },
    ptr::NonNull,
};

/// A network namespace.
#[repr(transparent)]
pub struct Namespace(Opaque<bindings::net>);

impl Namespace {
    /// The namespace at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a live namespace that stays alive for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net) -> &'a Self {
        // SAFETY: `Self` is transparent over `struct net`; live per the
        // caller.
        unsafe { &*ptr.cast() }
    }

    /// The namespace a generic netlink request was sent in.
    pub fn of_request<'a>(info: &Info<'a>) -> &'a Self {
        // SAFETY: the genetlink core sets the request's namespace, which
        // outlives the request.
        unsafe { Self::from_raw(bindings::genl_info_net(info.as_raw())) }
    }

    /// The C `struct net`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::net {
        self.0.get()
    }
}

/// How a device transmits from `net_iov`s (`enum netmem_tx_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetmemTx {
    /// Not at all.
    None,
    /// The device DMAs from them.
    Dma,
    /// A virtual device: a device it leases queues from does the DMA.
    NoDma,
}

/// Which side of a device a queue is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueType {
    /// A receive queue.
    Rx,
    /// A transmit queue.
    Tx,
}

impl QueueType {
    fn as_raw(self) -> bindings::netdev_queue_type {
        match self {
            Self::Rx => bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_RX,
            Self::Tx => bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_TX,
        }
    }

    /// The queue type a netlink request names (`enum netdev_queue_type`),
    /// if it is one.
    pub fn from_nl(raw: u32) -> Option<Self> {
        match raw {
            bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_RX => Some(Self::Rx),
            bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_TX => Some(Self::Tx),
            _ => None,
        }
    }
}

/// A network device (`struct net_device`).
///
/// # Invariants
///
/// A `&NetDevice` points to a registered device, or one being registered or
/// unregistered, that stays allocated while the reference lives.
#[repr(transparent)]
pub struct NetDevice(Opaque<bindings::net_device>);

// SAFETY: a net_device may be used from any thread; what needs the
// instance lock is on `Locked`.
unsafe impl Send for NetDevice {}

// SAFETY: as above: the methods on `&NetDevice` read fields that are
// written once at setup or read locklessly in C too.
unsafe impl Sync for NetDevice {}

// SAFETY: `dev_hold` and `dev_put` count references that keep the device
// allocated.
unsafe impl AlwaysRefCounted for NetDevice {
    fn inc_ref(&self) {
        // SAFETY: the device is alive, by the type invariant.
        unsafe { bindings::dev_hold(self.as_raw()) }
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller gives up a reference taken by `inc_ref`.
        unsafe { bindings::dev_put(obj.as_ptr().cast()) }
    }
}

impl NetDevice {
    /// The device at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a device that stays allocated for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: `Self` is transparent over `struct net_device`; alive per
        // the caller.
        unsafe { &*ptr.cast() }
    }

    /// The C `struct net_device`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The interface index.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: the device is alive, by the type invariant. A read of the
        // one field, which is set before registration: no reference to the
        // whole `net_device`, whose other fields C writes meanwhile.
        unsafe { (*self.as_raw()).ifindex }
    }

    /// Whether the device is present (`netif_device_present`): not
    /// detached by its driver, for suspend or removal.
    pub fn is_present(&self) -> bool {
        // SAFETY: the device is alive, by the type invariant.
        unsafe { bindings::netif_device_present(self.as_raw()) }
    }

    /// Whether the device is registered and staying: not being
    /// unregistered, nor moved to another namespace. Both change under the
    /// instance lock, so the answer holds while a [`Locked`] guard lives.
    pub fn is_registered(&self) -> bool {
        // SAFETY: the device is alive, by the type invariant; both fields
        // are written under the instance lock (`WRITE_ONCE` for the
        // state), and these are their lockless reading twins.
        let (state, moving) = unsafe {
            (
                core::ptr::read_volatile(&raw const (*self.as_raw()).reg_state),
                core::ptr::read_volatile(&raw const (*self.as_raw()).moving_ns),
            )
        };
        u32::from(state) == bindings::netdev_reg_state_NETREG_REGISTERED && !moving
    }

    /// Whether the device is being unregistered, or was
    /// (`NETREG_UNREGISTERING` or `NETREG_UNREGISTERED`).
    fn is_going(&self) -> bool {
        // SAFETY: as in `is_registered`.
        let state = unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).reg_state) };
        matches!(
            u32::from(state),
            bindings::netdev_reg_state_NETREG_UNREGISTERING
                | bindings::netdev_reg_state_NETREG_UNREGISTERED
        )
    }

    /// Whether the core takes the instance lock around the device's ops
    /// (`netdev_need_ops_lock`): true for devices with the queue API.
    pub fn need_ops_lock(&self) -> bool {
        // SAFETY: the device is alive, by the type invariant.
        unsafe { bindings::netdev_need_ops_lock(self.as_raw()) }
    }

    /// The MTU: the largest payload of a frame, without the link-layer
    /// header. It may change under RTNL while it is read.
    #[inline]
    pub fn mtu(&self) -> u32 {
        // SAFETY: the device is alive, by the type invariant; writers use
        // `WRITE_ONCE`, and this is its reading twin.
        unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).mtu) }
    }

    /// The number of receive queues in use.
    #[inline]
    pub fn real_num_rx_queues(&self) -> u32 {
        // SAFETY: the device is alive, by the type invariant; the field
        // alone is read, as C reads it.
        unsafe { (*self.as_raw()).real_num_rx_queues }
    }

    /// Receive queue `idx` of those allocated with the device
    /// (`num_rx_queues`), in use or not, without the instance lock: the
    /// queues live as long as the device. What a queue holds (its provider,
    /// its lease) may change meanwhile; [`Locked::rx_queue`] gives only
    /// queues in use, under the lock.
    pub fn rx_queue_unlocked(&self, idx: u32) -> Option<&RxQueue> {
        // SAFETY: the device is alive, by the type invariant; the field is
        // set when the device is allocated and never changes.
        if idx >= unsafe { (*self.as_raw()).num_rx_queues } {
            return None;
        }
        // CAST: u32 to usize is lossless on Linux.
        // SAFETY: `_rx` has `num_rx_queues` entries, allocated with the
        // device, which live as long as it does.
        let rxq = unsafe { (*self.as_raw())._rx.add(idx as usize) };
        // SAFETY: as above.
        Some(unsafe { RxQueue::from_raw(rxq) })
    }

    /// How the device transmits from `net_iov`s.
    pub fn netmem_tx(&self) -> NetmemTx {
        // CAST: a two-bit field.
        // SAFETY: the device is alive, by the type invariant. The field
        // sits in a `struct_group` (a union of two views of the same
        // fields), initialised with the device; it is read through a raw
        // place, without a reference to the group or the device.
        let mode = unsafe {
            bindings::net_device__bindgen_ty_1__bindgen_ty_1::netmem_tx_raw(
                &raw const (*self.as_raw()).__bindgen_anon_1.__bindgen_anon_1,
            )
        };
        match mode as bindings::netmem_tx_mode {
            bindings::netmem_tx_mode_NETMEM_TX_DMA => NetmemTx::Dma,
            bindings::netmem_tx_mode_NETMEM_TX_NO_DMA => NetmemTx::NoDma,
            _ => NetmemTx::None,
        }
    }

    /// Takes the instance lock (`netdev_lock`); `EDEADLK` if this thread
    /// holds it already (a callback the core runs under it, such as a
    /// [`LockedDevice`](super::driver::LockedDevice)'s, whose device this
    /// derefs to). Sleeps.
    pub fn lock(&self) -> Result<Locked<'_>> {
        if self.lock_held_by_current() {
            return Err(EDEADLK);
        }
        // SAFETY: the device is alive, by the type invariant; this thread
        // does not hold its lock.
        unsafe { bindings::netdev_lock(self.as_raw()) };
        // INVARIANT: locked just above.
        Ok(Locked {
            dev: NonNull::from(self),
            _dev: PhantomData,
        })
    }

    /// Whether this thread holds the instance lock. Exact for this thread:
    /// only it makes itself the lock's owner, or stops being it.
    pub(crate) fn lock_held_by_current(&self) -> bool {
        // SAFETY: the device is alive, by the type invariant.
        unsafe { lock_held_by_current(self.as_raw()) }
    }
}

/// Whether this thread holds the instance lock of `dev`.
///
/// Never inlined: its C helper reads the lock's owner with
/// `mutex_get_owner`, which the kernel does not export, so the call stays
/// in this crate, built in, even where the helpers are inlined into the
/// Rust code (`CONFIG_RUST_INLINE_HELPERS`) of a module that calls this
/// from generic code.
///
/// # Safety
///
/// `dev` points to a live `net_device`.
#[inline(never)]
pub(crate) unsafe fn lock_held_by_current(dev: *mut bindings::net_device) -> bool {
    // SAFETY: the caller's guarantee.
    unsafe { bindings::netdev_lock_held_by_current(dev) }
}

/// A device whose instance lock is held; unlocks on drop.
///
/// # Invariants
///
/// `dev` points to a device whose instance lock this guard holds, which
/// keeps it from being freed.
pub struct Locked<'a> {
    dev: NonNull<NetDevice>,
    _dev: PhantomData<&'a NetDevice>,
}

impl Locked<'static> {
    /// The device with index `ifindex` in `net`, locked, unless it is
    /// unknown, unregistering or moving between namespaces
    /// (`netdev_get_by_index_lock`).
    ///
    /// The lock alone keeps the device alive: unregistering it takes the
    /// lock first.
    pub fn by_index(net: &Namespace, ifindex: i32) -> Option<Self> {
        // SAFETY: `net` is a live namespace.
        let dev = unsafe { bindings::netdev_get_by_index_lock(net.as_raw(), ifindex) };
        // INVARIANT: a non-null result is locked and registered.
        NonNull::new(dev.cast()).map(|dev| Locked {
            dev,
            _dev: PhantomData,
        })
    }
}

impl core::ops::Deref for Locked<'_> {
    type Target = NetDevice;

    fn deref(&self) -> &NetDevice {
        // SAFETY: alive while the lock is held, by the type invariant.
        unsafe { self.dev.as_ref() }
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: this guard holds the lock, by the type invariant.
        unsafe { bindings::netdev_unlock(self.as_raw()) }
    }
}

impl Locked<'_> {
    /// Receive queue `idx`, if below `real_num_rx_queues`.
    pub fn rx_queue(&self, idx: u32) -> Option<&RxQueue> {
        if idx >= self.real_num_rx_queues() {
            return None;
        }
        // CAST: u32 to usize is lossless on Linux.
        // SAFETY: `_rx` has `num_rx_queues >= real_num_rx_queues` entries,
        // which live as long as the device.
        let rxq = unsafe { (*self.as_raw())._rx.add(idx as usize) };
        // SAFETY: as above.
        Some(unsafe { RxQueue::from_raw(rxq) })
    }

    /// The queue of another device that receive queue `idx` (below
    /// `real_num_rx_queues`) is leased to or from (`rxq->lease`). Only
    /// here, under this device's instance lock: a lease is made and torn
    /// down under the instance locks of both devices, so the queue and
    /// its device stay while the guard lives. Through a queue reached
    /// without the lock, a lease could go, and its device with it:
    ///
    /// ```ignore,compile_fail,E0599
    /// use kernel::net::netdev::{
    ///     Locked,
    ///     NetDevice, //
    /// };
    ///
    /// fn leased(_dev: &NetDevice, locked: &Locked<'_>) -> bool {
    ///     _dev.rx_queue_unlocked(0).and_then(|q| q.lease()).is_some() // misuse
    /// #   // twin: locked.rx_lease(0).is_some()
    /// }
    /// ```
    pub fn rx_lease(&self, idx: u32) -> Option<&RxQueue> {
        let rxq = self.rx_queue(idx)?;
        // SAFETY: a live queue; the field is a pointer read once.
        let lease = unsafe { core::ptr::addr_of!((*rxq.as_raw()).lease).read_volatile() };
        // SAFETY: a lease points to a queue of a live device, which stays
        // leased, and so alive, while this device's instance lock is held
        // (see above).
        (!lease.is_null()).then(|| unsafe { RxQueue::from_raw(lease) })
    }

    /// The device that does DMA for queue `idx` (`netdev_queue_get_dma_dev`):
    /// the driver's choice or the parent device, `None` without a DMA mask
    /// or once the device is no longer registered. A leased receive queue
    /// answers for the device it is leased from.
    ///
    /// The DMA device is bound to its driver while the guard lives, so it
    /// may be attached to dma-bufs and mapped for: a driver unregisters its
    /// network devices before it unbinds (in `remove`, or by devres), and
    /// neither this device nor the one it leases the queue from can finish
    /// unregistering meanwhile. This one needs the instance lock to leave
    /// `NETREG_REGISTERED`; the other holds a reference for the lease
    /// (`netdev_rx_queue_lease`) that its unregistration waits for, and
    /// that is only given up under this device's lock too.
    pub fn queue_dma_dev(&self, idx: u32, kind: QueueType) -> Option<&Device<Bound>> {
        if !self.is_registered() {
            return None;
        }
        // SAFETY: the device is locked, as the function requires.
        let dev = unsafe { bindings::netdev_queue_get_dma_dev(self.as_raw(), idx, kind.as_raw()) };
        if dev.is_null() {
            return None;
        }
        // SAFETY: the DMA device is the parent (or the driver's choice, a
        // device it keeps bound as long as the network device is
        // registered) of this device or of the one leasing it the queue.
        // Both stay registered, which keeps their parents referenced and
        // bound, while the lock is held (see above), and the result
        // borrows the guard.
        Some(unsafe { Device::<Bound>::from_raw(dev) })
    }
}

/// A receive queue of a device (`struct netdev_rx_queue`).
///
/// # Invariants
///
/// A `&RxQueue` points into the `_rx` array of a live device.
#[repr(transparent)]
pub struct RxQueue(Opaque<bindings::netdev_rx_queue>);

impl RxQueue {
    /// The queue at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points into the queue array of a device that stays alive for
    /// `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::netdev_rx_queue) -> &'a Self {
        // SAFETY: `Self` is transparent over the C struct; alive per the
        // caller.
        unsafe { &*ptr.cast() }
    }

    /// The C `struct netdev_rx_queue`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::netdev_rx_queue {
        self.0.get()
    }

    /// The device the queue belongs to.
    pub fn dev(&self) -> &NetDevice {
        // SAFETY: `dev` is set when the queues are allocated and the device
        // outlives them (type invariant).
        unsafe { NetDevice::from_raw((*self.as_raw()).dev) }
    }

    /// The queue's index in its device.
    pub fn index(&self) -> u32 {
        // SAFETY: the device outlives its queues (type invariant); `_rx` is
        // set when they are allocated.
        let base = unsafe { (*self.dev().as_raw())._rx }.cast_const();
        // SAFETY: both point into the same `_rx` array (type invariant).
        let idx = unsafe { self.as_raw().cast_const().offset_from(base) };
        // CAST: an index into an array of at most `num_rx_queues` (a u32)
        // queues, from its start.
        idx as u32
    }

    /// The private data of the queue's memory provider
    /// (`mp_params.mp_priv`), read as C reads it, to compare with a
    /// provider's address: null when the queue has none. Meaningful while
    /// the device's instance lock is held, which providers come and go
    /// under.
    pub fn mp_priv(&self) -> *const c_void {
        // SAFETY: valid by the type invariant; the field is a pointer read
        // once, never dereferenced here.
        unsafe { core::ptr::addr_of!((*self.as_raw()).mp_params.mp_priv).read_volatile() }
            .cast_const()
    }
}

/// What a [`DeviceNotifier`] is told about network devices.
///
/// The callbacks run in process context with RTNL held: they may sleep,
/// but must not take RTNL, nor a lock held anywhere RTNL is then taken.
pub trait DeviceEvents: Send + Sync {
    /// `dev` is being unregistered (`NETDEV_UNREGISTER`, with the device
    /// past `NETREG_REGISTERED`). It is closed already, its qdiscs are shut
    /// down and its receive queues have no memory provider left; it is
    /// freed once the last reference to it is dropped, after this returns.
    /// The core repeats the event while it waits for those references, so
    /// this may be called more than once for a device.
    ///
    /// Not called for the `NETDEV_UNREGISTER` of a move to another
    /// namespace (the device stays registered), nor for those a notifier
    /// replays when it is dropped.
    fn unregister(&self, dev: &NetDevice);
}

/// A netdevice notifier (`register_netdevice_notifier`): passes the events
/// of every network device, in every namespace, to `T`.
///
/// Registering one, or dropping it, replays events of the devices that
/// exist then, none of which is a [`DeviceEvents::unregister`]. Meant to
/// live as long as a module, or for good.
///
/// Dropping it unregisters it, which takes RTNL: it sleeps. Dropped in one
/// of its own callbacks, which hold RTNL, it leaves that to the system
/// workqueue instead, holding a reference on the module `T`'s code is in
/// until then, and `T` gets the events that come meanwhile.
///
/// # Invariants
///
/// `block` is registered, with [`NotifierBlock::call`] as its callback,
/// until drop.
pub struct DeviceNotifier<T: DeviceEvents + 'static> {
    block: core::mem::ManuallyDrop<Pin<KBox<NotifierBlock<T>>>>,
}

/// The registered part of a [`DeviceNotifier`], on the heap, so that the
/// notifier may be dropped in its own callback and unregistered later.
///
/// # Invariants
///
/// `calling` is the task in the innermost [`NotifierBlock::call`] running,
/// null outside one: the chain's calls hold RTNL, so they are all one
/// task's.
#[pin_data]
struct NotifierBlock<T: DeviceEvents + 'static> {
    events: T,
    calling: Atomic<*mut bindings::task_struct>,
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: the notifier block is only used by the notifier chain, under its
// own lock (RTNL); `calling` is atomic; `T` may be sent between threads.
unsafe impl<T: DeviceEvents> Send for NotifierBlock<T> {}

// SAFETY: no method reaches the notifier block through `&self`; `T` is
// `Sync`.
unsafe impl<T: DeviceEvents> Sync for NotifierBlock<T> {}

impl<T: DeviceEvents + 'static> DeviceNotifier<T> {
    /// Registers a notifier passing events to `events`.
    pub fn new(events: T) -> Result<Self> {
        // `events` is in place before the block is registered (fields are
        // initialised in order), so the first callback finds it.
        let block = KBox::pin_init(
            try_pin_init!(NotifierBlock {
                events,
                calling: Atomic::new(core::ptr::null_mut()),
                nb <- Opaque::try_ffi_init(|slot: *mut bindings::notifier_block| {
                    // SAFETY: the initialiser may write to `slot`; an
                    // all-zero block is valid before its callback is set.
                    unsafe {
                        slot.write(core::mem::zeroed());
                        (*slot).notifier_call = Some(NotifierBlock::<T>::call);
                    }
                    // SAFETY: `slot` is a valid block, pinned inside a
                    // `NotifierBlock`, whose other fields are initialised.
                    to_result(unsafe { bindings::register_netdevice_notifier(slot) })
                }),
                _pin: PhantomPinned,
            }? Error),
            GFP_KERNEL,
        )?;
        // INVARIANT: registered just above, with `call`; unregistered once,
        // when `Self` drops.
        Ok(Self {
            block: core::mem::ManuallyDrop::new(block),
        })
    }

    /// What the notifier passes events to.
    pub fn events(&self) -> &T {
        &self.block.events
    }
}

impl<T: DeviceEvents + 'static> NotifierBlock<T> {
    /// The callback of the block.
    ///
    /// # Safety
    ///
    /// `nb` is the `nb` field of a registered `Self`, and `ptr` the
    /// `struct netdev_notifier_info` of event `event`, as the netdevice
    /// notifier chain passes them, with RTNL held.
    unsafe extern "C" fn call(
        nb: *mut bindings::notifier_block,
        event: c_ulong,
        ptr: *mut c_void,
    ) -> c_int {
        // SAFETY: `nb` is the `nb` field of a `Self` (per the caller);
        // `Opaque<T>` is transparent over `T`.
        let this = unsafe {
            &*crate::container_of!(nb.cast::<Opaque<bindings::notifier_block>>(), Self, nb)
        };
        // CAST: `enum netdev_cmd` values are small.
        if event != bindings::netdev_cmd_NETDEV_UNREGISTER as c_ulong {
            return bindings::NOTIFY_DONE as c_int;
        }
        // SAFETY: every netdevice event passes a `netdev_notifier_info` (or
        // a struct starting with one) whose `dev` is the device, alive for
        // the callback.
        let dev =
            unsafe { NetDevice::from_raw((*ptr.cast::<bindings::netdev_notifier_info>()).dev) };
        // A move to another namespace, or the replay of a notifier being
        // dropped, leaves the device registered.
        if dev.is_going() {
            // INVARIANT: this task, until the call returns, when an outer
            // call's task (this one, under RTNL) or none is back.
            let outer = this.calling.xchg(Task::current_raw(), Relaxed);
            this.events.unregister(dev);
            this.calling.store(outer, Relaxed);
        }
        bindings::NOTIFY_DONE as c_int
    }

    /// Frees the block at `block`, unregistered.
    ///
    /// # Safety
    ///
    /// `block` comes from `KBox::into_raw` of a `Self` that is no longer
    /// registered, and is not used again.
    unsafe fn free(block: *mut c_void) {
        // SAFETY: per the caller.
        drop(unsafe { KBox::from_raw(block.cast::<Self>()) });
    }
}

impl<T: DeviceEvents + 'static> Drop for DeviceNotifier<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self.block` is not used again.
        let block = unsafe { core::mem::ManuallyDrop::take(&mut self.block) };
        // Only this task may have made itself `calling` (type invariant):
        // in its callback, it holds RTNL, which unregistering takes.
        if block.calling.load(Relaxed) == Task::current_raw() {
            let nb = block.nb.get();
            // SAFETY: the block is not moved out of the box, which is
            // freed by `NotifierBlock::free` only.
            let block = KBox::into_raw(unsafe { Pin::into_inner_unchecked(block) });
            let call: unsafe extern "C" fn(_, _, _) -> _ = NotifierBlock::<T>::call;
            // SAFETY: `nb` is registered (type invariant), in the block at
            // `block`, which `free` frees; `call` is its callback.
            unsafe { unregister_later(nb, NotifierBlock::<T>::free, block.cast(), call as usize) };
            return;
        }
        // Sleeps (RTNL).
        crate::task::might_sleep();
        // SAFETY: registered (type invariant); it returns once no callback
        // runs on the block any more, after which it is freed.
        unsafe { bindings::unregister_netdevice_notifier(block.nb.get()) };
    }
}

/// The unregistration of a [`DeviceNotifier`] dropped in its own callback,
/// on the system workqueue. Not generic, so that it is the kernel's own
/// code, not the code of the module whose notifier it unregisters, that
/// runs last, and gives up the reference on that module (`module`, null
/// for built-in code).
#[pin_data]
struct Unregister {
    #[pin]
    work: Work<Unregister>,
    nb: *mut bindings::notifier_block,
    free: unsafe fn(*mut c_void),
    block: *mut c_void,
    module: *mut bindings::module,
}

impl_has_work! {
    impl HasWork<Self> for Unregister { self.work }
}

// SAFETY: the block may be unregistered and freed, and the module
// reference given up, from any thread.
unsafe impl Send for Unregister {}

impl WorkItem for Unregister {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        // SAFETY: per `unregister_later`: `nb` is registered, in the block
        // `free` frees, whose code the module reference keeps; from a
        // worker that holds no lock. It returns once no callback runs on
        // the block any more.
        unsafe {
            bindings::unregister_netdevice_notifier(this.nb);
            (this.free)(this.block);
            bindings::module_put(this.module);
        }
    }
}

/// Unregisters `nb` and frees `block` with `free` on the system workqueue,
/// with a reference on the module whose code `code` is in meanwhile. If the
/// module is going, or there is no memory for the work, the notifier stays
/// registered, and the module too, with a warning.
///
/// # Safety
///
/// `nb` is a registered netdevice notifier block in `block`, which `free`
/// frees; `code` is an address of the code of its callback. The caller is
/// that callback, which holds RTNL.
unsafe fn unregister_later(
    nb: *mut bindings::notifier_block,
    free: unsafe fn(*mut c_void),
    block: *mut c_void,
    code: usize,
) {
    let module = {
        let _rcu = crate::sync::rcu::read_lock();
        // SAFETY: under the RCU read lock, as the lookup requires.
        unsafe { bindings::__module_address(code as c_ulong) }
    };
    // SAFETY: a module found above, which runs the caller: not freed yet.
    if !module.is_null() && !unsafe { bindings::try_module_get(module) } {
        crate::pr_warn!("netdev: a notifier dropped as its module goes stays registered\n");
        return;
    }
    let work = KBox::pin_init(
        pin_init!(Unregister {
            work <- new_work!("DeviceNotifier::unregister"),
            nb,
            free,
            block,
            module,
        }),
        GFP_KERNEL,
    );
    match work {
        // SAFETY: `system_percpu_wq` is a C global, always available.
        Ok(work) => unsafe { workqueue::Queue::from_raw(bindings::system_percpu_wq) }.enqueue(work),
        // The module reference stays, for the callback that stays.
        Err(_) => crate::pr_warn!("netdev: a notifier dropped in its callback stays registered\n"),
    }
}

#[macros::kunit_tests(rust_kernel_net_netdev)]
mod tests {
    use super::*;
    use crate::{
        device::Device as GenericDevice,
        faux,
        net::{
            driver::{
                Busy,
                Device as DriverDevice,
                LockedDevice,
                Operations,
                Registration,
                TxQueue, //
            },
            skbuff::SkBuff,
        },
        sync::atomic::{
            Acquire,
            Release, //
        },
        time::{
            delay::fsleep,
            Delta, //
        },
    };

    /// A device nothing is sent through.
    struct Idle;

    #[vtable]
    impl Operations for Idle {
        fn open(_dev: &LockedDevice<Self>) -> Result {
            Ok(())
        }

        fn stop(_dev: &LockedDevice<Self>) -> Result {
            Ok(())
        }

        fn start_xmit(
            _dev: &DriverDevice<Self>,
            _txq: &mut TxQueue<'_>,
            skb: SkBuff,
        ) -> Result<(), Busy> {
            skb.consume();
            Ok(())
        }
    }

    /// The notifier of the test, which its callback drops; null once it
    /// did.
    static NOTIFIER: Atomic<*mut DeviceNotifier<DropsItself>> = Atomic::new(core::ptr::null_mut());
    /// Devices the notifier heard go.
    static HEARD: Atomic<u32> = Atomic::new(0);
    /// Whether the notifier's events were dropped.
    static GONE: Atomic<bool> = Atomic::new(false);

    struct DropsItself;

    impl DeviceEvents for DropsItself {
        fn unregister(&self, _dev: &NetDevice) {
            HEARD.add(1, Relaxed);
            let notifier = NOTIFIER.xchg(core::ptr::null_mut(), Relaxed);
            if !notifier.is_null() {
                // SAFETY: the test made it in a box, which is taken once.
                drop(unsafe { KBox::from_raw(notifier) });
            }
        }
    }

    impl Drop for DropsItself {
        fn drop(&mut self) {
            GONE.store(true, Release);
        }
    }

    #[test]
    fn a_notifier_dropped_in_its_own_callback_goes_after_it() -> Result {
        HEARD.store(0, Relaxed);
        GONE.store(false, Release);
        let notifier = KBox::new(DeviceNotifier::new(DropsItself)?, GFP_KERNEL)?;
        NOTIFIER.store(KBox::into_raw(notifier), Relaxed);
        let faux = faux::Registration::new(c"rust_net_netdev", None)?;
        let parent: &faux::Device<Bound> = faux.as_ref();
        let parent: &GenericDevice<Bound> = parent.as_ref();
        let reg = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x04],
            Ok::<_, Error>(Idle),
            |_| Ok(()),
        )?;
        // Unregisters the device, under RTNL: the notifier's callback
        // drops the notifier, which leaves unregistering it for later.
        drop(reg);
        assert!(NOTIFIER.load(Relaxed).is_null());
        assert!(HEARD.load(Relaxed) >= 1);
        for _ in 0..1000 {
            if GONE.load(Acquire) {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        assert!(GONE.load(Acquire));
        Ok(())
    }
}
