// SPDX-License-Identifier: GPL-2.0

//! Flow steering rules (`ethtool -n` / `-N ... flow-type`, the
//! `ETHTOOL_GRXCL*` and `ETHTOOL_SRXCL*` commands of `get_rxnfc` and
//! `set_rxnfc`).
//!
//! C header: [`include/linux/ethtool.h`](srctree/include/linux/ethtool.h);
//! the core's side: `ethtool_set_rxnfc` and `ethtool_get_rxnfc` in
//! [`net/ethtool/ioctl.c`](srctree/net/ethtool/ioctl.c)

use super::{
    Adapter,
    Ops, //
};
use crate::{
    error::from_result,
    net::driver::Device,
    prelude::*, //
};
use core::net::{
    Ipv4Addr,
    Ipv6Addr, //
};

/// The protocol a flow steering rule matches (`flow_type`), named as
/// `ethtool -N DEV flow-type` names it: TCP, UDP or SCTP over IPv4 or
/// IPv6, the flow types whose header fields are addresses and ports
/// (`struct ethtool_tcpip4_spec` and `struct ethtool_tcpip6_spec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowType {
    /// TCP over IPv4 (`tcp4`, `TCP_V4_FLOW`).
    Tcp4,
    /// UDP over IPv4 (`udp4`, `UDP_V4_FLOW`).
    Udp4,
    /// SCTP over IPv4 (`sctp4`, `SCTP_V4_FLOW`).
    Sctp4,
    /// TCP over IPv6 (`tcp6`, `TCP_V6_FLOW`).
    Tcp6,
    /// UDP over IPv6 (`udp6`, `UDP_V6_FLOW`).
    Udp6,
    /// SCTP over IPv6 (`sctp6`, `SCTP_V6_FLOW`).
    Sctp6,
}

impl FlowType {
    /// Whether the protocol runs over IPv6.
    pub const fn is_ipv6(self) -> bool {
        matches!(self, Self::Tcp6 | Self::Udp6 | Self::Sctp6)
    }

    /// The type of a C `flow_type` without its flags; `None` for the types
    /// not expressed here.
    fn from_raw(flow_type: u32) -> Option<Self> {
        Some(match flow_type {
            bindings::TCP_V4_FLOW => Self::Tcp4,
            bindings::UDP_V4_FLOW => Self::Udp4,
            bindings::SCTP_V4_FLOW => Self::Sctp4,
            bindings::TCP_V6_FLOW => Self::Tcp6,
            bindings::UDP_V6_FLOW => Self::Udp6,
            bindings::SCTP_V6_FLOW => Self::Sctp6,
            _ => return None,
        })
    }

    fn as_raw(self) -> u32 {
        match self {
            Self::Tcp4 => bindings::TCP_V4_FLOW,
            Self::Udp4 => bindings::UDP_V4_FLOW,
            Self::Sctp4 => bindings::SCTP_V4_FLOW,
            Self::Tcp6 => bindings::TCP_V6_FLOW,
            Self::Udp6 => bindings::UDP_V6_FLOW,
            Self::Sctp6 => bindings::SCTP_V6_FLOW,
        }
    }
}

/// A header field type a flow steering rule compares: a string of bits.
///
/// Implemented for the fields of [`Tcpip4Spec`] and [`Tcpip6Spec`]: `u8`,
/// `u16`, [`Ipv4Addr`] and [`Ipv6Addr`].
pub trait MaskBits: Copy + PartialEq {
    /// How many bits the type has.
    const BITS: u32;

    /// The value's bits, in the low [`Self::BITS`] bits.
    fn to_bits(self) -> u128;

    /// The value of the low [`Self::BITS`] bits of `bits`.
    fn from_bits(bits: u128) -> Self;
}

impl MaskBits for u8 {
    const BITS: u32 = u8::BITS;

    fn to_bits(self) -> u128 {
        self.into()
    }

    fn from_bits(bits: u128) -> Self {
        // CAST: the low 8 bits, as documented.
        bits as u8
    }
}

impl MaskBits for u16 {
    const BITS: u32 = u16::BITS;

    fn to_bits(self) -> u128 {
        self.into()
    }

    fn from_bits(bits: u128) -> Self {
        // CAST: the low 16 bits, as documented.
        bits as u16
    }
}

impl MaskBits for Ipv4Addr {
    const BITS: u32 = u32::BITS;

    fn to_bits(self) -> u128 {
        u32::from(self).into()
    }

    fn from_bits(bits: u128) -> Self {
        // CAST: the low 32 bits, as documented.
        Ipv4Addr::from(bits as u32)
    }
}

impl MaskBits for Ipv6Addr {
    const BITS: u32 = u128::BITS;

    fn to_bits(self) -> u128 {
        self.into()
    }

    fn from_bits(bits: u128) -> Self {
        bits.into()
    }
}

/// A header field of a flow steering rule and the bits of it that must
/// match (the `h_u` and `m_u` halves of `struct ethtool_rx_flow_spec`): a
/// frame matches where its field equals `value` in every bit set in
/// `mask`; the bits clear in `mask` are wildcards.
///
/// Addresses and ports are in host order here, their bits numbered as
/// [`MaskBits::to_bits`] gives them (a prefix mask of an address is its
/// high bits).
///
/// # Examples
///
/// ```
/// use core::net::Ipv4Addr;
/// use kernel::net::ethtool::Masked;
///
/// // 10.1.0.0/16.
/// let net = Masked {
///     value: Ipv4Addr::new(10, 1, 0, 0),
///     mask: Ipv4Addr::new(255, 255, 0, 0),
/// };
/// assert!(net.matches(Ipv4Addr::new(10, 1, 2, 3)));
/// assert!(!net.matches(Ipv4Addr::new(10, 2, 0, 0)));
/// // Neither whole nor left out.
/// assert_eq!(net.exact_or_any(), Err(EINVAL));
/// assert_eq!(Masked::exact(443u16).exact_or_any(), Ok(Some(443)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Masked<T> {
    /// The value the field is compared with.
    pub value: T,
    /// The bits compared.
    pub mask: T,
}

impl<T: MaskBits> Masked<T> {
    /// All ones, in the type's bits.
    const ONES: u128 = u128::MAX >> (u128::BITS - T::BITS);

    /// Any value: no bit compared.
    pub fn any() -> Self {
        Self {
            value: T::from_bits(0),
            mask: T::from_bits(0),
        }
    }

    /// Exactly `value`: every bit compared.
    pub fn exact(value: T) -> Self {
        Self {
            value,
            mask: T::from_bits(Self::ONES),
        }
    }

    /// Whether no bit is compared.
    pub fn is_any(&self) -> bool {
        self.mask.to_bits() == 0
    }

    /// Whether every bit is compared.
    pub fn is_exact(&self) -> bool {
        self.mask.to_bits() == Self::ONES
    }

    /// The field as a device that compares a field whole or not at all
    /// takes it: the value if every bit is compared, `None` if no bit is,
    /// and `EINVAL`, what ethtool drivers answer a mask they cannot
    /// express with, for anything between.
    pub fn exact_or_any(&self) -> Result<Option<T>> {
        if self.is_exact() {
            Ok(Some(self.value))
        } else if self.is_any() {
            Ok(None)
        } else {
            Err(EINVAL)
        }
    }

    /// Whether a frame whose field is `v` matches.
    pub fn matches(&self, v: T) -> bool {
        (v.to_bits() ^ self.value.to_bits()) & self.mask.to_bits() == 0
    }
}

/// The header fields an IPv4 flow steering rule compares (`struct
/// ethtool_tcpip4_spec`, the view of TCP, UDP and SCTP alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tcpip4Spec {
    /// The sender's address.
    pub src: Masked<Ipv4Addr>,
    /// The receiver's address.
    pub dst: Masked<Ipv4Addr>,
    /// The sender's port.
    pub src_port: Masked<u16>,
    /// The receiver's port.
    pub dst_port: Masked<u16>,
    /// The type of service byte.
    pub tos: Masked<u8>,
}

impl Tcpip4Spec {
    /// Every field a wildcard.
    pub fn any() -> Self {
        Self {
            src: Masked::any(),
            dst: Masked::any(),
            src_port: Masked::any(),
            dst_port: Masked::any(),
            tos: Masked::any(),
        }
    }

    fn from_raw(h: &bindings::ethtool_tcpip4_spec, m: &bindings::ethtool_tcpip4_spec) -> Self {
        let ip = |v: u32, m: u32| Masked {
            value: Ipv4Addr::from(u32::from_be(v)),
            mask: Ipv4Addr::from(u32::from_be(m)),
        };
        Self {
            src: ip(h.ip4src, m.ip4src),
            dst: ip(h.ip4dst, m.ip4dst),
            src_port: port(h.psrc, m.psrc),
            dst_port: port(h.pdst, m.pdst),
            tos: Masked {
                value: h.tos,
                mask: m.tos,
            },
        }
    }

    /// The C view's values and masks.
    fn to_raw(self) -> (bindings::ethtool_tcpip4_spec, bindings::ethtool_tcpip4_spec) {
        let ip = |a: Ipv4Addr| u32::from(a).to_be();
        (
            bindings::ethtool_tcpip4_spec {
                ip4src: ip(self.src.value),
                ip4dst: ip(self.dst.value),
                psrc: self.src_port.value.to_be(),
                pdst: self.dst_port.value.to_be(),
                tos: self.tos.value,
            },
            bindings::ethtool_tcpip4_spec {
                ip4src: ip(self.src.mask),
                ip4dst: ip(self.dst.mask),
                psrc: self.src_port.mask.to_be(),
                pdst: self.dst_port.mask.to_be(),
                tos: self.tos.mask,
            },
        )
    }
}

/// The header fields an IPv6 flow steering rule compares (`struct
/// ethtool_tcpip6_spec`, the view of TCP, UDP and SCTP alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tcpip6Spec {
    /// The sender's address.
    pub src: Masked<Ipv6Addr>,
    /// The receiver's address.
    pub dst: Masked<Ipv6Addr>,
    /// The sender's port.
    pub src_port: Masked<u16>,
    /// The receiver's port.
    pub dst_port: Masked<u16>,
    /// The traffic class.
    pub tclass: Masked<u8>,
}

impl Tcpip6Spec {
    /// Every field a wildcard.
    pub fn any() -> Self {
        Self {
            src: Masked::any(),
            dst: Masked::any(),
            src_port: Masked::any(),
            dst_port: Masked::any(),
            tclass: Masked::any(),
        }
    }

    fn from_raw(h: &bindings::ethtool_tcpip6_spec, m: &bindings::ethtool_tcpip6_spec) -> Self {
        let ip = |v: &[u32; 4], m: &[u32; 4]| Masked {
            value: ip6(v),
            mask: ip6(m),
        };
        Self {
            src: ip(&h.ip6src, &m.ip6src),
            dst: ip(&h.ip6dst, &m.ip6dst),
            src_port: port(h.psrc, m.psrc),
            dst_port: port(h.pdst, m.pdst),
            tclass: Masked {
                value: h.tclass,
                mask: m.tclass,
            },
        }
    }

    /// The C view's values and masks.
    fn to_raw(self) -> (bindings::ethtool_tcpip6_spec, bindings::ethtool_tcpip6_spec) {
        (
            bindings::ethtool_tcpip6_spec {
                ip6src: ip6_words(&self.src.value),
                ip6dst: ip6_words(&self.dst.value),
                psrc: self.src_port.value.to_be(),
                pdst: self.dst_port.value.to_be(),
                tclass: self.tclass.value,
            },
            bindings::ethtool_tcpip6_spec {
                ip6src: ip6_words(&self.src.mask),
                ip6dst: ip6_words(&self.dst.mask),
                psrc: self.src_port.mask.to_be(),
                pdst: self.dst_port.mask.to_be(),
                tclass: self.tclass.mask,
            },
        )
    }
}

/// A port field as C keeps it, big endian in memory, and its mask.
fn port(v: u16, m: u16) -> Masked<u16> {
    Masked {
        value: u16::from_be(v),
        mask: u16::from_be(m),
    }
}

/// An IPv6 address of its four big-endian words in memory.
fn ip6(words: &[u32; 4]) -> Ipv6Addr {
    let mut b = [0u8; 16];
    for (d, w) in b.chunks_exact_mut(4).zip(words) {
        d.copy_from_slice(&w.to_ne_bytes());
    }
    Ipv6Addr::from(b)
}

/// The words in memory of an IPv6 address.
fn ip6_words(a: &Ipv6Addr) -> [u32; 4] {
    let o = a.octets();
    let mut w = [0u32; 4];
    for (d, s) in w.iter_mut().zip(o.chunks_exact(4)) {
        *d = u32::from_ne_bytes([s[0], s[1], s[2], s[3]]);
    }
    w
}

/// What a flow steering rule matches: the protocol, and the header fields
/// of its family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowSpec {
    /// TCP over IPv4 (`tcp4`).
    Tcp4(Tcpip4Spec),
    /// UDP over IPv4 (`udp4`).
    Udp4(Tcpip4Spec),
    /// SCTP over IPv4 (`sctp4`).
    Sctp4(Tcpip4Spec),
    /// TCP over IPv6 (`tcp6`).
    Tcp6(Tcpip6Spec),
    /// UDP over IPv6 (`udp6`).
    Udp6(Tcpip6Spec),
    /// SCTP over IPv6 (`sctp6`).
    Sctp6(Tcpip6Spec),
}

impl FlowSpec {
    /// The protocol.
    pub fn flow_type(&self) -> FlowType {
        match self {
            Self::Tcp4(_) => FlowType::Tcp4,
            Self::Udp4(_) => FlowType::Udp4,
            Self::Sctp4(_) => FlowType::Sctp4,
            Self::Tcp6(_) => FlowType::Tcp6,
            Self::Udp6(_) => FlowType::Udp6,
            Self::Sctp6(_) => FlowType::Sctp6,
        }
    }
}

/// What becomes of the frames a flow steering rule matches
/// (`ring_cookie`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowAction {
    /// They go to this receive queue (`action N`).
    Queue(u32),
    /// They are dropped (`action -1`, `RX_CLS_FLOW_DISC`).
    Drop,
}

/// A flow steering rule (`ethtool -N DEV flow-type tcp4|udp4|sctp4|tcp6|
/// udp6|sctp6 ... action N`): the frames of the protocol whose header
/// fields match go where the action says.
///
/// The core refuses with `EINVAL`, before the driver sees it, what this
/// does not express: other flow types (`ether`, `ip4`, `ah4`, ...), the
/// `FLOW_EXT` and `FLOW_MAC_EXT` fields, RSS contexts, and actions that
/// name a virtual function or wake-on-LAN. A driver refuses what its
/// device cannot do with it (a partial mask, say: see
/// [`Masked::exact_or_any`]), with `EINVAL` as the C drivers do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowRule {
    /// The frames matched.
    pub spec: FlowSpec,
    /// What becomes of them.
    pub action: FlowAction,
}

impl FlowRule {
    /// The rule of a C flow spec.
    fn from_raw(fs: &bindings::ethtool_rx_flow_spec) -> Result<Self> {
        let flags = bindings::FLOW_EXT | bindings::FLOW_MAC_EXT | bindings::FLOW_RSS;
        if fs.flow_type & flags != 0 {
            return Err(EINVAL);
        }
        // CAST: RX_CLS_FLOW_DISC is all ones, -1 sign-extended.
        let action = if fs.ring_cookie == bindings::RX_CLS_FLOW_DISC as u64 {
            FlowAction::Drop
        } else if fs.ring_cookie >> 32 == 0 {
            // CAST: the queue is the low 32 bits of the cookie; a VF number
            // or the wake-on-LAN action sets the high ones.
            FlowAction::Queue(fs.ring_cookie as u32)
        } else {
            return Err(EINVAL);
        };
        let flow_type = FlowType::from_raw(fs.flow_type).ok_or(EINVAL)?;
        let v4 = || {
            // SAFETY: every view of the unions is plain integers, valid
            // for any bits, and the core initialised them whole (copied
            // from user space or zeroed).
            let (h, m) = unsafe { (&fs.h_u.tcp_ip4_spec, &fs.m_u.tcp_ip4_spec) };
            Tcpip4Spec::from_raw(h, m)
        };
        let v6 = || {
            // SAFETY: as above.
            let (h, m) = unsafe { (&fs.h_u.tcp_ip6_spec, &fs.m_u.tcp_ip6_spec) };
            Tcpip6Spec::from_raw(h, m)
        };
        // The TCP, UDP and SCTP views of each family are one C struct.
        let spec = match flow_type {
            FlowType::Tcp4 => FlowSpec::Tcp4(v4()),
            FlowType::Udp4 => FlowSpec::Udp4(v4()),
            FlowType::Sctp4 => FlowSpec::Sctp4(v4()),
            FlowType::Tcp6 => FlowSpec::Tcp6(v6()),
            FlowType::Udp6 => FlowSpec::Udp6(v6()),
            FlowType::Sctp6 => FlowSpec::Sctp6(v6()),
        };
        Ok(Self { spec, action })
    }

    /// Fills in the C flow spec of the rule at `location`.
    fn write_raw(&self, location: u32, fs: &mut bindings::ethtool_rx_flow_spec) {
        *fs = bindings::ethtool_rx_flow_spec::default();
        fs.location = location;
        fs.flow_type = self.spec.flow_type().as_raw();
        fs.ring_cookie = match self.action {
            FlowAction::Queue(q) => u64::from(q),
            // CAST: as in `from_raw`.
            FlowAction::Drop => bindings::RX_CLS_FLOW_DISC as u64,
        };
        match self.spec {
            FlowSpec::Tcp4(s) | FlowSpec::Udp4(s) | FlowSpec::Sctp4(s) => {
                (fs.h_u.tcp_ip4_spec, fs.m_u.tcp_ip4_spec) = s.to_raw();
            }
            FlowSpec::Tcp6(s) | FlowSpec::Udp6(s) | FlowSpec::Sctp6(s) => {
                (fs.h_u.tcp_ip6_spec, fs.m_u.tcp_ip6_spec) = s.to_raw();
            }
        }
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

impl<T: Ops> Adapter<T> {
    /// # Safety
    ///
    /// Called by the ethtool core for a device registered for `T`, with
    /// `info` valid and, for `ETHTOOL_GRXCLSRLALL`, `locs` room for
    /// `info.rule_cnt` entries.
    pub(super) unsafe extern "C" fn get_rxnfc(
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
    pub(super) unsafe extern "C" fn set_rxnfc(
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
}

#[macros::kunit_tests(rust_kernel_ethtool_rxnfc)]
mod tests {
    use super::*;

    #[test]
    fn masked_fields_compare_the_bits_of_their_mask() {
        let net = Masked {
            value: Ipv4Addr::new(10, 1, 0, 0),
            mask: Ipv4Addr::new(255, 255, 0, 0),
        };
        assert!(net.matches(Ipv4Addr::new(10, 1, 2, 3)));
        assert!(!net.matches(Ipv4Addr::new(10, 2, 0, 0)));
        assert_eq!(net.exact_or_any(), Err(EINVAL));
        assert_eq!(Masked::exact(80u16).exact_or_any(), Ok(Some(80)));
        assert_eq!(Masked::<u16>::any().exact_or_any(), Ok(None));
        assert!(Masked::<Ipv6Addr>::any().matches(Ipv6Addr::LOCALHOST));
        assert!(Masked::exact(Ipv6Addr::LOCALHOST).is_exact());
        assert_eq!(Masked::exact(0u8).mask, 0xff);
    }

    #[test]
    fn flow_rules_round_trip_through_the_c_spec() -> Result {
        let mut fs = bindings::ethtool_rx_flow_spec::default();
        // udp6 from 2001:db8::/32, to port 53, to queue 3.
        let prefix = Ipv6Addr::new(0xffff, 0xffff, 0, 0, 0, 0, 0, 0);
        let rule = FlowRule {
            spec: FlowSpec::Udp6(Tcpip6Spec {
                src: Masked {
                    value: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
                    mask: prefix,
                },
                dst_port: Masked::exact(53),
                ..Tcpip6Spec::any()
            }),
            action: FlowAction::Queue(3),
        };
        rule.write_raw(5, &mut fs);
        assert_eq!(
            (fs.flow_type, fs.location, fs.ring_cookie),
            (bindings::UDP_V6_FLOW, 5, 3)
        );
        // SAFETY: `write_raw` wrote the tcp6 view, all plain integers.
        let (h, m) = unsafe { (fs.h_u.udp_ip6_spec, fs.m_u.udp_ip6_spec) };
        // In memory as on the wire: big endian.
        assert_eq!(h.pdst.to_ne_bytes(), [0, 53]);
        assert_eq!(m.ip6src[0].to_ne_bytes(), [0xff; 4]);
        assert_eq!(FlowRule::from_raw(&fs)?, rule);

        // sctp4 with a TOS, dropped.
        let rule = FlowRule {
            spec: FlowSpec::Sctp4(Tcpip4Spec {
                dst: Masked::exact(Ipv4Addr::new(192, 0, 2, 1)),
                tos: Masked::exact(0x10),
                ..Tcpip4Spec::any()
            }),
            action: FlowAction::Drop,
        };
        rule.write_raw(0, &mut fs);
        assert_eq!(fs.ring_cookie, u64::MAX);
        // SAFETY: as above, the tcp4 view.
        let dst = unsafe { fs.h_u.sctp_ip4_spec.ip4dst };
        assert_eq!(dst.to_ne_bytes(), [192, 0, 2, 1]);
        assert_eq!(FlowRule::from_raw(&fs)?, rule);
        Ok(())
    }

    #[test]
    fn flow_rules_beyond_the_ip_views_are_refused() {
        let mut fs = bindings::ethtool_rx_flow_spec {
            flow_type: bindings::TCP_V4_FLOW,
            ..Default::default()
        };
        assert!(FlowRule::from_raw(&fs).is_ok());
        // A VLAN match, a VF, wake-on-LAN, an Ethernet rule.
        fs.flow_type |= bindings::FLOW_EXT;
        assert_eq!(FlowRule::from_raw(&fs), Err(EINVAL));
        fs.flow_type = bindings::TCP_V4_FLOW;
        fs.ring_cookie = 1 << 32 | 1;
        assert_eq!(FlowRule::from_raw(&fs), Err(EINVAL));
        // CAST: -2, sign-extended.
        fs.ring_cookie = bindings::RX_CLS_FLOW_WAKE as u64;
        assert_eq!(FlowRule::from_raw(&fs), Err(EINVAL));
        fs.ring_cookie = 0;
        fs.flow_type = bindings::ETHER_FLOW;
        assert_eq!(FlowRule::from_raw(&fs), Err(EINVAL));
    }
}
