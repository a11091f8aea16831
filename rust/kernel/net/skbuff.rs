// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`), as a network driver handles them:
//! received packets it builds and hands to the stack, packets the stack
//! gives it to send.
//!
//! An [`SkBuff`] owns its buffer. Dropping one frees it as dropped for an
//! unspecified reason; a driver says why with [`SkBuff::drop_reason`], or
//! that it was sent with [`SkBuff::consume`].
//!
//! C header: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h)

use crate::{
    error::to_result,
    net::netdev::NetDevice,
    prelude::*, //
};
use core::{
    mem::ManuallyDrop,
    ptr::NonNull, //
};

/// Why a driver drops a packet (`enum skb_drop_reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DropReason {
    /// No reason given.
    NotSpecified = bindings::skb_drop_reason_SKB_DROP_REASON_NOT_SPECIFIED,
    /// The device is down or going away.
    DevReady = bindings::skb_drop_reason_SKB_DROP_REASON_DEV_READY,
    /// Out of memory for the packet.
    NoMem = bindings::skb_drop_reason_SKB_DROP_REASON_NOMEM,
    /// The packet is too long for the device.
    PktTooBig = bindings::skb_drop_reason_SKB_DROP_REASON_PKT_TOO_BIG,
    /// The device reported an error on the frame.
    DevHdr = bindings::skb_drop_reason_SKB_DROP_REASON_DEV_HDR,
}

/// An owned socket buffer.
///
/// # Invariants
///
/// `ptr` points to an `sk_buff` this value owns (one reference).
pub struct SkBuff {
    ptr: NonNull<bindings::sk_buff>,
}

// SAFETY: an sk_buff may be passed between threads; its owner has it
// exclusively.
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// Takes ownership of the buffer at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a valid `sk_buff` whose reference the caller gives up.
    pub unsafe fn from_raw(ptr: *mut bindings::sk_buff) -> Self {
        // SAFETY: valid pointers are not null.
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        // INVARIANT: per the caller.
        Self { ptr }
    }

    /// Gives up ownership, for C to take.
    pub fn into_raw(self) -> *mut bindings::sk_buff {
        ManuallyDrop::new(self).ptr.as_ptr()
    }

    /// The C `struct sk_buff`.
    pub fn as_raw(&self) -> *mut bindings::sk_buff {
        self.ptr.as_ptr()
    }

    fn raw(&self) -> &bindings::sk_buff {
        // SAFETY: owned, valid (type invariant).
        unsafe { self.ptr.as_ref() }
    }

    /// The length of the packet, linear part and frags.
    pub fn len(&self) -> u32 {
        self.raw().len
    }

    /// Whether the packet is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The transmit queue the stack picked (`skb_get_queue_mapping`).
    pub fn queue_mapping(&self) -> u16 {
        // SAFETY: the buffer is valid.
        unsafe { bindings::skb_get_queue_mapping(self.as_raw()) }
    }

    /// The length of the linear part (`skb_headlen`).
    pub fn headlen(&self) -> u32 {
        self.raw().len - self.raw().data_len
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
    pub fn frags_readable(&self) -> bool {
        // SAFETY: the buffer is valid.
        unsafe { bindings::skb_frags_readable(self.as_raw()) }
    }

    /// Appends `data` to the linear part (`skb_put_data`); the caller made
    /// room for it.
    pub fn put_data(&mut self, data: &[u8]) -> Result {
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

    /// Sets the protocol from the Ethernet header, and the device the
    /// packet came in on (`eth_type_trans`).
    pub fn eth_type_trans(&mut self, dev: &NetDevice) {
        // SAFETY: the buffer holds at least an Ethernet header (the caller
        // put a frame in it); `dev` is a live device.
        let proto = unsafe { bindings::eth_type_trans(self.as_raw(), dev.as_raw()) };
        // SAFETY: the buffer is ours; `protocol` sits in the `headers`
        // struct group (a union of two views of the same fields).
        unsafe {
            (*self.as_raw())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_mut()
                .protocol = proto
        };
    }

    /// Frees the packet as sent (`dev_consume_skb_any`), in any context.
    pub fn consume(self) {
        // SAFETY: the buffer is ours to free.
        unsafe {
            bindings::dev_kfree_skb_any_reason(
                self.into_raw(),
                bindings::skb_drop_reason_SKB_CONSUMED,
            )
        }
    }

    /// Frees the packet as sent from NAPI (`napi_consume_skb`); `budget` is
    /// the poll's budget, 0 outside NAPI.
    pub fn napi_consume(self, budget: i32) {
        // SAFETY: the buffer is ours to free.
        unsafe { bindings::napi_consume_skb(self.into_raw(), budget) }
    }

    /// Frees the packet as dropped, for `reason` (`kfree_skb_reason`).
    pub fn drop_reason(self, reason: DropReason) {
        // SAFETY: the buffer is ours to free.
        unsafe {
            bindings::sk_skb_reason_drop(
                core::ptr::null_mut(),
                self.into_raw(),
                reason as bindings::skb_drop_reason,
            )
        }
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: the buffer is ours to free (type invariant).
        unsafe {
            bindings::sk_skb_reason_drop(
                core::ptr::null_mut(),
                self.ptr.as_ptr(),
                DropReason::NotSpecified as bindings::skb_drop_reason,
            )
        }
    }
}
