// SPDX-License-Identifier: GPL-2.0

//! Why a packet is dropped: the core's drop reasons.
//!
//! C header: [`include/net/dropreason-core.h`](srctree/include/net/dropreason-core.h)

/// Defines [`DropReason`] from a list of its variants, each `Name = C_NAME`
/// for `SKB_DROP_REASON_C_NAME`, and checks the list against `enum
/// skb_drop_reason` at build time.
macro_rules! drop_reasons {
    ($($(#[doc = $doc:literal])+ $name:ident = $c:ident,)+) => {
        crate::macros::paste! {
            /// Why a packet is dropped (`enum skb_drop_reason`): every core
            /// reason of `include/net/dropreason-core.h`, with its value,
            /// in its order. It is what
            /// [`SkBuff::drop_reason`](super::SkBuff::drop_reason) passes
            /// to `kfree_skb_reason()`, for drop monitors and the
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
