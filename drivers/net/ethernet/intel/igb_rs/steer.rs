// SPDX-License-Identifier: GPL-2.0

//! Flow steering: the 82576's five-tuple filters, and the RSS indirection
//! table.
//!
//! `ethtool -N DEV flow-type tcp4|tcp6 ... action N` asks for the frames
//! of a TCP flow to go to queue `N`.
//!
//! The 82576 has eight five-tuple queue filters (FTQF and its companions),
//! for IPv4 only. A `tcp4` rule takes one while one of seven is free: the
//! device compares the fields the rule gives (any may be left out) and
//! sends every matching frame to the rule's queue, SYN included; nothing
//! else goes there. The filters are used only when FTQF reads back what
//! was written at probe: QEMU's model has none.
//!
//! The eighth filter is kept free so that a rule changes without a gap
//! (make before break): the new filter is programmed in a free one while
//! off, its FTQF written last, and only then is the old one turned off.
//! A flow that both versions of a rule steer never falls back to RSS in
//! between, so its frames never land in a host queue while its own queue
//! holds device memory. Only the filters that change are written. A
//! filter out of use holds the documented disabled FTQF (every compare
//! bypassed, no queue), not 0, which would compare stale companions.
//! Priorities (IMIR, 3 bits) follow the rule locations: the filter of the
//! rule at the lowest location has priority 7, the next one 6, and so on,
//! all distinct; one that moves is rewritten in an order that never lets
//! two filters swap.
//!
//! Other rules (`tcp6`, `tcp4` without a free filter, or a device without
//! filters) are applied through RSS, which every 82576 and QEMU's model
//! have: a frame whose Toeplitz hash selects bucket `b` of the 128-entry
//! table goes to the queue in entry `b`. Such a rule owns the buckets of
//! the flows it matches and points them at its queue.
//!
//! - A rule that gives the whole four-tuple (source and destination
//!   address and port) owns the bucket of the hash of that tuple, known
//!   when the rule is added.
//! - A rule that leaves fields out (`dst-ip` and `dst-port` only, say)
//!   cannot know its flows' hashes in advance. It learns them: the first
//!   SYN of a matching connection arrives where RSS sends it, its hash (as
//!   the device computed it) gives the bucket, and from then on the flow's
//!   frames go to the rule's queue. Only the SYN is received elsewhere.
//!
//! What this guarantees: every frame of a steered flow after its first SYN
//! (with a full tuple: every frame) reaches the rule's queue. Where it can
//! misroute: any other flow whose hash lands in an owned bucket goes to
//! the rule's queue too (one bucket in 128 per steered flow), and a
//! learned bucket stays owned until its rule is deleted or the RSS key
//! changes. RSS hashes only TCP (everything else goes to queue 0), so no
//! other protocol reaches a steered queue, whose memory may be device
//! memory that only TCP sockets can use. When two rules own one bucket,
//! the one at the lower location wins.
//!
//! The buckets are those of TCP hashed by addresses and ports, and the
//! rest unhashed (`hash.rs`, the default): while a rule steers through
//! RSS, `ethtool -N DEV rx-flow-hash` is refused (`EBUSY`), and while RSS
//! hashes otherwise, so is a rule that would need it.

use crate::hw::Regs;
use crate::regs::*;
use core::net::IpAddr;
use kernel::{
    net::ethtool::{
        FlowAction,
        FlowRule,
        FlowSpec,
        FlowType,
        Masked,
        RuleLocation,
        Tcpip4Spec,
        Tcpip6Spec, //
    },
    prelude::*,
};

/// A flow steering rule as the driver steers them: TCP over IPv4 or IPv6
/// (`tcp4`, `tcp6`), each address and port given whole or left out, to a
/// queue.
///
/// Only TCP, because RSS, through which the rules the five-tuple filters
/// do not hold are applied, hashes only TCP (see the module comment), and
/// the steered queues are for device memory, which only TCP sockets use.
/// The rest of what `ethtool -N` asks for (UDP or SCTP, masks of some
/// bits, TOS or traffic class, dropping) is refused with `EINVAL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TcpRule {
    /// [`FlowType::Tcp4`] or [`FlowType::Tcp6`]; the addresses are of its
    /// family.
    pub(crate) flow_type: FlowType,
    /// The sender's address.
    pub(crate) src_ip: Option<IpAddr>,
    /// The receiver's (our) address.
    pub(crate) dst_ip: Option<IpAddr>,
    /// The sender's port.
    pub(crate) src_port: Option<u16>,
    /// The receiver's (our) port.
    pub(crate) dst_port: Option<u16>,
    /// The receive queue matching frames go to.
    pub(crate) queue: u32,
}

impl TcpRule {
    /// The rule `ethtool -N` asks for, if the driver steers it.
    pub(crate) fn of_flow(rule: &FlowRule) -> Result<Self> {
        let FlowAction::Queue(queue) = rule.action else {
            return Err(EINVAL);
        };
        let (flow_type, src_ip, dst_ip, src_port, dst_port) = match rule.spec {
            FlowSpec::Tcp4(s) if s.tos.is_any() => (
                FlowType::Tcp4,
                s.src.exact_or_any()?.map(IpAddr::V4),
                s.dst.exact_or_any()?.map(IpAddr::V4),
                s.src_port,
                s.dst_port,
            ),
            FlowSpec::Tcp6(s) if s.tclass.is_any() => (
                FlowType::Tcp6,
                s.src.exact_or_any()?.map(IpAddr::V6),
                s.dst.exact_or_any()?.map(IpAddr::V6),
                s.src_port,
                s.dst_port,
            ),
            _ => return Err(EINVAL),
        };
        Ok(Self {
            flow_type,
            src_ip,
            dst_ip,
            src_port: src_port.exact_or_any()?,
            dst_port: dst_port.exact_or_any()?,
            queue,
        })
    }

    /// The rule as `ethtool -n` shows it.
    pub(crate) fn to_flow(self) -> FlowRule {
        let port = |p: Option<u16>| p.map_or_else(Masked::any, Masked::exact);
        let spec = if self.flow_type.is_ipv6() {
            let ip = |a: Option<IpAddr>| match a {
                Some(IpAddr::V6(a)) => Masked::exact(a),
                _ => Masked::any(),
            };
            FlowSpec::Tcp6(Tcpip6Spec {
                src: ip(self.src_ip),
                dst: ip(self.dst_ip),
                src_port: port(self.src_port),
                dst_port: port(self.dst_port),
                ..Tcpip6Spec::any()
            })
        } else {
            let ip = |a: Option<IpAddr>| match a {
                Some(IpAddr::V4(a)) => Masked::exact(a),
                _ => Masked::any(),
            };
            FlowSpec::Tcp4(Tcpip4Spec {
                src: ip(self.src_ip),
                dst: ip(self.dst_ip),
                src_port: port(self.src_port),
                dst_port: port(self.dst_port),
                ..Tcpip4Spec::any()
            })
        };
        FlowRule {
            spec,
            action: FlowAction::Queue(self.queue),
        }
    }

    /// Whether every field of the flow is given (a full four-tuple).
    pub(crate) fn is_full(&self) -> bool {
        self.src_ip.is_some()
            && self.dst_ip.is_some()
            && self.src_port.is_some()
            && self.dst_port.is_some()
    }

    /// Whether a TCP segment of `t` matches.
    fn matches(&self, t: &Tuple) -> bool {
        self.flow_type.is_ipv6() == t.src.is_ipv6()
            && self.src_ip.is_none_or(|a| a == t.src)
            && self.dst_ip.is_none_or(|a| a == t.dst)
            && self.src_port.is_none_or(|p| p == t.sport)
            && self.dst_port.is_none_or(|p| p == t.dport)
    }
}

/// Rules the table holds.
pub(crate) const MAX_RULES: usize = 16;
/// Buckets of the RSS indirection table.
pub(crate) const BUCKETS: usize = 128;
/// The 82576's five-tuple filters.
pub(crate) const HW_FILTERS: usize = 8;
/// Filters rules may hold: one stays free for changing a rule without a
/// gap.
pub(crate) const RULE_FILTERS: usize = HW_FILTERS - 1;

/// What FTQF 0 is written with to see whether the device has the filters:
/// the disabled value, which the filter keeps afterwards.
pub(crate) const FTQF_PROBE: u32 = FTQF_DISABLED;

/// The registers of one five-tuple filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HwFilter {
    pub(crate) saqf: u32,
    pub(crate) daqf: u32,
    pub(crate) spqf: u32,
    pub(crate) imir: u32,
    pub(crate) imirext: u32,
    /// Enables the filter: written last.
    pub(crate) ftqf: u32,
}

impl HwFilter {
    /// A filter out of use: FTQF at the disabled value.
    pub(crate) const OFF: Self = Self {
        saqf: 0,
        daqf: 0,
        spqf: 0,
        imir: 0,
        imirext: 0,
        ftqf: FTQF_DISABLED,
    };

    /// Whether the filter sends frames to a queue.
    pub(crate) fn enabled(&self) -> bool {
        self.ftqf & FTQF_QUEUE_ENABLE != 0
    }

    /// The filter's priority (IMIR bits 31:29).
    pub(crate) fn priority(&self) -> u32 {
        (self.imir & IMIR_PRIORITY_MASK) >> IMIR_PRIORITY_SHIFT
    }

    /// Whether `other` matches the same frames to the same queue, its
    /// priority aside.
    fn same_but_priority(&self, other: &Self) -> bool {
        Self {
            imir: self.imir & !IMIR_PRIORITY_MASK,
            ..*self
        } == Self {
            imir: other.imir & !IMIR_PRIORITY_MASK,
            ..*other
        }
    }

    /// Writes filter `n` while it is off (its FTQF at the disabled value),
    /// the companions first and FTQF, which turns it on, last.
    fn write_off<R: Regs>(&self, r: &R, n: usize) {
        let at = 4 * n;
        r.wr(SAQF + at, self.saqf);
        r.wr(DAQF + at, self.daqf);
        r.wr(SPQF + at, self.spqf);
        r.wr(IMIR + at, self.imir);
        r.wr(IMIREXT + at, self.imirext);
        r.wr(FTQF + at, self.ftqf);
    }

    /// The filter for `rule` at priority `prio` (7 highest), if a
    /// five-tuple filter can match its flows: TCP over IPv4.
    pub(crate) fn of_rule(rule: &TcpRule, prio: u32) -> Option<Self> {
        // An address in the register: network order, first byte lowest.
        let v4 = |a: Option<IpAddr>| match a {
            None => Some(None),
            Some(IpAddr::V4(a)) => Some(Some(u32::from_le_bytes(a.octets()))),
            Some(IpAddr::V6(_)) => None,
        };
        // A port likewise, in bits 15:0.
        let port = |p: u16| u32::from(u16::from_le_bytes(p.to_be_bytes()));
        if rule.flow_type != FlowType::Tcp4 {
            return None;
        }
        let (src, dst) = (v4(rule.src_ip)?, v4(rule.dst_ip)?);
        let mut ftqf = FTQF_PROTO_TCP
            | FTQF_VF_BP
            | FTQF_QUEUE_ENABLE
            | (rule.queue << FTQF_QUEUE_SHIFT) & FTQF_QUEUE_MASK;
        if src.is_none() {
            ftqf |= FTQF_SRC_ADDR_BP;
        }
        if dst.is_none() {
            ftqf |= FTQF_DST_ADDR_BP;
        }
        if rule.src_port.is_none() {
            ftqf |= FTQF_SRC_PORT_BP;
        }
        let imir = (prio & 7) << IMIR_PRIORITY_SHIFT | rule.dst_port.map_or(IMIR_PORT_BP, port);
        Some(Self {
            saqf: src.unwrap_or(0),
            daqf: dst.unwrap_or(0),
            spqf: rule.src_port.map_or(0, port),
            imir,
            imirext: IMIREXT_SIZE_BP | IMIREXT_CTRL_BP,
            ftqf,
        })
    }
}

/// The Toeplitz hash of `input` under `key`, as the device computes it
/// for RSS: every set input bit XORs in the 32 key bits starting at it.
pub(crate) fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    let bit = |i: usize| -> u32 {
        key.get(i / 8)
            .map_or(0, |b| u32::from(b >> (7 - i % 8)) & 1)
    };
    let mut window = (0..32).fold(0u32, |w, i| w << 1 | bit(i));
    let mut hash = 0;
    for (n, byte) in input.iter().enumerate() {
        for b in 0..8 {
            if byte & (0x80 >> b) != 0 {
                hash ^= window;
            }
            window = window << 1 | bit(32 + n * 8 + b);
        }
    }
    hash
}

/// A TCP segment's flow, as received: the sender's address and port, ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tuple {
    pub(crate) src: IpAddr,
    pub(crate) dst: IpAddr,
    pub(crate) sport: u16,
    pub(crate) dport: u16,
}

impl Tuple {
    /// The RSS hash input of a TCP flow: addresses, then ports, in network
    /// order.
    fn hash(&self, key: &[u8]) -> u32 {
        let mut input = [0u8; 36];
        let n = match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                input[..4].copy_from_slice(&s.octets());
                input[4..8].copy_from_slice(&d.octets());
                8
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                input[..16].copy_from_slice(&s.octets());
                input[16..32].copy_from_slice(&d.octets());
                32
            }
            _ => return 0,
        };
        input[n..n + 2].copy_from_slice(&self.sport.to_be_bytes());
        input[n + 2..n + 4].copy_from_slice(&self.dport.to_be_bytes());
        toeplitz(key, &input[..n + 4])
    }

    /// The tuple of a rule that gives all four fields.
    fn of_rule(rule: &TcpRule) -> Option<Self> {
        Some(Self {
            src: rule.src_ip?,
            dst: rule.dst_ip?,
            sport: rule.src_port?,
            dport: rule.dst_port?,
        })
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The flow of `frame` if it is a connection request: an Ethernet frame
/// carrying a TCP segment with SYN set and ACK clear, over IPv4 without
/// fragmentation or IPv6 without extension headers. Every TCP frame of a
/// queue a rule learns from comes here: the flags are read before the
/// addresses, which only a request needs.
pub(crate) fn syn_tuple(frame: &[u8]) -> Option<Tuple> {
    const TCP: u8 = 6;
    const SYN: u8 = 0x02;
    const ACK: u8 = 0x10;
    let l3 = 14;
    // The IP header, whether it is IPv4's, and where TCP's starts.
    let (ip, v4, l4) = match be16(frame, 12)? {
        0x0800 => {
            let ip = frame.get(l3..l3 + 20)?;
            let ihl = usize::from(ip[0] & 0xf) * 4;
            // Not TCP, or a fragment (more fragments, or an offset).
            if ip[9] != TCP || be16(ip, 6)? & 0x3fff != 0 || ihl < 20 {
                return None;
            }
            (ip, true, l3 + ihl)
        }
        0x86dd => {
            let ip = frame.get(l3..l3 + 40)?;
            if ip[6] != TCP {
                return None;
            }
            (ip, false, l3 + 40)
        }
        _ => return None,
    };
    let flags = *frame.get(l4 + 13)?;
    if flags & (SYN | ACK) != SYN {
        return None;
    }
    let (src, dst) = if v4 {
        let s: [u8; 4] = ip[12..16].try_into().ok()?;
        let d: [u8; 4] = ip[16..20].try_into().ok()?;
        (IpAddr::from(s), IpAddr::from(d))
    } else {
        let s: [u8; 16] = ip[8..24].try_into().ok()?;
        let d: [u8; 16] = ip[24..40].try_into().ok()?;
        (IpAddr::from(s), IpAddr::from(d))
    };
    Some(Tuple {
        src,
        dst,
        sport: be16(frame, l4)?,
        dport: be16(frame, l4 + 2)?,
    })
}

/// A rule and the five-tuple filter or the buckets it owns.
#[derive(Clone, Copy)]
struct Steered {
    rule: TcpRule,
    /// The five-tuple filter the rule is in.
    filter: Option<usize>,
    /// Bit `b`: the rule owns bucket `b`.
    buckets: u128,
}

impl Steered {
    /// Whether the rule learns its buckets from SYNs.
    fn learns(&self) -> bool {
        self.filter.is_none() && !self.rule.is_full()
    }
}

/// The flow steering rules of a device.
pub(crate) struct Steering {
    rules: [Option<Steered>; MAX_RULES],
    /// The device has five-tuple filters.
    filters: bool,
    /// The five-tuple filters as last written, if known (not after probe
    /// or a device reset, which leaves them at their reset value).
    hw: [HwFilter; HW_FILTERS],
    hw_known: bool,
}

impl Steering {
    /// No rules; five-tuple filters used if the device `has_filters`.
    pub(crate) fn new(has_filters: bool) -> Self {
        Self {
            rules: [None; MAX_RULES],
            filters: has_filters,
            hw: [HwFilter::OFF; HW_FILTERS],
            hw_known: false,
        }
    }

    /// The five-tuple filters as the rules want them: `None` for a free
    /// one. The rules holding filters get priorities 7, 6, ... in the
    /// order of their locations: distinct, the lowest location highest.
    pub(crate) fn hw_filters(&self) -> [Option<HwFilter>; HW_FILTERS] {
        let mut f = [None; HW_FILTERS];
        let mut prio = HW_FILTERS;
        for s in self.rules.iter().flatten() {
            if let Some(slot) = s.filter.and_then(|n| f.get_mut(n)) {
                prio = prio.saturating_sub(1);
                // CAST: below 8.
                *slot = HwFilter::of_rule(&s.rule, prio as u32);
            }
        }
        f
    }

    /// A five-tuple filter for `rule` going in at `loc`, if it can match
    /// the rule's flows and the rules at other locations hold fewer than
    /// [`RULE_FILTERS`]: one that no rule holds and that is off in the
    /// device, so that a rule replaced at `loc` moves to a new filter
    /// while its old one still steers.
    fn take_filter(&self, rule: &TcpRule, loc: usize) -> Option<usize> {
        if !self.filters || HwFilter::of_rule(rule, 0).is_none() {
            return None;
        }
        let held = |n: usize| self.rules.iter().flatten().any(|s| s.filter == Some(n));
        let others = self
            .rules
            .iter()
            .enumerate()
            .filter(|(l, s)| *l != loc && s.is_some_and(|s| s.filter.is_some()))
            .count();
        if others >= RULE_FILTERS {
            return None;
        }
        let on = |n: usize| self.hw_known && self.hw.get(n).is_some_and(HwFilter::enabled);
        (0..HW_FILTERS).find(|&n| !(held(n) || on(n)))
    }

    /// The device forgot its filters (a reset): the next [`Self::program`]
    /// writes every one.
    pub(crate) fn forget_hw(&mut self) {
        self.hw_known = false;
    }

    /// Brings the device's five-tuple filters to what the rules want,
    /// writing only the filters that change, in an order that leaves no
    /// gap: at every write, a flow that some rule steered before and some
    /// rule steers after matches an enabled filter (the old one's until
    /// the new one is on), and no filter matches more than either
    /// version. Priorities that drop are lowered first (the lowest
    /// first), then new filters go in, then old ones go off, then
    /// priorities that rise are raised (the highest first): two filters
    /// never swap order. Register writes only, no wait: callable under a
    /// spinlock.
    pub(crate) fn program<R: Regs>(&mut self, r: &R) {
        if !self.filters {
            return;
        }
        let want = self.hw_filters();
        let known = self.hw_known;
        let hw = &mut self.hw;
        // Whether filter `h` stays on as `w`, at another priority.
        let moves =
            |h: &HwFilter, w: &HwFilter| known && h.enabled() && h != w && h.same_but_priority(w);
        // Lower, lowest new priority first (one filter per priority).
        for p in 0..HW_FILTERS {
            for (n, (h, w)) in hw.iter_mut().zip(want.iter()).enumerate() {
                let Some(w) = w else { continue };
                // CAST: below 8.
                if moves(h, w) && w.priority() == p as u32 && w.priority() < h.priority() {
                    r.wr(IMIR + 4 * n, w.imir);
                    *h = *w;
                }
            }
        }
        // New filters, written while off.
        for (n, (h, w)) in hw.iter_mut().zip(want.iter()).enumerate() {
            let Some(w) = w else { continue };
            if known && (h == w || moves(h, w)) {
                continue;
            }
            if !known || h.enabled() {
                // Not known to be off, or a filter changing in place
                // (which `take_filter` avoids): off first.
                r.wr(FTQF + 4 * n, FTQF_DISABLED);
            }
            w.write_off(r, n);
            *h = *w;
        }
        // Old filters off: FTQF alone, the companions no longer count.
        for (n, (h, w)) in hw.iter_mut().zip(want.iter()).enumerate() {
            if w.is_none() && (!known || h.ftqf != FTQF_DISABLED) {
                r.wr(FTQF + 4 * n, FTQF_DISABLED);
                h.ftqf = FTQF_DISABLED;
            }
        }
        // Raise, highest new priority first.
        for p in (0..HW_FILTERS).rev() {
            for (n, (h, w)) in hw.iter_mut().zip(want.iter()).enumerate() {
                let Some(w) = w else { continue };
                // CAST: below 8.
                if moves(h, w) && w.priority() == p as u32 {
                    r.wr(IMIR + 4 * n, w.imir);
                    *h = *w;
                }
            }
        }
        self.hw_known = true;
    }

    /// Calls `f` with the location and rule of each rule.
    pub(crate) fn for_each(&self, f: &mut dyn FnMut(u32, &FlowRule)) {
        for (i, s) in self.rules.iter().enumerate() {
            if let Some(s) = s {
                // CAST: below MAX_RULES.
                f(i as u32, &s.rule.to_flow());
            }
        }
    }

    /// Adds `rule` (its queue checked by the caller) at `at`, replacing
    /// what was there, under RSS key `key`. Returns the location. `EBUSY`
    /// if the rule needs the RSS table and `rss_ok` is false (RSS does not
    /// hash TCP alone, by addresses and ports).
    pub(crate) fn add(
        &mut self,
        rule: &TcpRule,
        at: RuleLocation,
        key: &[u8],
        rss_ok: bool,
    ) -> Result<u32> {
        let loc = match at {
            // CAST: u32 to usize is lossless on Linux.
            RuleLocation::At(l) if (l as usize) < MAX_RULES => l as usize,
            RuleLocation::At(_) => return Err(EINVAL),
            RuleLocation::Any => self.rules.iter().position(Option::is_none).ok_or(ENOSPC)?,
        };
        let filter = self.take_filter(rule, loc);
        let buckets = match filter {
            Some(_) => 0,
            None if !rss_ok => return Err(EBUSY),
            None => Tuple::of_rule(rule).map_or(0, |t| bucket_bit(t.hash(key))),
        };
        self.rules[loc] = Some(Steered {
            rule: *rule,
            filter,
            buckets,
        });
        // CAST: below MAX_RULES.
        Ok(loc as u32)
    }

    /// Removes the rule at `loc`.
    pub(crate) fn del(&mut self, loc: u32) -> Result {
        // CAST: u32 to usize is lossless on Linux.
        let slot = self.rules.get_mut(loc as usize).ok_or(ENOENT)?;
        slot.take().map(|_| ()).ok_or(ENOENT)
    }

    /// Whether some rule steers through the RSS table.
    pub(crate) fn uses_rss(&self) -> bool {
        self.rules.iter().flatten().any(|s| s.filter.is_none())
    }

    /// Whether some rule learns its buckets from SYNs.
    pub(crate) fn learns(&self) -> bool {
        self.rules.iter().flatten().any(Steered::learns)
    }

    /// A SYN of `t` arrived with RSS hash `hash`: the first partial rule
    /// that matches takes its bucket. Returns the bucket if that changed
    /// anything.
    pub(crate) fn learn(&mut self, t: &Tuple, hash: u32) -> Option<usize> {
        let s = self
            .rules
            .iter_mut()
            .flatten()
            .find(|s| s.learns() && s.rule.matches(t))?;
        let bit = bucket_bit(hash);
        if s.buckets & bit != 0 {
            return None;
        }
        s.buckets |= bit;
        Some(bucket(hash))
    }

    /// The RSS key changed: full-tuple rules own the buckets of their new
    /// hashes, partial rules learn theirs again.
    pub(crate) fn rekey(&mut self, key: &[u8]) {
        for s in self
            .rules
            .iter_mut()
            .flatten()
            .filter(|s| s.filter.is_none())
        {
            s.buckets = Tuple::of_rule(&s.rule).map_or(0, |t| bucket_bit(t.hash(key)));
        }
    }

    /// The queue a rule points bucket `b` at, if a rule owns it.
    pub(crate) fn queue_of(&self, b: usize) -> Option<u32> {
        let bit = 1u128.checked_shl(u32::try_from(b).ok()?)?;
        self.rules
            .iter()
            .flatten()
            .find(|s| s.buckets & bit != 0)
            .map(|s| s.rule.queue)
    }
}

/// The bucket of an RSS hash: its low seven bits.
fn bucket(hash: u32) -> usize {
    // CAST: below BUCKETS.
    (hash as usize) % BUCKETS
}

fn bucket_bit(hash: u32) -> u128 {
    1u128 << bucket(hash)
}

#[kunit_tests(igb_rs_steer)]
mod tests {
    use super::*;
    use core::net::{
        Ipv4Addr,
        Ipv6Addr, //
    };
    use kernel::net::ethtool::FlowType;

    /// The key and vectors of Microsoft's RSS verification suite, the
    /// reference for Toeplitz in NICs.
    const KEY: [u8; 40] = [
        0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f,
        0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
        0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
    ];

    fn v4(a: [u8; 4]) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(a))
    }

    /// A table on the heap, as the driver keeps it, made in a frame of its
    /// own: a KUnit case runs on a 16 KiB stack, and the table is 1.3 KiB.
    #[inline(never)]
    fn steering(has_filters: bool) -> Result<KBox<Steering>> {
        Ok(KBox::new(Steering::new(has_filters), GFP_KERNEL)?)
    }
    #[test]
    fn toeplitz_matches_the_reference_vectors() {
        // 66.9.149.187:2794 -> 161.142.100.80:1766
        let t = Tuple {
            src: v4([66, 9, 149, 187]),
            dst: v4([161, 142, 100, 80]),
            sport: 2794,
            dport: 1766,
        };
        assert_eq!(t.hash(&KEY), 0x51cc_c178);
        // 199.92.111.2:14230 -> 65.69.140.83:4739
        let t = Tuple {
            src: v4([199, 92, 111, 2]),
            dst: v4([65, 69, 140, 83]),
            sport: 14230,
            dport: 4739,
        };
        assert_eq!(t.hash(&KEY), 0xc626_b0ea);
        // 3ffe:2501:200:1fff::7 :2794 -> 3ffe:2501:200:3::1 :1766
        let s = Ipv6Addr::new(0x3ffe, 0x2501, 0x200, 0x1fff, 0, 0, 0, 7);
        let d = Ipv6Addr::new(0x3ffe, 0x2501, 0x200, 3, 0, 0, 0, 1);
        let t = Tuple {
            src: IpAddr::V6(s),
            dst: IpAddr::V6(d),
            sport: 2794,
            dport: 1766,
        };
        assert_eq!(t.hash(&KEY), 0x4020_7d3d);
    }

    fn rule(src: Option<IpAddr>, sport: Option<u16>) -> TcpRule {
        TcpRule {
            flow_type: FlowType::Tcp4,
            src_ip: src,
            dst_ip: Some(v4([161, 142, 100, 80])),
            src_port: sport,
            dst_port: Some(1766),
            queue: 1,
        }
    }

    #[test]
    fn only_whole_field_tcp_rules_to_a_queue_are_taken() -> Result {
        let tcp4 = rule(None, Some(2794));
        let flow = tcp4.to_flow();
        assert_eq!(TcpRule::of_flow(&flow)?, tcp4);
        let v6 = TcpRule {
            flow_type: FlowType::Tcp6,
            src_ip: Some(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            dst_ip: None,
            src_port: None,
            dst_port: Some(9),
            queue: 2,
        };
        assert_eq!(TcpRule::of_flow(&v6.to_flow())?, v6);

        let FlowSpec::Tcp4(spec) = flow.spec else {
            return Err(EINVAL);
        };
        let refused = |spec: FlowSpec, action: FlowAction| {
            TcpRule::of_flow(&FlowRule { spec, action }) == Err(EINVAL)
        };
        let queue = FlowAction::Queue(1);
        // Another protocol, a part of a field, a TOS, a drop.
        assert!(refused(FlowSpec::Udp4(spec), queue));
        assert!(refused(FlowSpec::Sctp6(Tcpip6Spec::any()), queue));
        let mut part = spec;
        part.dst.mask = Ipv4Addr::new(255, 255, 255, 0);
        assert!(refused(FlowSpec::Tcp4(part), queue));
        let tos = Tcpip4Spec {
            tos: Masked::exact(0x10),
            ..spec
        };
        assert!(refused(FlowSpec::Tcp4(tos), queue));
        assert!(refused(FlowSpec::Tcp4(spec), FlowAction::Drop));
        Ok(())
    }

    #[test]
    fn full_rules_own_their_bucket_partial_ones_learn() -> Result {
        let mut s = steering(false)?;
        let full = rule(Some(v4([66, 9, 149, 187])), Some(2794));
        assert_eq!(s.add(&full, RuleLocation::Any, &KEY, true)?, 0);
        // 0x51ccc178 & 127 = 0x78.
        assert_eq!(s.queue_of(0x78), Some(1));
        assert_eq!(s.queue_of(0x79), None);
        assert!(!s.learns());

        let partial = rule(None, None);
        assert_eq!(s.add(&partial, RuleLocation::Any, &KEY, true)?, 1);
        assert!(s.learns());
        let syn = Tuple {
            src: v4([10, 0, 0, 1]),
            dst: v4([161, 142, 100, 80]),
            sport: 40000,
            dport: 1766,
        };
        assert_eq!(s.learn(&syn, 0x1234_5605), Some(5));
        assert_eq!(s.learn(&syn, 0x1234_5605), None);
        assert_eq!(s.queue_of(5), Some(1));
        // Another port: no rule matches.
        let other = Tuple { dport: 80, ..syn };
        assert_eq!(s.learn(&other, 7), None);

        s.del(1)?;
        assert_eq!(s.queue_of(5), None);
        assert_eq!(s.del(1), Err(ENOENT));
        assert_eq!(s.add(&full, RuleLocation::At(99), &KEY, true), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn tcp4_rules_take_five_tuple_filters() -> Result {
        let mut s = steering(true)?;
        // 66.9.149.187:2794 -> 161.142.100.80:1766, to queue 1, at 0.
        let full = rule(Some(v4([66, 9, 149, 187])), Some(2794));
        assert_eq!(s.add(&full, RuleLocation::Any, &KEY, true)?, 0);
        // No bucket taken, nothing to learn.
        assert_eq!(s.queue_of(0x78), None);
        assert!(!s.learns());
        let f = s.hw_filters();
        let want = HwFilter {
            saqf: 0xbb95_0942,
            daqf: 0x5064_8ea1,
            // 2794 = 0x0aea and 1766 = 0x06e6, first byte lowest.
            spqf: 0xea0a,
            imir: 7 << 29 | 0xe606,
            imirext: 0x81000,
            ftqf: 6 | 0x100 | 0x8000 | 1 << 16,
        };
        assert_eq!(f[0], Some(want));
        assert!(f[1..].iter().all(Option::is_none));

        // dst-ip and dst-port only, at 3: the rest bypassed; the second
        // rule holding a filter, priority 6.
        let partial = rule(None, None);
        assert_eq!(s.add(&partial, RuleLocation::At(3), &KEY, true)?, 3);
        assert!(!s.learns());
        let f = s.hw_filters()[1].ok_or(EINVAL)?;
        assert_eq!(f.ftqf, 6 | 0x100 | 0x8000 | 1 << 16 | 1 << 29 | 1 << 31);
        assert_eq!((f.saqf, f.spqf, f.imir), (0, 0, 6 << 29 | 0xe606));

        // tcp6 has no filter: its rule learns through RSS.
        let v6 = TcpRule {
            flow_type: FlowType::Tcp6,
            src_ip: None,
            dst_ip: Some(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            src_port: None,
            dst_port: Some(9),
            queue: 1,
        };
        s.add(&v6, RuleLocation::Any, &KEY, true)?;
        assert!(s.learns());

        // Seven filters for rules: the eighth tcp4 rule goes through RSS,
        // and the next one gets the filter a deleted rule gave back.
        for l in 4..9 {
            s.add(&full, RuleLocation::At(l), &KEY, true)?;
        }
        let f = s.hw_filters();
        assert!(f[..7].iter().all(Option::is_some) && f[7].is_none());
        // Priorities 7 down to 1, by location.
        for (n, f) in f[..7].iter().flatten().enumerate() {
            // CAST: below 7.
            assert_eq!(f.priority(), 7 - n as u32);
        }
        s.add(&full, RuleLocation::At(9), &KEY, true)?;
        assert_eq!(s.queue_of(0x78), Some(1));
        s.del(3)?;
        assert!(s.hw_filters()[1].is_none());
        s.add(&partial, RuleLocation::At(11), &KEY, true)?;
        assert!(s.hw_filters()[1].is_some());
        // Replacing a rule moves it to the free filter: the old one keeps
        // steering until the new one is on.
        s.add(&partial, RuleLocation::At(0), &KEY, true)?;
        let f = s.hw_filters();
        assert!(f[0].is_none());
        assert_eq!(f[7].map(|f| (f.saqf, f.priority())), Some((0, 7)));

        // Without filters (QEMU), every rule goes through RSS.
        let mut s = steering(false)?;
        s.add(&full, RuleLocation::Any, &KEY, true)?;
        assert!(s.hw_filters().iter().all(Option::is_none));
        assert_eq!(s.queue_of(0x78), Some(1));
        Ok(())
    }

    #[test]
    fn rules_need_the_default_hash_only_for_rss() -> Result {
        let full = rule(Some(v4([66, 9, 149, 187])), Some(2794));
        // Through RSS: refused while RSS hashes otherwise.
        let mut s = steering(false)?;
        assert_eq!(s.add(&full, RuleLocation::Any, &KEY, false), Err(EBUSY));
        assert!(!s.uses_rss());
        s.add(&full, RuleLocation::Any, &KEY, true)?;
        assert!(s.uses_rss());
        s.del(0)?;
        assert!(!s.uses_rss());
        // In a five-tuple filter, the hash does not matter.
        let mut s = steering(true)?;
        s.add(&full, RuleLocation::Any, &KEY, false)?;
        assert!(!s.uses_rss());
        Ok(())
    }

    #[test]
    fn syns_are_recognised() {
        let mut f = [0u8; 14 + 20 + 20];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[14 + 9] = 6;
        f[14 + 12..14 + 16].copy_from_slice(&[10, 0, 0, 1]);
        f[14 + 16..14 + 20].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&40000u16.to_be_bytes());
        f[36..38].copy_from_slice(&5201u16.to_be_bytes());
        f[34 + 13] = 0x02;
        let t = syn_tuple(&f);
        assert_eq!(
            t,
            Some(Tuple {
                src: v4([10, 0, 0, 1]),
                dst: v4([10, 0, 0, 2]),
                sport: 40000,
                dport: 5201,
            })
        );
        // SYN-ACK: not a request.
        f[34 + 13] = 0x12;
        assert_eq!(syn_tuple(&f), None);
        // Truncated.
        assert_eq!(syn_tuple(&f[..40]), None);
        // A fragment's SYN-looking bytes.
        f[34 + 13] = 0x02;
        f[14 + 6] = 0x20;
        assert_eq!(syn_tuple(&f), None);
        f[14 + 6] = 0;
        // Not TCP.
        f[14 + 9] = 17;
        assert_eq!(syn_tuple(&f), None);
    }

    #[test]
    fn syns_are_recognised_over_ipv6() {
        let mut f = [0u8; 14 + 40 + 20];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[14 + 6] = 6;
        let (mut s, mut d) = ([0u8; 16], [0u8; 16]);
        s[..2].copy_from_slice(&[0xfd, 0x00]);
        s[15] = 1;
        d[..2].copy_from_slice(&[0xfd, 0x00]);
        d[15] = 2;
        f[14 + 8..14 + 24].copy_from_slice(&s);
        f[14 + 24..14 + 40].copy_from_slice(&d);
        f[54..56].copy_from_slice(&40000u16.to_be_bytes());
        f[56..58].copy_from_slice(&5201u16.to_be_bytes());
        f[54 + 13] = 0x02;
        assert_eq!(
            syn_tuple(&f),
            Some(Tuple {
                src: IpAddr::from(s),
                dst: IpAddr::from(d),
                sport: 40000,
                dport: 5201,
            })
        );
        // A data segment (ACK), as most are.
        f[54 + 13] = 0x10;
        assert_eq!(syn_tuple(&f), None);
        // Cut before the flags.
        f[54 + 13] = 0x02;
        assert_eq!(syn_tuple(&f[..54 + 13]), None);
        // An extension header first (hop-by-hop options).
        f[14 + 6] = 0;
        assert_eq!(syn_tuple(&f), None);
    }
}
