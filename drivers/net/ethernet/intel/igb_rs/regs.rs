// SPDX-License-Identifier: GPL-2.0

//! Registers and descriptor bits of the 82576 that the driver programs.
//!
//! Offsets and bits are those of the 82576 datasheet, as the C igb driver
//! names them (`drivers/net/ethernet/intel/igb/e1000_regs.h`,
//! `e1000_defines.h`, `e1000_82575.h`).

/// BAR0, the register window: 128 KiB.
pub(crate) const BAR0_SIZE: usize = 0x20000;

pub(crate) const CTRL: usize = 0x0000;
pub(crate) const STATUS: usize = 0x0008;
/// EEPROM/flash control: NVM present, and the auto-read after reset done.
pub(crate) const EECD: usize = 0x0010;
/// EEPROM read: one NVM word through the device.
pub(crate) const EERD: usize = 0x0014;
pub(crate) const CTRL_EXT: usize = 0x0018;
pub(crate) const MDIC: usize = 0x0020;
/// Flow control: the pause frames' destination address (low and high
/// registers) and Ethernet type, and the pause time sent (FCTTV).
pub(crate) const FCAL: usize = 0x0028;
pub(crate) const FCAH: usize = 0x002c;
pub(crate) const FCT: usize = 0x0030;
pub(crate) const FCTTV: usize = 0x0170;
/// 01:80:C2:00:00:01, the 802.3x pause address, and type 0x8808.
pub(crate) const FCAL_PAUSE: u32 = 0x00c2_8001;
pub(crate) const FCAH_PAUSE: u32 = 0x0100;
pub(crate) const FCT_PAUSE: u32 = 0x8808;
/// The longest pause asked of the partner (C's fc.pause_time).
pub(crate) const FCTTV_MAX: u32 = 0xffff;
/// Flow control receive thresholds: XOFF is sent when the receive packet
/// buffer fills above FCRTH, XON (with FCRTL.XONE) when it drains below
/// FCRTL; bytes, 16-byte granular.
pub(crate) const FCRTL: usize = 0x2160;
pub(crate) const FCRTH: usize = 0x2168;
pub(crate) const FCRTL_XONE: u32 = 1 << 31;
/// Receive packet buffer size in KiB, bits 6:0 (64 KiB at reset).
pub(crate) const RXPBS: usize = 0x2404;
pub(crate) const RXPBS_SIZE_MASK: u32 = 0x7f;
/// Manageability EEPROM control: the configuration cycle of each port done.
pub(crate) const EEMNGCTL: usize = 0x1010;
/// PCIe control: completion timeout.
pub(crate) const GCR: usize = 0x5b00;
pub(crate) const ICR: usize = 0x00c0;
pub(crate) const IMS: usize = 0x00d0;
pub(crate) const IMC: usize = 0x00d8;
pub(crate) const RCTL: usize = 0x0100;
pub(crate) const TCTL: usize = 0x0400;
pub(crate) const GPIE: usize = 0x1514;
pub(crate) const EIMS: usize = 0x1524;
pub(crate) const EIMC: usize = 0x1528;
pub(crate) const EIAC: usize = 0x152c;
pub(crate) const EIAM: usize = 0x1530;
/// EITR(n): the shortest interval between interrupts of vector n.
pub(crate) const fn eitr(n: u32) -> usize {
    0x1680 + 4 * n as usize
}
/// EITR: the interval, bits 14:2, in 1 µs steps on the 82576: the register
/// holds the microseconds shifted left by 2 (`usecs << 2`, as the C igb
/// writes them). QEMU's model takes the whole register value as a count
/// of 1.024 µs steps, so an interval there lasts about four times as long
/// as on silicon.
pub(crate) const EITR_INTERVAL_MASK: u32 = 0x7ffc;
pub(crate) const EITR_INTERVAL_SHIFT: u32 = 2;
/// EITR: the write does not reset the interval and moderation counters.
pub(crate) const EITR_CNT_IGNR: u32 = 1 << 31;
pub(crate) const IVAR0: usize = 0x1700;
pub(crate) const IVAR_MISC: usize = 0x1740;
/// Frames missed because the receive packet buffer was full; cleared when
/// read, as every statistics register, which also stops at all ones
/// rather than wrap.
pub(crate) const MPC: usize = 0x4010;
/// Frames that arrived while their queue had no free descriptor (receive
/// no buffers count), cleared when read. Such a frame waits in the packet
/// buffer, whose misses MPC counts once it is full, or, with
/// SRRCTL.DROP_EN, is dropped and counted in the queue's RQDPC (whether
/// RNBC counts those too is UNVERIFIED).
pub(crate) const RNBC: usize = 0x40a0;
/// Pause frame counters, cleared when read: XON and XOFF received and
/// sent.
pub(crate) const XONRXC: usize = 0x4048;
pub(crate) const XONTXC: usize = 0x404c;
pub(crate) const XOFFRXC: usize = 0x4050;
pub(crate) const XOFFTXC: usize = 0x4054;
pub(crate) const RLPML: usize = 0x5004;
/// Receive filter control.
pub(crate) const RFCTL: usize = 0x5008;
pub(crate) const MTA: usize = 0x5200;
pub(crate) const MTA_REGS: usize = 128;
pub(crate) const RAL0: usize = 0x5400;
pub(crate) const RAH0: usize = 0x5404;
/// Receive address registers: `n` < 16 at RAL0/RAH0 + 8n.
pub(crate) const RAR_COUNT: usize = 16;
/// Packet split receive type, `n` < 8 at +4n, one per pool: the frame
/// types whose headers header split (SRRCTL.DESCTYPE) puts in the header
/// buffer. Bit `k` is the datasheet's PSR_type`k`; a frame of a type whose
/// bit is clear, or of no type, goes whole to the packet buffer (SPH 0).
/// The C igb never writes it (it never splits), nor does QEMU model it.
pub(crate) const PSRTYPE: usize = 0x5480;
pub(crate) const PSRTYPE_REGS: usize = 8;
/// PSRTYPE types: an IPv4 fragment (split after the IP header), IPv4 then
/// TCP, IPv4 then UDP (split after the TCP or UDP header); the same for
/// IPv6 (7 to 9). Types 0 (split after the Ethernet header, whatever
/// follows) and 4 to 6 (IPv6 in IPv4) are not used.
pub(crate) const PSRTYPE_IPV4_FRAG: u32 = 1 << 1;
pub(crate) const PSRTYPE_IPV4_TCP: u32 = 1 << 2;
pub(crate) const PSRTYPE_IPV4_UDP: u32 = 1 << 3;
pub(crate) const PSRTYPE_IPV6_FRAG: u32 = 1 << 7;
pub(crate) const PSRTYPE_IPV6_TCP: u32 = 1 << 8;
pub(crate) const PSRTYPE_IPV6_UDP: u32 = 1 << 9;
/// RAH: the entry is valid; the low 16 bits hold address bytes 4 and 5.
pub(crate) const RAH_AV: u32 = 1 << 31;
/// RAH: address select and pool bits, which the hardware loads with the
/// first entry and the driver keeps.
pub(crate) const RAH_CTL: u32 = 0x7fff_0000;
pub(crate) const VFTA: usize = 0x5600;
pub(crate) const MRQC: usize = 0x5818;
pub(crate) const RXCSUM: usize = 0x5000;
/// RSS indirection table: 32 registers of four one-byte entries.
pub(crate) const RETA: usize = 0x5c00;
/// RSS hash key: 10 registers.
pub(crate) const RSSRK: usize = 0x5c80;

// Five-tuple queue filters, `n` < 8 at +4n: source and destination IPv4
// address, source port, then the filter's control (FTQF); destination
// port and priority (IMIR), size and TCP flag compares (IMIREXT). The
// addresses and ports are in network order, first byte lowest. QEMU's
// model has none of them: writes are dropped and reads return 0.
pub(crate) const SAQF: usize = 0x5980;
pub(crate) const DAQF: usize = 0x59a0;
pub(crate) const SPQF: usize = 0x59c0;
pub(crate) const FTQF: usize = 0x59e0;
pub(crate) const IMIR: usize = 0x5a80;
pub(crate) const IMIREXT: usize = 0x5aa0;
/// FTQF: the IP protocol to compare, bits 7:0.
pub(crate) const FTQF_PROTO_TCP: u32 = 6;
/// FTQF: a matching frame goes to the queue in bits 25:16.
pub(crate) const FTQF_QUEUE_ENABLE: u32 = 1 << 8;
pub(crate) const FTQF_QUEUE_SHIFT: u32 = 16;
pub(crate) const FTQF_QUEUE_MASK: u32 = 0x03ff_0000;
/// FTQF: do not compare the pool (no virtualization here).
pub(crate) const FTQF_VF_BP: u32 = 1 << 15;
/// FTQF: do not compare the protocol, source address, destination address,
/// source port.
pub(crate) const FTQF_PROTO_BP: u32 = 1 << 28;
pub(crate) const FTQF_SRC_ADDR_BP: u32 = 1 << 29;
pub(crate) const FTQF_DST_ADDR_BP: u32 = 1 << 30;
pub(crate) const FTQF_SRC_PORT_BP: u32 = 1 << 31;
/// FTQF: every five-tuple compare bypassed (E1000_FTQF_MASK).
pub(crate) const FTQF_MASK: u32 =
    FTQF_PROTO_BP | FTQF_SRC_ADDR_BP | FTQF_DST_ADDR_BP | FTQF_SRC_PORT_BP;
/// FTQF of a filter out of use, as the C igb (`igb_ptp.c`) and DPDK's
/// 82576 code write it: nothing compared (so SAQF, DAQF, SPQF and IMIR
/// are not looked at, whatever they hold), no queue.
pub(crate) const FTQF_DISABLED: u32 = FTQF_VF_BP | FTQF_MASK;
/// IMIR: do not compare the destination port (bits 15:0).
pub(crate) const IMIR_PORT_BP: u32 = 1 << 17;
/// IMIR: the filter's priority, bits 31:29; the highest of the filters a
/// frame matches wins.
pub(crate) const IMIR_PRIORITY_SHIFT: u32 = 29;
pub(crate) const IMIR_PRIORITY_MASK: u32 = 7 << IMIR_PRIORITY_SHIFT;
/// IMIREXT: do not compare the frame size, nor the TCP flags.
pub(crate) const IMIREXT_SIZE_BP: u32 = 1 << 12;
pub(crate) const IMIREXT_CTRL_BP: u32 = 1 << 19;

/// Receive queue `n`'s registers (`n` < 16).
pub(crate) const fn rxq(n: usize) -> usize {
    0xc000 + 0x40 * n
}

/// Transmit queue `n`'s registers (`n` < 16).
pub(crate) const fn txq(n: usize) -> usize {
    0xe000 + 0x40 * n
}

// Offsets inside a queue's block.
pub(crate) const Q_BAL: usize = 0x00;
pub(crate) const Q_BAH: usize = 0x04;
pub(crate) const Q_LEN: usize = 0x08;
pub(crate) const Q_SRRCTL: usize = 0x0c;
pub(crate) const Q_HEAD: usize = 0x10;
pub(crate) const Q_TAIL: usize = 0x18;
pub(crate) const Q_DCTL: usize = 0x28;
/// Receive queue only: frames dropped for lack of descriptors (with
/// SRRCTL.DROP_EN), cleared when read.
pub(crate) const Q_DPC: usize = 0x30;

/// CTRL: the device issues no new DMA (master) requests.
pub(crate) const CTRL_GIO_MASTER_DISABLE: u32 = 1 << 2;
pub(crate) const CTRL_SLU: u32 = 1 << 6;
pub(crate) const CTRL_RST: u32 = 1 << 26;
/// CTRL: honour received pause frames; send them.
pub(crate) const CTRL_RFCE: u32 = 1 << 27;
pub(crate) const CTRL_TFCE: u32 = 1 << 28;
/// STATUS: full duplex, link up, and the speed (bits 7:6: 0 10 Mb/s,
/// 1 100 Mb/s, 2 or 3 1000 Mb/s).
pub(crate) const STATUS_FD: u32 = 1 << 0;
pub(crate) const STATUS_LU: u32 = 1 << 1;
pub(crate) const STATUS_SPEED_SHIFT: u32 = 6;
pub(crate) const STATUS_SPEED_MASK: u32 = 3 << STATUS_SPEED_SHIFT;
/// STATUS: transmission paused: the link partner's XOFF pause frame holds
/// the transmit unit until its pause time runs out or an XON comes.
pub(crate) const STATUS_TXOFF: u32 = 1 << 4;
/// STATUS: the PCI function, i.e. the port of a multi-port card, bits 3:2.
pub(crate) const STATUS_FUNC_SHIFT: u32 = 2;
pub(crate) const STATUS_FUNC_MASK: u32 = 3 << STATUS_FUNC_SHIFT;
/// STATUS: DMA (master) requests are still pending; reads 0 some time
/// after CTRL.GIO_MASTER_DISABLE is set.
pub(crate) const STATUS_GIO_MASTER_ENABLE: u32 = 1 << 19;
/// CTRL_EXT: a driver runs the device (manageability firmware backs off).
pub(crate) const CTRL_EXT_DRV_LOAD: u32 = 1 << 28;

/// EECD: an NVM is present; the device loaded its words after reset.
/// Only the model sets it: the driver waits for `EECD_AUTO_RD` alone.
#[cfg_attr(not(CONFIG_IGB_RS_KUNIT_TEST), expect(dead_code))]
pub(crate) const EECD_PRES: u32 = 1 << 8;
pub(crate) const EECD_AUTO_RD: u32 = 1 << 9;
/// EEMNGCTL: the configuration cycle of port 0 is done; port `n` at
/// `<< n`.
pub(crate) const EEMNGCTL_CFG_DONE_PORT_0: u32 = 1 << 18;
/// EERD: start, done, word address (bits 15:2), data (bits 31:16).
pub(crate) const EERD_START: u32 = 1 << 0;
pub(crate) const EERD_DONE: u32 = 1 << 1;
pub(crate) const EERD_ADDR_SHIFT: u32 = 2;
pub(crate) const EERD_DATA_SHIFT: u32 = 16;
/// NVM words: the MAC address (0 to 2), the pointer to the alternate MAC
/// addresses (three words per port), the checksum word; words 0 to the
/// checksum's add up to `NVM_SUM`.
pub(crate) const NVM_ALT_MAC_PTR: u16 = 0x37;
pub(crate) const NVM_CHECKSUM_WORD: u16 = 0x3f;
pub(crate) const NVM_SUM: u16 = 0xbaba;
/// NVM initialization control word 2: the default flow control, bits
/// 13:12 (0 none, ASM_DIR alone: send only, else both).
pub(crate) const NVM_INIT_CONTROL2: u16 = 0x0f;
pub(crate) const NVM_PAUSE_MASK: u16 = 0x3000;
pub(crate) const NVM_ASM_DIR: u16 = 0x2000;

/// GCR: the completion timeout range (0: the default, 50 µs to 50 ms,
/// below what PCIe recommends), 10 ms to 200 ms, resending on timeout,
/// and capability version 2 (the timeout is then in PCIe configuration
/// space, DEVCTL2).
pub(crate) const GCR_CMPL_TMOUT_MASK: u32 = 0xf000;
pub(crate) const GCR_CMPL_TMOUT_10MS: u32 = 0x1000;
pub(crate) const GCR_CMPL_TMOUT_RESEND: u32 = 1 << 16;
pub(crate) const GCR_CAP_VER2: u32 = 1 << 18;

pub(crate) const MDIC_READY: u32 = 1 << 28;
/// MDIC: data (bits 15:0), PHY register (20:16), PHY address (25:21),
/// write and read opcodes, error.
pub(crate) const MDIC_REG_SHIFT: u32 = 16;
pub(crate) const MDIC_PHY_SHIFT: u32 = 21;
pub(crate) const MDIC_OP_WRITE: u32 = 1 << 26;
pub(crate) const MDIC_OP_READ: u32 = 1 << 27;
pub(crate) const MDIC_ERROR: u32 = 1 << 30;
/// The internal PHY's address, its control register and identifier
/// registers.
pub(crate) const PHY_ADDR: u32 = 1;
pub(crate) const PHY_BMCR: u32 = 0;
pub(crate) const PHY_ID1: u32 = 2;
pub(crate) const PHY_ID2: u32 = 3;
/// The PHY's status register (autonegotiation complete), its
/// advertisement and the link partner's ability.
pub(crate) const PHY_BMSR: u32 = 1;
pub(crate) const PHY_ANLPAR: u32 = 5;
pub(crate) const BMSR_AN_COMPLETE: u16 = 1 << 5;
/// ANAR / ANLPAR: symmetric pause, and asymmetric pause direction.
pub(crate) const ANAR_PAUSE: u16 = 1 << 10;
pub(crate) const ANAR_ASM_DIR: u16 = 1 << 11;
/// Autonegotiation advertisement (10/100) and 1000BASE-T control.
pub(crate) const PHY_ANAR: u32 = 4;
pub(crate) const PHY_CTRL1000: u32 = 9;
/// The IGP PHY's port control (MDI/MDI-X) and power management (LPLU)
/// registers (`e1000_phy.h`).
pub(crate) const IGP_PORT_CTRL: u32 = 0x12;
pub(crate) const IGP_POWER_MGMT: u32 = 0x19;
/// BMCR: autonegotiation on, and restarted.
pub(crate) const BMCR_AUTONEG_EN: u16 = 0x1000;
pub(crate) const BMCR_AUTONEG_RESTART: u16 = 0x0200;
/// ANAR / ANLPAR: 10 half, 10 full, 100 half, 100 full.
pub(crate) const ANAR_10_HD: u16 = 0x0020;
pub(crate) const ANAR_10_FD: u16 = 0x0040;
pub(crate) const ANAR_100_HD: u16 = 0x0080;
pub(crate) const ANAR_100_FD: u16 = 0x0100;
pub(crate) const ANAR_SPEEDS: u16 = ANAR_10_HD | ANAR_10_FD | ANAR_100_HD | ANAR_100_FD;
/// ANLPAR: the partner acknowledged our advertisement (it autonegotiates).
pub(crate) const ANLPAR_ACK: u16 = 0x4000;
/// 1000BASE-T status: the partner's 1000 half and full abilities.
pub(crate) const PHY_STAT1000: u32 = 10;
pub(crate) const STAT1000_LP_HD: u16 = 0x0400;
pub(crate) const STAT1000_LP_FD: u16 = 0x0800;
/// CTRL1000: advertise 1000 half, 1000 full (the C igb never advertises
/// half duplex at 1000).
pub(crate) const CTRL1000_HD: u16 = 0x0100;
pub(crate) const CTRL1000_FD: u16 = 0x0200;
/// IGP port control: automatic MDI/MDI-X, and the forced choice.
pub(crate) const IGP_AUTO_MDIX: u16 = 0x1000;
pub(crate) const IGP_FORCE_MDIX: u16 = 0x2000;
/// IGP power management: low power link up in D0 (links at the lowest
/// speed the partner has).
pub(crate) const IGP_PM_D0_LPLU: u16 = 0x0002;
/// The 82576's internal PHY (IGP03E1000_E_PHY_ID); registers 2 and 3,
/// the revision (bits 3:0) cleared.
pub(crate) const PHY_ID_82576: u32 = 0x02a8_0390;
pub(crate) const PHY_REVISION_MASK: u32 = 0xffff_fff0;

/// CTRL: force speed and duplex (else the MAC takes the PHY's); reset
/// the PHY.
pub(crate) const CTRL_FRCSPD: u32 = 1 << 11;
pub(crate) const CTRL_FRCDPX: u32 = 1 << 12;
pub(crate) const CTRL_PHY_RST: u32 = 1 << 31;
/// CTRL_EXT: link mode, bits 23:22: 00 the internal copper PHY; 01
/// 1000BASE-KX, 10 SGMII, 11 SerDes (fiber or backplane).
pub(crate) const CTRL_EXT_LINK_MODE_MASK: u32 = 3 << 22;

/// Software semaphore: SMBI (set by the device when read with it clear:
/// this driver among the drivers of the card's ports), SWESMBI (set by
/// software, latched only when firmware does not hold it).
pub(crate) const SWSM: usize = 0x5b50;
pub(crate) const SWSM_SMBI: u32 = 1 << 0;
pub(crate) const SWSM_SWESMBI: u32 = 1 << 1;
/// Software/firmware resource ownership, taken under SWSM: software bits
/// 15:0, firmware's at the same positions << 16. The PHY of port `n`.
pub(crate) const SW_FW_SYNC: usize = 0x5b5c;
pub(crate) const SWFW_PHY_SM: [u32; 4] = [0x02, 0x04, 0x20, 0x40];
pub(crate) const SWFW_FW_SHIFT: u32 = 16;
/// Manageability control: the BMC forbids PHY resets (it uses the link).
pub(crate) const MANC: usize = 0x5820;
pub(crate) const MANC_BLK_PHY_RST_ON_IDE: u32 = 1 << 18;

pub(crate) const RCTL_EN: u32 = 1 << 1;
pub(crate) const RCTL_UPE: u32 = 1 << 3;
pub(crate) const RCTL_MPE: u32 = 1 << 4;
/// RCTL: long packets, up to RLPML.
pub(crate) const RCTL_LPE: u32 = 1 << 5;
pub(crate) const RCTL_BAM: u32 = 1 << 15;
pub(crate) const RCTL_SECRC: u32 = 1 << 26;

pub(crate) const TCTL_EN: u32 = 1 << 1;
pub(crate) const TCTL_PSP: u32 = 1 << 3;
pub(crate) const TCTL_CT: u32 = 15 << 4;
pub(crate) const TCTL_COLD: u32 = 63 << 12;
pub(crate) const TCTL_RTLC: u32 = 1 << 24;

/// SRRCTL: packet buffer size in KiB, header buffer size field, and the
/// advanced one-buffer descriptor type.
pub(crate) const SRRCTL_BSIZEPKT_SHIFT: u32 = 10;
pub(crate) const SRRCTL_BSIZEHDR_256: u32 = 0x400;
pub(crate) const SRRCTL_DESCTYPE_ADV_ONEBUF: u32 = 0x0200_0000;
/// Header split: the headers of the frame types PSRTYPE enables (up to the
/// TCP or UDP header, or the IP header of a fragment) to the header buffer,
/// the rest to the packet buffer; other frames whole to the packet buffer
/// (header length 0). Every TCP payload byte lands in a packet buffer,
/// whatever the frame's size. (QEMU splits every IP frame, PSRTYPE or not.)
pub(crate) const SRRCTL_DESCTYPE_HDR_SPLIT: u32 = 0x0400_0000;
/// SRRCTL: the descriptor type field, bits 27:25. Only the model reads
/// the field: the driver writes whole values.
#[cfg_attr(not(CONFIG_IGB_RS_KUNIT_TEST), expect(dead_code))]
pub(crate) const SRRCTL_DESCTYPE_MASK: u32 = 0x0e00_0000;
/// SRRCTL: drop a frame for this queue when it has no descriptor, rather
/// than hold it in the packet buffer shared by all queues.
pub(crate) const SRRCTL_DROP_EN: u32 = 1 << 31;

/// RFCTL: do not parse IPv6 extension headers (82576 errata: the parser
/// can hang on some of them).
pub(crate) const RFCTL_IPV6_EX_DIS: u32 = 1 << 16;

/// RXDCTL / TXDCTL: the queue's enable bit. Once cleared it keeps reading
/// 1 until the queue's DMA is done; once set it reads 1 when the queue
/// runs.
pub(crate) const DCTL_ENABLE: u32 = 1 << 25;
/// RXDCTL / TXDCTL: queue enable, and the C driver's thresholds.
pub(crate) const RXDCTL_VALUE: u32 = 0x0201_0808;
pub(crate) const TXDCTL_VALUE: u32 = 0x0201_0108;

pub(crate) const GPIE_NSICR: u32 = 1 << 0;
pub(crate) const GPIE_MSIX_MODE: u32 = 1 << 4;
pub(crate) const GPIE_EIAME: u32 = 1 << 30;
pub(crate) const GPIE_PBA: u32 = 1 << 31;

pub(crate) const IVAR_VALID: u32 = 0x80;

pub(crate) const ICR_LSC: u32 = 1 << 2;
/// ICR: the transmit DMA lost track of a frame's descriptors (DMA out of
/// sync); with virtual functions, also a frame a VF spoofed (WVBR).
pub(crate) const ICR_DOUTSYNC: u32 = 1 << 28;
/// ICR: the device was reset (device reset asserted): every register is
/// at its reset value.
pub(crate) const ICR_DRSTA: u32 = 1 << 30;
/// The causes of the "other" vector, as the C igb enables them with MSI-X.
pub(crate) const IMS_OTHER: u32 = ICR_LSC | ICR_DOUTSYNC | ICR_DRSTA;

/// MSI-X vectors: "other" causes (link) on 0, queue pair `q` on `q + 1`.
pub(crate) const VEC_OTHER: u32 = 0;

/// RXCSUM: report the RSS hash instead of the IP payload checksum (needed
/// for RSS).
pub(crate) const RXCSUM_PCSD: u32 = 1 << 13;
/// RXCSUM: check IP header and TCP/UDP checksums, report in the status.
pub(crate) const RXCSUM_IPOFLD: u32 = 1 << 8;
pub(crate) const RXCSUM_TUOFLD: u32 = 1 << 9;

// Advanced RX descriptor write-back, second quadword.
pub(crate) const RXD_STAT_DD: u64 = 1 << 0;
pub(crate) const RXD_STAT_EOP: u64 = 1 << 1;
pub(crate) const RXD_ERR_MASK: u64 = 1 << 31;
/// The headers did not fit the header buffer (HBO): the frame was not
/// split.
pub(crate) const RXD_STAT_HBO: u64 = 1 << 23;
/// The device checked the TCP or UDP checksum, and the IP header's.
pub(crate) const RXD_STAT_L4CS: u64 = (1 << 5) | (1 << 4);
/// ... and found it wrong (L4E), or the IP header's (IPE).
pub(crate) const RXD_ERR_CSUM: u64 = (1 << 29) | (1 << 30);

// Advanced TX data descriptor.
pub(crate) const TXD_DTYP_DATA: u32 = 0x0030_0000;
pub(crate) const TXD_DCMD_EOP: u32 = 1 << 24;
pub(crate) const TXD_DCMD_IFCS: u32 = 1 << 25;
pub(crate) const TXD_DCMD_RS: u32 = 1 << 27;
pub(crate) const TXD_DCMD_DEXT: u32 = 1 << 29;
/// Segment the frame (TCP segmentation offload).
pub(crate) const TXD_DCMD_TSE: u32 = 1 << 31;
pub(crate) const TXD_PAYLEN_SHIFT: u32 = 14;
pub(crate) const TXD_STAT_DD: u32 = 1 << 0;
/// Fill in the TCP or UDP checksum (POPTS.TXSM, in olinfo_status).
pub(crate) const TXD_POPTS_TXSM: u32 = 1 << 9;
/// Fill in the IPv4 header checksum (POPTS.IXSM).
pub(crate) const TXD_POPTS_IXSM: u32 = 1 << 8;
/// The most bytes one data descriptor sends (DTALEN is 16 bits; like the
/// C igb, keep to 32 KiB).
pub(crate) const TXD_MAX_DATA: u32 = 1 << 15;
// Advanced TX context descriptor.
pub(crate) const TXD_DTYP_CTXT: u32 = 0x0020_0000;
/// vlan_macip_lens: the IP header's offset (MACLEN), above its length.
pub(crate) const TXC_MACLEN_SHIFT: u32 = 9;
/// type_tucmd_mlhl: IPv4 (else IPv6), TCP (else UDP).
pub(crate) const TXC_TUCMD_IPV4: u32 = 0x400;
pub(crate) const TXC_TUCMD_L4T_TCP: u32 = 0x800;
/// mss_l4len_idx: the TCP header's length, and the segments' payload.
pub(crate) const TXC_L4LEN_SHIFT: u32 = 8;
pub(crate) const TXC_MSS_SHIFT: u32 = 16;
