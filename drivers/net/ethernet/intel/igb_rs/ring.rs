// SPDX-License-Identifier: GPL-2.0

//! Descriptor rings of one queue pair.
//!
//! Each ring is a coherent array of 16-byte advanced descriptors and, for
//! now, a coherent array of 2 KiB buffers, one per descriptor: received
//! frames are copied out of their buffer into a new skb, and frames to send
//! are copied into theirs. Page pools and zero-copy come with header split.

use super::regs::*;
use kernel::{
    device::{
        Bound,
        Device, //
    },
    dma::{
        Coherent,
        DmaAddress, //
    },
    io::{
        io_read,
        io_write, //
    },
    net::{
        napi::Napi,
        skbuff::{
            DropReason,
            SkBuff, //
        },
    },
    prelude::*,
    sync::barrier::{
        dma_mb,
        Read, //
    },
    transmute::{
        AsBytes,
        FromBytes, //
    },
};

/// Descriptors per ring.
pub(crate) const RING_SIZE: usize = 256;
/// Bytes per buffer.
pub(crate) const BUF_SIZE: usize = 2048;
/// Bytes per header buffer, with header split.
pub(crate) const HDR_SIZE: usize = 256;

/// An advanced receive descriptor: buffer addresses when given to the
/// device, status and length when it gives it back.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RxDesc {
    /// Packet buffer address; write-back: packet info and RSS hash.
    addr: u64,
    /// Header buffer address; write-back: status and errors (bits 31:0),
    /// length (47:32), VLAN (63:48).
    status: u64,
}

// SAFETY: two integers, no padding.
unsafe impl AsBytes for RxDesc {}
// SAFETY: any bit pattern is a valid pair of integers.
unsafe impl FromBytes for RxDesc {}

/// An advanced transmit data descriptor.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct TxDesc {
    addr: u64,
    cmd_type_len: u32,
    /// Payload length and options; write-back: status (DD).
    olinfo_status: u32,
}

// SAFETY: integers, no padding.
unsafe impl AsBytes for TxDesc {}
// SAFETY: any bit pattern is valid.
unsafe impl FromBytes for TxDesc {}

/// The receive ring.
pub(crate) struct RxRing {
    desc: Coherent<[RxDesc]>,
    bufs: Coherent<[u8]>,
    /// Header buffers, used with header split.
    hdrs: Coherent<[u8]>,
    /// Whether the device splits headers into `hdrs`.
    split: bool,
    /// The next descriptor the device gives back.
    next: usize,
}

/// What one receive poll did.
#[derive(Default)]
pub(crate) struct RxDone {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
    pub(crate) dropped: u64,
}

impl RxRing {
    pub(crate) fn new(dev: &Device<Bound>) -> Result<Self> {
        Ok(Self {
            desc: Coherent::zeroed_slice(dev, RING_SIZE, GFP_KERNEL)?,
            bufs: Coherent::zeroed_slice(dev, RING_SIZE * BUF_SIZE, GFP_KERNEL)?,
            hdrs: Coherent::zeroed_slice(dev, RING_SIZE * HDR_SIZE, GFP_KERNEL)?,
            split: false,
            next: 0,
        })
    }

    pub(crate) fn dma_address(&self) -> DmaAddress {
        self.desc.dma_address()
    }

    fn buf_dma(&self, i: usize) -> DmaAddress {
        // CAST: below RING_SIZE * BUF_SIZE.
        self.bufs.dma_address() + (i * BUF_SIZE) as DmaAddress
    }

    fn hdr_dma(&self, i: usize) -> DmaAddress {
        // CAST: below RING_SIZE * HDR_SIZE.
        self.hdrs.dma_address() + (i * HDR_SIZE) as DmaAddress
    }

    /// Gives descriptor `i` back to the device, empty.
    fn arm(&self, i: usize) -> Result {
        let hdr = if self.split { self.hdr_dma(i) } else { 0 };
        io_write!(self.desc, [try: i].addr, self.buf_dma(i));
        io_write!(self.desc, [try: i].status, hdr);
        Ok(())
    }

    /// Arms every descriptor but one (a full ring looks empty to the
    /// device) and returns the tail to write. With `split`, the device
    /// writes each frame's headers to a header buffer (the caller sets the
    /// queue's descriptor type to match).
    pub(crate) fn fill(&mut self, split: bool) -> Result<u32> {
        self.split = split;
        for i in 0..RING_SIZE {
            self.arm(i)?;
        }
        self.next = 0;
        // CAST: RING_SIZE fits.
        Ok((RING_SIZE - 1) as u32)
    }

    fn status(&self, i: usize) -> Result<u64> {
        Ok(io_read!(self.desc, [try: i].status))
    }

    /// The header length of a split frame, from the write-back's first
    /// quadword (HDR_LEN, bits 30:21).
    fn hdr_len(&self, i: usize) -> Result<usize> {
        let wb: u64 = io_read!(self.desc, [try: i].addr);
        // CAST: a 10-bit field.
        Ok(((wb >> 21) & 0x3ff) as usize)
    }

    /// `len` bytes of buffer `i` of `bufs`, each `size` bytes.
    ///
    /// # Safety
    ///
    /// The device is done with the buffer until its descriptor is armed
    /// again.
    unsafe fn bytes(bufs: &Coherent<[u8]>, size: usize, i: usize, len: usize) -> &[u8] {
        let len = len.min(size);
        // SAFETY: inside buffer `i`, which the device does not write, per
        // the caller.
        unsafe { core::slice::from_raw_parts(bufs.as_ptr().cast::<u8>().add(i * size), len) }
    }

    /// Takes up to `budget` frames off the ring into skbs for `napi`.
    /// Returns what it did and the new tail, if it gave descriptors back.
    pub(crate) fn poll(
        &mut self,
        napi: &Napi<super::QueuePair>,
        budget: i32,
    ) -> (RxDone, Option<u32>) {
        let mut done = RxDone::default();
        let mut last = None;
        let mut n = 0;
        while n < budget {
            let i = self.next;
            let Ok(st) = self.status(i) else { break };
            if st & RXD_STAT_DD == 0 {
                break;
            }
            // Read the rest of the descriptor and the buffer after DD.
            dma_mb(Read);
            // CAST: a 16-bit field.
            let len = ((st >> 32) & 0xffff) as usize;
            // With header split, the frame starts in the header buffer.
            let hlen = if self.split {
                self.hdr_len(i).unwrap_or(HDR_SIZE + 1)
            } else {
                0
            };
            let total = hlen + len;
            if st & RXD_STAT_EOP == 0
                || st & RXD_ERR_MASK != 0
                || hlen > HDR_SIZE
                || len > BUF_SIZE
                || total < 14
            {
                // Frames span one buffer (no jumbo frames yet).
                done.dropped += 1;
            } else if let Some(mut skb) = napi.alloc_skb(total as u32) {
                // SAFETY: the device is done with buffer `i` and its header
                // buffer (DD is set and was read before them, ordered by
                // the barrier) until the descriptor is armed again below.
                let (hdr, data) = unsafe {
                    (
                        Self::bytes(&self.hdrs, HDR_SIZE, i, hlen),
                        Self::bytes(&self.bufs, BUF_SIZE, i, len),
                    )
                };
                if skb.put_data(hdr).is_ok() && skb.put_data(data).is_ok() {
                    skb.eth_type_trans(napi.dev());
                    done.packets += 1;
                    done.bytes += total as u64;
                    napi.gro_receive(skb);
                } else {
                    done.dropped += 1;
                    skb.drop_reason(DropReason::NoMem);
                }
            } else {
                done.dropped += 1;
            }
            if self.arm(i).is_err() {
                break;
            }
            last = Some(i);
            self.next = (i + 1) % RING_SIZE;
            n += 1;
        }
        // CAST: below RING_SIZE.
        (done, last.map(|i| i as u32))
    }
}

/// The transmit ring.
pub(crate) struct TxRing {
    desc: Coherent<[TxDesc]>,
    bufs: Coherent<[u8]>,
    /// The next descriptor to fill.
    next_to_use: usize,
    /// The oldest descriptor the device may not have finished.
    next_to_clean: usize,
}

/// Why a frame was not put on the ring.
pub(crate) enum TxError {
    /// No free descriptor: stop the queue and retry.
    Full(SkBuff),
    /// The frame cannot be sent; it was dropped.
    Dropped,
}

impl TxRing {
    pub(crate) fn new(dev: &Device<Bound>) -> Result<Self> {
        Ok(Self {
            desc: Coherent::zeroed_slice(dev, RING_SIZE, GFP_KERNEL)?,
            bufs: Coherent::zeroed_slice(dev, RING_SIZE * BUF_SIZE, GFP_KERNEL)?,
            next_to_use: 0,
            next_to_clean: 0,
        })
    }

    pub(crate) fn dma_address(&self) -> DmaAddress {
        self.desc.dma_address()
    }

    pub(crate) fn reset(&mut self) {
        self.next_to_use = 0;
        self.next_to_clean = 0;
    }

    /// Free descriptors, keeping one unused (a full ring looks empty).
    pub(crate) fn unused(&self) -> usize {
        (self.next_to_clean + RING_SIZE - self.next_to_use - 1) % RING_SIZE
    }

    /// Copies `skb` into the next buffer and fills its descriptor; returns
    /// the tail to write and the length sent.
    pub(crate) fn push(&mut self, skb: SkBuff) -> Result<(u32, u32), TxError> {
        if self.unused() == 0 {
            return Err(TxError::Full(skb));
        }
        let len = skb.len();
        // CAST: u32 to usize is lossless on Linux.
        if len as usize > BUF_SIZE || len == 0 {
            skb.drop_reason(DropReason::PktTooBig);
            return Err(TxError::Dropped);
        }
        let i = self.next_to_use;
        // SAFETY: descriptor `i` is unused, so the device does not read its
        // buffer until the descriptor is handed over below.
        let buf = unsafe {
            core::slice::from_raw_parts_mut(
                self.bufs.as_mut_ptr().cast::<u8>().add(i * BUF_SIZE),
                len as usize,
            )
        };
        if skb.copy_bits(0, buf).is_err() {
            // Unreadable (device memory) frags: not supported yet.
            skb.drop_reason(DropReason::NotSpecified);
            return Err(TxError::Dropped);
        }
        skb.consume();
        // CAST: below RING_SIZE * BUF_SIZE.
        let addr = self.bufs.dma_address() + (i * BUF_SIZE) as DmaAddress;
        let cmd = TXD_DTYP_DATA | TXD_DCMD_DEXT | TXD_DCMD_IFCS | TXD_DCMD_EOP | TXD_DCMD_RS | len;
        let wrote = (|| -> Result {
            io_write!(self.desc, [try: i].addr, addr);
            io_write!(self.desc, [try: i].cmd_type_len, cmd);
            io_write!(self.desc, [try: i].olinfo_status, len << TXD_PAYLEN_SHIFT);
            Ok(())
        })();
        if wrote.is_err() {
            return Err(TxError::Dropped);
        }
        self.next_to_use = (i + 1) % RING_SIZE;
        // CAST: below RING_SIZE.
        Ok((self.next_to_use as u32, len))
    }

    /// Reclaims the descriptors the device finished; returns how many.
    pub(crate) fn clean(&mut self) -> usize {
        let mut n = 0;
        while self.next_to_clean != self.next_to_use {
            let i = self.next_to_clean;
            let st = (|| -> Result<u32> { Ok(io_read!(self.desc, [try: i].olinfo_status)) })();
            match st {
                Ok(st) if st & TXD_STAT_DD != 0 => {}
                _ => break,
            }
            self.next_to_clean = (i + 1) % RING_SIZE;
            n += 1;
        }
        n
    }
}
