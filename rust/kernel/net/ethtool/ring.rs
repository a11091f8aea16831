// SPDX-License-Identifier: GPL-2.0

//! Ring sizes and buffer layout (`ethtool -g` / `-G`).
//!
//! C header: [`include/linux/ethtool.h`](srctree/include/linux/ethtool.h);
//! the core's side: [`net/ethtool/rings.c`](srctree/net/ethtool/rings.c)

use super::{
    Adapter,
    Ops, //
};
use crate::{
    error::from_result,
    net::{
        driver::{
            Device,
            LockedDevice,
            UnregisteredDevice, //
        },
        netlink::request::ExtAck,
    },
    prelude::*,
};

/// Whether the device splits headers from payloads into separate buffers
/// (`enum ethtool_tcp_data_split`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpDataSplit {
    /// Not reported, or left to the driver.
    Unknown,
    /// Off.
    Disabled,
    /// On.
    Enabled,
}

impl TcpDataSplit {
    fn from_raw(v: u8) -> Self {
        match u32::from(v) {
            bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_DISABLED => Self::Disabled,
            bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_ENABLED => Self::Enabled,
            _ => Self::Unknown,
        }
    }

    fn as_raw(self) -> u8 {
        let v = match self {
            Self::Unknown => bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_UNKNOWN,
            Self::Disabled => bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_DISABLED,
            Self::Enabled => bindings::ethtool_tcp_data_split_ETHTOOL_TCP_DATA_SPLIT_ENABLED,
        };
        // CAST: the values are 0, 1 and 2.
        v as u8
    }
}

impl<T> UnregisteredDevice<T> {
    /// Sets the device's header split (`tcp-data-split`) to begin with, as
    /// user space would (`ethtool -G`), which may change it later through
    /// [`Ops::set_ringparam`]. A memory provider goes on a receive queue
    /// only with it [`TcpDataSplit::Enabled`]
    /// ([`MpParams::open_rxq`](crate::net::page_pool::MpParams::open_rxq)
    /// refuses otherwise, with `EINVAL`).
    pub fn set_tcp_data_split(&self, split: TcpDataSplit) {
        // SAFETY: not registered (type invariant of `UnregisteredDevice`):
        // no one reads the configuration concurrently. It is allocated with
        // the device (`dev->cfg`, which `cfg_pending` is until
        // registration).
        unsafe { (*(*self.raw()).cfg).hds_config = split.as_raw() };
    }
}

/// Ring sizes and buffer layout (`ethtool -g` / `-G`).
#[derive(Clone, Copy, Debug)]
pub struct RingParam {
    /// The most receive descriptors a ring may have.
    pub rx_max_pending: u32,
    /// The most transmit descriptors a ring may have.
    pub tx_max_pending: u32,
    /// Receive descriptors per ring.
    pub rx_pending: u32,
    /// Transmit descriptors per ring.
    pub tx_pending: u32,
    /// Header split.
    pub tcp_data_split: TcpDataSplit,
    /// Payload bytes below which a frame is not split.
    pub hds_thresh: u32,
    /// The highest `hds_thresh` the device takes.
    pub hds_thresh_max: u32,
}

/// The ring parameters beyond the ring sizes that a driver's
/// [`Ops::set_ringparam`] takes (`enum ethtool_supported_ring_param`): the
/// core refuses, with `EOPNOTSUPP`, a request that sets any other, and
/// shows `hds-thresh` only when it is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingParams(u32);

impl RingParams {
    /// None: only the ring sizes change.
    pub const NONE: Self = Self(0);
    /// `tcp-data-split` (`ETHTOOL_RING_USE_TCP_DATA_SPLIT`).
    pub const TCP_DATA_SPLIT: Self =
        Self(bindings::ethtool_supported_ring_param_ETHTOOL_RING_USE_TCP_DATA_SPLIT);
    /// `hds-thresh` (`ETHTOOL_RING_USE_HDS_THRS`): the core checks the
    /// value against [`RingParam::hds_thresh_max`].
    pub const HDS_THRESH: Self =
        Self(bindings::ethtool_supported_ring_param_ETHTOOL_RING_USE_HDS_THRS);

    /// Both `self`'s parameters and `other`'s.
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl<T: Ops> Adapter<T> {
    /// `supported_ring_params`: the driver's. Parameters without
    /// `set_ringparam` would be refused by the core anyway; declaring them
    /// is a driver bug.
    pub(super) const fn supported_ring_params() -> u32 {
        assert!(
            T::HAS_SET_RINGPARAM || T::SUPPORTED_RING_PARAMS.0 == 0,
            "SUPPORTED_RING_PARAMS needs set_ringparam"
        );
        T::SUPPORTED_RING_PARAMS.0
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `ring` and `kring` writable.
    pub(super) unsafe extern "C" fn get_ringparam(
        dev: *mut bindings::net_device,
        ring: *mut bindings::ethtool_ringparam,
        kring: *mut bindings::kernel_ethtool_ringparam,
        _extack: *mut bindings::netlink_ext_ack,
    ) {
        // SAFETY: per this function's contract.
        let (dev, ring, kring) = unsafe { (Device::<T>::from_raw(dev), &mut *ring, &mut *kring) };
        let r = T::ringparam(dev);
        ring.rx_max_pending = r.rx_max_pending;
        ring.tx_max_pending = r.tx_max_pending;
        ring.rx_pending = r.rx_pending;
        ring.tx_pending = r.tx_pending;
        kring.tcp_data_split = r.tcp_data_split.as_raw();
        kring.hds_thresh = r.hds_thresh;
        kring.hds_thresh_max = r.hds_thresh_max;
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `ring`, `kring` and `extack` valid.
    pub(super) unsafe extern "C" fn set_ringparam(
        dev: *mut bindings::net_device,
        ring: *mut bindings::ethtool_ringparam,
        kring: *mut bindings::kernel_ethtool_ringparam,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: per this function's contract; the core runs the ethtool
        // ops of an ops-locked device, as `Registration::new` makes every
        // device, under its instance lock.
        let (dev, ring, kring) = unsafe {
            (
                LockedDevice::from_device(Device::<T>::from_raw(dev)),
                &*ring,
                &*kring,
            )
        };
        // SAFETY: null or the request's extended ACK, used only here.
        let extack = unsafe { ExtAck::from_raw(extack) };
        let r = RingParam {
            rx_max_pending: ring.rx_max_pending,
            tx_max_pending: ring.tx_max_pending,
            rx_pending: ring.rx_pending,
            tx_pending: ring.tx_pending,
            tcp_data_split: TcpDataSplit::from_raw(kring.tcp_data_split),
            hds_thresh: kring.hds_thresh,
            hds_thresh_max: kring.hds_thresh_max,
        };
        from_result(|| T::set_ringparam(dev, &r, &extack).map(|()| 0))
    }
}
