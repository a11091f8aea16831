// SPDX-License-Identifier: GPL-2.0

//! Work items of a network driver, run in process context on the system
//! workqueue (a C `delayed_work` in the driver's data).
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use super::{
    registration::Private,
    Device,
    Operations,
    UnlockedDevice, //
};
use crate::{
    prelude::*,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Release, //
        },
        CondVar,
        LockClassKey,
        Mutex, //
    },
    time::Jiffies,
    types::Opaque,
};
use core::marker::{
    PhantomData,
    PhantomPinned, //
};

/// A job of a network driver, run in process context by a [`DeviceWork`]
/// in the driver's data. `ID` tells apart the jobs of one driver.
pub trait DeviceWorkItem<const ID: u64 = 0>: Operations {
    /// Does the job, for `dev`. May sleep, and take RTNL and the device's
    /// instance lock ([`UnlockedDevice::with_rtnl_locked`]), neither of
    /// which the run holds. Runs neither concurrently with itself, nor
    /// after [`DeviceWork::disable_sync`] returned, nor once the
    /// [`Registration`](super::Registration) started to go.
    fn run(dev: &UnlockedDevice<Self>);
}

/// The gate the runs of every [`DeviceWork`] of a device pass, in the
/// device's private area after the driver's data ([`Private`]).
///
/// [`Registration`](super::Registration) closes it before it unregisters
/// the device or drops the data: [`Runs::close`] waits for the runs in
/// progress, and a run that comes later finds it closed and returns
/// without calling [`DeviceWorkItem::run`]. So no run sees the data
/// while it drops, field by field, nor after, and no run makes a counted
/// reference to the device after `unregister_netdev` waited for them all:
/// one a run made before is waited for, as any other.
///
/// `state` is a leaf lock: held only for a few instructions, with no
/// other lock taken under it, and not across a call of the driver.
///
/// # Invariants
///
/// `running` counts the runs between a successful [`Runs::enter`] and
/// their [`Runs::leave`]; none enters once `closed` is set.
#[pin_data]
pub(super) struct Runs {
    #[pin]
    state: Mutex<RunsState>,
    /// Signalled when `running` drops to zero.
    #[pin]
    idle: CondVar,
}

struct RunsState {
    closed: bool,
    running: usize,
}

/// The gate's lock classes and their names, each at one address: lockdep
/// tells classes apart by the key and checks the name by its address, and
/// `new` runs in the driver's crate when rustc inlines it there, where a
/// string literal would be a copy of its own.
static STATE_NAME: &CStr = c"Runs::state";
static IDLE_NAME: &CStr = c"Runs::idle";
// SAFETY: static memory, pinned by `Pin::static_ref` below; a static is
// never dropped.
static STATE_CLASS: LockClassKey = unsafe { LockClassKey::new_static() };
// SAFETY: as for `STATE_CLASS`.
static IDLE_CLASS: LockClassKey = unsafe { LockClassKey::new_static() };

impl Runs {
    /// An open gate, no run in progress.
    #[inline(never)]
    pub(super) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            state <- Mutex::new(
                RunsState {
                    closed: false,
                    running: 0,
                },
                STATE_NAME,
                Pin::static_ref(&STATE_CLASS),
            ),
            idle <- CondVar::new(IDLE_NAME, Pin::static_ref(&IDLE_CLASS)),
        })
    }

    /// Lets a run in, unless the gate is closed: then `false`, and the run
    /// must not touch the data.
    fn enter(&self) -> bool {
        let mut state = self.state.lock();
        if state.closed {
            return false;
        }
        // INVARIANT: one more run in progress; it leaves when done. No
        // overflow: each `DeviceWork`, in memory, runs once at a time.
        state.running += 1;
        true
    }

    /// Ends a run [`Runs::enter`] let in.
    fn leave(&self) {
        let mut state = self.state.lock();
        // INVARIANT: the run that entered ends.
        state.running -= 1;
        if state.running == 0 {
            self.idle.notify_all();
        }
    }

    /// Closes the gate and waits for the runs in progress. Sleeps: process
    /// context, and not from a run, which would wait for itself. Closing
    /// again only waits (for no one).
    pub(super) fn close(&self) {
        let mut state = self.state.lock();
        // INVARIANT: no run enters from here on.
        state.closed = true;
        while state.running > 0 {
            self.idle.wait(&mut state);
        }
    }
}

/// A work item in a network driver's data `T`, which runs
/// [`DeviceWorkItem::run`] on the system workqueue, now or after a delay
/// (a C `delayed_work`).
///
/// It starts disabled: [`DeviceWork::enable`] lets it be queued, and
/// [`DeviceWork::disable_sync`] waits for a run in progress, drops one
/// pending and refuses new ones until it is enabled again; the calls
/// nest, as those of C.
///
/// A driver need not disable it before the device goes, though it may
/// (in [`Operations::stop`], for a job that takes neither RTNL nor the
/// instance lock, say): [`Registration`](super::Registration)
/// first closes the gate of the device's runs ([`Runs`]), waiting for a
/// run in progress, so [`DeviceWorkItem::run`] is not called again, even
/// for a run still pending or queued later. Only then does it unregister
/// the device (which waits for every counted reference a run made) and
/// drop the data, in which the work, dropped, disables itself and waits
/// for a late run that only saw the gate closed. So no run sees the data
/// partly dropped, fields declared before the work included, nor the
/// device freed.
///
/// # Invariants
///
/// `dwork` is initialised, with [`DeviceWork::run_raw`] as its function.
/// `dev` is null or the device whose private data holds `self`; it is set
/// before the work is first queued.
#[pin_data(PinnedDrop)]
pub struct DeviceWork<T: DeviceWorkItem<ID>, const ID: u64 = 0> {
    #[pin]
    dwork: Opaque<bindings::delayed_work>,
    dev: Atomic<*mut bindings::net_device>,
    #[pin]
    _pin: PhantomPinned,
    _t: PhantomData<T>,
}

// SAFETY: the C work item may be queued, cancelled and run from any
// thread; the device pointer is atomic; `T` is `Send + Sync`
// (`Operations`).
unsafe impl<T: DeviceWorkItem<ID>, const ID: u64> Send for DeviceWork<T, ID> {}

// SAFETY: as above: every method takes `&self` and goes through the
// workqueue's own synchronisation.
unsafe impl<T: DeviceWorkItem<ID>, const ID: u64> Sync for DeviceWork<T, ID> {}

impl<T: DeviceWorkItem<ID>, const ID: u64> DeviceWork<T, ID> {
    /// A disabled work item named `name`, with the lock classes `key` and
    /// `timer_key` (from [`static_lock_class!`](crate::sync::static_lock_class)).
    pub fn new(
        name: &'static CStr,
        key: Pin<&'static LockClassKey>,
        timer_key: Pin<&'static LockClassKey>,
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            dwork <- Opaque::ffi_init(|slot: *mut bindings::delayed_work| {
                // SAFETY: `slot` is valid for writes and pinned; `run_raw`
                // takes a `work_struct` of a `DeviceWork<T, ID>`, which
                // this is the `work` of.
                unsafe {
                    bindings::init_work_with_key(
                        &raw mut (*slot).work,
                        Some(Self::run_raw),
                        false,
                        name.as_char_ptr(),
                        key.as_ptr(),
                    );
                    bindings::timer_init_key(
                        &raw mut (*slot).timer,
                        Some(bindings::delayed_work_timer_fn),
                        bindings::TIMER_IRQSAFE,
                        name.as_char_ptr(),
                        timer_key.as_ptr(),
                    );
                    // Never queued: nothing to wait for.
                    bindings::disable_delayed_work(slot);
                }
            }),
            dev: Atomic::new(core::ptr::null_mut()),
            _pin: PhantomPinned,
            _t: PhantomData,
        })
    }

    fn raw(&self) -> *mut bindings::delayed_work {
        self.dwork.get()
    }

    /// Whether `self` lies in the private data of `dev`.
    fn is_in(&self, dev: &Device<T>) -> bool {
        let data = core::ptr::from_ref(dev.data()).addr();
        let me = core::ptr::from_ref(self).addr();
        me >= data && me + size_of::<Self>() <= data + size_of::<T>()
    }

    /// Queues the job to run after `delay` jiffies, unless it is queued
    /// already or disabled; `now` instead moves a pending run forward to
    /// `delay` from now. `dev` must be the device whose data holds `self`:
    /// for another one, nothing is queued and the call warns. Any context.
    /// Whether the job was queued or moved.
    pub fn schedule(&self, dev: &Device<T>, delay: Jiffies, now: bool) -> bool {
        if !self.is_in(dev) {
            crate::warn_on!(true);
            return false;
        }
        // INVARIANT: `dev`'s data holds `self`, checked above.
        self.dev.store(dev.as_raw(), Release);
        // CAST: WORK_CPU_UNBOUND is a small constant.
        let cpu = bindings::wq_misc_consts_WORK_CPU_UNBOUND as c_int;
        // SAFETY: `dwork` is initialised and pinned (type invariant), and
        // stays valid until `self` is dropped, which disables it first;
        // `system_percpu_wq` is always valid.
        unsafe {
            if now {
                bindings::mod_delayed_work_on(cpu, bindings::system_percpu_wq, self.raw(), delay)
            } else {
                bindings::queue_delayed_work_on(cpu, bindings::system_percpu_wq, self.raw(), delay)
            }
        }
    }

    /// Lets the job be queued again after [`DeviceWork::disable_sync`] (or
    /// after it was made), once as many times as it was disabled.
    pub fn enable(&self) {
        // SAFETY: initialised and pinned (type invariant).
        unsafe { bindings::enable_delayed_work(self.raw()) };
    }

    /// Drops a pending run, waits for one in progress, and refuses new
    /// ones until [`DeviceWork::enable`]. Sleeps: process context, and
    /// not from the job itself, which would wait for itself, nor under a
    /// lock the job takes (RTNL or the instance lock, for a job that
    /// resets the device: not in a callback of the core), which lockdep
    /// reports.
    pub fn disable_sync(&self) {
        // SAFETY: initialised and pinned (type invariant).
        unsafe { bindings::disable_delayed_work_sync(self.raw()) };
    }

    /// # Safety
    ///
    /// `work` is the `work` of the `delayed_work` of a [`DeviceWork<T,
    /// ID>`], run by the workqueue.
    unsafe extern "C" fn run_raw(work: *mut bindings::work_struct) {
        // SAFETY: per this function's contract, `work` is in the
        // `delayed_work`, itself the `dwork` field of a `DeviceWork`;
        // `Opaque` is transparent.
        let this = unsafe {
            let dwork = crate::container_of!(work, bindings::delayed_work, work);
            &*crate::container_of!(dwork.cast::<Opaque<bindings::delayed_work>>(), Self, dwork)
        };
        let dev = this.dev.load(Acquire);
        if dev.is_null() {
            return;
        }
        // SAFETY: `dev` holds `this` in its data (type invariant), so it
        // is a device allocated by `Registration::new` for `T`, whose
        // private area is freed only after `this` is dropped, which waits
        // for this run.
        let runs = unsafe { Private::<T>::runs(dev) };
        if !runs.enter() {
            // The registration is going: the data may be dropping.
            return;
        }
        // SAFETY: as above, allocated for `T`. The gate let the run in, so
        // the registration has not closed it yet and waits for the run
        // before it unregisters the device and drops `T`: `T` is whole,
        // and the device registered or being set up, for the whole call.
        // The run is a worker's of the system workqueue, in process
        // context, holding no lock.
        T::run(unsafe { UnlockedDevice::from_device(Device::from_raw(dev)) });
        runs.leave();
    }
}

#[pinned_drop]
impl<T: DeviceWorkItem<ID>, const ID: u64> PinnedDrop for DeviceWork<T, ID> {
    fn drop(self: Pin<&mut Self>) {
        // Sleeps, waiting for a run in progress.
        crate::task::might_sleep();
        // A run pending or in progress is one the gate turned away (the
        // data is dropping after the registration closed it); no run
        // after the work goes.
        self.disable_sync();
    }
}

#[macros::kunit_tests(rust_kernel_net_driver_work)]
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
                LockedDevice,
                Registration,
                TxQueue, //
            },
            skbuff::SkBuff,
        },
        sync::{
            atomic::Relaxed,
            static_lock_class, //
        },
        time::{
            delay::fsleep,
            Delta, //
        },
    };

    /// The data's first field is alive.
    static ALIVE: Atomic<bool> = Atomic::new(false);
    /// Runs of the work.
    static RUNS: Atomic<u32> = Atomic::new(0);
    /// Runs that saw the first field dropped.
    static LATE: Atomic<u32> = Atomic::new(0);

    /// Dropped before the work, as it is declared before it.
    struct Marker;

    impl Drop for Marker {
        fn drop(&mut self) {
            ALIVE.store(false, Release);
            // Time for a run of the work, had it not been stopped before.
            fsleep(Delta::from_millis(50));
        }
    }

    #[pin_data]
    struct Poc {
        marker: Marker,
        #[pin]
        work: DeviceWork<Poc>,
    }

    #[vtable]
    impl Operations for Poc {
        fn open(_dev: &LockedDevice<Self>) -> Result {
            Ok(())
        }

        fn stop(_dev: &LockedDevice<Self>) -> Result {
            // The work is left enabled, and reschedules itself.
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

    impl DeviceWorkItem for Poc {
        fn run(dev: &UnlockedDevice<Self>) {
            if !ALIVE.load(Acquire) {
                LATE.add(1, Relaxed);
            }
            RUNS.add(1, Relaxed);
            dev.data().work.schedule(dev, 1, false);
        }
    }

    #[test]
    fn no_run_once_the_registration_goes() -> Result {
        let faux = faux::Registration::new(c"rust_net_driver_work", None)?;
        let parent: &faux::Device<Bound> = faux.as_ref();
        let parent: &GenericDevice<Bound> = parent.as_ref();
        ALIVE.store(true, Release);
        let reg = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x01],
            try_pin_init!(Poc {
                marker: Marker,
                work <- DeviceWork::new(
                    c"rust_net_driver_work",
                    static_lock_class!(),
                    static_lock_class!()
                ),
            }? Error),
            |_| Ok(()),
        )?;
        let dev = reg.device();
        dev.data().work.enable();
        assert!(dev.data().work.schedule(dev, 0, false));
        for _ in 0..100 {
            if RUNS.load(Relaxed) >= 3 {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        assert!(RUNS.load(Relaxed) >= 3);
        // Drops `marker`, then `work`, after the device is unregistered.
        drop(reg);
        assert_eq!(LATE.load(Relaxed), 0);
        Ok(())
    }
}
