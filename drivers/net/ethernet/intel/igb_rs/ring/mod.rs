// SPDX-License-Identifier: GPL-2.0

//! Descriptor rings of one queue pair: the receive ring (`rx`) and the
//! transmit ring (`tx`), and what they share.
//!
//! Each ring is a coherent array of 16-byte advanced descriptors. Receive
//! buffers come from the queue's page pools: payload buffers from a pool
//! made for the queue, which takes the queue's memory provider (devmem
//! `net_iov`s) when it has one, and with header split, 256-byte header
//! buffers from a second pool of host pages. A frame in one host buffer,
//! without header split, becomes an skb where it is, the buffer its head
//! (the device writes it past room for the stack to push headers into,
//! and the skb's shared info goes after it); otherwise the headers of a
//! frame are copied into the skb and its payload stays in the buffers, as
//! frags. Frames are sent from where they are: the linear part and page
//! frags mapped for the device, `net_iov` frags (devmem TX) at their
//! binding's addresses.
//!
//! Every frame the rings give up on is dropped for a
//! [`DropReason`](kernel::net::skbuff::DropReason). If it has an skb by
//! then, the skb is freed for that reason (`kfree_skb_reason`,
//! which drop monitors and the `skb:kfree_skb` tracepoint see); before
//! that, its buffers go back to their pools and the reason decides how it
//! is counted. No skb is left to be dropped implicitly, rings included.

use kernel::prelude::*;

mod rx;
mod tx;

pub(crate) use rx::*;
pub(crate) use tx::*;

/// Descriptors per ring at probe.
pub(crate) const RING_SIZE: u32 = 256;
/// The fewest descriptors a ring takes (`ethtool -G`).
pub(crate) const RING_MIN: u32 = 64;
/// The most: the descriptor length registers take up to 4096.
pub(crate) const RING_MAX: u32 = 4096;
/// Ring lengths are multiples of 128 bytes: of 8 descriptors.
const RING_ALIGN: u32 = 8;

/// The ring size the device takes for a requested `n`: within
/// [`RING_MIN`, `RING_MAX`], rounded up to a multiple of 8 descriptors.
pub(crate) fn ring_size(n: u32) -> u32 {
    n.clamp(RING_MIN, RING_MAX).next_multiple_of(RING_ALIGN)
}

/// Index `i` moved on by `k` in a ring of `len` descriptors, for `i < len`
/// and `k <= len`. Ring sizes are multiples of 8, not powers of 2: this
/// compares instead of dividing on every descriptor.
#[inline]
fn wrap(i: usize, k: usize, len: usize) -> usize {
    let j = i + k;
    if j >= len {
        j - len
    } else {
        j
    }
}

/// The index after `i` in a ring of `len` descriptors, for `i < len`:
/// [`wrap`] by one, which compiles to a compare and a select.
#[inline]
fn next(i: usize, len: usize) -> usize {
    if i + 1 == len {
        0
    } else {
        i + 1
    }
}

/// An advanced descriptor, receive or transmit: two little-endian
/// quadwords, as the datasheet numbers them (the C driver's
/// `union e1000_adv_rx_desc` and `union e1000_adv_tx_desc`). What they
/// hold depends on the ring and on who wrote them last, the driver or the
/// device's write-back: [`RxRing`] and [`TxRing`] read and write them
/// through accessors that say which. Plain integers have no padding and
/// take any bit pattern, so an array of them is shared with the device
/// as it is.
type Desc = [u64; 2];

/// Bytes per descriptor, receive or transmit: ring lengths are counted
/// in them.
pub(crate) const DESC_SIZE: usize = 16;
const _: () = assert!(core::mem::size_of::<Desc>() == DESC_SIZE);

#[kunit_tests(igb_rs_ring)]
mod tests {
    use super::*;

    #[test]
    fn ring_sizes_round_up_to_eight_within_limits() {
        assert_eq!(ring_size(0), RING_MIN);
        assert_eq!(ring_size(64), 64);
        assert_eq!(ring_size(100), 104);
        assert_eq!(ring_size(4095), RING_MAX);
        assert_eq!(ring_size(u32::MAX), RING_MAX);
    }

    #[test]
    fn wrap_and_next_agree_with_modulo() {
        for len in [64usize, 104, 256, 4096] {
            for i in [0, 1, len / 2, len - 2, len - 1] {
                for k in [0, 1, len - 1, len] {
                    assert_eq!(wrap(i, k, len), (i + k) % len);
                }
                assert_eq!(next(i, len), (i + 1) % len);
            }
        }
    }
}
