// SPDX-License-Identifier: GPL-2.0

//! Setting a device up and registering it: [`UnregisteredDevice`] before
//! registration, [`Registration`] (a device resource of the parent) after,
//! and [`BoundResource`], which keeps a resource of the parent in the
//! driver's data.
//!
//! C headers: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h),
//! [`include/linux/etherdevice.h`](srctree/include/linux/etherdevice.h)

use super::{
    ops::Adapter,
    queue_mgmt::QueueAdapter,
    stats::StatsAdapter,
    work::Runs,
    Device,
    Features,
    Operations,
    QueueMgmt,
    QueueStats, //
};
use crate::{
    device::{
        Bound,
        Device as GenericDevice, //
    },
    devres::Devres,
    error::to_result,
    net::napi,
    prelude::*,
    sync::aref::ARef,
    types::{
        CovariantForLt,
        NotThreadSafe, //
    },
};
use core::{
    marker::{
        PhantomData,
        PhantomPinned, //
    },
    ptr::NonNull, //
};

/// A device [`Registration::new`] allocated for `T`, with an initialised
/// `T`, before it registers it: what `setup` gets, to give the device its
/// offloads, limits and ops tables. No one else sees the device yet, so
/// every setter is safe; none exists on a registered [`Device`]:
///
/// ```ignore,compile_fail,E0599
/// use kernel::net::driver::{
///     Device,
///     Features, //
/// };
/// # // twin: use kernel::net::driver::UnregisteredDevice;
///
/// fn late<T>(dev: &Device<T>) { // misuse
/// # // twin: fn early<T>(dev: &UnregisteredDevice<T>) {
///     dev.set_features(Features::SG);
/// }
/// ```
///
/// An ops table comes from the trait it adapts, so a driver installs only
/// the tables of the traits it implements:
///
/// ```ignore,compile_fail,E0277
/// use kernel::net::driver::{
///     Operations,
///     UnregisteredDevice, //
/// };
/// # // twin: use kernel::net::driver::QueueMgmt;
///
/// fn setup<T: Operations>(dev: &UnregisteredDevice<T>) { // misuse
/// # // twin: fn setup<T: Operations + QueueMgmt>(dev: &UnregisteredDevice<T>) {
///     dev.set_queue_mgmt();
/// }
/// ```
///
/// It gives no [`Device`], so no counted reference ([`ARef`]) to a device
/// that may yet be freed without being registered:
///
/// ```ignore,compile_fail,E0308
/// use kernel::{
///     net::driver::{
///         Device,
///         UnregisteredDevice, //
///     },
///     sync::aref::ARef,
/// };
///
/// fn keep<T: Send + Sync>(dev: &UnregisteredDevice<T>) -> ARef<Device<T>> { // misuse
/// # // twin: fn keep<T: Send + Sync>(dev: &Device<T>) -> ARef<Device<T>> {
///     let dev: &Device<T> = dev; // misuse
///     dev.into()
/// }
/// ```
///
/// # Invariants
///
/// The device was allocated for `T`, holds an initialised `T`, and is not
/// registered; only the thread that has the reference, which is not
/// `Send`, touches it.
#[repr(transparent)]
pub struct UnregisteredDevice<T>(Device<T>, NotThreadSafe);

impl<T> UnregisteredDevice<T> {
    /// # Safety
    ///
    /// `ptr` was allocated for `T`, holds an initialised `T`, is not
    /// registered during `'a`, and only the caller's thread touches it.
    unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: transparent over `Device<T>` (the marker is a ZST), which
        // the caller's guarantees make valid.
        // INVARIANT: per the caller.
        unsafe { &*ptr.cast() }
    }

    /// The device, for the setters of other modules (the ethtool ops).
    pub(crate) fn raw(&self) -> *mut bindings::net_device {
        self.0.as_raw()
    }

    /// The driver's data.
    pub fn data(&self) -> &T {
        self.0.data()
    }

    /// Gives the device the queue management API of `T`
    /// ([`QueueMgmt`]).
    pub fn set_queue_mgmt(&self)
    where
        T: QueueMgmt,
    {
        // SAFETY: not registered (type invariant): no one reads the field
        // concurrently.
        unsafe { (*self.raw()).queue_mgmt_ops = QueueAdapter::<T>::OPS_REF };
    }

    /// Gives the device the per-queue counters of `T` ([`QueueStats`]).
    pub fn set_stat_ops(&self)
    where
        T: QueueStats,
    {
        // SAFETY: not registered (type invariant): no one reads the field
        // concurrently.
        unsafe { (*self.raw()).stat_ops = StatsAdapter::<T>::OPS_REF };
    }

    /// Gives the device its offloads.
    pub fn set_features(&self, f: Features) {
        let raw = self.raw();
        // SAFETY: not registered (type invariant): no one reads the fields
        // concurrently.
        unsafe {
            (*raw).features |= f.0;
            (*raw).vlan_features |= f.0;
        }
    }

    /// Gives the device offloads that user space may turn off and on
    /// (`ethtool -K`), on to begin with: offloads the stack uses or not
    /// packet by packet, which need no change in the device.
    pub fn set_user_features(&self, f: Features) {
        let raw = self.raw();
        // SAFETY: as for `set_features`.
        unsafe {
            (*raw).hw_features |= f.0;
            (*raw).features |= f.0;
            (*raw).vlan_features |= f.0;
        }
    }

    /// Declares that the driver sends frags of device memory (`net_iov`s
    /// of a devmem TX binding) by their DMA addresses (`NETMEM_TX_DMA`).
    ///
    /// Safe: the stack then hands the driver packets whose frags may be
    /// `net_iov`s, which have no page to map or read. The only ways safe
    /// code has to a frag's memory know them:
    /// [`SkBuff::map_for_tx`](crate::net::skbuff::SkBuff::map_for_tx) gives
    /// their provider's DMA address, and
    /// [`SkBuff::copy_bits`](crate::net::skbuff::SkBuff::copy_bits) refuses
    /// unreadable frags.
    pub fn set_netmem_tx(&self) {
        // SAFETY: as for `set_features`; the bit field is written through
        // a raw place, without a reference to its group.
        unsafe {
            bindings::net_device__bindgen_ty_1__bindgen_ty_1::set_netmem_tx_raw(
                &raw mut (*self.raw()).__bindgen_anon_1.__bindgen_anon_1,
                // CAST: 1, into a two-bit field.
                bindings::netmem_tx_mode_NETMEM_TX_DMA as c_ulong,
            )
        };
    }

    /// Sets the range of MTUs the stack may ask for, `min` to `max`
    /// bytes; outside it, setting the MTU fails with `EINVAL` before
    /// [`Operations::change_mtu`] runs.
    pub fn set_mtu_range(&self, min: u32, max: u32) {
        // SAFETY: as for `set_features`.
        unsafe {
            (*self.raw()).min_mtu = min;
            (*self.raw()).max_mtu = max;
        }
    }

    /// Declares that [`Operations::set_rx_mode`] filters on the unicast
    /// list (`IFF_UNICAST_FLT`): without it, the core turns on promiscuous
    /// mode for any address beyond the device's own.
    pub fn set_unicast_filter(&self) {
        type Group = bindings::net_device__bindgen_ty_1__bindgen_ty_1;
        // SAFETY: as for `set_features`; the bit field is read and written
        // through a raw place, without a reference to its group.
        unsafe {
            let bits = &raw mut (*self.raw()).__bindgen_anon_1.__bindgen_anon_1;
            // CAST: a flag of the 32-bit field.
            let flag = bindings::netdev_priv_flags_IFF_UNICAST_FLT as c_ulong;
            Group::set_priv_flags_raw(bits, Group::priv_flags_raw(bits) | flag);
        }
    }

    /// Sets how many of the transmit and receive queues allocated with
    /// the device are in use (`netif_set_real_num_queues`).
    pub fn set_real_num_queues(&self, tx: u32, rx: u32) -> Result {
        // SAFETY: a live device, not registered (type invariant): the C
        // function needs RTNL only for a registered one.
        to_result(unsafe { bindings::netif_set_real_num_queues(self.raw(), tx, rx) })
    }
}

/// A resource of the parent bus device, such as a mapped PCI BAR, kept in
/// a network driver's data `T` for the parent's bound lifetime and used
/// without a revocation check.
///
/// The parent is bound for as long as `T` is alive (see [`Registration`]),
/// so a resource that borrows from the parent (a `pci::Bar<'bound>`) stays
/// valid for as long as the data holding it: [`BoundResource::get`] gives
/// it for the borrow of the data. It starts empty, in the data's
/// initialiser, and [`BoundResource::set`] fills it once, from `setup` of
/// [`Registration::new`], with what a function makes of the parent.
/// Nothing of the driver's uses the data while it drops (the registration
/// unregisters the device, and waits for the runs of its work items,
/// before), so the field may be declared anywhere. The function is
/// generic over the parent's lifetime, so what it returns borrows from
/// the parent or from nothing; a resource borrowing anything
/// shorter-lived does not build:
///
/// ```ignore,compile_fail,E0597
/// use kernel::{
///     net::driver::{
///         BoundResource,
///         UnregisteredDevice, //
///     },
///     prelude::*,
///     types::CovariantForLt,
/// };
///
/// type Borrowed = CovariantForLt!(&'_ u32);
///
/// fn setup<T>(dev: &UnregisteredDevice<T>, res: &BoundResource<Borrowed>) -> Result {
///     let local = 5; // misuse
///     res.set(dev, |_parent| Ok(&local)) // misuse
/// #   // twin: res.set(dev, |_parent| Ok(&5))
/// }
/// ```
///
/// # Invariants
///
/// `res` is written at most once, by `set`, while the device whose private
/// area holds `self` is not registered and only the thread setting it up
/// has it; the value written was made from that device's parent, for a
/// lifetime that lasts for as long as the parent is bound, and is dropped
/// with `self`, in place.
#[pin_data]
pub struct BoundResource<F: CovariantForLt>
where
    for<'a> F::Of<'a>: Send + Sync,
{
    res: core::cell::UnsafeCell<Option<F::Of<'static>>>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: written once, before the data holding it is shared (type
// invariant), then only read; the value is `Sync`.
unsafe impl<F: CovariantForLt> Sync for BoundResource<F> where for<'a> F::Of<'a>: Send + Sync {}

impl<F: CovariantForLt> BoundResource<F>
where
    for<'a> F::Of<'a>: Send + Sync,
{
    /// An empty slot, for the initialiser of a driver's data. It never
    /// moves once made (it is not [`Unpin`]), so it is dropped with the
    /// data it is made in.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            res: core::cell::UnsafeCell::new(None),
            _pin: PhantomPinned,
        })
    }

    /// Fills the slot with what `f` makes of the parent of `dev`, which
    /// must be the device whose data holds `self`: `EINVAL` otherwise,
    /// `EBUSY` if the slot is full already.
    pub fn set<T>(
        &self,
        dev: &UnregisteredDevice<T>,
        f: impl for<'b> FnOnce(&'b GenericDevice<Bound>) -> Result<F::Of<'b>>,
    ) -> Result {
        let data = core::ptr::from_ref(dev.data()).addr();
        let me = core::ptr::from_ref(self).addr();
        if me < data || me + size_of::<Self>() > data + size_of::<T>() {
            return Err(EINVAL);
        }
        let res = core::mem::ManuallyDrop::new(f(dev.0.parent())?);
        // SAFETY: lifetimes do not change layout; `res` is not used again.
        // The value is valid for as long as the parent is bound, which is
        // for as long as `self`, in the data of `dev`, lives: it is handed
        // out only for borrows of `self` (`get`).
        let res = unsafe { core::ptr::read(core::ptr::from_ref(&*res).cast::<F::Of<'static>>()) };
        let slot = self.res.get();
        // SAFETY: only the thread setting `dev` up has the data (type
        // invariant of `UnregisteredDevice`), and no reference into the
        // slot's value exists while it is empty.
        unsafe {
            if (*slot).is_some() {
                return Err(EBUSY);
            }
            // INVARIANT: written once, before registration, with a value
            // made from the parent of the device holding `self`.
            *slot = Some(res);
        }
        Ok(())
    }

    /// The resource, for the borrow of the data; `None` before
    /// [`BoundResource::set`] filled the slot.
    pub fn get(&self) -> Option<&F::Of<'_>> {
        // SAFETY: the slot is no longer written once full (type invariant),
        // and a reference is handed out only then.
        let res = unsafe { (*self.res.get()).as_ref() }?;
        // The value lives until the parent unbinds, after `self` goes.
        Some(F::cast_ref(res))
    }
}

/// What [`Registration::new`] puts in a device's private area: the
/// driver's data, at the start of it, then the gate of the runs of its
/// work items.
///
/// # Invariants
///
/// In a device allocated by [`Registration::new`], `runs` is initialised
/// until the device is freed; `data` until [`Unregistered`] drops it, by
/// which time `runs` is closed.
#[repr(C)]
#[pin_data]
pub(super) struct Private<T> {
    #[pin]
    pub(super) data: T,
    #[pin]
    runs: Runs,
}

impl<T> Private<T> {
    /// The private area of `dev`.
    ///
    /// # Safety
    ///
    /// `dev` is a live `net_device`.
    unsafe fn of(dev: *mut bindings::net_device) -> *mut Self {
        // SAFETY: a live device, per the caller; only an address is
        // computed.
        unsafe { bindings::netdev_priv(dev) }.cast()
    }

    /// The data in the private area of `dev`.
    ///
    /// # Safety
    ///
    /// `dev` was allocated by [`Registration::new`] for `T`, and its data
    /// is initialised (not dropping) for `'a`.
    pub(super) unsafe fn data<'a>(dev: *mut bindings::net_device) -> &'a T {
        // SAFETY: a live device whose private area holds a `Private<T>`
        // whose data is initialised for `'a`, per the caller; only that
        // field is borrowed.
        unsafe { &(*Self::of(dev)).data }
    }

    /// The gate of the runs of `dev`'s work items.
    ///
    /// # Safety
    ///
    /// `dev` was allocated by [`Registration::new`] for `T` and is not
    /// freed for `'a`.
    pub(super) unsafe fn runs<'a>(dev: *mut bindings::net_device) -> &'a Runs {
        // SAFETY: a live device whose private area holds a `Private<T>`
        // whose gate lives until the device is freed (type invariant),
        // not for `'a`, per the caller; only that field is borrowed.
        unsafe { &(*Self::of(dev)).runs }
    }
}

/// A registered network device with driver data `T`, for the bound bus
/// device `'a` borrows (its parent).
///
/// The registration is a device resource of the parent (devres), as
/// drm's is: dropping it stops the runs of the device's work items
/// ([`DeviceWork`](super::DeviceWork)), waiting for those in progress,
/// unregisters the device, takes off it the NAPI instances
/// ([`Napi`](crate::net::napi::Napi)) the driver left on it, then drops
/// `T` and frees the device, and the
/// parent's unbind does so at the latest, should the registration be
/// leaked. Not from a work item's run, then, which would wait for
/// itself. So the parent is bound for as long as `T` is
/// alive, which is what lets the callbacks have it bound
/// ([`Device::parent`]), and a bus driver keep the registration in its
/// data for the bound lifetime (`pci::Driver::Data<'bound>`).
///
/// # Invariants
///
/// `dev` is the device `_reg` holds: allocated for `T`, with an
/// initialised `T`, registered for `parent` until `_reg` is dropped or
/// revoked; `_reg` is revoked only when `parent` unbinds, which ends `'a`.
pub struct Registration<'a, T: Operations> {
    parent: &'a GenericDevice<Bound>,
    dev: NonNull<bindings::net_device>,
    /// Unregisters the device when dropped, unless the parent's unbind
    /// did.
    _reg: Devres<Registered<T>>,
}

// SAFETY: the registration may be dropped on any thread (process context).
unsafe impl<T: Operations> Send for Registration<'_, T> {}

// SAFETY: `&Registration` only gives `&Device<T>`.
unsafe impl<T: Operations> Sync for Registration<'_, T> {}

impl<'a, T: Operations> Registration<'a, T> {
    /// Allocates an Ethernet device with `txqs` transmit and `rxqs`
    /// receive queues and MAC address `mac` for hardware `parent`,
    /// initialises its data with `data`, and registers it
    /// (`alloc_etherdev_mqs`, `register_netdev`). `setup` runs on the
    /// device before registration, to set features, limits and ops
    /// tables.
    pub fn new(
        parent: &'a GenericDevice<Bound>,
        txqs: u32,
        rxqs: u32,
        mac: &[u8; 6],
        data: impl PinInit<T, Error>,
        setup: impl FnOnce(&UnregisteredDevice<T>) -> Result,
    ) -> Result<Self> {
        const { assert!(align_of::<Private<T>>() <= bindings::NETDEV_ALIGN as usize) };
        let size = c_int::try_from(size_of::<Private<T>>()).map_err(|_| EINVAL)?;
        // SAFETY: no requirements.
        let dev = unsafe { bindings::alloc_etherdev_mqs(size, txqs, rxqs) };
        let dev = NonNull::new(dev).ok_or(ENOMEM)?;
        // SAFETY: allocated just above.
        let slot = unsafe { Private::<T>::of(dev.as_ptr()) };
        let init = try_pin_init!(Private::<T> {
            data <- data,
            runs <- Runs::new(),
        }? Error);
        // SAFETY: the private area is `size` bytes, aligned to
        // `NETDEV_ALIGN` (checked above against `Private<T>`): `slot` is
        // valid for a `Private<T>` and stays put with the device.
        // INVARIANT: both fields initialised, kept until the drops below.
        if let Err(e) = unsafe { init.__init(slot) } {
            // SAFETY: allocated above, never registered.
            unsafe { bindings::free_netdev(dev.as_ptr()) };
            return Err(e);
        }
        // From here on, dropping `guard` drops `T` and frees the device.
        let guard = Unregistered::<T>(dev, PhantomData);
        // SAFETY: the device is ours. `parent` is bound now, and stays
        // bound while `T` lives: `guard` drops it here on failure, and
        // `_reg` below unregisters the device and drops it by the time
        // `parent` unbinds; the core holds a reference to the parent while
        // the device is registered.
        unsafe {
            let raw = dev.as_ptr();
            (*raw).dev.parent = parent.as_raw();
            (*raw).netdev_ops = Adapter::<T>::OPS_REF;
            // Every op under the instance lock, which `LockedDevice`
            // promises the callbacks.
            (*raw).request_ops_lock = true;
            bindings::eth_hw_addr_set(raw, mac.as_ptr());
            // Without the flag `ether_setup` sets, pktgen neither clones
            // nor bursts the packet it hands `start_xmit` again; it may
            // still hold a reference of its own (its default), which is
            // why what writes a `SkBuff` checks that it is exclusive. The
            // bit field is read and written through a raw place, without a
            // reference to its group.
            type Group = bindings::net_device__bindgen_ty_1__bindgen_ty_1;
            let bits = &raw mut (*raw).__bindgen_anon_1.__bindgen_anon_1;
            // CAST: a flag of the 32-bit field.
            let flag = bindings::netdev_priv_flags_IFF_TX_SKB_SHARING as c_ulong;
            let mut flags = Group::priv_flags_raw(bits) & !flag;
            // Netpoll calls `start_xmit` and the polls with hard IRQs off,
            // where a driver's ordinary locks (a `SpinLockBh`) are wrong:
            // only a driver that says it is fit for that gets netpoll.
            if !T::NETPOLL {
                // CAST: as above.
                flags |= bindings::netdev_priv_flags_IFF_DISABLE_NETPOLL as c_ulong;
            }
            Group::set_priv_flags_raw(bits, flags);
        }
        // SAFETY: allocated for `T` with an initialised `T`, registered
        // only after `setup` returns; the reference it gets cannot leave
        // the call, nor this thread.
        setup(unsafe { UnregisteredDevice::from_raw(dev.as_ptr()) })?;
        // SAFETY: a fully set up device.
        to_result(unsafe { bindings::register_netdev(dev.as_ptr()) })?;
        core::mem::forget(guard);
        // INVARIANT: registered just above; `Registered` unregisters it
        // when dropped, which a failure here does at once.
        let reg = Devres::new(parent, Registered::<T>(dev, PhantomData))?;
        Ok(Self {
            parent,
            dev,
            _reg: reg,
        })
    }

    /// The device.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: allocated for `T` (type invariant) and registered while
        // `self` lives: `_reg` is revoked only when `parent` unbinds, which
        // ends `'a`, as `Devres::access` argues.
        unsafe { Device::from_raw(self.dev.as_ptr()) }
    }

    /// The bus device the device is registered for.
    pub fn parent(&self) -> &'a GenericDevice<Bound> {
        self.parent
    }

    /// A counted reference to the device, for an interrupt handler or a
    /// work item. The registration must outlive it being used: dropping it
    /// waits for every reference to go (`netdev_wait_allrefs`).
    pub fn device_ref(&self) -> ARef<Device<T>> {
        self.device().into()
    }
}

/// A registered device allocated for `T`, holding an initialised `T`: the
/// device resource [`Registration`] puts on the parent. Dropping it closes
/// the gate of its work items' runs, unregisters the device (stopping it
/// first if it is up), takes the NAPI instances the driver left on it off
/// it before it waits for the counted references, then drops `T` and frees
/// the device.
///
/// # Invariants
///
/// `.0` was allocated for `T`, holds an initialised `T`, and is
/// registered.
struct Registered<T: Operations>(NonNull<bindings::net_device>, PhantomData<T>);

// SAFETY: unregistering may happen on any thread (process context); `T`
// is `Send + Sync` (`Operations`).
unsafe impl<T: Operations> Send for Registered<T> {}

// SAFETY: `&Registered` gives nothing.
unsafe impl<T: Operations> Sync for Registered<T> {}

impl<T: Operations> Drop for Registered<T> {
    fn drop(&mut self) {
        // Sleeps (RTNL, the wait for the device's references): reported in
        // atomic context with `CONFIG_DEBUG_ATOMIC_SLEEP`, every time.
        crate::task::might_sleep();
        // First, while the device is registered still: no run of a work
        // item from here on, so none makes a counted reference to the
        // device that `unregister_netdev` would not wait for, nor sees `T`
        // dropping.
        // SAFETY: allocated for `T` (type invariant), and freed only by
        // `Unregistered` below.
        unsafe { Private::<T>::runs(self.0.as_ptr()) }.close();
        let dev = self.0.as_ptr();
        // SAFETY: process context (the devres release, or the drop of the
        // registration), holding no lock; as `unregister_netdev` does.
        unsafe { bindings::rtnl_lock() };
        // SAFETY: registered (type invariant), RTNL held; stops the device
        // first if it is up. The rest (the wait for every counted
        // reference) is left to `rtnl_unlock`.
        unsafe { bindings::unregister_netdevice_queue(dev, core::ptr::null_mut()) };
        // Then, before the wait: no NAPI instance the driver left on the
        // device polls any more, so none makes a counted reference the
        // wait would miss, nor sees `T` dropping.
        // SAFETY: a live device, whose instance lock is not held (RTNL is,
        // taken first, as the core does). Its instances were all added by
        // `Napi::add`: only that adds one to it (it takes a
        // `LockedDevice`, which no other code makes of the device; the
        // core adds none to an Ethernet device).
        unsafe { napi::remove_all(dev) };
        // SAFETY: taken above; ends the unregistration, waiting for every
        // counted reference to go (`netdev_run_todo`).
        unsafe { bindings::rtnl_unlock() };
        drop(Unregistered::<T>(self.0, PhantomData));
    }
}

/// A device allocated for `T`, holding an initialised `T`, not registered:
/// dropping it closes the gate of its work items' runs, takes its NAPI
/// instances off it, drops `T` and frees the device.
struct Unregistered<T>(NonNull<bindings::net_device>, PhantomData<T>);

impl<T> Drop for Unregistered<T> {
    fn drop(&mut self) {
        // Sleeps (the instance lock, to take NAPI instances off).
        crate::task::might_sleep();
        let dev = self.0.as_ptr();
        // Again if `Registered` closed it. After a registration that
        // failed, the core may have called an op, which may have queued a
        // run.
        // SAFETY: allocated for `T`, and freed only below.
        unsafe { Private::<T>::runs(dev) }.close();
        // Again if `Registered` did it: no NAPI instance polls while `T`
        // drops, nor is on the device.
        // SAFETY: a live device, whose instance lock is not held; its
        // instances were all added by `Napi::add`, as in `Registered`.
        unsafe { napi::remove_all(dev) };
        // SAFETY: the private area holds an initialised `Private<T>`. No
        // one uses `T` any more: the device is not registered, so the core
        // calls no op, and every counted reference is gone (the
        // unregistration, or the failed registration, waited for them); a
        // work item's run stops at the gate, closed above, and one pending
        // is dropped, or waited for, by the work item's own drop, in
        // `T`'s; no NAPI instance is on the device any more, so none is
        // polled, and a `Napi` in `T` finds itself off when it drops.
        // Then nothing of the device is used.
        unsafe {
            core::ptr::drop_in_place(Private::<T>::of(dev));
            bindings::free_netdev(dev);
        }
    }
}
