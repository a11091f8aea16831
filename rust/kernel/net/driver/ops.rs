// SPDX-License-Identifier: GPL-2.0

//! The operations of a network device (`struct net_device_ops`): the
//! [`Operations`] trait a driver implements, and the adapter that builds
//! the C table from it.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)

use super::{
    Device,
    LockedDevice,
    RxMode,
    Stats64,
    TxQueue, //
};
use crate::{
    error::from_result,
    net::skbuff::{
        DropReason,
        SkBuff, //
    },
    prelude::*,
    types::NotThreadSafe,
};
use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

/// A packet [`Operations::start_xmit`] gives back to the stack, which
/// keeps it and retries it (`NETDEV_TX_BUSY`): the ring is full. Only
/// [`TxQueue::busy`] makes one, which stops the queue: given back on a
/// running queue, the packet would be retried at once, again and again,
/// until the ring had room.
///
/// Answering busy takes the packet, so a driver cannot answer busy for one
/// it freed or kept, which the stack would then retry. It must be the
/// [`SkBuff`] `start_xmit` got: the stack retries the buffer it passed in,
/// whatever is returned. When a driver returns another, it took the one
/// passed in (sent, kept or freed it), so the adapter warns, frees the one
/// returned as dropped and answers `NETDEV_TX_OK`.
///
/// # Examples
///
/// ```
/// use kernel::net::{
///     driver::{
///         Busy,
///         TxQueue, //
///     },
///     skbuff::SkBuff, //
/// };
///
/// fn xmit(txq: &mut TxQueue<'_>, skb: SkBuff, room: bool) -> Result<(), Busy> {
///     if !room {
///         // The stack keeps it and retries once the queue is woken.
///         return Err(txq.busy(skb));
///     }
///     // The device would send it here.
///     skb.consume();
///     Ok(())
/// }
/// ```
///
/// A driver cannot free a packet and answer busy for it:
///
/// ```ignore,compile_fail,E0382
/// use kernel::net::{
///     driver::{
///         Busy,
///         TxQueue, //
///     },
///     skbuff::SkBuff, //
/// };
///
/// fn xmit(txq: &mut TxQueue<'_>, skb: SkBuff) -> Result<(), Busy> {
///     drop(skb); // misuse
///     Err(txq.busy(skb))
/// }
/// ```
///
/// nor answer busy without stopping the queue:
///
/// ```ignore,compile_fail,E0423
/// use kernel::net::{
///     driver::{
///         Busy,
///         TxQueue, //
///     },
///     skbuff::SkBuff, //
/// };
///
/// fn xmit(txq: &mut TxQueue<'_>, skb: SkBuff) -> Result<(), Busy> {
///     Err(Busy(skb)) // misuse
/// #   // twin: Err(txq.busy(skb))
/// }
/// ```
pub struct Busy(pub(super) SkBuff);

/// The operations of a network device driver whose per-device data is
/// `Self`.
#[vtable]
pub trait Operations: Sized + Send + Sync + 'static {
    /// Whether the device takes netpoll (netconsole): `false` by default,
    /// and then the registration sets `IFF_DISABLE_NETPOLL`. A driver that
    /// says `true` makes [`start_xmit`](Operations::start_xmit) and its
    /// NAPI polls fit to run with hard IRQs off, as netpoll runs them.
    const NETPOLL: bool = false;

    /// Brings the device up (`ndo_open`), under RTNL and the instance
    /// lock.
    fn open(dev: &LockedDevice<Self>) -> Result;

    /// Takes the device down (`ndo_stop`), under RTNL and the instance
    /// lock.
    fn stop(dev: &LockedDevice<Self>) -> Result;

    /// Sends `skb` (`ndo_start_xmit`) on `txq`, the transmit queue the
    /// stack picked for it, whose lock the core holds, bottom halves off.
    /// `Ok` when the packet was taken (sent, queued or dropped); [`Busy`]
    /// with `skb` when the ring is full.
    ///
    /// With [`NETPOLL`](Operations::NETPOLL), it also runs from netpoll
    /// (netconsole) with hard IRQs off (`local_irq_save` then
    /// `HARD_TX_TRYLOCK`): it must then not sleep, nor take a `SpinLockBh`
    /// (its unlock enables bottom halves, which must not happen with IRQs
    /// off); a [`PoolNetmem`](crate::net::page_pool::PoolNetmem) dropped
    /// there is leaked, as its pool may not take it back. Freeing an
    /// [`SkBuff`], any of its ways, is fine there.
    fn start_xmit(dev: &Device<Self>, txq: &mut TxQueue<'_>, skb: SkBuff) -> Result<(), Busy>;

    /// Fills in counters (`ndo_get_stats64`). Called under the RCU read
    /// lock (`/proc/net/dev`) or another device's spinlock (bonding,
    /// team), without the instance lock: it must not sleep.
    fn get_stats64(_dev: &Device<Self>, _stats: &mut Stats64) {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Prepares the device for frames of MTU `mtu` (`ndo_change_mtu`),
    /// under RTNL and the instance lock. The core checked `mtu` against
    /// the range set with
    /// [`UnregisteredDevice::set_mtu_range`](super::UnregisteredDevice::set_mtu_range);
    /// [`NetDevice::mtu`](crate::net::netdev::NetDevice::mtu) still gives
    /// the old value during the call, and the new one once it succeeds.
    fn change_mtu(_dev: &LockedDevice<Self>, _mtu: u32) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Applies the receive filters `mode` asks for
    /// (`ndo_set_rx_mode_async`): promiscuous, all-multicast, the address
    /// lists. Runs from the core's work item, with RTNL and the instance
    /// lock held; may sleep. On error the core tries again later.
    fn set_rx_mode(_dev: &Device<Self>, _mode: &RxMode<'_>) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Transmit queue `txqueue` has been stopped for longer than the
    /// device's watchdog timeout without the device sending anything
    /// (`ndo_tx_timeout`): the device or its driver is hung. Called from
    /// the core's watchdog timer, in softirq context with every transmit
    /// queue's lock held: it must not sleep nor take a queue's lock, and
    /// typically schedules a reset in process context.
    fn tx_timeout(_dev: &Device<Self>, _txqueue: u32) {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }
}

/// Builds the C ops table of an [`Operations`] implementation.
pub(super) struct Adapter<T: Operations>(PhantomData<T>);

impl<T: Operations> Adapter<T> {
    const OPS: bindings::net_device_ops = bindings::net_device_ops {
        ndo_open: Some(Self::open),
        ndo_stop: Some(Self::stop),
        ndo_start_xmit: Some(Self::start_xmit),
        ndo_get_stats64: if T::HAS_GET_STATS64 {
            Some(Self::get_stats64)
        } else {
            None
        },
        ndo_change_mtu: if T::HAS_CHANGE_MTU {
            Some(Self::change_mtu)
        } else {
            None
        },
        ndo_set_rx_mode_async: if T::HAS_SET_RX_MODE {
            Some(Self::set_rx_mode)
        } else {
            None
        },
        ndo_tx_timeout: if T::HAS_TX_TIMEOUT {
            Some(Self::tx_timeout)
        } else {
            None
        },
        ndo_set_mac_address: Some(bindings::eth_mac_addr),
        ndo_validate_addr: Some(bindings::eth_validate_addr),
        // SAFETY: all-zero is a valid ops table: every op absent.
        ..unsafe { core::mem::zeroed() }
    };

    /// The table, in read-only data.
    pub(super) const OPS_REF: &'static bindings::net_device_ops = &Self::OPS;

    /// # Safety
    ///
    /// `dev` is a device registered by [`Registration::new`](super::Registration::new) for `T`.
    unsafe fn dev<'a>(dev: *mut bindings::net_device) -> &'a Device<T> {
        // SAFETY: per the caller.
        unsafe { Device::from_raw(dev) }
    }

    /// # Safety
    ///
    /// As for `dev`, and the caller holds the device's instance lock for
    /// `'a`.
    unsafe fn locked<'a>(dev: *mut bindings::net_device) -> &'a LockedDevice<T> {
        // SAFETY: per the caller.
        unsafe { LockedDevice::from_device(Device::from_raw(dev)) }
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, under its
    /// instance lock (`request_ops_lock`, set by [`Registration::new`](super::Registration::new)).
    unsafe extern "C" fn open(dev: *mut bindings::net_device) -> c_int {
        // SAFETY: per this function's contract.
        from_result(|| T::open(unsafe { Self::locked(dev) }).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn stop(dev: *mut bindings::net_device) -> c_int {
        // SAFETY: per this function's contract.
        from_result(|| T::stop(unsafe { Self::locked(dev) }).map(|()| 0))
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with a buffer
    /// the driver now owns.
    unsafe extern "C" fn start_xmit(
        skb: *mut bindings::sk_buff,
        dev: *mut bindings::net_device,
    ) -> bindings::netdev_tx_t {
        // SAFETY: per this function's contract.
        let (dev, skb) = unsafe { (Self::dev(dev), SkBuff::from_raw(skb)) };
        let passed = skb.as_raw();
        let idx = skb.queue_mapping();
        // The core capped the mapping below the queues in use when it
        // picked the queue (`netdev_cap_txqueue`).
        let Some(raw) = dev.tx_queue(idx).and_then(NonNull::new) else {
            crate::warn_on!(true);
            skb.drop_reason(DropReason::DevReady);
            return bindings::netdev_tx_NETDEV_TX_OK;
        };
        // INVARIANT: the core called `ndo_start_xmit` for the queue of the
        // packet's mapping, with that queue's xmit lock held and bottom
        // halves (from netpoll, hard IRQs too) off (`HARD_TX_LOCK`, or
        // `HARD_TX_TRYLOCK` in netpoll; the device is not `LLTX`), for the
        // call.
        let mut txq = TxQueue {
            raw,
            idx,
            _lock: PhantomData,
            _not_send: NotThreadSafe,
        };
        match T::start_xmit(dev, &mut txq, skb) {
            Ok(()) => bindings::netdev_tx_NETDEV_TX_OK,
            // The stack keeps the buffer it passed in and retries it: given
            // back, not freed. A buffer at its address is that one or, if
            // the driver freed it and got another there, a valid one the
            // driver owns: either way the stack gets a buffer it owns.
            Err(Busy(skb)) if skb.as_raw() == passed => {
                let _ = skb.into_raw();
                bindings::netdev_tx_NETDEV_TX_BUSY
            }
            // Another buffer: the driver took the one passed in (sent, kept
            // or freed it), which the stack must not retry. The one
            // returned is the driver's to drop.
            Err(Busy(other)) => {
                crate::warn_on!(true);
                drop(other);
                bindings::netdev_tx_NETDEV_TX_OK
            }
        }
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with `stats`
    /// writable.
    unsafe extern "C" fn get_stats64(
        dev: *mut bindings::net_device,
        stats: *mut bindings::rtnl_link_stats64,
    ) {
        let mut s = Stats64::default();
        // SAFETY: per this function's contract.
        T::get_stats64(unsafe { Self::dev(dev) }, &mut s);
        // SAFETY: writable per this function's contract.
        let out = unsafe { &mut *stats };
        out.rx_packets = s.rx_packets;
        out.rx_bytes = s.rx_bytes;
        out.tx_packets = s.tx_packets;
        out.tx_bytes = s.tx_bytes;
        out.rx_dropped = s.rx_dropped;
        out.tx_dropped = s.tx_dropped;
        out.rx_errors = s.rx_errors;
        out.rx_missed_errors = s.rx_missed_errors;
        out.rx_fifo_errors = s.rx_fifo_errors;
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn change_mtu(dev: *mut bindings::net_device, mtu: c_int) -> c_int {
        // SAFETY: per this function's contract.
        let d = unsafe { Self::locked(dev) };
        from_result(|| {
            let mtu = u32::try_from(mtu).map_err(|_| EINVAL)?;
            T::change_mtu(d, mtu)?;
            // SAFETY: a live device; the core serialises MTU changes
            // (RTNL), and lockless readers use `READ_ONCE`, which this
            // pairs with as `WRITE_ONCE` does.
            unsafe { core::ptr::write_volatile(&raw mut (*dev).mtu, mtu) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, from its
    /// transmit watchdog (a timer: softirq, no instance lock).
    unsafe extern "C" fn tx_timeout(dev: *mut bindings::net_device, txqueue: c_uint) {
        // SAFETY: per this function's contract.
        T::tx_timeout(unsafe { Self::dev(dev) }, txqueue);
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with `uc` and
    /// `mc` the core's snapshots of the device's address lists, left alone
    /// during the call.
    unsafe extern "C" fn set_rx_mode(
        dev: *mut bindings::net_device,
        uc: *mut bindings::netdev_hw_addr_list,
        mc: *mut bindings::netdev_hw_addr_list,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let dev = unsafe { Self::dev(dev) };
        let mode = RxMode {
            dev,
            uc,
            mc,
            _lists: PhantomData,
        };
        from_result(|| T::set_rx_mode(dev, &mode).map(|()| 0))
    }
}
