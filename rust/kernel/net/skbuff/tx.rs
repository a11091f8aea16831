// SPDX-License-Identifier: GPL-2.0

//! What a driver does to a packet it sends: the checksum and segmentation
//! offloads the stack asks for (TSO), and mapping the packet for the
//! device to read.
//!
//! C headers: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h),
//! [`include/linux/dma-mapping.h`](srctree/include/linux/dma-mapping.h)

use super::SkBuff;
use crate::{
    device::{
        Bound,
        Device, //
    },
    dma::{
        DataDirection,
        DmaAddress, //
    },
    error::to_result,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{
            Atomic,
            Relaxed, //
        }, //
    }, //
};

/// A checksum the device is to fill in (`CHECKSUM_PARTIAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsumOffload {
    /// Where the IP header starts in the packet.
    pub l3_offset: u32,
    /// Where the TCP or UDP header starts.
    pub l4_offset: u32,
    /// IPv4 (else IPv6).
    pub ipv4: bool,
    /// TCP (else UDP).
    pub tcp: bool,
}

/// A TCP packet longer than the MTU that the device is to cut into
/// segments (TSO): what [`SkBuff::tso`] or [`SkBuff::prepare_tso`] found,
/// what any device's segmentation offload is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tso {
    /// The checksums every segment needs.
    pub csum: CsumOffload,
    /// The headers every segment repeats: up to the end of TCP's.
    pub hdr_len: u32,
    /// Payload bytes per segment, the last excepted (`gso_size`).
    pub mss: u32,
    /// The segments it makes (`gso_segs`).
    pub segs: u32,
}

impl Tso {
    /// The bytes the segments put on the wire: the packet's, plus the
    /// headers each segment after the first repeats.
    #[inline]
    pub fn wire_len(&self, len: u32) -> u32 {
        len.saturating_add(self.segs.saturating_sub(1).saturating_mul(self.hdr_len))
    }
}

/// Takes `len`, as a TCP pseudo-header counts it, out of the checksum seed
/// `seed` (the one's complement sum the stack left in the TCP header),
/// both in network order; the result keeps the representation
/// `csum_replace_by_diff()` gives.
fn csum_sub_len(seed: u16, len: u32) -> u16 {
    // Adding the complement subtracts: a 32-bit sum with the carry folded
    // back in, then folded to 16 bits and complemented.
    let (sum, carry) = len.overflowing_add(!u32::from(seed));
    let sum = sum + u32::from(carry);
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    // CAST: folded into 16 bits above.
    !(sum as u16)
}

/// The length of the headers of the TCP packet at the start of `head`
/// that each segment repeats: up to the end of the TCP header, which must
/// be in `head`.
fn tso_hdr_len(head: &[u8], c: &CsumOffload) -> Result<u32> {
    // CAST: offsets into the linear part, which is below 4 GiB.
    let (l3, l4) = (c.l3_offset as usize, c.l4_offset as usize);
    let doff = usize::from(head.get(l4 + 12).ok_or(EINVAL)? >> 4) * 4;
    let hdr_len = l4 + doff;
    if doff < 20 || hdr_len > head.len() || l4 < l3 {
        return Err(EINVAL);
    }
    // CAST: at most `head.len()`.
    Ok(hdr_len as u32)
}

/// Readies the headers of a TCP packet of `len` bytes at the start of
/// `head` for a device to segment: zeroes the IP length (and the IPv4
/// header checksum), which the device writes per segment, and takes the
/// TCP length out of the checksum seed, which the device adds per segment.
/// Returns the length of the headers.
fn tso_headers(head: &mut [u8], c: &CsumOffload, len: u32) -> Result<u32> {
    let hdr_len = tso_hdr_len(head, c)?;
    // CAST: as in `tso_hdr_len`.
    let (l3, l4) = (c.l3_offset as usize, c.l4_offset as usize);
    let zero = |head: &mut [u8], at: usize| -> Result {
        head.get_mut(at..at + 2).ok_or(EINVAL)?.fill(0);
        Ok(())
    };
    if c.ipv4 {
        // Total length, header checksum.
        zero(head, l3 + 2)?;
        zero(head, l3 + 10)?;
    } else {
        // Payload length.
        zero(head, l3 + 4)?;
    }
    let check = head.get_mut(l4 + 16..l4 + 18).ok_or(EINVAL)?;
    let seed = u16::from_be_bytes([check[0], check[1]]);
    // CAST: as above.
    let tcp_len = len.checked_sub(l4 as u32).ok_or(EINVAL)?;
    check.copy_from_slice(&csum_sub_len(seed, tcp_len).to_be_bytes());
    Ok(hdr_len)
}

/// How a [`TxMap`] was made, and so how it is undone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MapKind {
    /// `dma_map_single` of the linear part.
    Single,
    /// `dma_map_page` of a page frag.
    Page,
    /// A `net_iov` frag: its provider's mapping, nothing to undo.
    NetIov,
}

/// Maps packets for one device to read ([`SkBuff::map_for_tx`]) and undoes
/// those mappings ([`TxMap::unmap`]): a transmit ring's, made once with
/// it.
///
/// It holds a reference to its device, which names the device (its
/// address is not reused while the mapper lives) but does not keep it
/// bound: a mapper may outlive its driver's binding (hot removal), after
/// which the device's DMA setup (its IOMMU domain, its DMA ops) may be
/// gone, and an unmap would take another path than the map did, say
/// treat an IOVA as a physical address and free other mappings' bounce
/// buffers. So both mapping and unmapping take the device, bound, and
/// check that it is the mapper's.
///
/// # Invariants
///
/// `id` is this mapper's alone: no other mapper had or will have it.
pub struct TxMapper {
    dev: ARef<Device>,
    id: u64,
}

impl TxMapper {
    /// A mapper for `dev`.
    pub fn new(dev: &Device<Bound>) -> Self {
        /// The next mapper's `id`: a `u64` counted up once per mapper
        /// (one per transmit ring made) does not wrap.
        static NEXT_ID: Atomic<u64> = Atomic::new(0);
        // INVARIANT: each mapper takes a new value of the counter.
        Self {
            dev: dev.into(),
            id: NEXT_ID.fetch_add(1, Relaxed),
        }
    }
}

/// A part of a packet mapped for a device to read: the linear part or one
/// frag, for one transmit descriptor. [`TxMap::unmap`] undoes the mapping;
/// dropping it without leaks the mapping.
///
/// Unmapping while the device still reads the part is no undefined
/// behaviour on the CPU's side: the mapping is for the device to read
/// (`DMA_TO_DEVICE`), so nothing is written to the CPU's memory and no
/// bounce buffer is copied back. It is an information leak onto the wire,
/// though: the device reads whatever the address leads to by then (an
/// IOMMU fault, another mapping's reused bounce buffer, or, without an
/// IOMMU, the packet's memory freed and reused) and sends it. Drivers
/// unmap once the device reports the part sent, or its queue is stopped.
/// What must hold for soundness is that a mapping is undone once, for the
/// device it was made for, while that device is bound: the mapping names
/// the [`TxMapper`] that made it, which alone undoes it, [`TxMap::unmap`]
/// takes it by value, and takes the mapper's device, bound.
///
/// # Invariants
///
/// `addr` and `len` are a mapping of kind `kind` made by the mapper whose
/// `id` is `mapper`, for its device; for `MapKind::Single` and
/// `MapKind::Page`, one not yet undone.
#[derive(Debug)]
pub struct TxMap {
    addr: DmaAddress,
    len: u32,
    kind: MapKind,
    mapper: u64,
}

impl TxMap {
    /// The device's address of the part.
    pub fn addr(&self) -> DmaAddress {
        self.addr
    }

    /// Its length.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `mapper` made the mapping and `dev` is the mapper's device:
    /// what undoing it takes.
    fn undone_by(&self, mapper: &TxMapper, dev: &Device<Bound>) -> bool {
        mapper.id == self.mapper && mapper.dev.as_raw() == dev.as_raw()
    }

    /// Undoes the mapping, once the device no longer reads it. `mapper` is
    /// the mapper that made it and `dev` its device, bound; for another
    /// mapper or device, it warns and leaks the mapping instead.
    ///
    /// A mapping is undone once: unmapping it takes it.
    ///
    /// ```ignore,compile_fail,E0382
    /// use kernel::{
    ///     device::{
    ///         Bound,
    ///         Device, //
    ///     },
    ///     net::skbuff::{
    ///         TxMap,
    ///         TxMapper, //
    ///     },
    /// };
    ///
    /// fn twice(mapper: &TxMapper, dev: &Device<Bound>, m: TxMap) {
    ///     m.unmap(mapper, dev);
    ///     m.unmap(mapper, dev); // misuse
    /// }
    /// ```
    ///
    /// and only while the device is bound, not with the mapper's reference
    /// to it alone, which outlives an unbind:
    ///
    /// ```ignore,compile_fail,E0308
    /// use kernel::{
    ///     device::Device,
    ///     net::skbuff::{
    ///         TxMap,
    ///         TxMapper, //
    ///     },
    /// };
    /// # // twin: use kernel::device::Bound;
    ///
    /// fn after_unbind(mapper: &TxMapper, dev: &Device, m: TxMap) { // misuse
    /// # // twin: fn while_bound(mapper: &TxMapper, dev: &Device<Bound>, m: TxMap) {
    ///     m.unmap(mapper, dev);
    /// }
    /// ```
    pub fn unmap(self, mapper: &TxMapper, dev: &Device<Bound>) {
        if crate::warn_on!(!self.undone_by(mapper, dev)) {
            return;
        }
        let dev = dev.as_raw();
        let dir = DataDirection::ToDevice.into();
        // SAFETY: `mapper` made the mapping (its `id` is unique), for its
        // device, in this direction and length (type invariant), and that
        // device is `dev` (both checked above), bound while borrowed, so
        // with the DMA setup the mapping was made with; `self` is taken,
        // so the mapping is undone once.
        unsafe {
            match self.kind {
                MapKind::Single => {
                    bindings::dma_unmap_single_attrs(dev, self.addr, self.len as usize, dir, 0)
                }
                MapKind::Page => {
                    bindings::dma_unmap_page_attrs(dev, self.addr, self.len as usize, dir, 0)
                }
                MapKind::NetIov => (),
            }
        }
    }
}

impl SkBuff {
    /// The checksum the device is to fill in, if the stack left one
    /// (`CHECKSUM_PARTIAL`) in a TCP or UDP packet over IPv4 or IPv6.
    pub fn csum_offload(&self) -> Option<CsumOffload> {
        // SAFETY: the buffer is ours; read as `ip_summed` is read in C.
        let summed = unsafe {
            (*self.as_raw())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_ref()
                .ip_summed()
        };
        if u32::from(summed) != bindings::CHECKSUM_PARTIAL {
            return None;
        }
        // SAFETY: the buffer is valid.
        let (l3, l4) = unsafe {
            (
                bindings::skb_network_offset(self.as_raw()),
                bindings::skb_checksum_start_offset(self.as_raw()),
            )
        };
        let (l3, l4) = (u32::try_from(l3).ok()?, u32::try_from(l4).ok()?);
        // SAFETY: the headers of a packet to send are in its linear part.
        let head =
            unsafe { core::slice::from_raw_parts((*self.as_raw()).data, self.headlen() as usize) };
        let ipv4 = match head.get(l3 as usize)? >> 4 {
            4 => true,
            6 => false,
            _ => return None,
        };
        let proto = if ipv4 {
            head.get(l3 as usize + 9)?
        } else {
            head.get(l3 as usize + 6)?
        };
        let tcp = match proto {
            6 => true,
            17 => false,
            _ => return None,
        };
        Some(CsumOffload {
            l3_offset: l3,
            l4_offset: l4,
            ipv4,
            tcp,
        })
    }

    /// The segment size, segment count and checksum offsets of a TCP
    /// packet the stack handed over for the device to segment
    /// (`skb_is_gso`); `None` for one it is not to segment.
    fn gso_tcp(&self) -> Result<Option<(u32, u32, CsumOffload)>> {
        // SAFETY: the buffer is valid; its shared info follows its data.
        let (mss, segs, kind) = unsafe {
            let sh = &*bindings::skb_shinfo(self.as_raw());
            (sh.gso_size, sh.gso_segs, sh.gso_type)
        };
        if mss == 0 {
            return Ok(None);
        }
        // CAST: flags of `enum skb_gso_type`, in `gso_type`'s unsigned int.
        let tcp = (bindings::SKB_GSO_TCPV4 | bindings::SKB_GSO_TCPV6) as u32;
        if kind & tcp == 0 {
            return Err(EINVAL);
        }
        let csum = self.csum_offload().filter(|c| c.tcp).ok_or(EINVAL)?;
        Ok(Some((mss.into(), segs.into(), csum)))
    }

    /// If the stack handed over a TCP packet for the device to segment
    /// (`skb_is_gso`), says how to segment it, its headers left as the
    /// stack made them: for a device that rewrites each segment's lengths
    /// and checksums from the headers as they are. A device that wants
    /// them readied first uses [`SkBuff::prepare_tso`].
    ///
    /// Fails with `EINVAL` for a packet that is not TCP over IPv4 or IPv6
    /// with its headers in the linear part.
    pub fn tso(&self) -> Result<Option<Tso>> {
        let Some((mss, segs, csum)) = self.gso_tcp()? else {
            return Ok(None);
        };
        // SAFETY: the linear part is `headlen` bytes at `data`, which no
        // one writes while the packet is ours: whoever shares it through a
        // clone copies it before writing (`skb_cow_head`, `skb_unshare`).
        let head =
            unsafe { core::slice::from_raw_parts((*self.as_raw()).data, self.headlen() as usize) };
        let hdr_len = tso_hdr_len(head, &csum)?;
        Ok(Some(Tso {
            csum,
            hdr_len,
            mss,
            segs,
        }))
    }

    /// [`SkBuff::tso`], with the headers readied the way most devices
    /// that write each segment's lengths and add them into its checksums
    /// want them: the IP length fields and the IPv4 header checksum
    /// zeroed, and the TCP checksum seeded with the pseudo-header without
    /// the TCP length. That is the convention of `tcp_v6_gso_csum_prep()`
    /// and of its IPv4 counterpart, which drivers open-code (e1000, e1000e,
    /// igb, ixgbe, r8169, atl1c, alx, jme, vmxnet3 and others).
    ///
    /// Copies the headers first when they are shared (`skb_cow_head`),
    /// which fails with `ENOMEM`. Fails with `EINVAL` for a packet that is
    /// not TCP over IPv4 or IPv6 with its headers in the linear part,
    /// leaving the headers as they were.
    pub fn prepare_tso(&mut self) -> Result<Option<Tso>> {
        let Some((mss, segs, csum)) = self.gso_tcp()? else {
            return Ok(None);
        };
        // SAFETY: the buffer is valid and ours.
        to_result(unsafe { bindings::skb_cow_head(self.as_raw(), 0) })?;
        let len = self.len();
        // SAFETY: the linear part is `headlen` bytes at `data`, and, after
        // `skb_cow_head`, this packet's alone to write.
        let head = unsafe {
            core::slice::from_raw_parts_mut((*self.as_raw()).data, self.headlen() as usize)
        };
        let hdr_len = tso_headers(head, &csum, len)?;
        Ok(Some(Tso {
            csum,
            hdr_len,
            mss,
            segs,
        }))
    }

    /// How many pieces of at most `max` bytes the packet's linear part and
    /// frags make: the transmit descriptors it takes when each holds at
    /// most `max` bytes.
    pub fn tx_pieces(&self, max: u32) -> usize {
        let max = max.max(1);
        // CAST: u32 to usize is lossless on Linux.
        let pieces = |len: u32| len.div_ceil(max) as usize;
        // SAFETY: the buffer is valid; its shared info follows its data.
        let shinfo = unsafe { &*bindings::skb_shinfo(self.as_raw()) };
        let frags = shinfo.frags.iter().take(usize::from(shinfo.nr_frags));
        pieces(self.headlen()) + frags.map(|f| pieces(f.len)).sum::<usize>()
    }

    /// Maps the packet for `dev` to read with `mapper`, `dev`'s: the
    /// linear part (unless empty), then each frag; `net_iov` frags have
    /// their provider's addresses. Hands each part to `f` in order. Stops
    /// at the first error (of the mapping, or of `f`); the parts handed
    /// over are `f`'s to unmap ([`TxMap::unmap`], with `dev`). `EINVAL` if
    /// `mapper` is another device's.
    pub fn map_for_tx(
        &self,
        dev: &Device<Bound>,
        mapper: &TxMapper,
        mut f: impl FnMut(TxMap) -> Result,
    ) -> Result {
        if mapper.dev.as_raw() != dev.as_raw() {
            return Err(EINVAL);
        }
        let raw = self.as_raw();
        let dir = DataDirection::ToDevice.into();
        let headlen = self.headlen();
        if headlen > 0 {
            // SAFETY: the linear part is `headlen` bytes at `data`, kept
            // alive by the packet until the mapping is undone.
            let addr = unsafe {
                bindings::dma_map_single_attrs(
                    dev.as_raw(),
                    (*raw).data.cast(),
                    headlen as usize,
                    dir,
                    0,
                )
            };
            // SAFETY: checks the address just returned for `dev`.
            if unsafe { bindings::dma_mapping_error(dev.as_raw(), addr) } != 0 {
                return Err(ENOMEM);
            }
            // INVARIANT: mapped just now for `dev`, `mapper`'s device.
            f(TxMap {
                addr,
                len: headlen,
                kind: MapKind::Single,
                mapper: mapper.id,
            })?;
        }
        // SAFETY: the buffer is valid.
        let shinfo = unsafe { &*bindings::skb_shinfo(raw) };
        for frag in shinfo.frags.iter().take(usize::from(shinfo.nr_frags)) {
            let len = frag.len;
            // CAST: the tag bit of a `netmem_ref`.
            let net_iov = frag.netmem & (bindings::NET_IOV as bindings::netmem_ref) != 0;
            // SAFETY: a frag of this packet, kept alive by it; a page is
            // mapped, a `net_iov` gives its provider's address.
            let addr =
                unsafe { bindings::__skb_frag_dma_map(dev.as_raw(), frag, 0, len as usize, dir) };
            // SAFETY: as above.
            if !net_iov && unsafe { bindings::dma_mapping_error(dev.as_raw(), addr) } != 0 {
                return Err(ENOMEM);
            }
            // INVARIANT: as above, or the provider's mapping, which is
            // not undone.
            f(TxMap {
                addr,
                len,
                kind: if net_iov {
                    MapKind::NetIov
                } else {
                    MapKind::Page
                },
                mapper: mapper.id,
            })?;
        }
        Ok(())
    }
}

#[macros::kunit_tests(rust_kernel_skbuff)]
mod tests {
    use super::*;

    /// The seed the stack leaves in a TCP header for checksum offload: the
    /// folded sum of the IPv4 pseudo-header 192.0.2.1 > 192.0.2.2 with TCP
    /// length `len`.
    fn seed(len: u32) -> u16 {
        let words = [0xc000, 0x0201, 0xc000, 0x0202, 6, len >> 16, len & 0xffff];
        let mut sum: u32 = words.iter().sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        // CAST: folded into 16 bits.
        sum as u16
    }

    #[test]
    fn the_tcp_length_leaves_the_checksum_seed() {
        for len in [20, 1480, 40_000, 65_515, 70_000] {
            assert_eq!(csum_sub_len(seed(len), len), seed(0));
        }
    }

    /// An Ethernet, IPv4 and TCP header (32 bytes of it: options) of a
    /// packet of `len` bytes, as the stack hands it over for TSO.
    fn tcp4(len: u32) -> [u8; 66] {
        let mut h = [0u8; 66];
        h[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        h[14] = 0x45;
        // CAST: test values below 64 KiB.
        h[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        h[23] = 6;
        h[24..26].copy_from_slice(&0xabcdu16.to_be_bytes());
        h[34 + 12] = 8 << 4;
        h[34 + 16..34 + 18].copy_from_slice(&seed(len - 34).to_be_bytes());
        h
    }

    const CSUM4: CsumOffload = CsumOffload {
        l3_offset: 14,
        l4_offset: 34,
        ipv4: true,
        tcp: true,
    };

    #[test]
    fn tso_zeroes_the_ipv4_lengths_and_reseeds_tcp() -> Result {
        let mut h = tcp4(30_000);
        assert_eq!(tso_headers(&mut h, &CSUM4, 30_000)?, 66);
        assert_eq!(h[16..18], [0, 0]);
        assert_eq!(h[24..26], [0, 0]);
        assert_eq!(h[50..52], seed(0).to_be_bytes());
        // The rest is left alone.
        assert_eq!(h[14], 0x45);
        assert_eq!(h[46], 8 << 4);
        Ok(())
    }

    #[test]
    fn tso_header_length_leaves_the_headers_alone() -> Result {
        let h = tcp4(30_000);
        assert_eq!(tso_hdr_len(&h, &CSUM4)?, 66);
        assert_eq!(h, tcp4(30_000));
        assert_eq!(tso_hdr_len(&h[..65], &CSUM4), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn tso_zeroes_the_ipv6_payload_length() -> Result {
        let mut h = [0u8; 74];
        h[14] = 0x60;
        h[18..20].copy_from_slice(&1000u16.to_be_bytes());
        h[20] = 6;
        h[54 + 12] = 5 << 4;
        let c = CsumOffload {
            l3_offset: 14,
            l4_offset: 54,
            ipv4: false,
            tcp: true,
        };
        assert_eq!(tso_headers(&mut h, &c, 1074)?, 74);
        assert_eq!(h[18..20], [0, 0]);
        assert_eq!(h[20], 6);
        Ok(())
    }

    #[test]
    fn tso_refuses_headers_beyond_the_linear_part() {
        let mut h = tcp4(30_000);
        // The TCP header says 32 bytes; the linear part ends 2 short.
        assert_eq!(tso_headers(&mut h[..64], &CSUM4, 30_000), Err(EINVAL));
        let mut h = tcp4(30_000);
        h[46] = 4 << 4;
        assert_eq!(tso_headers(&mut h, &CSUM4, 30_000), Err(EINVAL));
        // Nothing was written on the way out.
        assert_eq!(h[16..18], 29_986u16.to_be_bytes());
    }

    #[test]
    fn mappers_of_one_device_are_told_apart() -> Result {
        let faux = crate::faux::Registration::new(c"rust-skbuff-test", None)?;
        let fdev: &crate::faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        // A ring made again for the same device does not undo the old
        // ring's mappings.
        let (a, b) = (TxMapper::new(dev), TxMapper::new(dev));
        assert_ne!(a.id, b.id);
        assert_eq!(a.dev.as_raw(), b.dev.as_raw());
        Ok(())
    }

    #[test]
    fn only_the_mappers_device_undoes_a_mapping() -> Result {
        let faux = crate::faux::Registration::new(c"rust-skbuff-test", None)?;
        let fdev: &crate::faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let other = crate::faux::Registration::new(c"rust-skbuff-test-other", None)?;
        let fother: &crate::faux::Device<Bound> = other.as_ref();
        let other_dev: &Device<Bound> = fother.as_ref();
        let (mapper, other_mapper) = (TxMapper::new(dev), TxMapper::new(other_dev));
        // INVARIANT: a `net_iov` part, whose mapping is its provider's and
        // never undone here: nothing is unmapped whoever undoes it.
        let m = TxMap {
            addr: 0,
            len: 0,
            kind: MapKind::NetIov,
            mapper: mapper.id,
        };
        assert!(m.undone_by(&mapper, dev));
        // Another bound device, with the mapper or its own: warns and
        // leaks, rather than unmap on a device the mapping is not of.
        assert!(!m.undone_by(&mapper, other_dev));
        assert!(!m.undone_by(&other_mapper, other_dev));
        assert!(!m.undone_by(&other_mapper, dev));
        m.unmap(&mapper, dev);
        Ok(())
    }

    #[test]
    fn wire_length_repeats_the_headers() {
        let t = Tso {
            csum: CSUM4,
            hdr_len: 66,
            mss: 1448,
            segs: 3,
        };
        assert_eq!(t.wire_len(66 + 3 * 1448), 3 * (66 + 1448));
    }
}
