// SPDX-License-Identifier: GPL-2.0

//! ethtool operations of a network driver (`struct ethtool_ops`).
//!
//! A driver implements [`Ops`] for its per-device data and installs the
//! table before registering the device
//! ([`UnregisteredDevice::set_ethtool_ops`](super::driver::UnregisteredDevice::set_ethtool_ops)).
//! The link state comes from the carrier (`ethtool_op_get_link`).
//!
//! C header: [`include/linux/ethtool.h`](srctree/include/linux/ethtool.h)

use crate::{
    error::from_result,
    net::{
        driver::{
            Device,
            LockedDevice,
            Operations,
            RtnlLockedDevice, //
        },
        netlink::request::ExtAck,
    },
    prelude::*,
};
use core::{
    marker::PhantomData,
    net::{
        IpAddr,
        Ipv4Addr,
        Ipv6Addr, //
    },
};

/// What `ethtool -i` shows.
pub struct DrvInfo<'a> {
    /// The driver's name.
    pub driver: &'a CStr,
    /// The device's bus address, e.g. its PCI name.
    pub bus_info: &'a CStr,
}

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

/// Interrupt coalescing (`ethtool -c` / `-C`): how long the device holds
/// back an interrupt for received frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coalesce {
    /// The shortest interval between receive interrupts, in µs; 0 for
    /// none (`rx-usecs`).
    pub rx_usecs: u32,
    /// The device or driver adapts the interval to the load
    /// (`adaptive-rx`).
    pub use_adaptive_rx: bool,
}

/// The coalescing parameters a driver takes (`ETHTOOL_COALESCE_*`): the
/// core refuses, with `EOPNOTSUPP`, a request that sets any other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoalesceParams(u32);

impl CoalesceParams {
    /// None.
    pub const NONE: Self = Self(0);
    // The values are `BIT(0)` and `BIT(9)` of `include/linux/ethtool.h`,
    // which bindgen does not evaluate.
    /// `rx-usecs` (`ETHTOOL_COALESCE_RX_USECS`).
    pub const RX_USECS: Self = Self(1 << 0);
    /// `adaptive-rx` (`ETHTOOL_COALESCE_USE_ADAPTIVE_RX`).
    pub const USE_ADAPTIVE_RX: Self = Self(1 << 9);

    /// Both `self`'s parameters and `other`'s.
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// Link modes, as bits of ethtool's link mode maps: those of a gigabit
/// copper port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkModes(u64);

impl LinkModes {
    /// No mode.
    pub const NONE: Self = Self(0);
    /// 10BASE-T, half duplex.
    pub const BASE_T_10_HALF: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_10baseT_Half_BIT);
    /// 10BASE-T, full duplex.
    pub const BASE_T_10_FULL: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_10baseT_Full_BIT);
    /// 100BASE-TX, half duplex.
    pub const BASE_T_100_HALF: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_100baseT_Half_BIT);
    /// 100BASE-TX, full duplex.
    pub const BASE_T_100_FULL: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_100baseT_Full_BIT);
    /// 1000BASE-T, half duplex.
    pub const BASE_T_1000_HALF: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_1000baseT_Half_BIT);
    /// 1000BASE-T, full duplex.
    pub const BASE_T_1000_FULL: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_1000baseT_Full_BIT);
    /// Autonegotiation.
    pub const AUTONEG: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_Autoneg_BIT);
    /// A twisted pair port.
    pub const TP: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_TP_BIT);
    /// Symmetric pause frames.
    pub const PAUSE: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_Pause_BIT);
    /// Asymmetric pause frames.
    pub const ASYM_PAUSE: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_Asym_Pause_BIT);

    /// The mode of `ETHTOOL_LINK_MODE_*_BIT` `bit`, below 64.
    const fn bit(bit: bindings::ethtool_link_mode_bit_indices) -> Self {
        Self(1 << bit)
    }

    /// Both sets.
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether every mode of `other` is in the set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Sets the set's bits in the link mode map `map`, leaving the others.
    fn write(self, map: &mut [c_ulong]) {
        let word = c_ulong::BITS;
        for bit in 0..u64::BITS {
            if self.0 & (1 << bit) != 0 {
                // CAST: u32 to usize is lossless on Linux.
                if let Some(w) = map.get_mut((bit / word) as usize) {
                    *w |= 1 << (bit % word);
                }
            }
        }
    }
}

/// The port's connector (`ethtool DEV`'s "Port").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Port {
    /// Twisted pair.
    TwistedPair,
    /// Anything else.
    Other,
}

/// The link as `ethtool DEV` shows it (`get_link_ksettings`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSettings {
    /// Speed in Mb/s; `None` without a link.
    pub speed: Option<u32>,
    /// Full duplex or not; `None` without a link.
    pub full_duplex: Option<bool>,
    /// The connector.
    pub port: Port,
    /// The PHY's address on its management bus.
    pub phy_address: u8,
    /// Speed and duplex are autonegotiated.
    pub autoneg: bool,
    /// The modes the port has.
    pub supported: LinkModes,
    /// The modes it advertises.
    pub advertising: LinkModes,
    /// The modes the link partner advertised.
    pub lp_advertising: LinkModes,
}

/// Link-level flow control (`ethtool -a`).
#[derive(Clone, Copy, Debug, Default)]
pub struct PauseParam {
    /// Pause use is negotiated with the link partner.
    pub autoneg: bool,
    /// Received pause frames stop transmission.
    pub rx_pause: bool,
    /// The device sends pause frames when its receive buffer fills.
    pub tx_pause: bool,
}

/// IEEE 802.3x pause frame counters (`ethtool -I -a`); a counter the
/// device does not keep is `None` and goes unreported.
#[derive(Clone, Copy, Debug, Default)]
pub struct PauseStats {
    /// Pause frames sent (aPAUSEMACCtrlFramesTransmitted).
    pub tx_pause_frames: Option<u64>,
    /// Pause frames received (aPAUSEMACCtrlFramesReceived).
    pub rx_pause_frames: Option<u64>,
}

/// Queue counts (`ethtool -l` / `-L`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Channels {
    /// The most queue pairs.
    pub max_combined: u32,
    /// The most other (non-queue) interrupt vectors.
    pub max_other: u32,
    /// Queue pairs in use.
    pub combined_count: u32,
    /// Other vectors in use.
    pub other_count: u32,
}

/// The protocol a flow steering rule matches (`flow_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowType {
    /// TCP over IPv4 (`tcp4`).
    Tcp4,
    /// TCP over IPv6 (`tcp6`).
    Tcp6,
}

/// A class of frames the RSS hash treats alike (the `flow_type` of
/// `ethtool -n|-N DEV rx-flow-hash`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashFlow {
    /// TCP over IPv4 (`tcp4`).
    Tcp4,
    /// UDP over IPv4 (`udp4`).
    Udp4,
    /// Any other IPv4 frame: SCTP, AH, ESP or the rest (`sctp4`, `ah4`,
    /// `esp4`, `ip4`).
    OtherIp4,
    /// TCP over IPv6 (`tcp6`).
    Tcp6,
    /// UDP over IPv6 (`udp6`).
    Udp6,
    /// Any other IPv6 frame (`sctp6`, `ah6`, `esp6`, `ip6`).
    OtherIp6,
}

impl HashFlow {
    /// The class of a C flow type; `None` for one without IP (`ether`) or
    /// beyond plain IP (GTP).
    fn from_raw(flow_type: u32) -> Option<Self> {
        Some(match flow_type {
            bindings::TCP_V4_FLOW => Self::Tcp4,
            bindings::UDP_V4_FLOW => Self::Udp4,
            bindings::SCTP_V4_FLOW
            | bindings::AH_ESP_V4_FLOW
            | bindings::AH_V4_FLOW
            | bindings::ESP_V4_FLOW
            | bindings::IPV4_FLOW => Self::OtherIp4,
            bindings::TCP_V6_FLOW => Self::Tcp6,
            bindings::UDP_V6_FLOW => Self::Udp6,
            bindings::SCTP_V6_FLOW
            | bindings::AH_ESP_V6_FLOW
            | bindings::AH_V6_FLOW
            | bindings::ESP_V6_FLOW
            | bindings::IPV6_FLOW => Self::OtherIp6,
            _ => return None,
        })
    }
}

/// The header fields a flow hash covers (`RXH_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashFields(u32);

impl HashFields {
    /// No field: the frames are not hashed.
    pub const NONE: Self = Self(0);
    /// The source address (`s`).
    pub const IP_SRC: Self = Self(bindings::RXH_IP_SRC);
    /// The destination address (`d`).
    pub const IP_DST: Self = Self(bindings::RXH_IP_DST);
    /// The first two bytes of the L4 header, the source port (`f`).
    pub const L4_B_0_1: Self = Self(bindings::RXH_L4_B_0_1);
    /// Bytes 2 and 3 of the L4 header, the destination port (`n`).
    pub const L4_B_2_3: Self = Self(bindings::RXH_L4_B_2_3);
    /// Both addresses (`sd`).
    pub const ADDRS: Self = Self(bindings::RXH_IP_SRC | bindings::RXH_IP_DST);
    /// Both addresses and both ports (`sdfn`).
    pub const ADDRS_PORTS: Self = Self(Self::ADDRS.0 | Self::L4_B_0_1.0 | Self::L4_B_2_3.0);

    /// The `RXH_*` bits.
    pub fn bits(self) -> u32 {
        self.0
    }
}

/// A flow steering rule (`ethtool -N DEV flow-type tcp4|tcp6 ... action
/// N`): the fields given must match exactly, the others are wildcards.
/// Only exact or fully wildcarded fields are expressed; the rest (masks of
/// some bits, TOS, the `FLOW_EXT` fields, RSS contexts, drop actions) is
/// refused with `EINVAL` before the driver sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowRule {
    /// The protocol; the addresses are of its family.
    pub flow_type: FlowType,
    /// The sender's address.
    pub src_ip: Option<IpAddr>,
    /// The receiver's (our) address.
    pub dst_ip: Option<IpAddr>,
    /// The sender's port.
    pub src_port: Option<u16>,
    /// The receiver's (our) port.
    pub dst_port: Option<u16>,
    /// The receive queue matching frames go to.
    pub queue: u32,
}

/// `u32` fields as C keeps them: big endian in memory.
fn be32(v: u32) -> u32 {
    u32::from_be(v)
}

/// An exact-or-wildcard field: the value if the mask is all ones, `None`
/// if zero, an error otherwise.
fn field<T: PartialEq + Copy>(val: T, mask: T, zero: T, ones: T) -> Result<Option<T>> {
    if mask == ones {
        Ok(Some(val))
    } else if mask == zero {
        Ok(None)
    } else {
        Err(EINVAL)
    }
}

fn ip6(words: &[u32; 4]) -> Ipv6Addr {
    let mut b = [0u8; 16];
    for (d, w) in b.chunks_exact_mut(4).zip(words) {
        d.copy_from_slice(&w.to_ne_bytes());
    }
    Ipv6Addr::from(b)
}

fn ip6_words(a: &Ipv6Addr) -> [u32; 4] {
    let o = a.octets();
    let mut w = [0u32; 4];
    for (d, s) in w.iter_mut().zip(o.chunks_exact(4)) {
        *d = u32::from_ne_bytes([s[0], s[1], s[2], s[3]]);
    }
    w
}

impl FlowRule {
    /// The rule of a C flow spec.
    fn from_raw(fs: &bindings::ethtool_rx_flow_spec) -> Result<Self> {
        if fs.flow_type & (bindings::FLOW_EXT | bindings::FLOW_MAC_EXT | bindings::FLOW_RSS) != 0 {
            return Err(EINVAL);
        }
        // CAST: the queue is the low 32 bits of the cookie; a VF number or
        // the drop action sets the high ones.
        let queue = fs.ring_cookie as u32;
        if fs.ring_cookie >> 32 != 0 {
            return Err(EINVAL);
        }
        let port = |v: u16, m: u16| field(u16::from_be(v), m, 0, !0);
        match fs.flow_type {
            bindings::TCP_V4_FLOW => {
                // SAFETY: the union holds the `tcp4` view for this type.
                let (h, m) = unsafe { (&fs.h_u.tcp_ip4_spec, &fs.m_u.tcp_ip4_spec) };
                if m.tos != 0 {
                    return Err(EINVAL);
                }
                let ip = |v: u32, m: u32| {
                    field(be32(v), m, 0, !0).map(|a| a.map(|a| IpAddr::V4(Ipv4Addr::from(a))))
                };
                Ok(Self {
                    flow_type: FlowType::Tcp4,
                    src_ip: ip(h.ip4src, m.ip4src)?,
                    dst_ip: ip(h.ip4dst, m.ip4dst)?,
                    src_port: port(h.psrc, m.psrc)?,
                    dst_port: port(h.pdst, m.pdst)?,
                    queue,
                })
            }
            bindings::TCP_V6_FLOW => {
                // SAFETY: the union holds the `tcp6` view for this type.
                let (h, m) = unsafe { (&fs.h_u.tcp_ip6_spec, &fs.m_u.tcp_ip6_spec) };
                if m.tclass != 0 {
                    return Err(EINVAL);
                }
                let ip = |v: &[u32; 4], m: &[u32; 4]| {
                    field(*v, *m, [0; 4], [!0; 4]).map(|a| a.map(|a| IpAddr::V6(ip6(&a))))
                };
                Ok(Self {
                    flow_type: FlowType::Tcp6,
                    src_ip: ip(&h.ip6src, &m.ip6src)?,
                    dst_ip: ip(&h.ip6dst, &m.ip6dst)?,
                    src_port: port(h.psrc, m.psrc)?,
                    dst_port: port(h.pdst, m.pdst)?,
                    queue,
                })
            }
            _ => Err(EINVAL),
        }
    }

    /// Fills in the C flow spec of the rule at `location`.
    fn write_raw(&self, location: u32, fs: &mut bindings::ethtool_rx_flow_spec) {
        *fs = bindings::ethtool_rx_flow_spec::default();
        fs.location = location;
        fs.ring_cookie = u64::from(self.queue);
        let port = |p: Option<u16>| p.map_or((0, 0), |p| (p.to_be(), !0));
        let (ps, pm) = port(self.src_port);
        let (pd, pdm) = port(self.dst_port);
        match self.flow_type {
            FlowType::Tcp4 => {
                fs.flow_type = bindings::TCP_V4_FLOW;
                let ip = |a: Option<IpAddr>| match a {
                    Some(IpAddr::V4(a)) => (u32::from(a).to_be(), !0),
                    _ => (0, 0),
                };
                let ((s, sm), (d, dm)) = (ip(self.src_ip), ip(self.dst_ip));
                // SAFETY: writing plain data into a union view.
                let (h, m) = unsafe { (&mut fs.h_u.tcp_ip4_spec, &mut fs.m_u.tcp_ip4_spec) };
                (h.ip4src, m.ip4src, h.ip4dst, m.ip4dst) = (s, sm, d, dm);
                (h.psrc, m.psrc, h.pdst, m.pdst) = (ps, pm, pd, pdm);
            }
            FlowType::Tcp6 => {
                fs.flow_type = bindings::TCP_V6_FLOW;
                let ip = |a: Option<IpAddr>| match a {
                    Some(IpAddr::V6(a)) => (ip6_words(&a), [!0; 4]),
                    _ => ([0; 4], [0; 4]),
                };
                let ((s, sm), (d, dm)) = (ip(self.src_ip), ip(self.dst_ip));
                // SAFETY: as above.
                let (h, m) = unsafe { (&mut fs.h_u.tcp_ip6_spec, &mut fs.m_u.tcp_ip6_spec) };
                (h.ip6src, m.ip6src, h.ip6dst, m.ip6dst) = (s, sm, d, dm);
                (h.psrc, m.psrc, h.pdst, m.pdst) = (ps, pm, pd, pdm);
            }
        }
    }

    /// Whether every field of the flow is given (a full four-tuple).
    pub fn is_full(&self) -> bool {
        self.src_ip.is_some()
            && self.dst_ip.is_some()
            && self.src_port.is_some()
            && self.dst_port.is_some()
    }

    /// Whether a TCP segment from `src`:`sport` to `dst`:`dport` matches.
    pub fn matches(&self, src: IpAddr, dst: IpAddr, sport: u16, dport: u16) -> bool {
        let family = matches!(
            (self.flow_type, src),
            (FlowType::Tcp4, IpAddr::V4(_)) | (FlowType::Tcp6, IpAddr::V6(_))
        );
        family
            && self.src_ip.is_none_or(|a| a == src)
            && self.dst_ip.is_none_or(|a| a == dst)
            && self.src_port.is_none_or(|p| p == sport)
            && self.dst_port.is_none_or(|p| p == dport)
    }
}

/// Where to put a new flow steering rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleLocation {
    /// At this index of the rule table.
    At(u32),
    /// Wherever the driver finds room (`RX_CLS_LOC_ANY`, `FIRST`, `LAST`).
    Any,
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

    /// Applies new ring parameters (`set_ringparam`): the core has merged
    /// the request into the current ones and checked them against the
    /// maxima. Implementing it lets user space set tcp-data-split and
    /// hds-thresh.
    fn set_ringparam(_dev: &LockedDevice<Self>, _ring: &RingParam, _extack: &ExtAck<'_>) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The number of receive rings RSS spreads over (`get_rx_ring_count`).
    fn rx_ring_count(_dev: &Device<Self>) -> u32 {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The sizes of the RSS indirection table and hash key
    /// (`get_rxfh_indir_size`, `get_rxfh_key_size`); the hash function is
    /// Toeplitz.
    fn rxfh_sizes(_dev: &Device<Self>) -> (u32, u32) {
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
    /// DEV`). Process context, under RTNL and the instance lock: may sleep.
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
    /// through `set_rxnfc`); returns its location.
    fn add_flow_rule(_dev: &Device<Self>, _rule: &FlowRule, _at: RuleLocation) -> Result<u32> {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Removes the rule at `location` (`ethtool -N ... delete`); `ENOENT`
    /// if there is none.
    fn del_flow_rule(_dev: &Device<Self>, _location: u32) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }
}

/// `ETH_RSS_HASH_TOP`: the Toeplitz hash function.
// CAST: bit 0.
const HASH_TOP: u8 = 1 << bindings::ETH_RSS_HASH_TOP_BIT;

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

/// The indirection table and key buffers of an RSS request, each empty
/// when its pointer is null.
///
/// Their lengths are the sizes the core says it allocated (`indir_size`,
/// `key_size`), never a second answer of [`Ops::rxfh_sizes`]: the core
/// asks the driver for its sizes before allocating, and a driver whose
/// sizes depend on its state may answer differently now. The core sets
/// both for every buffer it passes (the channel check's read of the
/// table too, since "ethtool: set indir_size when reading the table for
/// the channel check"); a non-null buffer with a zero size is empty here.
///
/// # Safety
///
/// `p` is valid; a non-null `indir` points to `indir_size` entries and a
/// non-null `key` to `key_size` bytes, used by no one else during `'a`.
unsafe fn rxfh_bufs<'a>(p: &bindings::ethtool_rxfh_param) -> (&'a mut [u32], &'a mut [u8]) {
    // CAST: u32 to usize is lossless on Linux.
    let (indir_len, key_len) = (p.indir_size as usize, p.key_size as usize);
    // SAFETY: per this function's contract: non-null, with that many
    // elements, ours alone for `'a`.
    unsafe {
        (
            if p.indir.is_null() {
                &mut []
            } else {
                core::slice::from_raw_parts_mut(p.indir, indir_len)
            },
            if p.key.is_null() {
                &mut []
            } else {
                core::slice::from_raw_parts_mut(p.key, key_len)
            },
        )
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
        supported_ring_params: if T::HAS_SET_RINGPARAM {
            bindings::ethtool_supported_ring_param_ETHTOOL_RING_USE_TCP_DATA_SPLIT
                | bindings::ethtool_supported_ring_param_ETHTOOL_RING_USE_HDS_THRS
        } else {
            0
        },
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

    /// `supported_coalesce_params`: the driver's, if it sets coalescing.
    /// The core refuses to register a device with `set_coalesce` and no
    /// parameter (`ethtool_check_ops`), and the netlink request reads the
    /// parameters before it merges: both ops or none.
    const fn supported_coalesce() -> u32 {
        assert!(
            !T::HAS_SET_COALESCE || (T::HAS_COALESCE && T::SUPPORTED_COALESCE.0 != 0),
            "set_coalesce needs coalesce and SUPPORTED_COALESCE"
        );
        if T::HAS_SET_COALESCE {
            T::SUPPORTED_COALESCE.0
        } else {
            0
        }
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `ks` writable, zeroed by the core.
    unsafe extern "C" fn get_link_ksettings(
        dev: *mut bindings::net_device,
        ks: *mut bindings::ethtool_link_ksettings,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, ks) = unsafe { (Device::<T>::from_raw(dev), &mut *ks) };
        let l = match T::link_ksettings(dev) {
            Ok(l) => l,
            Err(e) => return e.to_errno(),
        };
        // CAST: SPEED_UNKNOWN, -1, is all ones in the u32 field.
        ks.base.speed = l.speed.unwrap_or(bindings::SPEED_UNKNOWN as u32);
        // CAST: the DUPLEX_*, PORT_* and AUTONEG_* values fit a u8.
        ks.base.duplex = match l.full_duplex {
            Some(true) => bindings::DUPLEX_FULL,
            Some(false) => bindings::DUPLEX_HALF,
            None => bindings::DUPLEX_UNKNOWN,
        } as u8;
        ks.base.port = match l.port {
            Port::TwistedPair => bindings::PORT_TP,
            Port::Other => bindings::PORT_OTHER,
        } as u8;
        ks.base.phy_address = l.phy_address;
        ks.base.autoneg = if l.autoneg {
            bindings::AUTONEG_ENABLE
        } else {
            bindings::AUTONEG_DISABLE
        } as u8;
        l.supported.write(&mut ks.link_modes.supported);
        l.advertising.write(&mut ks.link_modes.advertising);
        l.lp_advertising.write(&mut ks.link_modes.lp_advertising);
        0
    }

    /// Whether the driver has counters of its own. The core warns about a
    /// driver that has `get_ethtool_stats` and no counter.
    const fn has_stats() -> bool {
        assert!(
            !T::HAS_STATS || !T::STATS.is_empty(),
            "stats needs at least one name in STATS"
        );
        T::HAS_STATS
    }

    /// The number of strings in `sset`: the counters' names for
    /// `ETH_SS_STATS`, none of the other sets.
    ///
    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_sset_count(_dev: *mut bindings::net_device, sset: c_int) -> c_int {
        match u32::try_from(sset) {
            Ok(bindings::ethtool_stringset_ETH_SS_STATS) => {
                c_int::try_from(T::STATS.len()).unwrap_or(c_int::MAX)
            }
            _ => EOPNOTSUPP.to_errno(),
        }
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `data` writable for as many
    /// `ETH_GSTRING_LEN`-byte strings as [`Self::get_sset_count`] gave for
    /// `stringset`.
    unsafe extern "C" fn get_strings(
        _dev: *mut bindings::net_device,
        stringset: u32,
        data: *mut u8,
    ) {
        if stringset != bindings::ethtool_stringset_ETH_SS_STATS || data.is_null() {
            return;
        }
        // CAST: 32.
        let len = bindings::ETH_GSTRING_LEN as usize;
        // SAFETY: per this function's contract: one string per name, the
        // count `get_sset_count` gave for this set, which is constant.
        let buf = unsafe { core::slice::from_raw_parts_mut(data, T::STATS.len() * len) };
        for (dst, name) in buf.chunks_exact_mut(len).zip(T::STATS) {
            let bytes = name.to_bytes();
            let n = bytes.len().min(len - 1);
            dst[..n].copy_from_slice(&bytes[..n]);
            dst[n..].fill(0);
        }
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `stats` valid and `data` writable for
    /// `stats.n_stats` values.
    unsafe extern "C" fn get_ethtool_stats(
        dev: *mut bindings::net_device,
        stats: *mut bindings::ethtool_stats,
        data: *mut u64,
    ) {
        if data.is_null() {
            return;
        }
        // SAFETY: per this function's contract.
        let (dev, n) = unsafe { (Device::<T>::from_raw(dev), (*stats).n_stats) };
        // CAST: u32 to usize is lossless on Linux.
        let n = (n as usize).min(T::STATS.len());
        // SAFETY: per this function's contract, `data` has `n_stats`
        // values, and no more than that are used.
        let values = unsafe { core::slice::from_raw_parts_mut(data, n) };
        T::stats(dev, values);
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `ec` writable.
    unsafe extern "C" fn get_coalesce(
        dev: *mut bindings::net_device,
        ec: *mut bindings::ethtool_coalesce,
        _kec: *mut bindings::kernel_ethtool_coalesce,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, ec) = unsafe { (Device::<T>::from_raw(dev), &mut *ec) };
        let c = T::coalesce(dev);
        ec.rx_coalesce_usecs = c.rx_usecs;
        ec.use_adaptive_rx_coalesce = u32::from(c.use_adaptive_rx);
        0
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `ec` valid and `extack` null or valid.
    unsafe extern "C" fn set_coalesce(
        dev: *mut bindings::net_device,
        ec: *mut bindings::ethtool_coalesce,
        _kec: *mut bindings::kernel_ethtool_coalesce,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, ec) = unsafe { (Device::<T>::from_raw(dev), &*ec) };
        // SAFETY: null or the request's extended ACK, used only here.
        let extack = unsafe { ExtAck::from_raw(extack) };
        let c = Coalesce {
            rx_usecs: ec.rx_coalesce_usecs,
            use_adaptive_rx: ec.use_adaptive_rx_coalesce != 0,
        };
        from_result(|| T::set_coalesce(dev, &c, &extack).map(|()| 0))
    }

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

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `ring` and `kring` writable.
    unsafe extern "C" fn get_ringparam(
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
    /// As for `get_drvinfo`, with `ring`, `kring` and `extack` valid.
    unsafe extern "C" fn set_ringparam(
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

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_rx_ring_count(dev: *mut bindings::net_device) -> u32 {
        // SAFETY: per this function's contract.
        T::rx_ring_count(unsafe { Device::<T>::from_raw(dev) })
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_rxfh_indir_size(dev: *mut bindings::net_device) -> u32 {
        // SAFETY: per this function's contract.
        T::rxfh_sizes(unsafe { Device::<T>::from_raw(dev) }).0
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`.
    unsafe extern "C" fn get_rxfh_key_size(dev: *mut bindings::net_device) -> u32 {
        // SAFETY: per this function's contract.
        T::rxfh_sizes(unsafe { Device::<T>::from_raw(dev) }).1
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `p` set up by the ethtool core.
    unsafe extern "C" fn get_rxfh(
        dev: *mut bindings::net_device,
        p: *mut bindings::ethtool_rxfh_param,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, p) = unsafe { (Device::<T>::from_raw(dev), &mut *p) };
        p.hfunc = HASH_TOP;
        // SAFETY: the core set up `p` with buffers of the sizes it says,
        // lent for this call; the slices do not outlive it.
        let (indir, key) = unsafe { rxfh_bufs(p) };
        T::rxfh(dev, indir, key);
        0
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `p` set up by the ethtool core and
    /// `extack` null or valid.
    unsafe extern "C" fn set_rxfh(
        dev: *mut bindings::net_device,
        p: *mut bindings::ethtool_rxfh_param,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, p) = unsafe { (Device::<T>::from_raw(dev), &mut *p) };
        // SAFETY: null or the request's extended ACK, used only here.
        let extack = unsafe { ExtAck::from_raw(extack) };
        from_result(|| {
            // 0 is ETH_RSS_HASH_NO_CHANGE.
            if p.hfunc != 0 && p.hfunc != HASH_TOP {
                extack.set_msg(c"only the Toeplitz hash is supported");
                return Err(EOPNOTSUPP);
            }
            // CAST: RXH_XFRM_NO_CHANGE is 0xff.
            let no_change = bindings::RXH_XFRM_NO_CHANGE as u8;
            if p.rss_context != 0 || (p.input_xfrm != 0 && p.input_xfrm != no_change) {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: as in `get_rxfh`.
            let (indir, key) = unsafe { rxfh_bufs(p) };
            let indir = (!indir.is_empty()).then_some(&*indir);
            let key = (!key.is_empty()).then_some(&*key);
            T::set_rxfh(dev, indir, key, &extack)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `f` valid.
    unsafe extern "C" fn get_rxfh_fields(
        dev: *mut bindings::net_device,
        f: *mut bindings::ethtool_rxfh_fields,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, f) = unsafe { (Device::<T>::from_raw(dev), &mut *f) };
        // Only the default context: `rxfh_per_ctx_fields` is not set.
        match HashFlow::from_raw(f.flow_type) {
            Some(flow) if f.rss_context == 0 => {
                f.data = T::rxfh_fields(dev, flow).bits();
                0
            }
            _ => EINVAL.to_errno(),
        }
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `f` valid and `extack` null or valid.
    unsafe extern "C" fn set_rxfh_fields(
        dev: *mut bindings::net_device,
        f: *const bindings::ethtool_rxfh_fields,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, f) = unsafe { (Device::<T>::from_raw(dev), &*f) };
        // SAFETY: null or the request's extended ACK, used only here.
        let extack = unsafe { ExtAck::from_raw(extack) };
        from_result(|| {
            let flow = HashFlow::from_raw(f.flow_type).ok_or(EINVAL)?;
            if f.rss_context != 0 {
                return Err(EINVAL);
            }
            T::set_rxfh_fields(dev, flow, HashFields(f.data), &extack)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the ethtool core for a device registered for `T`, with
    /// `info` valid and, for `ETHTOOL_GRXCLSRLALL`, `locs` room for
    /// `info.rule_cnt` entries.
    unsafe extern "C" fn get_rxnfc(
        dev: *mut bindings::net_device,
        info: *mut bindings::ethtool_rxnfc,
        locs: *mut u32,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, info) = unsafe { (Device::<T>::from_raw(dev), &mut *info) };
        from_result(|| {
            match info.cmd {
                bindings::ETHTOOL_GRXCLSRLCNT => {
                    let mut n = 0u32;
                    let max = T::flow_rules(dev, &mut |_, _| n += 1);
                    info.__bindgen_anon_1.rule_cnt = n;
                    // The driver picks a location for `RX_CLS_LOC_ANY`.
                    info.data = u64::from(max | bindings::RX_CLS_LOC_SPECIAL);
                }
                bindings::ETHTOOL_GRXCLSRULE => {
                    let want = info.fs.location;
                    let mut found = None;
                    T::flow_rules(dev, &mut |loc, r| {
                        if loc == want {
                            found = Some(*r);
                        }
                    });
                    found.ok_or(ENOENT)?.write_raw(want, &mut info.fs);
                }
                bindings::ETHTOOL_GRXCLSRLALL => {
                    // SAFETY: the core sized the union's count and `locs`.
                    let room = unsafe { info.__bindgen_anon_1.rule_cnt } as usize;
                    let (mut n, mut over) = (0usize, false);
                    let max = T::flow_rules(dev, &mut |loc, _| {
                        if n < room {
                            // SAFETY: `locs` has room for `room` entries.
                            unsafe { *locs.add(n) = loc };
                            n += 1;
                        } else {
                            over = true;
                        }
                    });
                    if over {
                        return Err(EMSGSIZE);
                    }
                    info.data = u64::from(max);
                    // CAST: at most `room`, a u32.
                    info.__bindgen_anon_1.rule_cnt = n as u32;
                }
                _ => return Err(EOPNOTSUPP),
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the ethtool core for a device registered for `T`, with
    /// `info` valid.
    unsafe extern "C" fn set_rxnfc(
        dev: *mut bindings::net_device,
        info: *mut bindings::ethtool_rxnfc,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, info) = unsafe { (Device::<T>::from_raw(dev), &mut *info) };
        from_result(|| {
            match info.cmd {
                bindings::ETHTOOL_SRXCLSRLINS => {
                    let rule = FlowRule::from_raw(&info.fs)?;
                    let at = match info.fs.location {
                        bindings::RX_CLS_LOC_ANY
                        | bindings::RX_CLS_LOC_FIRST
                        | bindings::RX_CLS_LOC_LAST => RuleLocation::Any,
                        l => RuleLocation::At(l),
                    };
                    info.fs.location = T::add_flow_rule(dev, &rule, at)?;
                }
                bindings::ETHTOOL_SRXCLSRLDEL => T::del_flow_rule(dev, info.fs.location)?,
                _ => return Err(EOPNOTSUPP),
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `pause` writable.
    unsafe extern "C" fn get_pauseparam(
        dev: *mut bindings::net_device,
        pause: *mut bindings::ethtool_pauseparam,
    ) {
        // SAFETY: per this function's contract.
        let (dev, pause) = unsafe { (Device::<T>::from_raw(dev), &mut *pause) };
        let p = T::pauseparam(dev);
        pause.autoneg = u32::from(p.autoneg);
        pause.rx_pause = u32::from(p.rx_pause);
        pause.tx_pause = u32::from(p.tx_pause);
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `pause` valid.
    unsafe extern "C" fn set_pauseparam(
        dev: *mut bindings::net_device,
        pause: *mut bindings::ethtool_pauseparam,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, pause) = unsafe { (Device::<T>::from_raw(dev), &*pause) };
        let p = PauseParam {
            autoneg: pause.autoneg != 0,
            rx_pause: pause.rx_pause != 0,
            tx_pause: pause.tx_pause != 0,
        };
        from_result(|| T::set_pauseparam(dev, &p).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `stats` writable.
    unsafe extern "C" fn get_pause_stats(
        dev: *mut bindings::net_device,
        stats: *mut bindings::ethtool_pause_stats,
    ) {
        // SAFETY: per this function's contract.
        let (dev, stats) = unsafe { (Device::<T>::from_raw(dev), &mut *stats) };
        let p = T::pause_stats(dev);
        // ETHTOOL_STAT_NOT_SET: not reported.
        let unset = u64::MAX;
        // The counters' `struct_group` (`stats`), written whole.
        stats.__bindgen_anon_1 = bindings::ethtool_pause_stats__bindgen_ty_1 {
            stats: bindings::ethtool_pause_stats__bindgen_ty_1__bindgen_ty_2 {
                tx_pause_frames: p.tx_pause_frames.unwrap_or(unset),
                rx_pause_frames: p.rx_pause_frames.unwrap_or(unset),
                tx_pause_storm_events: unset,
            },
        };
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `ch` writable.
    unsafe extern "C" fn get_channels(
        dev: *mut bindings::net_device,
        ch: *mut bindings::ethtool_channels,
    ) {
        // SAFETY: per this function's contract.
        let (dev, ch) = unsafe { (Device::<T>::from_raw(dev), &mut *ch) };
        let c = T::channels(dev);
        ch.max_combined = c.max_combined;
        ch.max_other = c.max_other;
        ch.combined_count = c.combined_count;
        ch.other_count = c.other_count;
    }

    /// # Safety
    ///
    /// As for `get_drvinfo`, with `ch` valid.
    unsafe extern "C" fn set_channels(
        dev: *mut bindings::net_device,
        ch: *mut bindings::ethtool_channels,
    ) -> c_int {
        // SAFETY: per this function's contract; under the instance lock, as
        // in `set_ringparam`, and RTNL, which `op_needs_rtnl` asks the core
        // to take for this op.
        let (dev, ch) = unsafe {
            (
                RtnlLockedDevice::from_device(Device::<T>::from_raw(dev)),
                &*ch,
            )
        };
        let c = Channels {
            max_combined: ch.max_combined,
            max_other: ch.max_other,
            combined_count: ch.combined_count,
            other_count: ch.other_count,
        };
        from_result(|| T::set_channels(dev, &c).map(|()| 0))
    }
}

#[macros::kunit_tests(rust_kernel_ethtool)]
mod tests {
    use super::*;

    /// A request for the first `indir_size` entries of `indir` and
    /// `key_size` bytes of `key`, as the core sets one up.
    fn request(
        indir: &mut [u32],
        indir_size: u32,
        key: &mut [u8],
        key_size: u32,
    ) -> bindings::ethtool_rxfh_param {
        bindings::ethtool_rxfh_param {
            indir_size,
            indir: indir.as_mut_ptr(),
            key_size,
            key: key.as_mut_ptr(),
            ..Default::default()
        }
    }

    #[test]
    fn rss_buffers_have_the_sizes_the_core_allocated() {
        // The core allocated 8 entries and a 4-byte key (the driver's
        // sizes when it asked); one more of each is past its buffers.
        let (mut indir, mut key) = ([!0u32; 9], [!0u8; 5]);
        let p = request(&mut indir, 8, &mut key, 4);
        // SAFETY: `p` points into the arrays above, unused meanwhile.
        let (i, k) = unsafe { rxfh_bufs(&p) };
        assert_eq!((i.len(), k.len()), (8, 4));
        // A driver whose table has grown to 128 entries since fills what
        // fits, and nothing beyond.
        for (d, s) in i.iter_mut().zip(0..128) {
            *d = s;
        }
        k.fill(0);
        assert_eq!(indir[7], 7);
        assert_eq!((indir[8], key[3], key[4]), (!0, 0, !0));
    }

    #[test]
    fn link_modes_land_on_their_ethtool_bits() {
        let mut map = [0 as c_ulong; 2];
        LinkModes::BASE_T_10_HALF
            .with(LinkModes::BASE_T_1000_FULL)
            .with(LinkModes::ASYM_PAUSE)
            .write(&mut map);
        // ETHTOOL_LINK_MODE_10baseT_Half_BIT 0, 1000baseT_Full 5,
        // Asym_Pause 14 (uapi/linux/ethtool.h): word 0 on every word size.
        assert_eq!(map, [1 | 1 << 5 | 1 << 14, 0]);
        // Bits already there stay.
        LinkModes::TP.write(&mut map);
        assert_eq!(map[0], 1 | 1 << 5 | 1 << 7 | 1 << 14);
        assert!(LinkModes::PAUSE.with(LinkModes::TP).contains(LinkModes::TP));
        assert!(!LinkModes::TP.contains(LinkModes::PAUSE));
    }

    #[test]
    fn rss_buffers_are_empty_when_null_or_unsized() {
        let (mut indir, mut key) = ([0u32; 4], [0u8; 4]);
        // The table without its size (the channel check's read, before the
        // core said how large it is): nothing to write.
        let p = request(&mut indir, 0, &mut key, 4);
        // SAFETY: as above.
        let (i, k) = unsafe { rxfh_bufs(&p) };
        assert_eq!((i.len(), k.len()), (0, 4));
        let p = bindings::ethtool_rxfh_param {
            indir_size: 128,
            key_size: 40,
            ..Default::default()
        };
        // SAFETY: both pointers are null.
        let (i, k) = unsafe { rxfh_bufs(&p) };
        assert!(i.is_empty() && k.is_empty());
    }
}
