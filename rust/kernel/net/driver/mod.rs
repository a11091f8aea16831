// SPDX-License-Identifier: GPL-2.0

//! Network device drivers: a `net_device` carrying the driver's data, its
//! operations (`struct net_device_ops`) and its registration.
//!
//! A driver implements [`Operations`] for its per-device data `T` and
//! registers a device with [`Registration::new`], which allocates an
//! Ethernet `net_device` whose private area holds `T`. Callbacks get a
//! [`Device<T>`], which gives the `NetDevice` and `&T`; those the core
//! runs under the device's instance lock (`netdev_lock`) get a
//! [`LockedDevice<T>`], which proves it to what needs the lock (NAPI
//! states, page pools for a queue). The device is set up before it is
//! registered through an [`UnregisteredDevice<T>`], whose setters are safe
//! because no one else sees it yet. Dropping the registration waits for
//! the runs of the device's work items and lets no new one start,
//! unregisters the device (stopping it first if it is up), takes off it
//! the NAPI instances the driver left on it, then drops `T` and frees the
//! device; the parent's unbind does so at the latest, so the
//! parent is bound whenever `T` is alive ([`Device::parent`]).
//!
//! Two types stand for a `net_device`. [`Device<T>`] is one this driver
//! registered, with its data `T`: what the driver's own code uses. It
//! derefs to [`NetDevice`], any device as the core sees it (its name,
//! index, instance lock and receive queues), which code that meets
//! devices it did not register uses: a memory provider, a notifier, a
//! netlink handler. Only the device's registration and callbacks give a
//! `Device<T>`; there is no safe way to one from a `NetDevice`.
//!
//! [`Device`] and the lock tokens are here. The rest is in modules of
//! their own, named after what of the C side they wrap, and used through
//! this one:
//!
//! - `registration`: setting a device up and registering it;
//! - `ops`: the ops table;
//! - `features`: offloads;
//! - `rx_mode`: the receive filters;
//! - `stats`: counters;
//! - `queue_mgmt`: queue management;
//! - `tx_queue`: the transmit queue and byte queue limits;
//! - `work`: work items.
//!
//! C headers: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h),
//! [`include/linux/etherdevice.h`](srctree/include/linux/etherdevice.h)

use crate::{
    device::{
        Bound,
        Device as GenericDevice, //
    },
    error::to_result,
    net::netdev::NetDevice,
    prelude::*,
    sync::aref::AlwaysRefCounted,
    types::NotThreadSafe,
};
use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

mod features;
mod ops;
mod queue_mgmt;
mod registration;
mod rx_mode;
mod stats;
mod tx_queue;
mod work;

pub use features::Features;
pub use ops::{
    Busy,
    Operations, //
};
pub use queue_mgmt::{
    QueueConfig,
    QueueMgmt, //
};
pub use registration::{
    BoundResource,
    Registration,
    UnregisteredDevice, //
};
pub use rx_mode::{
    HwAddrs,
    RxMode,
    ETH_ALEN, //
};
pub use stats::{
    QueueStats,
    RxQueueStats,
    Stats64,
    TxQueueStats, //
};
pub use tx_queue::{
    xmit_more,
    TxQueue, //
};
pub use work::{
    DeviceWork,
    DeviceWorkItem, //
};

/// A network device whose private area holds a `T`.
///
/// # Invariants
///
/// The device was allocated by [`Registration::new`] for this `T`, whose
/// private area holds an initialised `T` for as long as the reference
/// lives; its parent is bound while it does.
///
/// A reference comes from a callback, which the core stops calling before
/// the device is unregistered; from a work item's run, which the
/// registration waits for before it unregisters the device, and lets no
/// new one call the driver; from a NAPI instance on the device (its poll,
/// or its [`Added`](super::napi::Added)), which the registration takes
/// off, once the device is unregistered, waiting for its poll; or from
/// [`Registration::device`] or a counted reference, which the
/// unregistration waits for, after the NAPI instances are off. `T` is
/// dropped, and the device freed, only after all of these.
#[repr(transparent)]
pub struct Device<T>(NetDevice, PhantomData<T>);

// SAFETY: as for `NetDevice`; `T` is `Send + Sync` where it is used.
unsafe impl<T: Send + Sync> Send for Device<T> {}

// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Device<T> {}

// SAFETY: the references of a `NetDevice`; the type parameter only names
// the private data.
unsafe impl<T: Send + Sync> AlwaysRefCounted for Device<T> {
    fn inc_ref(&self) {
        self.0.inc_ref();
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: transparent wrapper; the caller gives up a reference.
        unsafe { NetDevice::dec_ref(obj.cast()) }
    }
}

impl<T> Device<T> {
    /// The device at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` was allocated by [`Registration::new`] for this `T`, and its
    /// `T` is initialised, not dropping, for `'a` (as for a callback of
    /// the core on the device, or a work item's run the gate let in).
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: transparent over `NetDevice`, itself over the C struct.
        unsafe { &*ptr.cast() }
    }

    /// The driver's data.
    pub fn data(&self) -> &T {
        // SAFETY: allocated for `T`, whose `T` is initialised for as long
        // as `self` is borrowed (type invariant).
        unsafe { registration::Private::data(self.0.as_raw()) }
    }

    /// The bus device the device was registered for (its parent), bound:
    /// `T` is alive while `self` is borrowed, and [`Registration`] drops it
    /// by the time the parent unbinds. For DMA mappings and the like, from
    /// any callback.
    pub fn parent(&self) -> &GenericDevice<Bound> {
        // SAFETY: `Registration::new` set the parent to a valid device
        // before any `Device<T>` existed; it stays valid while bound.
        let parent: &GenericDevice =
            unsafe { GenericDevice::from_raw((*self.0.as_raw()).dev.parent) };
        // SAFETY: the private area holds an initialised `T` for as long as
        // `self` is borrowed (type invariant), so the device is within its
        // registration, which drops `T` before the parent unbinds
        // (devres): the parent is bound for that long.
        unsafe { parent.as_bound() }
    }

    /// Whether the device is up (`netif_running`).
    pub fn is_running(&self) -> bool {
        // SAFETY: a live device.
        unsafe { bindings::netif_running(self.0.as_raw()) }
    }

    /// Tells the stack the link is up (`netif_carrier_on`).
    pub fn carrier_on(&self) {
        // SAFETY: a live device.
        unsafe { bindings::netif_carrier_on(self.0.as_raw()) }
    }

    /// Tells the stack the link is down (`netif_carrier_off`).
    pub fn carrier_off(&self) {
        // SAFETY: a live device.
        unsafe { bindings::netif_carrier_off(self.0.as_raw()) }
    }

    /// Whether the stack believes the link is up (`netif_carrier_ok`).
    pub fn carrier_ok(&self) -> bool {
        // SAFETY: a live device.
        unsafe { bindings::netif_carrier_ok(self.0.as_raw()) }
    }

    /// Lets the stack send on every transmit queue, and runs the queues'
    /// qdiscs, which may hold packets from before the queues stopped
    /// (`netif_tx_wake_all_queues`; `netif_tx_start_all_queues` would
    /// leave such a backlog waiting for the next packet).
    pub fn wake_all_queues(&self) {
        // SAFETY: a live device.
        unsafe { bindings::netif_tx_wake_all_queues(self.0.as_raw()) }
    }

    /// Stops transmit queue `idx` (`netif_stop_subqueue`): its ring is full.
    pub fn stop_queue(&self, idx: u16) {
        // The C function does not check the index.
        if u32::from(idx) < self.real_num_tx_queues() {
            // SAFETY: a queue of the device.
            unsafe { bindings::netif_stop_subqueue(self.0.as_raw(), idx) }
        }
    }

    /// Wakes transmit queue `idx` (`netif_wake_subqueue`).
    pub fn wake_queue(&self, idx: u16) {
        if u32::from(idx) < self.real_num_tx_queues() {
            // SAFETY: a queue of the device.
            unsafe { bindings::netif_wake_subqueue(self.0.as_raw(), idx) }
        }
    }

    /// Transmit queue `idx`, if the device uses it.
    pub(crate) fn tx_queue(&self, idx: u16) -> Option<*mut bindings::netdev_queue> {
        (u32::from(idx) < self.real_num_tx_queues())
            // SAFETY: a live device, a queue it has.
            .then(|| unsafe { bindings::netdev_get_tx_queue(self.0.as_raw(), idx.into()) })
    }

    /// Whether transmit queue `idx` is stopped
    /// (`__netif_subqueue_stopped`).
    pub fn queue_stopped(&self, idx: u16) -> bool {
        u32::from(idx) < self.real_num_tx_queues()
            // SAFETY: a queue of the device.
            && unsafe { bindings::__netif_subqueue_stopped(self.0.as_raw(), idx) }
    }

    /// Whether the user set the RSS indirection table (`ethtool -X`
    /// other than `default`): a driver keeps it when the queue count
    /// changes, and spreads a default one over the new count otherwise
    /// (`netif_is_rxfh_configured`).
    pub fn rxfh_configured(&self) -> bool {
        // SAFETY: a live device.
        unsafe { bindings::netif_is_rxfh_configured(self.0.as_raw()) }
    }

    /// The number of transmit queues in use.
    pub fn real_num_tx_queues(&self) -> u32 {
        // SAFETY: a live device; the field is read as C reads it.
        unsafe { (*self.0.as_raw()).real_num_tx_queues }
    }
}

impl<T> core::ops::Deref for Device<T> {
    type Target = NetDevice;

    fn deref(&self) -> &NetDevice {
        &self.0
    }
}

/// A [`Device`] reached in process context by a thread that holds neither
/// RTNL nor the device's instance lock: what [`DeviceWorkItem::run`] gets.
/// Work the driver starts itself under those locks (a reset, say) takes
/// them from here ([`UnlockedDevice::with_rtnl_locked`]), and from no
/// callback of the core, which may hold either, or run with bottom halves
/// off:
///
/// ```ignore,compile_fail,E0599
/// use kernel::net::driver::LockedDevice;
/// # // twin: use kernel::net::driver::UnlockedDevice;
///
/// fn reset<T>(dev: &LockedDevice<T>) { // misuse
/// # // twin: fn reset<T>(dev: &UnlockedDevice<T>) {
///     let _ = dev.with_rtnl_locked(|_| Ok(()));
/// }
/// ```
///
/// Only a reference exists, for the call, and it is not `Send`. A job
/// that takes the locks is not waited for under them
/// ([`DeviceWork::disable_sync`]).
///
/// # Invariants
///
/// The thread that has the reference may sleep, and, outside
/// [`UnlockedDevice::with_rtnl_locked`], holds neither RTNL nor the
/// device's instance lock, for as long as the reference lives.
#[repr(transparent)]
pub struct UnlockedDevice<T>(Device<T>, NotThreadSafe);

impl<T> UnlockedDevice<T> {
    /// The device `dev`, reached by the caller.
    ///
    /// # Safety
    ///
    /// For `'a`, the caller may sleep, and holds neither RTNL nor `dev`'s
    /// instance lock.
    pub(crate) unsafe fn from_device<'a>(dev: &'a Device<T>) -> &'a Self {
        // SAFETY: `Self` is transparent over `Device<T>` (the marker is a
        // ZST).
        // INVARIANT: per the caller.
        unsafe { &*core::ptr::from_ref(dev).cast() }
    }

    /// Runs `f` under RTNL and the device's instance lock, taken in that
    /// order, as the core runs [`Operations::open`] and
    /// [`Operations::stop`]. `EDEADLK`, without calling `f`, from inside
    /// another call's `f` (which holds both locks). Not while holding the
    /// instance lock of another device ([`NetDevice::lock`]), which RTNL
    /// comes before, as lockdep reports.
    pub fn with_rtnl_locked<R>(
        &self,
        f: impl FnOnce(&RtnlLockedDevice<T>) -> Result<R>,
    ) -> Result<R> {
        // Outside a call of this method, this thread holds neither lock
        // (type invariant); inside one, it holds both.
        if self.lock_held_by_current() {
            return Err(EDEADLK);
        }
        // SAFETY: process context without RTNL, per the above.
        unsafe { bindings::rtnl_lock() };
        // SAFETY: a live device, whose instance lock this thread does not
        // hold; RTNL comes first, as for the core.
        unsafe { bindings::netdev_lock(self.as_raw()) };
        // SAFETY: RTNL and the instance lock are held until `f` returns;
        // `f` takes the reference for any lifetime, so it cannot keep it
        // past the call.
        let r = f(unsafe { RtnlLockedDevice::from_device(&self.0) });
        // SAFETY: both taken above, released in the reverse order.
        unsafe {
            bindings::netdev_unlock(self.as_raw());
            bindings::rtnl_unlock();
        }
        r
    }
}

impl<T> core::ops::Deref for UnlockedDevice<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        &self.0
    }
}

/// A [`Device`] whose instance lock (`netdev_lock`) is held: what the
/// callbacks the core runs under the lock get, and the proof that what
/// needs the lock takes, such as enabling a NAPI instance
/// (`napi::Added::enable`) or making a page pool for a queue
/// ([`Params::rx_queue_locked`](super::page_pool::Params::rx_queue_locked)).
///
/// Every device [`Registration::new`] registers asks the core for the lock
/// around all its ops (`request_ops_lock`): [`Operations::open`],
/// [`Operations::stop`], [`Operations::change_mtu`], the ethtool ops and
/// the queue management ops run under it. Only a reference exists, for the
/// call, and it is not `Send`: the lock is not held anywhere else.
///
/// # Invariants
///
/// The device's instance lock is held, by the thread that has the
/// reference, for as long as the reference lives.
#[repr(transparent)]
pub struct LockedDevice<T>(Device<T>, NotThreadSafe);

impl<T> LockedDevice<T> {
    /// The device `dev`, whose instance lock the caller holds.
    ///
    /// # Safety
    ///
    /// The caller holds `dev`'s instance lock for `'a`.
    pub unsafe fn from_device<'a>(dev: &'a Device<T>) -> &'a Self {
        // SAFETY: `Self` is transparent over `Device<T>` (the marker is a
        // ZST).
        // INVARIANT: locked for `'a`, per the caller.
        unsafe { &*core::ptr::from_ref(dev).cast() }
    }

    /// The configuration receive queue `idx` gets when it next starts: the
    /// driver's defaults with what its memory provider asks
    /// (`netdev_queue_config`). Under the instance lock, which the
    /// queue's provider comes and goes under.
    pub fn queue_config(&self, idx: u32) -> QueueConfig
    where
        T: QueueMgmt,
    {
        let mut raw = bindings::netdev_queue_config::default();
        let dev = self.as_raw();
        // SAFETY: a live device; the field is set before registration.
        if unsafe { (*dev).queue_mgmt_ops }.is_null() {
            return QueueConfig::default();
        }
        // SAFETY: as above; read as C reads it.
        if idx >= unsafe { (*dev).real_num_rx_queues } {
            return QueueConfig::default();
        }
        let Ok(idx) = c_int::try_from(idx) else {
            return QueueConfig::default();
        };
        // SAFETY: a live device with queue management ops and queue `idx`,
        // whose instance lock is held (type invariant); `raw` is written.
        unsafe { bindings::netdev_queue_config(dev, idx, &mut raw) };
        QueueConfig::from_raw(&raw)
    }

    /// Stops every transmit queue, each under its transmit lock, and so
    /// waits for a [`Operations::start_xmit`] in progress
    /// (`netif_tx_disable`): once it returns, none runs until a queue is
    /// woken, and the driver may take its transmit rings apart. Stopping
    /// the queues alone (`netif_tx_stop_all_queues`) leaves one that has
    /// begun running on the rings. Only under the instance lock, in
    /// process context: never from `start_xmit`, which holds a queue's
    /// lock.
    pub fn disable_tx(&self) {
        // SAFETY: a live device.
        unsafe { bindings::netif_tx_disable(self.as_raw()) }
    }
}

impl<T> core::ops::Deref for LockedDevice<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        &self.0
    }
}

#[cfg(CONFIG_PAGE_POOL)]
impl<'a> crate::net::page_pool::Params<'a> {
    /// As [`Params::rx_queue`](crate::net::page_pool::Params::rx_queue),
    /// for a driver's device whose instance lock is held (in a callback
    /// that runs under it): the parameters borrow the proof, so the pool
    /// is made while the lock is held.
    pub fn rx_queue_locked<T>(self, dev: &'a LockedDevice<T>, idx: u32) -> Self {
        // SAFETY: `dev` is locked while the parameters live, so when the
        // pool is made from them.
        unsafe { self.rx_queue(dev, idx) }
    }
}

/// A [`LockedDevice`] whose caller also holds RTNL (`rtnl_lock`), taken
/// before the instance lock: what [`UnlockedDevice::with_rtnl_locked`]
/// and the ethtool op `set_channels` get, and the proof that changing the
/// queue counts of a registered device needs
/// ([`RtnlLockedDevice::set_real_num_queues`]).
///
/// Only a reference exists, for the call, and it is not `Send`: a queue
/// count cannot change behind the back of the stack, which reads it under
/// RTNL:
///
/// ```ignore,compile_fail,E0599
/// use kernel::net::driver::LockedDevice;
/// # // twin: use kernel::net::driver::RtnlLockedDevice;
///
/// fn more_queues<T>(dev: &LockedDevice<T>) { // misuse
/// # // twin: fn more_queues<T>(dev: &RtnlLockedDevice<T>) {
///     let _ = dev.set_real_num_queues(4, 4);
/// }
/// ```
///
/// # Invariants
///
/// The thread that has the reference holds RTNL and the device's instance
/// lock for as long as the reference lives.
#[repr(transparent)]
pub struct RtnlLockedDevice<T>(LockedDevice<T>);

impl<T> RtnlLockedDevice<T> {
    /// The device `dev`, whose instance lock and RTNL the caller holds.
    ///
    /// # Safety
    ///
    /// The caller holds RTNL and `dev`'s instance lock for `'a`.
    pub(crate) unsafe fn from_device<'a>(dev: &'a Device<T>) -> &'a Self {
        // SAFETY: the instance lock is held for `'a`, per the caller.
        let locked = unsafe { LockedDevice::from_device(dev) };
        // SAFETY: `Self` is transparent over `LockedDevice<T>`.
        // INVARIANT: RTNL is held for `'a` as well, per the caller.
        unsafe { &*core::ptr::from_ref(locked).cast() }
    }

    /// Sets how many of the transmit and receive queues allocated with
    /// the device are in use (`netif_set_real_num_queues`). The driver
    /// must no longer use the queues that go: their packets are flushed
    /// and their NAPI and interrupts should be quiet. `EBUSY` if a queue
    /// that would go is in use (`netdev_queue_busy`: a memory provider,
    /// a lease, an AF_XDP socket), as the core checks before
    /// `set_channels`: the provider of a queue out of use could not be
    /// closed, and would outlive its memory on the queue.
    pub fn set_real_num_queues(&self, tx: u32, rx: u32) -> Result {
        // SAFETY: RTNL and the instance lock are held (type invariant).
        if unsafe { queues_busy(self.as_raw(), tx, rx) } {
            return Err(EBUSY);
        }
        // SAFETY: a live device; RTNL and the instance lock are held (type
        // invariant), as the C function asserts for a registered device.
        to_result(unsafe { bindings::netif_set_real_num_queues(self.as_raw(), tx, rx) })
    }
}

/// Whether a queue of `dev` at or above `tx` or `rx` that is in use now
/// is busy (`netdev_queue_busy`). Not generic, so that the C function,
/// which is not exported, is called from the kernel itself.
///
/// # Safety
///
/// `dev` is a live device, whose RTNL and instance lock the caller holds.
unsafe fn queues_busy(dev: *mut bindings::net_device, tx: u32, rx: u32) -> bool {
    let busy = |from: u32, to: u32, ty: bindings::netdev_queue_type| {
        // SAFETY: a live device, with RTNL and the instance lock held, as
        // the C function needs; each index is below the queue count in
        // use, so the device has the queue. No extack.
        (from..to)
            .any(|i| unsafe { bindings::netdev_queue_busy(dev, i, ty, core::ptr::null_mut()) })
    };
    // SAFETY: a live device; the counts change under the locks held.
    let (old_tx, old_rx) = unsafe { ((*dev).real_num_tx_queues, (*dev).real_num_rx_queues) };
    busy(rx, old_rx, bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_RX)
        || busy(tx, old_tx, bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_TX)
}

impl<T> core::ops::Deref for RtnlLockedDevice<T> {
    type Target = LockedDevice<T>;

    fn deref(&self) -> &LockedDevice<T> {
        &self.0
    }
}

/// Fills `key` with the system's RSS hash key (`netdev_rss_key_fill`),
/// random and the same for every device, so that flows hash alike.
pub fn rss_key_fill(key: &mut [u8]) {
    // SAFETY: `key` is writable for its length.
    unsafe { bindings::netdev_rss_key_fill(key.as_mut_ptr().cast(), key.len()) }
}
