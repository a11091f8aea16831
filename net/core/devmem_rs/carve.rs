// SPDX-License-Identifier: GPL-2.0

//! How a binding carves its mapped dma-buf into `net_iov`s.
//!
//! The DMA segments of the mapped scatterlist are taken in order; each
//! becomes a chunk of `len >> niov_shift` `net_iov`s. The `net_iov`s of the
//! whole binding are numbered `0..n` across the chunks in that order, which
//! is also the order of their offsets in the dma-buf. Hence:
//!
//! - `net_iov` number `i` starts at dma-buf offset `i << niov_shift`: the
//!   "virtual address" user space sees in `SCM_DEVMEM_DMABUF`, and the key
//!   the TX path looks a `net_iov` up by, with no separate table;
//! - the index is what [`super::freelist::FreeList`] hands out.
//!
//! Every segment must start and end on a `net_iov` boundary; the C core
//! makes the same check with the same message.

use kernel::{
    alloc::{
        Flags,
        KVec, //
    },
    dma::DmaAddress,
    fmt,
    prelude::*,
};

/// The `net_iov`s carved from one DMA segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Offset of the segment in the dma-buf.
    pub base_virtual: usize,
    /// DMA address of the segment.
    pub base_dma: DmaAddress,
    /// Binding-wide number of the chunk's first `net_iov`.
    pub first: u32,
    /// Number of `net_iov`s in the chunk.
    pub count: u32,
}

/// Why a scatterlist cannot be carved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CarveError {
    /// A segment does not start or end on a `net_iov` boundary.
    Misaligned {
        /// DMA address of the segment.
        addr: DmaAddress,
        /// DMA length of the segment.
        len: usize,
        /// The `net_iov` size it must be aligned to.
        niov_size: usize,
    },
    /// More `net_iov`s than a binding can number.
    TooLarge,
    /// Out of memory for the chunk table.
    NoMemory,
}

impl fmt::Display for CarveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Misaligned {
                addr,
                len,
                niov_size,
            } => {
                // `%pad` style: 0x and every hex digit of a dma_addr_t.
                let w = 2 + 2 * core::mem::size_of::<DmaAddress>();
                let (a, l, n) = (addr, len, niov_size);
                write!(
                    f,
                    "dmabuf sg entry (addr={a:#0w$x}, len={l}) not aligned to niov size {n}"
                )
            }
            Self::TooLarge => f.write_str("dmabuf has too many net_iovs"),
            Self::NoMemory => f.write_str("out of memory"),
        }
    }
}

impl From<CarveError> for Error {
    fn from(e: CarveError) -> Self {
        match e {
            CarveError::Misaligned { .. } => EINVAL,
            CarveError::TooLarge => E2BIG,
            CarveError::NoMemory => ENOMEM,
        }
    }
}

/// A dma-buf's mapping, carved into chunks of `net_iov`s.
///
/// # Invariants
///
/// The chunks are in segment order, their `first` fields are consecutive
/// (`chunks[k + 1].first == chunks[k].first + chunks[k].count`) starting at
/// 0, and `count` is their total, at most
/// [`super::freelist::MAX_ENTRIES`]. `count << shift` is the mapping's
/// length, the sum of its segments', which fits a `usize`.
pub struct Layout {
    chunks: KVec<Chunk>,
    count: u32,
    shift: u32,
}

impl Layout {
    /// Carves the DMA segments `(address, length)` into `net_iov`s of
    /// `1 << niov_shift` bytes.
    pub fn carve<I>(segments: I, niov_shift: u32, flags: Flags) -> Result<Self, CarveError>
    where
        I: IntoIterator<Item = (DmaAddress, usize)>,
    {
        let niov_size = 1usize.checked_shl(niov_shift).ok_or(CarveError::TooLarge)?;
        let mask = niov_size - 1;
        let mut chunks = KVec::new();
        let mut virt = 0usize;
        let mut count = 0u32;
        for (addr, len) in segments {
            // CAST: lossless, dma_addr_t is at least as wide as usize.
            if (addr & mask as DmaAddress) != 0 || (len & mask) != 0 {
                return Err(CarveError::Misaligned {
                    addr,
                    len,
                    niov_size,
                });
            }
            let n = u32::try_from(len >> niov_shift).map_err(|_| CarveError::TooLarge)?;
            let first = count;
            count = count
                .checked_add(n)
                .filter(|&c| c <= super::freelist::MAX_ENTRIES)
                .ok_or(CarveError::TooLarge)?;
            chunks
                .push(
                    Chunk {
                        base_virtual: virt,
                        base_dma: addr,
                        first,
                        count: n,
                    },
                    flags,
                )
                .map_err(|_| CarveError::NoMemory)?;
            virt = virt.checked_add(len).ok_or(CarveError::TooLarge)?;
        }
        // INVARIANT: chunks were pushed in order with `first` running from
        // 0, and `count` is their total, bounded above. Each segment's
        // length is a multiple of the `net_iov` size, so `n << niov_shift`
        // is that length: `count << niov_shift` is `virt`, their sum,
        // which `checked_add` kept within a `usize`.
        Ok(Self {
            chunks,
            count,
            shift: niov_shift,
        })
    }

    /// The chunks, in dma-buf order.
    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// The number of `net_iov`s in all chunks.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// log2 of the size of one `net_iov`.
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// The dma-buf offset where `net_iov` number `idx` starts.
    pub fn virtual_addr(&self, idx: u32) -> usize {
        // CAST: u32 to usize is lossless on the targets Linux supports.
        (idx as usize) << self.shift
    }

    /// The chunk holding `net_iov` number `idx`.
    pub fn chunk_of(&self, idx: u32) -> Option<&Chunk> {
        // By the invariant the chunks are sorted by `first`.
        let k = self.chunks.partition_point(|c| c.first + c.count <= idx);
        self.chunks.get(k).filter(|c| idx >= c.first)
    }

    /// The DMA address of `net_iov` number `idx`.
    pub fn dma_addr(&self, idx: u32) -> Option<DmaAddress> {
        self.chunk_of(idx)
            .map(|c| c.base_dma + (DmaAddress::from(idx - c.first) << self.shift))
    }
}

#[kunit_tests(devmem_rs_layout)]
mod tests {
    use super::*;
    use kernel::{
        page::PAGE_SIZE,
        str::CString, //
    };

    const SHIFT_4K: u32 = 12;
    const SHIFT_16K: u32 = 14;

    fn text(e: &CarveError) -> Result<CString> {
        CString::try_from_fmt(fmt!("{e}"))
    }

    #[test]
    fn segments_become_consecutive_chunks() -> Result {
        let segs = [(0x10_0000, 2 * PAGE_SIZE), (0x40_0000, 3 * PAGE_SIZE)];
        let l = Layout::carve(segs, SHIFT_4K, GFP_KERNEL)?;
        assert_eq!(l.count(), 5);
        assert_eq!(
            l.chunks(),
            &[
                Chunk {
                    base_virtual: 0,
                    base_dma: 0x10_0000,
                    first: 0,
                    count: 2
                },
                Chunk {
                    base_virtual: 2 * PAGE_SIZE,
                    base_dma: 0x40_0000,
                    first: 2,
                    count: 3
                },
            ]
        );
        Ok(())
    }

    #[test]
    fn addresses_of_each_niov() -> Result {
        let segs = [(0x10_0000, 2 * PAGE_SIZE), (0x40_0000, 3 * PAGE_SIZE)];
        let l = Layout::carve(segs, SHIFT_4K, GFP_KERNEL)?;
        assert_eq!(l.dma_addr(0), Some(0x10_0000));
        assert_eq!(l.dma_addr(1), Some(0x10_1000));
        assert_eq!(l.dma_addr(2), Some(0x40_0000));
        assert_eq!(l.dma_addr(4), Some(0x40_2000));
        assert_eq!(l.dma_addr(5), None);
        assert_eq!(l.virtual_addr(3), 3 * PAGE_SIZE);
        Ok(())
    }

    #[test]
    fn misaligned_address_is_refused_with_c_text() -> Result {
        let segs = [(0x10_0000, PAGE_SIZE), (0x1_0000_0800, PAGE_SIZE)];
        let e = match Layout::carve(segs, SHIFT_4K, GFP_KERNEL) {
            Err(e) => e,
            Ok(_) => return Err(EINVAL),
        };
        assert_eq!(Error::from(e), EINVAL);
        assert_eq!(
            text(&e)?.to_bytes(),
            b"dmabuf sg entry (addr=0x0000000100000800, len=4096) not aligned to niov size 4096"
        );
        Ok(())
    }

    #[test]
    fn misaligned_length_is_refused() -> Result {
        let segs = [(0x10_0000, PAGE_SIZE + 512)];
        assert!(matches!(
            Layout::carve(segs, SHIFT_4K, GFP_KERNEL),
            Err(CarveError::Misaligned { len, .. }) if len == PAGE_SIZE + 512
        ));
        Ok(())
    }

    #[test]
    fn large_niovs_need_large_alignment() -> Result {
        // Page aligned, but not 16 KiB aligned.
        let segs = [(0x10_1000, 16384)];
        let e = match Layout::carve(segs, SHIFT_16K, GFP_KERNEL) {
            Err(e) => e,
            Ok(_) => return Err(EINVAL),
        };
        assert_eq!(
            text(&e)?.to_bytes(),
            b"dmabuf sg entry (addr=0x0000000000101000, len=16384) not aligned to niov size 16384"
        );
        let l = Layout::carve([(0x10_0000, 65536)], SHIFT_16K, GFP_KERNEL)?;
        assert_eq!(l.count(), 4);
        assert_eq!(l.dma_addr(3), Some(0x10_c000));
        assert_eq!(l.virtual_addr(1), 16384);
        Ok(())
    }

    #[test]
    fn empty_mapping_has_no_niovs() -> Result {
        let l = Layout::carve([], SHIFT_4K, GFP_KERNEL)?;
        assert_eq!(l.count(), 0);
        assert_eq!(l.dma_addr(0), None);
        Ok(())
    }
}
