// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`), as a network driver handles them:
//! received packets it builds and hands to the stack, packets the stack
//! gives it to send.
//!
//! An [`SkBuff`] owns its buffer. A driver frees one by saying what became
//! of it: sent ([`SkBuff::consume`]) or dropped, and why
//! ([`SkBuff::drop_reason`] with a [`DropReason`]). Letting one go out of
//! scope instead is a bug that debug kernels report (see [`SkBuff`]).
//!
//! C header: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h)

#[cfg(CONFIG_PAGE_POOL)]
use crate::net::page_pool::PoolNetmem;
use crate::{
    device::{
        Bound,
        Device, //
    },
    dma::{
        DataDirection,
        DmaAddress, //
    },
    error::to_result,
    net::{
        napi::{
            NapiPoll,
            Poll, //
        },
        netdev::NetDevice, //
    },
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{
            Atomic,
            Relaxed, //
        }, //
    }, //
};
use core::{
    mem::ManuallyDrop,
    ptr::NonNull, //
};

/// Defines [`DropReason`] from a list of its variants, each `Name = C_NAME`
/// for `SKB_DROP_REASON_C_NAME`, and checks the list against `enum
/// skb_drop_reason` at build time.
macro_rules! drop_reasons {
    ($($(#[doc = $doc:literal])+ $name:ident = $c:ident,)+) => {
        crate::macros::paste! {
            /// Why a packet is dropped (`enum skb_drop_reason`): every core
            /// reason of `include/net/dropreason-core.h`, with its value,
            /// in its order. It is what [`SkBuff::drop_reason`] passes to
            /// `kfree_skb_reason()`, for drop monitors and the
            /// `skb:kfree_skb` tracepoint.
            ///
            /// The list is checked against C when the kernel crate builds:
            /// each value is the C constant of the same name (a reason C
            /// removes or renames is a build error), the values are
            /// distinct, and every value below `SKB_DROP_REASON_MAX` has
            /// its variant (a reason C adds is a build error until it is
            /// added here).
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            #[repr(u32)]
            pub enum DropReason {
                $(
                    $(#[doc = $doc])+
                    $name = bindings::[<skb_drop_reason_SKB_DROP_REASON_ $c>],
                )+
            }

            impl DropReason {
                /// The reason whose C value is `raw`, if there is one
                /// (`SKB_CONSUMED`, `SKB_DROP_REASON_MAX` and subsystem
                /// reasons are not).
                pub const fn from_raw(raw: u32) -> Option<Self> {
                    match raw {
                        $(bindings::[<skb_drop_reason_SKB_DROP_REASON_ $c>] => Some(Self::$name),)+
                        _ => None,
                    }
                }

                /// The number of reasons.
                const COUNT: usize = [$(Self::$name),+].len();
            }
        }
    };
}

drop_reasons! {
    /// Drop reason is not specified.
    NotSpecified = NOT_SPECIFIED,
    /// No valid socket that can be used. Reason could be one of three cases: 1)
    /// no established/listening socket found during lookup process 2) no valid
    /// request socket during 3WHS process 3) no valid child socket during 3WHS
    /// process.
    NoSocket = NO_SOCKET,
    /// Socket is `close()`d.
    SocketClose = SOCKET_CLOSE,
    /// Dropped by socket filter.
    SocketFilter = SOCKET_FILTER,
    /// Socket receive buff is full.
    SocketRcvBuff = SOCKET_RCVBUFF,
    /// Recv queue is purged when `SOCK_DGRAM` or `SOCK_SEQPACKET` socket
    /// `re-connect()`s to another socket or notices during `send()` that the
    /// peer has been `close()`d.
    UnixDisconnect = UNIX_DISCONNECT,
    /// Out-Of-Band data is skipped by `recv()` without `MSG_OOB` so dropped.
    UnixSkipOob = UNIX_SKIP_OOB,
    /// Packet size is too small.
    PktTooSmall = PKT_TOO_SMALL,
    /// TCP checksum error.
    TcpCsum = TCP_CSUM,
    /// UDP checksum error.
    UdpCsum = UDP_CSUM,
    /// Dropped by netfilter.
    NetfilterDrop = NETFILTER_DROP,
    /// Packet don't belong to current host (interface is in promisc mode).
    OtherHost = OTHERHOST,
    /// IP checksum error.
    IpCsum = IP_CSUM,
    /// There is something wrong with IP header (see `IPSTATS_MIB_INHDRERRORS`).
    IpInHdr = IP_INHDR,
    /// IP rpfilter validate failed. see the document for rp_filter in
    /// ip-sysctl.rst for more information.
    IpRpFilter = IP_RPFILTER,
    /// Destination address of L2 is multicast, but L3 is unicast.
    UnicastInL2Multicast = UNICAST_IN_L2_MULTICAST,
    /// Xfrm policy check failed.
    XfrmPolicy = XFRM_POLICY,
    /// No support for IP protocol.
    IpNoProto = IP_NOPROTO,
    /// Proto memory limitation, such as udp packet drop out of
    /// udp_memory_allocated.
    ProtoMem = PROTO_MEM,
    /// TCP-MD5 or TCP-AO hashes are met twice or set incorrectly.
    TcpAuthHdr = TCP_AUTH_HDR,
    /// No MD5 hash and one expected, corresponding to
    /// `LINUX_MIB_TCPMD5NOTFOUND`.
    TcpMd5NotFound = TCP_MD5NOTFOUND,
    /// MD5 hash and we're not expecting one, corresponding to
    /// `LINUX_MIB_TCPMD5UNEXPECTED`.
    TcpMd5Unexpected = TCP_MD5UNEXPECTED,
    /// MD5 hash and its wrong, corresponding to `LINUX_MIB_TCPMD5FAILURE`.
    TcpMd5Failure = TCP_MD5FAILURE,
    /// No TCP-AO hash and one was expected, corresponding to
    /// `LINUX_MIB_TCPAOREQUIRED`.
    TcpAoNotFound = TCP_AONOTFOUND,
    /// TCP-AO hash is present and it was not expected, corresponding to
    /// `LINUX_MIB_TCPAOKEYNOTFOUND`.
    TcpAoUnexpected = TCP_AOUNEXPECTED,
    /// TCP-AO key is unknown, corresponding to `LINUX_MIB_TCPAOKEYNOTFOUND`.
    TcpAoKeyNotFound = TCP_AOKEYNOTFOUND,
    /// TCP-AO hash is wrong, corresponding to `LINUX_MIB_TCPAOBAD`.
    TcpAoFailure = TCP_AOFAILURE,
    /// Failed to add skb to socket backlog ( see `LINUX_MIB_TCPBACKLOGDROP`).
    SocketBacklog = SOCKET_BACKLOG,
    /// TCP flags invalid.
    TcpFlags = TCP_FLAGS,
    /// Abort on data, corresponding to `LINUX_MIB_TCPABORTONDATA`.
    TcpAbortOnData = TCP_ABORT_ON_DATA,
    /// TCP receive window size is zero, see `LINUX_MIB_TCPZEROWINDOWDROP`.
    TcpZeroWindow = TCP_ZEROWINDOW,
    /// The TCP data received is already received before (spurious retrans may
    /// happened), see `LINUX_MIB_DELAYEDACKLOST`.
    TcpOldData = TCP_OLD_DATA,
    /// The TCP data is out of window, the seq of the first byte exceed the
    /// right edges of receive window.
    TcpOverWindow = TCP_OVERWINDOW,
    /// The data of skb is already in the ofo queue, corresponding to
    /// `LINUX_MIB_TCPOFOMERGE`.
    TcpOfoMerge = TCP_OFOMERGE,
    /// PAWS check, corresponding to `LINUX_MIB_PAWSESTABREJECTED`,
    /// `LINUX_MIB_PAWSACTIVEREJECTED`.
    TcpRfc7323Paws = TCP_RFC7323_PAWS,
    /// PAWS check, old ACK packet. Corresponds to `LINUX_MIB_PAWS_OLD_ACK`.
    TcpRfc7323PawsAck = TCP_RFC7323_PAWS_ACK,
    /// PAWS check, socket is in `TIME_WAIT` state. Corresponds to
    /// `LINUX_MIB_PAWS_TW_REJECTED`.
    TcpRfc7323TwPaws = TCP_RFC7323_TW_PAWS,
    /// PAWS check, invalid TSEcr. Corresponds to `LINUX_MIB_TSECRREJECTED`.
    TcpRfc7323TsEcr = TCP_RFC7323_TSECR,
    /// Listener queue full.
    TcpListenOverflow = TCP_LISTEN_OVERFLOW,
    /// Old SEQ field (duplicate packet).
    TcpOldSequence = TCP_OLD_SEQUENCE,
    /// Not acceptable SEQ field.
    TcpInvalidSequence = TCP_INVALID_SEQUENCE,
    /// Not acceptable `END_SEQ` field. Corresponds to
    /// `LINUX_MIB_BEYOND_WINDOW`.
    TcpInvalidEndSequence = TCP_INVALID_END_SEQUENCE,
    /// Not acceptable ACK SEQ field because ack sequence is not in the window
    /// between snd_una and snd_nxt.
    TcpInvalidAckSequence = TCP_INVALID_ACK_SEQUENCE,
    /// Invalid RST packet.
    TcpReset = TCP_RESET,
    /// Incoming packet has unexpected SYN flag.
    TcpInvalidSyn = TCP_INVALID_SYN,
    /// TCP socket in CLOSE state.
    TcpClose = TCP_CLOSE,
    /// Dropped by FASTOPEN request socket.
    TcpFastopen = TCP_FASTOPEN,
    /// TCP ACK is old, but in window.
    TcpOldAck = TCP_OLD_ACK,
    /// TCP ACK is too old.
    TcpTooOldAck = TCP_TOO_OLD_ACK,
    /// TCP ACK for data we haven't sent yet.
    TcpAckUnsentData = TCP_ACK_UNSENT_DATA,
    /// Pruned from TCP OFO queue.
    TcpOfoQueuePrune = TCP_OFO_QUEUE_PRUNE,
    /// Data already in receive queue.
    TcpOfoDrop = TCP_OFO_DROP,
    /// Route lookup failed.
    IpOutNoRoutes = IP_OUTNOROUTES,
    /// Dropped by `BPF_PROG_TYPE_CGROUP_SKB` eBPF program.
    BpfCgroupEgress = BPF_CGROUP_EGRESS,
    /// IPv6 is disabled on the device.
    Ipv6Disabled = IPV6DISABLED,
    /// Failed to create neigh entry.
    NeighCreateFail = NEIGH_CREATEFAIL,
    /// Neigh entry in failed state.
    NeighFailed = NEIGH_FAILED,
    /// Arp_queue for neigh entry is full.
    NeighQueueFull = NEIGH_QUEUEFULL,
    /// Neigh entry is dead.
    NeighDead = NEIGH_DEAD,
    /// Failed to fill the device hard header.
    NeighHhFillFail = NEIGH_HH_FILLFAIL,
    /// Dropped in TC egress HOOK.
    TcEgress = TC_EGRESS,
    /// Dropped due to security HOOK.
    SecurityHook = SECURITY_HOOK,
    /// Dropped by qdisc during enqueue or dequeue. More specific drop reasons
    /// are available via the qdisc:qdisc_drop tracepoint, which also provides
    /// qdisc handle and name for identifying the source.
    QdiscDrop = QDISC_DROP,
    /// Dropped when net.core.qdisc_max_burst limit is hit.
    QdiscBurstDrop = QDISC_BURST_DROP,
    /// Failed to enqueue the skb to the per CPU backlog queue. This can be
    /// caused by backlog queue full (see netdev_max_backlog in net.rst) or RPS
    /// flow limit.
    CpuBacklog = CPU_BACKLOG,
    /// Failed to enqueue the skb to macvlan broadcast queue.
    MacvlanBroadcastBacklog = MACVLAN_BROADCAST_BACKLOG,
    /// Failed to enqueue the skb to ipvlan multicast queue.
    IpvlanMulticastBacklog = IPVLAN_MULTICAST_BACKLOG,
    /// Dropped by XDP in input path.
    Xdp = XDP,
    /// Dropped in TC ingress HOOK.
    TcIngress = TC_INGRESS,
    /// Protocol not implemented or not supported.
    UnhandledProto = UNHANDLED_PROTO,
    /// Sk_buff checksum computation error.
    SkbCsum = SKB_CSUM,
    /// Gso segmentation error.
    SkbGsoSeg = SKB_GSO_SEG,
    /// Malicious gso packet.
    SkbBadGso = SKB_BAD_GSO,
    /// Failed to copy data from user space, e.g., via `zerocopy_sg_from_iter()`
    /// or `skb_orphan_frags_rx()`.
    SkbUCopyFault = SKB_UCOPY_FAULT,
    /// Device driver specific header/metadata is invalid.
    DevHdr = DEV_HDR,
    /// The device is not ready to xmit/recv due to any of its data structure
    /// that is not up/ready/initialized, e.g., the `IFF_UP` is not set, or
    /// driver specific `tun->tfiles[txq]` is not initialized.
    DevReady = DEV_READY,
    /// Ring buffer is full.
    FullRing = FULL_RING,
    /// Error due to OOM.
    NoMem = NOMEM,
    /// Failed to trunc/extract the header from networking data, e.g., failed to
    /// pull the protocol header from frags via `pskb_may_pull()`.
    HdrTrunc = HDR_TRUNC,
    /// Dropped by (ebpf) filter directly attached to tun/tap, e.g., via
    /// TUNSETFILTEREBPF.
    TapFilter = TAP_FILTER,
    /// Dropped by tx filter implemented at tun/tap, e.g., `check_filter()`.
    TapTxFilter = TAP_TXFILTER,
    /// ICMP checksum error.
    IcmpCsum = ICMP_CSUM,
    /// The packet doesn't follow RFC 2211, such as a broadcasts
    /// `ICMP_TIMESTAMP`.
    InvalidProto = INVALID_PROTO,
    /// Host unreachable, corresponding to `IPSTATS_MIB_INADDRERRORS`.
    IpInAddrErrors = IP_INADDRERRORS,
    /// Network unreachable, corresponding to `IPSTATS_MIB_INADDRERRORS`.
    IpInNoRoutes = IP_INNOROUTES,
    /// The source ip is local.
    IpLocalSource = IP_LOCAL_SOURCE,
    /// The source ip is invalid: 1) source ip is multicast or limited broadcast
    /// 2) source ip is zero and not IGMP.
    IpInvalidSource = IP_INVALID_SOURCE,
    /// Source or dest ip is local net.
    IpLocalNet = IP_LOCALNET,
    /// The dest ip is invalid: 1) dest ip is 0.
    IpInvalidDest = IP_INVALID_DEST,
    /// Packet size is too big (maybe exceed the MTU).
    PktTooBig = PKT_TOO_BIG,
    /// Duplicate fragment.
    DupFrag = DUP_FRAG,
    /// Fragment reassembly timeout.
    FragReasmTimeout = FRAG_REASM_TIMEOUT,
    /// Ipv4 fragment too far. (/proc/sys/net/ipv4/ipfrag_max_dist).
    FragTooFar = FRAG_TOO_FAR,
    /// Ipv4 ttl or ipv6 hoplimit below the threshold (`IP_MINTTL` or
    /// `IPV6_MINHOPCOUNT`).
    TcpMinTtl = TCP_MINTTL,
    /// Bad IPv6 extension header.
    Ipv6BadExtHdr = IPV6_BAD_EXTHDR,
    /// Number of IPv6 extension headers in the packet exceeds
    /// `IP6_MAX_EXT_HDRS_CNT`.
    Ipv6TooManyExtHdrs = IPV6_TOO_MANY_EXTHDRS,
    /// Invalid frag (suppress_frag_ndisc).
    Ipv6NdiscFrag = IPV6_NDISC_FRAG,
    /// Invalid hop limit.
    Ipv6NdiscHopLimit = IPV6_NDISC_HOP_LIMIT,
    /// Invalid NDISC icmp6 code.
    Ipv6NdiscBadCode = IPV6_NDISC_BAD_CODE,
    /// Invalid NDISC options.
    Ipv6NdiscBadOptions = IPV6_NDISC_BAD_OPTIONS,
    /// NEIGHBOUR SOLICITATION for another host.
    Ipv6NdiscNsOtherHost = IPV6_NDISC_NS_OTHERHOST,
    /// Bulk free.
    QueuePurge = QUEUE_PURGE,
    /// An error occurred whilst processing a tc ext cookie.
    TcCookieError = TC_COOKIE_ERROR,
    /// Generic packet socket errors after its filter matches an incoming
    /// packet.
    PacketSockError = PACKET_SOCK_ERROR,
    /// Tc chain lookup failed.
    TcChainNotFound = TC_CHAIN_NOTFOUND,
    /// Tc exceeded max reclassify loop iterations.
    TcReclassifyLoop = TC_RECLASSIFY_LOOP,
    /// VXLAN header is invalid. E.g.: 1) reserved fields are not zero 2) "I"
    /// flag is not set.
    VxlanInvalidHdr = VXLAN_INVALID_HDR,
    /// No VXLAN device found for VNI.
    VxlanVniNotFound = VXLAN_VNI_NOT_FOUND,
    /// Source mac is invalid.
    MacInvalidSource = MAC_INVALID_SOURCE,
    /// Trying to migrate a static entry or an entry pointing to a nexthop.
    VxlanEntryExists = VXLAN_ENTRY_EXISTS,
    /// No target found for xmit.
    NoTxTarget = NO_TX_TARGET,
    /// Skb is dropped according to RFC 6040 4.2, see `__INET_ECN_decapsulate()`
    /// for detail.
    IpTunnelEcn = IP_TUNNEL_ECN,
    /// Packet without necessary metadata reached a device which is in
    /// "external" mode.
    TunnelTxInfo = TUNNEL_TXINFO,
    /// The source MAC address is equal to the MAC address of the local netdev.
    LocalMac = LOCAL_MAC,
    /// Packet which is not IP is forwarded to the in_dev, and the
    /// proxy_arp_pvlan is not enabled.
    ArpPvlanDisable = ARP_PVLAN_DISABLE,
    /// The destination MAC address is an IEEE MAC Control address.
    MacIeeeMacControl = MAC_IEEE_MAC_CONTROL,
    /// The STP state of the ingress bridge port does not allow frames to be
    /// forwarded.
    BridgeIngressStpState = BRIDGE_INGRESS_STP_STATE,
    /// Received non conform CAN frame (or device is unable to receive CAN
    /// frames).
    CanRxInvalidFrame = CAN_RX_INVALID_FRAME,
    /// Received non conform CAN-FD frame (or device is unable to receive CAN
    /// frames).
    CanFdRxInvalidFrame = CANFD_RX_INVALID_FRAME,
    /// Received non conform CAN-XL frame (or device is unable to receive CAN
    /// frames).
    CanXlRxInvalidFrame = CANXL_RX_INVALID_FRAME,
    /// Packet allocated from memory reserve reached a path or socket not
    /// eligible for use of memory reserves.
    PfMemalloc = PFMEMALLOC,
    /// PSP input checks failed.
    PspInput = PSP_INPUT,
    /// PSP output checks failed.
    PspOutput = PSP_OUTPUT,
    /// Dead loop on virtual device.
    RecursionLimit = RECURSION_LIMIT,
}

// Every C reason has its variant (and so, the variants being as many as
// the C reasons and each a C reason, nothing else is one).
const _: () = {
    let first = bindings::skb_drop_reason_SKB_DROP_REASON_NOT_SPECIFIED;
    let max = bindings::skb_drop_reason_SKB_DROP_REASON_MAX;
    // CAST: about 130 reasons, below `max`.
    assert!(DropReason::COUNT == (max - first) as usize);
    let mut v = first;
    while v < max {
        assert!(DropReason::from_raw(v).is_some());
        v += 1;
    }
};

/// The most frags a packet has (`MAX_SKB_FRAGS`).
// CAST: a small configuration value.
pub const MAX_FRAGS: usize = bindings::MAX_SKB_FRAGS as usize;

/// The room a driver leaves in front of a received frame it builds a
/// packet around (`NET_SKB_PAD + NET_IP_ALIGN`): the stack pushes headers
/// there without copying the packet.
// CAST: small configuration values.
pub const RX_HEADROOM: u32 = {
    let pad = bindings::L1_CACHE_BYTES;
    (if pad > 32 { pad } else { 32 }) + bindings::NET_IP_ALIGN
};

/// The room a packet's shared info takes at the end of a buffer the packet
/// is built around (`SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`).
// CAST: a structure of a few hundred bytes.
pub const SHINFO_ROOM: u32 = {
    let align = bindings::SMP_CACHE_BYTES as usize;
    let size = core::mem::size_of::<bindings::skb_shared_info>();
    size.next_multiple_of(align) as u32
};

/// A checksum the device is to fill in (`CHECKSUM_PARTIAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsumOffload {
    /// Where the IP header starts in the packet.
    pub l3_offset: u32,
    /// Where the TCP or UDP header starts.
    pub l4_offset: u32,
    /// IPv4 (else IPv6).
    pub ipv4: bool,
    /// TCP (else UDP).
    pub tcp: bool,
}

/// A TCP packet longer than the MTU that the device is to cut into
/// segments (TSO): what [`SkBuff::tso`] or [`SkBuff::prepare_tso`] found,
/// what any device's segmentation offload is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tso {
    /// The checksums every segment needs.
    pub csum: CsumOffload,
    /// The headers every segment repeats: up to the end of TCP's.
    pub hdr_len: u32,
    /// Payload bytes per segment, the last excepted (`gso_size`).
    pub mss: u32,
    /// The segments it makes (`gso_segs`).
    pub segs: u32,
}

impl Tso {
    /// The bytes the segments put on the wire: the packet's, plus the
    /// headers each segment after the first repeats.
    pub fn wire_len(&self, len: u32) -> u32 {
        len.saturating_add(self.segs.saturating_sub(1).saturating_mul(self.hdr_len))
    }
}

/// Takes `len`, as a TCP pseudo-header counts it, out of the checksum seed
/// `seed` (the one's complement sum the stack left in the TCP header),
/// both in network order; the result keeps the representation
/// `csum_replace_by_diff()` gives.
fn csum_sub_len(seed: u16, len: u32) -> u16 {
    // Adding the complement subtracts: a 32-bit sum with the carry folded
    // back in, then folded to 16 bits and complemented.
    let (sum, carry) = len.overflowing_add(!u32::from(seed));
    let sum = sum + u32::from(carry);
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    // CAST: folded into 16 bits above.
    !(sum as u16)
}

/// The length of the headers of the TCP packet at the start of `head`
/// that each segment repeats: up to the end of the TCP header, which must
/// be in `head`.
fn tso_hdr_len(head: &[u8], c: &CsumOffload) -> Result<u32> {
    // CAST: offsets into the linear part, which is below 4 GiB.
    let (l3, l4) = (c.l3_offset as usize, c.l4_offset as usize);
    let doff = usize::from(head.get(l4 + 12).ok_or(EINVAL)? >> 4) * 4;
    let hdr_len = l4 + doff;
    if doff < 20 || hdr_len > head.len() || l4 < l3 {
        return Err(EINVAL);
    }
    // CAST: at most `head.len()`.
    Ok(hdr_len as u32)
}

/// Readies the headers of a TCP packet of `len` bytes at the start of
/// `head` for a device to segment: zeroes the IP length (and the IPv4
/// header checksum), which the device writes per segment, and takes the
/// TCP length out of the checksum seed, which the device adds per segment.
/// Returns the length of the headers.
fn tso_headers(head: &mut [u8], c: &CsumOffload, len: u32) -> Result<u32> {
    let hdr_len = tso_hdr_len(head, c)?;
    // CAST: as in `tso_hdr_len`.
    let (l3, l4) = (c.l3_offset as usize, c.l4_offset as usize);
    let zero = |head: &mut [u8], at: usize| -> Result {
        head.get_mut(at..at + 2).ok_or(EINVAL)?.fill(0);
        Ok(())
    };
    if c.ipv4 {
        // Total length, header checksum.
        zero(head, l3 + 2)?;
        zero(head, l3 + 10)?;
    } else {
        // Payload length.
        zero(head, l3 + 4)?;
    }
    let check = head.get_mut(l4 + 16..l4 + 18).ok_or(EINVAL)?;
    let seed = u16::from_be_bytes([check[0], check[1]]);
    // CAST: as above.
    let tcp_len = len.checked_sub(l4 as u32).ok_or(EINVAL)?;
    check.copy_from_slice(&csum_sub_len(seed, tcp_len).to_be_bytes());
    Ok(hdr_len)
}

/// How a [`TxMap`] was made, and so how it is undone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MapKind {
    /// `dma_map_single` of the linear part.
    Single,
    /// `dma_map_page` of a page frag.
    Page,
    /// A `net_iov` frag: its provider's mapping, nothing to undo.
    NetIov,
}

/// Maps packets for one device to read ([`SkBuff::map_for_tx`]) and undoes
/// those mappings ([`TxMap::unmap`]): a transmit ring's, made once with
/// it. It holds a reference to its device, so the device its mappings
/// were made for is still there to undo them.
///
/// # Invariants
///
/// `id` is this mapper's alone: no other mapper had or will have it.
pub struct TxMapper {
    dev: ARef<Device>,
    id: u64,
}

impl TxMapper {
    /// A mapper for `dev`.
    pub fn new(dev: &Device<Bound>) -> Self {
        /// The next mapper's `id`: a `u64` counted up once per mapper
        /// (one per transmit ring made) does not wrap.
        static NEXT_ID: Atomic<u64> = Atomic::new(0);
        // INVARIANT: each mapper takes a new value of the counter.
        Self {
            dev: dev.into(),
            id: NEXT_ID.fetch_add(1, Relaxed),
        }
    }
}

/// A part of a packet mapped for a device to read: the linear part or one
/// frag, for one transmit descriptor. [`TxMap::unmap`] undoes the mapping;
/// dropping it without leaks the mapping.
///
/// Unmapping is safe whenever it happens. The mapping is for the device
/// to read (`DMA_TO_DEVICE`): a device still reading after the unmap
/// reads whatever the address leads to by then (an IOMMU fault, or a
/// reused bounce buffer), so the frame on the wire is wrong, but nothing
/// is written to the CPU's memory and no bounce buffer is copied back.
/// Drivers unmap once the device reports the part sent. What must hold is
/// that a mapping is undone once, for the device it was made for: the
/// mapping names the [`TxMapper`] that made it, which alone undoes it, and
/// [`TxMap::unmap`] takes it by value.
///
/// # Invariants
///
/// `addr` and `len` are a mapping of kind `kind` made by the mapper whose
/// `id` is `mapper`, for its device; for `MapKind::Single` and
/// `MapKind::Page`, one not yet undone.
#[derive(Debug)]
pub struct TxMap {
    addr: DmaAddress,
    len: u32,
    kind: MapKind,
    mapper: u64,
}

impl TxMap {
    /// The device's address of the part.
    pub fn addr(&self) -> DmaAddress {
        self.addr
    }

    /// Its length.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Undoes the mapping, once the device no longer reads it. `mapper` is
    /// the mapper that made it; for another, it warns and leaks the
    /// mapping instead.
    ///
    /// A mapping is undone once: unmapping it takes it.
    ///
    /// ```ignore,compile_fail,E0382
    /// use kernel::net::skbuff::{
    ///     TxMap,
    ///     TxMapper, //
    /// };
    ///
    /// fn twice(mapper: &TxMapper, m: TxMap) {
    ///     m.unmap(mapper);
    ///     m.unmap(mapper);
    /// }
    /// ```
    pub fn unmap(self, mapper: &TxMapper) {
        if crate::warn_on!(mapper.id != self.mapper) {
            return;
        }
        let dev = mapper.dev.as_raw();
        let dir = DataDirection::ToDevice.into();
        // SAFETY: `mapper` made the mapping (its `id` is unique, checked
        // above), for its device, which its reference keeps, in this
        // direction and length (type invariant); `self` is taken, so the
        // mapping is undone once.
        unsafe {
            match self.kind {
                MapKind::Single => {
                    bindings::dma_unmap_single_attrs(dev, self.addr, self.len as usize, dir, 0)
                }
                MapKind::Page => {
                    bindings::dma_unmap_page_attrs(dev, self.addr, self.len as usize, dir, 0)
                }
                MapKind::NetIov => (),
            }
        }
    }
}

/// An owned socket buffer.
///
/// It is freed by what its owner says became of it: [`SkBuff::consume`]
/// (or [`SkBuff::napi_consume`]) once sent, [`SkBuff::drop_reason`] when
/// dropped, or handed on ([`SkBuff::into_raw`], or to the stack).
///
/// Dropped implicitly (out of scope, an early `?`, the container it was in
/// dropped), it is freed as `kfree_skb()` frees it, for
/// `SKB_DROP_REASON_NOT_SPECIFIED`, so no path leaks it; but that is a bug,
/// the kind of silent drop the drop reasons exist to end. With
/// `CONFIG_DEBUG_NET`, the first one warns (`WARN`, once, as
/// `DEBUG_NET_WARN_ON_ONCE()` does), naming where the buffer was made: a
/// constructor records its caller ([`SkBuff::from_raw`] and the
/// allocations built on it are `#[track_caller]` in those builds), and the
/// backtrace shows who dropped it. Without `CONFIG_DEBUG_NET` nothing is
/// recorded or checked.
///
/// The type cannot refuse to be dropped: Rust has no linear types, and a
/// `Drop` that fails to build would fail on every path that may drop one,
/// early returns included, whether taken or not.
///
/// # Invariants
///
/// `ptr` points to an `sk_buff` this value owns (one reference).
pub struct SkBuff {
    ptr: NonNull<bindings::sk_buff>,
    /// Where the buffer was made or taken over, for the report of an
    /// implicit drop.
    #[cfg(CONFIG_DEBUG_NET)]
    from: &'static core::panic::Location<'static>,
}

// SAFETY: an sk_buff may be passed between threads; its owner has it
// exclusively.
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// Takes ownership of the buffer at `ptr`. With `CONFIG_DEBUG_NET`,
    /// records the caller for the report of an implicit drop.
    ///
    /// # Safety
    ///
    /// `ptr` is a valid `sk_buff` whose reference the caller gives up.
    #[cfg_attr(CONFIG_DEBUG_NET, track_caller)]
    pub unsafe fn from_raw(ptr: *mut bindings::sk_buff) -> Self {
        // SAFETY: valid pointers are not null.
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        // INVARIANT: per the caller.
        Self {
            ptr,
            #[cfg(CONFIG_DEBUG_NET)]
            from: core::panic::Location::caller(),
        }
    }

    /// Gives up ownership, for C to take.
    pub fn into_raw(self) -> *mut bindings::sk_buff {
        ManuallyDrop::new(self).ptr.as_ptr()
    }

    /// The C `struct sk_buff`.
    pub fn as_raw(&self) -> *mut bindings::sk_buff {
        self.ptr.as_ptr()
    }

    fn raw(&self) -> &bindings::sk_buff {
        // SAFETY: owned, valid (type invariant).
        unsafe { self.ptr.as_ref() }
    }

    /// The length of the packet, linear part and frags.
    pub fn len(&self) -> u32 {
        self.raw().len
    }

    /// Whether the packet is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The transmit queue the stack picked (`skb_get_queue_mapping`).
    pub fn queue_mapping(&self) -> u16 {
        // SAFETY: the buffer is valid.
        unsafe { bindings::skb_get_queue_mapping(self.as_raw()) }
    }

    /// The length of the linear part (`skb_headlen`).
    pub fn headlen(&self) -> u32 {
        self.raw().len - self.raw().data_len
    }

    /// Copies `dst.len()` bytes of the packet from `offset`, across the
    /// linear part and frags (`skb_copy_bits`). Fails with `EFAULT` when the
    /// packet is shorter, or when a frag is unreadable (device memory).
    pub fn copy_bits(&self, offset: u32, dst: &mut [u8]) -> Result {
        let len = i32::try_from(dst.len()).map_err(|_| EINVAL)?;
        let offset = i32::try_from(offset).map_err(|_| EINVAL)?;
        // SAFETY: the buffer is valid; `dst` is writable for `len` bytes.
        to_result(unsafe {
            bindings::skb_copy_bits(self.as_raw(), offset, dst.as_mut_ptr().cast(), len)
        })
    }

    /// Whether the CPU can read every frag of the packet (no device memory).
    pub fn frags_readable(&self) -> bool {
        // SAFETY: the buffer is valid.
        unsafe { bindings::skb_frags_readable(self.as_raw()) }
    }

    /// Appends `data` to the linear part (`skb_put_data`); the caller made
    /// room for it.
    pub fn put_data(&mut self, data: &[u8]) -> Result {
        // SAFETY: the buffer is valid.
        let room = unsafe { bindings::skb_tailroom(self.as_raw()) };
        let len = u32::try_from(data.len()).map_err(|_| EINVAL)?;
        if i64::from(room) < i64::from(len) {
            return Err(ENOSPC);
        }
        // SAFETY: there is room for `len` bytes, checked above; `data` is
        // readable for `len` bytes.
        unsafe { bindings::skb_put_data(self.as_raw(), data.as_ptr().cast(), len) };
        Ok(())
    }

    /// The number of frags (`nr_frags`).
    pub fn nr_frags(&self) -> u32 {
        // SAFETY: the buffer is valid; its shared info follows its data.
        u32::from(unsafe { (*bindings::skb_shinfo(self.as_raw())).nr_frags })
    }

    /// The checksum the device is to fill in, if the stack left one
    /// (`CHECKSUM_PARTIAL`) in a TCP or UDP packet over IPv4 or IPv6.
    pub fn csum_offload(&self) -> Option<CsumOffload> {
        // SAFETY: the buffer is ours; read as `ip_summed` is read in C.
        let summed = unsafe {
            (*self.as_raw())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_ref()
                .ip_summed()
        };
        if u32::from(summed) != bindings::CHECKSUM_PARTIAL {
            return None;
        }
        // SAFETY: the buffer is valid.
        let (l3, l4) = unsafe {
            (
                bindings::skb_network_offset(self.as_raw()),
                bindings::skb_checksum_start_offset(self.as_raw()),
            )
        };
        let (l3, l4) = (u32::try_from(l3).ok()?, u32::try_from(l4).ok()?);
        // SAFETY: the headers of a packet to send are in its linear part.
        let head =
            unsafe { core::slice::from_raw_parts((*self.as_raw()).data, self.headlen() as usize) };
        let ipv4 = match head.get(l3 as usize)? >> 4 {
            4 => true,
            6 => false,
            _ => return None,
        };
        let proto = if ipv4 {
            head.get(l3 as usize + 9)?
        } else {
            head.get(l3 as usize + 6)?
        };
        let tcp = match proto {
            6 => true,
            17 => false,
            _ => return None,
        };
        Some(CsumOffload {
            l3_offset: l3,
            l4_offset: l4,
            ipv4,
            tcp,
        })
    }

    /// The segment size, segment count and checksum offsets of a TCP
    /// packet the stack handed over for the device to segment
    /// (`skb_is_gso`); `None` for one it is not to segment.
    fn gso_tcp(&self) -> Result<Option<(u32, u32, CsumOffload)>> {
        // SAFETY: the buffer is valid; its shared info follows its data.
        let (mss, segs, kind) = unsafe {
            let sh = &*bindings::skb_shinfo(self.as_raw());
            (sh.gso_size, sh.gso_segs, sh.gso_type)
        };
        if mss == 0 {
            return Ok(None);
        }
        // CAST: flags of `enum skb_gso_type`, in `gso_type`'s unsigned int.
        let tcp = (bindings::SKB_GSO_TCPV4 | bindings::SKB_GSO_TCPV6) as u32;
        if kind & tcp == 0 {
            return Err(EINVAL);
        }
        let csum = self.csum_offload().filter(|c| c.tcp).ok_or(EINVAL)?;
        Ok(Some((mss.into(), segs.into(), csum)))
    }

    /// If the stack handed over a TCP packet for the device to segment
    /// (`skb_is_gso`), says how to segment it, its headers left as the
    /// stack made them: for a device that rewrites each segment's lengths
    /// and checksums from the headers as they are. A device that wants
    /// them readied first uses [`SkBuff::prepare_tso`].
    ///
    /// Fails with `EINVAL` for a packet that is not TCP over IPv4 or IPv6
    /// with its headers in the linear part.
    pub fn tso(&self) -> Result<Option<Tso>> {
        let Some((mss, segs, csum)) = self.gso_tcp()? else {
            return Ok(None);
        };
        // SAFETY: the linear part is `headlen` bytes at `data`, which no
        // one writes while the packet is ours: whoever shares it through a
        // clone copies it before writing (`skb_cow_head`, `skb_unshare`).
        let head =
            unsafe { core::slice::from_raw_parts((*self.as_raw()).data, self.headlen() as usize) };
        let hdr_len = tso_hdr_len(head, &csum)?;
        Ok(Some(Tso {
            csum,
            hdr_len,
            mss,
            segs,
        }))
    }

    /// [`SkBuff::tso`], with the headers readied the way most devices
    /// that write each segment's lengths and add them into its checksums
    /// want them: the IP length fields and the IPv4 header checksum
    /// zeroed, and the TCP checksum seeded with the pseudo-header without
    /// the TCP length. That is the convention of `tcp_v6_gso_csum_prep()`
    /// and of its IPv4 counterpart, which drivers open-code (e1000, e1000e,
    /// igb, ixgbe, r8169, atl1c, alx, jme, vmxnet3 and others).
    ///
    /// Copies the headers first when they are shared (`skb_cow_head`),
    /// which fails with `ENOMEM`. Fails with `EINVAL` for a packet that is
    /// not TCP over IPv4 or IPv6 with its headers in the linear part,
    /// leaving the headers as they were.
    pub fn prepare_tso(&mut self) -> Result<Option<Tso>> {
        let Some((mss, segs, csum)) = self.gso_tcp()? else {
            return Ok(None);
        };
        // SAFETY: the buffer is valid and ours.
        to_result(unsafe { bindings::skb_cow_head(self.as_raw(), 0) })?;
        let len = self.len();
        // SAFETY: the linear part is `headlen` bytes at `data`, and, after
        // `skb_cow_head`, this packet's alone to write.
        let head = unsafe {
            core::slice::from_raw_parts_mut((*self.as_raw()).data, self.headlen() as usize)
        };
        let hdr_len = tso_headers(head, &csum, len)?;
        Ok(Some(Tso {
            csum,
            hdr_len,
            mss,
            segs,
        }))
    }

    /// How many pieces of at most `max` bytes the packet's linear part and
    /// frags make: the transmit descriptors it takes when each holds at
    /// most `max` bytes.
    pub fn tx_pieces(&self, max: u32) -> usize {
        let max = max.max(1);
        // CAST: u32 to usize is lossless on Linux.
        let pieces = |len: u32| len.div_ceil(max) as usize;
        // SAFETY: the buffer is valid; its shared info follows its data.
        let shinfo = unsafe { &*bindings::skb_shinfo(self.as_raw()) };
        let frags = shinfo.frags.iter().take(usize::from(shinfo.nr_frags));
        pieces(self.headlen()) + frags.map(|f| pieces(f.len)).sum::<usize>()
    }

    /// Maps the packet for `dev` to read with `mapper`, `dev`'s: the
    /// linear part (unless empty), then each frag; `net_iov` frags have
    /// their provider's addresses. Hands each part to `f` in order. Stops
    /// at the first error (of the mapping, or of `f`); the parts handed
    /// over are `f`'s to unmap. `EINVAL` if `mapper` is another device's.
    pub fn map_for_tx(
        &self,
        dev: &Device<Bound>,
        mapper: &TxMapper,
        mut f: impl FnMut(TxMap) -> Result,
    ) -> Result {
        if mapper.dev.as_raw() != dev.as_raw() {
            return Err(EINVAL);
        }
        let raw = self.as_raw();
        let dir = DataDirection::ToDevice.into();
        let headlen = self.headlen();
        if headlen > 0 {
            // SAFETY: the linear part is `headlen` bytes at `data`, kept
            // alive by the packet until the mapping is undone.
            let addr = unsafe {
                bindings::dma_map_single_attrs(
                    dev.as_raw(),
                    (*raw).data.cast(),
                    headlen as usize,
                    dir,
                    0,
                )
            };
            // SAFETY: checks the address just returned for `dev`.
            if unsafe { bindings::dma_mapping_error(dev.as_raw(), addr) } != 0 {
                return Err(ENOMEM);
            }
            // INVARIANT: mapped just now for `dev`, `mapper`'s device.
            f(TxMap {
                addr,
                len: headlen,
                kind: MapKind::Single,
                mapper: mapper.id,
            })?;
        }
        // SAFETY: the buffer is valid.
        let shinfo = unsafe { &*bindings::skb_shinfo(raw) };
        for frag in shinfo.frags.iter().take(usize::from(shinfo.nr_frags)) {
            let len = frag.len;
            // CAST: the tag bit of a `netmem_ref`.
            let net_iov = frag.netmem & (bindings::NET_IOV as bindings::netmem_ref) != 0;
            // SAFETY: a frag of this packet, kept alive by it; a page is
            // mapped, a `net_iov` gives its provider's address.
            let addr =
                unsafe { bindings::__skb_frag_dma_map(dev.as_raw(), frag, 0, len as usize, dir) };
            // SAFETY: as above.
            if !net_iov && unsafe { bindings::dma_mapping_error(dev.as_raw(), addr) } != 0 {
                return Err(ENOMEM);
            }
            // INVARIANT: as above, or the provider's mapping, which is
            // not undone.
            f(TxMap {
                addr,
                len,
                kind: if net_iov {
                    MapKind::NetIov
                } else {
                    MapKind::Page
                },
                mapper: mapper.id,
            })?;
        }
        Ok(())
    }

    /// Appends the `len` bytes of page pool buffer `buf` starting `off`
    /// bytes into it as a frag (`skb_add_rx_frag_netmem`) that accounts
    /// for the whole buffer's memory, and marks the packet's frags for
    /// return to their pools when it is freed (`skb_mark_for_recycle`).
    /// The frag takes the buffer's reference. A `net_iov` frag makes the
    /// packet unreadable. Hands the buffer back when the packet has no
    /// free frag slot or the range is not inside the buffer.
    #[cfg(CONFIG_PAGE_POOL)]
    pub fn add_rx_frag(&mut self, buf: PoolNetmem, off: u32, len: u32) -> Result<(), PoolNetmem> {
        let truesize = buf.size();
        // SAFETY: the buffer is valid; its shared info follows its data.
        let nr = unsafe { (*bindings::skb_shinfo(self.as_raw())).nr_frags };
        // CAST: MAX_SKB_FRAGS is a small constant.
        if usize::from(nr) >= MAX_FRAGS || !buf.holds(off, len) {
            return Err(buf);
        }
        let (Ok(o), Ok(l)) = (i32::try_from(buf.offset() + off), i32::try_from(len)) else {
            return Err(buf);
        };
        let (netmem, _) = buf.into_raw();
        // SAFETY: slot `nr` is free; the frag takes the pool reference the
        // buffer held, and the recycle mark makes freeing the packet give
        // it back to the pool.
        unsafe {
            bindings::skb_add_rx_frag_netmem(
                self.as_raw(),
                nr.into(),
                netmem.as_raw(),
                o,
                l,
                truesize,
            );
            bindings::skb_mark_for_recycle(self.as_raw());
        }
        Ok(())
    }

    /// The length of the protocol headers at the start of `frame`, as far
    /// as the flow dissector finds them (`eth_get_headlen`): what a driver
    /// copies into the linear part.
    pub fn eth_headlen(dev: &NetDevice, frame: &[u8]) -> u32 {
        let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        // SAFETY: `frame` is readable for `len` bytes; `dev` is live.
        unsafe { bindings::eth_get_headlen(dev.as_raw(), frame.as_ptr().cast(), len) }
    }

    /// Sets the protocol from the Ethernet header, and the device the
    /// packet came in on (`eth_type_trans`).
    pub fn eth_type_trans(&mut self, dev: &NetDevice) {
        // SAFETY: the buffer holds at least an Ethernet header (the caller
        // put a frame in it); `dev` is a live device.
        let proto = unsafe { bindings::eth_type_trans(self.as_raw(), dev.as_raw()) };
        // SAFETY: the buffer is ours; `protocol` sits in the `headers`
        // struct group (a union of two views of the same fields).
        unsafe {
            (*self.as_raw())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_mut()
                .protocol = proto
        };
    }

    /// Marks the packet's checksums as checked by the device
    /// (`CHECKSUM_UNNECESSARY`): the stack does not check them again, which
    /// it could not do over unreadable frags.
    pub fn set_csum_unnecessary(&mut self) {
        // CAST: 1, into a two-bit field.
        let v = bindings::CHECKSUM_UNNECESSARY as u8;
        // SAFETY: the buffer is ours; `ip_summed` sits in the `headers`
        // struct group, as `protocol` does.
        unsafe {
            (*self.as_raw())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_mut()
                .set_ip_summed(v)
        };
    }

    /// Records the hash the device computed over the flow's addresses and
    /// ports (`skb_set_hash`, `PKT_HASH_TYPE_L4`).
    pub fn set_l4_hash(&mut self, hash: u32) {
        // SAFETY: the buffer is ours.
        unsafe {
            bindings::skb_set_hash(
                self.as_raw(),
                hash,
                bindings::pkt_hash_types_PKT_HASH_TYPE_L4,
            )
        };
    }

    /// Records the hash the device computed over the flow's addresses only
    /// (`skb_set_hash`, `PKT_HASH_TYPE_L3`).
    pub fn set_l3_hash(&mut self, hash: u32) {
        // SAFETY: the buffer is ours.
        unsafe {
            bindings::skb_set_hash(
                self.as_raw(),
                hash,
                bindings::pkt_hash_types_PKT_HASH_TYPE_L3,
            )
        };
    }

    /// Frees the packet as sent (`dev_consume_skb_any`), in any context.
    pub fn consume(self) {
        // SAFETY: the buffer is ours to free.
        unsafe {
            bindings::dev_kfree_skb_any_reason(
                self.into_raw(),
                bindings::skb_drop_reason_SKB_CONSUMED,
            )
        }
    }

    /// Frees the packet as sent, from the poll `napi` of a NAPI instance
    /// (`napi_consume_skb`): into the per-CPU NAPI cache, unless the poll
    /// has no budget (netpoll), when it is freed as [`SkBuff::consume`]
    /// frees it. Outside a poll, there is [`SkBuff::consume`].
    pub fn napi_consume<T: Poll>(self, napi: &NapiPoll<'_, T>) {
        // SAFETY: the buffer is ours to free; in a NAPI poll, whose budget
        // is passed as it came (0 makes it `dev_consume_skb_any`).
        unsafe { bindings::napi_consume_skb(self.into_raw(), napi.budget()) }
    }

    /// Frees the packet as dropped, for `reason` (`kfree_skb_reason`).
    pub fn drop_reason(self, reason: DropReason) {
        // SAFETY: the buffer is ours to free.
        unsafe {
            bindings::sk_skb_reason_drop(
                core::ptr::null_mut(),
                self.into_raw(),
                reason as bindings::skb_drop_reason,
            )
        }
    }
}

impl Drop for SkBuff {
    /// Frees a buffer its owner said nothing about; see [`SkBuff`].
    fn drop(&mut self) {
        #[cfg(CONFIG_DEBUG_NET)]
        crate::do_once_lite! {
            crate::pr_warn!(
                "sk_buff from {}:{} dropped without a reason: use drop_reason() or consume()\n",
                self.from.file(),
                self.from.line()
            );
            crate::warn_on!(true);
        }
        // SAFETY: the buffer is ours to free (type invariant).
        unsafe {
            bindings::sk_skb_reason_drop(
                core::ptr::null_mut(),
                self.ptr.as_ptr(),
                DropReason::NotSpecified as bindings::skb_drop_reason,
            )
        }
    }
}

#[macros::kunit_tests(rust_kernel_skbuff)]
mod tests {
    use super::*;

    /// The seed the stack leaves in a TCP header for checksum offload: the
    /// folded sum of the IPv4 pseudo-header 192.0.2.1 > 192.0.2.2 with TCP
    /// length `len`.
    fn seed(len: u32) -> u16 {
        let words = [0xc000, 0x0201, 0xc000, 0x0202, 6, len >> 16, len & 0xffff];
        let mut sum: u32 = words.iter().sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        // CAST: folded into 16 bits.
        sum as u16
    }

    #[test]
    fn the_tcp_length_leaves_the_checksum_seed() {
        for len in [20, 1480, 40_000, 65_515, 70_000] {
            assert_eq!(csum_sub_len(seed(len), len), seed(0));
        }
    }

    /// An Ethernet, IPv4 and TCP header (32 bytes of it: options) of a
    /// packet of `len` bytes, as the stack hands it over for TSO.
    fn tcp4(len: u32) -> [u8; 66] {
        let mut h = [0u8; 66];
        h[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        h[14] = 0x45;
        // CAST: test values below 64 KiB.
        h[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        h[23] = 6;
        h[24..26].copy_from_slice(&0xabcdu16.to_be_bytes());
        h[34 + 12] = 8 << 4;
        h[34 + 16..34 + 18].copy_from_slice(&seed(len - 34).to_be_bytes());
        h
    }

    const CSUM4: CsumOffload = CsumOffload {
        l3_offset: 14,
        l4_offset: 34,
        ipv4: true,
        tcp: true,
    };

    #[test]
    fn tso_zeroes_the_ipv4_lengths_and_reseeds_tcp() -> Result {
        let mut h = tcp4(30_000);
        assert_eq!(tso_headers(&mut h, &CSUM4, 30_000)?, 66);
        assert_eq!(h[16..18], [0, 0]);
        assert_eq!(h[24..26], [0, 0]);
        assert_eq!(h[50..52], seed(0).to_be_bytes());
        // The rest is left alone.
        assert_eq!(h[14], 0x45);
        assert_eq!(h[46], 8 << 4);
        Ok(())
    }

    #[test]
    fn tso_header_length_leaves_the_headers_alone() -> Result {
        let h = tcp4(30_000);
        assert_eq!(tso_hdr_len(&h, &CSUM4)?, 66);
        assert_eq!(h, tcp4(30_000));
        assert_eq!(tso_hdr_len(&h[..65], &CSUM4), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn tso_zeroes_the_ipv6_payload_length() -> Result {
        let mut h = [0u8; 74];
        h[14] = 0x60;
        h[18..20].copy_from_slice(&1000u16.to_be_bytes());
        h[20] = 6;
        h[54 + 12] = 5 << 4;
        let c = CsumOffload {
            l3_offset: 14,
            l4_offset: 54,
            ipv4: false,
            tcp: true,
        };
        assert_eq!(tso_headers(&mut h, &c, 1074)?, 74);
        assert_eq!(h[18..20], [0, 0]);
        assert_eq!(h[20], 6);
        Ok(())
    }

    #[test]
    fn tso_refuses_headers_beyond_the_linear_part() {
        let mut h = tcp4(30_000);
        // The TCP header says 32 bytes; the linear part ends 2 short.
        assert_eq!(tso_headers(&mut h[..64], &CSUM4, 30_000), Err(EINVAL));
        let mut h = tcp4(30_000);
        h[46] = 4 << 4;
        assert_eq!(tso_headers(&mut h, &CSUM4, 30_000), Err(EINVAL));
        // Nothing was written on the way out.
        assert_eq!(h[16..18], 29_986u16.to_be_bytes());
    }

    #[test]
    fn mappers_of_one_device_are_told_apart() -> Result {
        let faux = crate::faux::Registration::new(c"rust-skbuff-test", None)?;
        let fdev: &crate::faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        // A ring made again for the same device does not undo the old
        // ring's mappings.
        let (a, b) = (TxMapper::new(dev), TxMapper::new(dev));
        assert_ne!(a.id, b.id);
        assert_eq!(a.dev.as_raw(), b.dev.as_raw());
        Ok(())
    }

    #[test]
    fn wire_length_repeats_the_headers() {
        let t = Tso {
            csum: CSUM4,
            hdr_len: 66,
            mss: 1448,
            segs: 3,
        };
        assert_eq!(t.wire_len(66 + 3 * 1448), 3 * (66 + 1448));
    }
}
