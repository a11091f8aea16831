// SPDX-License-Identifier: GPL-2.0

//! The MAC (`e1000_mac.c`): its address (RAR0) and flow control, and the
//! speed and duplex of the link.

use super::{
    Phy,
    Regs, //
};
use crate::regs::*;
use kernel::prelude::*;

/// Whether `a` can be a device's address: not all zeros, not multicast.
pub(crate) fn is_valid_ether_addr(a: &[u8; 6]) -> bool {
    *a != [0; 6] && a[0] & 1 == 0
}

/// The address in receive address register 0.
pub(crate) fn rar0<R: Regs>(r: &R) -> [u8; 6] {
    let lo = r.rd(RAL0).to_le_bytes();
    let hi = r.rd(RAH0).to_le_bytes();
    [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]
}

/// Puts `a` in receive address register 0, valid.
pub(crate) fn set_rar0<R: Regs>(r: &R, a: &[u8; 6]) {
    r.wr(RAL0, u32::from_le_bytes([a[0], a[1], a[2], a[3]]));
    r.wr(RAH0, u32::from(u16::from_le_bytes([a[4], a[5]])) | RAH_AV);
}

/// The link's speed in Mb/s and whether it is full duplex, from STATUS.
pub(crate) fn link_speed_duplex(status: u32) -> (u32, bool) {
    let speed = match (status & STATUS_SPEED_MASK) >> STATUS_SPEED_SHIFT {
        0 => 10,
        1 => 100,
        _ => 1000,
    };
    (speed, status & STATUS_FD != 0)
}

/// Link flow control (IEEE 802.3x pause frames): whether the MAC honours
/// the pause frames it receives (`rx`), and sends them when its receive
/// packet buffer fills (`tx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fc {
    pub(crate) rx: bool,
    pub(crate) tx: bool,
}

impl Fc {
    pub(crate) const NONE: Self = Self {
        rx: false,
        tx: false,
    };
    pub(crate) const RX: Self = Self {
        rx: true,
        tx: false,
    };
    pub(crate) const TX: Self = Self {
        rx: false,
        tx: true,
    };
    pub(crate) const FULL: Self = Self { rx: true, tx: true };
}

/// The largest frame the C driver sizes the receive packet buffer's
/// headroom for (MAX_JUMBO_FRAME_SIZE): what may still arrive after an
/// XOFF is sent.
const MAX_JUMBO_FRAME: u32 = 0x2600;

/// The receive thresholds of flow control for a receive packet buffer of
/// `rxpbs` (RXPBS) and frames up to `max_frame` bytes, as the C igb
/// computes them (`igb_reset`): XOFF once the buffer has less room than
/// one frame being sent and one jumbo frame being received; XON 16 bytes
/// below. (high, low), 16-byte granular.
pub(crate) fn fc_thresholds(rxpbs: u32, max_frame: u32) -> (u32, u32) {
    let buf = (rxpbs & RXPBS_SIZE_MASK) << 10;
    let high = buf.saturating_sub(max_frame + MAX_JUMBO_FRAME) & !0xf;
    (high, high.saturating_sub(16))
}

/// Programs flow control's registers for `fc`, with frames up to
/// `max_frame` bytes (`igb_setup_link`, `igb_set_fc_watermarks`): the
/// pause address, type and time, and the receive thresholds, which are 0
/// (no pause frames sent) unless `fc.tx`. CTRL.RFCE/TFCE are
/// [`force_fc`]'s.
pub(crate) fn setup_fc<R: Regs>(r: &R, fc: Fc, max_frame: u32) {
    r.wr(FCT, FCT_PAUSE);
    r.wr(FCAH, FCAH_PAUSE);
    r.wr(FCAL, FCAL_PAUSE);
    r.wr(FCTTV, FCTTV_MAX);
    let (high, low) = if fc.tx {
        let (high, low) = fc_thresholds(r.rd(RXPBS), max_frame);
        (high, low | FCRTL_XONE)
    } else {
        (0, 0)
    };
    // Low first: never a high threshold below the low one.
    r.wr(FCRTL, low);
    r.wr(FCRTH, high);
}

/// Makes the MAC do `fc` (CTRL.RFCE, TFCE). With a copper PHY the MAC
/// learns nothing of the autonegotiation: the driver sets both after it
/// resolves the link's flow control (`igb_force_mac_fc`).
pub(crate) fn force_fc<R: Regs>(r: &R, fc: Fc) {
    let mut ctrl = r.rd(CTRL) & !(CTRL_RFCE | CTRL_TFCE);
    if fc.rx {
        ctrl |= CTRL_RFCE;
    }
    if fc.tx {
        ctrl |= CTRL_TFCE;
    }
    r.wr(CTRL, ctrl);
}

/// The pause bits the PHY advertises for `fc` (`igb_phy_setup_autoneg`).
/// Receive-only cannot be advertised: it advertises both directions, and
/// [`resolve_fc`] turns sending off again.
pub(crate) fn pause_advertisement(fc: Fc) -> u16 {
    match (fc.rx, fc.tx) {
        (false, false) => 0,
        (false, true) => ANAR_ASM_DIR,
        (true, _) => ANAR_PAUSE | ANAR_ASM_DIR,
    }
}

/// The flow control of a full-duplex link whose autonegotiation is done,
/// from what we asked for (`requested`, advertised as
/// [`pause_advertisement`] says), our advertisement `adv` and the
/// partner's `lp` (IEEE 802.3 Annex 28B, as `igb_config_fc_after_link_up`
/// reads it):
///
/// | adv PAUSE | adv ASM | lp PAUSE | lp ASM | result                    |
/// |-----------|---------|----------|--------|---------------------------|
/// | 1         | x       | 1        | x      | both (receive only if asked) |
/// | 0         | 1       | 1        | 1      | send only                 |
/// | 1         | 1       | 0        | 1      | receive only              |
/// | otherwise |         |          |        | none, but see below       |
///
/// Where the standard says none, C still honours received pause frames
/// when it asked to receive them: a partner that advertises nothing may
/// have flow control forced on, and honouring its pause frames costs
/// nothing if it sends none.
pub(crate) fn resolve_fc(requested: Fc, adv: u16, lp: u16) -> Fc {
    let (p, a) = (adv & ANAR_PAUSE != 0, adv & ANAR_ASM_DIR != 0);
    let (lp_p, lp_a) = (lp & ANAR_PAUSE != 0, lp & ANAR_ASM_DIR != 0);
    let standard = match (p, a, lp_p, lp_a) {
        (true, _, true, _) if requested == Fc::FULL => Some(Fc::FULL),
        // Receive only was asked for, advertised as both.
        (true, _, true, _) => Some(Fc::RX),
        (false, true, true, true) => Some(Fc::TX),
        (true, true, false, true) => Some(Fc::RX),
        _ => None,
    };
    standard.unwrap_or(if requested.rx { Fc::RX } else { Fc::NONE })
}

/// Settles flow control once the link is up, and makes the MAC do it:
/// `requested` as is when pause autonegotiation is off (`autoneg`), else
/// resolved from the PHY's advertisement and the partner's, as
/// `igb_config_fc_after_link_up` does for copper. None on a half-duplex
/// link. With autonegotiation not done yet, `requested` for now: the next
/// link change resolves again.
pub(crate) fn fc_after_link_up<R: Regs>(r: &R, requested: Fc, autoneg: bool) -> Result<Fc> {
    let fc = if autoneg {
        let phy = Phy::acquire(r)?;
        // Latched bits: the second read is the current state.
        let _ = phy.read(PHY_BMSR)?;
        if phy.read(PHY_BMSR)? & BMSR_AN_COMPLETE == 0 {
            requested
        } else {
            let adv = phy.read(PHY_ANAR)?;
            let lp = phy.read(PHY_ANLPAR)?;
            resolve_fc(requested, adv, lp)
        }
    } else {
        requested
    };
    let fc = if r.rd(STATUS) & STATUS_FD == 0 {
        Fc::NONE
    } else {
        fc
    };
    force_fc(r, fc);
    Ok(fc)
}
