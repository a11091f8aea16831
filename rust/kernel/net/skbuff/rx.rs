// SPDX-License-Identifier: GPL-2.0

//! What a driver does to a packet it received: frags from a page pool,
//! the protocol, and the checksum and hash the device found.
//!
//! C headers: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h),
//! [`include/linux/etherdevice.h`](srctree/include/linux/etherdevice.h)

use super::SkBuff;
#[cfg(CONFIG_PAGE_POOL)]
use super::MAX_FRAGS;
use crate::net::netdev::NetDevice;
#[cfg(CONFIG_PAGE_POOL)]
use crate::net::page_pool::PoolNetmem;
use crate::prelude::*;

/// The room a driver leaves in front of a received frame it builds a
/// packet around (`NET_SKB_PAD + NET_IP_ALIGN`): the stack pushes headers
/// there without copying the packet.
// CAST: small configuration values.
pub const RX_HEADROOM: u32 = {
    let pad = bindings::L1_CACHE_BYTES;
    (if pad > 32 { pad } else { 32 }) + bindings::NET_IP_ALIGN
};

/// The room a packet's shared info takes at the end of a buffer the packet
/// is built around (`SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`).
// CAST: a structure of a few hundred bytes.
pub const SHINFO_ROOM: u32 = {
    let align = bindings::SMP_CACHE_BYTES as usize;
    let size = core::mem::size_of::<bindings::skb_shared_info>();
    size.next_multiple_of(align) as u32
};

/// The bytes a buffer takes for a packet of up to `len` bytes to be built
/// around it (`napi_build_skb`): [`RX_HEADROOM`] before the frame, the
/// shared info after it, at the cache line alignment it needs. A multiple
/// of that alignment, so that buffers of this size carved one after the
/// other from the start of a page each have their shared info aligned.
/// `u32::MAX` for a length no buffer could take (the size would not fit a
/// `u32`), which no allocation gives and `NapiRx::build_skb` refuses: it
/// never panics, nor wraps to a small size.
///
/// ```
/// use kernel::net::skbuff::{
///     build_buf_size,
///     RX_HEADROOM,
///     SHINFO_ROOM, //
/// };
///
/// let n = build_buf_size(256);
/// assert!(n >= RX_HEADROOM + 256 + SHINFO_ROOM);
/// assert_eq!(build_buf_size(u32::MAX), u32::MAX);
/// assert_eq!(build_buf_size(u32::MAX - RX_HEADROOM), u32::MAX);
/// ```
pub const fn build_buf_size(len: u32) -> u32 {
    // CAST: u32 to u64 is lossless; a small power of two.
    let align = bindings::SMP_CACHE_BYTES as u64;
    // CAST: as above; the sum of two u32s fits a u64, and so does it
    // rounded up to a small power of two plus a u32.
    let size = (RX_HEADROOM as u64 + len as u64).next_multiple_of(align) + SHINFO_ROOM as u64;
    if size > u32::MAX as u64 {
        u32::MAX
    } else {
        // CAST: checked above.
        size as u32
    }
}

impl SkBuff {
    /// Appends the `len` bytes of page pool buffer `buf` starting `off`
    /// bytes into it as a frag (`skb_add_rx_frag_netmem`) that accounts
    /// for the whole buffer's memory, and marks the packet's frags for
    /// return to their pools when it is freed (`skb_mark_for_recycle`).
    /// The frag takes the buffer's reference. A `net_iov` frag makes the
    /// packet unreadable. Hands the buffer back when the packet has no
    /// free frag slot, the range is not inside the buffer, or the packet's
    /// shared info is not its alone ([`SkBuff::is_exclusive`]: a clone or
    /// a shared packet `start_xmit` got, whose frags others read and
    /// free), the packet has frags not marked for recycling (which hold
    /// page references, not the pool's), or a readable range the caller
    /// did not make visible to the
    /// CPU ([`PoolNetmem::sync_for_cpu`], last, over at least the range;
    /// [`PoolNetmem::is_synced`]): the stack reads it.
    #[cfg(CONFIG_PAGE_POOL)]
    pub fn add_rx_frag(&mut self, buf: PoolNetmem, off: u32, len: u32) -> Result<(), PoolNetmem> {
        if !self.is_exclusive() || !buf.is_synced(off, len) {
            return Err(buf);
        }
        let truesize = buf.size();
        // SAFETY: the buffer is valid; its shared info follows its data.
        let nr = unsafe { (*bindings::skb_shinfo(self.as_raw())).nr_frags };
        // CAST: MAX_SKB_FRAGS is a small constant.
        if usize::from(nr) >= MAX_FRAGS || !buf.holds(off, len) {
            return Err(buf);
        }
        // SAFETY: the buffer is valid and ours alone; the bit is read as C
        // reads it.
        let recycles = unsafe { (*self.as_raw()).pp_recycle() } != 0;
        // Frags that hold page references, not the pool's (pages spliced
        // in from a pipe, in a packet `start_xmit` got), would be given
        // back to their pools as the pool's once marked: C refuses to mix
        // the two in one packet (`skb_gro_receive`), and so does this.
        if nr > 0 && !recycles {
            return Err(buf);
        }
        let (Ok(o), Ok(l)) = (i32::try_from(buf.offset() + off), i32::try_from(len)) else {
            return Err(buf);
        };
        let (netmem, _) = buf.into_raw();
        // SAFETY: slot `nr` is free; the frag takes the pool reference the
        // buffer held, and the recycle mark makes freeing the packet give
        // it back to the pool.
        unsafe {
            bindings::skb_add_rx_frag_netmem(
                self.as_raw(),
                nr.into(),
                netmem.as_raw(),
                o,
                l,
                truesize,
            );
            bindings::skb_mark_for_recycle(self.as_raw());
        }
        Ok(())
    }

    /// The length of the protocol headers at the start of `frame`, as far
    /// as the flow dissector finds them (`eth_get_headlen`): what a driver
    /// copies into the linear part.
    #[inline]
    pub fn eth_headlen(dev: &NetDevice, frame: &[u8]) -> u32 {
        let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        // SAFETY: `frame` is readable for `len` bytes; `dev` is live.
        unsafe { bindings::eth_get_headlen(dev.as_raw(), frame.as_ptr().cast(), len) }
    }

    /// Sets the protocol from the Ethernet header, and the device the
    /// packet came in on (`eth_type_trans`), which pulls the header off
    /// the packet's linear part. `EINVAL` when that part is shorter than
    /// an Ethernet header: the pull would leave the linear part shorter
    /// than nothing (`__skb_pull` BUGs), and the header be read past its
    /// end. `EBUSY` for a packet another holds a reference to
    /// ([`SkBuff::is_shared`]), which would see it change.
    #[inline]
    pub fn eth_type_trans(&mut self, dev: &NetDevice) -> Result {
        if self.is_shared() {
            return Err(EBUSY);
        }
        if self.headlen() < bindings::ETH_HLEN {
            return Err(EINVAL);
        }
        // SAFETY: the buffer's linear part holds at least an Ethernet
        // header (checked above); `dev` is a live device.
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
        Ok(())
    }

    /// Marks the packet's checksums as checked by the device
    /// (`CHECKSUM_UNNECESSARY`): the stack does not check them again, which
    /// it could not do over unreadable frags.
    #[inline]
    pub fn set_csum_unnecessary(&mut self) {
        // CAST: 1, into a two-bit field.
        let v = bindings::CHECKSUM_UNNECESSARY as u8;
        // SAFETY: the buffer is ours; `ip_summed` sits in the `headers`
        // struct group, as `protocol` does.
        unsafe {
            (*self.as_raw())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_mut()
                .set_ip_summed(v)
        };
    }

    /// Records the hash the device computed over the flow's addresses and
    /// ports (`skb_set_hash`, `PKT_HASH_TYPE_L4`).
    #[inline]
    pub fn set_l4_hash(&mut self, hash: u32) {
        // SAFETY: the buffer is ours.
        unsafe {
            bindings::skb_set_hash(
                self.as_raw(),
                hash,
                bindings::pkt_hash_types_PKT_HASH_TYPE_L4,
            )
        };
    }

    /// Records the hash the device computed over the flow's addresses only
    /// (`skb_set_hash`, `PKT_HASH_TYPE_L3`).
    #[inline]
    pub fn set_l3_hash(&mut self, hash: u32) {
        // SAFETY: the buffer is ours.
        unsafe {
            bindings::skb_set_hash(
                self.as_raw(),
                hash,
                bindings::pkt_hash_types_PKT_HASH_TYPE_L3,
            )
        };
    }
}
