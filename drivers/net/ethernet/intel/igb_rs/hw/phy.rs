// SPDX-License-Identifier: GPL-2.0

//! The PHY, over MDIC under the firmware's semaphores (`e1000_phy.c`):
//! identification, reset, link setup and autonegotiation, and the link
//! settings ethtool reports.

use super::{
    link_speed_duplex,
    pause_advertisement,
    poll,
    port,
    Fc,
    Regs,
    CFG_DONE_POLLS,
    MS, //
};
use crate::regs::*;
use kernel::{
    net::ethtool::{
        LinkModes,
        LinkSettings,
        Port, //
    },
    prelude::*, //
};

// TIMEOUT: one MDIC transaction, 1920 polls 50 µs apart (3 *
// E1000_GEN_POLL_TIMEOUT in C).
const MDIC_POLLS: u32 = 1920;
const MDIC_POLL_US: u32 = 50;

// TIMEOUT: SWSM.SMBI and SWESMBI, 2000 polls 50 µs apart each (C polls
// once per NVM word plus one, 50 µs apart).
const SWSM_POLLS: u32 = 2000;
const SWSM_POLL_US: u32 = 50;
// TIMEOUT: the firmware's hold on a SW_FW_SYNC resource, 200 tries 5 ms
// apart (C: the same, busy-waiting).
const SWFW_TRIES: u32 = 200;
const SWFW_RETRY_US: u32 = 5000;
/// CTRL.PHY_RST held this long (the IGP PHY's reset_delay_us in C), then
/// 150 µs before the PHY is touched.
const PHY_RESET_US: u32 = 100;
const PHY_RESET_SETTLE_US: u32 = 150;
/// After a PHY reset, what the device takes to load the PHY's settings
/// from the NVM (C sleeps as long).
const PHY_NVM_LOAD_US: u32 = 100_000;

/// Takes the software/firmware semaphore (SWSM): first SMBI, which the
/// device grants to one of the card's drivers, then SWESMBI, which it
/// latches only when the firmware does not hold it. `EBUSY` if either
/// stays taken (the first one is given back).
fn get_semaphore<R: Regs>(r: &R) -> Result {
    poll(r, SWSM, SWSM_POLLS, SWSM_POLL_US, |v| v & SWSM_SMBI == 0).map_err(|_| EBUSY)?;
    for _ in 0..SWSM_POLLS {
        r.wr(SWSM, r.rd(SWSM) | SWSM_SWESMBI);
        if r.rd(SWSM) & SWSM_SWESMBI != 0 {
            return Ok(());
        }
        r.sleep_us(SWSM_POLL_US);
    }
    put_semaphore(r);
    Err(EBUSY)
}

fn put_semaphore<R: Regs>(r: &R) {
    r.wr(SWSM, r.rd(SWSM) & !(SWSM_SMBI | SWSM_SWESMBI));
}

/// The SW_FW_SYNC bit of this port's PHY.
fn phy_sync_bit<R: Regs>(r: &R) -> u32 {
    // CAST: a port is 0 to 3.
    SWFW_PHY_SM
        .get(port(r) as usize)
        .copied()
        .unwrap_or(SWFW_PHY_SM[0])
}

/// This port's internal PHY, owned: while a `Phy` lives, its
/// SW_FW_SYNC software bit is set, so the manageability firmware (and
/// the drivers of the card's other ports) keep off it; dropping it gives
/// the PHY back. Every MDIC transaction goes through one. Taking it may
/// sleep: process context, no spinlock held.
pub(crate) struct Phy<'a, R: Regs> {
    r: &'a R,
    bit: u32,
}

impl<'a, R: Regs> Phy<'a, R> {
    /// Takes the PHY: under the SWSM semaphore, sets the software bit of
    /// SW_FW_SYNC once neither the firmware nor another driver holds the
    /// PHY. `EBUSY` if that does not happen within a second.
    pub(crate) fn acquire(r: &'a R) -> Result<Self> {
        let bit = phy_sync_bit(r);
        let held = bit | bit << SWFW_FW_SHIFT;
        for _ in 0..SWFW_TRIES {
            get_semaphore(r)?;
            let sync = r.rd(SW_FW_SYNC);
            if sync & held == 0 {
                r.wr(SW_FW_SYNC, sync | bit);
                put_semaphore(r);
                return Ok(Self { r, bit });
            }
            put_semaphore(r);
            r.sleep_us(SWFW_RETRY_US);
        }
        Err(EBUSY)
    }

    /// Reads PHY register `reg`.
    pub(crate) fn read(&self, reg: u32) -> Result<u16> {
        let v = mdic(
            self.r,
            MDIC_OP_READ | (PHY_ADDR << MDIC_PHY_SHIFT) | (reg << MDIC_REG_SHIFT),
        )?;
        // CAST: the data bits.
        Ok(v as u16)
    }

    /// Writes `val` to PHY register `reg`.
    pub(crate) fn write(&self, reg: u32, val: u16) -> Result {
        mdic(
            self.r,
            MDIC_OP_WRITE | (PHY_ADDR << MDIC_PHY_SHIFT) | (reg << MDIC_REG_SHIFT) | u32::from(val),
        )?;
        Ok(())
    }

    /// Sets PHY register `reg` to `f` of its value; whether that changed
    /// it.
    fn update(&self, reg: u32, f: impl FnOnce(u16) -> u16) -> Result<bool> {
        let old = self.read(reg)?;
        let new = f(old);
        if new != old {
            self.write(reg, new)?;
        }
        Ok(new != old)
    }
}

impl<R: Regs> Drop for Phy<'_, R> {
    fn drop(&mut self) {
        // C waits for the semaphore without bound here; a bound, then the
        // bit cleared anyway: a bit left set would keep the firmware off
        // the PHY for good.
        let sem = get_semaphore(self.r);
        self.r.wr(SW_FW_SYNC, self.r.rd(SW_FW_SYNC) & !self.bit);
        if sem.is_ok() {
            put_semaphore(self.r);
        }
    }
}

/// Runs MDIC command `cmd` and waits for it; an error the PHY reports
/// (no PHY at the address) is `EIO`.
fn mdic<R: Regs>(r: &R, cmd: u32) -> Result<u32> {
    r.wr(MDIC, cmd);
    let v =
        poll(r, MDIC, MDIC_POLLS, MDIC_POLL_US, |v| v & MDIC_READY != 0).map_err(|_| ETIMEDOUT)?;
    if v & MDIC_ERROR != 0 {
        return Err(EIO);
    }
    Ok(v)
}

/// Whether the port runs on its internal copper PHY (CTRL_EXT.LINK_MODE
/// 00), rather than SGMII, 1000BASE-KX or SerDes, which the NVM selects.
pub(crate) fn is_copper<R: Regs>(r: &R) -> bool {
    r.rd(CTRL_EXT) & CTRL_EXT_LINK_MODE_MASK == 0
}

/// The PHY's identifier, revision bits cleared: [`PHY_ID_82576`] for the
/// 82576's internal PHY.
pub(crate) fn phy_id<R: Regs>(r: &R) -> Result<u32> {
    let phy = Phy::acquire(r)?;
    let id = u32::from(phy.read(PHY_ID1)?) << 16 | u32::from(phy.read(PHY_ID2)?);
    Ok(id & PHY_REVISION_MASK)
}

/// Resets the PHY, unless the manageability firmware blocks PHY resets
/// (MANC.BLK_PHY_RST_ON_IDE: a BMC uses the link), as C does; then waits
/// for the device to load the PHY's settings from the NVM. Whether it
/// reset the PHY. A reset drops the link. Sleeps (~200 ms): process
/// context.
pub(crate) fn phy_reset<R: Regs>(r: &R) -> Result<bool> {
    if r.rd(MANC) & MANC_BLK_PHY_RST_ON_IDE != 0 {
        return Ok(false);
    }
    {
        let _phy = Phy::acquire(r)?;
        let ctrl = r.rd(CTRL);
        r.wr(CTRL, ctrl | CTRL_PHY_RST);
        // Posted writes: the reads flush them before each wait.
        let _ = r.rd(STATUS);
        r.sleep_us(PHY_RESET_US);
        r.wr(CTRL, ctrl & !CTRL_PHY_RST);
        let _ = r.rd(STATUS);
        r.sleep_us(PHY_RESET_SETTLE_US);
    }
    // The configuration cycle after a PHY reset: not there in QEMU, nor
    // on a device without NVM; the reset goes on, as in C.
    let done = EEMNGCTL_CFG_DONE_PORT_0 << port(r);
    let _ = poll(r, EEMNGCTL, CFG_DONE_POLLS, MS, |v| v & done != 0);
    r.sleep_us(PHY_NVM_LOAD_US);
    Ok(true)
}

/// Brings the link up as the driver runs it: the MAC takes speed and
/// duplex from the PHY; the PHY has low power link up off in D0 (it would
/// link at the lowest common speed), automatic MDI/MDI-X, and advertises
/// 10 and 100 at both duplexes and 1000 full (the pause bits stay as they
/// are), with autonegotiation on. Autonegotiation is restarted only when
/// a setting changed or there is no link: a restart drops a link that a
/// BMC may be using. Whether it restarted. Sleeps: process context.
pub(crate) fn link_setup<R: Regs>(r: &R) -> Result<bool> {
    r.wr(CTRL, (r.rd(CTRL) | CTRL_SLU) & !(CTRL_FRCSPD | CTRL_FRCDPX));
    let phy = Phy::acquire(r)?;
    let mut changed = phy.update(IGP_POWER_MGMT, |v| v & !IGP_PM_D0_LPLU)?;
    changed |= phy.update(IGP_PORT_CTRL, |v| (v & !IGP_FORCE_MDIX) | IGP_AUTO_MDIX)?;
    changed |= phy.update(PHY_ANAR, |v| v | ANAR_SPEEDS)?;
    changed |= phy.update(PHY_CTRL1000, |v| (v & !CTRL1000_HD) | CTRL1000_FD)?;
    let bmcr = phy.read(PHY_BMCR)?;
    let link = r.rd(STATUS) & STATUS_LU != 0;
    if !changed && link && bmcr & BMCR_AUTONEG_EN != 0 {
        return Ok(false);
    }
    phy.write(PHY_BMCR, bmcr | BMCR_AUTONEG_EN | BMCR_AUTONEG_RESTART)?;
    Ok(true)
}

/// What the port has: 10 and 100 Mb/s at both duplexes and 1000 Mb/s full
/// (never 1000 half, as C), autonegotiation, twisted pair, pause frames
/// both ways.
pub(crate) const SUPPORTED_MODES: LinkModes = LinkModes::BASE_T_10_HALF
    .with(LinkModes::BASE_T_10_FULL)
    .with(LinkModes::BASE_T_100_HALF)
    .with(LinkModes::BASE_T_100_FULL)
    .with(LinkModes::BASE_T_1000_FULL)
    .with(LinkModes::AUTONEG)
    .with(LinkModes::TP)
    .with(LinkModes::PAUSE)
    .with(LinkModes::ASYM_PAUSE);

/// The modes of ANAR or ANLPAR `v` (10 and 100 Mb/s, pause), and of
/// 1000BASE-T bits `full` and `half` of `g` (CTRL1000 or STAT1000).
fn phy_modes(v: u16, g: u16, (full, half): (u16, u16)) -> LinkModes {
    [
        (v & ANAR_10_HD, LinkModes::BASE_T_10_HALF),
        (v & ANAR_10_FD, LinkModes::BASE_T_10_FULL),
        (v & ANAR_100_HD, LinkModes::BASE_T_100_HALF),
        (v & ANAR_100_FD, LinkModes::BASE_T_100_FULL),
        (v & ANAR_PAUSE, LinkModes::PAUSE),
        (v & ANAR_ASM_DIR, LinkModes::ASYM_PAUSE),
        (g & full, LinkModes::BASE_T_1000_FULL),
        (g & half, LinkModes::BASE_T_1000_HALF),
    ]
    .into_iter()
    .filter(|(bit, _)| *bit != 0)
    .fold(LinkModes::NONE, |m, (_, mode)| m.with(mode))
}

/// The link as `ethtool DEV` shows it: speed and duplex from STATUS (none
/// without a link), the rest from the PHY, under its SW_FW_SYNC bit:
/// autonegotiation (BMCR), our advertisement (ANAR, CTRL1000), the
/// partner's (ANLPAR, 1000BASE-T status; what the last autonegotiation
/// got). A PHY that cannot be read (the firmware holds it) leaves the
/// advertisements empty; autonegotiation is reported on, as the driver
/// always sets it. Sleeps: process context.
pub(crate) fn link_settings<R: Regs>(r: &R) -> LinkSettings {
    let status = r.rd(STATUS);
    let link = (status & STATUS_LU != 0).then(|| link_speed_duplex(status));
    let phy = (|| -> Result<[u16; 5]> {
        let phy = Phy::acquire(r)?;
        let regs = [PHY_BMCR, PHY_ANAR, PHY_CTRL1000, PHY_ANLPAR, PHY_STAT1000];
        let mut v = [0; 5];
        for (v, reg) in v.iter_mut().zip(regs) {
            *v = phy.read(reg)?;
        }
        Ok(v)
    })();
    let (autoneg, advertising, lp_advertising) = match phy {
        Ok([bmcr, anar, ctrl1000, anlpar, stat1000]) => {
            let an = bmcr & BMCR_AUTONEG_EN != 0;
            let ours = phy_modes(anar, ctrl1000, (CTRL1000_FD, CTRL1000_HD));
            let ours = ours.with(LinkModes::TP).with(if an {
                LinkModes::AUTONEG
            } else {
                LinkModes::NONE
            });
            let lp = phy_modes(anlpar, stat1000, (STAT1000_LP_FD, STAT1000_LP_HD));
            let lp = lp.with(if anlpar & ANLPAR_ACK != 0 {
                LinkModes::AUTONEG
            } else {
                LinkModes::NONE
            });
            (an, ours, lp)
        }
        Err(_) => (true, LinkModes::NONE, LinkModes::NONE),
    };
    LinkSettings {
        speed: link.map(|(speed, _)| speed),
        full_duplex: link.map(|(_, full)| full),
        port: Port::TwistedPair,
        // CAST: the internal PHY's address, 1.
        phy_address: PHY_ADDR as u8,
        autoneg,
        supported: SUPPORTED_MODES,
        advertising,
        lp_advertising,
    }
}

/// Puts `fc`'s pause bits in the PHY's advertisement, keeping the others;
/// they count from the next autonegotiation, which [`restart_autoneg`]
/// starts. Whether the advertisement changed.
pub(crate) fn advertise_pause<R: Regs>(r: &R, fc: Fc) -> Result<bool> {
    Phy::acquire(r)?.update(PHY_ANAR, |v| {
        (v & !(ANAR_PAUSE | ANAR_ASM_DIR)) | pause_advertisement(fc)
    })
}

/// Restarts autonegotiation, so that the partner learns a new
/// advertisement: the link drops for a moment. Sleeps: process context.
pub(crate) fn restart_autoneg<R: Regs>(r: &R) -> Result {
    let phy = Phy::acquire(r)?;
    let bmcr = phy.read(PHY_BMCR)?;
    phy.write(PHY_BMCR, bmcr | BMCR_AUTONEG_EN | BMCR_AUTONEG_RESTART)
}
