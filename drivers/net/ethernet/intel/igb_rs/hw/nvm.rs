// SPDX-License-Identifier: GPL-2.0

//! The NVM, read a word at a time through EERD (`e1000_nvm.c`): its
//! checksum, the alternate MAC address and the flow control it asks for.

use super::{
    poll,
    port,
    Fc,
    Regs, //
};
use crate::regs::*;
use kernel::prelude::*;

// TIMEOUT: one NVM word through EERD, 2000 polls 5 µs apart (C polls
// longer, 500 ms; a word takes microseconds).
const NVM_POLLS: u32 = 2000;
const NVM_POLL_US: u32 = 5;

/// Reads NVM word `word` through EERD.
pub(crate) fn nvm_read<R: Regs>(r: &R, word: u16) -> Result<u16> {
    r.wr(EERD, (u32::from(word) << EERD_ADDR_SHIFT) | EERD_START);
    let v = poll(r, EERD, NVM_POLLS, NVM_POLL_US, |v| v & EERD_DONE != 0).map_err(|_| ETIMEDOUT)?;
    // CAST: the upper half.
    Ok((v >> EERD_DATA_SHIFT) as u16)
}

/// Whether the NVM's words up to the checksum word add up to 0xBABA.
pub(crate) fn nvm_checksum_ok<R: Regs>(r: &R) -> Result<bool> {
    let mut sum = 0u16;
    for w in 0..=NVM_CHECKSUM_WORD {
        sum = sum.wrapping_add(nvm_read(r, w)?);
    }
    Ok(sum == NVM_SUM)
}

/// The alternate MAC address of this port, if the NVM has one (set by
/// pre-boot software, it takes the place of the permanent one). One with
/// the multicast bit is ignored, as in C.
pub(crate) fn alt_mac<R: Regs>(r: &R) -> Result<Option<[u8; 6]>> {
    let ptr = nvm_read(r, NVM_ALT_MAC_PTR)?;
    if ptr == 0 || ptr == 0xffff {
        return Ok(None);
    }
    // CAST: a port is 0 to 3.
    let base = ptr.wrapping_add(3 * port(r) as u16);
    let mut mac = [0u8; 6];
    for (i, pair) in mac.chunks_exact_mut(2).enumerate() {
        // CAST: i < 3.
        let w = nvm_read(r, base.wrapping_add(i as u16))?.to_le_bytes();
        pair.copy_from_slice(&w);
    }
    Ok((mac[0] & 1 == 0).then_some(mac))
}

/// The flow control the NVM asks for by default (initialization control
/// word 2), as the C igb reads it (`igb_set_default_fc`).
pub(crate) fn nvm_fc<R: Regs>(r: &R) -> Result<Fc> {
    Ok(match nvm_read(r, NVM_INIT_CONTROL2)? & NVM_PAUSE_MASK {
        0 => Fc::NONE,
        NVM_ASM_DIR => Fc::TX,
        _ => Fc::FULL,
    })
}
