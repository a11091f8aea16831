// SPDX-License-Identifier: GPL-2.0

//! Starting and stopping one receive or transmit queue, with the
//! datasheet's queue enable and disable sequences; the receive unit's
//! setup; and the check for a hung transmit queue.

use super::{
    link_speed_duplex,
    poll,
    reset,
    Regs, //
};
use crate::regs::*;
use kernel::prelude::*;

// TIMEOUT: a queue's ENABLE bit follows a write once the queue's pending
// descriptor fetches and write-backs are done, a few µs on silicon, at once
// in QEMU; 200 polls 50 µs apart give it 10 ms, as ixgbe gives the same
// bit. QEMU answers the first read, so a restart waits for nothing there.
const QUEUE_POLLS: u32 = 200;
const QUEUE_POLL_US: u32 = 50;

/// A queue's ENABLE bit did not read 0 in time: it may still read
/// descriptors and write buffers of the ring it was given.
#[derive(Debug)]
pub(crate) struct Stuck;

/// Receive queue `.0` does no DMA: its ENABLE bit read 0 after it was
/// cleared, or the device was reset since. Its ring may be freed or handed
/// back.
#[must_use = "the proof that a ring may go"]
pub(crate) struct RxOff(usize);

/// Transmit queue `.0` does no DMA (as [`RxOff`]).
#[must_use = "the proof that a ring may go"]
pub(crate) struct TxOff(usize);

impl RxOff {
    pub(crate) fn queue(&self) -> usize {
        self.0
    }
}

impl TxOff {
    pub(crate) fn queue(&self) -> usize {
        self.0
    }
}

#[cfg(CONFIG_IGB_RS_KUNIT_TEST)]
impl RxOff {
    /// What the driver believed before it waited for ENABLE to read 0:
    /// for the model's tests of a procedure without the wait.
    pub(crate) fn assume(q: usize) -> Self {
        Self(q)
    }
}

#[cfg(CONFIG_IGB_RS_KUNIT_TEST)]
impl TxOff {
    /// As [`RxOff::assume`].
    pub(crate) fn assume(q: usize) -> Self {
        Self(q)
    }
}

/// Queues below `queues` do no DMA: each read its ENABLE bit 0, or the
/// device was reset, which makes it forget every ring. (Silicon's reset
/// value of RXDCTL0 and TXDCTL0 has ENABLE set, with no ring: no DMA.)
pub(crate) struct Stopped {
    pub(crate) queues: usize,
    pub(crate) by_reset: bool,
}

impl Stopped {
    /// Receive queue `q` does no DMA, if it is one of the queues stopped.
    pub(crate) fn rx(&self, q: usize) -> Option<RxOff> {
        (q < self.queues).then_some(RxOff(q))
    }

    /// Transmit queue `q` does no DMA, if it is one of the queues stopped.
    pub(crate) fn tx(&self, q: usize) -> Option<TxOff> {
        (q < self.queues).then_some(TxOff(q))
    }

    /// Some queue did not stop, so the device was reset: everything it
    /// was programmed with is gone.
    pub(crate) fn by_reset(&self) -> bool {
        self.by_reset
    }
}

/// Waits until the ENABLE bit of the queue control register `dctl` reads
/// 0. A device gone from the bus reads all ones and does no DMA either.
fn wait_disabled<R: Regs>(r: &R, dctl: usize) -> Result<(), Stuck> {
    poll(r, dctl, QUEUE_POLLS, QUEUE_POLL_US, |v| {
        v & DCTL_ENABLE == 0 || v == !0
    })
    .map(|_| ())
    .map_err(|_| Stuck)
}

fn wait_enabled<R: Regs>(r: &R, dctl: usize) -> bool {
    poll(r, dctl, QUEUE_POLLS, QUEUE_POLL_US, |v| {
        v & DCTL_ENABLE != 0
    })
    .is_ok()
}

/// Stops receive queue `q`: clears its ENABLE bit and waits until it reads
/// 0, after which the queue fetches no descriptor and writes no buffer.
/// On [`Stuck`] the ring must stay where it is (or the device be reset).
pub(crate) fn rx_stop<R: Regs>(r: &R, q: usize) -> Result<RxOff, Stuck> {
    r.wr(rxq(q) + Q_DCTL, 0);
    wait_disabled(r, rxq(q) + Q_DCTL)?;
    Ok(RxOff(q))
}

/// Stops transmit queue `q` (as [`rx_stop`]); what it had not sent is
/// dropped.
pub(crate) fn tx_stop<R: Regs>(r: &R, q: usize) -> Result<TxOff, Stuck> {
    r.wr(txq(q) + Q_DCTL, 0);
    wait_disabled(r, txq(q) + Q_DCTL)?;
    Ok(TxOff(q))
}

/// Stops queues `0..n`, receive and transmit, waiting for each; if one
/// does not stop, resets the device. The receive and transmit units should
/// be off (RCTL.EN, TCTL.EN) first, so that no queue gets more to do.
pub(crate) fn stop_queues<R: Regs>(r: &R, n: usize) -> Stopped {
    // Clear every bit first, then wait: the queues drain together.
    for q in 0..n {
        r.wr(rxq(q) + Q_DCTL, 0);
        r.wr(txq(q) + Q_DCTL, 0);
    }
    let off = (0..n).all(|q| {
        wait_disabled(r, rxq(q) + Q_DCTL).is_ok() && wait_disabled(r, txq(q) + Q_DCTL).is_ok()
    });
    if off {
        Stopped {
            queues: n,
            by_reset: false,
        }
    } else {
        reset(r).0
    }
}

/// Where a ring is: its DMA address and length in bytes.
#[derive(Clone, Copy)]
pub(crate) struct Ring {
    pub(crate) dma: u64,
    pub(crate) bytes: u32,
}

/// Why a queue did not start.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StartError {
    /// ENABLE did not read 1 in time; the queue was stopped again and does
    /// not use the ring.
    TimedOut,
    /// The queue did not stop, before or after: it may use a ring (the new
    /// one or an old one), so none may go before a device reset.
    Stuck,
}

impl From<StartError> for Error {
    fn from(e: StartError) -> Error {
        match e {
            StartError::TimedOut => ETIMEDOUT,
            StartError::Stuck => EIO,
        }
    }
}

/// Waits for the queue whose control register is `dctl` to run after its
/// ENABLE bit was set; if it does not, stops it again.
fn wait_started<R: Regs>(r: &R, dctl: usize) -> Result<(), StartError> {
    if wait_enabled(r, dctl) {
        return Ok(());
    }
    r.wr(dctl, 0);
    match wait_disabled(r, dctl) {
        Ok(()) => Err(StartError::TimedOut),
        Err(Stuck) => Err(StartError::Stuck),
    }
}

/// SRRCTL for receive buffers of `buf_size` bytes (a multiple of 1 KiB),
/// 256-byte header buffers with header split, and whether a frame for the
/// queue is dropped when it has no descriptor (`drop_en`).
pub(crate) fn srrctl(buf_size: u32, split: bool, drop_en: bool) -> u32 {
    let desctype = if split {
        SRRCTL_DESCTYPE_HDR_SPLIT
    } else {
        SRRCTL_DESCTYPE_ADV_ONEBUF
    };
    let drop = if drop_en { SRRCTL_DROP_EN } else { 0 };
    desctype | drop | SRRCTL_BSIZEHDR_256 | (buf_size >> SRRCTL_BSIZEPKT_SHIFT)
}

/// Starts receive queue `q` on `ring`, described by `srrctl`, with the
/// device's head at `head` and the descriptors up to `tail` armed.
///
/// The 82576 takes a ring's address, length, buffer layout and head only
/// while the queue is off (ENABLE reads 0), and a tail only once it runs
/// (ENABLE reads 1): so stop, program, enable, wait, then give the
/// descriptors. The tail is set to the head while the queue is off, so that
/// it starts with nothing to fetch.
pub(crate) fn rx_start<R: Regs>(
    r: &R,
    q: usize,
    ring: Ring,
    srrctl: u32,
    (head, tail): (u32, u32),
) -> Result<(), StartError> {
    let rq = rxq(q);
    // Off, with a ring or not: whatever ring it had is the caller's, who
    // stopped the queue before (this proof is for registers, not rings).
    let _: RxOff = rx_stop(r, q).map_err(|Stuck| StartError::Stuck)?;
    // CAST: the halves of a 64-bit address.
    r.wr(rq + Q_BAL, ring.dma as u32);
    r.wr(rq + Q_BAH, (ring.dma >> 32) as u32);
    r.wr(rq + Q_LEN, ring.bytes);
    r.wr(rq + Q_SRRCTL, srrctl);
    r.wr(rq + Q_HEAD, head);
    r.wr(rq + Q_TAIL, head);
    r.wr(rq + Q_DCTL, RXDCTL_VALUE);
    wait_started(r, rq + Q_DCTL)?;
    r.wr(rq + Q_TAIL, tail);
    Ok(())
}

/// Starts transmit queue `q` on the empty `ring` (head and tail 0), as
/// [`rx_start`]: programmed while off, then enabled and waited for.
pub(crate) fn tx_start<R: Regs>(r: &R, q: usize, ring: Ring) -> Result<(), StartError> {
    let tq = txq(q);
    let _: TxOff = tx_stop(r, q).map_err(|Stuck| StartError::Stuck)?;
    // CAST: the halves of a 64-bit address.
    r.wr(tq + Q_BAL, ring.dma as u32);
    r.wr(tq + Q_BAH, (ring.dma >> 32) as u32);
    r.wr(tq + Q_LEN, ring.bytes);
    r.wr(tq + Q_HEAD, 0);
    r.wr(tq + Q_TAIL, 0);
    r.wr(tq + Q_DCTL, TXDCTL_VALUE);
    wait_started(r, tq + Q_DCTL)
}

/// Turns off the parsing of IPv6 extension headers (82576 errata), keeping
/// the rest of RFCTL.
pub(crate) fn rx_errata<R: Regs>(r: &R) {
    r.wr(RFCTL, r.rd(RFCTL) | RFCTL_IPV6_EX_DIS);
}

/// The frame types header split splits: TCP and UDP over IPv4 and IPv6
/// after their TCP or UDP header, IP fragments after the IP header. Every
/// other frame goes whole to the packet buffer, as the receive path
/// expects of a frame the device did not split (a devmem queue drops it:
/// it is not TCP). Without these, header split would split nothing and
/// the headers of a devmem queue's TCP frames would land in device memory.
pub(crate) const PSRTYPE_SPLIT: u32 = PSRTYPE_IPV4_FRAG
    | PSRTYPE_IPV4_TCP
    | PSRTYPE_IPV4_UDP
    | PSRTYPE_IPV6_FRAG
    | PSRTYPE_IPV6_TCP
    | PSRTYPE_IPV6_UDP;

/// Sets the receive unit up, before any queue starts: the errata bit, and
/// the frame types header split splits ([`PSRTYPE_SPLIT`]), for queues
/// with it and without (for those PSRTYPE is not looked at).
///
/// PSRTYPE is one register per pool; which one a queue uses without
/// virtualization (pool 0's, or the one of the queue's number, as on the
/// I210, which has one per queue) is UNVERIFIED, so all eight get the
/// types. The reset value is not relied on.
pub(crate) fn setup_rx_unit<R: Regs>(r: &R) {
    rx_errata(r);
    for n in 0..PSRTYPE_REGS {
        r.wr(PSRTYPE + 4 * n, PSRTYPE_SPLIT);
    }
}

/// How long a transmit ring with frames pending may free none before it is
/// taken as hung, at the link speed in `status`: a second, 14 at 10 Mb/s,
/// where a ring's worth of full frames takes seconds (C's
/// tx_timeout_factor).
fn tx_hang_timeout_ms(status: u32) -> u64 {
    match link_speed_duplex(status).0 {
        10 => 14_000,
        _ => 1_000,
    }
}

/// What the watchdog saw of a transmit ring, once it freed what the device
/// had sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TxProgress {
    /// Frames the ring freed since it was made (wrapping).
    pub(crate) freed: u64,
    /// Frames remain that the device has not sent.
    pub(crate) pending: bool,
}

/// Transmit hang detection for one ring, from the watchdog (what the C igb
/// does from its clean path once the watchdog sets
/// IGB_RING_FLAG_TX_DETECT_HANG).
///
/// C takes a ring as hung when the frame it waits for was queued more than
/// the timeout ago and the partner is not pausing the link (STATUS.TXOFF).
/// Here, rather than a time stamp per frame on the transmit path, the
/// watchdog remembers when it first saw the ring with frames pending and
/// none freed since: the ring is hung once that lasts the timeout. That
/// asks the same of the device (it sent nothing for that long), whatever
/// the ring holds, at no cost per frame. A pause stops the wait: the
/// device may not send while paused, and gets the whole timeout from the
/// first look that finds the pause over.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TxHangCheck {
    /// Frames freed, and the time (ms), when the ring was first seen with
    /// frames pending and no progress since.
    stalled: Option<(u64, u64)>,
}

impl TxHangCheck {
    pub(crate) const fn new() -> Self {
        Self { stalled: None }
    }

    /// Looks at the ring as `p` says, with STATUS as read now (`status`:
    /// link speed, TXOFF) and a monotonic time in ms; whether the ring is
    /// hung. A ring that empties, or frees a frame, starts over.
    pub(crate) fn check(&mut self, p: TxProgress, status: u32, now_ms: u64) -> bool {
        if !p.pending || status & STATUS_TXOFF != 0 {
            // Nothing to send, or not allowed to: the wait starts at the
            // next look that finds frames pending and no pause.
            self.stalled = None;
            return false;
        }
        match self.stalled {
            Some((freed, since)) if freed == p.freed => {
                now_ms.saturating_sub(since) >= tx_hang_timeout_ms(status)
            }
            _ => {
                // The first look with frames pending, or progress since
                // the last: the wait starts now.
                self.stalled = Some((p.freed, now_ms));
                false
            }
        }
    }
}
