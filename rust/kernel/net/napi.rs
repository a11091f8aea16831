// SPDX-License-Identifier: GPL-2.0

//! NAPI: a driver's polled receive and transmit-completion work.
//!
//! A [`Napi`] is embedded, pinned, in the object that owns a queue's state
//! (the owner, `T`), and polls it through [`Poll::poll`]. It is added to a
//! device with [`Napi::add`] and removed when dropped; [`Napi::enable`] and
//! [`Napi::disable`] bracket the time the device is up.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)

use crate::{
    ffi::c_int,
    net::{
        netdev::NetDevice,
        page_pool::PoolNetmem,
        skbuff::{
            SkBuff,
            SHINFO_ROOM, //
        },
    },
    prelude::*,
    types::Opaque, //
};
use core::{
    cell::Cell,
    marker::PhantomPinned, //
};

/// What a NAPI instance polls.
pub trait Poll: Sized + Sync {
    /// Does up to `budget` units of receive work; returns how many it did.
    /// Returning less than `budget` means the work is done: the owner calls
    /// [`Napi::complete_done`] and re-enables its interrupt.
    fn poll(this: &Self, napi: &Napi<Self>, budget: i32) -> i32;
}

/// A NAPI instance (`struct napi_struct`) polling an owner `T`.
///
/// An instance that is not on a device reads as disabled (its `SCHED` bit
/// is set), before [`Napi::add`] as after [`Napi::remove_locked`]:
/// [`Napi::schedule`] then leaves it alone.
///
/// # Invariants
///
/// `owner` is null while the instance is not on a device; from
/// [`Napi::add`] until it is removed it points to the object the `Napi` is
/// embedded in, which removes it (at the latest on drop) before going.
#[repr(C)]
#[pin_data(PinnedDrop)]
pub struct Napi<T: Poll> {
    #[pin]
    raw: Opaque<bindings::napi_struct>,
    owner: Cell<*const T>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: the NAPI core serialises polls; the other methods are callable
// from any context the C API allows.
unsafe impl<T: Poll> Send for Napi<T> {}

// SAFETY: as above; `owner` is only written while the instance is not on
// its device (by `add` and the removals), so never while a poll reads it.
unsafe impl<T: Poll> Sync for Napi<T> {}

impl<T: Poll> Napi<T> {
    /// A NAPI instance, not yet added to a device.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            raw <- Opaque::zeroed(),
            owner: Cell::new(core::ptr::null()),
            _pin: PhantomPinned,
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

    pub(crate) fn as_raw(&self) -> *mut bindings::napi_struct {
        self.raw.get()
    }

    /// Adds the instance to `dev` as the NAPI of queue `index`, polling
    /// `owner` (`netif_napi_add_config`). The instance keeps the queue's
    /// settings and NAPI ID across disable and enable, so the device's
    /// NAPI list stays sorted by ID (as netlink dumps need) however its
    /// queues restart.
    ///
    /// # Safety
    ///
    /// `owner` is the object this `Napi` is embedded in, and `dev` outlives
    /// it; `index` is below the number of queues `dev` was allocated with
    /// and no other instance of `dev` has it.
    pub unsafe fn add(&self, dev: &NetDevice, owner: &T, index: u32) {
        self.owner.set(owner);
        // CAST: below the device's queue count, an int.
        let index = index as c_int;
        // SAFETY: the instance is pinned, zeroed and not yet added; `dev`
        // is a live device with a NAPI config for `index`, per the caller;
        // the poll function matches.
        unsafe {
            bindings::netif_napi_add_config(
                dev.as_raw(),
                self.as_raw(),
                Some(Self::poll_callback),
                index,
            )
        }
    }

    /// Names `irq` as the interrupt that schedules the instance
    /// (`netif_napi_set_irq_locked`): netlink reports it with the NAPI, and
    /// tools find which CPU takes a queue's interrupts by it.
    ///
    /// # Safety
    ///
    /// The instance was added; its device is not registered yet, or the
    /// caller holds the device's instance lock.
    pub unsafe fn set_irq_locked(&self, irq: u32) {
        // CAST: Linux interrupt numbers fit an int.
        let irq = irq as c_int;
        // SAFETY: an added instance; the device is invisible or locked,
        // per the caller.
        unsafe { bindings::netif_napi_set_irq_locked(self.as_raw(), irq) }
    }

    /// As [`Napi::add`], with the device's instance lock held
    /// (`netif_napi_add_config_locked`): from `open`, to have instances on
    /// the device only for the queues in use, as the NAPI core expects
    /// (turning threaded polling off waits for every listed instance to go
    /// idle, which a disabled one never does).
    ///
    /// # Safety
    ///
    /// As for [`Napi::add`]; the instance is not on its device, and the
    /// caller holds `dev`'s instance lock.
    pub unsafe fn add_locked(&self, dev: &NetDevice, owner: &T, index: u32) {
        self.owner.set(owner);
        // CAST: below the device's queue count, an int.
        let index = index as c_int;
        // SAFETY: as in `add`; the lock is held per the caller.
        unsafe {
            bindings::netif_napi_add_config_locked(
                dev.as_raw(),
                self.as_raw(),
                Some(Self::poll_callback),
                index,
            )
        }
    }

    /// Takes the instance off its device (`netif_napi_del_locked`); it
    /// keeps its NAPI ID and settings for the next [`Napi::add_locked`] of
    /// the same index.
    ///
    /// # Safety
    ///
    /// The instance is on its device and disabled; no queue is served by
    /// it ([`Napi::serve_queues`]); the caller holds the device's instance
    /// lock.
    pub unsafe fn remove_locked(&self) {
        // SAFETY: listed and disabled, the lock held, per the caller.
        unsafe { bindings::netif_napi_del_locked(self.as_raw()) };
        self.owner.set(core::ptr::null());
    }

    /// The device the instance was added to.
    pub fn dev(&self) -> &NetDevice {
        // SAFETY: set by `add` and kept while the instance is
        // added, which it is whenever it polls (the only time a driver
        // reaches it through its owner); the device outlives it.
        unsafe { NetDevice::from_raw((*self.as_raw()).dev) }
    }

    /// Lets the instance be scheduled (`napi_enable`).
    pub fn enable(&self) {
        // An instance off its device stays disabled.
        if self.owner.get().is_null() {
            return;
        }
        // SAFETY: the instance is on its device (type invariant).
        unsafe { bindings::napi_enable(self.as_raw()) }
    }

    /// Stops the instance and waits for a poll under way (`napi_disable`).
    /// May sleep.
    pub fn disable(&self) {
        // SAFETY: as for `enable`.
        unsafe { bindings::napi_disable(self.as_raw()) }
    }

    /// As [`Napi::enable`], with the device's instance lock held
    /// (`napi_enable_locked`): in the callbacks of a device with the queue
    /// management API, which the core calls under that lock.
    ///
    /// # Safety
    ///
    /// The caller holds the instance lock of the device the instance was
    /// added to.
    pub unsafe fn enable_locked(&self) {
        // SAFETY: added, and the lock is held per the caller.
        unsafe { bindings::napi_enable_locked(self.as_raw()) }
    }

    /// As [`Napi::disable`], with the device's instance lock held
    /// (`napi_disable_locked`).
    ///
    /// # Safety
    ///
    /// As for [`Napi::enable_locked`].
    pub unsafe fn disable_locked(&self) {
        // SAFETY: added, and the lock is held per the caller.
        unsafe { bindings::napi_disable_locked(self.as_raw()) }
    }

    /// Names the instance as the one serving receive queue and transmit
    /// queue `index` of its device, or, with `serve` false, forgets that
    /// (`netif_queue_set_napi`): netlink reports the queues' `napi-id`, and
    /// busy polling and zero-copy receive find the instance by it.
    ///
    /// # Safety
    ///
    /// The instance was added; the caller holds the instance lock of its
    /// device; `index` is below the device's real receive and transmit
    /// queue counts; a served queue is forgotten before the instance is
    /// removed.
    pub unsafe fn serve_queues(&self, index: u32, serve: bool) {
        let dev = self.dev().as_raw();
        let napi = if serve {
            self.as_raw()
        } else {
            core::ptr::null_mut()
        };
        for ty in [
            bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_RX,
            bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_TX,
        ] {
            // SAFETY: a live device, the lock held and `index` in range,
            // per the caller; `napi` is this added instance or null.
            unsafe { bindings::netif_queue_set_napi(dev, index, ty, napi) };
        }
    }

    /// Schedules a poll (`napi_schedule`): from the interrupt handler, or
    /// after [`Napi::enable`] to take what the device did while polling was
    /// off. `false` when a poll was already scheduled or the instance is
    /// disabled.
    pub fn schedule(&self) -> bool {
        // SAFETY: the instance was added.
        unsafe { bindings::napi_schedule(self.as_raw()) }
    }

    /// Ends polling after `work_done` units (`napi_complete_done`); `false`
    /// when the instance stays scheduled, and the interrupt must stay off.
    pub fn complete_done(&self, work_done: i32) -> bool {
        // SAFETY: called from this instance's poll.
        unsafe { bindings::napi_complete_done(self.as_raw(), work_done) }
    }

    /// Hands a received packet to the stack through GRO
    /// (`napi_gro_receive`).
    pub fn gro_receive(&self, skb: SkBuff) {
        // SAFETY: called from this instance's poll; the buffer is given up.
        unsafe { bindings::napi_gro_receive(self.as_raw(), skb.into_raw()) };
    }

    /// A buffer of `len` bytes for a received packet, with headroom
    /// (`napi_alloc_skb`); `None` without memory.
    // The caller is who made it, should it be dropped without a reason.
    #[cfg_attr(CONFIG_DEBUG_NET, track_caller)]
    pub fn alloc_skb(&self, len: u32) -> Option<SkBuff> {
        // SAFETY: called from this instance's poll.
        let skb = unsafe { bindings::napi_alloc_skb(self.as_raw(), len) };
        if skb.is_null() {
            return None;
        }
        // SAFETY: a new buffer, ours.
        Some(unsafe { SkBuff::from_raw(skb) })
    }

    /// A packet built around a received frame where the device wrote it
    /// (`napi_build_skb`), without copying: `len` bytes at `headroom` into
    /// `buf`, a readable pool buffer whose last [`SHINFO_ROOM`] bytes take
    /// the packet's shared info. The packet's head takes the buffer's pool
    /// reference and goes back to the pool when the packet is freed
    /// (`skb_mark_for_recycle`). Hands the buffer back when the frame and
    /// the shared info do not fit in it, or memory runs out.
    // As in `alloc_skb`.
    #[cfg_attr(CONFIG_DEBUG_NET, track_caller)]
    pub fn build_skb(
        &self,
        buf: PoolNetmem,
        headroom: u32,
        len: u32,
    ) -> Result<SkBuff, PoolNetmem> {
        let truesize = buf.size();
        let fits = headroom
            .checked_add(len)
            .is_some_and(|n| buf.holds(n, SHINFO_ROOM));
        if !fits || !buf.is_readable() {
            return Err(buf);
        }
        // SAFETY: a page of the pool (readable), mapped in the kernel's
        // address space.
        let base = unsafe { bindings::netmem_address(buf.netmem().as_raw()) };
        if base.is_null() {
            return Err(buf);
        }
        // SAFETY: the buffer is `truesize` bytes from `offset` into the page,
        // and only its reference uses them (`PoolNetmem`'s invariant); the
        // shared info goes in its last `SHINFO_ROOM` bytes, after the
        // frame (checked above); called from this instance's poll.
        let raw = unsafe {
            bindings::napi_build_skb(
                base.cast::<u8>().add(buf.offset() as usize).cast(),
                truesize,
            )
        };
        if raw.is_null() {
            return Err(buf);
        }
        // The head owns the pool reference from now on.
        let _ = buf.into_raw();
        // SAFETY: a new packet, ours; `headroom + len` bytes of its buffer
        // are before its shared info, as checked above.
        unsafe {
            bindings::skb_reserve(raw, headroom as c_int);
            bindings::__skb_put(raw, len);
            bindings::skb_mark_for_recycle(raw);
            Ok(SkBuff::from_raw(raw))
        }
    }

    /// # Safety
    ///
    /// Called by the NAPI core for an instance added by [`Napi::add`].
    unsafe extern "C" fn poll_callback(napi: *mut bindings::napi_struct, budget: c_int) -> c_int {
        // SAFETY: `napi` is the `raw` field, at offset 0 of a `#[repr(C)]`
        // `Napi<T>`, which this callback was registered for.
        let this = unsafe { &*napi.cast::<Self>() };
        // SAFETY: set by `add` before the instance could be scheduled, and
        // alive until the instance is removed (type invariant).
        let owner = unsafe { &*this.owner.get() };
        T::poll(owner, this, budget)
    }
}

#[pinned_drop]
impl<T: Poll> PinnedDrop for Napi<T> {
    fn drop(self: Pin<&mut Self>) {
        if !self.owner.get().is_null() {
            // SAFETY: added, so it is on its device's list; the owner
            // disabled it before letting it go.
            unsafe { bindings::netif_napi_del(self.as_raw()) };
        }
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
    /// called, while `napi` is disabled, before it is removed.
    pub unsafe fn napi<T: Poll>(mut self, napi: &'a Napi<T>) -> Self {
        self.fast().napi = napi.as_raw();
        self
    }
}

#[cfg(CONFIG_PAGE_POOL)]
impl super::page_pool::Pool {
    /// Names `napi` as the instance whose poll uses the pool, for a pool
    /// made without one (`page_pool_enable_direct_recycling`): the point
    /// where the control path hands the pool over to the NAPI instance.
    ///
    /// A pool made for a queue that is not yet started (the queue
    /// management API's `mem_alloc`) must not name the queue's NAPI at
    /// creation: if the allocation fails, the pool is destroyed while that
    /// NAPI still runs the old queue, which the page pool core forbids.
    ///
    /// Sleeps (takes the page pools' mutex).
    ///
    /// # Safety
    ///
    /// As for [`Params::napi`](super::page_pool::Params::napi): only
    /// `napi`'s poll allocates from the pool while `napi` is enabled, and
    /// the pool is destroyed, or
    /// [`Pool::disable_direct_recycling`](super::page_pool::Pool::disable_direct_recycling) is
    /// called, while `napi` is disabled, before it is removed. The pool
    /// names no other NAPI instance.
    pub unsafe fn enable_direct_recycling<T: Poll>(&self, napi: &Napi<T>) {
        // SAFETY: a live pool and a live NAPI instance; the pool's NAPI
        // cannot race with this, per the caller.
        unsafe {
            bindings::page_pool_enable_direct_recycling(self.as_page_pool().as_raw(), napi.as_raw())
        }
    }
}
