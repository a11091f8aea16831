// SPDX-License-Identifier: GPL-2.0

//! A device's counters: the totals of `ndo_get_stats64`, and the
//! per-queue ones of the netdev family (`struct netdev_stat_ops`).
//!
//! C headers: [`include/uapi/linux/if_link.h`](srctree/include/uapi/linux/if_link.h),
//! [`include/net/netdev_queues.h`](srctree/include/net/netdev_queues.h)

use super::{
    Device,
    Operations, //
};
use crate::prelude::*;
use core::marker::PhantomData;

/// Counters reported by `ndo_get_stats64` (`struct rtnl_link_stats64`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats64 {
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Received packets dropped by the driver.
    pub rx_dropped: u64,
    /// Packets to send dropped by the driver.
    pub tx_dropped: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Packets the device missed for lack of buffers.
    pub rx_missed_errors: u64,
    /// Packets a receive queue dropped for lack of descriptors.
    pub rx_fifo_errors: u64,
}

/// Counters of one receive queue (`struct netdev_queue_stats_rx`): `None`
/// for those the driver does not keep.
#[derive(Clone, Copy, Debug, Default)]
pub struct RxQueueStats {
    /// Packets handed to the stack.
    pub packets: Option<u64>,
    /// Bytes handed to the stack.
    pub bytes: Option<u64>,
    /// Times a buffer or an skb could not be allocated.
    pub alloc_fail: Option<u64>,
    /// Frames dropped by the driver or the device.
    pub hw_drops: Option<u64>,
    /// Of those, frames the device dropped for lack of buffers or
    /// descriptors.
    pub hw_drop_overruns: Option<u64>,
    /// Packets whose checksum the device verified (`CHECKSUM_UNNECESSARY`).
    pub csum_unnecessary: Option<u64>,
    /// Packets without a verified checksum (`CHECKSUM_NONE`).
    pub csum_none: Option<u64>,
}

/// Counters of one transmit queue (`struct netdev_queue_stats_tx`), as for
/// [`RxQueueStats`].
#[derive(Clone, Copy, Debug, Default)]
pub struct TxQueueStats {
    /// Packets sent.
    pub packets: Option<u64>,
    /// Bytes sent.
    pub bytes: Option<u64>,
    /// Packets dropped instead of sent.
    pub hw_drops: Option<u64>,
    /// Packets the device checksummed (`CHECKSUM_PARTIAL`).
    pub needs_csum: Option<u64>,
    /// Times the driver stopped the queue for lack of descriptors.
    pub stop: Option<u64>,
    /// Times the driver woke it.
    pub wake: Option<u64>,
    /// Packets the device segmented (TSO).
    pub hw_gso_packets: Option<u64>,
    /// Their bytes, before segmentation.
    pub hw_gso_bytes: Option<u64>,
    /// The segments they made.
    pub hw_gso_wire_packets: Option<u64>,
    /// The segments' bytes, headers included.
    pub hw_gso_wire_bytes: Option<u64>,
}

/// Adds a counter to a total, if the counter is kept.
fn sum_counter(total: &mut Option<u64>, c: Option<u64>) {
    if let Some(c) = c {
        *total = Some(total.unwrap_or(0).wrapping_add(c));
    }
}

/// Writes a counter the core reports, if it is kept: the core marked every
/// field unreported (all ones) before asking.
fn set_counter(field: &mut u64, c: Option<u64>) {
    if let Some(c) = c {
        *field = c;
    }
}

impl RxQueueStats {
    /// Adds `o`'s counters to these, keeping those either reports.
    pub fn add(&mut self, o: &Self) {
        sum_counter(&mut self.packets, o.packets);
        sum_counter(&mut self.bytes, o.bytes);
        sum_counter(&mut self.alloc_fail, o.alloc_fail);
        sum_counter(&mut self.hw_drops, o.hw_drops);
        sum_counter(&mut self.hw_drop_overruns, o.hw_drop_overruns);
        sum_counter(&mut self.csum_unnecessary, o.csum_unnecessary);
        sum_counter(&mut self.csum_none, o.csum_none);
    }

    /// Writes the kept counters.
    fn write(&self, raw: &mut bindings::netdev_queue_stats_rx) {
        set_counter(&mut raw.packets, self.packets);
        set_counter(&mut raw.bytes, self.bytes);
        set_counter(&mut raw.alloc_fail, self.alloc_fail);
        set_counter(&mut raw.hw_drops, self.hw_drops);
        set_counter(&mut raw.hw_drop_overruns, self.hw_drop_overruns);
        set_counter(&mut raw.csum_unnecessary, self.csum_unnecessary);
        set_counter(&mut raw.csum_none, self.csum_none);
    }
}

impl TxQueueStats {
    /// Adds `o`'s counters to these, keeping those either reports.
    pub fn add(&mut self, o: &Self) {
        sum_counter(&mut self.packets, o.packets);
        sum_counter(&mut self.bytes, o.bytes);
        sum_counter(&mut self.hw_drops, o.hw_drops);
        sum_counter(&mut self.needs_csum, o.needs_csum);
        sum_counter(&mut self.stop, o.stop);
        sum_counter(&mut self.wake, o.wake);
        sum_counter(&mut self.hw_gso_packets, o.hw_gso_packets);
        sum_counter(&mut self.hw_gso_bytes, o.hw_gso_bytes);
        sum_counter(&mut self.hw_gso_wire_packets, o.hw_gso_wire_packets);
        sum_counter(&mut self.hw_gso_wire_bytes, o.hw_gso_wire_bytes);
    }

    /// As [`RxQueueStats::write`].
    fn write(&self, raw: &mut bindings::netdev_queue_stats_tx) {
        set_counter(&mut raw.packets, self.packets);
        set_counter(&mut raw.bytes, self.bytes);
        set_counter(&mut raw.hw_drops, self.hw_drops);
        set_counter(&mut raw.needs_csum, self.needs_csum);
        set_counter(&mut raw.stop, self.stop);
        set_counter(&mut raw.wake, self.wake);
        set_counter(&mut raw.hw_gso_packets, self.hw_gso_packets);
        set_counter(&mut raw.hw_gso_bytes, self.hw_gso_bytes);
        set_counter(&mut raw.hw_gso_wire_packets, self.hw_gso_wire_packets);
        set_counter(&mut raw.hw_gso_wire_bytes, self.hw_gso_wire_bytes);
    }
}

/// Per-queue counters over netlink (`struct netdev_stat_ops`, the netdev
/// family's `qstats-get`).
///
/// The device's totals are the base plus every active queue's, and must
/// equal what [`Operations::get_stats64`] reports: counters of queues that
/// went away (fewer channels) belong in the base. A counter is reported
/// for the device only if the base reports it (as 0 if need be).
pub trait QueueStats: Operations {
    /// Counters of receive queue `idx`, one of the active queues.
    fn rx_queue_stats(dev: &Device<Self>, idx: u32) -> RxQueueStats;

    /// Counters of transmit queue `idx`, one of the active queues.
    fn tx_queue_stats(dev: &Device<Self>, idx: u32) -> TxQueueStats;

    /// Counters of the device not in any active queue.
    fn base_stats(dev: &Device<Self>) -> (RxQueueStats, TxQueueStats);
}

/// Builds the C stat ops of a [`QueueStats`] implementation.
pub(super) struct StatsAdapter<T: QueueStats>(PhantomData<T>);

impl<T: QueueStats> StatsAdapter<T> {
    const OPS: bindings::netdev_stat_ops = bindings::netdev_stat_ops {
        get_queue_stats_rx: Some(Self::rx),
        get_queue_stats_tx: Some(Self::tx),
        get_base_stats: Some(Self::base),
    };

    pub(super) const OPS_REF: &'static bindings::netdev_stat_ops = &Self::OPS;

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with a queue
    /// index below `real_num_rx_queues` and `stats` writable.
    unsafe extern "C" fn rx(
        dev: *mut bindings::net_device,
        idx: c_int,
        stats: *mut bindings::netdev_queue_stats_rx,
    ) {
        let Ok(idx) = u32::try_from(idx) else { return };
        // SAFETY: per this function's contract.
        let s = T::rx_queue_stats(unsafe { Device::<T>::from_raw(dev) }, idx);
        // SAFETY: writable per this function's contract.
        s.write(unsafe { &mut *stats });
    }

    /// # Safety
    ///
    /// As for `rx`, for a transmit queue.
    unsafe extern "C" fn tx(
        dev: *mut bindings::net_device,
        idx: c_int,
        stats: *mut bindings::netdev_queue_stats_tx,
    ) {
        let Ok(idx) = u32::try_from(idx) else { return };
        // SAFETY: per this function's contract.
        let s = T::tx_queue_stats(unsafe { Device::<T>::from_raw(dev) }, idx);
        // SAFETY: writable per this function's contract.
        s.write(unsafe { &mut *stats });
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with `rx` and
    /// `tx` writable.
    unsafe extern "C" fn base(
        dev: *mut bindings::net_device,
        rx: *mut bindings::netdev_queue_stats_rx,
        tx: *mut bindings::netdev_queue_stats_tx,
    ) {
        // SAFETY: per this function's contract.
        let (r, t) = T::base_stats(unsafe { Device::<T>::from_raw(dev) });
        // SAFETY: writable per this function's contract.
        r.write(unsafe { &mut *rx });
        // SAFETY: as above.
        t.write(unsafe { &mut *tx });
    }
}
