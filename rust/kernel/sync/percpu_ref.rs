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
//! References are [`PercpuRefGuard`]s: [`PercpuRef::tryget`] returns one,
//! and dropping it drops the reference, so safe code cannot drop a
//! reference it does not hold. A holder that keeps its reference elsewhere
//! (in C, or in a pointer of its own) gives the guard up with
//! [`PercpuRefGuard::into_raw`] and drops the reference with the unsafe
//! [`PercpuRef::put`]. Killing is unsafe too: only the owner of the initial
//! reference kills, once; an owner type whose `Drop` kills makes that safe
//! for its users.
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

    /// Takes a reference, without checking the count: it must not be zero.
    /// Use [`PercpuRef::tryget`] when it might be, or clone a guard in hand.
    ///
    /// # Safety
    ///
    /// The caller holds a reference to the count (one it keeps without a
    /// guard, say), so the count is not zero and cannot drop to zero
    /// during this call.
    #[inline]
    pub unsafe fn get(&self) -> PercpuRefGuard<'_, T> {
        // SAFETY: `raw` is initialised, by the type invariant.
        unsafe { bindings::percpu_ref_get(self.as_raw()) };
        // INVARIANT: the count was not zero (per the caller), so the get
        // took a reference, which the guard holds.
        PercpuRefGuard { count: self }
    }

    /// Takes a reference unless the count has reached zero. Succeeds on a
    /// killed count that has not reached zero yet.
    #[inline]
    pub fn tryget(&self) -> Option<PercpuRefGuard<'_, T>> {
        // SAFETY: `raw` is initialised, by the type invariant.
        let got = unsafe { bindings::percpu_ref_tryget(self.as_raw()) };
        // INVARIANT: the tryget took a reference, which the guard holds.
        // Lazily: a guard made and dropped on failure would put.
        got.then(|| PercpuRefGuard { count: self })
    }

    /// Takes a reference unless the count has been killed.
    #[inline]
    pub fn tryget_live(&self) -> Option<PercpuRefGuard<'_, T>> {
        // SAFETY: `raw` is initialised, by the type invariant.
        let got = unsafe { bindings::percpu_ref_tryget_live(self.as_raw()) };
        // INVARIANT: the tryget took a reference, which the guard holds.
        // Lazily: a guard made and dropped on failure would put.
        got.then(|| PercpuRefGuard { count: self })
    }

    /// Drops a reference kept without a guard; the last one after
    /// [`PercpuRef::kill`] calls [`Release::release`], from within this
    /// call. Dropping a [`PercpuRefGuard`] is the safe way to put.
    ///
    /// # Safety
    ///
    /// The caller holds a reference to the count that no guard holds (one
    /// given up with [`PercpuRefGuard::into_raw`], or taken for it by C),
    /// and gives it up: it does not put it again.
    ///
    /// # Examples
    ///
    /// Safe code cannot drop a reference it does not hold:
    ///
    /// ```ignore,compile_fail,E0133
    /// use kernel::sync::percpu_ref::{
    ///     PercpuRef,
    ///     Release, //
    /// };
    ///
    /// fn unbalanced<T: Release>(count: &PercpuRef<T>) {
    ///     count.put(); // misuse
    /// #   // twin: // SAFETY: the caller gave up a reference for this put.
    /// #   // twin: unsafe { count.put() };
    /// }
    /// ```
    #[inline]
    pub unsafe fn put(&self) {
        // SAFETY: `raw` is initialised, by the type invariant; the caller
        // gives up a reference it holds, so the count does not underflow;
        // the release it may trigger leaves `self` valid until it returns
        // (the `Release` contract).
        unsafe { bindings::percpu_ref_put(self.as_raw()) }
    }

    /// Drops the owner's reference and stops new [`PercpuRef::tryget_live`]
    /// from succeeding. [`Release::release`] runs once the last reference
    /// is dropped.
    ///
    /// # Safety
    ///
    /// - The caller owns the initial reference (the one [`PercpuRef::new`]
    ///   takes for the owner), which no guard holds, and gives it up: the
    ///   count is killed once.
    /// - `self` is not dropped before [`Release::release`] has run: the
    ///   switch to atomic mode that killing starts uses the count after an
    ///   RCU grace period.
    ///
    /// # Examples
    ///
    /// Safe code cannot kill a count, so it cannot drop the initial
    /// reference twice or without owning it:
    ///
    /// ```ignore,compile_fail,E0133
    /// use kernel::sync::percpu_ref::{
    ///     PercpuRef,
    ///     Release, //
    /// };
    ///
    /// fn kill_twice<T: Release>(count: &PercpuRef<T>) {
    ///     count.kill(); // misuse
    ///     count.kill(); // misuse
    /// #   // twin: // SAFETY: the caller owns the initial reference and gives it up, once.
    /// #   // twin: unsafe { count.kill() };
    /// }
    /// ```
    pub unsafe fn kill(&self) {
        // SAFETY: `raw` is initialised, by the type invariant; the caller
        // gives up the initial reference, once, and keeps `self` alive for
        // the switch to atomic mode and the release.
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

/// A reference to a [`PercpuRef`], dropped when the guard is.
///
/// Returned by [`PercpuRef::tryget`] and [`PercpuRef::tryget_live`]; cloning
/// takes another reference. It borrows the count, so it cannot outlive it.
///
/// # Invariants
///
/// The guard holds one reference to `count`, which it drops on drop.
///
/// # Examples
///
/// ```
/// use kernel::sync::percpu_ref::{
///     PercpuRef,
///     Release, //
/// };
///
/// #[pin_data]
/// struct Obj {
///     #[pin]
///     refs: PercpuRef<Obj>,
/// }
///
/// // SAFETY: `release` does nothing; it does not even run here, as the
/// // count is never killed.
/// unsafe impl Release for Obj {
///     fn release(_this: &PercpuRef<Self>) {}
/// }
///
/// let obj = KBox::pin_init(
///     try_pin_init!(Obj {
///         refs <- PercpuRef::new(GFP_KERNEL),
///     }? Error),
///     GFP_KERNEL,
/// )?;
///
/// // Each guard drops its reference when it goes.
/// let r = obj.refs.tryget().ok_or(ENODEV)?;
/// let r2 = r.clone();
/// drop(r);
/// drop(r2);
///
/// // A reference kept without a guard, as a holder in C keeps one, is
/// // dropped with an explicit, unsafe, put.
/// let raw = obj.refs.tryget_live().ok_or(ENODEV)?.into_raw();
/// // SAFETY: this drops the reference `into_raw` gave up, once.
/// unsafe { raw.put() };
/// # Ok::<(), Error>(())
/// ```
///
/// A guard cannot outlive the count it borrows:
///
/// ```ignore,compile_fail,E0505
/// use kernel::sync::percpu_ref::{
///     PercpuRef,
///     Release, //
/// };
///
/// fn outlive<T: Release>(count: KBox<PercpuRef<T>>) {
///     let r = count.tryget();
///     drop(count); // misuse
///     drop(r);
/// #   // twin: drop(count);
/// }
/// ```
#[must_use = "the reference is dropped right away when the guard is unused"]
pub struct PercpuRefGuard<'a, T: Release> {
    count: &'a PercpuRef<T>,
}

impl<'a, T: Release> PercpuRefGuard<'a, T> {
    /// The count the guard holds a reference to.
    pub fn count(&self) -> &'a PercpuRef<T> {
        self.count
    }

    /// Gives up the guard but not its reference, for a holder that keeps
    /// the reference without a guard; [`PercpuRef::put`] drops it, and
    /// [`PercpuRefGuard::from_raw`] takes it back into a guard.
    pub fn into_raw(self) -> &'a PercpuRef<T> {
        let count = self.count;
        core::mem::forget(self);
        count
    }

    /// A guard for a reference kept without one.
    ///
    /// # Safety
    ///
    /// The caller holds a reference to `count` that no guard holds (one
    /// given up with [`PercpuRefGuard::into_raw`], or taken for it by C),
    /// and gives it to the guard: it does not put it itself.
    pub unsafe fn from_raw(count: &'a PercpuRef<T>) -> Self {
        // INVARIANT: the caller gives the guard its reference.
        Self { count }
    }
}

impl<T: Release> Clone for PercpuRefGuard<'_, T> {
    fn clone(&self) -> Self {
        // SAFETY: `self` holds a reference until it is dropped, after this
        // call (the type invariant), so the count is not zero.
        unsafe { self.count.get() }
    }
}

impl<T: Release> Drop for PercpuRefGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the guard holds a reference that no one else puts (the
        // type invariant), and gives it up here, once.
        unsafe { self.count.put() }
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
        let a = c.count.tryget().ok_or(EINVAL)?;
        let b = c.count.tryget_live().ok_or(EINVAL)?;
        let d = a.clone();
        assert!(core::ptr::eq(d.count(), &c.count));
        drop(a);
        drop(b);
        drop(d);
        assert_eq!(c.released.load(Relaxed), 0);
        // The owner's reference is still there: kill drops it and releases.
        // SAFETY: the test owns `c` and its initial reference, kills once,
        // and drops `c` only after the release (no `?` after the kill).
        unsafe { c.count.kill() };
        settle(&c);
        assert!(c.count.is_zero());
        assert_eq!(c.released.load(Relaxed), 1);
        Ok(())
    }

    #[test]
    fn release_waits_for_the_last_reference() -> Result {
        let c = counted()?;
        let a = c.count.tryget_live().ok_or(EINVAL)?;
        let b = a.clone();
        // SAFETY: the test owns `c` and its initial reference, kills once,
        // and drops `c` only after the release (no `?` after the kill).
        unsafe { c.count.kill() };
        settle(&c);
        assert!(c.count.is_dying());
        // Killed but referenced: tryget still works, tryget_live does not.
        let d = c.count.tryget();
        assert!(d.is_some());
        assert!(c.count.tryget_live().is_none());
        drop(d);
        drop(a);
        assert_eq!(c.released.load(Relaxed), 0);
        assert!(!c.count.is_zero());
        // The last guard's drop releases, from within the put.
        drop(b);
        assert_eq!(c.released.load(Relaxed), 1);
        assert!(c.count.is_zero());
        assert!(c.count.tryget().is_none());
        Ok(())
    }

    #[test]
    fn raw_references_balance() -> Result {
        let c = counted()?;
        let raw = c.count.tryget().ok_or(EINVAL)?.into_raw();
        // SAFETY: `raw` holds the reference `into_raw` gave up, which the
        // guard takes back.
        let a = unsafe { PercpuRefGuard::from_raw(raw) };
        // SAFETY: `a` holds a reference, so the count is not zero.
        let b = unsafe { c.count.get() }.into_raw();
        drop(a);
        // SAFETY: `b` is the reference `into_raw` gave up, dropped once.
        unsafe { b.put() };
        // SAFETY: the test owns `c` and its initial reference, kills once,
        // and drops `c` only after the release (no `?` after the kill).
        unsafe { c.count.kill() };
        settle(&c);
        // Every reference was dropped once: the kill released.
        assert!(c.count.is_zero());
        assert_eq!(c.released.load(Relaxed), 1);
        Ok(())
    }

    #[test]
    fn dropping_an_unkilled_count_releases_nothing() -> Result {
        let c = counted()?;
        drop(c.count.tryget());
        assert_eq!(c.released.load(Relaxed), 0);
        drop(c);
        Ok(())
    }
}
