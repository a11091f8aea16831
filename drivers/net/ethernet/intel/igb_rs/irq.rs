// SPDX-License-Identifier: GPL-2.0

//! Interrupts: one MSI-X vector per queue pair, which hands over to the
//! pair's NAPI, and the "other" vector (link changes, the device's own
//! reports); their masks.

use crate::{
    hw,
    netdev::Nic,
    regs::*, //
};
use kernel::{
    dev_err,
    irq::{
        self,
        IrqReturn, //
    },
    net::driver::Device,
    sync::{
        aref::ARef,
        atomic::Relaxed, //
    },
};

/// A queue pair's interrupt: hand over to NAPI.
pub(crate) struct QueueIrq {
    pub(crate) dev: ARef<Device<Nic>>,
    pub(crate) idx: usize,
}

impl irq::Handler for QueueIrq {
    fn handle(&self) -> IrqReturn {
        let nic = self.dev.data();
        let Some(q) = nic.queues.get(self.idx) else {
            return IrqReturn::None;
        };
        // The device masked the vector as it sent the message (EIAM, with
        // GPIE.EIAME); the poll unmasks it when it is done.
        q.napi.schedule();
        IrqReturn::Handled
    }
}

/// The "other" interrupt: link changes, and the device's own reports (a
/// reset behind the driver, transmit DMA out of sync).
pub(crate) struct OtherIrq {
    pub(crate) dev: ARef<Device<Nic>>,
}

impl irq::Handler for OtherIrq {
    fn handle(&self) -> IrqReturn {
        let nic = self.dev.data();
        // Cleared by the read (GPIE.NSICR).
        let causes = hw::OtherCauses::new(nic.rd(ICR));
        if causes.reset {
            // Reset by someone else (the C igb resets on it, on every MAC,
            // VFs or not): the rings, the filters, every register are
            // gone. Down and up, the address filters written again.
            dev_err!(nic.pdev, "the device was reset (DRSTA): reset\n");
            nic.filters_lost.store(true, Relaxed);
            nic.reset_task.schedule(&self.dev, 0, false);
        }
        if causes.dma_out_of_sync {
            nic.dma_out_of_sync.add(1, Relaxed);
        }
        if causes.link {
            // The watchdog handles it now, in process context (flow
            // control needs the PHY); nothing while the device is down.
            nic.link_changed.store(true, Relaxed);
            nic.watchdog.schedule(&self.dev, 0, true);
        }
        nic.wr(EIMS, 1 << VEC_OTHER);
        IrqReturn::Handled
    }
}

impl Nic {
    /// The vector bits in EIMS/EIMC of "other" and the pairs in use.
    fn all_vectors(&self) -> u32 {
        self.active()
            .iter()
            .fold(1 << VEC_OTHER, |m, q| m | q.eims())
    }

    /// Masks every interrupt cause.
    pub(crate) fn irq_disable(&self) {
        self.wr(EIMC, !0);
        self.wr(IMC, !0);
    }

    pub(crate) fn irq_enable(&self) {
        let vecs = self.all_vectors();
        let _ = self.rd(ICR);
        // The vector bits must auto-clear, or a vector fires only once.
        self.wr(EIAC, vecs);
        self.wr(EIAM, vecs);
        self.wr(EIMS, vecs);
        self.wr(IMS, IMS_OTHER);
    }
}
