// SPDX-License-Identifier: GPL-2.0

//! Binding ids: the global table user space names bindings by.
//!
//! Ids are handed out as the C core's `xa_alloc_cyclic` on an
//! `XA_FLAGS_ALLOC1` xarray does: the lowest free id at or above a cursor
//! that follows the last one given, wrapping to 1 after `u32::MAX`; 0 is
//! never used. A failed bind-rx still consumes its id.
//!
//! The table holds a reference to each binding in it, so a lookup that
//! finds an entry can always take another (C takes one with
//! `percpu_ref_tryget` under RCU; here under the table's mutex, which the
//! TX send path may sleep on).

use crate::binding::{
    Binding,
    BindingRef, //
};
use kernel::{
    prelude::*,
    sync::global_lock, //
};

/// The table: entries sorted by id, and the cursor.
pub struct Ids {
    entries: KVec<(u32, BindingRef)>,
    next: u32,
}

impl Ids {
    const fn new() -> Self {
        Self {
            entries: KVec::new(),
            next: 1,
        }
    }

    fn find(&self, id: u32) -> Result<usize, usize> {
        self.entries.binary_search_by_key(&id, |(i, _)| *i)
    }

    /// Adds `r` under the next id, which it returns.
    fn insert(&mut self, r: BindingRef) -> Result<u32> {
        let id = match self.free_from(self.next) {
            Some(id) => id,
            None => self.free_from(1).ok_or(EBUSY)?,
        };
        let pos = self.find(id).unwrap_or_else(|p| p);
        self.entries.reserve(1, GFP_KERNEL)?;
        // Cannot fail: `pos` is at most the length, and there is room.
        self.entries
            .insert_within_capacity(pos, (id, r))
            .map_err(|_| ENOMEM)?;
        self.next = id.wrapping_add(1).max(1);
        Ok(id)
    }

    /// Removes the entry `id`, returning its reference.
    fn remove(&mut self, id: u32) -> Option<BindingRef> {
        let pos = self.find(id).ok()?;
        self.entries.remove(pos).ok().map(|(_, r)| r)
    }

    /// A new reference to the binding `id`.
    fn get(&self, id: u32) -> Option<BindingRef> {
        let pos = self.find(id).ok()?;
        self.entries[pos].1.tryget()
    }

    /// The lowest free id at or above `from`, if any.
    fn free_from(&self, from: u32) -> Option<u32> {
        let start = match self.find(from) {
            Err(_) => return Some(from),
            Ok(pos) => pos,
        };
        let mut want = from;
        for (id, _) in &self.entries[start..] {
            if *id != want {
                break;
            }
            want = want.checked_add(1)?;
        }
        Some(want)
    }
}

global_lock! {
    // SAFETY: initialised by the crate's init, before the netdev family
    // can reach any of this crate's handlers.
    unsafe(uninit) static IDS: Mutex<Ids> = Ids::new();
}

/// Initialises the table.
///
/// # Safety
///
/// Called once, before any other function of this module.
pub(crate) unsafe fn init() {
    // SAFETY: per the caller.
    unsafe { IDS.init() };
}

/// Publishes `binding` under a new id, which it records; `EBUSY` when all
/// ids are taken.
pub fn publish(binding: &Binding) -> Result<u32> {
    let r = binding.tryget().ok_or(ENODEV)?;
    let id = IDS.lock().insert(r)?;
    binding.set_id(id);
    Ok(id)
}

/// Removes the binding named `id`; the table's reference goes with it.
pub fn unpublish(id: u32) {
    let gone = IDS.lock().remove(id);
    // The reference, which may be the last, goes after the lock.
    drop(gone);
}

/// The binding named `id`, with a reference, if there is one
/// (`net_devmem_lookup_dmabuf`).
pub fn lookup(id: u32) -> Option<BindingRef> {
    IDS.lock().get(id)
}

#[kunit_tests(devmem_rs_ids)]
mod tests {
    use super::*;
    use crate::rig::with_binding;

    #[test]
    fn ids_go_up_and_are_not_reused_at_once() -> Result {
        with_binding(1, |b, _| {
            let a = publish(b)?;
            let c = publish(b)?;
            assert!(a >= 1);
            assert_eq!(c, a.wrapping_add(1).max(1));
            let found = lookup(a).ok_or(EINVAL)?;
            assert!(core::ptr::eq(&*found, b));
            drop(found);
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
            let mut t = Ids::new();
            t.next = u32::MAX - 1;
            let r = || b.tryget().ok_or(ENODEV);
            assert_eq!(t.insert(r()?)?, u32::MAX - 1);
            assert_eq!(t.insert(r()?)?, u32::MAX);
            // Past the end: back to 1, never 0.
            assert_eq!(t.insert(r()?)?, 1);
            assert_eq!(t.insert(r()?)?, 2);
            assert!(t.remove(1).is_some());
            t.next = u32::MAX - 1;
            // MAX - 1 and MAX are taken; 1 is free again.
            assert_eq!(t.insert(r()?)?, 1);
            assert!(t.get(2).is_some());
            assert!(t.get(3).is_none());
            Ok(())
        })
    }
}
