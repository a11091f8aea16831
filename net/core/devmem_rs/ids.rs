// SPDX-License-Identifier: GPL-2.0

//! Binding ids: the global table user space names bindings by.
//!
//! As in the C core, the table is an `XA_FLAGS_ALLOC1` xarray and ids come
//! from `xa_alloc_cyclic` over `1..=u32::MAX`: the lowest free id at or
//! above a cursor that follows the last one given, wrapping to 1 after
//! `u32::MAX`; 0 is never used. A failed bind-rx still consumes its id.
//!
//! The table holds a reference to each binding in it. A lookup, which the
//! TX send path makes on every `sendmsg`, takes no lock: it loads the entry
//! under RCU and takes a reference with `percpu_ref_tryget`, as C's
//! `net_devmem_lookup_dmabuf` does. Publishing and unpublishing take the
//! xarray's spinlock, which lookups never wait for.

use crate::binding::{
    Binding,
    BindingRef, //
};
use core::{
    cell::UnsafeCell,
    mem::MaybeUninit, //
};
use kernel::{
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        rcu,
    },
    xarray::{
        AllocKind,
        XArray, //
    },
};

/// The table: bindings by id, and the cursor.
#[pin_data]
pub struct Ids {
    #[pin]
    xa: XArray<BindingRef>,
    /// Where the next id search starts (C's `id_alloc_next`). Only read
    /// and written under `xa`'s lock; atomic only so that the table can be
    /// shared.
    next: Atomic<u32>,
}

impl Ids {
    fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            xa <- XArray::new(AllocKind::Alloc1),
            next: Atomic::new(1),
        })
    }

    /// Adds `r` under the next id, which it returns.
    fn insert(&self, r: BindingRef) -> Result<u32> {
        let mut xa = self.xa.lock();
        let mut next = self.next.load(Relaxed);
        // May drop the lock to allocate, as `xa_alloc_cyclic` does in C:
        // the cursor was read before, as C reads it, and the new value is
        // stored after, under the lock again.
        let got = xa.alloc_cyclic(r, 1..=u32::MAX, &mut next, GFP_KERNEL);
        self.next.store(next, Relaxed);
        drop(xa);
        // On failure the reference, which may be the last, goes after the
        // lock.
        Ok(got?.id)
    }

    /// Removes the entry `id`, returning its reference.
    fn remove(&self, id: u32) -> Option<BindingRef> {
        // CAST: u32 to usize is lossless on Linux.
        self.xa.lock().remove(id as usize)
    }

    /// A new reference to the binding `id`; takes no lock.
    fn get(&self, id: u32) -> Option<BindingRef> {
        let rcu = rcu::read_lock();
        // CAST: u32 to usize is lossless on Linux.
        let r = self.xa.get_rcu(id as usize, &rcu)?.tryget()?;
        drop(rcu);
        // A binding is visible in the table before `publish` records its
        // id in it: until then, the lookup is as if it came first.
        (r.id() == id).then_some(r)
    }
}

/// Static storage for the table, which is initialised in place (an xarray
/// is pinned) by [`init`].
///
/// # Invariants
///
/// Holds an initialised [`Ids`] once [`init`] has run, never moved nor
/// dropped (a static), and only ever shared from then on.
struct Table(UnsafeCell<MaybeUninit<Ids>>);

// SAFETY: the table is only shared once initialised (the invariant), and
// `Ids` is `Sync`.
unsafe impl Sync for Table {}

static IDS: Table = Table(UnsafeCell::new(MaybeUninit::uninit()));

/// The table.
fn ids() -> &'static Ids {
    // SAFETY: `init` ran before any other function of this module (its
    // contract), so the table is initialised; it is never dropped, and
    // only shared.
    unsafe { &*IDS.0.get().cast::<Ids>() }
}

/// Initialises the table.
///
/// # Safety
///
/// Called once, before any other function of this module.
pub(crate) unsafe fn init() {
    let slot = IDS.0.get().cast::<Ids>();
    // INVARIANT: initialised in place here, once (per the caller); a
    // static is never moved nor dropped.
    // SAFETY: `slot` is valid, uninitialised memory, not yet shared (per
    // the caller), and stays pinned: it is a static.
    unsafe { pin_init::raw_init(slot, Ids::new()) };
}

/// Publishes `binding` under a new id, which it records; `EBUSY` when all
/// ids are taken.
pub fn publish(binding: &Binding) -> Result<u32> {
    let r = binding.tryget().ok_or(ENODEV)?;
    let id = ids().insert(r)?;
    binding.set_id(id);
    Ok(id)
}

/// Removes the binding named `id`; the table's reference goes with it.
///
/// Waits for an RCU grace period (C's `synchronize_net`) before dropping
/// the table's reference: a lookup of `id` that was in flight has then
/// finished, with or without a reference of its own, and none that starts
/// later finds the binding. So once the owner drops its handle after this,
/// no sender can take a new reference.
///
/// A lookup that loaded the entry before the erase never touches freed
/// memory, with or without this wait: the binding is freed from its work
/// item, which waits for a grace period of its own, started after the last
/// reference went, so after this function dropped the table's
/// (`RcuForeignOwnable` for `BindingRef`). The lookup's RCU read-side
/// critical section began before the erase, so before that grace period;
/// its `percpu_ref_tryget` either fails on a dead count or takes a
/// reference before the count reaches zero.
pub fn unpublish(id: u32) {
    let Some(gone) = ids().remove(id) else {
        return;
    };
    rcu::synchronize_rcu();
    // The reference, which may be the last, goes after the grace period.
    drop(gone);
}

/// The binding named `id`, with a reference, if there is one
/// (`net_devmem_lookup_dmabuf`). Takes no lock; may be called in atomic
/// context.
pub fn lookup(id: u32) -> Option<BindingRef> {
    ids().get(id)
}

#[kunit_tests(devmem_rs_ids)]
mod tests {
    use super::*;
    use crate::{
        binding::wait_unmapped,
        test_netdev::{
            with_binding,
            PAGE, //
        },
    };
    use kernel::{
        device::Bound,
        dma::{
            DataDirection,
            DmaAddress, //
        },
        dma_buf::test_exporter,
        faux,
        page::{
            PAGE_SHIFT,
            PAGE_SIZE, //
        },
        sync::{
            atomic::{
                Acquire,
                Release, //
            },
            Arc, Completion,
        },
        time::{
            delay::fsleep,
            Delta, //
        },
        workqueue,
    };

    #[test]
    fn ids_go_up_and_are_not_reused_at_once() -> Result {
        with_binding(1, |b, _| {
            let a = publish(b)?;
            assert!(a >= 1);
            let found = lookup(a).ok_or(EINVAL)?;
            assert!(core::ptr::eq(&*found, b));
            drop(found);
            // Published again (the table takes another reference): a
            // lookup finds a binding under the id it last recorded only.
            let c = publish(b)?;
            assert_eq!(c, a.wrapping_add(1).max(1));
            assert!(lookup(a).is_none());
            assert!(lookup(c).is_some());
            unpublish(a);
            assert!(lookup(a).is_none());
            // The cursor moves on: a freed id is not handed out next.
            let d = publish(b)?;
            assert_ne!(d, a);
            assert_eq!(b.id(), d);
            unpublish(c);
            unpublish(d);
            assert!(lookup(c).is_none() && lookup(d).is_none());
            Ok(())
        })
    }

    #[test]
    fn ids_wrap_to_the_lowest_free_one_above_zero() -> Result {
        with_binding(1, |b, _| {
            // A table of the test's own, with the cursor moved.
            let t = KBox::pin_init(Ids::new(), GFP_KERNEL)?;
            t.next.store(u32::MAX - 1, Relaxed);
            let r = || b.tryget().ok_or(ENODEV);
            assert_eq!(t.insert(r()?)?, u32::MAX - 1);
            assert_eq!(t.insert(r()?)?, u32::MAX);
            // Past the end: back to 1, never 0.
            assert_eq!(t.insert(r()?)?, 1);
            assert_eq!(t.insert(r()?)?, 2);
            assert!(t.remove(1).is_some());
            t.next.store(u32::MAX - 1, Relaxed);
            // MAX - 1 and MAX are taken; 1 is free again.
            assert_eq!(t.insert(r()?)?, 1);
            // `get` checks the id the binding recorded, which only
            // `publish` sets: look at the table's entries directly (and
            // assert after unlocking: a failed assertion ends the test).
            let xa = t.xa.lock();
            let two = xa.get(2).is_some_and(|e| core::ptr::eq(e, b));
            let none = xa.get(3).is_none() && xa.get(0).is_none();
            drop(xa);
            assert!(two && none);
            Ok(())
            // The table's references go with it.
        })
    }

    #[test]
    fn lookup_does_not_wait_for_the_table_lock() -> Result {
        with_binding(1, |b, _| {
            let id = publish(b)?;
            // Held as an insert holds it while it allocates. A lookup that
            // took it would deadlock here, on this CPU (lockdep reports
            // it); an RCU lookup finds the binding.
            let xa = ids().xa.lock();
            let found = lookup(id);
            let other = lookup(id.wrapping_add(1));
            drop(xa);
            let same = found.as_deref().is_some_and(|f| core::ptr::eq(f, b));
            drop(found);
            drop(other);
            unpublish(id);
            // After unlocking and unpublishing: a failed assertion ends
            // the test.
            assert!(same);
            Ok(())
        })
    }

    /// What the racing reader shares with the test.
    #[pin_data]
    struct Race {
        /// The id last published, 0 before the first.
        id: Atomic<u32>,
        /// Set by the test to stop the reader.
        stop: Atomic<bool>,
        /// Set by the reader when it runs.
        started: Atomic<bool>,
        /// Lookups that found a binding alive under the right id.
        found: Atomic<u32>,
        /// Lookups that found something else.
        bad: Atomic<u32>,
        #[pin]
        done: Completion,
    }

    /// Looks up the last published id until told to stop.
    fn reader(race: &Race) {
        race.started.store(true, Release);
        while !race.stop.load(Acquire) {
            let id = race.id.load(Acquire);
            if id == 0 {
                continue;
            }
            if let Some(r) = lookup(id) {
                // Reads of the binding: freed memory under KASAN.
                let ok = r.id() == id && r.niov_count() == 1 && r.is_tx();
                let counter = if ok { &race.found } else { &race.bad };
                counter.fetch_add(1, Relaxed);
            }
        }
        race.done.complete_all();
    }

    #[test]
    fn lookups_race_unpublish_and_free() -> Result {
        const ROUNDS: u32 = 100;
        // CAST: PAGE_SHIFT is small.
        let shift = PAGE_SHIFT as u32;
        let segs: [(DmaAddress, u32); 1] = [(0x1000_0000, PAGE)];
        let buf = test_exporter::export(PAGE_SIZE, &segs)?;
        let reg = faux::Registration::new(c"devmem-rs-ids", None)?;
        let fdev: &faux::Device<Bound> = reg.as_ref();
        let dev: &kernel::device::Device<Bound> = fdev.as_ref();

        let race = Arc::pin_init(
            pin_init!(Race {
                id: Atomic::new(0),
                stop: Atomic::new(false),
                started: Atomic::new(false),
                found: Atomic::new(0),
                bad: Atomic::new(0),
                done <- Completion::new(),
            }),
            GFP_KERNEL,
        )?;
        let theirs = race.clone();
        workqueue::system_unbound().try_spawn(GFP_KERNEL, move || reader(&theirs))?;
        while !race.started.load(Acquire) {
            fsleep(Delta::from_millis(1));
        }

        // Asserted once the reader stopped: a failed assertion ends the
        // test.
        let mut res = Ok(());
        let mut stale = false;
        for _ in 0..ROUNDS {
            // A new binding each round, whose last reference is the
            // table's once its owner lets go: unpublishing frees it, while
            // the reader may hold it or be about to try.
            let h = match Binding::bind(&buf, dev, DataDirection::ToDevice, shift) {
                Ok(h) => h,
                Err(e) => {
                    res = Err(e.errno());
                    break;
                }
            };
            let id = match publish(&h) {
                Ok(id) => id,
                Err(e) => {
                    res = Err(e);
                    break;
                }
            };
            race.id.store(id, Release);
            drop(h);
            unpublish(id);
            // Unpublished means no lookup finds it any more.
            stale |= lookup(id).is_some();
        }
        race.stop.store(true, Release);
        race.done.wait_for_completion();
        res?;
        assert!(!stale);

        pr_info!(
            "devmem_rs_ids: {} lookups found a binding in {} rounds\n",
            race.found.load(Relaxed),
            ROUNDS
        );
        assert_eq!(race.bad.load(Relaxed), 0);
        // Every binding was freed, whoever dropped it last.
        assert!(wait_unmapped(&buf));
        Ok(())
    }
}
