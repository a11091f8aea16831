// SPDX-License-Identifier: GPL-2.0

//! The KUnit suite of the driver's control-path procedures (`hw/` and
//! the code on it), run against the strict model of the 82576
//! (`model.rs`), which fails a case on any access sequence the datasheet
//! forbids.

use kernel::prelude::*;

#[kunit_tests(igb_rs_hw_model)]
mod tests {
    use crate::hw;
    use crate::hw::Regs;
    use crate::model::*;
    use crate::regs::*;
    use crate::steer::HW_FILTERS;
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
    use kernel::prelude::*;

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
        // Header split in SRRCTL with PSRTYPE at its reset value: silicon
        // would split nothing.
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
        // Every filter written to 0 on a rule change, then rewritten: a
        // gap in which frames go unsteered.
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
