// SPDX-License-Identifier: GPL-2.0

//! The transmit queue a driver sends on, and byte queue limits (BQL)'s
//! count of what it sent.
//!
//! C headers: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h),
//! [`include/linux/dynamic_queue_limits.h`](srctree/include/linux/dynamic_queue_limits.h)

use super::Busy;
use crate::{
    net::skbuff::SkBuff,
    types::NotThreadSafe, //
};
use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

/// The transmit queue
/// [`Operations::start_xmit`](super::Operations::start_xmit) sends on: the
/// proof that the core holds its lock (`HARD_TX_LOCK`) with bottom halves
/// off (from netpoll, hard IRQs too), which serialises what the queue's
/// producer side does, byte queue limits' (BQL) count of what went on the
/// ring first.
///
/// Only the adapter makes one, for the call: byte queue limits are told
/// about sends nowhere else. Outside `start_xmit` there is no way to do
/// it:
///
/// ```ignore,compile_fail,E0599
/// use kernel::net::driver::Device;
/// # // twin: use kernel::net::driver::TxQueue;
///
/// fn sent_behind_the_lock<T>(dev: &Device<T>) {
///     let _ = dev.sent(1500, false); // misuse
/// }
/// # // twin: fn sent_in_xmit(txq: &mut TxQueue<'_>) {
/// # // twin:     let _ = txq.sent(1500, false);
/// # // twin: }
/// ```
///
/// nor to keep the queue past the call:
///
/// ```ignore,compile_fail,E0521
/// use kernel::net::driver::TxQueue;
///
/// fn stash(_txq: &'static mut TxQueue<'static>) {}
///
/// fn xmit(txq: &mut TxQueue<'_>) {
///     stash(txq); // misuse
/// #   // twin: let _ = txq.sent(1500, false);
/// }
/// ```
///
/// # Invariants
///
/// `raw` is transmit queue `idx` of a live device, whose xmit lock the
/// thread that has the reference holds, with bottom halves (or hard IRQs)
/// off, for as long as the reference lives.
pub struct TxQueue<'a> {
    pub(super) raw: NonNull<bindings::netdev_queue>,
    pub(super) idx: u16,
    pub(super) _lock: PhantomData<&'a mut bindings::netdev_queue>,
    pub(super) _not_send: NotThreadSafe,
}

impl TxQueue<'_> {
    /// The queue's index on its device: the packet's queue mapping.
    pub fn index(&self) -> u16 {
        self.idx
    }

    /// Tells byte queue limits that `bytes` went on the queue's ring
    /// (`__netdev_tx_sent_queue`); BQL stops the queue when too much is in
    /// flight, until the queue's NAPI poll says enough was sent
    /// (`napi::NapiPoll::tx_completed`).
    /// `more` is [`xmit_more`]: the stack has another frame for the queue
    /// right away. Returns whether the driver must tell the device about
    /// the frames queued so far now (write the ring's tail): when nothing
    /// more follows, or the queue is stopped (by BQL or the driver), so
    /// that no later call would. More bytes than BQL counts at once
    /// (`DQL_MAX_OBJECT`, a sixteenth of `u32::MAX`), which no frame
    /// has, are not counted, with a warning (once), and the device told.
    pub fn sent(&mut self, bytes: u32, more: bool) -> bool {
        // `DQL_MAX_OBJECT` (`UINT_MAX / 16`; bindgen does not evaluate it).
        const MAX_OBJECT: u32 = u32::MAX / 16;
        if bytes > MAX_OBJECT {
            crate::pr_warn_once!("bql: {} bytes sent at once are not counted\n", bytes);
            return true;
        }
        // SAFETY: a queue of a live device whose xmit lock is held (type
        // invariant): the only sender on it, and `Added::tx_reset`, the
        // only reset, takes the same lock.
        unsafe { bindings::__netdev_tx_sent_queue(self.raw.as_ptr(), bytes, more) }
    }

    /// Stops the queue (`netif_tx_stop_queue`) and gives `skb` back to the
    /// stack to retry once the driver wakes the queue
    /// ([`Device::wake_queue`](super::Device::wake_queue)), when its ring
    /// has room again. The queue stops here, at the call: a driver whose
    /// completions wake the queue under a lock of the ring calls this
    /// under that lock, so that a completion cannot slip between the full
    /// ring and the stop and leave the queue stopped for good. A driver
    /// that wakes the queue before returning the [`Busy`] gets the retry
    /// at once again.
    pub fn busy(&mut self, skb: SkBuff) -> Busy {
        // SAFETY: a queue of a live device (type invariant); its `dev` is
        // set when the device is allocated.
        let dev = unsafe { (*self.raw.as_ptr()).dev };
        // SAFETY: queue `idx` of `dev`, whose xmit lock is held.
        unsafe { bindings::netif_stop_subqueue(dev, self.idx) };
        Busy(skb)
    }
}

/// Whether the stack has another frame for the same transmit queue right
/// after the one [`Operations::start_xmit`](super::Operations::start_xmit) is sending
/// (`netdev_xmit_more`): the driver may then leave the device's doorbell
/// for that frame, as [`TxQueue::sent`] says. Meaningful only inside
/// `start_xmit`.
#[inline]
pub fn xmit_more() -> bool {
    // SAFETY: reads this CPU's transmit state; any context may.
    unsafe { bindings::netdev_xmit_more() }
}
