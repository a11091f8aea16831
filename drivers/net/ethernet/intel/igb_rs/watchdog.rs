// SPDX-License-Identifier: GPL-2.0

//! The watchdog (link changes, flow control, drop counters, hung transmit
//! rings; every 2 s and on a link interrupt) and the reset task (the
//! interface down and up) it and `tx_timeout` schedule.

use crate::{
    hw,
    netdev::{
        Nic,
        RESET_TASK,
        WATCHDOG, //
    },
    queue::QueuePair,
    regs::*, //
};
use kernel::{
    dev_err,
    dev_info,
    net::driver::{
        Device,
        DeviceWorkItem,
        Operations, //
    },
    sync::atomic::Relaxed,
    time::msecs_to_jiffies, //
};

/// How often the watchdog runs without a link change, ms (C: 2 s).
const WATCHDOG_PERIOD_MS: u32 = 2000;

// Locks and work items. Instance lock (the core's, around the ops) ->
// `Nic::phy` -> a pair's ring locks. The watchdog never takes the instance
// lock: `stop` waits for it under that lock. The reset task takes the
// instance lock, so nothing waits for it under that lock; unbind, which
// does not hold it, disables it before the device goes.
impl DeviceWorkItem<WATCHDOG> for Nic {
    fn run(dev: &kernel::net::driver::UnlockedDevice<Nic>) {
        let nic = dev.data();
        let status = nic.rd(STATUS);
        if status == !0 {
            // The device is gone.
            return;
        }
        let link = status & STATUS_LU != 0;
        let had_carrier = dev.carrier_ok();
        let changed = nic.link_changed.xchg(false, Relaxed);
        if link && had_carrier && changed {
            // Down and up again since the last run: a new negotiation.
            nic.link_up_fc();
        } else if link && !had_carrier {
            let (speed, full) = hw::link_speed_duplex(status);
            nic.link_mbps.store(speed, Relaxed);
            let fc = nic.link_up_fc();
            dev_info!(
                nic.pdev,
                "link up, {} Mb/s, {} duplex, flow control: {}\n",
                speed,
                if full { "full" } else { "half" },
                match (fc.rx, fc.tx) {
                    (true, true) => "rx/tx",
                    (true, false) => "rx",
                    (false, true) => "tx",
                    (false, false) => "none",
                }
            );
            dev.carrier_on();
        } else if !link && had_carrier {
            dev_info!(nic.pdev, "link down\n");
            dev.carrier_off();
        }
        // The counters clear when read: often enough that none wraps.
        nic.read_drops();
        // Frames queued before the link went are never sent (the device
        // stops sending without a link) and hold their buffers: reset to
        // free them, as C does. A watchdog period after the carrier went,
        // not at once, so that what the device sent just before is cleaned
        // first (QEMU's model sends without a link).
        if !link && !had_carrier && nic.tx_pending() {
            nic.tx_timeouts.add(1, Relaxed);
            dev_err!(nic.pdev, "transmit work left with the link down: reset\n");
            // The reset's `open` starts the watchdog again.
            nic.reset_task.schedule(dev, 0, false);
            return;
        }
        // With the link up, a ring the device stopped sending from: its
        // queue stops taking frames, and the device is reset, as C does
        // (which stops the queue and leaves the reset to the core's
        // transmit timeout, seconds later). The reset's `open` wakes the
        // queue.
        if let Some(q) = link.then(|| nic.hung_tx(dev, status)).flatten() {
            let tq = txq(q.idx);
            dev_err!(
                nic.pdev,
                "transmit queue {} hung (head {:#x}, tail {:#x}): reset\n",
                q.idx,
                nic.rd(tq + Q_HEAD),
                nic.rd(tq + Q_TAIL)
            );
            dev.stop_queue(q.txq());
            nic.tx_timeouts.add(1, Relaxed);
            nic.reset_task.schedule(dev, 0, false);
            return;
        }
        nic.watchdog
            .schedule(dev, msecs_to_jiffies(WATCHDOG_PERIOD_MS), false);
    }
}

impl DeviceWorkItem<RESET_TASK> for Nic {
    fn run(dev: &kernel::net::driver::UnlockedDevice<Nic>) {
        let nic = dev.data();
        // Under the locks the core holds around `open` and `stop` (unbind,
        // which waits for this work, holds neither). Down and up: every
        // queue stopped (or the device reset), the rings emptied and
        // refilled.
        let reset = dev.with_rtnl_locked(|dev| {
            if !dev.is_running() {
                return Ok(());
            }
            <Nic as Operations>::stop(dev).and_then(|()| <Nic as Operations>::open(dev))
        });
        if let Err(e) = reset {
            dev_err!(
                nic.pdev,
                "reset failed ({:?}): bring the interface down and up\n",
                e
            );
        }
    }
}

impl Nic {
    /// Whether a transmit ring of a pair in use holds frames the device
    /// has not sent (or the driver not yet cleaned).
    fn tx_pending(&self) -> bool {
        self.active().iter().any(|q| {
            let tx = q.tx.lock();
            tx.unused() + 1 < tx.len()
        })
    }

    /// The first pair in use whose transmit ring is hung: frames pending,
    /// none sent for the timeout, the link not paused by the partner (see
    /// [`hw::TxHangCheck`]). Each ring frees what the device sent first,
    /// so that frames sent but not yet cleaned (a poll not run yet) do not
    /// count; their completions go to byte queue limits from the pair's
    /// poll, which this schedules. `status` is STATUS as read now; `dev`
    /// is the device.
    fn hung_tx(&self, dev: &Device<Nic>, status: u32) -> Option<&QueuePair> {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(0);
        self.active().iter().find(|q| {
            let mut tx = q.tx.lock();
            q.complete_tx(dev.parent(), &mut tx, None);
            tx.hung(status, now)
        })
    }
}
