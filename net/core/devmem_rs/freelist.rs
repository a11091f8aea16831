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
//! - [`FreeList::pop`]: O(1), one compare-and-exchange of the head when
//!   uncontended and one store to the index's link, no lock, no allocation;
//! - [`FreeList::push`]: O(1), one compare-and-exchange of the index's link
//!   and one of the head when uncontended;
//! - [`FreeList::pop_bulk`]: up to `n` indices for one compare-and-exchange
//!   of the head and `n` stores.
//!
//! The C implementation takes one `net_iov` per call from a `gen_pool`
//! bitmap, whose search is linear in the size of the chunk.
//!
//! # Double frees
//!
//! The link of an index that is handed out holds [`TAKEN`]. A push first
//! turns that [`TAKEN`] into a link with a compare-and-exchange, and only
//! then puts the index on the stack; a pop stores [`TAKEN`] back into the
//! links of what it hands out. A second push of an index that is already
//! free finds no [`TAKEN`]: it is refused with a warning and never reaches
//! the stack, so no index is handed out twice (the C core's `gen_pool_free`
//! hits a `BUG_ON` there). Of two pushes of one index that race, at most
//! one wins the exchange on its link.
//!
//! A pop sees its indices leave the stack when its exchange of the head
//! succeeds, and marks them [`TAKEN`] just after. A push of one of them in
//! between is refused too: the index is off the stack, but the pusher
//! cannot own it, since the pop has not returned it to anyone yet. What no
//! check can catch is a double free that comes after the index was handed
//! out again: the second push then frees the new owner's index, exactly as
//! a legitimate free by that owner would. The C core cannot tell those
//! apart either.
//!
//! A pop that walks the links below a stale head may read [`TAKEN`] from
//! an index popped since: it starts again, since its exchange would fail
//! anyway, and so [`TAKEN`] never becomes the top. The marks need no
//! ordering of their own: a push reads the mark with an exchange, which
//! sees the latest value, and a pop's store of it happens before anyone it
//! hands the index to can push it.
//!
//! # The tag
//!
//! The head word holds the top index in its low [`INDEX_BITS`] (25) bits
//! and the tag in the other 39, which counts the successful exchanges of
//! the head and wraps at 2^39. 2^25 - 1 `net_iov`s, 128 GiB of 4 KiB ones,
//! is also the most a binding can allocate: their array is one `kvmalloc`
//! allocation of 64-byte `struct net_iov`s, which the allocator caps at
//! `INT_MAX` bytes. (The C core caps each DMA segment that way, but not
//! the whole binding.)
//!
//! Only a pop can be fooled by a stale head. A push that read a stale head
//! writes a stale link, but its exchange succeeds only if the head names
//! the same top as the one it linked to, which makes the link right again.
//! A pop reads the head, then the links below the top, and exchanges the
//! head for the index below the last one it takes. If meanwhile other CPUs
//! popped and pushed so that the same index is on top again, the links it
//! read may be stale; the tag makes its exchange fail unless the number of
//! successful exchanges in between is an exact multiple of 2^39, about
//! 5.5 * 10^11, and the same index is on top at that moment.
//!
//! Nothing bounds the time between a pop's read and its exchange: rings
//! are also filled from process context (`ndo_queue_mem_alloc`,
//! `ndo_open`), where the task can be preempted in between, and a virtual
//! CPU can be stopped by its host anywhere. The argument rests on the
//! count of exchanges instead. Each is a locked read-modify-write of the one cache line that
//! holds the head, on which all CPUs serialise; at 10 ns each, less than a
//! contended exchange costs even without the page_pool work around it,
//! 2^39 of them take over an hour and a half. For scale, 400 Gb/s of 4 KiB
//! buffers is about 12 million allocations and as many frees a second, at
//! which 2^39 exchanges take over six hours. A pop would have to stay
//! stopped between two of its instructions for that long, while the
//! binding's queues run flat out the whole time, and then resume within
//! one exchange of an exact multiple of 2^39 with the same index on top.
//! That is not a reachable state of a running system. Were it reached,
//! the stack would hand out an index in use, but would stay memory safe:
//! every link stays a valid index, [`END`] or [`TAKEN`], and every walk of
//! the links is bounded.

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

/// The bits of the head word that hold the index on top of the stack; the
/// tag has the rest.
const INDEX_BITS: u32 = 25;

/// The index bits of the head word.
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;

/// One step of the tag, in the head word.
const TAG_ONE: u64 = 1 << INDEX_BITS;

/// The link value that ends the stack: the largest value the index bits
/// of the head hold.
const END: u32 = (1 << INDEX_BITS) - 1;

/// The link value of an index that is handed out. Never in the head: it
/// does not fit the index bits.
const TAKEN: u32 = u32::MAX;

/// The largest number of indices a [`FreeList`] holds, so that every index
/// fits the head word beside the tag and differs from [`END`].
///
/// A binding of more `net_iov`s is refused by
/// [`super::carve::Layout::carve`], with `E2BIG`, before it allocates
/// them.
pub const MAX_ENTRIES: u32 = END;

/// The index on top of the stack, from a packed head.
#[inline]
fn top(head: u64) -> u32 {
    // CAST: masked to `INDEX_BITS`, which fit a u32.
    (head & INDEX_MASK) as u32
}

/// The head that follows `head` after a successful exchange, with `top` on
/// top: the tag goes up by one, wrapping at 2^(64 - `INDEX_BITS`).
#[inline]
fn bump(head: u64, top: u32) -> u64 {
    (head & !INDEX_MASK).wrapping_add(TAG_ONE) | u64::from(top)
}

/// A lock-free stack of the free indices in `0..len`.
///
/// Each index is either on the stack or owned by whoever popped it; only the
/// owner pushes it back. A push of an index that is not handed out is
/// refused (see the module documentation).
///
/// # Invariants
///
/// - `top(head)` is below `next.len()` or is [`END`].
/// - Every `next[i]` is below `next.len()`, [`END`] or [`TAKEN`], and is
///   not [`TAKEN`] while `i` is on the stack.
/// - `next.len() <= MAX_ENTRIES`.
pub struct FreeList {
    /// The packed top of the stack and its generation tag.
    head: Atomic<u64>,
    /// `next[i]`: the index below `i` while `i` is on the stack, [`TAKEN`]
    /// while it is handed out.
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
        // INVARIANT: every index is on the stack, with links `1..len` and
        // END; the top is 0 or END; `len` was checked above.
        Ok(Self {
            head: Atomic::new(u64::from(first)),
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
        'retry: loop {
            let mut n = 0;
            let mut cur = top(head);
            // The links may change under us when the stack does; then the
            // tag has changed and the exchange below fails. Every link is a
            // valid index, END or TAKEN (the invariant) and the walk is
            // bounded by `out.len()`, so a stale walk only wastes time.
            while n < out.len() && cur != END {
                out[n] = cur;
                cur = self.link(cur).load(Relaxed);
                n += 1;
                if cur == TAKEN {
                    // While the stack is as `head` saw it, no link on it is
                    // TAKEN (the invariant): `out[n - 1]` was popped since,
                    // so the exchange would fail. It must not succeed
                    // either, which a wrapped tag would allow: TAKEN is no
                    // top. Start again.
                    head = self.head.load(Acquire);
                    continue 'retry;
                }
            }
            if n == 0 {
                return 0;
            }
            // INVARIANT: `cur` is a link read from the stack that is not
            // TAKEN, or END.
            match self.head.cmpxchg(head, bump(head, cur), Acquire) {
                Ok(_) => {
                    // The indices are ours now and off the stack: mark them
                    // handed out, so that `push` takes each back once. Until
                    // this store a push of one of them is refused, which is
                    // right: no one but us owns it yet. Whoever we hand an
                    // index to sees the store before it can push it, through
                    // whatever hands the index over.
                    for &i in &out[..n] {
                        // INVARIANT: `i` is no longer on the stack.
                        self.link(i).store(TAKEN, Relaxed);
                    }
                    return n;
                }
                // A failed exchange orders nothing: read the head again.
                Err(_) => head = self.head.load(Acquire),
            }
        }
    }

    /// Puts back an index taken with [`FreeList::pop`] or
    /// [`FreeList::pop_bulk`]. An index out of range, or one that is free
    /// already (a double free), is refused with a warning and does not
    /// reach the stack.
    pub fn push(&self, idx: u32) {
        if idx >= self.capacity() {
            // Not one of ours: keep the invariant rather than the index.
            pr_warn_once!("freeing net_iov index {idx} out of range\n");
            return;
        }
        let link = self.link(idx);
        let mut head = self.head.load(Relaxed);
        // Take the index from "handed out" to "free" before it goes on the
        // stack. Only this exchange turns a TAKEN link into a link, and only
        // a pop turns it back, after taking the index off the stack: of any
        // number of pushes of one handed-out index, exactly one gets past
        // here, and an index on the stack, or on its way there, is never
        // pushed again. A failed exchange writes nothing.
        //
        // INVARIANT: `idx` is not on the stack; `top(head)` is a valid
        // index or END.
        if link.cmpxchg(TAKEN, top(head), Relaxed).is_err() {
            pr_warn_once!("net_iov index {idx} freed twice\n");
            return;
        }
        loop {
            // INVARIANT: `idx` is below `next.len()`, checked above, and its
            // link is `top(head)`, not TAKEN.
            match self.head.cmpxchg(head, bump(head, idx), Release) {
                Ok(_) => return,
                Err(cur) => {
                    head = cur;
                    // INVARIANT: `idx` is still off the stack, and only we
                    // write its link until it is on.
                    link.store(top(head), Relaxed);
                }
            }
        }
    }
}

#[kunit_tests(devmem_rs_freelist)]
mod tests {
    use super::*;

    /// Drains `fl` with bulk pops and returns what it handed out, in order.
    /// Stops at twice the capacity, so that a stack with a cycle cannot
    /// loop forever: a test compares the result instead.
    fn drain(fl: &FreeList) -> Result<KVec<u32>> {
        // CAST: u32 to usize is lossless on Linux.
        let most = 2 * fl.capacity() as usize;
        let mut got = KVec::new();
        let mut out = [0u32; 3];
        while got.len() < most {
            let n = fl.pop_bulk(&mut out);
            if n == 0 {
                break;
            }
            got.extend_from_slice(&out[..n], GFP_KERNEL)?;
        }
        Ok(got)
    }

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
    fn double_push_then_drain_hands_each_index_out_once() -> Result {
        let fl = FreeList::new(4, GFP_KERNEL)?;
        assert_eq!(fl.pop(), Some(0));
        assert_eq!(fl.pop(), Some(1));
        fl.push(0);
        // A double free: refused, not linked below itself.
        fl.push(0);
        fl.push(1);
        let got = drain(&fl)?;
        assert_eq!(&got[..], &[1, 0, 2, 3]);
        assert_eq!(fl.pop(), None);
        // The refused push left the index's state alone: handed out again,
        // it comes back once.
        fl.push(0);
        assert_eq!(fl.pop(), Some(0));
        assert_eq!(fl.pop(), None);
        Ok(())
    }

    #[test]
    fn push_of_an_index_never_handed_out_is_refused() -> Result {
        let fl = FreeList::new(3, GFP_KERNEL)?;
        // Index 1 is free and below the top: pushing it would make a cycle
        // 1 -> 0 -> 1.
        fl.push(1);
        fl.push(1);
        let got = drain(&fl)?;
        assert_eq!(&got[..], &[0, 1, 2]);
        Ok(())
    }

    #[test]
    fn double_push_after_a_bulk_pop_is_refused() -> Result {
        let fl = FreeList::new(6, GFP_KERNEL)?;
        let mut out = [0u32; 4];
        assert_eq!(fl.pop_bulk(&mut out), 4);
        // Everything a bulk pop handed out goes back once, and only once.
        for &i in out.iter().rev() {
            fl.push(i);
            fl.push(i);
        }
        let got = drain(&fl)?;
        assert_eq!(&got[..], &[0, 1, 2, 3, 4, 5]);
        Ok(())
    }

    #[test]
    fn capacity_limit_is_enforced() {
        assert!(FreeList::new(MAX_ENTRIES + 1, GFP_KERNEL).is_err());
        // The limit is what the index bits of the head hold, END aside:
        // 2^25 - 1, the most `net_iov`s a binding's array can have.
        assert_eq!(MAX_ENTRIES, (1 << 25) - 1);
    }

    #[test]
    fn tag_wraps_without_touching_the_top() {
        let last = MAX_ENTRIES - 1;
        // The largest tag, with the largest index on top.
        let head = !INDEX_MASK | u64::from(last);
        assert_eq!(top(head), last);
        // The next exchange wraps the tag to 0 and puts exactly the new top
        // in the index bits.
        assert_eq!(bump(head, last), u64::from(last));
        assert_eq!(bump(head, END), u64::from(END));
        assert_eq!(top(bump(0, last)), last);
        assert_eq!(bump(0, last) >> INDEX_BITS, 1);
        // TAKEN does not fit the index bits, so it is never a top.
        assert!(top(u64::from(TAKEN)) != TAKEN);
    }
}
