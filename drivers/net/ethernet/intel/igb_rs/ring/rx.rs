// SPDX-License-Identifier: GPL-2.0

//! The receive ring: its buffers from the queue's page pools (and a header
//! pool with header split), its refill, and the poll that turns what the
//! device wrote into skbs, built where the frame is or with its headers
//! copied and its payload as frags.

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
        driver::{
            LockedDevice,
            QueueConfig, //
        },
        napi::{
            Added,
            NapiPool,
            NapiRx,
            Poll,
            PoolId,
            RxSkb, //
        },
        page_pool::{
            Params,
            Pool,
            PoolNetmem,
            Reusable, //
        },
        skbuff::{
            build_buf_size,
            DropReason,
            SkBuff,
            RX_HEADROOM,
            SHINFO_ROOM, //
        },
    },
    page::{
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::barrier::{
        dma_mb,
        Read, //
    },
};

/// Bytes the device writes at most to a header buffer, with header split
/// (SRRCTL.BSIZEHEADER).
pub(crate) const HDR_SIZE: u32 = 256;
/// Bytes per header buffer: the skb of a split frame is built around its
/// headers, [`RX_HEADROOM`] into the buffer, with its shared info after.
const HDR_BUF: u32 = build_buf_size(HDR_SIZE);
/// The largest receive buffer (SRRCTL takes up to 127 KiB; 16 KiB covers
/// the large `net_iov`s devmem asks for).
pub(crate) const MAX_RX_BUF: u32 = 16384;
/// A receive buffer of host memory: half a 4 KiB page.
const HOST_FRAG: u32 = 2048;
/// The ring of a payload pool with a memory provider holds as many buffers
/// as a devmem socket gives back in one call (`SO_DEVMEM_DONTNEED`, 1024
/// frags), if more than the descriptor ring: they are used again from
/// there, not released to the provider and allocated from it again.
const PROVIDER_POOL: u32 = 1024;
/// Without header split, at most this much of a frame is copied into the
/// skb: its headers, as the flow dissector finds them.
const COPY_MAX: usize = 256;
/// An Ethernet header.
const ETH_HLEN: usize = 14;

// A descriptor armed reads back, until the device writes it, as its
// header buffer's address, or 0, where its status would be (a poll may
// meet one it armed itself): the address must not look written back
// (DD, bit 0), so the room before a frame is even.
const _: () = assert!(RX_HEADROOM % 2 == 0);

/// Whether frames of up to `len` bytes fit a host buffer with the room
/// before them and the skb's shared info after them, to be built in place.
pub(crate) const fn fits_in_place(len: u32) -> bool {
    RX_HEADROOM + SHINFO_ROOM + len <= HOST_FRAG
}

/// The receive ring of one queue, with its buffers and page pools.
///
/// Descriptors `next_to_clean` up to `next_to_fill` (`armed` of them) are
/// the device's, each with its buffers in its slot.
pub(crate) struct RxRing {
    desc: Coherent<[Desc]>,
    /// A slot per descriptor: the buffers of the armed ones.
    slots: KVec<RxSlot>,
    /// Payload buffers: host pages, or the queue's memory provider's. The
    /// ring's own while it is filled from process context, then the
    /// queue's NAPI's ([`RxRing::attach_napi`]).
    pool: Option<Pool>,
    /// The payload pool as the queue's NAPI holds it, while the ring is
    /// the queue's: its poll alone allocates from it. A ring dropped
    /// meanwhile leaves the pool to the NAPI, which destroys it when
    /// removed.
    napi_pool: Option<PoolId>,
    /// Header buffers, with header split: always host pages.
    hdr_pool: Option<Pool>,
    /// Bytes per payload buffer.
    buf_size: u32,
    /// Payload buffers are halves of host pages, reused in place.
    frag: bool,
    /// Payload buffers come from a memory provider: the CPU may not be
    /// able to read them.
    unreadable: bool,
    /// Where in a payload buffer the device writes, when frames are built
    /// in place (host halves of pages, no header split, frames up to
    /// `max_frame` fit with the shared info); 0 otherwise.
    headroom: u32,
    /// The frame whose descriptors are being taken, when its last one
    /// (EOP) has not come yet.
    partial: Option<Partial>,
    next_to_clean: usize,
    next_to_fill: usize,
    armed: usize,
    /// The index of the device's receive queue the ring serves, which
    /// its frames record.
    queue: u16,
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // The queue's memory goes (stopped, or never started) with a frame
        // half taken; as in `rearm`. Before the pools it has buffers of.
        if let Some(Partial::Building(skb)) = self.partial.take() {
            skb.drop_reason(DropReason::DevReady);
        }
    }
}

/// A payload buffer.
enum RxBuf {
    /// A whole buffer of the pool: a page, or a provider's `net_iov`.
    Whole(PoolNetmem),
    /// Half a host page, the other half given to a frame before. The
    /// frame of this one has the half; the page is armed again with the
    /// other, if free, as the C igb flips its pages, or goes back to the
    /// pool when its halves do.
    Half(Reusable),
}

/// What a receive descriptor was armed with.
#[derive(Default)]
struct RxSlot {
    /// Its payload buffer, a whole one.
    buf: Option<PoolNetmem>,
    /// Or the page whose half is its payload buffer.
    page: Option<Reusable>,
    /// Its header buffer, with header split. A frame's later descriptors
    /// leave theirs unused, in place, for the next arming.
    hdr: Option<PoolNetmem>,
    /// The device's addresses of its packet (past the headroom) and header
    /// buffers (0 without header split), from the pools when it was armed,
    /// so that [`RxRing::rearm`] writes them again without the pools.
    addrs: (DmaAddress, DmaAddress),
}

/// A frame larger than a buffer, taken descriptor by descriptor.
enum Partial {
    /// Its skb so far: the first descriptor's headers and payload, then a
    /// frag per descriptor.
    Building(RxSkb),
    /// A descriptor of it could not be used: the rest are dropped with
    /// it, up to its last.
    Dropping(DropReason),
}

/// The first quadword of a receive write-back.
#[derive(Clone, Copy)]
struct RxInfo(u64);

impl RxInfo {
    /// The header length of a frame the device split (SPH, bit 31, with
    /// HDR_LEN in bits 30:21); `None` when the whole frame went to the
    /// packet buffer (no IP header, or headers longer than the header
    /// buffer, `hbo`).
    fn split_len(self, hbo: bool) -> Option<u32> {
        // CAST: a 10-bit field.
        (self.0 & (1 << 31) != 0 && !hbo).then_some(((self.0 >> 21) & 0x3ff) as u32)
    }

    /// The RSS hash, and whether it covers the ports as well as the
    /// addresses.
    fn rss_hash(self) -> Option<(u32, bool)> {
        // CAST: the high half of the quadword.
        let hash = (self.0 >> 32) as u32;
        // RSS type, bits 3:0: 1, 3, 6 TCP and 7 to 9 UDP, over addresses
        // and ports; 2, 4 and 5 over IPv4 or IPv6 addresses; 0 none.
        match self.0 & 0xf {
            1 | 3 | 6..=9 => Some((hash, true)),
            2 | 4 | 5 => Some((hash, false)),
            _ => None,
        }
    }

    /// Whether the device parsed a TCP header (packet type, bit 8).
    fn is_tcp(self) -> bool {
        self.0 & (1 << 8) != 0
    }

    /// The RSS hash, if the device hashed the frame as TCP.
    fn tcp_hash(self) -> Option<u32> {
        // RSS types 1 (TCP over IPv4) and 3 (TCP over IPv6), bits 3:0.
        // CAST: the high half of the quadword.
        matches!(self.0 & 0xf, 1 | 3).then_some((self.0 >> 32) as u32)
    }
}

/// Sees the headers of TCP frames with their RSS hash, for flow steering
/// to learn from.
pub(crate) type SynWatch<'a> = &'a dyn Fn(&[u8], u32);

/// What one receive poll did.
#[derive(Default)]
pub(crate) struct RxDone {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
    pub(crate) dropped: u64,
    /// Times a pool had no buffer to give, or a frame no skb.
    pub(crate) alloc_fail: u64,
    /// The pools gave no buffer for any descriptor: nothing will arrive
    /// (and interrupt) until memory comes back, so keep polling.
    pub(crate) starved: bool,
}

impl RxDone {
    /// Counts a frame dropped for `why`; its skb, if it had one, was freed
    /// for it already. Out of memory for the skb is an allocation failure
    /// too.
    fn count_drop(&mut self, why: DropReason) {
        self.dropped += 1;
        if why == DropReason::NoMem {
            self.alloc_fail += 1;
        }
    }
}

/// Frees `skb` as dropped for `why` (`kfree_skb_reason`) and gives `why`
/// back, for the frame's count.
fn drop_skb(skb: RxSkb, why: DropReason) -> DropReason {
    skb.drop_reason(why);
    why
}

/// The buffer size of a queue configuration, and its page order; `None`
/// when the device cannot use it.
pub(crate) fn rx_buf_size(cfg: &QueueConfig) -> Option<(u32, u32)> {
    // CAST: a page fits a u32.
    let size = match cfg.rx_page_size {
        0 => PAGE_SIZE as u32,
        s => s,
    };
    // CAST: PAGE_SHIFT is small.
    let shift = PAGE_SHIFT as u32;
    (size.is_power_of_two() && size >> shift != 0 && size <= MAX_RX_BUF)
        .then(|| (size, size.ilog2() - shift))
}

impl RxRing {
    /// A ring of `n` descriptors (as [`ring_size`] gives) for receive
    /// queue `idx` of `netdev` with buffers as `cfg` says, header buffers
    /// too with `split`, every descriptor but one armed (a full ring looks
    /// empty to the device). The device takes frames up to `max_frame`
    /// bytes (RLPML) while the ring is in use.
    ///
    /// The payload pool names no NAPI instance yet: a ring whose making
    /// fails is dropped while the queue's NAPI still polls the old ring.
    /// [`RxRing::attach_napi`] hands the pool to the NAPI once the ring is
    /// the queue's. The device's instance lock is held: the pool takes the
    /// queue's memory provider.
    pub(crate) fn new<D>(
        dev: &Device<Bound>,
        netdev: &LockedDevice<D>,
        idx: u32,
        split: bool,
        cfg: &QueueConfig,
        (n, max_frame): (u32, u32),
    ) -> Result<Self> {
        let (mut buf_size, order) = rx_buf_size(cfg).ok_or(EINVAL)?;
        let queue = u16::try_from(idx)?;
        // CAST: u32 to usize is lossless on Linux.
        let size = n as usize;
        let params = Params::new(dev, order, n)
            .provider_pool_size(PROVIDER_POOL)
            .rx_queue_locked(netdev, idx);
        let mut pool = Pool::new(&params)?;
        if pool.is_unreadable() && !split {
            // Whole frames in device memory: nothing could read them. The
            // core allows a provider only with header split.
            return Err(EINVAL);
        }
        // Host pages are shared by two frames, as the C igb does: a frame
        // fits 2 KiB, and half the memory per frame lets TCP open a window
        // twice as wide for the same socket buffer. A page stays in the
        // ring while its halves come back in time (`RxRing::take`). A
        // provider's buffers are used whole, at the size it asked for.
        let unreadable = pool.is_unreadable();
        let frag = !unreadable && buf_size == HOST_FRAG * 2;
        if frag {
            buf_size = HOST_FRAG;
        }
        let headroom = if frag && !split && fits_in_place(max_frame) {
            RX_HEADROOM
        } else {
            0
        };
        let hdr_pool = if split {
            // CAST: 6 header buffers a 4 KiB page.
            let per_page = (PAGE_SIZE as u32 / HDR_BUF).max(1);
            Some(Pool::new(&Params::new(dev, 0, 2 * n / per_page))?)
        } else {
            None
        };
        let mut slots = KVec::with_capacity(size, GFP_KERNEL)?;
        for _ in 0..size {
            slots.push(RxSlot::default(), GFP_KERNEL)?;
        }
        let mut ring = Self {
            desc: Coherent::zeroed_slice(dev, size, GFP_KERNEL)?,
            slots,
            pool: None,
            napi_pool: None,
            hdr_pool,
            buf_size,
            frag,
            unreadable,
            headroom,
            partial: None,
            next_to_clean: 0,
            next_to_fill: 0,
            armed: 0,
            queue,
        };
        ring.refill(NapiPool::from(&mut pool))?;
        ring.pool = Some(pool);
        Ok(ring)
    }

    pub(crate) fn dma_address(&self) -> DmaAddress {
        self.desc.dma_address()
    }

    /// Descriptors in the ring.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Hands the payload pool to `napi`, the queue's, disabled, which
    /// polls this ring from now on: its poll alone allocates from the
    /// pool, and buffers freed in its context go straight back to the
    /// pool's cache. Sleeps.
    pub(crate) fn attach_napi<P: Poll>(
        &mut self,
        napi: &Added<P>,
        dev: &LockedDevice<P::Data>,
    ) -> Result {
        let Some(pool) = self.pool.take() else {
            // The NAPI has it already.
            return Ok(());
        };
        match napi.attach_pool(dev, pool) {
            Ok(id) => {
                self.napi_pool = Some(id);
                Ok(())
            }
            Err((e, pool)) => {
                self.pool = Some(pool);
                Err(e)
            }
        }
    }

    /// Takes the payload pool back from the queue's NAPI, disabled, so
    /// that the ring may be dropped once the NAPI runs again (after a
    /// queue restart). Sleeps.
    pub(crate) fn detach_napi<P: Poll>(
        &mut self,
        napi: &Added<P>,
        dev: &LockedDevice<P::Data>,
    ) -> Result {
        let Some(id) = self.napi_pool else {
            return Ok(());
        };
        self.pool = Some(napi.detach_pool(dev, id)?);
        self.napi_pool = None;
        Ok(())
    }

    /// Bytes per payload buffer.
    pub(crate) fn buf_size(&self) -> u32 {
        self.buf_size
    }

    /// Whether the device splits headers into header buffers.
    pub(crate) fn split(&self) -> bool {
        self.hdr_pool.is_some()
    }

    /// Writes descriptor `i`, armed, with the addresses of its buffers.
    fn write_desc(&self, i: usize) -> Result {
        let slot = self.slots.get(i).ok_or(EINVAL)?;
        if slot.buf.is_none() && slot.page.is_none() {
            return Err(EINVAL);
        }
        let (pkt, hdr) = slot.addrs;
        // Read format: packet buffer address, then header buffer address.
        let desc = io_project!(self.desc, [try: i]);
        io_write!(desc, [build: 0], pkt.to_le());
        io_write!(desc, [build: 1], hdr.to_le());
        Ok(())
    }

    /// Arms descriptor `i`, the next to fill, with `buf`, where the device
    /// writes at `pkt` (past the headroom), and with header split a header
    /// buffer: the one a frame's later descriptor left in the slot, or a
    /// new one. Returns false when the header pool has none: the
    /// descriptor stays free and `buf` goes back to its pool.
    #[inline(always)]
    fn arm(&mut self, i: usize, buf: RxBuf, pkt: DmaAddress) -> Result<bool> {
        let slot = self.slots.get_mut(i).ok_or(EINVAL)?;
        let hdr = match &mut self.hdr_pool {
            Some(p) => {
                let Some(h) = slot.hdr.take().or_else(|| p.alloc_frag(HDR_BUF)) else {
                    return Ok(false);
                };
                let addr = h.dma_addr(p).ok_or(EINVAL)? + DmaAddress::from(RX_HEADROOM);
                slot.hdr = Some(h);
                addr
            }
            None => 0,
        };
        slot.addrs = (pkt, hdr);
        match buf {
            RxBuf::Whole(buf) => slot.buf = Some(buf),
            RxBuf::Half(page) => slot.page = Some(page),
        }
        // Read format: packet buffer address, then header buffer address:
        // as `write_desc`, with the slot at hand.
        let desc = io_project!(self.desc, [try: i]);
        io_write!(desc, [build: 0], pkt.to_le());
        io_write!(desc, [build: 1], hdr.to_le());
        self.next_to_fill = next(i, self.slots.len());
        self.armed += 1;
        Ok(true)
    }

    /// Arms the next descriptor to fill with `page`, the other half of a
    /// page just taken, where the device writes at `pkt`: [`RxRing::arm`]
    /// without header split, with no header buffer to find. A ring of host
    /// halves arms one per frame it takes: it has nothing to check that it
    /// need not.
    #[inline(always)]
    fn arm_half(&mut self, page: Reusable, pkt: DmaAddress) -> Result {
        let i = self.next_to_fill;
        let slot = self.slots.get_mut(i).ok_or(EINVAL)?;
        let desc = io_project!(self.desc, [try: i]);
        slot.addrs = (pkt, 0);
        slot.page = Some(page);
        io_write!(desc, [build: 0], pkt.to_le());
        io_write!(desc, [build: 1], 0);
        self.next_to_fill = next(i, self.slots.len());
        self.armed += 1;
        Ok(())
    }

    /// Arms free descriptors with new buffers while the pools (`pool` for
    /// payloads) have them. Returns whether a pool failed to give a
    /// buffer.
    fn refill(&mut self, mut pool: NapiPool<'_>) -> Result<bool> {
        // A full ring looks empty to the device: one stays free.
        let last = self.len() - 1;
        // Every pool here maps its buffers, and the buffers are `pool`'s.
        let short = loop {
            if self.armed == last {
                break false;
            }
            let (buf, addr) = if self.frag {
                let Some(page) = pool.alloc_reusable() else {
                    break true;
                };
                let addr = page.dma_addr(&pool).ok_or(EINVAL)?;
                (RxBuf::Half(page), addr)
            } else {
                let Some(buf) = pool.alloc() else {
                    break true;
                };
                let addr = buf.dma_addr(&pool).ok_or(EINVAL)?;
                (RxBuf::Whole(buf), addr)
            };
            let pkt = addr + DmaAddress::from(self.headroom);
            if !self.arm(self.next_to_fill, buf, pkt)? {
                break true;
            }
        };
        Ok(short)
    }

    /// Takes the payload buffer of descriptor `i`, the next to clean, which
    /// the device wrote back: counts it out of the ring. Half a page is
    /// taken off its page, which arms the next descriptor to fill with its
    /// other half when that is free (`pool`, the payload pool, syncs it
    /// for the device); the descriptor taken is free then, so one is.
    #[inline(always)]
    fn take(&mut self, i: usize, pool: Option<&Pool>) -> Option<PoolNetmem> {
        self.next_to_clean = next(i, self.len());
        self.armed -= 1;
        let slot = self.slots.get_mut(i)?;
        let Some(page) = slot.page.take() else {
            return slot.buf.take();
        };
        // Without its pool, the ring's state is off: the page goes back,
        // and the frame is dropped.
        let (half, page) = page.give(pool?);
        if let Some(page) = page {
            // The other half of the page the descriptor had: its address
            // in the same mapping, past the same headroom, from the one
            // the slot kept.
            let pkt = slot
                .addrs
                .0
                .wrapping_sub(half.offset().into())
                .wrapping_add(page.offset().into());
            // A failure (no header buffer) leaves the descriptor to the
            // next refill, and the page to the pool.
            let _ = match self.hdr_pool {
                None => self.arm_half(page, pkt),
                Some(_) => self
                    .arm(self.next_to_fill, RxBuf::Half(page), pkt)
                    .map(|_| ()),
            };
        }
        Some(half)
    }

    /// Rewrites every armed descriptor (the device may have written some
    /// back before the queue stopped: those frames are lost, and so is a
    /// frame half taken) and returns the head and tail to program.
    pub(crate) fn rearm(&mut self) -> Result<(u32, u32)> {
        if let Some(Partial::Building(skb)) = self.partial.take() {
            // The queue stopped under it.
            skb.drop_reason(DropReason::DevReady);
        }
        for k in 0..self.armed {
            self.write_desc(wrap(self.next_to_clean, k, self.len()))?;
        }
        // CAST: below RING_MAX.
        Ok((self.next_to_clean as u32, self.next_to_fill as u32))
    }

    /// The second quadword of a write-back: status and errors (bits 31:0),
    /// length (47:32), VLAN (63:48).
    fn status(&self, i: usize) -> Result<u64> {
        Ok(u64::from_le(io_read!(self.desc, [try: i][build: 1])))
    }

    /// The first quadword of a write-back: packet info, header length and
    /// RSS hash.
    fn info(&self, i: usize) -> Result<RxInfo> {
        Ok(RxInfo(u64::from_le(
            io_read!(self.desc, [try: i][build: 0]),
        )))
    }

    /// Builds the skb of a split frame: `hlen` bytes of headers in `hdr`,
    /// `len` bytes of payload in `buf`, from the payload pool `pool`. On
    /// error, the frame is dropped for the reason returned, its skb freed
    /// if it had one.
    fn build_split<P: Poll>(
        &self,
        napi: &NapiRx<'_, P>,
        pool: &Pool,
        (hdr, hlen): (PoolNetmem, u32),
        (buf, len): (PoolNetmem, u32),
        watch: Option<(SynWatch<'_>, u32)>,
    ) -> Result<RxSkb, DropReason> {
        if (hlen as usize) < ETH_HLEN || hlen > HDR_SIZE || len > self.buf_size {
            return Err(DropReason::DevHdr);
        }
        // Header buffers are host pages, which the CPU can always read; a
        // header buffer comes with the header pool. The device wrote the
        // headers `RX_HEADROOM` bytes into it: the skb is built around
        // them, where they are.
        let hdr_pool = self.hdr_pool.as_ref().ok_or(DropReason::DevReady)?;
        let synced = hdr.sync_for_cpu(hdr_pool, RX_HEADROOM, hlen);
        if let Some((f, hash)) = watch {
            // CAST: at most HDR_SIZE, checked above.
            let head = &mut [0; HDR_SIZE as usize][..hlen as usize];
            synced.copy_to(head).map_err(|_| DropReason::HdrTrunc)?;
            f(head, hash);
        }
        let mut skb = napi
            .build_skb(hdr, RX_HEADROOM, hlen)
            .map_err(|_| DropReason::NoMem)?;
        if len > 0 {
            buf.sync_for_cpu(pool, 0, len);
            // A new skb has its frag slots free, and `len` fits the buffer:
            // a failure would be the device's length.
            if skb.add_rx_frag(buf, 0, len).is_err() {
                return Err(drop_skb(skb, DropReason::DevHdr));
            }
        }
        Ok(skb)
    }

    /// Builds the skb of a whole frame of `len` bytes in `buf`: its headers
    /// copied, the rest left in the buffer as a frag. Errors as in
    /// `build_split`.
    fn build_whole<P: Poll>(
        &self,
        napi: &NapiRx<'_, P>,
        pool: &Pool,
        (buf, len): (PoolNetmem, u32),
        watch: Option<(SynWatch<'_>, u32)>,
    ) -> Result<RxSkb, DropReason> {
        if (len as usize) < ETH_HLEN || len > self.buf_size {
            return Err(DropReason::DevHdr);
        }
        // What may be headers: the flow dissector looks no further.
        // CAST: u32 to usize is lossless on Linux.
        let head = &mut [0; COPY_MAX][..(len as usize).min(COPY_MAX)];
        // Fails for provider memory, which needs header split: a frame the
        // device did not split (no IP header, or headers longer than a
        // header buffer) has its headers where the stack cannot read them.
        buf.sync_for_cpu(pool, 0, len)
            .copy_to(head)
            .map_err(|_| DropReason::HdrTrunc)?;
        let head = &*head;
        if let Some((f, hash)) = watch {
            f(head, hash);
        }
        let hlen = (SkBuff::eth_headlen(napi.dev(), head) as usize).clamp(ETH_HLEN, head.len());
        // CAST: at most COPY_MAX.
        let mut skb = napi.alloc_skb(hlen as u32).ok_or(DropReason::NoMem)?;
        if skb.put_data(&head[..hlen]).is_err() {
            return Err(drop_skb(skb, DropReason::NoMem));
        }
        // CAST: at most COPY_MAX.
        let hlen = hlen as u32;
        // As in `build_split`.
        if len > hlen && skb.add_rx_frag(buf, hlen, len - hlen).is_err() {
            return Err(drop_skb(skb, DropReason::DevHdr));
        }
        Ok(skb)
    }

    /// Builds the skb of a frame of `len` bytes that the device wrote
    /// `headroom` bytes into `buf`, around it. Inline: the frames of
    /// [`RxRing::poll_in_place`], the common case, are built here.
    #[inline(always)]
    fn build_in_place<P: Poll>(
        &self,
        napi: &NapiRx<'_, P>,
        pool: &Pool,
        (buf, len): (PoolNetmem, u32),
        watch: Option<(SynWatch<'_>, u32)>,
    ) -> Result<RxSkb, DropReason> {
        if (len as usize) < ETH_HLEN || !fits_in_place(len) {
            // RLPML keeps longer frames out.
            return Err(DropReason::DevHdr);
        }
        let synced = buf.sync_for_cpu(pool, self.headroom, len);
        if let Some((f, hash)) = watch {
            // As in `build_whole`; the buffer is host memory, readable.
            // CAST: u32 to usize is lossless on Linux.
            let head = &mut [0; COPY_MAX][..(len as usize).min(COPY_MAX)];
            synced.copy_to(head).map_err(|_| DropReason::HdrTrunc)?;
            f(head, hash);
        }
        napi.build_skb(buf, self.headroom, len)
            .map_err(|_| DropReason::NoMem)
    }

    /// Adds the `len` bytes in `buf`, a later descriptor's of a frame
    /// larger than a buffer, to its skb. `pool` is the payload pool. On
    /// error, the skb was freed for the reason returned.
    fn append(
        &self,
        mut skb: RxSkb,
        pool: Option<&Pool>,
        buf: Option<PoolNetmem>,
        len: u32,
    ) -> Result<RxSkb, DropReason> {
        let (Some(pool), Some(buf)) = (pool, buf) else {
            // An armed descriptor without its buffer, or a ring without
            // its pool: the ring's own state is off.
            return Err(drop_skb(skb, DropReason::DevReady));
        };
        if len > self.buf_size {
            return Err(drop_skb(skb, DropReason::DevHdr));
        }
        if len > 0 {
            buf.sync_for_cpu(pool, 0, len);
            if skb.add_rx_frag(buf, 0, len).is_err() {
                // More descriptors than an skb has frags.
                return Err(drop_skb(skb, DropReason::PktTooBig));
            }
        }
        Ok(skb)
    }

    /// Takes up to `budget` descriptors off the ring, making the frames
    /// that end in them skbs for `napi`, then arms the free descriptors
    /// again. A frame larger than a buffer spans several descriptors: the
    /// first has its headers (and, split, a header buffer), every one a
    /// share of the payload, the last (EOP) the status of the whole frame.
    /// Shows `watch` the headers of TCP frames. Returns what it did and
    /// the new tail, if it armed descriptors.
    pub(crate) fn poll<P: Poll>(
        &mut self,
        napi: &mut NapiRx<'_, P>,
        budget: i32,
        watch: Option<SynWatch<'_>>,
    ) -> (RxDone, Option<u32>) {
        let mut done = RxDone::default();
        let mut n = 0;
        // Descriptors are armed again as they are taken (pages reused in
        // place) and by the refill at the end: the tail moves if either
        // armed one.
        let armed = self.armed;
        // The payload pool, the ring's or the NAPI's: its buffers are
        // synced with it.
        let mut own = self.pool.take();
        let pool = match (&own, self.napi_pool) {
            (Some(p), _) => Some(p),
            (None, Some(id)) => napi.pool_ref(id),
            (None, None) => None,
        };
        // Frames built in place, one descriptor each, the common case
        // without header split, have a loop of their own; the general one
        // below takes the rest, from the first descriptor that is not one.
        if self.headroom != 0 && self.partial.is_none() && watch.is_none() {
            if let Some(pool) = pool {
                n = self.poll_in_place(napi, pool, budget, &mut done);
            }
        }
        while n < budget && self.armed > 0 {
            let i = self.next_to_clean;
            let Ok(st) = self.status(i) else { break };
            if st & RXD_STAT_DD == 0 {
                break;
            }
            // Read the rest of the descriptor and the buffers after DD.
            dma_mb(Read);
            let Ok(info) = self.info(i) else { break };
            let buf = self.take(i, pool);
            n += 1;
            // CAST: a 16-bit field.
            let len = ((st >> 32) & 0xffff) as u32;
            let built = match self.partial.take() {
                None => {
                    // A frame's first descriptor: its header buffer too.
                    let hdr = match self.hdr_pool {
                        Some(_) => self.slots.get_mut(i).and_then(|s| s.hdr.take()),
                        None => None,
                    };
                    self.build_first(napi, pool, (buf, hdr, len), info, st, watch)
                }
                Some(Partial::Building(skb)) => self.append(skb, pool, buf, len),
                Some(Partial::Dropping(why)) => Err(why),
            };
            if st & RXD_STAT_EOP == 0 {
                self.partial = Some(match built {
                    Ok(skb) => Partial::Building(skb),
                    Err(why) => Partial::Dropping(why),
                });
                continue;
            }
            match built {
                Ok(skb) => self.deliver(napi, skb, st, info, &mut done),
                // Its skb, if it had one, is freed for `why` already.
                Err(why) => done.count_drop(why),
            }
        }
        let filled = match (self.napi_pool, &mut own) {
            (_, Some(pool)) => self.refill(NapiPool::from(pool)),
            (Some(id), None) => napi.pool(id).map_or(Ok(true), |p| self.refill(p)),
            (None, None) => Ok(true),
        };
        self.pool = own;
        let short = filled.unwrap_or(false);
        done.alloc_fail += u64::from(short);
        done.starved = self.armed == 0;
        // Each descriptor taken was armed (`n` of them), each armed since
        // is counted in `self.armed`: the difference is what was armed.
        // CAST: n is between 0 and the budget.
        let rearmed = self.armed + n as usize > armed;
        // CAST: below RING_MAX.
        (done, rearmed.then_some(self.next_to_fill as u32))
    }

    /// Takes the frames built in place (host halves without header split,
    /// a frame to a descriptor: [`RxRing::build_in_place`]), up to
    /// `budget` descriptors, for `napi`, counting them in `done`; `pool`
    /// is the payload pool. Stops at the first descriptor that is not a
    /// whole frame, leaving it to [`RxRing::poll`]'s general loop. Returns
    /// the descriptors it took.
    #[inline(always)]
    fn poll_in_place<P: Poll>(
        &mut self,
        napi: &NapiRx<'_, P>,
        pool: &Pool,
        budget: i32,
        done: &mut RxDone,
    ) -> i32 {
        const WHOLE: u64 = RXD_STAT_DD | RXD_STAT_EOP;
        let mut n = 0;
        while n < budget && self.armed > 0 {
            let i = self.next_to_clean;
            let Ok(st) = self.status(i) else { break };
            if st & WHOLE != WHOLE {
                // Not written back yet, or the first part of a frame
                // longer than a buffer (which RLPML keeps out).
                break;
            }
            // Read the rest of the descriptor and the buffer after DD.
            dma_mb(Read);
            let Ok(info) = self.info(i) else { break };
            let buf = self.take(i, Some(pool));
            n += 1;
            let Some(buf) = buf else {
                // An armed descriptor without its buffer: the ring's own
                // state is off.
                done.count_drop(DropReason::DevReady);
                continue;
            };
            // CAST: a 16-bit field.
            let len = ((st >> 32) & 0xffff) as u32;
            match self.build_in_place(napi, pool, (buf, len), None) {
                Ok(skb) => self.deliver(napi, skb, st, info, done),
                Err(why) => done.count_drop(why),
            }
        }
        n
    }

    /// Hands `skb`, a frame whose last descriptor has status `st` and
    /// write-back `info`, to the stack (GRO), or drops it if the device
    /// found it bad; counts it in `done`.
    #[inline(always)]
    fn deliver<P: Poll>(
        &self,
        napi: &NapiRx<'_, P>,
        mut skb: RxSkb,
        st: u64,
        info: RxInfo,
        done: &mut RxDone,
    ) {
        // CRC, symbol, sequence, length or RX data errors.
        if st & RXD_ERR_MASK != 0 {
            done.count_drop(drop_skb(skb, DropReason::DevHdr));
            return;
        }
        // Only TCP reads payloads in device memory (the stack would
        // checksum anything else, and cannot): a queue's provider gets
        // frames other than the steered flows' when it is bound to the
        // queue non-TCP traffic goes to. The last descriptor has the
        // packet type.
        if self.unreadable && !info.is_tcp() && !skb.frags_readable() {
            done.count_drop(drop_skb(skb, DropReason::UnhandledProto));
            return;
        }
        if st & RXD_STAT_L4CS != 0 && st & RXD_ERR_CSUM == 0 {
            skb.set_csum_unnecessary();
        }
        match info.rss_hash() {
            Some((hash, true)) => skb.set_l4_hash(hash),
            Some((hash, false)) => skb.set_l3_hash(hash),
            None => {}
        }
        let bytes = u64::from(skb.len());
        // Every skb built here has the Ethernet header in its linear part:
        // a failure would be this file's bug.
        if skb.eth_type_trans(napi.dev()).is_err() {
            done.count_drop(drop_skb(skb, DropReason::DevHdr));
            return;
        }
        // The ring is one of the device's queues in use: the record fails
        // only if it is not, and the frame goes up without one then.
        let _ = napi.record_rx_queue(&mut skb, self.queue);
        done.packets += 1;
        done.bytes += bytes;
        napi.gro_receive(skb);
    }

    /// Starts the skb of a frame from its first descriptor, with status
    /// `st` and write-back `info`: payload buffer, header buffer (with
    /// header split) and the payload length in the descriptor. `pool` is
    /// the payload pool.
    fn build_first<P: Poll>(
        &self,
        napi: &NapiRx<'_, P>,
        pool: Option<&Pool>,
        (buf, hdr, len): (Option<PoolNetmem>, Option<PoolNetmem>, u32),
        info: RxInfo,
        st: u64,
        watch: Option<SynWatch<'_>>,
    ) -> Result<RxSkb, DropReason> {
        let hlen = if self.split() {
            info.split_len(st & RXD_STAT_HBO != 0)
        } else {
            None
        };
        let watch = watch.and_then(|f| Some((f, info.tcp_hash()?)));
        // As in `append`.
        let pool = pool.ok_or(DropReason::DevReady)?;
        if self.headroom != 0 {
            // Frames up to RLPML fit one buffer: a first descriptor is the
            // last.
            return match buf {
                Some(buf) if st & RXD_STAT_EOP != 0 => {
                    self.build_in_place(napi, pool, (buf, len), watch)
                }
                Some(_) => Err(DropReason::DevHdr),
                // As in `append`.
                None => Err(DropReason::DevReady),
            };
        }
        match (buf, hdr, hlen) {
            (Some(buf), Some(hdr), Some(hlen)) => {
                self.build_split(napi, pool, (hdr, hlen), (buf, len), watch)
            }
            // Not split: the whole frame, or its first part, is in the
            // packet buffer.
            (Some(buf), _, _) => self.build_whole(napi, pool, (buf, len), watch),
            // As in `append`.
            _ => Err(DropReason::DevReady),
        }
    }
}
