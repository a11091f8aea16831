// SPDX-License-Identifier: GPL-2.0

//! The header fields the RSS hash covers: the field enables of MRQC.
//!
//! For each frame the 82576 takes the first enabled hash that applies:
//! TCP (both addresses and both ports), UDP (the same), then both
//! addresses. No enabled hash applying, the frame is not hashed and goes
//! to queue 0. So `ethtool -N DEV rx-flow-hash` can give:
//!
//! - `tcp4`, `udp4`: `sdfn` (the TcpIPv4 or UdpIPv4 enable), `sd` (that
//!   enable off, IPv4 on) or nothing (both off);
//! - any other IPv4 flow type: `sd` (IPv4 on) or nothing.
//!
//! IPv6 is the same with its enables, each set together with its variant
//! for frames with extension headers. Other fields, or one address
//! without the other, the device cannot hash by.
//!
//! The IPv4 enable is one switch for all the IPv4 frames not hashed by
//! ports: it is on while some IPv4 flow type was set to `sd`, and then
//! every IPv4 frame not hashed by ports is hashed by addresses.
//! `rx-flow-hash tcp4 sd` while UDP is not hashed makes UDP (and ICMP, and
//! the rest) hashed by addresses too, and `ethtool -n` shows it; `tcp4
//! sdfn` again turns it off. Setting a flow type to nothing is never
//! refused, but reads back `sd` while another flow type of its family
//! keeps the switch on.
//!
//! The default is [`Fields::TCP_ONLY`], which flow steering through the
//! RSS table needs (see `steer.rs`).

use kernel::{
    net::ethtool::{
        HashFields,
        HashFlow, //
    },
    prelude::*,
};

/// MRQC: RSS with up to four queues, no virtualisation.
const RSS_ON: u32 = 0x2;
const TCP4: u32 = 1 << 16;
const IP4: u32 = 1 << 17;
const TCP6_EX: u32 = 1 << 18;
const IP6_EX: u32 = 1 << 19;
const IP6: u32 = 1 << 20;
const TCP6: u32 = 1 << 21;
const UDP4: u32 = 1 << 22;
const UDP6: u32 = 1 << 23;
const UDP6_EX: u32 = 1 << 24;

/// Why a request is refused.
const REFUSED: &CStr =
    c"the 82576 hashes by both addresses, both addresses and ports (TCP and UDP), or nothing";

/// The hash fields: the enables by ports, and which flow types asked for
/// their family's enable by addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fields {
    /// MRQC enables of hashing by ports.
    ports: u32,
    /// Bit `HashFlow as u8`: that flow type is hashed by addresses.
    addrs: u8,
}

/// The `Fields::addrs` bit of `flow`.
const fn bit(flow: HashFlow) -> u8 {
    1 << flow as u8
}

/// The flow types of each family, as `Fields::addrs` bits.
const V4: u8 = bit(HashFlow::Tcp4) | bit(HashFlow::Udp4) | bit(HashFlow::OtherIp4);
const V6: u8 = bit(HashFlow::Tcp6) | bit(HashFlow::Udp6) | bit(HashFlow::OtherIp6);

impl Fields {
    /// TCP hashed by addresses and ports; nothing else hashed, so only TCP
    /// reaches a queue through the RSS table.
    pub(crate) const TCP_ONLY: Self = Self {
        ports: TCP4 | TCP6 | TCP6_EX,
        addrs: 0,
    };

    /// MRQC: RSS on, with these fields.
    pub(crate) fn mrqc(self) -> u32 {
        let mut v = RSS_ON | self.ports;
        if self.addrs & V4 != 0 {
            v |= IP4;
        }
        if self.addrs & V6 != 0 {
            v |= IP6 | IP6_EX;
        }
        v
    }

    /// Whether the device hashes as [`Fields::TCP_ONLY`] does.
    pub(crate) fn is_tcp_only(self) -> bool {
        self.mrqc() == Self::TCP_ONLY.mrqc()
    }

    /// The enables of hashing `flow` by ports (none for flows without
    /// ports) and by addresses.
    fn enables(flow: HashFlow) -> (u32, u32) {
        match flow {
            HashFlow::Tcp4 => (TCP4, IP4),
            HashFlow::Udp4 => (UDP4, IP4),
            HashFlow::OtherIp4 => (0, IP4),
            HashFlow::Tcp6 => (TCP6 | TCP6_EX, IP6 | IP6_EX),
            HashFlow::Udp6 => (UDP6 | UDP6_EX, IP6 | IP6_EX),
            HashFlow::OtherIp6 => (0, IP6 | IP6_EX),
        }
    }

    /// The fields the device hashes the frames of `flow` by.
    pub(crate) fn get(self, flow: HashFlow) -> HashFields {
        let (ports, addrs) = Self::enables(flow);
        let mrqc = self.mrqc();
        if ports != 0 && mrqc & ports == ports {
            HashFields::ADDRS_PORTS
        } else if mrqc & addrs == addrs {
            HashFields::ADDRS
        } else {
            HashFields::NONE
        }
    }

    /// These fields with `flow` hashed by `fields`, or why the device
    /// cannot do that.
    pub(crate) fn with(self, flow: HashFlow, fields: HashFields) -> Result<Self, &'static CStr> {
        let (ports, _) = Self::enables(flow);
        let bit = bit(flow);
        let (ports, addrs) = match fields {
            HashFields::ADDRS_PORTS if ports != 0 => (self.ports | ports, self.addrs & !bit),
            HashFields::ADDRS => (self.ports & !ports, self.addrs | bit),
            HashFields::NONE => (self.ports & !ports, self.addrs & !bit),
            _ => return Err(REFUSED),
        };
        Ok(Self { ports, addrs })
    }
}

#[kunit_tests(igb_rs_hash)]
mod tests {
    use super::*;

    const ALL: [HashFlow; 6] = [
        HashFlow::Tcp4,
        HashFlow::Udp4,
        HashFlow::OtherIp4,
        HashFlow::Tcp6,
        HashFlow::Udp6,
        HashFlow::OtherIp6,
    ];

    #[test]
    fn tcp_only_is_the_old_mrqc() {
        assert_eq!(Fields::TCP_ONLY.mrqc(), 0x0025_0002);
        let f = Fields::TCP_ONLY;
        assert_eq!(f.get(HashFlow::Tcp4), HashFields::ADDRS_PORTS);
        assert_eq!(f.get(HashFlow::Tcp6), HashFields::ADDRS_PORTS);
        for flow in [
            HashFlow::Udp4,
            HashFlow::OtherIp4,
            HashFlow::Udp6,
            HashFlow::OtherIp6,
        ] {
            assert_eq!(f.get(flow), HashFields::NONE);
        }
    }

    #[test]
    fn what_is_set_reads_back() {
        for flow in ALL {
            let ports = !matches!(flow, HashFlow::OtherIp4 | HashFlow::OtherIp6);
            let all = [HashFields::ADDRS, HashFields::NONE, HashFields::ADDRS_PORTS];
            for &fields in &all[..if ports { 3 } else { 2 }] {
                let f = Fields::TCP_ONLY.with(flow, fields).unwrap();
                assert_eq!(f.get(flow), fields);
                // And back.
                let back = f.with(flow, Fields::TCP_ONLY.get(flow)).unwrap();
                assert_eq!(back.get(flow), Fields::TCP_ONLY.get(flow));
            }
        }
    }

    #[test]
    fn what_the_device_cannot_do_is_refused() {
        let f = Fields::TCP_ONLY;
        assert!(f.with(HashFlow::Tcp4, HashFields::IP_SRC).is_err());
        assert!(f.with(HashFlow::Udp6, HashFields::IP_DST).is_err());
        assert!(f.with(HashFlow::OtherIp4, HashFields::ADDRS_PORTS).is_err());
        let l4 = HashFields::L4_B_0_1;
        assert!(f.with(HashFlow::Tcp4, l4).is_err());
    }

    #[test]
    fn addresses_are_one_switch_per_family() {
        // TCP/IPv4 by addresses: every IPv4 frame not hashed by ports is.
        let f = Fields::TCP_ONLY
            .with(HashFlow::Tcp4, HashFields::ADDRS)
            .unwrap();
        assert_eq!(f.get(HashFlow::Udp4), HashFields::ADDRS);
        assert_eq!(f.get(HashFlow::OtherIp4), HashFields::ADDRS);
        assert!(!f.is_tcp_only());
        // IPv6 untouched.
        assert_eq!(f.get(HashFlow::Tcp6), HashFields::ADDRS_PORTS);
        assert_eq!(f.get(HashFlow::Udp6), HashFields::NONE);
        // Nothing for UDP is taken, but UDP reads back by addresses while
        // TCP keeps the switch on.
        let f = f.with(HashFlow::Udp4, HashFields::NONE).unwrap();
        assert_eq!(f.get(HashFlow::Udp4), HashFields::ADDRS);
        // TCP back to ports: the switch goes off, the default is back.
        let f = f.with(HashFlow::Tcp4, HashFields::ADDRS_PORTS).unwrap();
        assert_eq!(f.get(HashFlow::Udp4), HashFields::NONE);
        assert_eq!(f.get(HashFlow::OtherIp4), HashFields::NONE);
        assert!(f.is_tcp_only());
        assert_eq!(f, Fields::TCP_ONLY);
        // UDP by ports, the rest of IPv4 by addresses: TCP keeps ports.
        let f = f.with(HashFlow::Udp4, HashFields::ADDRS_PORTS).unwrap();
        let f = f.with(HashFlow::OtherIp4, HashFields::ADDRS).unwrap();
        assert_eq!(f.get(HashFlow::Tcp4), HashFields::ADDRS_PORTS);
        assert_eq!(f.get(HashFlow::Udp4), HashFields::ADDRS_PORTS);
        assert_eq!(f.get(HashFlow::OtherIp4), HashFields::ADDRS);
        assert_eq!(f.mrqc(), 0x0025_0002 | UDP4 | IP4);
    }

    #[test]
    fn ipv6_sets_the_extension_header_variants_too() {
        let f = Fields::TCP_ONLY
            .with(HashFlow::Udp6, HashFields::ADDRS_PORTS)
            .unwrap();
        assert_eq!(f.mrqc() & (UDP6 | UDP6_EX), UDP6 | UDP6_EX);
        let f = f.with(HashFlow::OtherIp6, HashFields::ADDRS).unwrap();
        assert_eq!(f.mrqc() & (IP6 | IP6_EX), IP6 | IP6_EX);
        let f = f.with(HashFlow::Tcp6, HashFields::NONE).unwrap();
        let f = f.with(HashFlow::OtherIp6, HashFields::NONE).unwrap();
        assert_eq!(f.mrqc() & (TCP6 | TCP6_EX | IP6 | IP6_EX), 0);
    }
}
