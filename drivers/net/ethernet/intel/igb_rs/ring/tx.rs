// SPDX-License-Identifier: GPL-2.0

//! The transmit ring: frames sent from where they are (the linear part and
//! page frags mapped for the device, `net_iov` frags at their binding's
//! addresses), TSO and checksum contexts, and the completions the device
//! writes back.

use super::{
    next,
    wrap,
    Desc, //
};
use crate::regs::*;
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
        io_project,
        io_read,
        io_write, //
    },
    net::{
        napi::{
            NapiPoll,
            Poll, //
        },
        skbuff::{
            DropReason,
            SkBuff,
            TxMap,
            TxMapper, //
        },
    },
    prelude::*,
    sync::barrier::{
        dma_mb,
        Write, //
    },
};

/// A transmit descriptor's share of a frame: the part of it the
/// descriptor sends and, on the frame's first descriptor, the frame and
/// where it ends.
#[derive(Default)]
struct TxSlot {
    map: Option<TxMap>,
    /// On a frame's first descriptor: the frame, freed once sent.
    skb: Option<SkBuff>,
    /// On a frame's first descriptor: its last one, whose write-back says
    /// the frame was sent.
    eop: usize,
    /// On a frame's first descriptor: its bytes on the wire.
    bytes: u32,
}

impl Drop for TxSlot {
    fn drop(&mut self) {
        // A ring dropped without `TxRing::reset` (which frees its frames
        // the same way first).
        if let Some(skb) = self.skb.take() {
            skb.drop_reason(DropReason::DevReady);
        }
    }
}

/// The transmit ring: frames are sent from where they are, mapped for the
/// device piece by piece; `net_iov` frags (devmem TX) by the addresses
/// their binding mapped.
pub(crate) struct TxRing {
    desc: Coherent<[Desc]>,
    slots: KVec<TxSlot>,
    /// Maps frames for the ring's device, and undoes the mappings.
    mapper: TxMapper,
    /// The next descriptor to fill.
    next_to_use: usize,
    /// The first descriptor of the oldest frame not known to be sent.
    next_to_clean: usize,
    /// Frames freed since the ring was made (wrapping).
    freed: u64,
    /// The watchdog's hang detection.
    hang: crate::hw::TxHangCheck,
    /// Frames, and their bytes, freed outside the queue's poll (by
    /// `start_xmit`) and not yet told to byte queue limits, which hear of
    /// a queue's completions from its poll alone.
    unreported: (u32, u32),
}

/// A frame put on the ring.
pub(crate) struct Sent {
    /// The tail to write.
    pub(crate) tail: u32,
    /// Its bytes on the wire, the headers of every segment counted.
    pub(crate) bytes: u32,
    /// The frames it makes on the wire.
    pub(crate) segs: u32,
    /// When the device segments it: its length before.
    pub(crate) tso_len: Option<u32>,
}

/// Why a frame was not put on the ring.
pub(crate) enum TxError {
    /// No free descriptor: stop the queue and retry.
    Full(SkBuff),
    /// The frame cannot be sent; it was dropped.
    Dropped,
}

/// The most descriptors a frame takes: a context descriptor, the linear
/// part, the frags.
pub(crate) const TX_FRAME_MAX: usize = 2 + kernel::net::skbuff::MAX_FRAGS;

impl TxRing {
    /// A ring of `n` descriptors, as [`ring_size`] gives.
    pub(crate) fn new(dev: &Device<Bound>, n: u32) -> Result<Self> {
        // CAST: u32 to usize is lossless on Linux.
        let size = n as usize;
        let mut slots = KVec::with_capacity(size, GFP_KERNEL)?;
        for _ in 0..size {
            slots.push(TxSlot::default(), GFP_KERNEL)?;
        }
        Ok(Self {
            desc: Coherent::zeroed_slice(dev, size, GFP_KERNEL)?,
            slots,
            mapper: TxMapper::new(dev),
            next_to_use: 0,
            next_to_clean: 0,
            freed: 0,
            hang: crate::hw::TxHangCheck::new(),
            unreported: (0, 0),
        })
    }

    pub(crate) fn dma_address(&self) -> DmaAddress {
        self.desc.dma_address()
    }

    /// Descriptors in the ring.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The descriptor after `i`.
    fn next(&self, i: usize) -> usize {
        next(i, self.len())
    }

    /// Frees what the ring still holds, sent or not, and empties it; the
    /// device, `dev` (the ring's), no longer reads it.
    pub(crate) fn reset(&mut self, dev: &Device<Bound>) {
        for slot in self.slots.iter_mut() {
            if let Some(m) = slot.map.take() {
                // The transmit unit is stopped.
                m.unmap(&self.mapper, dev);
            }
            if let Some(skb) = slot.skb.take() {
                skb.drop_reason(DropReason::DevReady);
            }
        }
        self.next_to_use = 0;
        self.next_to_clean = 0;
        // Byte queue limits start over too (`Added::tx_reset`).
        self.unreported = (0, 0);
        self.hang = crate::hw::TxHangCheck::new();
    }

    /// Whether the ring is hung (see [`crate::hw::TxHangCheck`]): the
    /// watchdog's look, once the ring freed what the device sent, with
    /// STATUS as read now and a monotonic time in ms.
    pub(crate) fn hung(&mut self, status: u32, now_ms: u64) -> bool {
        let p = crate::hw::TxProgress {
            freed: self.freed,
            pending: self.next_to_clean != self.next_to_use,
        };
        self.hang.check(p, status, now_ms)
    }

    /// Keeps `frames` frames of `bytes` bytes, freed outside the queue's
    /// poll, for the poll to tell byte queue limits.
    pub(crate) fn defer_completions(&mut self, frames: u32, bytes: u32) {
        let (f, b) = self.unreported;
        self.unreported = (f.wrapping_add(frames), b.wrapping_add(bytes));
    }

    /// The completions kept by [`TxRing::defer_completions`], now told.
    pub(crate) fn take_unreported(&mut self) -> (u32, u32) {
        core::mem::take(&mut self.unreported)
    }

    /// The tail that gives the device every frame put on the ring.
    pub(crate) fn tail(&self) -> u32 {
        // CAST: below RING_MAX.
        self.next_to_use as u32
    }

    /// Free descriptors, keeping one unused (a full ring looks empty).
    pub(crate) fn unused(&self) -> usize {
        wrap(
            self.next_to_clean,
            self.len() - 1 - self.next_to_use,
            self.len(),
        )
    }

    /// Writes transmit descriptor `i`: `addr` in the first quadword, `cmd`
    /// (`cmd_type_len`) and `olinfo` (`olinfo_status`) in the low and high
    /// halves of the second. A context descriptor goes through here too:
    /// its four dwords are the halves of the two quadwords.
    fn write(desc: &Coherent<[Desc]>, i: usize, addr: u64, cmd: u32, olinfo: u32) -> Result {
        let q1 = (u64::from(olinfo) << 32) | u64::from(cmd);
        let desc = io_project!(desc, [try: i]);
        io_write!(desc, [build: 0], addr.to_le());
        io_write!(desc, [build: 1], q1.to_le());
        Ok(())
    }

    /// The write-back status of transmit descriptor `i` (the high half
    /// of its second quadword, where `olinfo_status` was).
    fn status(&self, i: usize) -> Result<u32> {
        // CAST: the high half.
        Ok((u64::from_le(io_read!(self.desc, [try: i][build: 1])) >> 32) as u32)
    }

    /// Unmaps descriptors `from` up to `to` (not included), which the
    /// device, `dev`, is done with: sent, or never handed over (the tail
    /// was not moved past them).
    fn unmap(&mut self, dev: &Device<Bound>, from: usize, to: usize) {
        let mut j = from;
        while j != to {
            if let Some(m) = self.slots.get_mut(j).and_then(|s| s.map.take()) {
                m.unmap(&self.mapper, dev);
            }
            j = self.next(j);
        }
    }

    /// Puts `skb` on the ring for `dev`: a context descriptor if the device
    /// is to fill in a checksum or segment the frame (TSO), then data
    /// descriptors, at most [`TXD_MAX_DATA`] bytes each.
    pub(crate) fn push(&mut self, dev: &Device<Bound>, mut skb: SkBuff) -> Result<Sent, TxError> {
        let csum = skb.csum_offload();
        let ctx = usize::from(csum.is_some());
        let pieces = skb.tx_pieces(TXD_MAX_DATA);
        // Before `prepare_tso` rewrites headers: a full ring hands the
        // frame back to the stack, to come again.
        if pieces + ctx > self.unused() {
            return Err(TxError::Full(skb));
        }
        let tso = match skb.prepare_tso() {
            Ok(tso) => tso,
            Err(e) => {
                skb.drop_reason(if e == ENOMEM {
                    DropReason::NoMem
                } else {
                    // Not TCP, or headers the device cannot repeat.
                    DropReason::SkbGsoSeg
                });
                return Err(TxError::Dropped);
            }
        };
        let len = skb.len();
        let first = self.next_to_use;
        let mut i = first;
        let mut olinfo = len << TXD_PAYLEN_SHIFT;
        let mut tse = 0;
        if let Some(c) = csum {
            let macip = (c.l3_offset << TXC_MACLEN_SHIFT) | (c.l4_offset - c.l3_offset);
            let mut tucmd = TXD_DTYP_CTXT | TXD_DCMD_DEXT;
            if c.ipv4 {
                tucmd |= TXC_TUCMD_IPV4;
            }
            if c.tcp {
                tucmd |= TXC_TUCMD_L4T_TCP;
            }
            olinfo |= TXD_POPTS_TXSM;
            let mut mss_l4len = 0;
            if let Some(t) = tso {
                mss_l4len =
                    ((t.hdr_len - c.l4_offset) << TXC_L4LEN_SHIFT) | (t.mss << TXC_MSS_SHIFT);
                // PAYLEN counts what the segments share out, not the
                // headers.
                olinfo = ((len - t.hdr_len) << TXD_PAYLEN_SHIFT) | TXD_POPTS_TXSM;
                if c.ipv4 {
                    olinfo |= TXD_POPTS_IXSM;
                }
                tse = TXD_DCMD_TSE;
            }
            if Self::write(&self.desc, i, macip.into(), tucmd, mss_l4len).is_err() {
                // A descriptor outside the ring: its state is off.
                skb.drop_reason(DropReason::DevReady);
                return Err(TxError::Dropped);
            }
            i = self.next(i);
        }
        let mut last = None;
        let mut left = pieces;
        let size = self.len();
        let (desc, slots, mapper) = (&self.desc, &mut self.slots, &self.mapper);
        let mapped = skb.map_for_tx(dev, mapper, |m| {
            let (mut addr, mut rest) = (m.addr(), m.len());
            if rest == 0 {
                // The device never saw it.
                m.unmap(mapper, dev);
                return Ok(());
            }
            // The mapping is undone with the piece's first descriptor.
            slots.get_mut(i).ok_or(EINVAL)?.map = Some(m);
            while rest > 0 {
                let n = rest.min(TXD_MAX_DATA);
                left = left.saturating_sub(1);
                let mut cmd = TXD_DTYP_DATA | TXD_DCMD_DEXT | TXD_DCMD_IFCS | tse | n;
                if left == 0 {
                    // The frame's last piece: report it sent.
                    cmd |= TXD_DCMD_EOP | TXD_DCMD_RS;
                }
                Self::write(desc, i, addr, cmd, olinfo)?;
                last = Some(i);
                i = next(i, size);
                addr += u64::from(n);
                rest -= n;
            }
            Ok(())
        });
        // Every piece went on the ring, the last with EOP.
        let done = mapped.and_then(|()| last.filter(|_| left == 0).ok_or(EINVAL));
        let last = match done {
            Ok(last) => last,
            Err(_) => {
                // Through `i`: a piece's mapping goes on its first slot
                // before its descriptors are written.
                let end = self.next(i);
                self.unmap(dev, first, end);
                skb.drop_reason(DropReason::NoMem);
                return Err(TxError::Dropped);
            }
        };
        let bytes = tso.map_or(len, |t| t.wire_len(len));
        let Some(slot) = self.slots.get_mut(first) else {
            // As for a descriptor outside the ring, above; the tail has
            // not moved, so the device saw none of it.
            self.unmap(dev, first, i);
            skb.drop_reason(DropReason::DevReady);
            return Err(TxError::Dropped);
        };
        slot.skb = Some(skb);
        slot.eop = last;
        slot.bytes = bytes;
        self.next_to_use = i;
        // The descriptors reach memory before the tail write hands them
        // over.
        dma_mb(Write);
        Ok(Sent {
            // CAST: below RING_MAX.
            tail: i as u32,
            bytes,
            segs: tso.map_or(1, |t| t.segs),
            tso_len: tso.map(|_| len),
        })
    }

    /// Frees the frames the device, `dev` (the ring's), sent, into the
    /// NAPI caches from the queue's poll `napi`, as any context frees them
    /// without; returns how many, and their bytes.
    pub(crate) fn clean<P: Poll>(
        &mut self,
        dev: &Device<Bound>,
        napi: Option<&NapiPoll<'_, P>>,
    ) -> (u32, u32) {
        let (mut n, mut bytes) = (0, 0u32);
        while self.next_to_clean != self.next_to_use {
            let first = self.next_to_clean;
            let Some(eop) = self
                .slots
                .get(first)
                .filter(|s| s.skb.is_some())
                .map(|s| s.eop)
            else {
                break;
            };
            match self.status(eop) {
                Ok(st) if st & TXD_STAT_DD != 0 => {}
                _ => break,
            }
            let (skb, sent) = self
                .slots
                .get_mut(first)
                .map_or((None, 0), |s| (s.skb.take(), s.bytes));
            self.unmap(dev, first, self.next(eop));
            if let Some(skb) = skb {
                bytes = bytes.wrapping_add(sent);
                match napi {
                    Some(napi) => skb.napi_consume(napi),
                    None => skb.consume(),
                }
            }
            self.next_to_clean = self.next(eop);
            n += 1;
        }
        self.freed = self.freed.wrapping_add(u64::from(n));
        (n, bytes)
    }
}
