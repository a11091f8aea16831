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
//! access sequence the driver's procedures (`hw.rs`) make.
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

#[kunit_tests(igb_rs_hw_model)]
mod tests {
    use super::*;
    use crate::hw;
    use crate::steer::{
        Steering,
        TcpRule, //
    };
    use core::net::{
        IpAddr,
        Ipv4Addr, //
    };
    use kernel::net::{
        driver::Stats64,
        ethtool::{
            FlowType,
            LinkModes,
            Port,
            RuleLocation, //
        },
    };

    /// A ring somewhere, of 256 descriptors.
    const RING: hw::Ring = hw::Ring {
        dma: 0x1_2345_6000,
        bytes: 4096,
    };

    fn model(f: impl FnOnce(&mut Config)) -> Result<Model> {
        let mut cfg = Config::silicon();
        f(&mut cfg);
        Model::new(cfg)
    }

    /// Where in the trace the first write of `val` to `reg` is.
    fn write_at(m: &Model, reg: usize, val: u32) -> Option<usize> {
        m.find(|a| a.write && a.reg == reg && a.val == val)
    }

    // DMA-safe stop: a ring goes only once its queue's ENABLE reads 0.

    #[test]
    fn rx_stop_waits_until_enable_reads_0() -> Result {
        let m = Model::silicon()?;
        m.run_queue(true, 1);
        let t0 = m.now();
        let off = hw::rx_stop(&m, 1).map_err(|_| EIO)?;
        assert!(m.now() - t0 >= 300);
        assert!(!m.running(true, 1));
        // Caught if rx_stop returns without waiting: the ring would go
        // while the queue still reads 1.
        m.release_rx(off);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn rx_stop_unwaited_is_caught() -> Result {
        // The sequence igb_rs had: clear ENABLE, hand the ring back.
        let m = Model::silicon()?;
        m.run_queue(true, 1);
        m.wr(rxq(1) + Q_DCTL, 0);
        m.release_rx(hw::RxOff::assume(1));
        assert!(m.broke(Rule::RxReleasedWhileEnabled(1)));
        Ok(())
    }

    #[test]
    fn rx_stop_costs_no_sleep_on_qemu() -> Result {
        let m = Model::new(Config::qemu())?;
        m.run_queue(true, 1);
        let t0 = m.now();
        let off = hw::rx_stop(&m, 1).map_err(|_| EIO)?;
        // One write, one read: no poll interval slept.
        assert_eq!(m.now() - t0, 2);
        m.release_rx(off);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn rx_stop_reports_a_queue_that_never_stops() -> Result {
        let m = model(|c| c.stuck_rx = Some(2))?;
        m.run_queue(true, 2);
        let t0 = m.now();
        assert!(hw::rx_stop(&m, 2).is_err());
        assert!(m.running(true, 2));
        // Bounded: 200 polls 50 µs apart, and the accesses.
        let spent = m.now() - t0;
        assert!((10_000..11_000).contains(&spent));
        Ok(())
    }

    #[test]
    fn tx_stop_waits_until_enable_reads_0() -> Result {
        let m = Model::silicon()?;
        m.run_queue(false, 3);
        let off = hw::tx_stop(&m, 3).map_err(|_| EIO)?;
        // Caught if tx_stop does not wait.
        m.release_tx(off);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn tx_stop_unwaited_is_caught() -> Result {
        let m = Model::silicon()?;
        m.run_queue(false, 3);
        m.wr(txq(3) + Q_DCTL, 0);
        m.release_tx(hw::TxOff::assume(3));
        assert!(m.broke(Rule::TxReleasedWhileEnabled(3)));
        Ok(())
    }

    #[test]
    fn tx_stop_reports_a_queue_that_never_stops() -> Result {
        let m = model(|c| c.stuck_tx = Some(0))?;
        m.run_queue(false, 0);
        assert!(hw::tx_stop(&m, 0).is_err());
        assert!(m.running(false, 0));
        Ok(())
    }

    #[test]
    fn stop_queues_waits_for_every_queue() -> Result {
        let m = Model::silicon()?;
        for q in 0..4 {
            m.run_queue(true, q);
            m.run_queue(false, q);
        }
        let stopped = hw::stop_queues(&m, 4);
        assert!(!stopped.by_reset());
        for q in 0..4 {
            m.release_rx(stopped.rx(q).ok_or(EINVAL)?);
            m.release_tx(stopped.tx(q).ok_or(EINVAL)?);
        }
        // Caught if a queue's wait is skipped.
        assert!(m.clean());
        // No proof for a queue it did not stop.
        assert!(stopped.rx(4).is_none());
        Ok(())
    }

    #[test]
    fn stop_queues_resets_the_device_for_a_stuck_queue() -> Result {
        let m = model(|c| c.stuck_tx = Some(2))?;
        for q in 0..4 {
            m.run_queue(true, q);
            m.run_queue(false, q);
        }
        let stopped = hw::stop_queues(&m, 4);
        // The fallback: a reset forgets every ring, so all may go.
        assert!(stopped.by_reset());
        assert!(m
            .find(|a| a.write && a.reg == CTRL && a.val & CTRL_RST != 0)
            .is_some());
        for q in 0..4 {
            m.release_rx(stopped.rx(q).ok_or(EINVAL)?);
            m.release_tx(stopped.tx(q).ok_or(EINVAL)?);
        }
        assert!(m.clean());
        Ok(())
    }

    // Queue start: ring registers only while off, the tail only once on.

    #[test]
    fn rx_start_programs_the_ring_while_the_queue_is_off() -> Result {
        // Queue 0 comes out of reset enabled (silicon's reset value); a
        // restarted queue 1 runs on its old ring.
        let m = Model::silicon()?;
        m.run_queue(true, 1);
        for q in [0, 1] {
            hw::rx_start(&m, q, RING, hw::srrctl(2048, false, true), (0, 255)).map_err(|_| EIO)?;
            assert!(m.running(true, q));
        }
        assert_eq!(m.peek(rxq(1) + Q_LEN), 4096);
        assert_eq!(m.peek(rxq(1) + Q_TAIL), 255);
        // Caught if the ring registers are written before ENABLE reads 0.
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn rx_start_gives_descriptors_only_once_enabled() -> Result {
        let m = model(|c| c.queue_on = After::Us(500))?;
        hw::setup_rx_unit(&m);
        let t0 = m.now();
        hw::rx_start(&m, 2, RING, hw::srrctl(2048, true, false), (10, 9)).map_err(|_| EIO)?;
        assert!(m.now() - t0 >= 500);
        let tail = write_at(&m, rxq(2) + Q_TAIL, 9).ok_or(EINVAL)?;
        let on = m
            .find(|a| !a.write && a.reg == rxq(2) + Q_DCTL && a.val & DCTL_ENABLE != 0)
            .ok_or(EINVAL)?;
        // Caught if the tail moves before ENABLE reads 1.
        assert!(on < tail);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn rx_start_unordered_is_caught() -> Result {
        // The sequence igb_rs had: on a queue still running its old ring
        // (1), the ring registers land while it drains; on a queue that
        // was off (2), the tail lands before ENABLE reads 1.
        let m = Model::silicon()?;
        m.run_queue(true, 1);
        for q in [1, 2] {
            let rq = rxq(q);
            m.wr(rq + Q_DCTL, 0);
            m.wr(rq + Q_BAL, 0x1000);
            m.wr(rq + Q_LEN, 4096);
            m.wr(rq + Q_HEAD, 0);
            m.wr(rq + Q_TAIL, 0);
            m.wr(rq + Q_DCTL, RXDCTL_VALUE);
            m.wr(rq + Q_TAIL, 255);
        }
        assert!(m.broke(Rule::RingWhileEnabled(rxq(1) + Q_BAL)));
        assert!(m.broke(Rule::TailBeforeEnabled(rxq(2) + Q_TAIL)));
        Ok(())
    }

    #[test]
    fn rx_start_that_never_runs_leaves_the_queue_off() -> Result {
        let m = model(|c| c.queue_on = After::Never)?;
        let r = hw::rx_start(&m, 1, RING, 0, (0, 255));
        assert!(r == Err(hw::StartError::TimedOut));
        assert!(!m.running(true, 1));
        // No descriptors given, and the ring may go back.
        assert!(write_at(&m, rxq(1) + Q_TAIL, 255).is_none());
        m.release_rx(hw::rx_stop(&m, 1).map_err(|_| EIO)?);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn rx_start_on_a_stuck_queue_touches_no_ring_register() -> Result {
        let m = model(|c| c.stuck_rx = Some(1))?;
        m.run_queue(true, 1);
        let r = hw::rx_start(&m, 1, RING, 0, (0, 255));
        assert!(r == Err(hw::StartError::Stuck));
        assert!(write_at(&m, rxq(1) + Q_BAL, 0x2345_6000).is_none());
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn tx_start_programs_while_off_and_waits() -> Result {
        // Transmit queue 0 comes out of reset enabled.
        let m = Model::silicon()?;
        hw::tx_start(&m, 0, RING).map_err(|_| EIO)?;
        assert!(m.running(false, 0));
        assert_eq!(m.peek(txq(0) + Q_BAH), 1);
        assert!(m.clean());
        Ok(())
    }

    // Reset: drain DMA requests first, then wait for the NVM.

    #[test]
    fn reset_drains_dma_requests_first() -> Result {
        let m = Model::silicon()?;
        let (stopped, waits) = hw::reset(&m);
        assert!(stopped.by_reset());
        assert!(waits.master && waits.auto_rd && waits.cfg_done);
        let drained = m
            .find(|a| !a.write && a.reg == STATUS && a.val & STATUS_GIO_MASTER_ENABLE == 0)
            .ok_or(EINVAL)?;
        let rst = m
            .find(|a| a.write && a.reg == CTRL && a.val & CTRL_RST != 0)
            .ok_or(EINVAL)?;
        assert!(drained < rst);
        // Caught if the master disable poll is dropped.
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn reset_undrained_is_caught() -> Result {
        // The reset igb_rs had: no master disable, straight to CTRL.RST.
        let m = Model::silicon()?;
        m.wr(CTRL, m.rd(CTRL) | CTRL_RST);
        assert!(m.broke(Rule::ResetWithMasterEnabled));
        Ok(())
    }

    #[test]
    fn reset_goes_on_when_requests_never_drain() -> Result {
        let m = model(|c| c.master_off = After::Never)?;
        let t0 = m.now();
        let (_, waits) = hw::reset(&m);
        assert!(!waits.master);
        assert!(m
            .find(|a| a.write && a.reg == CTRL && a.val & CTRL_RST != 0)
            .is_some());
        // 80 ms for the requests, 10 ms settle, then the NVM waits.
        assert!(m.now() - t0 < 80_000 + 10_000 + 20_000);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn reset_stops_the_units_and_settles_before_rst() -> Result {
        let m = Model::silicon()?;
        let _ = hw::reset(&m);
        let rst = m
            .find(|a| a.write && a.reg == CTRL && a.val & CTRL_RST != 0)
            .ok_or(EINVAL)?;
        let imc = write_at(&m, IMC, !0).ok_or(EINVAL)?;
        let rctl = write_at(&m, RCTL, 0).ok_or(EINVAL)?;
        let tctl = write_at(&m, TCTL, TCTL_PSP).ok_or(EINVAL)?;
        assert!(imc < rst && rctl < rst && tctl < rst);
        let t_rst = m.access(rst).ok_or(EINVAL)?.t;
        let t_tctl = m.access(tctl).ok_or(EINVAL)?.t;
        assert!(t_rst - t_tctl >= 10_000);
        // Interrupts masked again after it, and the cause register read.
        let last = m.accesses() - 1;
        assert!(m.access(last).is_some_and(|a| !a.write && a.reg == ICR));
        Ok(())
    }

    #[test]
    fn mac_is_read_only_after_the_nvm_auto_read() -> Result {
        // The configuration is done long before the NVM is loaded: only the
        // AUTO_RD wait keeps RAL0 from being read early.
        let m = model(|c| {
            c.cfg_done = After::Us(500);
            c.auto_rd = Some(8_000);
        })?;
        let (_, waits) = hw::reset(&m);
        assert!(waits.auto_rd);
        assert!(hw::rar0(&m) == MAC);
        // Caught if reset returns before EECD.AUTO_RD.
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn mac_read_before_auto_rd_is_caught() -> Result {
        // The reset igb_rs had: CTRL.RST, 1 ms, then RAL0.
        let m = model(|c| c.master_off = After::Us(0))?;
        m.wr(CTRL, m.rd(CTRL) | CTRL_GIO_MASTER_DISABLE);
        m.wr(CTRL, m.rd(CTRL) | CTRL_RST);
        m.sleep_us(1000);
        let _ = hw::rar0(&m);
        assert!(m.broke(Rule::RalBeforeAutoRd));
        Ok(())
    }

    #[test]
    fn reset_without_auto_rd_goes_on() -> Result {
        // QEMU: neither AUTO_RD nor CFG_DONE, ever; the address is there.
        let m = Model::new(Config::qemu())?;
        let t0 = m.now();
        let (_, waits) = hw::reset(&m);
        assert!(waits.master && !waits.auto_rd && !waits.cfg_done);
        assert!(m.now() - t0 < 10_000 + 10_000 + 100_000 + 1_000);
        assert!(hw::rar0(&m) == MAC);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn reset_waits_for_a_late_configuration() -> Result {
        let m = model(|c| c.cfg_done = After::Us(50_000))?;
        let (_, waits) = hw::reset(&m);
        assert!(waits.cfg_done);
        Ok(())
    }

    #[test]
    fn reset_raises_the_completion_timeout() -> Result {
        let m = model(|c| c.gcr = GCR_CMPL_TMOUT_RESEND)?;
        let _ = hw::reset(&m);
        assert_eq!(m.peek(GCR), GCR_CMPL_TMOUT_10MS);
        // One set before, or one in configuration space, stays.
        let m = model(|c| c.gcr = 0x2000 | GCR_CMPL_TMOUT_RESEND)?;
        let _ = hw::reset(&m);
        assert_eq!(m.peek(GCR), 0x2000);
        let m = model(|c| c.gcr = GCR_CAP_VER2)?;
        let _ = hw::reset(&m);
        assert_eq!(m.peek(GCR), GCR_CAP_VER2);
        Ok(())
    }

    // DRV_LOAD: a reset keeps it; remove clears it.

    #[test]
    fn remove_releases_the_device() -> Result {
        let m = Model::silicon()?;
        hw::take_control(&m);
        let _ = hw::reset(&m);
        hw::release_control(&m);
        m.removed();
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn remove_without_release_is_caught() -> Result {
        // What igb_rs's unbind did: reset only.
        let m = Model::silicon()?;
        hw::take_control(&m);
        let _ = hw::reset(&m);
        m.removed();
        assert!(m.broke(Rule::DrvLoadAfterRemove));
        Ok(())
    }

    // NVM: checksum, alternate address, address validity.

    #[test]
    fn nvm_checksum_is_checked() -> Result {
        let m = Model::silicon()?;
        assert!(hw::nvm_checksum_ok(&m)?);
        let m = model(|c| c.nvm[5] = c.nvm[5].wrapping_add(1))?;
        assert!(!hw::nvm_checksum_ok(&m)?);
        Ok(())
    }

    #[test]
    fn alt_mac_takes_the_place_of_the_permanent_one() -> Result {
        let alt = [0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee];
        let m = model(|c| {
            c.nvm[usize::from(NVM_ALT_MAC_PTR)] = 0x40;
            for i in 0..3 {
                c.nvm[0x40 + i] = u16::from_le_bytes([alt[2 * i], alt[2 * i + 1]]);
            }
            fix_checksum(&mut c.nvm);
        })?;
        assert!(hw::nvm_checksum_ok(&m)?);
        assert!(hw::alt_mac(&m)? == Some(alt));
        // None without a pointer.
        assert!(hw::alt_mac(&Model::silicon()?)?.is_none());
        Ok(())
    }

    #[test]
    fn multicast_alt_mac_is_ignored() -> Result {
        let m = model(|c| {
            c.nvm[usize::from(NVM_ALT_MAC_PTR)] = 0x40;
            c.nvm[0x40] = 0x0201;
            fix_checksum(&mut c.nvm);
        })?;
        assert!(hw::alt_mac(&m)?.is_none());
        Ok(())
    }

    #[test]
    fn all_zero_mac_is_refused() -> Result {
        let m = model(|c| c.nvm = nvm_image(&[0; 6]))?;
        let _ = hw::reset(&m);
        assert!(hw::nvm_checksum_ok(&m)?);
        assert!(!hw::is_valid_ether_addr(&hw::rar0(&m)));
        assert!(hw::is_valid_ether_addr(&MAC));
        assert!(!hw::is_valid_ether_addr(&[0x01, 0, 0x5e, 0, 0, 1]));
        Ok(())
    }

    // MDIC and the PHY: SW_FW_SYNC around every access, the PHY ID,
    // MANC.BLK_PHY_RST, LPLU, advertisement, restarts only when needed.

    #[test]
    fn phy_id_reads_through_mdic() -> Result {
        let m = Model::silicon()?;
        {
            let phy = hw::Phy::acquire(&m)?;
            assert_eq!(phy.read(PHY_ID1)?, PHY_ID.0);
            assert_eq!(phy.read(PHY_ID2)?, PHY_ID.1);
            phy.write(PHY_ANAR, 0x01e1)?;
            assert_eq!(phy.read(PHY_ANAR)?, 0x01e1);
        }
        assert_eq!(hw::phy_id(&m)?, PHY_ID_82576);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn mdic_errors_are_reported() -> Result {
        let m = model(|c| c.mdic = Mdic::Error)?;
        assert!(hw::Phy::acquire(&m)?.read(PHY_ID1) == Err(EIO));
        // The PHY is given back all the same.
        assert_eq!(m.peek(SW_FW_SYNC), 0);
        Ok(())
    }

    #[test]
    fn mdic_busy_times_out() -> Result {
        let m = model(|c| c.mdic = Mdic::Busy)?;
        let t0 = m.now();
        assert!(hw::Phy::acquire(&m)?.read(PHY_ID1) == Err(ETIMEDOUT));
        assert!(m.now() - t0 < 100_000);
        Ok(())
    }

    #[test]
    fn phy_access_holds_the_sw_fw_sync_bit() -> Result {
        let m = Model::silicon()?;
        {
            let phy = hw::Phy::acquire(&m)?;
            assert_eq!(m.peek(SW_FW_SYNC), SWFW_PHY_SM[0]);
            phy.read(PHY_BMCR)?;
        }
        assert_eq!(m.peek(SW_FW_SYNC), 0);
        // Caught if MDIC is used without the bit, or SW_FW_SYNC written
        // without the SWSM semaphore.
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn phy_access_without_the_sync_bit_is_caught() -> Result {
        // What igb_rs did: MDIC straight away.
        let m = Model::silicon()?;
        m.wr(
            MDIC,
            MDIC_OP_READ | PHY_ADDR << MDIC_PHY_SHIFT | PHY_ID1 << MDIC_REG_SHIFT,
        );
        assert!(m.broke(Rule::PhyWithoutSync));
        // And the bit taken without the semaphore.
        m.wr(SW_FW_SYNC, SWFW_PHY_SM[0]);
        assert!(m.broke(Rule::SyncWithoutSemaphore));
        Ok(())
    }

    #[test]
    fn phy_waits_for_the_firmware() -> Result {
        let m = model(|c| c.fw_phy = After::Us(30_000))?;
        let t0 = m.now();
        drop(hw::Phy::acquire(&m)?);
        assert!(m.now() - t0 >= 30_000);
        // Caught if the bit is taken while the firmware holds its own.
        assert!(m.clean());
        // A firmware that never lets go: EBUSY in about a second, the PHY
        // untouched.
        let m = model(|c| c.fw_phy = After::Never)?;
        let t0 = m.now();
        assert!(hw::Phy::acquire(&m).err() == Some(EBUSY));
        assert!(m.now() - t0 < 2_000_000);
        assert_eq!(m.peek(SW_FW_SYNC), 0);
        // Nor the semaphore.
        let m = model(|c| c.fw_swesmbi = After::Never)?;
        assert!(hw::Phy::acquire(&m).err() == Some(EBUSY));
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn only_the_internal_copper_phy_is_taken() -> Result {
        let m = Model::silicon()?;
        assert!(hw::is_copper(&m));
        assert_eq!(hw::phy_id(&m)?, PHY_ID_82576);
        // An M88E1111 behind SGMII, or a SerDes port: refused at probe.
        let m = model(|c| {
            c.phy[2] = 0x0141;
            c.phy[3] = 0x0cc2;
            c.ctrl_ext = 2 << 22;
        })?;
        assert!(hw::phy_id(&m)? != PHY_ID_82576);
        assert!(!hw::is_copper(&m));
        assert!(!hw::is_copper(&model(|c| c.ctrl_ext = 3 << 22)?));
        Ok(())
    }

    #[test]
    fn phy_reset_is_skipped_when_blocked() -> Result {
        let m = model(|c| c.manc = MANC_BLK_PHY_RST_ON_IDE)?;
        assert!(!hw::phy_reset(&m)?);
        assert!(m
            .find(|a| a.write && a.reg == CTRL && a.val & CTRL_PHY_RST != 0)
            .is_none());
        // The BMC keeps its link.
        assert_eq!(m.link_drops(), 0);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn phy_reset_blocked_is_caught() -> Result {
        let m = model(|c| c.manc = MANC_BLK_PHY_RST_ON_IDE)?;
        let _phy = hw::Phy::acquire(&m)?;
        m.wr(CTRL, m.rd(CTRL) | CTRL_PHY_RST);
        assert!(m.broke(Rule::PhyResetBlocked));
        Ok(())
    }

    #[test]
    fn phy_reset_pulses_under_the_sync_bit() -> Result {
        let m = Model::silicon()?;
        hw::Phy::acquire(&m)?.write(PHY_ANAR, 0x01e1)?;
        assert!(hw::phy_reset(&m)?);
        let on = m
            .find(|a| a.write && a.reg == CTRL && a.val & CTRL_PHY_RST != 0)
            .ok_or(EINVAL)?;
        let off = m
            .find(|a| a.write && a.reg == CTRL && a.val & CTRL_PHY_RST == 0)
            .ok_or(EINVAL)?;
        let t = |i| m.access(i).map_or(0, |a| a.t);
        assert!(on < off && t(off) - t(on) >= 100);
        // The PHY's registers are back at their reset values.
        assert_eq!(m.phy(4), 0x0de1);
        assert_eq!(m.peek(SW_FW_SYNC), 0);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn link_setup_turns_lplu_off_and_advertises_every_speed() -> Result {
        let m = Model::silicon()?;
        assert!(hw::link_setup(&m)?);
        assert_eq!(m.phy(0x19) & IGP_PM_D0_LPLU, 0);
        assert_eq!(
            m.phy(0x12) & (IGP_AUTO_MDIX | IGP_FORCE_MDIX),
            IGP_AUTO_MDIX
        );
        // 10/100 at both duplexes, the pause bits as they were; 1000 full
        // only.
        assert_eq!(m.phy(4), 0x0de1);
        assert_eq!(m.phy(9), CTRL1000_FD);
        assert_ne!(m.phy(0) & BMCR_AUTONEG_EN, 0);
        assert_eq!(m.peek(CTRL) & (CTRL_SLU | CTRL_FRCSPD), CTRL_SLU);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn link_setup_keeps_a_link_it_does_not_change() -> Result {
        let m = Model::silicon()?;
        // Probe: the settings change, autonegotiation restarts once.
        assert!(hw::link_setup(&m)?);
        m.sleep_us(3_000_000);
        let drops = m.link_drops();
        // Every later open: the link is up and the PHY as wanted, so it
        // stays up (igb_rs restarted autonegotiation on every open).
        assert!(!hw::link_setup(&m)?);
        assert!(!hw::link_setup(&m)?);
        assert_eq!(m.link_drops(), drops);
        // Without a link there is nothing to keep: restarted.
        let m = model(|c| c.link = false)?;
        assert!(hw::link_setup(&m)?);
        assert!(hw::link_setup(&m)?);
        assert!(m.clean());
        // The old sequence, BMCR restart on an up link, drops it.
        let m = Model::silicon()?;
        hw::Phy::acquire(&m)?.write(PHY_BMCR, 0x1340)?;
        assert_eq!(m.link_drops(), 1);
        Ok(())
    }

    // Receive setup for silicon.

    #[test]
    fn srrctl_drop_en_and_descriptor_type() -> Result {
        assert_eq!(hw::srrctl(2048, false, false), 0x0200_0402);
        assert_eq!(hw::srrctl(4096, true, true), 0x8400_0404);
        let m = Model::silicon()?;
        m.poke(RFCTL, 0x4000);
        hw::rx_errata(&m);
        assert_eq!(m.peek(RFCTL), 0x4000 | RFCTL_IPV6_EX_DIS);
        Ok(())
    }

    // Header split on silicon: PSRTYPE says which frames are split.

    #[test]
    fn header_split_queue_starts_after_psrtype() -> Result {
        // The driver's order (`configure`): the receive unit, then the
        // queues.
        let m = Model::silicon()?;
        hw::setup_rx_unit(&m);
        let split = hw::srrctl(2048, true, false);
        hw::rx_start(&m, 1, RING, split, (0, 255)).map_err(|_| EIO)?;
        assert!(m.running(true, 1));
        // Every pool's register: TCP and UDP over IPv4 and IPv6, and IP
        // fragments; not type 0, which would split any frame after its
        // Ethernet header.
        for n in 0..PSRTYPE_REGS {
            assert_eq!(m.peek(PSRTYPE + 4 * n), 0x38e);
        }
        assert_eq!(hw::PSRTYPE_SPLIT & 1, 0);
        assert!(m.peek(RFCTL) & RFCTL_IPV6_EX_DIS != 0);
        // A queue without header split does not look at PSRTYPE.
        let m = Model::silicon()?;
        hw::rx_start(&m, 2, RING, hw::srrctl(2048, false, false), (0, 255)).map_err(|_| EIO)?;
        // Caught if a split queue starts while PSRTYPE lacks TCP.
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn header_split_without_psrtype_is_caught() -> Result {
        // What igb_rs did: header split in SRRCTL, PSRTYPE at its reset
        // value. Silicon would split nothing.
        let m = Model::silicon()?;
        hw::rx_errata(&m);
        hw::rx_start(&m, 1, RING, hw::srrctl(2048, true, false), (0, 255)).map_err(|_| EIO)?;
        assert!(m.broke(Rule::SplitWithoutTypes(1)));
        // Pool 0's register alone is not enough while which one applies
        // is not known; nor is IPv4's TCP type without IPv6's.
        let m = Model::silicon()?;
        m.wr(PSRTYPE, hw::PSRTYPE_SPLIT);
        hw::rx_start(&m, 3, RING, hw::srrctl(2048, true, false), (0, 255)).map_err(|_| EIO)?;
        assert!(m.broke(Rule::SplitWithoutTypes(3)));
        let m = Model::silicon()?;
        for n in 0..PSRTYPE_REGS {
            m.wr(PSRTYPE + 4 * n, PSRTYPE_IPV4_TCP);
        }
        hw::rx_start(&m, 0, RING, hw::srrctl(2048, true, false), (0, 255)).map_err(|_| EIO)?;
        assert!(m.broke(Rule::SplitWithoutTypes(0)));
        // Types taken away under a running split queue.
        let m = Model::silicon()?;
        hw::setup_rx_unit(&m);
        hw::rx_start(&m, 1, RING, hw::srrctl(2048, true, false), (0, 255)).map_err(|_| EIO)?;
        assert!(m.clean());
        m.wr(PSRTYPE + 4, 0);
        assert!(m.broke(Rule::SplitWithoutTypes(1)));
        Ok(())
    }

    // Interrupt moderation: EITR's interval field counts 1 µs steps in
    // bits 14:2.

    #[test]
    fn eitr_holds_the_interval_in_microseconds() -> Result {
        let m = Model::silicon()?;
        m.wr(eitr(1), hw::eitr_value(hw::ITR_FIXED_USECS));
        // 49 µs is the C igb's 20k interrupts/s value, 196.
        assert_eq!(m.peek(eitr(1)), 196 | EITR_CNT_IGNR);
        // Other vectors are left alone.
        assert_eq!(m.peek(eitr(0)), 0);
        assert_eq!(hw::eitr_value(100) & EITR_INTERVAL_MASK, 400);
        // Adaptive moderation starts at C's IGB_START_ITR, 648.
        assert_eq!(
            hw::eitr_value(hw::itr_start(hw::ITR_DEFAULT)),
            648 | EITR_CNT_IGNR
        );
        assert_eq!(hw::itr_start(100), 100);
        // The longest interval fills the field; 0 writes the shortest.
        assert_eq!(hw::eitr_value(hw::ITR_MAX_USECS), 0x7ffc | EITR_CNT_IGNR);
        assert_eq!(hw::eitr_value(0), 4 | EITR_CNT_IGNR);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn itr_range_is_checked() {
        for ok in [0, 1, 3, 10, 49, 1000, 8191] {
            assert!(hw::itr_check(ok).is_ok());
        }
        // C's gap below 10 µs (2 is no mode), and what the field cannot
        // hold (C's 10000 would wrap to 1808 µs).
        for bad in [2, 4, 9, 8192, 10000, u32::MAX] {
            assert!(hw::itr_check(bad).is_err());
        }
        assert!(hw::itr_adaptive(1) && hw::itr_adaptive(3) && hw::itr_adaptive(hw::ITR_DEFAULT));
        for fixed in [0, 10, 49] {
            assert!(!hw::itr_adaptive(fixed));
        }
    }

    // Adaptive moderation, as the C igb's policy for vectors of their own:
    // the interval in the register is the mean frame on the wire (24
    // bytes more) over 2, or over 3 from 300 to 1200 bytes, in whole µs.

    /// `frames` of `len` bytes received, `acks` of `ack_len` sent.
    fn load(frames: u64, len: u64, acks: u64, ack_len: u64) -> hw::ItrLoad {
        hw::ItrLoad {
            rx: (frames * len, frames),
            tx: (acks * ack_len, acks),
        }
    }

    #[test]
    fn adaptive_itr_follows_the_frames() {
        let (c, a) = (hw::ITR_ADAPTIVE_CONSERVATIVE, hw::ITR_ADAPTIVE);
        // A stream of full frames, its acknowledgements back: (1514 + 24) / 2
        // = 769 in the register, 192 µs.
        assert_eq!(hw::itr_adapt(c, 1000, load(40, 1514, 20, 66)), Some(192));
        // Mid-size frames: 600 + 24 over 3 = 208, 52 µs.
        assert_eq!(hw::itr_adapt(c, 1000, load(10, 600, 0, 0)), Some(52));
        // Small frames: conservative stops at 49 µs; the other mode goes
        // down to (64 + 24) / 2 = 44, 11 µs.
        assert_eq!(
            hw::itr_adapt(c, 1000, load(10, 64, 10, 64)),
            Some(hw::ITR_FIXED_USECS)
        );
        assert_eq!(hw::itr_adapt(a, 1000, load(10, 64, 10, 64)), Some(11));
        // Jumbo frames count as 3000 bytes: 1500, 375 µs.
        assert_eq!(hw::itr_adapt(c, 1000, load(4, 9014, 2, 66)), Some(375));
        // The larger of the two directions: a sender of full frames that
        // gets acknowledgements.
        assert_eq!(hw::itr_adapt(a, 1000, load(20, 66, 40, 1514)), Some(192));
        // Nothing since the last choice: the interval stays.
        assert_eq!(hw::itr_adapt(c, 1000, hw::ItrLoad::default()), None);
        // Below 1000 Mb/s: about 4000 interrupts a second, 245 µs.
        assert_eq!(hw::itr_adapt(a, 100, load(10, 64, 0, 0)), Some(245));
        // Every choice fits the field.
        let huge = load(1, u64::MAX, 1, u64::MAX);
        assert!(hw::itr_adapt(a, 1000, huge).is_some_and(|u| u <= hw::ITR_MAX_USECS));
    }

    #[test]
    fn link_speed_and_duplex_from_status() {
        assert!(hw::link_speed_duplex(STATUS_LU | STATUS_FD | 0x80) == (1000, true));
        assert!(hw::link_speed_duplex(STATUS_LU | 0x40) == (100, false));
        assert!(hw::link_speed_duplex(STATUS_LU | STATUS_FD) == (10, true));
        // 11b is 1000 Mb/s too.
        assert!(hw::link_speed_duplex(STATUS_LU | 0xc0).0 == 1000);
    }

    // Flow control: registers, the 802.3 pause resolution, the MAC bits.

    const P: u16 = ANAR_PAUSE;
    const A: u16 = ANAR_ASM_DIR;

    /// The index of PHY register `r` in the model's PHY.
    fn phy_reg(r: u32) -> usize {
        // CAST: a 5-bit register number.
        r as usize
    }

    #[test]
    fn pause_resolution_follows_the_802_3_table() {
        use hw::Fc;
        // (asked for, partner's PAUSE and ASM_DIR bits, result), with our
        // advertisement what `pause_advertisement` makes of the request.
        let table = [
            (Fc::FULL, P | A, Fc::FULL),
            (Fc::FULL, P, Fc::FULL),
            (Fc::FULL, A, Fc::RX),
            // The partner advertises nothing: C still honours its pause
            // frames, in case it has them forced on.
            (Fc::FULL, 0, Fc::RX),
            // Receive only is advertised as both, then sending turned off.
            (Fc::RX, P | A, Fc::RX),
            (Fc::RX, P, Fc::RX),
            (Fc::RX, A, Fc::RX),
            (Fc::RX, 0, Fc::RX),
            // Send only: only a partner that receives asymmetrically.
            (Fc::TX, P | A, Fc::TX),
            (Fc::TX, P, Fc::NONE),
            (Fc::TX, A, Fc::NONE),
            (Fc::TX, 0, Fc::NONE),
            (Fc::NONE, P | A, Fc::NONE),
            (Fc::NONE, P, Fc::NONE),
            (Fc::NONE, A, Fc::NONE),
            (Fc::NONE, 0, Fc::NONE),
        ];
        for (asked, lp, want) in table {
            let adv = hw::pause_advertisement(asked);
            assert!(hw::resolve_fc(asked, adv, lp) == want);
        }
        assert_eq!(hw::pause_advertisement(Fc::RX), P | A);
        assert_eq!(hw::pause_advertisement(Fc::TX), A);
        assert_eq!(hw::pause_advertisement(Fc::NONE), 0);
    }

    /// A full-duplex link up, autonegotiated, with the partner advertising
    /// `lp`.
    fn link_up_model(lp: u16) -> Result<Model> {
        let m = model(|c| {
            c.phy[phy_reg(PHY_BMSR)] = BMSR_AN_COMPLETE;
            c.phy[phy_reg(PHY_ANAR)] = 0x01e1 | P | A;
            c.phy[phy_reg(PHY_ANLPAR)] = lp;
        })?;
        m.poke(STATUS, STATUS_LU | STATUS_FD | 0x80);
        Ok(m)
    }

    #[test]
    fn flow_control_is_resolved_after_link_up() -> Result {
        let m = link_up_model(P)?;
        assert!(hw::fc_after_link_up(&m, hw::Fc::FULL, true)? == hw::Fc::FULL);
        assert_eq!(
            m.peek(CTRL) & (CTRL_RFCE | CTRL_TFCE),
            CTRL_RFCE | CTRL_TFCE
        );
        // A partner that only sends pause frames: we only honour them.
        let m = link_up_model(A)?;
        m.poke(CTRL, CTRL_TFCE | CTRL_SLU);
        assert!(hw::fc_after_link_up(&m, hw::Fc::FULL, true)? == hw::Fc::RX);
        assert_eq!(m.peek(CTRL), CTRL_RFCE | CTRL_SLU);
        Ok(())
    }

    #[test]
    fn flow_control_off_on_half_duplex_and_forced_without_autoneg() -> Result {
        let m = link_up_model(P | A)?;
        m.poke(STATUS, STATUS_LU | 0x40);
        m.poke(CTRL, CTRL_RFCE | CTRL_TFCE);
        assert!(hw::fc_after_link_up(&m, hw::Fc::FULL, true)? == hw::Fc::NONE);
        assert_eq!(m.peek(CTRL) & (CTRL_RFCE | CTRL_TFCE), 0);
        // Pause autonegotiation off: as asked, without a PHY access.
        let m = link_up_model(P | A)?;
        assert!(hw::fc_after_link_up(&m, hw::Fc::TX, false)? == hw::Fc::TX);
        assert_eq!(m.peek(CTRL) & (CTRL_RFCE | CTRL_TFCE), CTRL_TFCE);
        assert!(m.find(|a| a.reg == MDIC).is_none());
        Ok(())
    }

    #[test]
    fn flow_control_waits_for_autonegotiation() -> Result {
        // Not complete: as asked for now; the next link change resolves.
        let m = link_up_model(0)?;
        hw::Phy::acquire(&m)?.write(PHY_BMSR, 0)?;
        assert!(hw::fc_after_link_up(&m, hw::Fc::RX, true)? == hw::Fc::RX);
        assert_eq!(m.peek(CTRL) & (CTRL_RFCE | CTRL_TFCE), CTRL_RFCE);
        // An MDIC error is reported, CTRL left alone.
        let m = model(|c| c.mdic = Mdic::Error)?;
        m.poke(STATUS, STATUS_LU | STATUS_FD);
        assert!(hw::fc_after_link_up(&m, hw::Fc::FULL, true).is_err());
        assert_eq!(m.peek(CTRL) & (CTRL_RFCE | CTRL_TFCE), 0);
        Ok(())
    }

    #[test]
    fn flow_control_registers() -> Result {
        let m = Model::silicon()?;
        // 64 KiB receive packet buffer, the reset value.
        m.poke(RXPBS, 0x40);
        hw::setup_fc(&m, hw::Fc::FULL, 1522);
        assert_eq!(m.peek(FCT), 0x8808);
        assert_eq!(m.peek(FCAL), 0x00c2_8001);
        assert_eq!(m.peek(FCAH), 0x0100);
        assert_eq!(m.peek(FCTTV), 0xffff);
        // 64 KiB less a 1522-byte frame and a 9728-byte one, 16-byte
        // granular; XON 16 bytes below.
        assert_eq!(m.peek(FCRTH), 54272);
        assert_eq!(m.peek(FCRTL), 54256 | FCRTL_XONE);
        let low = write_at(&m, FCRTL, 54256 | FCRTL_XONE).ok_or(EINVAL)?;
        let high = write_at(&m, FCRTH, 54272).ok_or(EINVAL)?;
        assert!(low < high);
        // Not sending pause frames: no thresholds.
        hw::setup_fc(&m, hw::Fc::RX, 1522);
        assert_eq!((m.peek(FCRTH), m.peek(FCRTL)), (0, 0));
        // A buffer too small for the headroom does not wrap.
        assert!(hw::fc_thresholds(0x10, 9238) == (0, 0));
        Ok(())
    }

    #[test]
    fn flow_control_default_comes_from_the_nvm() -> Result {
        let word = usize::from(NVM_INIT_CONTROL2);
        for (w, want) in [
            (0xffff, hw::Fc::FULL),
            (0x1000, hw::Fc::FULL),
            (0x2000, hw::Fc::TX),
            (0xcfff, hw::Fc::NONE),
        ] {
            let m = model(|c| c.nvm[word] = w)?;
            assert!(hw::nvm_fc(&m)? == want);
        }
        Ok(())
    }

    #[test]
    fn pause_advertisement_keeps_the_other_bits() -> Result {
        let m = model(|c| c.phy[phy_reg(PHY_ANAR)] = 0x01e1 | P)?;
        assert!(hw::advertise_pause(&m, hw::Fc::TX)?);
        assert_eq!(hw::Phy::acquire(&m)?.read(PHY_ANAR)?, 0x01e1 | A);
        assert!(!hw::advertise_pause(&m, hw::Fc::TX)?);
        assert!(hw::advertise_pause(&m, hw::Fc::NONE)?);
        assert_eq!(hw::Phy::acquire(&m)?.read(PHY_ANAR)?, 0x01e1);
        Ok(())
    }

    // Five-tuple filters: no gap for a flow steered before and after, the
    // disabled value, only what changed, distinct priorities.

    const KEY: [u8; 40] = [0x6d; 40];

    fn flow(src: [u8; 4], sport: u16, dport: u16) -> Flow {
        Flow {
            src,
            dst: [10, 0, 0, 2],
            sport,
            dport,
        }
    }

    /// A tcp4 rule to 10.0.0.2, from `src` if given, to `dport` if given.
    fn tcp4(src: Option<[u8; 4]>, dport: Option<u16>, queue: u32) -> TcpRule {
        TcpRule {
            flow_type: FlowType::Tcp4,
            src_ip: src.map(|a| IpAddr::V4(Ipv4Addr::from(a))),
            dst_ip: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2))),
            src_port: None,
            dst_port: dport,
            queue,
        }
    }

    /// A device with filters, every one programmed (off), and `rules` at
    /// locations 0, 1, ...
    fn filters(rules: &[TcpRule]) -> Result<(Model, KBox<Steering>)> {
        let m = Model::silicon()?;
        // On the heap, as the driver keeps it: a KUnit case's stack is small.
        let mut s = KBox::new(Steering::new(true), GFP_KERNEL)?;
        for (l, r) in rules.iter().enumerate() {
            // CAST: a few rules.
            s.add(r, RuleLocation::At(l as u32), &KEY, true)?;
        }
        s.program(&m);
        Ok((m, s))
    }

    fn ftqf_writes(m: &Model, from: usize) -> usize {
        (from..m.accesses())
            .filter(|&i| {
                m.access(i)
                    .is_some_and(|a| a.write && (FTQF..FTQF + 32).contains(&a.reg))
            })
            .count()
    }

    #[test]
    fn filter_add_writes_its_filter_only_ftqf_last() -> Result {
        let (m, mut s) = filters(&[])?;
        // The first programming turns all eight off, with the disabled value.
        assert_eq!(ftqf_writes(&m, 0), HW_FILTERS);
        assert!((0..HW_FILTERS).all(|n| m.peek(FTQF + 4 * n) == FTQF_DISABLED));
        let a = flow([10, 0, 0, 1], 5000, 80);
        let host = flow([10, 0, 0, 9], 6000, 443);
        m.watch(host, TO_RSS)?;
        m.watch(a, TO_RSS | to_queue(1))?;
        let t0 = m.accesses();
        s.add(&tcp4(None, Some(80), 1), RuleLocation::Any, &KEY, true)?;
        s.program(&m);
        // One filter: five companions, then FTQF, which turns it on.
        assert_eq!(m.accesses() - t0, 6);
        let last = m.access(m.accesses() - 1).ok_or(EINVAL)?;
        assert!(last.write && last.reg == FTQF && last.val & FTQF_QUEUE_ENABLE != 0);
        assert_eq!(m.route(&a), to_queue(1));
        assert_eq!(m.route(&host), TO_RSS);
        // Nothing changed, nothing written.
        let t1 = m.accesses();
        s.program(&m);
        assert_eq!(m.accesses(), t1);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn filter_delete_writes_the_disabled_value() -> Result {
        let (m, mut s) = filters(&[tcp4(None, Some(80), 1), tcp4(None, Some(443), 2)])?;
        let a = flow([10, 0, 0, 1], 5000, 80);
        let b = flow([10, 0, 0, 1], 5001, 443);
        m.watch(a, to_queue(1) | TO_RSS)?;
        m.watch(b, to_queue(2))?;
        let t0 = m.accesses();
        s.del(0)?;
        s.program(&m);
        // FTQF alone goes to the disabled value; the other rule's filter
        // moves up to priority 7, after.
        let after = |f: &dyn Fn(&Access) -> bool| {
            (t0..m.accesses()).find(|&i| m.access(i).is_some_and(|a| f(&a)))
        };
        let off = after(&|a| a.write && a.reg == FTQF && a.val == FTQF_DISABLED);
        let up = after(&|a| a.write && a.reg == IMIR + 4 && a.val >> 29 == 7);
        assert!(off.is_some() && off < up);
        assert_eq!(m.accesses() - t0, 2);
        assert_eq!(m.route(&a), TO_RSS);
        // Caught if a filter is turned off with FTQF = 0, or b's filter
        // goes off in between.
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn filter_replace_leaves_no_window() -> Result {
        let (m, mut s) = filters(&[tcp4(None, Some(80), 1), tcp4(None, Some(443), 2)])?;
        // a: steered before (to 1) and after (to 3); b: steered throughout
        // by the other rule; c: before only; d: never.
        let a = flow([10, 0, 0, 1], 5000, 80);
        let b = flow([10, 0, 0, 1], 5001, 443);
        let c = flow([10, 0, 0, 7], 5000, 80);
        let d = flow([10, 0, 0, 1], 6000, 22);
        m.watch(a, to_queue(1) | to_queue(3))?;
        m.watch(b, to_queue(2))?;
        m.watch(c, to_queue(1) | TO_RSS)?;
        m.watch(d, TO_RSS)?;
        s.add(
            &tcp4(Some([10, 0, 0, 1]), Some(80), 3),
            RuleLocation::At(0),
            &KEY,
            true,
        )?;
        s.program(&m);
        assert_eq!(m.route(&a), to_queue(3));
        assert_eq!(m.route(&c), TO_RSS);
        // The new filter went into the free one; the old one went off last.
        assert_eq!(m.peek(FTQF), FTQF_DISABLED);
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn filter_priorities_are_distinct_by_location() -> Result {
        let (m, mut s) = filters(&[])?;
        let f = |l: u16| flow([10, 0, 0, 1], 5000, 1000 + l);
        // Nine rules at locations 0 to 8, each flow watched from its
        // rule on: seven take filters, two go through RSS.
        for l in 0..9u16 {
            let q = u32::from(l % 4);
            s.add(
                &tcp4(None, Some(1000 + l), q),
                RuleLocation::At(l.into()),
                &KEY,
                true,
            )?;
            s.program(&m);
            // The rule at 2 goes and comes back below.
            let gone = if l == 2 { TO_RSS } else { 0 };
            m.watch(f(l), if l < 7 { to_queue(q) | gone } else { TO_RSS })?;
        }
        assert!(s.uses_rss());
        // Out and back in at location 2: the filters of 3 to 6 move down
        // a priority and up again, with no gap.
        s.del(2)?;
        s.program(&m);
        s.add(&tcp4(None, Some(1002), 2), RuleLocation::At(2), &KEY, true)?;
        s.program(&m);
        let mut prio = [None; HW_FILTERS];
        for (n, p) in prio.iter_mut().enumerate() {
            if m.peek(FTQF + 4 * n) & FTQF_QUEUE_ENABLE != 0 {
                // Which rule: its port, 1000 + location.
                // CAST: the port bits.
                let port = u16::from_be_bytes((m.peek(IMIR + 4 * n) as u16).to_le_bytes());
                *p = Some((port - 1000, m.peek(IMIR + 4 * n) >> 29));
            }
        }
        assert_eq!(prio.iter().flatten().count(), 7);
        prio.sort_unstable();
        // Locations 0..7 at priorities 7 down to 1: distinct, the lowest
        // location highest. (Before: every location from 7 up had 0.)
        for (i, (loc, p)) in prio.iter().flatten().enumerate() {
            assert_eq!((usize::from(*loc), *p as usize), (i, 7 - i));
        }
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn filter_blank_and_rewrite_is_caught() -> Result {
        // What igb_rs did on every rule change: each filter to 0, then
        // rewritten.
        let (m, s) = filters(&[tcp4(None, Some(80), 1)])?;
        m.watch(flow([10, 0, 0, 1], 5000, 80), to_queue(1))?;
        for (n, f) in s.hw_filters().iter().enumerate() {
            m.wr(FTQF + 4 * n, 0);
            if let Some(f) = f {
                m.wr(SAQF + 4 * n, f.saqf);
                m.wr(DAQF + 4 * n, f.daqf);
                m.wr(SPQF + 4 * n, f.spqf);
                m.wr(IMIR + 4 * n, f.imir);
                m.wr(IMIREXT + 4 * n, f.imirext);
                m.wr(FTQF + 4 * n, f.ftqf);
            }
        }
        assert!(m.broke(Rule::FlowWindow(0)));
        assert!(m.broke(Rule::FilterOffUnmasked(1)));
        Ok(())
    }

    #[test]
    fn filters_written_whole_after_a_reset() -> Result {
        let (m, mut s) = filters(&[tcp4(None, Some(80), 1)])?;
        let _ = hw::reset(&m);
        // The reset left every FTQF at 0: written again, all of them.
        let t0 = m.accesses();
        s.forget_hw();
        s.program(&m);
        assert_eq!(ftqf_writes(&m, t0), HW_FILTERS + 1);
        assert_eq!(m.route(&flow([10, 0, 0, 1], 5000, 80)), to_queue(1));
        assert!((1..HW_FILTERS).all(|n| m.peek(FTQF + 4 * n) == FTQF_DISABLED));
        assert!(m.clean());
        Ok(())
    }

    // Drop counters: the statistics registers clear when read and stop at
    // all ones; every reading is added once, to the right counter.

    type Drops = hw::Drops<4>;

    #[test]
    fn drop_counters_clear_on_read_and_accumulate() -> Result {
        let m = Model::silicon()?;
        let d = Drops::new();
        m.count(MPC, 5);
        m.count(RNBC, 7);
        m.count(rxq(1) + Q_DPC, 3);
        d.update(&m);
        assert_eq!((d.missed(), d.no_buffer(), d.queue(1)), (5, 7, 3));
        // Each read cleared its register (RNBC included, which igb_rs did
        // not read): a second update adds nothing.
        assert_eq!(
            (m.peek(MPC), m.peek(RNBC), m.peek(rxq(1) + Q_DPC)),
            (0, 0, 0)
        );
        d.update(&m);
        assert_eq!((d.missed(), d.no_buffer(), d.queue(1)), (5, 7, 3));
        // What the device counts later adds up.
        m.count(MPC, 2);
        m.count(rxq(1) + Q_DPC, 1);
        m.count(rxq(3) + Q_DPC, 4);
        d.update(&m);
        assert_eq!(
            (d.missed(), d.queue(1), d.queue(3), d.queue(0)),
            (7, 4, 4, 0)
        );
        // A queue beyond those counted is not read, so not cleared.
        m.count(rxq(4) + Q_DPC, 9);
        d.update(&m);
        assert_eq!((m.peek(rxq(4) + Q_DPC), d.queue(4)), (9, 0));
        Ok(())
    }

    #[test]
    fn drop_counters_land_in_their_stats_fields() -> Result {
        let m = Model::silicon()?;
        let d = Drops::new();
        m.count(MPC, 10);
        m.count(RNBC, 20);
        m.count(rxq(0) + Q_DPC, 1);
        m.count(rxq(2) + Q_DPC, 2);
        d.update(&m);
        let mut s = Stats64::default();
        d.fill(&mut s);
        assert_eq!(s.rx_missed_errors, 10);
        // The queues' drops alone: not MPC a second time (C adds it there
        // too), nor RNBC, whose frames may still be received.
        assert_eq!(s.rx_fifo_errors, 3);
        assert_eq!((s.rx_dropped, s.rx_errors), (0, 0));
        // Every get_stats64 fills the fields again: set, not added.
        d.fill(&mut s);
        assert_eq!((s.rx_missed_errors, s.rx_fifo_errors), (10, 3));
        assert_eq!(d.no_buffer(), 20);
        Ok(())
    }

    #[test]
    fn drop_counter_read_as_a_level_loses_counts() -> Result {
        // A counter taken as a level (the total is the last reading)
        // loses what an earlier read cleared, as a reader racing with the
        // watchdog would.
        let m = Model::silicon()?;
        m.count(MPC, 5);
        let watchdog = m.rd(MPC);
        m.count(MPC, 2);
        let level = m.rd(MPC);
        assert_eq!((watchdog, level), (5, 2));
        // Added, as `Drops` does, nothing is lost.
        assert_eq!(watchdog + level, 7);
        Ok(())
    }

    #[test]
    fn drop_counter_saturated_counts_a_gone_device_does_not() -> Result {
        let m = Model::silicon()?;
        let d = Drops::new();
        m.count(MPC, u32::MAX - 1);
        m.count(MPC, 5);
        // Stopped at all ones, not wrapped.
        assert_eq!(m.peek(MPC), u32::MAX);
        d.update(&m);
        assert_eq!(d.missed(), u64::from(u32::MAX));
        // Gone from the bus: every register reads all ones; nothing added.
        m.count(rxq(0) + Q_DPC, 1);
        m.unplug();
        d.update(&m);
        assert_eq!(d.missed(), u64::from(u32::MAX));
        assert_eq!((d.queue(0), d.no_buffer()), (0, 0));
        Ok(())
    }

    // Transmit hangs: frames pending, none freed for the timeout, the link
    // not paused by the partner.

    /// STATUS of a full-duplex link up at 1000 Mb/s.
    const UP_1000: u32 = STATUS_LU | STATUS_FD | 0x80;

    fn ring(freed: u64, pending: bool) -> hw::TxProgress {
        hw::TxProgress { freed, pending }
    }

    #[test]
    fn tx_hang_is_a_ring_that_sends_nothing_for_a_second() {
        let mut h = hw::TxHangCheck::new();
        // First seen stalled at 2000 ms: the wait starts.
        assert!(!h.check(ring(5, true), UP_1000, 2_000));
        assert!(!h.check(ring(5, true), UP_1000, 2_999));
        // A second without a frame freed, frames still pending: hung.
        assert!(h.check(ring(5, true), UP_1000, 3_000));
        // From the watchdog's 2 s period: the second look.
        let mut h = hw::TxHangCheck::new();
        assert!(!h.check(ring(0, true), UP_1000, 0));
        assert!(h.check(ring(0, true), UP_1000, 2_000));
    }

    #[test]
    fn tx_progress_or_an_empty_ring_is_no_hang() {
        let mut h = hw::TxHangCheck::new();
        // A busy ring frees frames between looks: never hung, however
        // long it stays busy.
        for (k, t) in (0..10u64).zip((0..).step_by(2_000)) {
            assert!(!h.check(ring(k, true), UP_1000, t));
        }
        // It stalls at 20 s: the wait counts from then, not from the
        // first look.
        assert!(!h.check(ring(10, true), UP_1000, 20_000));
        assert!(!h.check(ring(10, true), UP_1000, 20_500));
        assert!(h.check(ring(10, true), UP_1000, 21_000));
        // An idle ring (nothing pending) is never hung, and forgets.
        let mut h = hw::TxHangCheck::new();
        assert!(!h.check(ring(3, true), UP_1000, 0));
        assert!(!h.check(ring(3, false), UP_1000, 5_000));
        assert!(!h.check(ring(3, true), UP_1000, 6_000));
        assert!(h.check(ring(3, true), UP_1000, 7_000));
        // The freed count wraps without a false progress.
        let mut h = hw::TxHangCheck::new();
        assert!(!h.check(ring(u64::MAX, true), UP_1000, 0));
        assert!(!h.check(ring(0, true), UP_1000, 1_000));
    }

    #[test]
    fn tx_paused_by_flow_control_is_no_hang() -> Result {
        // The partner keeps sending XOFF: STATUS.TXOFF, as the model reads
        // it back.
        let m = Model::silicon()?;
        m.poke(STATUS, UP_1000 | STATUS_TXOFF);
        let mut h = hw::TxHangCheck::new();
        for t in (0..60_000).step_by(2_000) {
            assert!(!h.check(ring(7, true), m.rd(STATUS), t));
        }
        // The pause ends: the device gets a whole timeout to send.
        m.poke(STATUS, UP_1000);
        assert!(!h.check(ring(7, true), m.rd(STATUS), 60_000));
        assert!(!h.check(ring(7, true), m.rd(STATUS), 60_900));
        assert!(h.check(ring(7, true), m.rd(STATUS), 61_000));
        // A pause seen between two stalled looks starts the wait over,
        // from the first look without it.
        let mut h = hw::TxHangCheck::new();
        assert!(!h.check(ring(1, true), UP_1000, 0));
        assert!(!h.check(ring(1, true), UP_1000 | STATUS_TXOFF, 900));
        assert!(!h.check(ring(1, true), UP_1000, 1_500));
        assert!(!h.check(ring(1, true), UP_1000, 2_400));
        assert!(h.check(ring(1, true), UP_1000, 2_500));
        Ok(())
    }

    #[test]
    fn tx_hang_waits_longer_at_10_mbps() {
        // A ring of full frames takes seconds at 10 Mb/s: 14 s, as C.
        let up_10 = STATUS_LU | STATUS_FD;
        let mut h = hw::TxHangCheck::new();
        assert!(!h.check(ring(0, true), up_10, 0));
        assert!(!h.check(ring(0, true), up_10, 13_999));
        assert!(h.check(ring(0, true), up_10, 14_000));
        // 100 Mb/s: a second.
        let mut h = hw::TxHangCheck::new();
        assert!(!h.check(ring(0, true), STATUS_LU | 0x40, 0));
        assert!(h.check(ring(0, true), STATUS_LU | 0x40, 1_000));
    }

    // The "other" causes: a reset behind the driver reprograms it all; the
    // driver's own reset leaves nothing pending.

    #[test]
    fn reset_behind_the_driver_is_reported_once() -> Result {
        let m = Model::silicon()?;
        hw::setup_rx_unit(&m);
        m.reset_by_firmware();
        // The "other" vector's handler reads ICR once.
        let c = hw::OtherCauses::new(m.rd(ICR));
        assert!(c.reset && !c.link && !c.dma_out_of_sync);
        // The registers are at their reset values: the device needs its
        // setup again (PSRTYPE here, the address filters too).
        assert_eq!(m.peek(PSRTYPE), 0);
        // The read cleared it: one reset task, not one per interrupt.
        assert!(hw::OtherCauses::new(m.rd(ICR)) == hw::OtherCauses::default());
        // The causes the vector has, as the C igb enables them.
        assert_eq!(IMS_OTHER, 0x5000_0004);
        let c = hw::OtherCauses::new(ICR_LSC | ICR_DOUTSYNC);
        assert!(c.link && c.dma_out_of_sync && !c.reset);
        Ok(())
    }

    #[test]
    fn own_reset_leaves_no_drsta_pending() -> Result {
        // The driver's reset reads ICR last: its own reset does not come
        // back as one behind its back, which would reset it again.
        let m = Model::silicon()?;
        let _ = hw::reset(&m);
        assert!(!hw::OtherCauses::new(m.rd(ICR)).reset);
        // Without that read (CTRL.RST alone), it would.
        let m = model(|c| c.master_off = After::Us(0))?;
        m.wr(CTRL, m.rd(CTRL) | CTRL_GIO_MASTER_DISABLE);
        m.wr(CTRL, m.rd(CTRL) | CTRL_RST);
        assert!(hw::OtherCauses::new(m.rd(ICR)).reset);
        Ok(())
    }

    // ethtool's link settings: speed and duplex from STATUS, the modes from
    // the PHY.

    #[test]
    fn link_settings_after_link_setup() -> Result {
        // A partner that autonegotiates 10/100/1000 full and half, with
        // symmetric pause.
        let m = model(|c| {
            c.phy[phy_reg(PHY_ANLPAR)] = ANLPAR_ACK | ANAR_PAUSE | ANAR_SPEEDS | 1;
            c.phy[phy_reg(PHY_STAT1000)] = STAT1000_LP_FD | STAT1000_LP_HD;
        })?;
        m.poke(STATUS, STATUS_FD | 0x80);
        hw::link_setup(&m)?;
        m.sleep_us(3_000_000);
        let l = hw::link_settings(&m);
        assert!((l.speed, l.full_duplex) == (Some(1000), Some(true)));
        assert!(l.port == Port::TwistedPair && l.phy_address == 1 && l.autoneg);
        // What link_setup advertises: every speed but 1000 half, and the
        // pause bits as they were (the model's PHY: symmetric, asymmetric).
        let ours = hw::SUPPORTED_MODES;
        assert!(l.advertising == ours);
        assert!(!l.advertising.contains(LinkModes::BASE_T_1000_HALF));
        assert!(l.lp_advertising.contains(
            LinkModes::BASE_T_1000_HALF
                .with(LinkModes::BASE_T_1000_FULL)
                .with(LinkModes::BASE_T_10_HALF)
                .with(LinkModes::PAUSE)
                .with(LinkModes::AUTONEG)
        ));
        assert!(!l.lp_advertising.contains(LinkModes::ASYM_PAUSE));
        // Every PHY read under the port's SW_FW_SYNC bit.
        assert!(m.clean());
        Ok(())
    }

    #[test]
    fn link_settings_without_link_or_phy() -> Result {
        // No link: speed and duplex unknown.
        let m = model(|c| c.link = false)?;
        let l = hw::link_settings(&m);
        assert!(l.speed.is_none() && l.full_duplex.is_none());
        assert!(l
            .advertising
            .contains(LinkModes::TP.with(LinkModes::AUTONEG)));
        // 100 half from STATUS; the firmware holds the PHY: no modes, no
        // PHY access.
        let m = model(|c| c.fw_phy = After::Never)?;
        m.poke(STATUS, 0x40);
        let l = hw::link_settings(&m);
        assert!((l.speed, l.full_duplex) == (Some(100), Some(false)));
        assert!(l.advertising == LinkModes::NONE && l.lp_advertising == LinkModes::NONE);
        assert!(m.find(|a| a.reg == MDIC).is_none());
        assert!(m.clean());
        Ok(())
    }
}
