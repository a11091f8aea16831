// SPDX-License-Identifier: GPL-2.0

//! NAPI: a driver's polled receive and transmit-completion work.
//!
//! A [`Napi`] is embedded, pinned, in the object that owns a queue's state
//! (the owner, `T`), and polls it through [`Poll::poll`]. What may be done
//! with an instance follows from its types:
//!
//! - a [`Napi`] alone can only be scheduled ([`Napi::schedule`], from any
//!   context; an instance that is not enabled stays put);
//! - [`Napi::add`] puts it on a device and gives its [`Added`] view,
//!   through which it is enabled, disabled, named as serving its queues and
//!   removed, each with the device's instance lock held (a
//!   [`LockedDevice`]);
//! - only the poll gets a [`NapiPoll`], a token that lives no longer than
//!   the callback and alone completes the poll, and, unless the poll only
//!   cleans up after transmits (netpoll's budget of 0), alone hands packets
//!   to the stack and allocates them from the NAPI caches ([`NapiRx`]);
//!   [`SkBuff::napi_consume`](super::skbuff::SkBuff::napi_consume) frees a
//!   sent packet into those caches, and [`NapiPoll::tx_completed`] tells
//!   byte queue limits what was sent;
//! - a page pool handed to the instance ([`Added::attach_pool`]) belongs
//!   to it: only its poll allocates from the pool ([`NapiRx::pool`]), as
//!   the pool's lockless cache, which the instance's context refills
//!   directly, requires; it comes back ([`Added::detach_pool`]), or is
//!   destroyed when the instance is removed, only while the instance is
//!   disabled.
//!
//! Dropping a [`Napi`] disables it if it is enabled, and removes it from its
//! device if it is on one. The device's registration does so first for
//! every instance the driver left on it, once it unregistered the device:
//! no poll runs while the driver's data drops.
//!
//! The instance and its [`Added`] view are here, what a poll gets in the
//! `poll` module; everything is used through this module.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)

#[cfg(CONFIG_PAGE_POOL)]
use crate::net::page_pool::Pool;
use crate::{
    ffi::c_int,
    net::driver::{
        Device,
        LockedDevice, //
    },
    prelude::*,
    sync::atomic::{
        Acquire,
        Atomic,
        Relaxed,
        Release, //
    },
    types::{
        NotThreadSafe,
        Opaque, //
    },
};
use core::{
    cell::{
        Cell,
        UnsafeCell, //
    },
    marker::PhantomPinned, //
};

mod poll;

pub use poll::{
    NapiPoll,
    NapiRx, //
};
#[cfg(CONFIG_PAGE_POOL)]
pub use poll::{
    NapiPool,
    PoolId, //
};

/// What a NAPI instance polls.
pub trait Poll: Sized + Sync {
    /// The data of the network device the instance polls for: the `T` of
    /// its [`Device<T>`].
    type Data;

    /// Does up to [`NapiPoll::budget`] units of work; returns how many it
    /// did.
    ///
    /// A poll that is done ends with [`NapiPoll::complete_done`] (and then
    /// typically re-enables its interrupt). One that does not complete is
    /// polled again, and counts as having used its whole budget, whatever
    /// it returns: the NAPI core requires exactly that of a poll that keeps
    /// its instance scheduled.
    fn poll(this: &Self, napi: NapiPoll<'_, Self>) -> i32;
}

/// The page pools handed to an instance, by slot ([`PoolId`]).
#[cfg(CONFIG_PAGE_POOL)]
type Pools = UnsafeCell<KVec<Option<Pool>>>;
#[cfg(not(CONFIG_PAGE_POOL))]
type Pools = UnsafeCell<()>;

/// The instance is not on a device.
const OFF: u32 = 0;
/// On its device, disabled.
const ADDED: u32 = 1;
/// On its device, enabled.
const ENABLED: u32 = 2;

/// A NAPI instance (`struct napi_struct`) polling an owner `T`.
///
/// An instance that is not on a device reads as disabled (its `SCHED` bit
/// is set), before [`Napi::add`] as after [`Added::remove`]:
/// [`Napi::schedule`] then leaves it alone.
///
/// An instance still on its device when the device's
/// [`Registration`](super::driver::Registration) goes is taken off by it,
/// as [`Added::remove`] would, after the device is unregistered (and its
/// driver stopped it) and before its data is dropped or the counted
/// references to it are waited for: no poll runs on a partly dropped data,
/// nor makes a counted reference to a device about to be freed.
///
/// # Invariants
///
/// - The state of the instance is in `inst` (an `Instance`), the same for
///   every owner type, which the registration takes off its device.
/// - While `inst.state` is not `OFF`, `owner` points to the object the
///   `Napi` is embedded in, which stays alive until the instance is
///   removed (at the latest on drop), and the instance's device is a
///   [`Device`] of `T::Data`. `owner` changes only with the instance lock
///   held, while the instance is `OFF`.
#[repr(C)]
#[pin_data(PinnedDrop)]
pub struct Napi<T: Poll> {
    #[pin]
    inst: Instance,
    owner: Cell<*const T>,
    #[pin]
    _pin: PhantomPinned,
}

/// The state of a [`Napi`] that does not depend on its owner type: at the
/// start of every `Napi<T>`, and its C instance at the start of it, so
/// that the registration of a device finds it from the device's NAPI list
/// ([`remove_all`]).
///
/// # Invariants
///
/// - `state` is `OFF`, `ADDED` or `ENABLED`: whether the instance is on a
///   device, and enabled (`napi_enable`) there. It, `index` and `serving`
///   change only with the instance lock of that device held (or on drop);
///   `state` leaves `OFF` (with `Release`) after the C instance was set up
///   for the device, and `dev` set to it. So, under that lock, the
///   instance is on its device's NAPI list exactly while `state` is not
///   `OFF`.
/// - `dev` is null until the first addition, then the device, for good.
///   While `state` is not `OFF`, the device's data is initialised, not
///   dropping: its registration takes the instance off first.
/// - `serving` is true while the device's receive and transmit queues
///   `index` name this instance (`netif_queue_set_napi`).
/// - `pools` holds the page pools handed to the instance, each set up for
///   direct recycling from it (`page_pool_enable_direct_recycling`), and
///   is empty while `state` is `OFF`. It changes only with the instance
///   lock held and `state` not `ENABLED` (so no poll runs), or on drop;
///   otherwise only the poll uses it, through its [`NapiRx`].
#[repr(C)]
#[pin_data]
struct Instance {
    #[pin]
    raw: Opaque<bindings::napi_struct>,
    dev: Cell<*mut bindings::net_device>,
    state: Atomic<u32>,
    index: Cell<u32>,
    serving: Cell<bool>,
    pools: Pools,
}

// SAFETY: the NAPI core serialises polls; the other methods are callable
// from any context the C API allows, or need the device's instance lock.
unsafe impl<T: Poll> Send for Napi<T> {}

// SAFETY: the cells change only under the device's instance lock (type
// invariants), and are read under it, except `owner`, which the poll reads
// while the instance is on its device and which does not change then, and
// `pools`, which the poll alone uses while the instance may be polled and
// the lock holder otherwise.
unsafe impl<T: Poll> Sync for Napi<T> {}

impl Instance {
    /// An instance on no device, reading as disabled.
    fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            raw <- Opaque::zeroed(),
            dev: Cell::new(core::ptr::null_mut()),
            state: Atomic::new(OFF),
            index: Cell::new(0),
            serving: Cell::new(false),
            pools: Pools::default(),
        })
        .pin_chain(|this| {
            // CAST: bit numbers of the state word.
            let inert =
                (1 << bindings::NAPI_STATE_SCHED | 1 << bindings::NAPI_STATE_NPSVC) as c_ulong;
            // SAFETY: initialised just above and not shared yet.
            unsafe { (*this.as_raw()).state = inert };
            Ok(())
        })
    }

    #[inline]
    fn as_raw(&self) -> *mut bindings::napi_struct {
        self.raw.get()
    }

    /// The device of an instance that was added.
    #[inline]
    fn device(&self) -> *mut bindings::net_device {
        self.dev.get()
    }

    /// Names the instance as the one serving its queues, or forgets that.
    ///
    /// # Safety
    ///
    /// On its device, whose instance lock the caller holds.
    unsafe fn set_serving(&self, serve: bool) -> Result {
        let dev = self.device();
        let index = self.index.get();
        // SAFETY: a live device (type invariant); the fields are set at
        // allocation.
        let (rxqs, txqs) = unsafe { ((*dev).num_rx_queues, (*dev).num_tx_queues) };
        if index >= rxqs || index >= txqs {
            return Err(EINVAL);
        }
        let napi = if serve {
            self.as_raw()
        } else {
            core::ptr::null_mut()
        };
        for ty in [
            bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_RX,
            bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_TX,
        ] {
            // SAFETY: a live device, locked per the caller; `index` is
            // below its allocated queue counts; `napi` is this instance, on
            // the device, or null.
            unsafe { bindings::netif_queue_set_napi(dev, index, ty, napi) };
        }
        self.serving.set(serve);
        Ok(())
    }

    /// Takes the instance off its device: forgets the queues it serves,
    /// disables it if enabled, removes it. Sleeps.
    ///
    /// # Safety
    ///
    /// On its device, whose instance lock the caller holds.
    unsafe fn take_off(&self) {
        if self.serving.get() {
            // SAFETY: per the caller.
            let _ = unsafe { self.set_serving(false) };
        }
        if self.state.load(Relaxed) == ENABLED {
            // SAFETY: enabled, on its device, the lock held.
            unsafe { bindings::napi_disable_locked(self.as_raw()) };
        }
        // SAFETY: on its device and disabled, the lock held; no queue
        // names it any more.
        unsafe { bindings::__netif_napi_del_locked(self.as_raw()) };
        // SAFETY: the lock is held and the instance disabled: no poll
        // uses the pools (type invariant).
        unsafe { self.drop_pools() };
        // INVARIANT: off the device, its pools gone.
        self.state.store(OFF, Relaxed);
    }

    /// Destroys the page pools handed to the instance (each stops
    /// recycling from it first, `page_pool_destroy`). Sleeps.
    ///
    /// # Safety
    ///
    /// Nothing else uses `pools`: the instance lock is held and the
    /// instance is disabled, or it is being dropped.
    unsafe fn drop_pools(&self) {
        #[cfg(CONFIG_PAGE_POOL)]
        {
            // SAFETY: the only user, per the caller. The vector is taken
            // out before the pools go.
            let pools = core::mem::take(unsafe { &mut *self.pools.get() });
            drop(pools);
        }
    }
}

/// Takes every NAPI instance still on `dev` off it, as [`Added::remove`]
/// does, each [`Napi`] agreeing: what the registration of a device does
/// once the device is unregistered, before the driver's data drops. The
/// core would only delete them in `free_netdev`, after the data is gone,
/// and until then an enabled instance could be polled (busy polling finds
/// it by its NAPI ID, threaded NAPI, an interrupt). Sleeps.
///
/// # Safety
///
/// `dev` is a live device, whose instance lock the caller does not hold,
/// and every instance on its NAPI list was put there by [`Napi::add`].
pub(crate) unsafe fn remove_all(dev: *mut bindings::net_device) {
    // SAFETY: a live device, not locked by the caller.
    unsafe { bindings::netdev_lock(dev) };
    // SAFETY: a live device; the list changes only under the instance
    // lock (`netif_napi_add_locked`, `__netif_napi_del_locked`), held.
    let head = unsafe { &raw mut (*dev).napi_list };
    // SAFETY: as above.
    let mut pos = unsafe { (*head).next };
    let mut any = false;
    while pos != head {
        // SAFETY: an entry of the list is the `dev_list` of an instance.
        let napi = unsafe { pos.byte_sub(core::mem::offset_of!(bindings::napi_struct, dev_list)) }
            .cast::<bindings::napi_struct>();
        // SAFETY: the list is intact under the lock; the next entry is
        // read before this one leaves it.
        pos = unsafe { (*pos).next };
        // SAFETY: `Napi::add` put the instance there, per the caller: it
        // is the `raw` field, at offset 0 of a `#[repr(C)]` `Instance`, at
        // offset 0 of a `#[repr(C)]` `Napi<_>`, which does not go before
        // it took the instance off.
        let inst = unsafe { &*napi.cast::<Instance>() };
        // SAFETY: on the list, under the lock: on its device (`state` is
        // not `OFF`, type invariant), whose lock is held.
        unsafe { inst.take_off() };
        any = true;
    }
    // SAFETY: locked above.
    unsafe { bindings::netdev_unlock(dev) };
    if any {
        // SAFETY: no requirements; waits out lockless readers of the
        // device's NAPI list, as `netif_napi_del` does.
        unsafe { bindings::synchronize_net() };
    }
}

impl<T: Poll> Napi<T> {
    /// A NAPI instance, not yet added to a device.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            inst <- Instance::new(),
            owner: Cell::new(core::ptr::null()),
            _pin: PhantomPinned,
        })
    }

    #[inline]
    pub(crate) fn as_raw(&self) -> *mut bindings::napi_struct {
        self.inst.as_raw()
    }

    /// Adds the instance to `dev` as the NAPI of queue `index`, polling
    /// `owner`, disabled (`netif_napi_add_config_locked`). The instance
    /// keeps the queue's settings and NAPI ID across removal and addition,
    /// so the device's NAPI list stays sorted by ID (as netlink dumps need)
    /// however its queues restart. An instance already on the device stays
    /// as it is.
    ///
    /// `EINVAL` if `index` is not below the number of queues the device was
    /// allocated with.
    ///
    /// # Safety
    ///
    /// `owner` is the object this `Napi` is embedded in; what its poll uses
    /// of it stays alive until the instance is removed or this `Napi`
    /// dropped (declaring the `Napi` before the fields the poll uses does
    /// it). The instance is only ever added to `dev`, and the `Napi` is
    /// reached only through `dev`'s data (it is in it, or owned by it): it
    /// is borrowed only while the data is initialised, or while the data
    /// drops, which the registration does only after it took the instance
    /// off. No other instance of `dev` has `index`. If `owner`'s type has
    /// a `Drop` of its own, that drop takes the instance off first
    /// ([`Added::remove`]) or runs only once the registration has: an
    /// object's drop runs before its fields', so before this `Napi`'s, and
    /// takes the owner `&mut` while a poll may still hold it shared.
    pub unsafe fn add<'a>(
        &'a self,
        dev: &LockedDevice<T::Data>,
        owner: &T,
        index: u32,
    ) -> Result<&'a Added<T>> {
        if let Some(added) = self.added() {
            return Ok(added);
        }
        let inst = &self.inst;
        // SAFETY: a live device; the field is set at allocation.
        if index >= unsafe { (*dev.as_raw()).num_napi_configs } {
            return Err(EINVAL);
        }
        // CAST: below the device's queue count, an int.
        let cidx = index as c_int;
        self.owner.set(owner);
        inst.index.set(index);
        if inst.dev.get().is_null() {
            // Written once, before `state` first leaves `OFF`: read after
            // that without a race.
            inst.dev.set(dev.as_raw());
        }
        // SAFETY: the instance is pinned and not on a device (`OFF`);
        // `dev` is a live device, locked (`LockedDevice`), with a NAPI
        // config for `index` (checked above); the poll function matches.
        unsafe {
            bindings::netif_napi_add_config_locked(
                dev.as_raw(),
                self.as_raw(),
                Some(Self::poll_callback),
                cidx,
            )
        };
        // INVARIANT: added to `dev` just above, with `owner` set; `dev`
        // is of `T::Data`, its data initialised (the lock is held by a
        // callback or a run of the driver's) and `owner` stays alive, per
        // the caller. The lock is held.
        inst.state.store(ADDED, Release);
        // SAFETY: just added.
        Ok(unsafe { Added::from_napi(self) })
    }

    /// The instance as added to its device, if it is on one.
    pub fn added(&self) -> Option<&Added<T>> {
        // SAFETY: not `OFF`: on its device.
        (self.inst.state.load(Acquire) != OFF).then(|| unsafe { Added::from_napi(self) })
    }

    /// Schedules a poll (`napi_schedule`): from the interrupt handler, or
    /// after [`Added::enable`] to take what the device did while polling
    /// was off. `false` when a poll was already scheduled or the instance
    /// is not enabled.
    pub fn schedule(&self) -> bool {
        // SAFETY: an instance not on a device, or disabled, has its `SCHED`
        // bit set, which `napi_schedule` leaves alone; an enabled one is
        // scheduled.
        unsafe { bindings::napi_schedule(self.as_raw()) }
    }

    /// The device of an instance that was added.
    #[inline]
    pub(super) fn device(&self) -> *mut bindings::net_device {
        self.inst.device()
    }

    /// # Safety
    ///
    /// Called by the NAPI core for an instance added by [`Napi::add`].
    unsafe extern "C" fn poll_callback(napi: *mut bindings::napi_struct, budget: c_int) -> c_int {
        // SAFETY: `napi` is the `raw` field, at offset 0 of a `#[repr(C)]`
        // `Instance`, at offset 0 of a `#[repr(C)]` `Napi<T>`, which this
        // callback was registered for.
        let this = unsafe { &*napi.cast::<Self>() };
        // SAFETY: set by `add` before the instance could be scheduled, and
        // alive until the instance is removed (type invariant): a polled
        // instance is enabled, so on its device.
        let owner = unsafe { &*this.owner.get() };
        let budget = budget.max(0);
        let completed = Cell::new(false);
        let work = T::poll(
            owner,
            NapiPoll {
                napi: this,
                budget,
                completed: &completed,
                _not_send: NotThreadSafe,
            },
        );
        if completed.get() {
            // `complete_done` ran with less than the budget: the poll ends.
            work.clamp(0, budget - 1)
        } else {
            // The instance stays scheduled: the core polls it again.
            budget
        }
    }
}

#[pinned_drop]
impl<T: Poll> PinnedDrop for Napi<T> {
    fn drop(self: Pin<&mut Self>) {
        // Sleeps (the instance lock, the wait for a poll) when the instance
        // is on its device; checked whether or not it is, so that a drop in
        // atomic context is reported the first time.
        crate::task::might_sleep();
        let inst = &self.inst;
        if inst.state.load(Acquire) == OFF {
            return;
        }
        let dev = inst.device();
        // SAFETY: the device outlives the instance (type invariant).
        // Dropped in a callback that runs under the instance lock, the
        // `Napi` finds the lock held by this thread, and does not take it
        // again.
        let held = unsafe { bindings::netdev_lock_held_by_current(dev) };
        if !held {
            // SAFETY: as above; this thread does not hold the lock.
            unsafe { bindings::netdev_lock(dev) };
        }
        // Again under the lock: the registration may have taken the
        // instance off meanwhile.
        let on = inst.state.load(Relaxed) != OFF;
        if on {
            // SAFETY: on its device, whose lock this thread holds.
            unsafe { inst.take_off() };
        }
        if !held {
            // SAFETY: locked above.
            unsafe { bindings::netdev_unlock(dev) };
        }
        if on {
            // SAFETY: no requirements; waits out lockless readers of the
            // device's NAPI list, as `netif_napi_del` does.
            unsafe { bindings::synchronize_net() };
        }
    }
}

/// A NAPI instance on its device: what enables, disables and removes it.
///
/// Obtained from [`Napi::add`] or [`Napi::added`]. Each operation takes the
/// device's [`LockedDevice`] (the NAPI core changes an instance's state
/// under the instance lock), and does nothing for another device's, or
/// once the instance was removed. Enabling a NAPI that was never added
/// does not build:
///
/// ```ignore,compile_fail,E0599
/// use kernel::net::{
///     driver::LockedDevice,
///     napi::{
///         Napi,
///         Poll, //
///     },
/// };
/// # // twin: use kernel::net::napi::Added;
///
/// fn up<T: Poll>(napi: &Napi<T>, dev: &LockedDevice<T::Data>) { // misuse
/// # // twin: fn up<T: Poll>(napi: &Added<T>, dev: &LockedDevice<T::Data>) {
///     napi.enable(dev);
/// }
/// ```
///
/// # Invariants
///
/// The instance was added to its device: its `state` left `OFF` once.
#[repr(transparent)]
pub struct Added<T: Poll>(Napi<T>);

impl<T: Poll> Added<T> {
    /// # Safety
    ///
    /// `napi` was added to its device.
    unsafe fn from_napi(napi: &Napi<T>) -> &Self {
        // SAFETY: transparent over `Napi<T>`.
        // INVARIANT: added, per the caller.
        unsafe { &*core::ptr::from_ref(napi).cast() }
    }

    /// The device the instance was added to.
    pub fn dev(&self) -> &Device<T::Data> {
        // SAFETY: added (type invariant) to a device of `T::Data`, the
        // only one (contract of `Napi::add`). `self` borrows the `Napi`,
        // reached only through the device's data, and so borrowed only
        // while that data is initialised (`Napi::add`) or dropping; once
        // it drops, the instance is off (the registration took it off
        // first), so `Napi::added` makes no `Added`, and one made before
        // is not borrowed any more. So the data is initialised while the
        // result is borrowed.
        unsafe { Device::from_raw(self.0.device()) }
    }

    /// Whether `dev` is the instance's device, locked, and the instance is
    /// still on it.
    fn held(&self, dev: &LockedDevice<T::Data>) -> bool {
        dev.as_raw() == self.0.device() && self.0.inst.state.load(Acquire) != OFF
    }

    /// Names `irq` as the interrupt that schedules the instance
    /// (`netif_napi_set_irq_locked`): netlink reports it with the NAPI, and
    /// tools find which CPU takes a queue's interrupts by it.
    pub fn set_irq(&self, dev: &LockedDevice<T::Data>, irq: u32) {
        if !self.held(dev) {
            return;
        }
        let Ok(irq) = c_int::try_from(irq) else {
            return;
        };
        // SAFETY: on its device, which is locked.
        unsafe { bindings::netif_napi_set_irq_locked(self.0.as_raw(), irq) }
    }

    /// Lets the instance be scheduled (`napi_enable_locked`); an enabled
    /// one stays as it is.
    pub fn enable(&self, dev: &LockedDevice<T::Data>) {
        if !self.held(dev) || self.0.inst.state.load(Relaxed) == ENABLED {
            return;
        }
        // SAFETY: on its device and disabled (`napi_enable` requires its
        // `SCHED` bit set, which only enabling clears); the lock is held.
        unsafe { bindings::napi_enable_locked(self.0.as_raw()) };
        // INVARIANT: enabled just above, the lock held.
        self.0.inst.state.store(ENABLED, Relaxed);
    }

    /// Stops the instance and waits for a poll under way
    /// (`napi_disable_locked`); a disabled one stays as it is. Sleeps.
    pub fn disable(&self, dev: &LockedDevice<T::Data>) {
        if !self.held(dev) || self.0.inst.state.load(Relaxed) != ENABLED {
            return;
        }
        // SAFETY: enabled, on its device, the lock held.
        unsafe { bindings::napi_disable_locked(self.0.as_raw()) };
        // INVARIANT: disabled just above, the lock held.
        self.0.inst.state.store(ADDED, Relaxed);
    }

    /// Names the instance as the one serving receive and transmit queue
    /// `index` of its device (the index it was added with), or, with
    /// `serve` false, forgets that (`netif_queue_set_napi`): netlink
    /// reports the queues' `napi-id`, and busy polling and zero-copy
    /// receive find the instance by it. [`Added::remove`] forgets it too.
    /// `EINVAL` for a device that has no such queues.
    pub fn serve_queues(&self, dev: &LockedDevice<T::Data>, serve: bool) -> Result {
        if !self.held(dev) {
            return Err(EINVAL);
        }
        // SAFETY: on its device, which is locked.
        unsafe { self.0.inst.set_serving(serve) }
    }

    /// Forgets what the instance's transmit queue (of the index it was
    /// added with) had in flight, its ring emptied
    /// (`netdev_tx_reset_queue`): byte queue limits start over. `EBUSY`
    /// while the instance is enabled, whose poll may be telling
    /// completions ([`NapiPoll::tx_completed`]); `EINVAL` for another
    /// device's lock or an instance no longer on it. Nothing for an index
    /// the device does not use for transmits.
    ///
    /// The queue's lock is taken, bottom halves off, around the reset, so
    /// that it does not race with a `start_xmit` telling a send
    /// ([`TxQueue::sent`](super::driver::TxQueue::sent)).
    pub fn tx_reset(&self, dev: &LockedDevice<T::Data>) -> Result {
        if !self.held(dev) {
            return Err(EINVAL);
        }
        // Only `enable`, under the lock held here, makes it `ENABLED`.
        if self.0.inst.state.load(Relaxed) == ENABLED {
            return Err(EBUSY);
        }
        let Ok(idx) = u16::try_from(self.0.inst.index.get()) else {
            return Ok(());
        };
        let Some(q) = dev.tx_queue(idx) else {
            return Ok(());
        };
        // SAFETY: `q` is a transmit queue of a live device. Its xmit lock,
        // taken with bottom halves off as `__netif_tx_lock_bh` does, keeps
        // `start_xmit`, the only sender, out; the only completer, the poll
        // of the index's only instance (this one, per `Napi::add`), does
        // not run while it is disabled, which the instance lock keeps it.
        unsafe {
            let lock = &raw mut (*q)._xmit_lock;
            bindings::spin_lock_bh(lock);
            bindings::netdev_tx_reset_queue(q);
            bindings::spin_unlock_bh(lock);
        }
        Ok(())
    }

    /// Hands `pool` to the instance, disabled, whose poll alone allocates
    /// from it from now on ([`NapiRx::pool`]): buffers freed in the
    /// instance's context go straight back to the pool's cache
    /// (`page_pool_enable_direct_recycling`). This is where the control
    /// path hands a ring's pool over to the queue's NAPI, once the ring
    /// was filled from process context. The pool comes back with
    /// [`Added::detach_pool`], or is destroyed when the instance is
    /// removed, in both cases with the instance disabled, as the page pool
    /// core requires. Sleeps.
    ///
    /// Gives the pool back with `EBUSY` while the instance is enabled,
    /// `EINVAL` for another device's lock, an instance no longer on it,
    /// or a pool made for another NAPI instance; `ENOMEM`.
    ///
    /// Once handed over, the pool is out of the caller's reach:
    ///
    /// ```ignore,compile_fail,E0382
    /// use kernel::net::{
    ///     driver::LockedDevice,
    ///     napi::{
    ///         Added,
    ///         Poll, //
    ///     },
    ///     page_pool::Pool,
    /// };
    ///
    /// fn refill<T: Poll>(napi: &Added<T>, dev: &LockedDevice<T::Data>, mut pool: Pool) {
    ///     let _ = napi.attach_pool(dev, pool);
    ///     let _ = pool.alloc(); // misuse
    /// }
    /// ```
    ///
    /// and only the instance's poll gets it:
    ///
    /// ```ignore,compile_fail,E0599
    /// use kernel::net::napi::{
    ///     Added,
    ///     PoolId,
    ///     Poll, //
    /// };
    /// # // twin: use kernel::net::napi::NapiRx;
    ///
    /// fn refill<T: Poll>(napi: &Added<T>, id: PoolId) {
    ///     let _ = napi.pool(id).and_then(|p| p.alloc()); // misuse
    /// }
    /// # // twin: fn refill_in_poll<T: Poll>(rx: &mut NapiRx<'_, T>, id: PoolId) {
    /// # // twin:     let _ = rx.pool(id).and_then(|mut p| p.alloc());
    /// # // twin: }
    /// ```
    #[cfg(CONFIG_PAGE_POOL)]
    pub fn attach_pool(
        &self,
        dev: &LockedDevice<T::Data>,
        pool: Pool,
    ) -> Result<PoolId, (Error, Pool)> {
        if !self.held(dev) {
            return Err((EINVAL, pool));
        }
        // Only `enable`, under the lock held here, makes it `ENABLED`.
        if self.0.inst.state.load(Relaxed) == ENABLED {
            return Err((EBUSY, pool));
        }
        let napi = pool.napi();
        if !napi.is_null() && napi != self.0.as_raw() {
            return Err((EINVAL, pool));
        }
        // SAFETY: the lock is held and the instance is not enabled: no
        // poll uses the pools (type invariant).
        let pools = unsafe { &mut *self.0.inst.pools.get() };
        let slot = match pools.iter().position(Option::is_none) {
            Some(slot) => slot,
            None => {
                if let Err(e) = pools.push(None, GFP_KERNEL) {
                    return Err((e.into(), pool));
                }
                pools.len() - 1
            }
        };
        // SAFETY: a live pool, now the instance's, naming no other NAPI
        // (checked above); only the instance's poll allocates from it
        // from now on, and it stops recycling from the instance
        // (`detach_pool`, or `page_pool_destroy` in `take_off`) only while
        // the instance is disabled, before the instance is freed.
        unsafe { bindings::page_pool_enable_direct_recycling(pool.as_raw(), self.0.as_raw()) };
        if let Some(s) = pools.get_mut(slot) {
            // INVARIANT: set up for direct recycling from the instance
            // just above, with the lock held and the instance disabled.
            *s = Some(pool);
        }
        Ok(PoolId {
            napi: self.0.as_raw(),
            slot,
        })
    }

    /// Takes back the pool [`Added::attach_pool`] gave the instance as
    /// `id`, disabled: buffers no longer go straight back to its cache
    /// (`page_pool_disable_direct_recycling`), and any context may
    /// allocate from it again, or drop it, however the instance runs
    /// later. Sleeps.
    ///
    /// `EBUSY` while the instance is enabled; `EINVAL` for another
    /// device's lock, an instance no longer on it, or an `id` it does not
    /// hold.
    #[cfg(CONFIG_PAGE_POOL)]
    pub fn detach_pool(&self, dev: &LockedDevice<T::Data>, id: PoolId) -> Result<Pool> {
        if !self.held(dev) || id.napi != self.0.as_raw() {
            return Err(EINVAL);
        }
        if self.0.inst.state.load(Relaxed) == ENABLED {
            return Err(EBUSY);
        }
        // SAFETY: as in `attach_pool`.
        let pools = unsafe { &mut *self.0.inst.pools.get() };
        let pool = pools
            .get_mut(id.slot)
            .and_then(Option::take)
            .ok_or(EINVAL)?;
        // SAFETY: a live pool set up for direct recycling from this
        // instance, which is on its device and disabled (no poll runs, and
        // it is on no poll list), with the lock held.
        unsafe { pool.disable_direct_recycling() };
        Ok(pool)
    }

    /// Takes the instance off its device (`netif_napi_del_locked`), after
    /// forgetting the queues it serves and disabling it. It keeps its NAPI
    /// ID and settings for the next [`Napi::add`] of the same index.
    /// Sleeps.
    pub fn remove(&self, dev: &LockedDevice<T::Data>) {
        if !self.held(dev) {
            return;
        }
        // SAFETY: on its device, which is locked.
        unsafe { self.0.inst.take_off() };
        // SAFETY: no requirements; as `netif_napi_del_locked` does.
        unsafe { bindings::synchronize_net() };
    }
}

#[cfg(CONFIG_PAGE_POOL)]
impl Pool {
    /// The C `struct page_pool`.
    fn as_raw(&self) -> *mut bindings::page_pool {
        self.as_page_pool().as_raw()
    }

    /// The NAPI instance the pool recycles from directly (`p.napi`), or
    /// null.
    fn napi(&self) -> *mut bindings::napi_struct {
        // SAFETY: a live pool; the field changes only through the owner of
        // the pool (at creation, or through `Added`'s attach and detach),
        // which `&self` excludes.
        unsafe { (*self.as_raw()).p.napi }
    }
}

#[cfg(CONFIG_PAGE_POOL)]
impl<'a> super::page_pool::Params<'a> {
    /// Names `napi` as the instance whose poll uses the pool
    /// (`page_pool_params.napi`): buffers freed in its context go straight
    /// back to the pool's cache, and netlink reports the pool's NAPI ID.
    ///
    /// # Safety
    ///
    /// Only `napi`'s poll allocates from the pool while `napi` is enabled.
    /// The pool is destroyed, or
    /// [`Pool::disable_direct_recycling`](super::page_pool::Pool::disable_direct_recycling) is
    /// called, while `napi` is disabled, before it is removed. A pool still
    /// tied to `napi` is not dropped in atomic context: its destruction
    /// would then come later, on a workqueue.
    pub unsafe fn napi<T: Poll>(mut self, napi: &'a Napi<T>) -> Self {
        self.fast().napi = napi.as_raw();
        self
    }
}

#[macros::kunit_tests(rust_kernel_net_napi)]
mod tests {
    use super::*;
    use crate::{
        device::{
            Bound,
            Device as GenericDevice, //
        },
        faux,
        net::{
            driver::{
                Busy,
                Operations,
                Registration,
                TxQueue, //
            },
            netdev::NetDevice,
            skbuff::SkBuff,
        },
        time::{
            delay::fsleep,
            Delta, //
        },
    };
    #[cfg(CONFIG_PAGE_POOL)]
    use crate::{
        net::{
            page_pool::{
                Params,
                PoolNetmem, //
            },
            skbuff::{
                build_buf_size,
                RX_HEADROOM, //
            },
        },
        sync::SetOnce,
    };

    /// The ops of a device no traffic is sent through: open and stop do
    /// nothing, and what the stack sends is consumed.
    macro_rules! idle_ops {
        ($($t:ty),*) => {$(
            #[vtable]
            impl Operations for $t {
                fn open(_dev: &LockedDevice<Self>) -> Result {
                    Ok(())
                }

                fn stop(_dev: &LockedDevice<Self>) -> Result {
                    Ok(())
                }

                fn start_xmit(
                    _dev: &Device<Self>,
                    _txq: &mut TxQueue<'_>,
                    skb: SkBuff,
                ) -> Result<(), Busy> {
                    skb.consume();
                    Ok(())
                }
            }
        )*};
    }

    /// The data's first field is alive.
    static ALIVE: Atomic<bool> = Atomic::new(false);
    /// Polls of the instance.
    static POLLS: Atomic<u32> = Atomic::new(0);
    /// Polls that saw the first field dropped.
    static LATE: Atomic<u32> = Atomic::new(0);
    /// The instance, for the first field's drop; null until it is added.
    static NAPI: Atomic<*const Napi<Queue>> = Atomic::new(core::ptr::null());
    /// Whether the instance was still on its device when the first field
    /// dropped.
    static ON_AT_DROP: Atomic<bool> = Atomic::new(true);
    /// Whether the first field's drop could schedule the instance.
    static SCHEDULED_AT_DROP: Atomic<bool> = Atomic::new(true);

    /// Dropped before the queue, as it is declared before it: schedules
    /// the queue's instance as it goes, as an interrupt or busy polling
    /// could.
    struct Marker;

    impl Drop for Marker {
        fn drop(&mut self) {
            ALIVE.store(false, Release);
            let napi = NAPI.load(Acquire);
            if !napi.is_null() {
                // SAFETY: the `Napi` of the data this marker is in,
                // declared after it: not dropped yet.
                let napi = unsafe { &*napi };
                ON_AT_DROP.store(napi.added().is_some(), Relaxed);
                SCHEDULED_AT_DROP.store(napi.schedule(), Relaxed);
            }
            // Time for a poll, had the instance been left on.
            fsleep(Delta::from_millis(50));
        }
    }

    #[pin_data]
    struct Queue {
        #[pin]
        napi: Napi<Queue>,
    }

    impl Poll for Queue {
        type Data = Data;

        fn poll(_this: &Self, napi: NapiPoll<'_, Self>) -> i32 {
            if !ALIVE.load(Acquire) {
                LATE.add(1, Relaxed);
            }
            POLLS.add(1, Relaxed);
            napi.complete_done(0);
            0
        }
    }

    #[pin_data]
    struct Data {
        marker: Marker,
        #[pin]
        q: Queue,
    }

    // Its stop leaves the instance on the device, enabled.
    idle_ops!(Data);

    #[test]
    fn no_poll_once_the_registration_goes() -> Result {
        let faux = faux::Registration::new(c"rust_net_napi", None)?;
        let parent: &faux::Device<Bound> = faux.as_ref();
        let parent: &GenericDevice<Bound> = parent.as_ref();
        ALIVE.store(true, Release);
        let reg = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x02],
            try_pin_init!(Data {
                marker: Marker,
                q <- pin_init!(Queue {
                    napi <- Napi::new(),
                }),
            }? Error),
            |_| Ok(()),
        )?;
        let dev = reg.device();
        let q = &dev.data().q;
        // SAFETY: the test's thread, in process context, holds no lock.
        let unlocked = unsafe { crate::net::driver::UnlockedDevice::from_device(dev) };
        unlocked.with_rtnl_locked(|locked| -> Result {
            // SAFETY: the owner is the queue the instance is in, which
            // has nothing else; the queue is in the data of `dev`, the
            // only device it is added to, and reached only through it;
            // index 0 is its alone.
            let napi = unsafe { q.napi.add(locked, q, 0)? };
            napi.enable(locked);
            Ok(())
        })?;
        NAPI.store(&raw const q.napi, Release);
        assert!(q.napi.schedule());
        for _ in 0..100 {
            if POLLS.load(Relaxed) >= 1 {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        assert!(POLLS.load(Relaxed) >= 1);
        // Unregisters the device, whose driver leaves the instance on it,
        // then drops `marker`, then `q`.
        drop(reg);
        assert!(!ON_AT_DROP.load(Relaxed));
        assert!(!SCHEDULED_AT_DROP.load(Relaxed));
        assert_eq!(LATE.load(Relaxed), 0);
        Ok(())
    }

    /// A queue made and dropped while the device runs.
    #[pin_data]
    struct SpareQueue {
        #[pin]
        napi: Napi<SpareQueue>,
    }

    impl Poll for SpareQueue {
        type Data = SpareData;

        fn poll(_this: &Self, napi: NapiPoll<'_, Self>) -> i32 {
            napi.complete_done(0);
            0
        }
    }

    #[pin_data]
    struct SpareData {
        #[pin]
        slot: crate::sync::Mutex<Option<Pin<KBox<SpareQueue>>>>,
    }

    idle_ops!(SpareData);

    #[test]
    fn a_napi_dropped_under_the_instance_lock_is_taken_off() -> Result {
        let faux = faux::Registration::new(c"rust_net_napi", None)?;
        let parent: &faux::Device<Bound> = faux.as_ref();
        let parent: &GenericDevice<Bound> = parent.as_ref();
        let reg = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x03],
            try_pin_init!(SpareData {
                slot <- crate::new_mutex!(None),
            }? Error),
            |_| Ok(()),
        )?;
        let dev = reg.device();
        // SAFETY: the test's thread, in process context, holds no lock.
        let unlocked = unsafe { crate::net::driver::UnlockedDevice::from_device(dev) };
        unlocked.with_rtnl_locked(|locked| -> Result {
            // The locks this thread holds are not taken again.
            assert_eq!(locked.lock().err(), Some(EDEADLK));
            assert_eq!(unlocked.with_rtnl_locked(|_| Ok(())).err(), Some(EDEADLK));
            let q = KBox::pin_init(
                pin_init!(SpareQueue {
                    napi <- Napi::new(),
                }),
                GFP_KERNEL,
            )?;
            let mut slot = dev.data().slot.lock();
            let q = &**slot.insert(q);
            // SAFETY: the owner is the queue the instance is in, which has
            // nothing else and no drop of its own; the queue is in the data
            // of `dev`, the only device it is added to, and reached only
            // through it; index 0 is its alone.
            let napi = unsafe { q.napi.add(locked, q, 0)? };
            napi.enable(locked);
            // Dropped under the instance lock, as a callback would: taken
            // off in place, not waiting for the lock.
            *slot = None;
            // SAFETY: the list changes under the instance lock, held.
            let list = unsafe { &raw mut (*dev.as_raw()).napi_list };
            // SAFETY: as above.
            assert!(core::ptr::eq(unsafe { (*list).next }, list));
            Ok(())
        })?;
        drop(reg);
        Ok(())
    }

    /// Frames the poll of [`GroQueue`] handed to GRO.
    static HANDED: Atomic<u32> = Atomic::new(0);

    /// A queue whose poll hands GRO a frame that names another device, one
    /// that names none, one of its own that is shared, and one of its own.
    #[pin_data]
    struct GroQueue {
        #[pin]
        napi: Napi<GroQueue>,
    }

    impl Poll for GroQueue {
        type Data = GroData;

        fn poll(_this: &Self, mut napi: NapiPoll<'_, Self>) -> i32 {
            let other = napi.dev().data().other;
            if let Some(rx) = napi.rx() {
                let own: &NetDevice = rx.dev();
                for (dev, keep, shared) in [
                    (other, true, false),
                    (own, false, false),
                    (own, true, true),
                    (own, true, false),
                ] {
                    // A broadcast frame of an unknown protocol (0xffff):
                    // the stack counts it dropped on the device it names.
                    let Some(mut skb) = rx.alloc_skb(64) else {
                        continue;
                    };
                    if skb.put_data(&[0xff; 60]).is_err() || skb.eth_type_trans(dev).is_err() {
                        continue;
                    }
                    if !keep {
                        // SAFETY: a buffer of ours on no list: `dev` is
                        // the live member of the union.
                        unsafe {
                            (*skb.as_raw())
                                .__bindgen_anon_1
                                .__bindgen_anon_1
                                .__bindgen_anon_1
                                .dev = core::ptr::null_mut()
                        };
                    }
                    HANDED.add(1, Relaxed);
                    let raw = skb.as_raw();
                    if shared {
                        // SAFETY: a live buffer; the poll holds a second
                        // reference across the call, as pktgen would.
                        unsafe { bindings::refcount_inc(&raw mut (*raw).users) };
                    }
                    rx.gro_receive(skb);
                    if shared {
                        // SAFETY: the reference taken above.
                        unsafe { bindings::consume_skb(raw) };
                    }
                }
            }
            napi.complete_done(0);
            0
        }
    }

    #[pin_data]
    struct GroData {
        /// Another registered device.
        other: &'static NetDevice,
        #[pin]
        q: GroQueue,
    }

    idle_ops!(GroData, OtherData);

    /// The frames the stack dropped on `dev` (`rx_dropped`).
    fn rx_dropped(dev: &NetDevice) -> u64 {
        let mut stats = bindings::rtnl_link_stats64::default();
        // SAFETY: a registered device; `dev_get_stats` fills `stats`.
        unsafe { bindings::dev_get_stats(dev.as_raw(), &mut stats) };
        stats.rx_dropped
    }

    #[test]
    fn gro_drops_frames_of_other_devices() -> Result {
        let faux = faux::Registration::new(c"rust_net_napi_gro", None)?;
        let parent: &faux::Device<Bound> = faux.as_ref();
        let parent: &GenericDevice<Bound> = parent.as_ref();
        let other = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x03],
            Ok::<_, Error>(OtherData),
            |_| Ok(()),
        )?;
        // SAFETY: the device outlives the registration below, which goes
        // first, at the end of the test; `'static` only for the data's
        // type.
        let other_dev: &'static NetDevice = unsafe { &*core::ptr::from_ref(&**other.device()) };
        let reg = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x04],
            try_pin_init!(GroData {
                other: other_dev,
                q <- pin_init!(GroQueue {
                    napi <- Napi::new(),
                }),
            }? Error),
            |_| Ok(()),
        )?;
        let dev = reg.device();
        HANDED.store(0, Relaxed);
        let (mine, theirs) = (rx_dropped(dev), rx_dropped(other_dev));
        let q = &dev.data().q;
        // SAFETY: the test's thread, in process context, holds no lock.
        let unlocked = unsafe { crate::net::driver::UnlockedDevice::from_device(dev) };
        unlocked.with_rtnl_locked(|locked| -> Result {
            // SAFETY: as in `no_poll_once_the_registration_goes`.
            let napi = unsafe { q.napi.add(locked, q, 0)? };
            napi.enable(locked);
            Ok(())
        })?;
        assert!(q.napi.schedule());
        for _ in 0..100 {
            if rx_dropped(dev) > mine {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        // All four went to GRO; only the device's own exclusive one reached
        // the stack, which dropped it, unknown, on the device. The others
        // were freed before: the other device saw nothing, the one that
        // named no device did not reach the stack, which would have
        // crashed on it, and GRO did not take the shared one, which it
        // would have freed under its other holder.
        assert_eq!(HANDED.load(Relaxed), 4);
        assert_eq!(rx_dropped(dev), mine + 1);
        assert_eq!(rx_dropped(other_dev), theirs);
        drop(reg);
        drop(other);
        Ok(())
    }

    /// The data of a device with no queues of its own.
    struct OtherData;

    #[test]
    fn completions_stop_at_what_is_in_flight() {
        assert_eq!(poll::completable(1500, 3000, 1000), 1500);
        assert_eq!(poll::completable(2000, 3000, 1000), 2000);
        assert_eq!(poll::completable(u32::MAX, 3000, 1000), 2000);
        assert_eq!(poll::completable(u32::MAX, 0, 0), 0);
        // The counts wrap.
        assert_eq!(poll::completable(100, 10, u32::MAX - 9), 20);
        assert_eq!(poll::completable(100, 10, 20), 100);
    }

    #[cfg(CONFIG_PAGE_POOL)]
    #[test]
    fn packets_are_built_up_to_a_cache_line_boundary() {
        // CAST: a small power of two.
        let line = bindings::SMP_CACHE_BYTES as usize;
        let page = 1 << 20;
        assert_eq!(poll::build_size(page, 4096), 4096);
        assert_eq!(poll::build_size(page, 1001), (1001 / line * line) as u32);
        assert_eq!(
            poll::build_size(page + 8, 1001),
            ((1009 / line * line) - 8) as u32
        );
        assert_eq!(poll::build_size(page + 8, line - 16), 0);
        assert_eq!(poll::build_size(page + 8, 0), 0);
    }

    /// Checks of the receive test's poll, a bit each, set when it held.
    #[cfg(CONFIG_PAGE_POOL)]
    mod check {
        /// `build_skb` names the instance's device in the packet.
        pub(super) const BUILT_FOR_THE_DEVICE: u32 = 1 << 0;
        /// `eth_type_trans` pulls a header from the linear part only.
        pub(super) const ETH_HEADER_IN_THE_LINEAR_PART: u32 = 1 << 1;
        /// Completing more than was sent leaves byte queue limits' counts
        /// sound (and does not BUG).
        pub(super) const NO_MORE_COMPLETED_THAN_SENT: u32 = 1 << 2;
        /// A clone's data and frags are not changed through it.
        pub(super) const CLONES_LEFT_ALONE: u32 = 1 << 3;
        /// Only what was synced for the CPU goes to the stack.
        pub(super) const SYNCED_ONLY: u32 = 1 << 5;
        /// A packet built around a buffer of any size has its shared info
        /// aligned to a cache line.
        pub(super) const SHINFO_ALIGNED: u32 = 1 << 4;
        /// Buffers of `build_buf_size(len)` carved one after the other
        /// from a page each take a packet of `len` bytes, shared info
        /// aligned.
        pub(super) const BUILD_BUF_SIZE_FITS: u32 = 1 << 6;
    }

    /// What the receive test's poll found (`check` bits).
    #[cfg(CONFIG_PAGE_POOL)]
    static RX_CHECKS: Atomic<u32> = Atomic::new(0);
    /// Whether the receive test's poll ran its checks.
    #[cfg(CONFIG_PAGE_POOL)]
    static RX_POLLED: Atomic<bool> = Atomic::new(false);

    #[cfg(CONFIG_PAGE_POOL)]
    #[pin_data]
    struct RxQueue {
        #[pin]
        napi: Napi<RxQueue>,
        pool: SetOnce<PoolId>,
    }

    #[cfg(CONFIG_PAGE_POOL)]
    impl Poll for RxQueue {
        type Data = RxData;

        fn poll(this: &Self, mut napi: NapiPoll<'_, Self>) -> i32 {
            if !RX_POLLED.load(Acquire) {
                RX_CHECKS.store(rx_checks(this, &mut napi), Relaxed);
                RX_POLLED.store(true, Release);
            }
            napi.complete_done(0);
            0
        }
    }

    /// The device of a packet.
    #[cfg(CONFIG_PAGE_POOL)]
    fn skb_dev(skb: &SkBuff) -> *mut bindings::net_device {
        // SAFETY: a packet of ours, not shared.
        unsafe {
            (*skb.as_raw())
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev
        }
    }

    /// A buffer of the instance's pool `id` (`size` bytes of a shared
    /// one, or a whole one), its `len` bytes from `off` synced for the
    /// CPU.
    #[cfg(CONFIG_PAGE_POOL)]
    fn synced_buf(
        rx: &mut NapiRx<'_, RxQueue>,
        id: PoolId,
        size: Option<u32>,
        off: u32,
        len: u32,
    ) -> Option<PoolNetmem> {
        let buf = {
            let mut pool = rx.pool(id)?;
            match size {
                Some(size) => pool.alloc_frag(size),
                None => pool.alloc(),
            }?
        };
        buf.sync_for_cpu(rx.pool_ref(id)?, off, len);
        Some(buf)
    }

    /// What the receive side of a poll does, checked.
    #[cfg(CONFIG_PAGE_POOL)]
    fn rx_checks(q: &RxQueue, napi: &mut NapiPoll<'_, RxQueue>) -> u32 {
        let mut ok = 0;
        // Nothing was sent.
        napi.tx_completed(1, u32::MAX);
        #[cfg(CONFIG_BQL)]
        if let Some(txq) = napi.dev().tx_queue(0) {
            // SAFETY: a transmit queue of the device; the device is down:
            // nothing sends.
            let (queued, completed) = unsafe { ((*txq).dql.num_queued, (*txq).dql.num_completed) };
            if completed == queued {
                ok |= check::NO_MORE_COMPLETED_THAN_SENT;
            }
        }
        #[cfg(not(CONFIG_BQL))]
        {
            ok |= check::NO_MORE_COMPLETED_THAN_SENT;
        }
        let Some(id) = q.pool.copy() else {
            return ok;
        };
        let Some(mut rx) = napi.rx() else {
            return ok;
        };
        let ndev = rx.dev();
        let dev = ndev.as_raw();
        if let Some(buf) = synced_buf(&mut rx, id, None, RX_HEADROOM, 64) {
            if let Ok(mut skb) = rx.build_skb(buf, RX_HEADROOM, 64) {
                if skb_dev(&skb) == dev {
                    ok |= check::BUILT_FOR_THE_DEVICE;
                }
                if skb.eth_type_trans(ndev).is_ok() && skb.len() == 64 - 14 {
                    ok |= check::ETH_HEADER_IN_THE_LINEAR_PART;
                }
                skb.consume();
            }
        }
        // Nothing synced, or not all of the frame: refused.
        let refused = |buf: Option<PoolNetmem>, rx: &NapiRx<'_, RxQueue>| {
            buf.is_some_and(|buf| rx.build_skb(buf, RX_HEADROOM, 64).is_err())
        };
        let unsynced = rx.pool(id).and_then(|mut p| p.alloc());
        let part = synced_buf(&mut rx, id, None, RX_HEADROOM, 63);
        let frag_part = synced_buf(&mut rx, id, None, 1, 64);
        let frag_refused = frag_part.is_some_and(|buf| {
            rx.alloc_skb(0).is_some_and(|mut skb| {
                let refused = skb.add_rx_frag(buf, 0, 64).is_err();
                skb.consume();
                refused
            })
        });
        if refused(unsynced, &rx) && refused(part, &rx) && frag_refused {
            ok |= check::SYNCED_ONLY;
        }
        // Buffers of a size that is not a multiple of a cache line, the
        // second at an offset that need not be one either.
        let mut aligned = true;
        for _ in 0..2 {
            let Some(buf) = synced_buf(&mut rx, id, Some(1001), RX_HEADROOM, 64) else {
                aligned = false;
                break;
            };
            match rx.build_skb(buf, RX_HEADROOM, 64) {
                Ok(skb) => {
                    // SAFETY: a packet of ours; its shared info follows
                    // its data.
                    let shinfo = unsafe { bindings::skb_shinfo(skb.as_raw()) };
                    // CAST: a small power of two.
                    aligned &= (shinfo as usize) % (bindings::SMP_CACHE_BYTES as usize) == 0;
                    skb.consume();
                }
                Err(_) => aligned = false,
            }
        }
        if aligned {
            ok |= check::SHINFO_ALIGNED;
        }
        // Back to back from the start of a page (earlier buffers of other
        // sizes left the pool's current page at an odd offset), each as
        // full as it may be.
        const LEN: u32 = 256;
        let mut built = 0;
        let mut fits = true;
        for _ in 0..16 {
            let Some(buf) = synced_buf(&mut rx, id, Some(build_buf_size(LEN)), RX_HEADROOM, LEN)
            else {
                break;
            };
            if built == 0 && buf.offset() != 0 {
                continue;
            }
            match rx.build_skb(buf, RX_HEADROOM, LEN) {
                Ok(skb) => {
                    // SAFETY: as above.
                    let shinfo = unsafe { bindings::skb_shinfo(skb.as_raw()) };
                    // CAST: a small power of two.
                    fits &= (shinfo as usize) % (bindings::SMP_CACHE_BYTES as usize) == 0
                        && skb.len() == LEN;
                    skb.consume();
                }
                Err(_) => fits = false,
            }
            built += 1;
            if built == 3 {
                break;
            }
        }
        if fits && built == 3 {
            ok |= check::BUILD_BUF_SIZE_FITS;
        }
        // A clone, as `start_xmit` may get one: its data is not its alone.
        if let Some(skb) = rx.alloc_skb(64) {
            // SAFETY: a packet of ours; the clone is a new one, ours too.
            let clone = unsafe { bindings::skb_clone(skb.as_raw(), bindings::GFP_ATOMIC) };
            if !clone.is_null() {
                // SAFETY: a new packet, ours.
                let mut clone = unsafe { SkBuff::from_raw(clone) };
                let refused = skb.is_cloned()
                    && clone.is_cloned()
                    && !clone.is_shared()
                    && clone.put_data(&[0; 16]) == Err(EBUSY)
                    && synced_buf(&mut rx, id, None, 0, 64)
                        .is_some_and(|buf| clone.add_rx_frag(buf, 0, 64).is_err())
                    && clone.is_empty()
                    && clone.nr_frags() == 0;
                clone.consume();
                // Its own again once the clone is gone.
                if refused && skb.is_exclusive() {
                    ok |= check::CLONES_LEFT_ALONE;
                }
            }
            skb.consume();
        }
        // All in a frag: nothing to pull the header from, and the packet
        // stays as it was.
        let refused = rx.alloc_skb(0).is_some_and(|mut skb| {
            let refused = synced_buf(&mut rx, id, None, 0, 64)
                .is_some_and(|buf| skb.add_rx_frag(buf, 0, 64).is_ok())
                && skb.headlen() == 0
                && skb.eth_type_trans(ndev).is_err()
                && skb.len() == 64;
            skb.consume();
            refused
        });
        if !refused {
            ok &= !check::ETH_HEADER_IN_THE_LINEAR_PART;
        }
        ok
    }

    #[cfg(CONFIG_PAGE_POOL)]
    #[pin_data]
    struct RxData {
        #[pin]
        q: RxQueue,
    }

    #[cfg(CONFIG_PAGE_POOL)]
    idle_ops!(RxData);

    #[cfg(CONFIG_PAGE_POOL)]
    #[test]
    fn a_poll_builds_packets_the_stack_can_take() -> Result {
        let faux = faux::Registration::new(c"rust_net_napi_rx", None)?;
        let parent: &faux::Device<Bound> = faux.as_ref();
        let parent: &GenericDevice<Bound> = parent.as_ref();
        let reg = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x03],
            try_pin_init!(RxData {
                q <- pin_init!(RxQueue {
                    napi <- Napi::new(),
                    pool: SetOnce::new(),
                }),
            }? Error),
            |_| Ok(()),
        )?;
        let dev = reg.device();
        // No sender hands `start_xmit` a packet it keeps a reference to.
        type Group = bindings::net_device__bindgen_ty_1__bindgen_ty_1;
        // SAFETY: a registered device; the bit field is read through a
        // raw place.
        let flags = unsafe {
            Group::priv_flags_raw(&raw const (*dev.as_raw()).__bindgen_anon_1.__bindgen_anon_1)
        };
        assert_eq!(
            flags & bindings::netdev_priv_flags_IFF_TX_SKB_SHARING as c_ulong,
            0
        );
        let q = &dev.data().q;
        // A faux device has no DMA mask: the pool does not map.
        let pool = Pool::new(&Params::new(parent, 0, 16).unmapped())?;
        // SAFETY: the test's thread, in process context, holds no lock.
        let unlocked = unsafe { crate::net::driver::UnlockedDevice::from_device(dev) };
        unlocked.with_rtnl_locked(|locked| -> Result {
            // SAFETY: as in `no_poll_once_the_registration_goes`.
            let napi = unsafe { q.napi.add(locked, q, 0)? };
            let id = napi.attach_pool(locked, pool).map_err(|(e, _)| e)?;
            q.pool.populate(id);
            napi.enable(locked);
            Ok(())
        })?;
        assert!(q.napi.schedule());
        for _ in 0..100 {
            if RX_POLLED.load(Acquire) {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        assert!(RX_POLLED.load(Acquire));
        let ok = RX_CHECKS.load(Relaxed);
        assert_ne!(ok & check::BUILT_FOR_THE_DEVICE, 0);
        assert_ne!(ok & check::ETH_HEADER_IN_THE_LINEAR_PART, 0);
        assert_ne!(ok & check::NO_MORE_COMPLETED_THAN_SENT, 0);
        assert_ne!(ok & check::CLONES_LEFT_ALONE, 0);
        assert_ne!(ok & check::SHINFO_ALIGNED, 0);
        assert_ne!(ok & check::SYNCED_ONLY, 0);
        assert_ne!(ok & check::BUILD_BUF_SIZE_FITS, 0);
        // Takes the instance off, destroying its pool.
        drop(reg);
        Ok(())
    }
}
