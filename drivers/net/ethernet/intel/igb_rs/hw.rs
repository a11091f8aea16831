// SPDX-License-Identifier: GPL-2.0

//! Register access, and the control-path procedures of the 82576 on it:
//! device reset, queue start and stop, NVM and PHY reads.
//!
//! The procedures are generic over [`Regs`], which the driver implements
//! on its BAR and the KUnit suite `igb_rs_hw_model` on a strict model of
//! the device (`model.rs`): a model that, unlike QEMU's, takes time to stop
//! a queue, to finish its DMA requests and to load its NVM. Each use is
//! monomorphised; nothing here is on the per-packet path, which writes the
//! BAR directly.
//!
//! The waits are those of the C driver (`e1000_82575.c` reset,
//! `e1000_mac.c` master disable, `e1000_nvm.c` EERD, `e1000_phy.c` MDIC)
//! and, for the queue enable bits, of the datasheet's queue enable and
//! disable sequences, which the C igb skips because it resets the whole
//! device where this driver restarts one queue.
//!
//! C driver: [`e1000_82575.c`](srctree/drivers/net/ethernet/intel/igb/e1000_82575.c)

use crate::regs::*;
use kernel::{
    net::{
        driver::Stats64,
        ethtool::{
            LinkModes,
            LinkSettings,
            Port, //
        },
    },
    prelude::*,
    sync::atomic::{
        Atomic,
        Relaxed, //
    },
};

/// A register window of an 82576.
pub(crate) trait Regs {
    /// Reads register `reg`.
    fn rd(&self, reg: usize) -> u32;

    /// Writes `val` to register `reg`.
    fn wr(&self, reg: usize, val: u32);

    /// Waits at least `us` microseconds, sleeping: process context, no
    /// spinlock held.
    fn sleep_us(&self, us: u32);
}

/// Queues with registers (`rxq`, `txq`): a device reset stops them all.
pub(crate) const HW_QUEUES: usize = 16;

// TIMEOUT: a queue's ENABLE bit follows a write once the queue's pending
// descriptor fetches and write-backs are done, a few µs on silicon, at once
// in QEMU; 200 polls 50 µs apart give it 10 ms, as ixgbe gives the same
// bit. QEMU answers the first read, so a restart waits for nothing there.
const QUEUE_POLLS: u32 = 200;
const QUEUE_POLL_US: u32 = 50;
// TIMEOUT: DMA requests in flight after CTRL.GIO_MASTER_DISABLE, 800 polls
// 100 µs apart (MASTER_DISABLE_TIMEOUT in C).
const MASTER_POLLS: u32 = 800;
const MASTER_POLL_US: u32 = 100;
/// What the receive and transmit units finish before CTRL.RST, as in C.
const RESET_SETTLE_US: u32 = 10_000;
// TIMEOUT: the NVM auto-read after reset, 10 polls 1 ms apart
// (AUTO_READ_DONE_TIMEOUT in C). QEMU never sets AUTO_RD: the wait runs
// out and the reset goes on, as in C.
const AUTO_RD_POLLS: u32 = 10;
// TIMEOUT: the manageability configuration cycle, 100 polls 1 ms apart
// (PHY_CFG_TIMEOUT in C). QEMU never sets CFG_DONE either.
const CFG_DONE_POLLS: u32 = 100;
const MS: u32 = 1000;
// TIMEOUT: one NVM word through EERD, 2000 polls 5 µs apart (C polls
// longer, 500 ms; a word takes microseconds).
const NVM_POLLS: u32 = 2000;
const NVM_POLL_US: u32 = 5;
// TIMEOUT: one MDIC transaction, 1920 polls 50 µs apart (3 *
// E1000_GEN_POLL_TIMEOUT in C).
const MDIC_POLLS: u32 = 1920;
const MDIC_POLL_US: u32 = 50;

/// Reads `reg` until `done` says yes of its value, `polls` more times
/// `step_us` apart after the first read. The last value read, as `Ok` if
/// `done` took it.
fn poll<R: Regs>(
    r: &R,
    reg: usize,
    polls: u32,
    step_us: u32,
    done: impl Fn(u32) -> bool,
) -> Result<u32, u32> {
    let mut v = r.rd(reg);
    for _ in 0..polls {
        if done(v) {
            return Ok(v);
        }
        r.sleep_us(step_us);
        v = r.rd(reg);
    }
    if done(v) {
        Ok(v)
    } else {
        Err(v)
    }
}

/// A queue's ENABLE bit did not read 0 in time: it may still read
/// descriptors and write buffers of the ring it was given.
#[derive(Debug)]
pub(crate) struct Stuck;

/// Receive queue `.0` does no DMA: its ENABLE bit read 0 after it was
/// cleared, or the device was reset since. Its ring may be freed or handed
/// back.
#[must_use = "the proof that a ring may go"]
pub(crate) struct RxOff(usize);

/// Transmit queue `.0` does no DMA (as [`RxOff`]).
#[must_use = "the proof that a ring may go"]
pub(crate) struct TxOff(usize);

impl RxOff {
    pub(crate) fn queue(&self) -> usize {
        self.0
    }
}

impl TxOff {
    pub(crate) fn queue(&self) -> usize {
        self.0
    }
}

#[cfg(CONFIG_IGB_RS_KUNIT_TEST)]
impl RxOff {
    /// What the driver believed before it waited for ENABLE to read 0:
    /// for the model's tests of a procedure without the wait.
    pub(crate) fn assume(q: usize) -> Self {
        Self(q)
    }
}

#[cfg(CONFIG_IGB_RS_KUNIT_TEST)]
impl TxOff {
    /// As [`RxOff::assume`].
    pub(crate) fn assume(q: usize) -> Self {
        Self(q)
    }
}

/// Queues below `queues` do no DMA: each read its ENABLE bit 0, or the
/// device was reset, which makes it forget every ring. (Silicon's reset
/// value of RXDCTL0 and TXDCTL0 has ENABLE set, with no ring: no DMA.)
pub(crate) struct Stopped {
    queues: usize,
    by_reset: bool,
}

impl Stopped {
    /// Receive queue `q` does no DMA, if it is one of the queues stopped.
    pub(crate) fn rx(&self, q: usize) -> Option<RxOff> {
        (q < self.queues).then_some(RxOff(q))
    }

    /// Transmit queue `q` does no DMA, if it is one of the queues stopped.
    pub(crate) fn tx(&self, q: usize) -> Option<TxOff> {
        (q < self.queues).then_some(TxOff(q))
    }

    /// Some queue did not stop, so the device was reset: everything it
    /// was programmed with is gone.
    pub(crate) fn by_reset(&self) -> bool {
        self.by_reset
    }
}

/// The waits of a reset that ended before the time allowed: DMA requests
/// drained, NVM loaded, manageability configuration done. Only the first
/// matters for DMA; QEMU does neither of the others.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResetWaits {
    pub(crate) master: bool,
    pub(crate) auto_rd: bool,
    pub(crate) cfg_done: bool,
}

/// The port (PCI function) of the device on its card.
fn port<R: Regs>(r: &R) -> u32 {
    (r.rd(STATUS) & STATUS_FUNC_MASK) >> STATUS_FUNC_SHIFT
}

/// Raises the PCIe completion timeout from its default (50 µs to 50 ms) to
/// 10 ms to 200 ms, if nothing set it, and turns off resending on timeout.
/// With capability version 2 the range is in configuration space (DEVCTL2)
/// and stays as the firmware set it.
fn set_completion_timeout<R: Regs>(r: &R) {
    let mut gcr = r.rd(GCR);
    if gcr & (GCR_CMPL_TMOUT_MASK | GCR_CAP_VER2) == 0 {
        gcr |= GCR_CMPL_TMOUT_10MS;
    }
    r.wr(GCR, gcr & !GCR_CMPL_TMOUT_RESEND);
}

/// Resets the device: no interrupts, no DMA, every register at its reset
/// value, the NVM loaded (MAC address in RAR0). Process context.
///
/// DMA requests in flight when CTRL.RST hits can hang the PCIe link, so
/// new ones are blocked first and the pending ones drained
/// (STATUS.GIO_MASTER_ENABLE reads 0); the receive and transmit units are
/// stopped and given 10 ms. After CTRL.RST the device reloads its NVM
/// (EECD.AUTO_RD) and its manageability configuration (EEMNGCTL.CFG_DONE);
/// RAL/RAH hold the address only once the first is done. None of the
/// waits failing stops the reset (C does the same: a device without NVM
/// never sets AUTO_RD, nor does QEMU's).
pub(crate) fn reset<R: Regs>(r: &R) -> (Stopped, ResetWaits) {
    r.wr(CTRL, r.rd(CTRL) | CTRL_GIO_MASTER_DISABLE);
    let master = poll(r, STATUS, MASTER_POLLS, MASTER_POLL_US, |v| {
        v & STATUS_GIO_MASTER_ENABLE == 0
    })
    .is_ok();
    set_completion_timeout(r);
    r.wr(EIMC, !0);
    r.wr(IMC, !0);
    r.wr(RCTL, 0);
    r.wr(TCTL, TCTL_PSP);
    // Posted writes: the read flushes them before the wait.
    let _ = r.rd(STATUS);
    r.sleep_us(RESET_SETTLE_US);
    r.wr(CTRL, r.rd(CTRL) | CTRL_RST);
    let auto_rd = poll(r, EECD, AUTO_RD_POLLS, MS, |v| v & EECD_AUTO_RD != 0).is_ok();
    let done = EEMNGCTL_CFG_DONE_PORT_0 << port(r);
    let cfg_done = poll(r, EEMNGCTL, CFG_DONE_POLLS, MS, |v| v & done != 0).is_ok();
    r.wr(EIMC, !0);
    r.wr(IMC, !0);
    let _ = r.rd(ICR);
    (
        Stopped {
            queues: HW_QUEUES,
            by_reset: true,
        },
        ResetWaits {
            master,
            auto_rd,
            cfg_done,
        },
    )
}

/// Waits until the ENABLE bit of the queue control register `dctl` reads
/// 0. A device gone from the bus reads all ones and does no DMA either.
fn wait_disabled<R: Regs>(r: &R, dctl: usize) -> Result<(), Stuck> {
    poll(r, dctl, QUEUE_POLLS, QUEUE_POLL_US, |v| {
        v & DCTL_ENABLE == 0 || v == !0
    })
    .map(|_| ())
    .map_err(|_| Stuck)
}

fn wait_enabled<R: Regs>(r: &R, dctl: usize) -> bool {
    poll(r, dctl, QUEUE_POLLS, QUEUE_POLL_US, |v| {
        v & DCTL_ENABLE != 0
    })
    .is_ok()
}

/// Stops receive queue `q`: clears its ENABLE bit and waits until it reads
/// 0, after which the queue fetches no descriptor and writes no buffer.
/// On [`Stuck`] the ring must stay where it is (or the device be reset).
pub(crate) fn rx_stop<R: Regs>(r: &R, q: usize) -> Result<RxOff, Stuck> {
    r.wr(rxq(q) + Q_DCTL, 0);
    wait_disabled(r, rxq(q) + Q_DCTL)?;
    Ok(RxOff(q))
}

/// Stops transmit queue `q` (as [`rx_stop`]); what it had not sent is
/// dropped.
pub(crate) fn tx_stop<R: Regs>(r: &R, q: usize) -> Result<TxOff, Stuck> {
    r.wr(txq(q) + Q_DCTL, 0);
    wait_disabled(r, txq(q) + Q_DCTL)?;
    Ok(TxOff(q))
}

/// Stops queues `0..n`, receive and transmit, waiting for each; if one
/// does not stop, resets the device. The receive and transmit units should
/// be off (RCTL.EN, TCTL.EN) first, so that no queue gets more to do.
pub(crate) fn stop_queues<R: Regs>(r: &R, n: usize) -> Stopped {
    // Clear every bit first, then wait: the queues drain together.
    for q in 0..n {
        r.wr(rxq(q) + Q_DCTL, 0);
        r.wr(txq(q) + Q_DCTL, 0);
    }
    let off = (0..n).all(|q| {
        wait_disabled(r, rxq(q) + Q_DCTL).is_ok() && wait_disabled(r, txq(q) + Q_DCTL).is_ok()
    });
    if off {
        Stopped {
            queues: n,
            by_reset: false,
        }
    } else {
        reset(r).0
    }
}

/// Where a ring is: its DMA address and length in bytes.
#[derive(Clone, Copy)]
pub(crate) struct Ring {
    pub(crate) dma: u64,
    pub(crate) bytes: u32,
}

/// Why a queue did not start.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StartError {
    /// ENABLE did not read 1 in time; the queue was stopped again and does
    /// not use the ring.
    TimedOut,
    /// The queue did not stop, before or after: it may use a ring (the new
    /// one or an old one), so none may go before a device reset.
    Stuck,
}

impl From<StartError> for Error {
    fn from(e: StartError) -> Error {
        match e {
            StartError::TimedOut => ETIMEDOUT,
            StartError::Stuck => EIO,
        }
    }
}

/// Waits for the queue whose control register is `dctl` to run after its
/// ENABLE bit was set; if it does not, stops it again.
fn wait_started<R: Regs>(r: &R, dctl: usize) -> Result<(), StartError> {
    if wait_enabled(r, dctl) {
        return Ok(());
    }
    r.wr(dctl, 0);
    match wait_disabled(r, dctl) {
        Ok(()) => Err(StartError::TimedOut),
        Err(Stuck) => Err(StartError::Stuck),
    }
}

/// SRRCTL for receive buffers of `buf_size` bytes (a multiple of 1 KiB),
/// 256-byte header buffers with header split, and whether a frame for the
/// queue is dropped when it has no descriptor (`drop_en`).
pub(crate) fn srrctl(buf_size: u32, split: bool, drop_en: bool) -> u32 {
    let desctype = if split {
        SRRCTL_DESCTYPE_HDR_SPLIT
    } else {
        SRRCTL_DESCTYPE_ADV_ONEBUF
    };
    let drop = if drop_en { SRRCTL_DROP_EN } else { 0 };
    desctype | drop | SRRCTL_BSIZEHDR_256 | (buf_size >> SRRCTL_BSIZEPKT_SHIFT)
}

/// Starts receive queue `q` on `ring`, described by `srrctl`, with the
/// device's head at `head` and the descriptors up to `tail` armed.
///
/// The 82576 takes a ring's address, length, buffer layout and head only
/// while the queue is off (ENABLE reads 0), and a tail only once it runs
/// (ENABLE reads 1): so stop, program, enable, wait, then give the
/// descriptors. The tail is set to the head while the queue is off, so that
/// it starts with nothing to fetch.
pub(crate) fn rx_start<R: Regs>(
    r: &R,
    q: usize,
    ring: Ring,
    srrctl: u32,
    (head, tail): (u32, u32),
) -> Result<(), StartError> {
    let rq = rxq(q);
    // Off, with a ring or not: whatever ring it had is the caller's, who
    // stopped the queue before (this proof is for registers, not rings).
    let _: RxOff = rx_stop(r, q).map_err(|Stuck| StartError::Stuck)?;
    // CAST: the halves of a 64-bit address.
    r.wr(rq + Q_BAL, ring.dma as u32);
    r.wr(rq + Q_BAH, (ring.dma >> 32) as u32);
    r.wr(rq + Q_LEN, ring.bytes);
    r.wr(rq + Q_SRRCTL, srrctl);
    r.wr(rq + Q_HEAD, head);
    r.wr(rq + Q_TAIL, head);
    r.wr(rq + Q_DCTL, RXDCTL_VALUE);
    wait_started(r, rq + Q_DCTL)?;
    r.wr(rq + Q_TAIL, tail);
    Ok(())
}

/// Starts transmit queue `q` on the empty `ring` (head and tail 0), as
/// [`rx_start`]: programmed while off, then enabled and waited for.
pub(crate) fn tx_start<R: Regs>(r: &R, q: usize, ring: Ring) -> Result<(), StartError> {
    let tq = txq(q);
    let _: TxOff = tx_stop(r, q).map_err(|Stuck| StartError::Stuck)?;
    // CAST: the halves of a 64-bit address.
    r.wr(tq + Q_BAL, ring.dma as u32);
    r.wr(tq + Q_BAH, (ring.dma >> 32) as u32);
    r.wr(tq + Q_LEN, ring.bytes);
    r.wr(tq + Q_HEAD, 0);
    r.wr(tq + Q_TAIL, 0);
    r.wr(tq + Q_DCTL, TXDCTL_VALUE);
    wait_started(r, tq + Q_DCTL)
}

/// Tells the firmware a driver runs the device (CTRL_EXT.DRV_LOAD).
pub(crate) fn take_control<R: Regs>(r: &R) {
    r.wr(CTRL_EXT, r.rd(CTRL_EXT) | CTRL_EXT_DRV_LOAD);
}

/// Gives the device back to the firmware: on remove, and when no driver
/// runs it. A reset does not clear DRV_LOAD.
pub(crate) fn release_control<R: Regs>(r: &R) {
    r.wr(CTRL_EXT, r.rd(CTRL_EXT) & !CTRL_EXT_DRV_LOAD);
}

/// Turns off the parsing of IPv6 extension headers (82576 errata), keeping
/// the rest of RFCTL.
pub(crate) fn rx_errata<R: Regs>(r: &R) {
    r.wr(RFCTL, r.rd(RFCTL) | RFCTL_IPV6_EX_DIS);
}

/// The frame types header split splits: TCP and UDP over IPv4 and IPv6
/// after their TCP or UDP header, IP fragments after the IP header. Every
/// other frame goes whole to the packet buffer, as the receive path
/// expects of a frame the device did not split (a devmem queue drops it:
/// it is not TCP). Without these, header split would split nothing and
/// the headers of a devmem queue's TCP frames would land in device memory.
pub(crate) const PSRTYPE_SPLIT: u32 = PSRTYPE_IPV4_FRAG
    | PSRTYPE_IPV4_TCP
    | PSRTYPE_IPV4_UDP
    | PSRTYPE_IPV6_FRAG
    | PSRTYPE_IPV6_TCP
    | PSRTYPE_IPV6_UDP;

/// Sets the receive unit up, before any queue starts: the errata bit, and
/// the frame types header split splits ([`PSRTYPE_SPLIT`]), for queues
/// with it and without (for those PSRTYPE is not looked at).
///
/// PSRTYPE is one register per pool; which one a queue uses without
/// virtualization (pool 0's, or the one of the queue's number, as on the
/// I210, which has one per queue) is UNVERIFIED, so all eight get the
/// types. The reset value is not relied on.
pub(crate) fn setup_rx_unit<R: Regs>(r: &R) {
    rx_errata(r);
    for n in 0..PSRTYPE_REGS {
        r.wr(PSRTYPE + 4 * n, PSRTYPE_SPLIT);
    }
}

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

/// `rx-usecs` values that are not intervals but adaptive moderation, as
/// in the C igb: the interval follows the frames each interrupt brought.
/// With 3 (conservative, the default) it is 49 µs at the shortest; with 1
/// it goes down to a few µs for small frames.
pub(crate) const ITR_ADAPTIVE: u32 = 1;
pub(crate) const ITR_ADAPTIVE_CONSERVATIVE: u32 = 3;
/// The default: adaptive, conservative, as the C igb's.
pub(crate) const ITR_DEFAULT: u32 = ITR_ADAPTIVE_CONSERVATIVE;
/// The interval `adaptive-rx off` gives: 49 µs, about 20000 interrupts
/// per second (the C igb's IGB_20K_ITR, 196 in the register), also the
/// shortest conservative adaptive moderation goes to. QEMU's model makes
/// it about 200 µs.
pub(crate) const ITR_FIXED_USECS: u32 = 49;
/// Where adaptive moderation starts: 162 µs (the C igb's IGB_START_ITR,
/// 648 in the register).
pub(crate) const ITR_START_USECS: u32 = 162;
/// Adaptive moderation below 1000 Mb/s: 245 µs, about 4000 interrupts
/// per second (the C igb's IGB_4K_ITR, 980).
const ITR_SLOW_LINK_USECS: u32 = 245;
/// The longest interval EITR holds: 13 bits of 1 µs.
pub(crate) const ITR_MAX_USECS: u32 = EITR_INTERVAL_MASK >> EITR_INTERVAL_SHIFT;
/// The shortest one besides 0, as in C (IGB_MIN_ITR_USECS).
pub(crate) const ITR_MIN_USECS: u32 = 10;

/// Whether `usecs` can be a vector's setting (`ethtool -C rx-usecs`): 0
/// (no moderation), 1 or 3 (adaptive, [`ITR_ADAPTIVE`]), or an interval
/// of 10 to 8191 µs. The C igb takes up to 10000 µs, which it writes
/// masked to the field (10000 µs becomes 1808 µs).
pub(crate) fn itr_check(usecs: u32) -> Result<(), &'static CStr> {
    match usecs {
        0 | ITR_ADAPTIVE | ITR_ADAPTIVE_CONSERVATIVE => Ok(()),
        ITR_MIN_USECS..=ITR_MAX_USECS => Ok(()),
        _ => Err(c"igb_rs: rx-usecs must be 0, 1 or 3 (adaptive), or 10 to 8191"),
    }
}

/// Whether rx-usecs `usecs` is adaptive moderation.
pub(crate) fn itr_adaptive(usecs: u32) -> bool {
    matches!(usecs, ITR_ADAPTIVE | ITR_ADAPTIVE_CONSERVATIVE)
}

/// The interval a vector starts with under rx-usecs `usecs`.
pub(crate) fn itr_start(usecs: u32) -> u32 {
    if itr_adaptive(usecs) {
        ITR_START_USECS
    } else {
        usecs
    }
}

/// What a vector's frames were since its interval was last chosen: bytes
/// and frames received, bytes and frames sent.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct ItrLoad {
    pub(crate) rx: (u64, u64),
    pub(crate) tx: (u64, u64),
}

/// The next interval of a vector under adaptive moderation (`usecs` 1 or
/// 3), from its `load` since the last choice, on a link of `mbps`; `None`
/// to keep the interval (no frames), as the C igb's policy for vectors of
/// their own (`igb_update_ring_itr`): large frames mean a stream, and
/// longer intervals, up to about 375 µs at 3000 bytes; small ones mean
/// requests and answers, whose latency counts. The interval is the mean
/// frame on the wire (preamble, CRC and gap are 24 bytes more), received
/// or sent, whichever is larger, over 8 ns a byte (over 12 for frames of
/// 300 to 1200 bytes).
pub(crate) fn itr_adapt(usecs: u32, mbps: u32, load: ItrLoad) -> Option<u32> {
    let mean = |(bytes, frames): (u64, u64)| bytes.checked_div(frames).unwrap_or(0);
    let wire = mean(load.rx).max(mean(load.tx));
    if wire == 0 {
        return None;
    }
    if mbps != 1000 {
        return Some(ITR_SLOW_LINK_USECS);
    }
    let wire = wire.saturating_add(24).min(3000);
    // In the register's quarter-µs steps, then whole µs (what the field
    // holds), as C masks it.
    let reg = if wire > 300 && wire < 1200 {
        wire / 3
    } else {
        wire / 2
    };
    // CAST: at most 1500 / 4.
    let usecs_next = (reg >> EITR_INTERVAL_SHIFT) as u32;
    Some(if usecs == ITR_ADAPTIVE_CONSERVATIVE {
        usecs_next.max(ITR_FIXED_USECS)
    } else {
        usecs_next
    })
}

/// EITR for an interval of `usecs` (checked with [`itr_check`], or
/// chosen by [`itr_adapt`]), counters kept. 0 writes the shortest
/// interval the field holds, as C does (`igb_write_itr`).
pub(crate) fn eitr_value(usecs: u32) -> u32 {
    let v = (usecs << EITR_INTERVAL_SHIFT) & EITR_INTERVAL_MASK;
    v.max(1 << EITR_INTERVAL_SHIFT) | EITR_CNT_IGNR
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

/// The flow control the NVM asks for by default (initialization control
/// word 2), as the C igb reads it (`igb_set_default_fc`).
pub(crate) fn nvm_fc<R: Regs>(r: &R) -> Result<Fc> {
    Ok(match nvm_read(r, NVM_INIT_CONTROL2)? & NVM_PAUSE_MASK {
        0 => Fc::NONE,
        NVM_ASM_DIR => Fc::TX,
        _ => Fc::FULL,
    })
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

/// How long a transmit ring with frames pending may free none before it is
/// taken as hung, at the link speed in `status`: a second, 14 at 10 Mb/s,
/// where a ring's worth of full frames takes seconds (C's
/// tx_timeout_factor).
fn tx_hang_timeout_ms(status: u32) -> u64 {
    match link_speed_duplex(status).0 {
        10 => 14_000,
        _ => 1_000,
    }
}

/// What the watchdog saw of a transmit ring, once it freed what the device
/// had sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TxProgress {
    /// Frames the ring freed since it was made (wrapping).
    pub(crate) freed: u64,
    /// Frames remain that the device has not sent.
    pub(crate) pending: bool,
}

/// Transmit hang detection for one ring, from the watchdog (what the C igb
/// does from its clean path once the watchdog sets
/// IGB_RING_FLAG_TX_DETECT_HANG).
///
/// C takes a ring as hung when the frame it waits for was queued more than
/// the timeout ago and the partner is not pausing the link (STATUS.TXOFF).
/// Here, rather than a time stamp per frame on the transmit path, the
/// watchdog remembers when it first saw the ring with frames pending and
/// none freed since: the ring is hung once that lasts the timeout. That
/// asks the same of the device (it sent nothing for that long), whatever
/// the ring holds, at no cost per frame. A pause stops the wait: the
/// device may not send while paused, and gets the whole timeout from the
/// first look that finds the pause over.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TxHangCheck {
    /// Frames freed, and the time (ms), when the ring was first seen with
    /// frames pending and no progress since.
    stalled: Option<(u64, u64)>,
}

impl TxHangCheck {
    pub(crate) const fn new() -> Self {
        Self { stalled: None }
    }

    /// Looks at the ring as `p` says, with STATUS as read now (`status`:
    /// link speed, TXOFF) and a monotonic time in ms; whether the ring is
    /// hung. A ring that empties, or frees a frame, starts over.
    pub(crate) fn check(&mut self, p: TxProgress, status: u32, now_ms: u64) -> bool {
        if !p.pending || status & STATUS_TXOFF != 0 {
            // Nothing to send, or not allowed to: the wait starts at the
            // next look that finds frames pending and no pause.
            self.stalled = None;
            return false;
        }
        match self.stalled {
            Some((freed, since)) if freed == p.freed => {
                now_ms.saturating_sub(since) >= tx_hang_timeout_ms(status)
            }
            _ => {
                // The first look with frames pending, or progress since
                // the last: the wait starts now.
                self.stalled = Some((p.freed, now_ms));
                false
            }
        }
    }
}

/// What the causes of an "other" interrupt ask of the driver (ICR, read
/// once: the read clears it), as the C igb handles them
/// (`igb_msix_other`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OtherCauses {
    /// The link changed (LSC): the watchdog looks at it.
    pub(crate) link: bool,
    /// The device was reset behind the driver (DRSTA): every register is
    /// at its reset value, so the device needs all of its setup again,
    /// the address filters included (C schedules its reset task).
    pub(crate) reset: bool,
    /// The transmit DMA was out of sync (DOUTSYNC): counted, as C does.
    /// C also reads WVBR then, for VFs that spoofed frames; without VFs
    /// nothing sets it.
    pub(crate) dma_out_of_sync: bool,
}

impl OtherCauses {
    pub(crate) fn new(icr: u32) -> Self {
        Self {
            link: icr & ICR_LSC != 0,
            reset: icr & ICR_DRSTA != 0,
            dma_out_of_sync: icr & ICR_DOUTSYNC != 0,
        }
    }
}

/// The device's drop counters, added up: MPC, RNBC, and RQDPC of queues
/// `0..N`.
///
/// The device's statistics registers clear when read and stop at all ones
/// rather than wrap. Each reading is therefore added here once, by
/// whichever reader made it (the watchdog every 2 s, `get_stats64`, the
/// queue counters, `ethtool -S`), readers racing with each other included:
/// each gets its own part of the count. A device gone from the bus reads
/// all ones too: a reading of all ones counts only if STATUS shows the
/// device still there.
pub(crate) struct Drops<const N: usize> {
    /// MPC: frames missed, the packet buffer full.
    missed: Atomic<u64>,
    /// RNBC: frames that found their queue without descriptors.
    no_buffer: Atomic<u64>,
    /// RQDPC(n): frames queue n dropped for lack of descriptors
    /// (SRRCTL.DROP_EN).
    queue: [Atomic<u64>; N],
}

impl<const N: usize> Drops<N> {
    pub(crate) fn new() -> Self {
        Self {
            missed: Atomic::new(0),
            no_buffer: Atomic::new(0),
            queue: core::array::from_fn(|_| Atomic::new(0)),
        }
    }

    /// Reads the counters, which clears them, and adds what they counted.
    pub(crate) fn update<R: Regs>(&self, r: &R) {
        let missed = r.rd(MPC);
        let no_buffer = r.rd(RNBC);
        let queue: [u32; N] = core::array::from_fn(|q| r.rd(rxq(q) + Q_DPC));
        let suspect = missed == !0 || no_buffer == !0 || queue.contains(&!0);
        let gone = suspect && r.rd(STATUS) == !0;
        let add = |total: &Atomic<u64>, n: u32| {
            if !(gone && n == !0) {
                total.fetch_add(u64::from(n), Relaxed);
            }
        };
        add(&self.missed, missed);
        add(&self.no_buffer, no_buffer);
        for (total, n) in self.queue.iter().zip(queue) {
            add(total, n);
        }
    }

    /// Frames missed for a full packet buffer (MPC).
    pub(crate) fn missed(&self) -> u64 {
        self.missed.load(Relaxed)
    }

    /// Frames that found their queue without descriptors (RNBC).
    pub(crate) fn no_buffer(&self) -> u64 {
        self.no_buffer.load(Relaxed)
    }

    /// Frames queue `q` dropped for lack of descriptors (RQDPC); 0 for a
    /// queue not counted.
    pub(crate) fn queue(&self, q: usize) -> u64 {
        self.queue.get(q).map_or(0, |t| t.load(Relaxed))
    }

    /// Puts the totals in the device's counters: frames the packet buffer
    /// missed in `rx_missed_errors` (as C), those the queues dropped in
    /// `rx_fifo_errors` (as C, which adds MPC there too: here each frame
    /// is in one counter only). RNBC is in neither: the frames it counts
    /// may still be received; `ethtool -S` shows it, as in C.
    pub(crate) fn fill(&self, stats: &mut Stats64) {
        stats.rx_missed_errors = self.missed();
        stats.rx_fifo_errors = (0..N).map(|q| self.queue(q)).sum();
    }
}
