// SPDX-License-Identifier: GPL-2.0

//! A strict model of the 82576's register file, for KUnit.
//!
//! QEMU's model forgives what silicon does not: a queue stops the instant
//! its ENABLE bit is cleared, reset is instant and the NVM loaded with it,
//! DMA requests never linger. This model takes time for each (model time:
//! every register access costs 1 µs, [`Regs::sleep_us`] adds its argument),
//! or never finishes, on request; it keeps the NVM and a PHY register file
//! behind EERD and MDIC, statistics registers that clear when read and stop
//! at all ones, records every access, and records a [`Rule`] broken by the
//! access sequence the driver's procedures (`hw/`) make.
//!
//! C driver: [`e1000_82575.c`](srctree/drivers/net/ethernet/intel/igb/e1000_82575.c)

use crate::hw::{
    Regs,
    RxOff,
    TxOff,
    HW_QUEUES, //
};
use crate::regs::*;
use crate::steer::HW_FILTERS;
use core::cell::RefCell;
use kernel::prelude::*;

/// A rule of the 82576 the access sequence broke.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Rule {
    /// A ring register (base, length, buffer layout, head) written while
    /// the queue's ENABLE bit reads 1 or the queue is starting: `reg`.
    RingWhileEnabled(usize),
    /// A tail (`reg`) moved off the head before the queue's ENABLE read 1.
    TailBeforeEnabled(usize),
    /// RAL/RAH read while the NVM auto-read after reset was in progress.
    RalBeforeAutoRd,
    /// CTRL.RST while DMA requests were still pending.
    ResetWithMasterEnabled,
    /// The ring of receive queue `.0` released while the queue can still
    /// use it (its ENABLE bit reads 1, or it is starting).
    RxReleasedWhileEnabled(usize),
    /// The same for transmit queue `.0`.
    TxReleasedWhileEnabled(usize),
    /// CTRL_EXT.DRV_LOAD still set when the driver was done.
    DrvLoadAfterRemove,
    /// After a write to a five-tuple filter, watched flow `.0` went
    /// somewhere it may not: to RSS while it is to stay steered (a gap in
    /// the filter table), or to a queue it is not steered to (a filter
    /// that matched more than it should, in between).
    FlowWindow(usize),
    /// Five-tuple filter `.0` turned off with an FTQF that still compares
    /// fields (against stale SAQF/DAQF/SPQF/IMIR), not the disabled value.
    FilterOffUnmasked(usize),
    /// An MDIC transaction, or a PHY reset, without the PHY's SW_FW_SYNC
    /// bit held: the firmware may be using the PHY at the same time.
    PhyWithoutSync,
    /// SW_FW_SYNC written without the SWSM semaphore (SMBI and SWESMBI).
    SyncWithoutSemaphore,
    /// The PHY's SW_FW_SYNC software bit set while the firmware held its
    /// own.
    SyncTakenFromFirmware,
    /// CTRL.PHY_RST while MANC.BLK_PHY_RST_ON_IDE forbids it.
    PhyResetBlocked,
    /// Receive queue `.0` runs (or is starting) with header split while a
    /// PSRTYPE that may apply to it lacks a TCP type: its TCP frames would
    /// go whole to the packet buffer, headers and all (device memory, on a
    /// devmem queue).
    SplitWithoutTypes(usize),
}

/// A register access: model time, write or read, register, value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Access {
    pub(crate) t: u64,
    pub(crate) write: bool,
    pub(crate) reg: usize,
    pub(crate) val: u32,
}

/// When a delayed event comes: this many µs later, or never.
#[derive(Clone, Copy)]
pub(crate) enum After {
    Us(u64),
    Never,
}

impl After {
    fn at(self, now: u64) -> u64 {
        match self {
            After::Us(d) => now.saturating_add(d),
            After::Never => u64::MAX,
        }
    }
}

/// How MDIC answers.
#[derive(Clone, Copy)]
pub(crate) enum Mdic {
    /// Ready this many µs after the command.
    Ready(u64),
    /// Never ready.
    Busy,
    /// Ready at once, with ERROR.
    Error,
}

/// NVM words the model keeps.
pub(crate) const NVM_WORDS: usize = 0x100;

/// A TCP/IPv4 flow, as the five-tuple filters see its frames: the sender's
/// address and port, ours.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flow {
    pub(crate) src: [u8; 4],
    pub(crate) dst: [u8; 4],
    pub(crate) sport: u16,
    pub(crate) dport: u16,
}

/// Where a flow's frames go, as a set: bit `q` for queue `q`, and this
/// bit for RSS (no filter sends them anywhere).
pub(crate) const TO_RSS: u32 = 1 << 31;

/// A queue as a route set.
pub(crate) const fn to_queue(q: u32) -> u32 {
    1 << (q & 0xf)
}

/// The device the model is.
#[derive(Clone)]
pub(crate) struct Config {
    /// From clearing a queue's ENABLE bit until it reads 0.
    pub(crate) queue_off: After,
    /// From setting it until it reads 1.
    pub(crate) queue_on: After,
    /// A receive / transmit queue whose ENABLE bit never reads 0 once set.
    pub(crate) stuck_rx: Option<usize>,
    pub(crate) stuck_tx: Option<usize>,
    /// From CTRL.GIO_MASTER_DISABLE until STATUS.GIO_MASTER_ENABLE reads 0.
    pub(crate) master_off: After,
    /// From CTRL.RST until EECD.AUTO_RD (RAL0/RAH0 loaded then); `None`:
    /// never set, the address loaded with the reset (QEMU).
    pub(crate) auto_rd: Option<u64>,
    /// From CTRL.RST until EEMNGCTL.CFG_DONE of port 0.
    pub(crate) cfg_done: After,
    pub(crate) mdic: Mdic,
    /// GCR as the firmware left it.
    pub(crate) gcr: u32,
    pub(crate) nvm: [u16; NVM_WORDS],
    /// PHY 1's registers, as a PHY reset leaves them; any other address
    /// answers with MDIC.ERROR.
    pub(crate) phy: [u16; 32],
    /// The firmware holds its SW_FW_SYNC bit for port 0's PHY until then.
    pub(crate) fw_phy: After,
    /// The firmware holds SWSM.SWESMBI until then.
    pub(crate) fw_swesmbi: After,
    /// MANC as the firmware set it (BLK_PHY_RST_ON_IDE).
    pub(crate) manc: u32,
    /// CTRL_EXT as the NVM loads it (LINK_MODE).
    pub(crate) ctrl_ext: u32,
    /// A link partner: the link is up at power-on (a BMC uses it), and
    /// comes back [`AUTONEG_US`] after autonegotiation restarts.
    pub(crate) link: bool,
}

/// From an autonegotiation restart (or PHY reset) to link up, µs.
pub(crate) const AUTONEG_US: u64 = 2_000_000;

/// The address the model's NVM holds.
pub(crate) const MAC: [u8; 6] = [0x00, 0x1b, 0x21, 0x12, 0x34, 0x56];
/// The 82576's internal PHY identifier (registers 2 and 3): an IGP03,
/// revision 1 (QEMU reports the same).
pub(crate) const PHY_ID: (u16, u16) = (0x02a8, 0x0391);

/// An NVM image with `mac` and a good checksum, no alternate address.
pub(crate) fn nvm_image(mac: &[u8; 6]) -> [u16; NVM_WORDS] {
    let mut nvm = [0xffffu16; NVM_WORDS];
    for (i, w) in nvm.iter_mut().take(3).enumerate() {
        *w = u16::from_le_bytes([mac[2 * i], mac[2 * i + 1]]);
    }
    fix_checksum(&mut nvm);
    nvm
}

/// Sets the checksum word so that words 0 to it add up to 0xBABA.
pub(crate) fn fix_checksum(nvm: &mut [u16; NVM_WORDS]) {
    let c = usize::from(NVM_CHECKSUM_WORD);
    let sum = nvm.iter().take(c).fold(0u16, |s, w| s.wrapping_add(*w));
    nvm[c] = NVM_SUM.wrapping_sub(sum);
}

impl Config {
    /// Silicon: every wait takes a while, and ends.
    pub(crate) fn silicon() -> Self {
        let mut phy = [0u16; 32];
        // Autonegotiation on, 1000 full; every speed advertised, 1000
        // half too; manual MDI; low power link up on (as an NVM may set
        // it).
        phy[0] = 0x1140;
        phy[1] = 0x796d;
        phy[2] = PHY_ID.0;
        phy[3] = PHY_ID.1;
        phy[4] = 0x0de1;
        phy[9] = 0x0300;
        phy[0x19] = 0x0002;
        Self {
            queue_off: After::Us(300),
            queue_on: After::Us(200),
            stuck_rx: None,
            stuck_tx: None,
            master_off: After::Us(2_000),
            auto_rd: Some(4_000),
            cfg_done: After::Us(6_000),
            mdic: Mdic::Ready(30),
            gcr: 0,
            nvm: nvm_image(&MAC),
            phy,
            fw_phy: After::Us(0),
            fw_swesmbi: After::Us(0),
            manc: 0,
            ctrl_ext: 0,
            link: true,
        }
    }

    /// QEMU's model: everything at once, no AUTO_RD nor CFG_DONE ever.
    pub(crate) fn qemu() -> Self {
        Self {
            queue_off: After::Us(0),
            queue_on: After::Us(0),
            master_off: After::Us(0),
            auto_rd: None,
            cfg_done: After::Never,
            mdic: Mdic::Ready(0),
            ..Self::silicon()
        }
    }
}

/// A queue's DMA engine.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Engine {
    Off,
    On,
    /// ENABLE set, reads 1 from this time on.
    Starting(u64),
    /// ENABLE cleared, reads 1 until this time.
    Stopping(u64),
}

#[derive(Clone, Copy)]
struct Queue {
    engine: Engine,
    /// A ring was programmed since the last reset: the engine has an
    /// address to use.
    has_ring: bool,
}

impl Queue {
    const RESET: Self = Self {
        engine: Engine::Off,
        has_ring: false,
    };

    fn settle(&mut self, now: u64) {
        self.engine = match self.engine {
            Engine::Starting(at) if now >= at => Engine::On,
            Engine::Stopping(at) if now >= at => Engine::Off,
            e => e,
        };
    }

    fn reads_enabled(&self) -> bool {
        matches!(self.engine, Engine::On | Engine::Stopping(_))
    }

    /// Whether the engine may fetch descriptors or write buffers of its
    /// ring.
    fn may_dma(&self) -> bool {
        self.engine != Engine::Off && self.has_ring
    }
}

struct State {
    cfg: Config,
    now: u64,
    regs: KVVec<u32>,
    rx: [Queue; HW_QUEUES],
    tx: [Queue; HW_QUEUES],
    /// STATUS.GIO_MASTER_ENABLE reads 0 from this time on, while
    /// CTRL.GIO_MASTER_DISABLE is set.
    master_off_at: u64,
    /// The NVM auto-read ends at this time, and loads RAL0/RAH0.
    auto_rd_at: Option<u64>,
    cfg_done_at: u64,
    mdic_ready_at: u64,
    trace: KVec<Access>,
    broken: KVec<Rule>,
    /// Flows checked at every five-tuple filter write, with where each
    /// may go.
    flows: KVec<(Flow, u32)>,
    /// PHY 1's registers now.
    phy: [u16; 32],
    /// SWSM bits the driver holds.
    smbi: bool,
    swesmbi: bool,
    /// The link is up from this time on.
    link_at: Option<u64>,
    /// Times a link that was up went down (autonegotiation restarted, or
    /// the PHY reset).
    link_drops: u32,
    /// The device is gone from the bus: every read returns all ones.
    gone: bool,
}

/// Whether `reg` is a statistics counter: the statistics block (MPC,
/// RNBC, the pause frame counters, ...), and each receive queue's RQDPC.
/// The device clears one when it is read, and stops it at all ones.
fn is_counter(reg: usize) -> bool {
    (0x4000..0x4100).contains(&reg) || matches!(queue_reg(reg), Some((true, _, Q_DPC)))
}

/// Register index of `reg`.
fn idx(reg: usize) -> usize {
    (reg & (BAR0_SIZE - 1)) >> 2
}

/// The queue (receive or not, number) and offset in its block of `reg`.
fn queue_reg(reg: usize) -> Option<(bool, usize, usize)> {
    let (rx, base) = match reg {
        0xc000..=0xc3ff => (true, 0xc000),
        0xe000..=0xe3ff => (false, 0xe000),
        _ => return None,
    };
    Some((rx, (reg - base) / 0x40, (reg - base) % 0x40))
}

impl State {
    fn get(&self, reg: usize) -> u32 {
        self.regs.get(idx(reg)).copied().unwrap_or(0)
    }

    fn set(&mut self, reg: usize, val: u32) {
        if let Some(r) = self.regs.get_mut(idx(reg)) {
            *r = val;
        }
    }

    fn broke(&mut self, rule: Rule) {
        let _ = self.broken.push(rule, GFP_KERNEL);
    }

    fn queue(&mut self, rx: bool, q: usize) -> Option<&mut Queue> {
        if rx {
            self.rx.get_mut(q)
        } else {
            self.tx.get_mut(q)
        }
    }

    /// Lets model time catch up with the delayed events.
    fn settle(&mut self) {
        let now = self.now;
        for q in self.rx.iter_mut() {
            q.settle(now);
        }
        for q in self.tx.iter_mut() {
            q.settle(now);
        }
        if let Some(at) = self.auto_rd_at {
            if now >= at {
                self.auto_rd_at = None;
                self.set(EECD, self.get(EECD) | EECD_AUTO_RD);
                self.load_mac();
            }
        }
    }

    /// RAL0/RAH0 from NVM words 0 to 2, as the auto-read loads them.
    fn load_mac(&mut self) {
        let w = |i: usize| u32::from(self.cfg.nvm[i]);
        let (lo, hi) = (w(0) | w(1) << 16, w(2) | RAH_AV);
        self.set(RAL0, lo);
        self.set(RAH0, hi);
    }

    fn link_up(&self) -> bool {
        self.link_at.is_some_and(|t| self.now >= t)
    }

    /// Autonegotiation starts over: a link that was up goes down.
    fn renegotiate(&mut self) {
        if self.link_up() {
            self.link_drops += 1;
        }
        self.link_at = self.cfg.link.then(|| self.now.saturating_add(AUTONEG_US));
    }

    /// Whether the driver holds port 0's PHY (SW_FW_SYNC).
    fn phy_held(&self) -> bool {
        self.get(SW_FW_SYNC) & SWFW_PHY_SM[0] != 0
    }

    /// Where the five-tuple filters send `f`'s frames.
    ///
    /// The datasheet's filters as the driver reads it: a filter steers
    /// only with FTQF.1QUEUE set; it matches a frame when every field its
    /// FTQF and IMIR do not bypass equals the frame's (the protocol, the
    /// pool, which no frame has here, the addresses, the ports), and
    /// IMIREXT bypasses the size and TCP flag compares (else not every
    /// frame of the flow matches). Of the filters that match, the highest
    /// IMIR priority wins; between equal priorities the lower index
    /// (UNVERIFIED: no source says).
    fn route(&self, f: &Flow) -> u32 {
        let port = |p: u16| u32::from(u16::from_le_bytes(p.to_be_bytes()));
        let mut best: Option<(u32, u32)> = None;
        for n in 0..HW_FILTERS {
            let at = 4 * n;
            let ftqf = self.get(FTQF + at);
            let imir = self.get(IMIR + at);
            let ext = self.get(IMIREXT + at);
            let cmp = |bp: u32, eq: bool| ftqf & bp != 0 || eq;
            let all = IMIREXT_SIZE_BP | IMIREXT_CTRL_BP;
            let src = self.get(SAQF + at) == u32::from_le_bytes(f.src);
            let dst = self.get(DAQF + at) == u32::from_le_bytes(f.dst);
            let sport = self.get(SPQF + at) & 0xffff == port(f.sport);
            let matches = ftqf & FTQF_QUEUE_ENABLE != 0
                && cmp(FTQF_PROTO_BP, ftqf & 0xff == FTQF_PROTO_TCP)
                && ftqf & FTQF_VF_BP != 0
                && cmp(FTQF_SRC_ADDR_BP, src)
                && cmp(FTQF_DST_ADDR_BP, dst)
                && cmp(FTQF_SRC_PORT_BP, sport)
                && (imir & IMIR_PORT_BP != 0 || imir & 0xffff == port(f.dport))
                && ext & all == all;
            let prio = imir >> IMIR_PRIORITY_SHIFT;
            if matches && best.is_none_or(|(p, _)| prio > p) {
                best = Some((prio, (ftqf & FTQF_QUEUE_MASK) >> FTQF_QUEUE_SHIFT));
            }
        }
        best.map_or(TO_RSS, |(_, q)| to_queue(q))
    }

    /// Five-tuple filter register `reg` was written with `val`.
    fn filter_written(&mut self, reg: usize, val: u32) {
        if (FTQF..FTQF + 4 * HW_FILTERS).contains(&reg)
            && val & FTQF_QUEUE_ENABLE == 0
            && val & FTQF_MASK != FTQF_MASK
        {
            self.broke(Rule::FilterOffUnmasked((reg - FTQF) / 4));
        }
        for i in 0..self.flows.len() {
            let Some((f, allowed)) = self.flows.get(i).copied() else {
                continue;
            };
            if self.route(&f) & allowed == 0 {
                self.broke(Rule::FlowWindow(i));
            }
        }
    }

    /// Whether receive queue `q` splits headers and a PSRTYPE that may
    /// apply to it lacks a TCP type, IPv4's or IPv6's. Which of the eight
    /// applies without virtualization is UNVERIFIED: pool 0's, or the
    /// queue's own (as on the I210); both must have them.
    fn split_without_types(&self, q: usize) -> bool {
        let split = self.get(rxq(q) + Q_SRRCTL) & SRRCTL_DESCTYPE_MASK == SRRCTL_DESCTYPE_HDR_SPLIT;
        let tcp = PSRTYPE_IPV4_TCP | PSRTYPE_IPV6_TCP;
        let lacks = |n: usize| self.get(PSRTYPE + 4 * n) & tcp != tcp;
        split && (lacks(0) || (q < PSRTYPE_REGS && lacks(q)))
    }

    fn reset(&mut self) {
        let keep = [CTRL_EXT, GCR, MANC, SW_FW_SYNC];
        let kept = keep.map(|r| self.get(r));
        for r in self.regs.iter_mut() {
            *r = 0;
        }
        for (r, v) in keep.into_iter().zip(kept) {
            self.set(r, v);
        }
        self.set(CTRL, 0x0010_0209);
        self.set(TCTL, 0xa404_00f8);
        // Reset asserted: whether silicon latches DRSTA for a reset the
        // driver asked for (CTRL.RST) is UNVERIFIED; the model does, so
        // that a driver that leaves it pending resets itself again.
        self.set(ICR, ICR_DRSTA);
        self.set(EEMNGCTL, 1 << 31);
        self.set(EECD, EECD_PRES);
        self.rx = [Queue::RESET; HW_QUEUES];
        self.tx = [Queue::RESET; HW_QUEUES];
        // Silicon's reset value: queue 0 enabled, with no ring.
        self.rx[0].engine = Engine::On;
        self.tx[0].engine = Engine::On;
        self.set(rxq(0) + Q_DCTL, RXDCTL_VALUE & !0xffff);
        self.set(txq(0) + Q_DCTL, DCTL_ENABLE);
        self.master_off_at = u64::MAX;
        self.cfg_done_at = self.cfg.cfg_done.at(self.now);
        match self.cfg.auto_rd {
            Some(d) => self.auto_rd_at = Some(self.now.saturating_add(d)),
            None => {
                self.auto_rd_at = None;
                self.load_mac();
            }
        }
    }

    fn read(&mut self, reg: usize) -> u32 {
        let now = self.now;
        if self.gone {
            return !0;
        }
        if is_counter(reg) {
            let v = self.get(reg);
            self.set(reg, 0);
            return v;
        }
        match reg {
            STATUS => {
                let ctrl = self.get(CTRL);
                let pending = ctrl & CTRL_GIO_MASTER_DISABLE == 0 || now < self.master_off_at;
                let gio = if pending { STATUS_GIO_MASTER_ENABLE } else { 0 };
                let lu = if self.link_up() { STATUS_LU } else { 0 };
                (self.get(STATUS) & !(STATUS_GIO_MASTER_ENABLE | STATUS_LU)) | gio | lu
            }
            SWSM => {
                let v = if self.smbi { SWSM_SMBI } else { 0 }
                    | if self.swesmbi { SWSM_SWESMBI } else { 0 };
                // Read with SMBI clear: now this driver's.
                self.smbi = true;
                v
            }
            SW_FW_SYNC => {
                let fw = if now < self.cfg.fw_phy.at(0) {
                    SWFW_PHY_SM[0] << SWFW_FW_SHIFT
                } else {
                    0
                };
                (self.get(SW_FW_SYNC) & 0xffff) | fw
            }
            EEMNGCTL if now >= self.cfg_done_at => self.get(EEMNGCTL) | EEMNGCTL_CFG_DONE_PORT_0,
            MDIC => {
                let v = self.get(MDIC);
                match self.cfg.mdic {
                    Mdic::Ready(_) if now >= self.mdic_ready_at => v | MDIC_READY,
                    Mdic::Error => v | MDIC_READY | MDIC_ERROR,
                    _ => v,
                }
            }
            ICR => {
                let v = self.get(ICR);
                self.set(ICR, 0);
                v
            }
            0x5400..=0x547f => {
                if self.auto_rd_at.is_some() {
                    self.broke(Rule::RalBeforeAutoRd);
                }
                self.get(reg)
            }
            _ => match queue_reg(reg) {
                Some((rx, q, Q_DCTL)) => {
                    let on = self.queue(rx, q).is_some_and(|q| q.reads_enabled());
                    (self.get(reg) & !DCTL_ENABLE) | if on { DCTL_ENABLE } else { 0 }
                }
                _ => self.get(reg),
            },
        }
    }

    fn write(&mut self, reg: usize, val: u32) {
        let now = self.now;
        match reg {
            CTRL => {
                let old = self.get(CTRL);
                if val & CTRL_GIO_MASTER_DISABLE != 0 && old & CTRL_GIO_MASTER_DISABLE == 0 {
                    self.master_off_at = self.cfg.master_off.at(now);
                }
                self.set(CTRL, val & !CTRL_RST);
                if val & CTRL_PHY_RST != 0 && old & CTRL_PHY_RST == 0 {
                    if self.get(MANC) & MANC_BLK_PHY_RST_ON_IDE != 0 {
                        self.broke(Rule::PhyResetBlocked);
                    }
                    if !self.phy_held() {
                        self.broke(Rule::PhyWithoutSync);
                    }
                    self.phy = self.cfg.phy;
                    self.renegotiate();
                }
                if val & CTRL_RST != 0 {
                    let pending = old & CTRL_GIO_MASTER_DISABLE == 0 || now < self.master_off_at;
                    // A device whose requests never drain is reset anyway
                    // (as C does); one whose requests were not blocked, or
                    // would have drained, was not waited for.
                    let drains = !matches!(self.cfg.master_off, After::Never);
                    if pending && drains {
                        self.broke(Rule::ResetWithMasterEnabled);
                    }
                    self.reset();
                }
            }
            EERD => {
                let v = if val & EERD_START != 0 {
                    // CAST: 14 address bits.
                    let addr = ((val >> EERD_ADDR_SHIFT) & 0x3fff) as usize;
                    let data = self.cfg.nvm.get(addr).copied().unwrap_or(0xffff);
                    (u32::from(data) << EERD_DATA_SHIFT) | (val & 0xfffc) | EERD_DONE
                } else {
                    val
                };
                self.set(EERD, v);
            }
            MDIC => {
                if !self.phy_held() {
                    self.broke(Rule::PhyWithoutSync);
                }
                let phy = (val >> MDIC_PHY_SHIFT) & 0x1f;
                // CAST: 5 bits.
                let r = ((val >> MDIC_REG_SHIFT) & 0x1f) as usize;
                // CAST: the data bits.
                let data = val as u16;
                let mut v = val & !(MDIC_READY | MDIC_ERROR);
                if phy != PHY_ADDR {
                    v |= MDIC_ERROR;
                } else if val & MDIC_OP_READ != 0 {
                    let data = self.phy.get(r).copied().unwrap_or(0);
                    v = (v & !0xffff) | u32::from(data);
                } else if r == 0 && data & BMCR_AUTONEG_RESTART != 0 {
                    // Self-clearing.
                    self.phy[0] = data & !BMCR_AUTONEG_RESTART;
                    self.renegotiate();
                } else if let Some(p) = self.phy.get_mut(r) {
                    *p = data;
                }
                self.mdic_ready_at = match self.cfg.mdic {
                    Mdic::Ready(d) => now.saturating_add(d),
                    _ => u64::MAX,
                };
                self.set(MDIC, v);
            }
            SWSM => {
                self.smbi = val & SWSM_SMBI != 0;
                self.swesmbi = val & SWSM_SWESMBI != 0 && now >= self.cfg.fw_swesmbi.at(0);
            }
            SW_FW_SYNC => {
                if !(self.smbi && self.swesmbi) {
                    self.broke(Rule::SyncWithoutSemaphore);
                }
                let taken = val & !self.get(SW_FW_SYNC) & SWFW_PHY_SM[0] != 0;
                if taken && now < self.cfg.fw_phy.at(0) {
                    self.broke(Rule::SyncTakenFromFirmware);
                }
                self.set(SW_FW_SYNC, val & 0xffff);
            }
            SAQF..=0x59ff | IMIR..=0x5abf => {
                self.set(reg, val);
                self.filter_written(reg, val);
            }
            PSRTYPE..=0x549f => {
                self.set(reg, val);
                for q in 0..HW_QUEUES {
                    let on = self.rx.get(q).is_some_and(|q| q.engine != Engine::Off);
                    if on && self.split_without_types(q) {
                        self.broke(Rule::SplitWithoutTypes(q));
                    }
                }
            }
            _ => match queue_reg(reg) {
                Some((rx, q, off)) => self.queue_write(rx, q, off, reg, val),
                None => self.set(reg, val),
            },
        }
    }

    fn queue_write(&mut self, rx: bool, q: usize, off: usize, reg: usize, val: u32) {
        let now = self.now;
        let stuck = if rx {
            self.cfg.stuck_rx
        } else {
            self.cfg.stuck_tx
        } == Some(q);
        let (on, off_delay) = (self.cfg.queue_on, self.cfg.queue_off);
        let head = self.get(reg - off + Q_HEAD);
        let Some(queue) = self.queue(rx, q) else {
            return;
        };
        let ring_regs: &[usize] = if rx {
            &[Q_BAL, Q_BAH, Q_LEN, Q_SRRCTL, Q_HEAD]
        } else {
            &[Q_BAL, Q_BAH, Q_LEN, Q_HEAD]
        };
        let mut broken = None;
        if ring_regs.contains(&off) {
            if queue.engine != Engine::Off {
                broken = Some(Rule::RingWhileEnabled(reg));
            }
            if off == Q_BAL || off == Q_LEN {
                queue.has_ring = true;
            }
        } else if off == Q_TAIL {
            if val != head && queue.engine != Engine::On {
                broken = Some(Rule::TailBeforeEnabled(reg));
            }
        } else if off == Q_DCTL {
            let enable = val & DCTL_ENABLE != 0;
            queue.engine = match (queue.engine, enable) {
                (Engine::Off, true) => Engine::Starting(on.at(now)),
                (Engine::Stopping(_), true) => Engine::On,
                (Engine::On | Engine::Starting(_), false) if stuck => Engine::Stopping(u64::MAX),
                (Engine::On | Engine::Starting(_), false) => Engine::Stopping(off_delay.at(now)),
                (e, _) => e,
            };
            queue.settle(now);
        }
        if let Some(rule) = broken {
            self.broke(rule);
        }
        self.set(reg, val);
        // A queue enabled (or left enabled) splits from now on.
        let enabled = off == Q_DCTL && val & DCTL_ENABLE != 0;
        if rx && enabled && self.split_without_types(q) {
            self.broke(Rule::SplitWithoutTypes(q));
        }
    }
}

/// The model: a register file behind [`Regs`]. Its state (about 1.7 KiB,
/// with the NVM image) lives on the heap: a KUnit case runs on a 16 KiB
/// kernel stack, which cases that keep several models and configurations
/// would otherwise overflow.
pub(crate) struct Model(KBox<RefCell<State>>);

impl Model {
    /// A device as `cfg` says, just out of a power-on reset.
    pub(crate) fn new(cfg: Config) -> Result<Self> {
        let (gcr, manc, ctrl_ext) = (cfg.gcr, cfg.manc, cfg.ctrl_ext);
        let (phy, link) = (cfg.phy, cfg.link);
        // Built in the box: the state is too large to move around on a
        // kernel stack.
        let state = KBox::new(
            RefCell::new(State {
                cfg,
                now: 0,
                regs: KVVec::from_elem(0, BAR0_SIZE / 4, GFP_KERNEL)?,
                rx: [Queue::RESET; HW_QUEUES],
                tx: [Queue::RESET; HW_QUEUES],
                master_off_at: u64::MAX,
                auto_rd_at: None,
                cfg_done_at: 0,
                mdic_ready_at: 0,
                trace: KVec::new(),
                broken: KVec::new(),
                flows: KVec::new(),
                phy,
                smbi: false,
                swesmbi: false,
                link_at: link.then_some(0),
                link_drops: 0,
                gone: false,
            }),
            GFP_KERNEL,
        )?;
        {
            let mut s = state.borrow_mut();
            s.set(GCR, gcr);
            s.set(MANC, manc);
            s.set(CTRL_EXT, ctrl_ext);
            s.reset();
            // Out of power-on reset long ago: the NVM is loaded, the
            // configuration done (if the device ever does them).
            if s.auto_rd_at.take().is_some() {
                s.set(EECD, EECD_PRES | EECD_AUTO_RD);
                s.load_mac();
            }
            if s.cfg_done_at != u64::MAX {
                s.cfg_done_at = 0;
            }
            // Power-on is not a reset the driver is told of.
            s.set(ICR, 0);
        }
        Ok(Self(state))
    }

    /// A model of silicon.
    pub(crate) fn silicon() -> Result<Self> {
        Self::new(Config::silicon())
    }

    /// Model time, µs.
    pub(crate) fn now(&self) -> u64 {
        self.0.borrow().now
    }

    /// Whether no rule was broken.
    pub(crate) fn clean(&self) -> bool {
        self.0.borrow().broken.is_empty()
    }

    /// Whether `rule` was broken.
    pub(crate) fn broke(&self, rule: Rule) -> bool {
        self.0.borrow().broken.contains(&rule)
    }

    /// Register `reg` as stored, without an access.
    pub(crate) fn peek(&self, reg: usize) -> u32 {
        self.0.borrow().get(reg)
    }

    /// Puts `val` in register `reg` behind the driver's back (firmware).
    pub(crate) fn poke(&self, reg: usize, val: u32) {
        self.0.borrow_mut().set(reg, val);
    }

    /// The position in the trace of the first access `f` takes, if any.
    pub(crate) fn find(&self, f: impl Fn(&Access) -> bool) -> Option<usize> {
        self.0.borrow().trace.iter().position(f)
    }

    /// Accesses in the trace.
    pub(crate) fn accesses(&self) -> usize {
        self.0.borrow().trace.len()
    }

    /// Access `i` of the trace.
    pub(crate) fn access(&self, i: usize) -> Option<Access> {
        self.0.borrow().trace.get(i).copied()
    }

    /// Starts receive (or transmit) queue `q` on a ring behind the
    /// driver's back: a queue that runs when the test begins.
    pub(crate) fn run_queue(&self, rx: bool, q: usize) {
        let mut s = self.0.borrow_mut();
        if let Some(queue) = s.queue(rx, q) {
            *queue = Queue {
                engine: Engine::On,
                has_ring: true,
            };
        }
    }

    /// Whether receive (or transmit) queue `q`'s engine runs (reads 1).
    pub(crate) fn running(&self, rx: bool, q: usize) -> bool {
        let mut s = self.0.borrow_mut();
        s.settle();
        s.queue(rx, q).is_some_and(|q| q.reads_enabled())
    }

    /// The driver frees or hands back the ring of receive queue
    /// `off.queue()`, on the strength of `off`: the queue must not be able
    /// to use it.
    pub(crate) fn release_rx(&self, off: RxOff) {
        let mut s = self.0.borrow_mut();
        s.settle();
        let q = off.queue();
        if s.rx.get(q).is_some_and(|q| q.may_dma()) {
            s.broke(Rule::RxReleasedWhileEnabled(q));
        }
    }

    /// The same for transmit queue `off.queue()`.
    pub(crate) fn release_tx(&self, off: TxOff) {
        let mut s = self.0.borrow_mut();
        s.settle();
        let q = off.queue();
        if s.tx.get(q).is_some_and(|q| q.may_dma()) {
            s.broke(Rule::TxReleasedWhileEnabled(q));
        }
    }

    /// From now on, after every write to a five-tuple filter, `flow`'s
    /// frames must go to one of `allowed` ([`to_queue`], [`TO_RSS`]). The
    /// flow's index in [`Rule::FlowWindow`] is the number of flows watched
    /// before.
    pub(crate) fn watch(&self, flow: Flow, allowed: u32) -> Result {
        self.0
            .borrow_mut()
            .flows
            .push((flow, allowed), GFP_KERNEL)?;
        Ok(())
    }

    /// Where the five-tuple filters send `flow`'s frames now.
    pub(crate) fn route(&self, flow: &Flow) -> u32 {
        self.0.borrow().route(flow)
    }

    /// PHY register `reg` now, without an access.
    pub(crate) fn phy(&self, reg: usize) -> u16 {
        self.0.borrow().phy.get(reg).copied().unwrap_or(0)
    }

    /// The device counts `n` events in statistics register `reg`, which
    /// stops at all ones.
    pub(crate) fn count(&self, reg: usize, n: u32) {
        let mut s = self.0.borrow_mut();
        let v = s.get(reg).saturating_add(n);
        s.set(reg, v);
    }

    /// The device is reset behind the driver's back (by firmware, or a
    /// reset of the whole device): every register at its reset value,
    /// every ring forgotten, ICR.DRSTA set.
    pub(crate) fn reset_by_firmware(&self) {
        let mut s = self.0.borrow_mut();
        s.reset();
    }

    /// The device is gone from the bus (surprise removal): from now on
    /// every register reads all ones.
    pub(crate) fn unplug(&self) {
        self.0.borrow_mut().gone = true;
    }

    /// Times a link that was up went down.
    pub(crate) fn link_drops(&self) -> u32 {
        self.0.borrow().link_drops
    }

    /// The driver is done with the device (remove).
    pub(crate) fn removed(&self) {
        let mut s = self.0.borrow_mut();
        if s.get(CTRL_EXT) & CTRL_EXT_DRV_LOAD != 0 {
            s.broke(Rule::DrvLoadAfterRemove);
        }
    }

    fn log(s: &mut State, write: bool, reg: usize, val: u32) {
        let a = Access {
            t: s.now,
            write,
            reg,
            val,
        };
        let _ = s.trace.push(a, GFP_KERNEL);
    }
}

impl Regs for Model {
    fn rd(&self, reg: usize) -> u32 {
        let mut s = self.0.borrow_mut();
        s.now += 1;
        s.settle();
        let v = s.read(reg);
        Self::log(&mut s, false, reg, v);
        v
    }

    fn wr(&self, reg: usize, val: u32) {
        let mut s = self.0.borrow_mut();
        s.now += 1;
        s.settle();
        s.write(reg, val);
        Self::log(&mut s, true, reg, val);
    }

    fn sleep_us(&self, us: u32) {
        let mut s = self.0.borrow_mut();
        s.now += u64::from(us);
    }
}
