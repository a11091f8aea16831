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
    net::{
        driver::{
            Device,
            LockedDevice, //
        },
        netdev, //
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
    NapiRx,
    RxSkb, //
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
        let held = unsafe { netdev::lock_held_by_current(dev) };
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

#[cfg(CONFIG_KUNIT)]
mod tests;
