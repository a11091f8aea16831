// SPDX-License-Identifier: GPL-2.0

//! Free `net_iov` indices of a binding, as a lock-free LIFO.
//!
//! A binding numbers its `net_iov`s `0..n`. The free ones form a stack
//! threaded through `next`: `next[i]` is the index below `i`. The top of the
//! stack and a generation tag share one 64-bit word, so that a pop whose
//! view of the top went stale (the top was taken and put back meanwhile,
//! the ABA problem) fails its compare-and-exchange instead of corrupting
//! the stack.
//!
//! Costs, for the page_pool paths that use it:
//!
//! - [`FreeList::pop`] and [`FreeList::push`]: O(1), one compare-and-exchange
//!   when uncontended, no lock, no allocation;
//! - [`FreeList::pop_bulk`]: up to `n` indices for one compare-and-exchange,
//!   for refilling a page_pool's allocation cache in one go.
//!
//! The C implementation takes one `net_iov` per call from a `gen_pool`
//! bitmap, whose search is linear in the size of the chunk.
//!
//! The tag is 32 bits wide: a pop that is delayed between reading the top
//! and its compare-and-exchange by exactly a multiple of 2^32 other
//! operations, ending with the same top, would go wrong. That takes
//! billions of operations while one CPU is stalled inside a few
//! instructions, with bottom halves off on the page_pool paths.

use kernel::{
    alloc::{
        Flags,
        KVVec, //
    },
    pr_warn_once,
    prelude::*,
    sync::atomic::{
        Acquire,
        Atomic,
        Relaxed,
        Release, //
    },
};

/// The link value that ends the stack.
const END: u32 = u32::MAX;

/// The largest number of indices a [`FreeList`] holds, so that every index
/// differs from [`END`].
pub const MAX_ENTRIES: u32 = END - 1;

/// Packs a generation tag and the index on top of the stack.
#[inline]
fn pack(tag: u32, top: u32) -> u64 {
    (u64::from(tag) << 32) | u64::from(top)
}

/// The index on top of the stack, from a packed head.
#[inline]
fn top(head: u64) -> u32 {
    // CAST: the low 32 bits are the top index, by construction in `pack`.
    head as u32
}

/// The generation tag, from a packed head.
#[inline]
fn tag(head: u64) -> u32 {
    // CAST: the high 32 bits are the tag, by construction in `pack`.
    (head >> 32) as u32
}

/// A lock-free stack of the free indices in `0..len`.
///
/// Each index is either on the stack or owned by whoever popped it; only the
/// owner pushes it back. Pushing an index that is already on the stack is a
/// caller bug that corrupts the stack (it cannot make it unsafe: every link
/// is a valid index or [`END`]).
///
/// # Invariants
///
/// - `top(head)` and every `next[i]` are below `next.len()` or are [`END`].
/// - `next.len() <= MAX_ENTRIES`.
pub struct FreeList {
    /// The packed top of the stack and its generation tag.
    head: Atomic<u64>,
    /// `next[i]`: the index below `i` while `i` is on the stack.
    next: KVVec<Atomic<u32>>,
}

impl FreeList {
    /// Creates a stack holding every index in `0..len`, lowest on top, so
    /// that a fresh binding hands out its `net_iov`s in address order.
    pub fn new(len: u32, flags: Flags) -> Result<Self> {
        if len > MAX_ENTRIES {
            return Err(EINVAL);
        }
        // CAST: u32 to usize is lossless on the 32- and 64-bit targets the
        // kernel supports.
        let mut next = KVVec::with_capacity(len as usize, flags)?;
        for i in 0..len {
            let below = if i + 1 < len { i + 1 } else { END };
            // Cannot fail: the capacity was reserved for `len` items.
            next.push_within_capacity(Atomic::new(below))
                .map_err(|_| ENOMEM)?;
        }
        let first = if len > 0 { 0 } else { END };
        // INVARIANT: the links are `1..len` and END, the top is 0 or END.
        Ok(Self {
            head: Atomic::new(pack(0, first)),
            next,
        })
    }

    /// The number of indices the stack was created for.
    pub fn capacity(&self) -> u32 {
        // CAST: at most `MAX_ENTRIES`, by the type invariant.
        self.next.len() as u32
    }

    /// The link below `idx`.
    fn link(&self, idx: u32) -> &Atomic<u32> {
        // CAST: see `capacity`.
        &self.next[idx as usize]
    }

    /// Takes a free index, or `None` when all are in use.
    pub fn pop(&self) -> Option<u32> {
        let mut out = [0u32; 1];
        match self.pop_bulk(&mut out) {
            0 => None,
            _ => Some(out[0]),
        }
    }

    /// Takes up to `out.len()` free indices with one compare-and-exchange,
    /// writes them to the front of `out` and returns how many it took.
    pub fn pop_bulk(&self, out: &mut [u32]) -> usize {
        if out.is_empty() {
            return 0;
        }
        // Acquire pairs with the release in `push`: the links of the indices
        // on the stack are visible once their push is.
        let mut head = self.head.load(Acquire);
        loop {
            let mut n = 0;
            let mut cur = top(head);
            // The links may change under us when the stack does; then the
            // tag has changed and the exchange below fails. Every link is a
            // valid index or END (the invariant) and the walk is bounded by
            // `out.len()`, so a stale walk only wastes time.
            while n < out.len() && cur != END {
                out[n] = cur;
                cur = self.link(cur).load(Relaxed);
                n += 1;
            }
            if n == 0 {
                return 0;
            }
            // INVARIANT: `cur` is a link read from the stack, or END.
            match self
                .head
                .cmpxchg(head, pack(tag(head).wrapping_add(1), cur), Acquire)
            {
                Ok(_) => return n,
                // A failed exchange orders nothing: read the head again.
                Err(_) => head = self.head.load(Acquire),
            }
        }
    }

    /// Puts back an index taken with [`FreeList::pop`] or
    /// [`FreeList::pop_bulk`].
    pub fn push(&self, idx: u32) {
        if idx >= self.capacity() {
            // Not one of ours: keep the invariant rather than the index.
            pr_warn_once!("freeing net_iov index {idx} out of range\n");
            return;
        }
        let mut head = self.head.load(Relaxed);
        loop {
            self.link(idx).store(top(head), Relaxed);
            // INVARIANT: `idx` is below `next.len()`, checked above.
            match self
                .head
                .cmpxchg(head, pack(tag(head).wrapping_add(1), idx), Release)
            {
                Ok(_) => return,
                Err(cur) => head = cur,
            }
        }
    }
}

#[kunit_tests(devmem_rs_freelist)]
mod tests {
    use super::*;

    #[test]
    fn empty_list_has_nothing() -> Result {
        let fl = FreeList::new(0, GFP_KERNEL)?;
        assert_eq!(fl.pop(), None);
        assert_eq!(fl.pop_bulk(&mut [0u32; 4]), 0);
        Ok(())
    }

    #[test]
    fn fresh_list_hands_out_ascending_then_runs_dry() -> Result {
        let fl = FreeList::new(5, GFP_KERNEL)?;
        for want in 0..5 {
            assert_eq!(fl.pop(), Some(want));
        }
        assert_eq!(fl.pop(), None);
        Ok(())
    }

    #[test]
    fn push_then_pop_is_lifo() -> Result {
        let fl = FreeList::new(4, GFP_KERNEL)?;
        let a = fl.pop();
        let b = fl.pop();
        assert_eq!((a, b), (Some(0), Some(1)));
        fl.push(0);
        fl.push(1);
        assert_eq!(fl.pop(), Some(1));
        assert_eq!(fl.pop(), Some(0));
        assert_eq!(fl.pop(), Some(2));
        Ok(())
    }

    #[test]
    fn bulk_pop_takes_what_is_there() -> Result {
        let fl = FreeList::new(8, GFP_KERNEL)?;
        let mut out = [0u32; 5];
        assert_eq!(fl.pop_bulk(&mut out), 5);
        assert_eq!(out, [0, 1, 2, 3, 4]);
        let mut out = [0u32; 10];
        assert_eq!(fl.pop_bulk(&mut out), 3);
        assert_eq!(&out[..3], &[5, 6, 7]);
        assert_eq!(fl.pop_bulk(&mut out), 0);
        Ok(())
    }

    #[test]
    fn every_index_comes_back_exactly_once() -> Result {
        const N: u32 = 1000;
        let fl = FreeList::new(N, GFP_KERNEL)?;
        let mut seen = KVec::with_capacity(N as usize, GFP_KERNEL)?;
        for _ in 0..N {
            seen.push(false, GFP_KERNEL)?;
        }
        let mut out = [0u32; 64];
        // Drain in bulk, give back every other index, drain again.
        let mut taken = 0;
        loop {
            let n = fl.pop_bulk(&mut out);
            if n == 0 {
                break;
            }
            for &i in &out[..n] {
                assert!(i < N);
                assert!(!seen[i as usize]);
                seen[i as usize] = true;
            }
            taken += n;
        }
        assert_eq!(taken, N as usize);
        for i in (0..N).step_by(2) {
            fl.push(i);
        }
        let mut back = 0;
        while let Some(i) = fl.pop() {
            assert_eq!(i % 2, 0);
            back += 1;
        }
        assert_eq!(back, N / 2);
        Ok(())
    }

    #[test]
    fn out_of_range_push_is_refused() -> Result {
        let fl = FreeList::new(2, GFP_KERNEL)?;
        assert_eq!(fl.pop_bulk(&mut [0u32; 2]), 2);
        fl.push(7);
        assert_eq!(fl.pop(), None);
        Ok(())
    }

    #[test]
    fn capacity_limit_is_enforced() {
        assert!(FreeList::new(MAX_ENTRIES + 1, GFP_KERNEL).is_err());
    }
}
