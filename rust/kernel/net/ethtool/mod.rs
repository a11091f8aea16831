// SPDX-License-Identifier: GPL-2.0

//! ethtool operations of a network driver (`struct ethtool_ops`).
//!
//! A driver implements [`Ops`] for its per-device data and installs the
//! table before registering the device
//! ([`UnregisteredDevice::set_ethtool_ops`]).
//! The link state comes from the carrier (`ethtool_op_get_link`).
//!
//! The trait and the table are here; the types of each group of
//! operations, and the adapter's callbacks for them, are in a module of
//! their own, named after the core's file that calls them
//! (`net/ethtool/`): rings, coalescing, link modes, pause, channels, RSS,
//! flow steering (`rxnfc`) and statistics. Everything is used through
//! this module.
//!
//! C header: [`include/linux/ethtool.h`](srctree/include/linux/ethtool.h)

use crate::{
    net::{
        driver::{
            Device,
            LockedDevice,
            Operations,
            RtnlLockedDevice,
            UnregisteredDevice, //
        },
        netlink::request::ExtAck,
    },
    prelude::*,
};
use core::{
    marker::PhantomData,
    num::NonZeroU32, //
};

mod channels;
mod coalesce;
mod linkmodes;
mod pause;
mod ring;
mod rss;
mod rxnfc;
mod stats;

pub use channels::Channels;
pub use coalesce::{
    Coalesce,
    CoalesceParams, //
};
pub use linkmodes::{
    LinkModes,
    LinkSettings,
    Port, //
};
pub use pause::{
    PauseParam,
    PauseStats, //
};
pub use ring::{
    RingParam,
    RingParams,
    TcpDataSplit, //
};
pub use rss::{
    HashFields,
    HashFlow,
    RxfhSizes, //
};
pub use rxnfc::{
    FlowAction,
    FlowRule,
    FlowSpec,
    FlowType,
    MaskBits,
    Masked,
    RuleLocation,
    Tcpip4Spec,
    Tcpip6Spec, //
};

/// What `ethtool -i` shows.
pub struct DrvInfo<'a> {
    /// The driver's name.
    pub driver: &'a CStr,
    /// The device's bus address, e.g. its PCI name.
    pub bus_info: &'a CStr,
}

/// The ethtool operations of a driver.
#[vtable]
pub trait Ops: Operations {
    /// Driver and bus names (`get_drvinfo`).
    fn drvinfo(dev: &Device<Self>, f: &mut dyn FnMut(DrvInfo<'_>));

    /// Ring sizes and buffer layout (`get_ringparam`).
    fn ringparam(_dev: &Device<Self>) -> RingParam {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The ring parameters beyond the sizes that [`Ops::set_ringparam`]
    /// takes; none unless it is implemented (checked at build time).
    const SUPPORTED_RING_PARAMS: RingParams = RingParams::NONE;

    /// Applies new ring parameters (`set_ringparam`, `ethtool -G`): the
    /// core has merged the request into what [`Ops::ringparam`] reported,
    /// checked the sizes against the maxima, and refused one that sets a
    /// parameter outside [`Ops::SUPPORTED_RING_PARAMS`].
    fn set_ringparam(_dev: &LockedDevice<Self>, _ring: &RingParam, _extack: &ExtAck<'_>) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The number of receive rings RSS spreads over (`get_rx_ring_count`):
    /// never 0, since the core divides by it to spread the default
    /// indirection table (`ethtool -X dev default`).
    fn rx_ring_count(_dev: &Device<Self>) -> NonZeroU32 {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The sizes of the RSS indirection table and hash key
    /// (`get_rxfh_indir_size`, `get_rxfh_key_size`); the hash function is
    /// Toeplitz.
    fn rxfh_sizes(_dev: &Device<Self>) -> RxfhSizes {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Reads the RSS indirection table and key (`get_rxfh`) into buffers
    /// the core allocated with the sizes [`Ops::rxfh_sizes`] gave when it
    /// asked, before this call; either is empty when the core does not
    /// want it. A driver whose sizes change (with the queue count, say)
    /// fills what fits.
    fn rxfh(_dev: &Device<Self>, _indir: &mut [u32], _key: &mut [u8]) {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Changes the RSS indirection table, the key, or both (`set_rxfh`,
    /// default context, Toeplitz only). As in [`Ops::rxfh`], the slices
    /// have the sizes the core allocated with, which a driver whose sizes
    /// change checks against its own.
    fn set_rxfh(
        _dev: &Device<Self>,
        _indir: Option<&[u32]>,
        _key: Option<&[u8]>,
        _extack: &ExtAck<'_>,
    ) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The header fields RSS hashes the frames of `flow` by
    /// (`get_rxfh_fields`, `ethtool -n DEV rx-flow-hash`), in the default
    /// context.
    fn rxfh_fields(_dev: &Device<Self>, _flow: HashFlow) -> HashFields {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Makes RSS hash the frames of `flow` by `fields` (`set_rxfh_fields`,
    /// `ethtool -N DEV rx-flow-hash`), in the default context. Flow types
    /// outside [`HashFlow`] are refused with `EINVAL` before the driver
    /// sees them.
    fn set_rxfh_fields(
        _dev: &Device<Self>,
        _flow: HashFlow,
        _fields: HashFields,
        _extack: &ExtAck<'_>,
    ) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The coalescing parameters [`Ops::set_coalesce`] takes; at least
    /// one when it is implemented (checked at build time).
    const SUPPORTED_COALESCE: CoalesceParams = CoalesceParams::NONE;

    /// Interrupt coalescing as set (`get_coalesce`).
    fn coalesce(_dev: &Device<Self>) -> Coalesce {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Applies new coalescing parameters (`set_coalesce`, `ethtool -C`):
    /// the core has merged the request into what [`Ops::coalesce`]
    /// reported, and refused one that sets a parameter outside
    /// [`Ops::SUPPORTED_COALESCE`]. Values out of the device's range are
    /// the driver's to refuse, with a message in `extack`.
    fn set_coalesce(_dev: &Device<Self>, _c: &Coalesce, _extack: &ExtAck<'_>) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Flow control as the device does it (`get_pauseparam`).
    fn pauseparam(_dev: &Device<Self>) -> PauseParam {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Changes flow control (`set_pauseparam`, `ethtool -A`): with
    /// `autoneg`, the directions asked for are advertised to the link
    /// partner and the link's flow control is resolved from both sides'
    /// advertisements; without, they are used as they are.
    fn set_pauseparam(_dev: &Device<Self>, _pause: &PauseParam) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Pause frame counters (`get_pause_stats`).
    fn pause_stats(_dev: &Device<Self>) -> PauseStats {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The link's speed, duplex and modes (`get_link_ksettings`, `ethtool
    /// DEV`). Process context, under the instance lock (and RTNL, when
    /// the ioctl or another device's driver asks): may sleep.
    fn link_ksettings(_dev: &Device<Self>) -> Result<LinkSettings> {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The names of the driver's own counters (`ethtool -S`), in the
    /// order [`Ops::stats`] gives their values; at least one when it is
    /// implemented (checked at build time). A name is cut to 31 bytes.
    const STATS: &'static [&'static CStr] = &[];

    /// The values of the counters [`Ops::STATS`] names, one per entry of
    /// `values`, which has as many entries as there are names
    /// (`get_ethtool_stats`).
    fn stats(_dev: &Device<Self>, _values: &mut [u64]) {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Queue counts (`get_channels`).
    fn channels(_dev: &Device<Self>) -> Channels {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Changes the queue counts (`set_channels`, `ethtool -L`). The core
    /// checked `ch` against the maximums, and that no RSS table entry,
    /// flow steering rule or memory provider uses a queue that would go.
    ///
    /// Called with RTNL held as well as the instance lock (the adapter
    /// asks for it: changing the real queue counts needs it), where the
    /// other ops of an ops-locked device get the instance lock only.
    fn set_channels(_dev: &RtnlLockedDevice<Self>, _ch: &Channels) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The size of the flow steering rule table, and calls `f` with the
    /// location and contents of each rule in it, in location order
    /// (`ethtool -n`, through `get_rxnfc`).
    fn flow_rules(_dev: &Device<Self>, _f: &mut dyn FnMut(u32, &FlowRule)) -> u32 {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Adds or replaces a flow steering rule (`ethtool -N ... action`,
    /// through `set_rxnfc`); returns its location. A rule the device
    /// cannot apply (its flow type, a mask, the action) is refused with
    /// `EINVAL`.
    fn add_flow_rule(_dev: &Device<Self>, _rule: &FlowRule, _at: RuleLocation) -> Result<u32> {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Removes the rule at `location` (`ethtool -N ... delete`); `ENOENT`
    /// if there is none.
    fn del_flow_rule(_dev: &Device<Self>, _location: u32) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }
}

/// Copies `src` into the C string field `dst`, cut to fit with its NUL.
fn copy_str(dst: &mut [c_char], src: &CStr) {
    let Some(room) = dst.len().checked_sub(1) else {
        return;
    };
    let bytes = src.to_bytes();
    let n = bytes.len().min(room);
    for (d, s) in dst.iter_mut().zip(&bytes[..n]) {
        // CAST: a byte of a C string.
        *d = *s as c_char;
    }
    dst[n] = 0;
}

impl<T> UnregisteredDevice<T> {
    /// Gives the device the ethtool operations of `T` ([`Ops`]).
    pub fn set_ethtool_ops(&self)
    where
        T: Ops,
    {
        // SAFETY: not registered (type invariant of `UnregisteredDevice`):
        // no one reads the field concurrently.
        unsafe { (*self.raw()).ethtool_ops = Adapter::<T>::OPS_REF };
    }
}

/// Builds the C ethtool ops of an [`Ops`] implementation.
pub(crate) struct Adapter<T: Ops>(PhantomData<T>);

impl<T: Ops> Adapter<T> {
    const OPS: bindings::ethtool_ops = bindings::ethtool_ops {
        get_drvinfo: Some(Self::get_drvinfo),
        get_link: Some(bindings::ethtool_op_get_link),
        get_ringparam: if T::HAS_RINGPARAM {
            Some(Self::get_ringparam)
        } else {
            None
        },
        set_ringparam: if T::HAS_SET_RINGPARAM {
            Some(Self::set_ringparam)
        } else {
            None
        },
        supported_ring_params: Self::supported_ring_params(),
        get_rx_ring_count: if T::HAS_RX_RING_COUNT {
            Some(Self::get_rx_ring_count)
        } else {
            None
        },
        get_rxfh_indir_size: if T::HAS_RXFH_SIZES {
            Some(Self::get_rxfh_indir_size)
        } else {
            None
        },
        get_rxfh_key_size: if T::HAS_RXFH_SIZES {
            Some(Self::get_rxfh_key_size)
        } else {
            None
        },
        get_rxfh: if T::HAS_RXFH {
            Some(Self::get_rxfh)
        } else {
            None
        },
        set_rxfh: if T::HAS_SET_RXFH {
            Some(Self::set_rxfh)
        } else {
            None
        },
        get_rxfh_fields: if T::HAS_RXFH_FIELDS {
            Some(Self::get_rxfh_fields)
        } else {
            None
        },
        set_rxfh_fields: if T::HAS_SET_RXFH_FIELDS {
            Some(Self::set_rxfh_fields)
        } else {
            None
        },
        get_coalesce: if T::HAS_COALESCE {
            Some(Self::get_coalesce)
        } else {
            None
        },
        set_coalesce: if T::HAS_SET_COALESCE {
            Some(Self::set_coalesce)
        } else {
            None
        },
        supported_coalesce_params: Self::supported_coalesce(),
        get_pauseparam: if T::HAS_PAUSEPARAM {
            Some(Self::get_pauseparam)
        } else {
            None
        },
        set_pauseparam: if T::HAS_SET_PAUSEPARAM {
            Some(Self::set_pauseparam)
        } else {
            None
        },
        get_pause_stats: if T::HAS_PAUSE_STATS {
            Some(Self::get_pause_stats)
        } else {
            None
        },
        get_link_ksettings: if T::HAS_LINK_KSETTINGS {
            Some(Self::get_link_ksettings)
        } else {
            None
        },
        get_sset_count: if Self::has_stats() {
            Some(Self::get_sset_count)
        } else {
            None
        },
        get_strings: if Self::has_stats() {
            Some(Self::get_strings)
        } else {
            None
        },
        get_ethtool_stats: if Self::has_stats() {
            Some(Self::get_ethtool_stats)
        } else {
            None
        },
        // Changing the real queue counts (`netif_set_real_num_queues`)
        // takes RTNL, which the core holds for ops-locked devices only
        // where asked.
        op_needs_rtnl: if T::HAS_SET_CHANNELS {
            bindings::ETHTOOL_OP_NEEDS_RTNL_SCHANNELS
        } else {
            0
        },
        get_channels: if T::HAS_CHANNELS {
            Some(Self::get_channels)
        } else {
            None
        },
        set_channels: if T::HAS_SET_CHANNELS {
            Some(Self::set_channels)
        } else {
            None
        },
        get_rxnfc: if T::HAS_FLOW_RULES {
            Some(Self::get_rxnfc)
        } else {
            None
        },
        set_rxnfc: if T::HAS_ADD_FLOW_RULE && T::HAS_DEL_FLOW_RULE {
            Some(Self::set_rxnfc)
        } else {
            None
        },
        // SAFETY: all-zero is valid for the remaining fields: no op, no
        // capability.
        ..unsafe { core::mem::zeroed() }
    };

    /// The table, in read-only data.
    pub(crate) const OPS_REF: &'static bindings::ethtool_ops = &Self::OPS;

    /// # Safety
    ///
    /// Called by the ethtool core for a device registered for `T`, with
    /// `info` writable.
    unsafe extern "C" fn get_drvinfo(
        dev: *mut bindings::net_device,
        info: *mut bindings::ethtool_drvinfo,
    ) {
        // SAFETY: per this function's contract.
        let (dev, info) = unsafe { (Device::<T>::from_raw(dev), &mut *info) };
        T::drvinfo(dev, &mut |d| {
            copy_str(&mut info.driver, d.driver);
            copy_str(&mut info.bus_info, d.bus_info);
        });
    }
}
