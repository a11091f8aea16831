// SPDX-License-Identifier: GPL-2.0

//! Per-CPU reference counts.
//!
//! A [`PercpuRef`] counts references in per-CPU counters while it is live,
//! so taking and dropping a reference costs a per-CPU add with no shared
//! cache line. [`PercpuRef::kill`] drops the initial reference and switches
//! the count to one shared atomic (after an RCU grace period); when that
//! reaches zero the owner's [`Release::release`] runs.
//!
//! Use it for an object whose references are taken and dropped on a hot
//! path on many CPUs, and whose teardown is started once by its owner.
//!
//! C header: [`include/linux/percpu-refcount.h`](srctree/include/linux/percpu-refcount.h)

use crate::{
    alloc::Flags,
    error::to_result,
    prelude::*,
    types::Opaque, //
};
use core::marker::PhantomData;

/// What to do when the count of a killed [`PercpuRef`] drops to zero.
///
/// # Safety
///
/// `release` runs in whatever context dropped the last reference: an RCU
/// callback, a bottom half, or under a spinlock. The [`PercpuRef`] it is
/// given must stay valid until `release` returns: an implementation that
/// frees the memory holding it does so later, from process context, never
/// from within `release`. `release` always runs inside an RCU read-side
/// critical section (the one `percpu_ref_put` holds), so a work item that
/// waits for an RCU grace period before freeing meets this.
pub unsafe trait Release: Sized {
    /// Called once, when the count of `this` has dropped to zero after
    /// [`PercpuRef::kill`]. Atomic context: it must not sleep.
    fn release(this: &PercpuRef<Self>);
}

/// A per-CPU reference count, embedded in the object `T` it counts.
///
/// Starts live holding one reference, the owner's, which
/// [`PercpuRef::kill`] drops.
///
/// # Invariants
///
/// `raw` was initialised by `percpu_ref_init` with [`Self::release_callback`]
/// as its release function, and is exited only on drop.
#[repr(transparent)]
#[pin_data(PinnedDrop)]
pub struct PercpuRef<T: Release> {
    #[pin]
    raw: Opaque<bindings::percpu_ref>,
    _owner: PhantomData<T>,
}

// SAFETY: `percpu_ref` may be used and dropped from any CPU and thread; its
// operations are atomic or per-CPU with preemption disabled.
unsafe impl<T: Release> Send for PercpuRef<T> {}

// SAFETY: all methods taking `&self` are safe to call concurrently, per the
// `percpu_ref` API.
unsafe impl<T: Release> Sync for PercpuRef<T> {}

impl<T: Release> PercpuRef<T> {
    /// Creates a live count holding the owner's reference. `flags` are for
    /// the per-CPU counters.
    pub fn new(flags: Flags) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            raw <- Opaque::try_ffi_init(|slot: *mut bindings::percpu_ref| {
                // SAFETY: `slot` points to memory for a `percpu_ref` that stays
                // pinned until it is exited on drop (the type invariant), and
                // the release function has the signature the C side expects.
                to_result(unsafe {
                    bindings::percpu_ref_init(
                        slot,
                        Some(Self::release_callback),
                        0,
                        flags.as_raw(),
                    )
                })
            }),
            _owner: PhantomData,
        }? Error)
    }

    /// The C release function: calls the owner's [`Release::release`].
    ///
    /// # Safety
    ///
    /// `ptr` is the `percpu_ref` of a live [`PercpuRef<T>`].
    unsafe extern "C" fn release_callback(ptr: *mut bindings::percpu_ref) {
        // SAFETY: the caller guarantees `ptr` is the `raw` field of a
        // `PercpuRef<T>`, which is `#[repr(transparent)]` over it (the
        // marker is zero-sized), and it stays valid while `release` runs
        // (the `Release` contract).
        let this = unsafe { &*ptr.cast::<Self>() };
        T::release(this);
    }

    fn as_raw(&self) -> *mut bindings::percpu_ref {
        self.raw.get()
    }

    /// Takes a reference. The caller must already hold one (or otherwise
    /// know the count cannot be zero); use [`PercpuRef::tryget`] when it
    /// might be.
    #[inline]
    pub fn get(&self) {
        // SAFETY: `raw` is initialised, by the type invariant.
        unsafe { bindings::percpu_ref_get(self.as_raw()) }
    }

    /// Takes a reference unless the count has reached zero. Succeeds on a
    /// killed count that has not reached zero yet.
    #[inline]
    pub fn tryget(&self) -> bool {
        // SAFETY: `raw` is initialised, by the type invariant.
        unsafe { bindings::percpu_ref_tryget(self.as_raw()) }
    }

    /// Takes a reference unless the count has been killed.
    #[inline]
    pub fn tryget_live(&self) -> bool {
        // SAFETY: `raw` is initialised, by the type invariant.
        unsafe { bindings::percpu_ref_tryget_live(self.as_raw()) }
    }

    /// Drops a reference; the last one after [`PercpuRef::kill`] calls
    /// [`Release::release`], from within this call.
    #[inline]
    pub fn put(&self) {
        // SAFETY: `raw` is initialised, by the type invariant; the release
        // it may trigger leaves `self` valid until it returns (the
        // `Release` contract).
        unsafe { bindings::percpu_ref_put(self.as_raw()) }
    }

    /// Drops the owner's reference and stops new [`PercpuRef::tryget_live`]
    /// from succeeding. Call it once; a second call warns.
    pub fn kill(&self) {
        // SAFETY: `raw` is initialised, by the type invariant.
        unsafe { bindings::percpu_ref_kill(self.as_raw()) }
    }

    /// Whether the count has been killed.
    #[inline]
    pub fn is_dying(&self) -> bool {
        // SAFETY: `raw` is initialised, by the type invariant.
        unsafe { bindings::percpu_ref_is_dying(self.as_raw()) }
    }

    /// Whether the count is zero. Only meaningful once it is killed.
    pub fn is_zero(&self) -> bool {
        // SAFETY: `raw` is initialised, by the type invariant.
        unsafe { bindings::percpu_ref_is_zero(self.as_raw()) }
    }
}

#[pinned_drop]
impl<T: Release> PinnedDrop for PercpuRef<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `raw` is initialised (the type invariant) and, as the
        // `PercpuRef` is being dropped, no one can use it any more.
        unsafe { bindings::percpu_ref_exit(self.as_raw()) }
    }
}

#[macros::kunit_tests(rust_kernel_percpu_ref)]
mod tests {
    use super::*;
    use crate::sync::atomic::{
        Atomic,
        Relaxed, //
    };

    #[pin_data]
    struct Counted {
        #[pin]
        count: PercpuRef<Counted>,
        released: Atomic<u32>,
    }

    // SAFETY: `release` only bumps a counter in the owner; the tests free
    // the owner after it returns.
    unsafe impl Release for Counted {
        fn release(this: &PercpuRef<Self>) {
            let ptr = core::ptr::from_ref(this);
            // SAFETY: every `PercpuRef<Counted>` is the `count` field of a
            // `Counted`, which outlives this call.
            let owner = unsafe { &*crate::container_of!(ptr, Counted, count) };
            owner.released.add(1, Relaxed);
        }
    }

    fn counted() -> Result<Pin<KBox<Counted>>> {
        KBox::try_pin_init(
            try_pin_init!(Counted {
                count <- PercpuRef::new(GFP_KERNEL),
                released: Atomic::new(0),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// Waits until a killed count has left per-CPU mode, so that the puts
    /// that follow are counted in one atomic and release synchronously.
    fn settle(c: &Counted) {
        // SAFETY: `count` is initialised and killed; this only waits for
        // the switch to atomic mode.
        unsafe { bindings::percpu_ref_switch_to_atomic_sync(c.count.as_raw()) }
    }

    #[test]
    fn live_count_hands_out_references() -> Result {
        let c = counted()?;
        assert!(!c.count.is_dying());
        assert!(c.count.tryget());
        assert!(c.count.tryget_live());
        c.count.get();
        c.count.put();
        c.count.put();
        c.count.put();
        assert_eq!(c.released.load(Relaxed), 0);
        // The owner's reference is still there: kill drops it and releases.
        c.count.kill();
        settle(&c);
        assert!(c.count.is_zero());
        assert_eq!(c.released.load(Relaxed), 1);
        Ok(())
    }

    #[test]
    fn release_waits_for_the_last_reference() -> Result {
        let c = counted()?;
        c.count.get();
        c.count.get();
        c.count.kill();
        settle(&c);
        assert!(c.count.is_dying());
        // Killed but referenced: tryget still works, tryget_live does not.
        assert!(c.count.tryget());
        assert!(!c.count.tryget_live());
        c.count.put();
        c.count.put();
        assert_eq!(c.released.load(Relaxed), 0);
        assert!(!c.count.is_zero());
        c.count.put();
        assert_eq!(c.released.load(Relaxed), 1);
        assert!(c.count.is_zero());
        assert!(!c.count.tryget());
        Ok(())
    }

    #[test]
    fn dropping_an_unkilled_count_releases_nothing() -> Result {
        let c = counted()?;
        c.count.get();
        c.count.put();
        drop(c);
        Ok(())
    }
}
