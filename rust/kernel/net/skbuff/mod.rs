// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`), as a network driver handles them:
//! received packets it builds and hands to the stack, packets the stack
//! gives it to send.
//!
//! An [`SkBuff`] owns its buffer. A driver frees one by saying what became
//! of it: sent ([`SkBuff::consume`]) or dropped, and why
//! ([`SkBuff::drop_reason`] with a [`DropReason`]). Letting one go out of
//! scope instead is a bug that debug kernels report (see [`SkBuff`]).
//!
//! The buffer and what any packet has are here; what only a received
//! packet needs (frags from a page pool, the protocol, checksum and hash
//! the device found) is in `rx`, what only a packet to send needs
//! (checksum and segmentation offloads, DMA mapping) in `tx`, and the drop
//! reasons in `dropreason`. Everything is used through this module.
//!
//! C header: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h)

use crate::{
    error::to_result,
    prelude::*, //
};
use core::{
    mem::ManuallyDrop,
    ptr::NonNull, //
};

mod dropreason;
mod rx;
mod tx;

pub use dropreason::DropReason;
pub use rx::{
    build_buf_size,
    RX_HEADROOM,
    SHINFO_ROOM, //
};
pub use tx::{
    CsumOffload,
    Tso,
    TxMap,
    TxMapper, //
};

/// The most frags a packet has (`MAX_SKB_FRAGS`).
// CAST: a small configuration value.
pub const MAX_FRAGS: usize = bindings::MAX_SKB_FRAGS as usize;

/// An owned socket buffer.
///
/// It is freed by what its owner says became of it: [`SkBuff::consume`]
/// (or, in a NAPI poll, `SkBuff::napi_consume`) once sent,
/// [`SkBuff::drop_reason`] when dropped, or handed on
/// ([`SkBuff::into_raw`], or to the stack).
///
/// Dropped implicitly (out of scope, an early `?`, the container it was in
/// dropped), it is freed as `dev_kfree_skb_any()` frees it, for
/// `SKB_DROP_REASON_NOT_SPECIFIED`, so no path leaks it; but that is a bug,
/// the kind of silent drop the drop reasons exist to end. With
/// `CONFIG_DEBUG_NET`, the first one warns (`WARN`, once, as
/// `DEBUG_NET_WARN_ON_ONCE()` does), naming where the buffer was made: a
/// constructor records its caller ([`SkBuff::from_raw`] and the
/// allocations built on it are `#[track_caller]` in those builds), and the
/// backtrace shows who dropped it. Without `CONFIG_DEBUG_NET` nothing is
/// recorded or checked.
///
/// The type cannot refuse to be dropped: Rust has no linear types, and a
/// `Drop` that fails to build would fail on every path that may drop one,
/// early returns included, whether taken or not.
///
/// Every way of freeing one works in any context, hard IRQs off included,
/// as `ndo_start_xmit` may run from netpoll (`netdevice.h` forbids
/// `kfree_skb()` there): like `dev_kfree_skb_any_reason()`, they free at
/// once in process or softirq context, and otherwise queue the buffer for
/// the `NET_TX` softirq to free.
///
/// # Invariants
///
/// `ptr` points to an `sk_buff` this value owns (one reference).
pub struct SkBuff {
    ptr: NonNull<bindings::sk_buff>,
    /// Where the buffer was made or taken over, for the report of an
    /// implicit drop.
    #[cfg(CONFIG_DEBUG_NET)]
    from: &'static core::panic::Location<'static>,
}

// SAFETY: an sk_buff may be passed between threads; its owner has it
// exclusively.
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// Takes ownership of the buffer at `ptr`. With `CONFIG_DEBUG_NET`,
    /// records the caller for the report of an implicit drop.
    ///
    /// # Safety
    ///
    /// `ptr` is a valid `sk_buff` whose reference the caller gives up.
    #[cfg_attr(CONFIG_DEBUG_NET, track_caller)]
    #[inline]
    pub unsafe fn from_raw(ptr: *mut bindings::sk_buff) -> Self {
        // SAFETY: valid pointers are not null.
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        // INVARIANT: per the caller.
        Self {
            ptr,
            #[cfg(CONFIG_DEBUG_NET)]
            from: core::panic::Location::caller(),
        }
    }

    /// Gives up ownership, for C to take.
    #[inline]
    pub fn into_raw(self) -> *mut bindings::sk_buff {
        ManuallyDrop::new(self).ptr.as_ptr()
    }

    /// The C `struct sk_buff`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::sk_buff {
        self.ptr.as_ptr()
    }

    /// The length of the packet, linear part and frags.
    #[inline]
    pub fn len(&self) -> u32 {
        // SAFETY: owned, valid (type invariant); the field is read through
        // a raw place, without a reference to the `sk_buff`, whose
        // reference count C may change meanwhile.
        unsafe { (*self.as_raw()).len }
    }

    /// The length of the frags (`data_len`).
    #[inline]
    fn data_len(&self) -> u32 {
        // SAFETY: as in `len`.
        unsafe { (*self.as_raw()).data_len }
    }

    /// Whether another reference to the `sk_buff` is held (`skb_shared`):
    /// a sender that kept one, and may send or change it again.
    #[inline]
    pub fn is_shared(&self) -> bool {
        // SAFETY: a valid buffer; `users` is atomic, read as such.
        unsafe { bindings::atomic_read(&raw const (*self.as_raw()).users.refs) != 1 }
    }

    /// Whether the packet's data and shared info are shared with a clone
    /// (`skb_cloned`): TCP sends clones of the packets it keeps for
    /// retransmission.
    #[inline]
    pub fn is_cloned(&self) -> bool {
        let skb = self.as_raw();
        // SAFETY: a valid buffer; the `cloned` bit is the owner's, read
        // through a raw place.
        if unsafe { bindings::sk_buff::cloned_raw(skb) } == 0 {
            return false;
        }
        // SAFETY: a valid buffer, whose shared info follows its data;
        // `dataref` is atomic, read as such.
        let dataref =
            unsafe { bindings::atomic_read(&raw const (*bindings::skb_shinfo(skb)).dataref) };
        // CAST: the low 16 bits count the references to the data.
        (dataref as u32 & bindings::SKB_DATAREF_MASK) != 1
    }

    /// Whether the packet is this value's alone to change, data included:
    /// neither [shared](SkBuff::is_shared) nor [cloned](SkBuff::is_cloned).
    /// What a packet given to `start_xmit` may not be, and one built on
    /// receive is.
    #[inline]
    pub fn is_exclusive(&self) -> bool {
        !self.is_shared() && !self.is_cloned()
    }

    /// Whether the packet is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The transmit queue the stack picked (`skb_get_queue_mapping`).
    #[inline]
    pub fn queue_mapping(&self) -> u16 {
        // SAFETY: the buffer is valid.
        unsafe { bindings::skb_get_queue_mapping(self.as_raw()) }
    }

    /// The length of the linear part (`skb_headlen`).
    #[inline]
    pub fn headlen(&self) -> u32 {
        self.len() - self.data_len()
    }

    /// Copies `dst.len()` bytes of the packet from `offset`, across the
    /// linear part and frags (`skb_copy_bits`). Fails with `EFAULT` when the
    /// packet is shorter, or when a frag is unreadable (device memory).
    pub fn copy_bits(&self, offset: u32, dst: &mut [u8]) -> Result {
        let len = i32::try_from(dst.len()).map_err(|_| EINVAL)?;
        let offset = i32::try_from(offset).map_err(|_| EINVAL)?;
        // SAFETY: the buffer is valid; `dst` is writable for `len` bytes.
        to_result(unsafe {
            bindings::skb_copy_bits(self.as_raw(), offset, dst.as_mut_ptr().cast(), len)
        })
    }

    /// Whether the CPU can read every frag of the packet (no device memory).
    #[inline]
    pub fn frags_readable(&self) -> bool {
        // SAFETY: the buffer is valid.
        unsafe { bindings::skb_frags_readable(self.as_raw()) }
    }

    /// Appends `data` to the linear part (`skb_put_data`); the caller made
    /// room for it (`ENOSPC` otherwise). `EBUSY` for a packet whose data
    /// is shared ([`SkBuff::is_exclusive`]), such as a clone `start_xmit`
    /// got: its other users read that data. `EINVAL` for a packet with
    /// frags, whose linear part cannot grow (`skb_put` is a `BUG` there,
    /// even for no bytes).
    pub fn put_data(&mut self, data: &[u8]) -> Result {
        if !self.is_exclusive() {
            return Err(EBUSY);
        }
        if self.data_len() != 0 {
            return Err(EINVAL);
        }
        // SAFETY: the buffer is valid.
        let room = unsafe { bindings::skb_tailroom(self.as_raw()) };
        let len = u32::try_from(data.len()).map_err(|_| EINVAL)?;
        if i64::from(room) < i64::from(len) {
            return Err(ENOSPC);
        }
        // SAFETY: there is room for `len` bytes, checked above; `data` is
        // readable for `len` bytes.
        unsafe { bindings::skb_put_data(self.as_raw(), data.as_ptr().cast(), len) };
        Ok(())
    }

    /// The number of frags (`nr_frags`).
    #[inline]
    pub fn nr_frags(&self) -> u32 {
        // SAFETY: the buffer is valid; its shared info follows its data.
        u32::from(unsafe { (*bindings::skb_shinfo(self.as_raw())).nr_frags })
    }
    /// Frees the packet as sent (`dev_consume_skb_any`), in any context.
    #[inline]
    pub fn consume(self) {
        // SAFETY: the buffer is ours to free.
        unsafe {
            bindings::dev_kfree_skb_any_reason(
                self.into_raw(),
                bindings::skb_drop_reason_SKB_CONSUMED,
            )
        }
    }

    /// Frees the packet as dropped, for `reason`, in any context
    /// (`dev_kfree_skb_any_reason`: `kfree_skb_reason` with hard IRQs on).
    #[inline]
    pub fn drop_reason(self, reason: DropReason) {
        // SAFETY: the buffer is ours to free.
        unsafe {
            bindings::dev_kfree_skb_any_reason(self.into_raw(), reason as bindings::skb_drop_reason)
        }
    }
}

impl Drop for SkBuff {
    /// Frees a buffer its owner said nothing about; see [`SkBuff`].
    fn drop(&mut self) {
        #[cfg(CONFIG_DEBUG_NET)]
        crate::do_once_lite! {
            crate::pr_warn!(
                "sk_buff from {}:{} dropped without a reason: use drop_reason() or consume()\n",
                self.from.file(),
                self.from.line()
            );
            crate::warn_on!(true);
        }
        // SAFETY: the buffer is ours to free (type invariant); this frees
        // it in any context, hard IRQs off included.
        unsafe {
            bindings::dev_kfree_skb_any_reason(
                self.ptr.as_ptr(),
                DropReason::NotSpecified as bindings::skb_drop_reason,
            )
        }
    }
}

#[macros::kunit_tests(rust_kernel_skbuff_free)]
mod tests {
    use super::*;
    use crate::{
        interrupt::local_interrupt_disable,
        sync::atomic::{
            Atomic,
            Relaxed, //
        },
        time::{
            delay::fsleep,
            Delta, //
        },
    };

    /// Buffers [`count_free`] saw freed.
    static FREED: Atomic<u32> = Atomic::new(0);

    /// The destructor of the test's buffers: counts them as they go.
    extern "C" fn count_free(_skb: *mut bindings::sk_buff) {
        FREED.add(1, Relaxed);
    }

    /// A buffer whose freeing [`FREED`] counts.
    fn counted() -> Result<SkBuff> {
        // SAFETY: no requirements; the result is null or a new buffer
        // with one reference.
        let raw =
            unsafe { bindings::__alloc_skb(64, GFP_KERNEL.as_raw(), 0, bindings::NUMA_NO_NODE) };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: a fresh buffer, ours alone, with no destructor or
        // destination (the other member of the union) yet.
        unsafe { (*raw).__bindgen_anon_3.__bindgen_anon_1.destructor = Some(count_free) };
        // SAFETY: a valid buffer, whose reference we give up.
        Ok(unsafe { SkBuff::from_raw(raw) })
    }

    #[test]
    fn put_data_refuses_a_packet_with_frags() -> Result {
        let mut skb = counted()?;
        assert_eq!(skb.put_data(&[1]), Ok(()));
        let page = core::mem::ManuallyDrop::new(crate::page::Page::alloc_page(GFP_KERNEL)?);
        // CAST: a page's address is its `netmem_ref`; PAGE_SIZE fits.
        let (netmem, truesize) = (
            page.as_ptr() as bindings::netmem_ref,
            crate::page::PAGE_SIZE as u32,
        );
        // SAFETY: a valid buffer of ours with no frags; the frag takes the
        // page's one reference, which freeing the buffer puts.
        unsafe { bindings::skb_add_rx_frag_netmem(skb.as_raw(), 0, netmem, 0, 64, truesize) };
        assert_eq!(skb.put_data(&[]), Err(EINVAL));
        assert_eq!(skb.put_data(&[1]), Err(EINVAL));
        assert_eq!(skb.len(), 65);
        skb.consume();
        Ok(())
    }

    #[test]
    fn freed_in_softirq_when_hard_irqs_are_off() -> Result {
        let before = FREED.load(Relaxed);
        let (dropped, sent) = (counted()?, counted()?);
        {
            // As netpoll calls `ndo_start_xmit`.
            let _irqs_off = local_interrupt_disable();
            dropped.drop_reason(DropReason::NotSpecified);
            sent.consume();
            // Queued for the `NET_TX` softirq: `kfree_skb()` would have
            // run the destructors here, with IRQs off.
            assert_eq!(FREED.load(Relaxed), before);
        }
        for _ in 0..100 {
            if FREED.load(Relaxed) == before + 2 {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        assert_eq!(FREED.load(Relaxed), before + 2);
        Ok(())
    }
}
