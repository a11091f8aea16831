// SPDX-License-Identifier: GPL-2.0

//! The netdev netlink `bind-rx` and `bind-tx` handlers, and unbinding when
//! the socket that made a binding goes.
//!
//! Every request the C core refuses is refused with its errno and extack
//! message, after its checks in its order
//! (`Documentation/networking/devmem_rs.rst` lists them, and the three
//! requests the C core takes that are refused here).
//!
//! # Lock order
//!
//! Outermost first, as the documentation page gives it:
//!
//! 1. the socket's lock ([`SockPriv::lock`], `priv->lock`): held from the
//!    device lookup until the binding is in place (and, for bind-rx,
//!    replied to), and across the socket's teardown;
//! 2. the instance lock of the device named in the request
//!    (`netdev_get_by_index_lock`), or of the binding's device at
//!    teardown;
//! 3. for a queue leased from another device, or bind-tx on a virtual
//!    device, the instance lock of the physical device (taken by the core
//!    in `netif_mp_open_rxq` / `netdev_queue_get_dma_dev`, or here);
//! 4. the list of TX bindings;
//! 5. a binding's own lock (its queue list, its mapping, whether it is on
//!    the TX list), never held while taking the above;
//! 6. the id table's lock, held while taking no other.
//!
//! A dma-buf is mapped and unmapped under 1 to 3 at most, never under 4
//! to 6: both take its reservation lock.

use crate::{
    binding::{
        BindError,
        Binding,
        BindingRef,
        Handle, //
    },
    carve::CarveError,
    exports::queue_id_policy,
    ids,
    provider,
    sock::SockPriv, //
};
use kernel::{
    bitmap::BitmapVec,
    device::{
        Bound,
        Device, //
    },
    dma::DataDirection,
    dma_buf::DmaBuf,
    net::{
        netdev::{
            Locked,
            Namespace,
            NetDevice,
            NetmemTx,
            QueueType, //
        },
        netdev_genl::attr,
        netlink::{
            request::{
                Attr,
                ExtAck,
                Info, //
            },
            GenlMsg,
            NetlinkSkBuff,
            GENLMSG_DEFAULT_SIZE, //
        },
        sock::Sock,
    },
    page::{
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::rcu,
};

const A_IFINDEX: u16 = attr::DEV_IFINDEX;
const A_FD: u16 = attr::DMABUF_FD;
const A_QUEUES: u16 = attr::DMABUF_QUEUES;
const A_RX_PAGE_SIZE: u16 = attr::DMABUF_RX_PAGE_SIZE;
const A_ID: u16 = attr::DMABUF_ID;
const A_QUEUE_ID: u16 = attr::QUEUE_ID;
const A_QUEUE_TYPE: u16 = attr::QUEUE_TYPE;

/// The maximum attribute types of the two requests' policies.
pub(crate) const BIND_RX_MAXATTR: u16 = A_RX_PAGE_SIZE;
pub(crate) const BIND_TX_MAXATTR: u16 = A_FD;

/// A `u32` attribute the request policy has validated as one.
fn u32_of(attr: &Attr<'_>) -> u32 {
    // The policy checked the length; 0 is never reached.
    attr.read_u32().unwrap_or(0)
}

/// The receive queues named in the request, as a bitmap of
/// `real_num_rx_queues` bits.
fn read_rxqs(info: &Info<'_>, nqueues: u32, extack: &ExtAck<'_>) -> Result<BitmapVec> {
    // CAST: u32 to usize is lossless on Linux.
    let mut bits = BitmapVec::new(nqueues as usize, GFP_KERNEL)?;
    let policy = queue_id_policy();
    for nest in info.all_attrs().of_kind(A_QUEUES) {
        let tb = nest.parse_nested(&policy, extack)?;
        let id = tb.require(A_QUEUE_ID, &nest, extack)?;
        let kind = tb.require(A_QUEUE_TYPE, &nest, extack)?;
        if QueueType::from_nl(u32_of(&kind)) != Some(QueueType::Rx) {
            extack.set_bad_attr(&kind);
            return Err(EINVAL);
        }
        let idx = u32_of(&id);
        if idx >= nqueues {
            extack.set_bad_attr(&id);
            return Err(EINVAL);
        }
        // CAST: below `nqueues`.
        bits.set_bit(idx as usize);
    }
    Ok(bits)
}

/// The set bits of `bits`, ascending.
fn set_bits(bits: &BitmapVec) -> impl Iterator<Item = u32> + '_ {
    let mut at = 0;
    core::iter::from_fn(move || {
        let i = bits.next_bit(at)?;
        at = i + 1;
        // CAST: below `real_num_rx_queues`, a u32.
        Some(i as u32)
    })
}

/// The one DMA device of all the queues in `bits`, which may be `None`:
/// the C core's rule, including that a queue without one is only a
/// mismatch after a queue with one.
fn rx_dma_dev<'a>(
    dev: &'a Locked<'_>,
    bits: &BitmapVec,
    extack: &ExtAck<'_>,
) -> Result<Option<&'a Device<Bound>>> {
    let mut found: Option<(&Device<Bound>, u32)> = None;
    let mut last = None;
    for idx in set_bits(bits) {
        let this = dev.queue_dma_dev(idx, QueueType::Rx);
        if let Some((prev, prev_idx)) = found {
            let same = this.is_some_and(|d| core::ptr::eq(d, prev));
            if !same {
                extack.set_msg_fmt(fmt!(
                    "DMA device mismatch between queue {idx} and {prev_idx} (multi-PF device?)"
                ));
                return Err(EOPNOTSUPP);
            }
        }
        last = this;
        found = this.map(|d| (d, idx));
    }
    Ok(last)
}

/// Reports a failed bind as the C core does.
fn report(e: &BindError, extack: &ExtAck<'_>) -> Error {
    match e {
        BindError::Carve(c @ CarveError::Misaligned { .. }) => extack.set_msg_fmt(fmt!("{c}")),
        _ => {
            if let Some(m) = e.message() {
                extack.set_msg(m);
            }
        }
    }
    e.errno()
}

/// Imports the dma-buf `fd`, binds it for `dma_dev` and publishes it under
/// a new id (`net_devmem_bind_dmabuf`).
fn bind_dmabuf(
    dev: &NetDevice,
    vdev: Option<&NetDevice>,
    dma_dev: Option<&Device<Bound>>,
    dir: DataDirection,
    fd: u32,
    niov_shift: u32,
    extack: &ExtAck<'_>,
) -> Result<Handle> {
    let Some(dma_dev) = dma_dev else {
        extack.set_msg(c"Device doesn't support DMA");
        return Err(EOPNOTSUPP);
    };
    // CAST: the C core passes the u32 on as an int; any value that is not
    // an open fd fails with EBADF either way.
    let buf = DmaBuf::get(fd as i32)?;
    let mut handle =
        Binding::bind(&buf, dma_dev, dir, niov_shift).map_err(|e| report(&e, extack))?;
    handle.set_netdev(dev, vdev)?;
    ids::publish(&handle)?;
    Ok(handle)
}

/// Takes a binding away from user space: its id, its queues, and its
/// owner's reference (`net_devmem_unbind_dmabuf`). `dev` is the binding's
/// device, locked, if it is installed on any queue.
fn unbind(handle: Handle, dev: Option<&Locked<'_>>) {
    ids::unpublish(handle.id());
    provider::uninstall_all(&handle, dev);
    drop(handle);
}

/// Installs a new binding on receive queues `rxqs` of `dev`, in order
/// (`net_devmem_bind_dmabuf_to_queue` on each). If one fails, the binding
/// is unbound before the error returns, as the C handler does: the queues
/// it was installed on so far are closed first, so that none keeps the
/// provider of a binding about to be freed.
fn install_rxqs(
    handle: Handle,
    dev: &Locked<'_>,
    rxqs: impl IntoIterator<Item = u32>,
    extack: &ExtAck<'_>,
) -> Result<Handle> {
    for idx in rxqs {
        if let Err(e) = provider::install(&handle, dev, idx, extack) {
            unbind(handle, Some(dev));
            return Err(e);
        }
    }
    Ok(handle)
}

/// The sender's socket data (from `sock`, which gets it for the request,
/// made on first use) and the reply, started, as both handlers take them
/// before locking: `ENOMEM` without memory, `EMSGSIZE` if the header does
/// not fit.
fn prepare<'a>(
    info: &Info<'_>,
    sock: impl FnOnce() -> Result<&'a SockPriv>,
) -> Result<(&'a SockPriv, GenlMsg)> {
    let sock = sock()?;
    let rsp = NetlinkSkBuff::new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL)?;
    let msg = rsp.genlmsg_iput(info).map_err(|_| EMSGSIZE)?;
    Ok((sock, msg))
}

/// The device the request names, locked (`netdev_get_by_index_lock`);
/// `ENODEV` if there is none.
fn locked_dev(info: &Info<'_>, ifindex: &Attr<'_>) -> Result<Locked<'static>> {
    // CAST: the policy keeps ifindex at least 1; the C core reads it as an
    // int too.
    Locked::by_index(Namespace::of_request(info), u32_of(ifindex) as i32).ok_or(ENODEV)
}

/// `netdev_nl_bind_rx_doit`: `sock` gets the private data of the socket
/// that sent the request, once the request is found well formed.
pub(crate) fn bind_rx<'a>(info: &Info<'_>, sock: impl FnOnce() -> Result<&'a SockPriv>) -> Result {
    let extack = info.extack();
    let ifindex = info.require(A_IFINDEX)?;
    let fd = info.require(A_FD)?;
    info.require(A_QUEUES)?;
    let fd = u32_of(&fd);

    let mut niov_shift = PAGE_SHIFT as u32;
    if let Some(a) = info.attr(A_RX_PAGE_SIZE) {
        let size = u32_of(&a);
        if !size.is_power_of_two() {
            extack.set_msg_attr(&a, c"rx-page-size must be a power of 2");
            return Err(EINVAL);
        }
        niov_shift = size.ilog2();
    }

    let (sock, mut msg) = prepare(info, sock)?;
    let mut owned = sock.lock();
    let dev = locked_dev(info, &ifindex)?;
    let refused = if !dev.is_present() {
        Some(ENODEV)
    } else if !dev.need_ops_lock() {
        Some(EOPNOTSUPP)
    } else {
        None
    };
    if let Some(e) = refused {
        extack.set_bad_attr(&ifindex);
        return Err(e);
    }

    let rxqs = read_rxqs(info, dev.real_num_rx_queues(), &extack)?;
    let dma_dev = rx_dma_dev(&dev, &rxqs, &extack)?;
    let handle = bind_dmabuf(
        &dev,
        None,
        dma_dev,
        DataDirection::FromDevice,
        fd,
        niov_shift,
        &extack,
    )?;
    let handle = install_rxqs(handle, &dev, set_bits(&rxqs), &extack)?;

    // The message was sized for this.
    kernel::warn_on!(msg.put_u32(A_ID.into(), handle.id()).is_err());
    owned.push(handle);
    // Replied under the locks, as C does; a failed reply leaves the
    // binding in place.
    msg.reply(info)
}

/// The device that does the DMA for netmem TX on `dev`: itself, or for a
/// virtual device, the first present device it leases a queue from that
/// can.
fn netmem_tx_dev<'a>(dev: &'a Locked<'_>) -> Option<&'a NetDevice> {
    match dev.netmem_tx() {
        NetmemTx::Dma => return Some(dev),
        NetmemTx::None => return None,
        NetmemTx::NoDma => {}
    }
    (0..dev.real_num_rx_queues())
        .filter_map(|i| dev.rx_lease(i))
        .map(|lease| lease.dev())
        .find(|phys| phys.is_present() && phys.netmem_tx() == NetmemTx::Dma)
}

/// `netdev_nl_bind_tx_doit`: `sock` gets the private data of the socket
/// that sent the request, once the request is found well formed.
pub(crate) fn bind_tx<'a>(info: &Info<'_>, sock: impl FnOnce() -> Result<&'a SockPriv>) -> Result {
    let extack = info.extack();
    let ifindex = info.require(A_IFINDEX)?;
    let fd = u32_of(&info.require(A_FD)?);

    let (sock, mut msg) = prepare(info, sock)?;
    {
        let mut owned = sock.lock();
        let dev = locked_dev(info, &ifindex)?;
        if !dev.is_present() {
            return Err(ENODEV);
        }
        if dev.netmem_tx() == NetmemTx::None {
            extack.set_msg(c"Driver does not support netmem TX");
            return Err(EOPNOTSUPP);
        }
        let Some(phys) = netmem_tx_dev(&dev) else {
            extack.set_msg(c"No DMA-capable device found for netmem TX");
            return Err(EOPNOTSUPP);
        };
        let virt = !core::ptr::eq(phys, &*dev);
        let phys_locked;
        let bind_dev: &Locked<'_> = if virt {
            phys_locked = phys.lock()?;
            // Found through a queue lease, not looked up: it may be going
            // (its unregistration, and TX bindings forgetting it, come
            // after its state changes under this lock).
            if !phys_locked.is_registered() {
                return Err(ENODEV);
            }
            &phys_locked
        } else {
            &dev
        };
        let dma_dev = bind_dev.queue_dma_dev(0, QueueType::Tx);
        let vdev = virt.then_some(&*dev);
        let handle = bind_dmabuf(
            bind_dev,
            vdev,
            dma_dev,
            DataDirection::ToDevice,
            fd,
            PAGE_SHIFT as u32,
            &extack,
        )?;
        // The message was sized for this.
        kernel::warn_on!(msg.put_u32(A_ID.into(), handle.id()).is_err());
        owned.push(handle);
        // Unlocks the physical device, then the device, then the socket.
    }
    // Replied after unlocking, as C does.
    msg.reply(info)
}

/// `netdev_nl_sock_priv_destroy`: the socket goes; unbind everything it
/// made, newest first.
pub(crate) fn sock_gone(sock: &SockPriv) {
    let mut owned = sock.lock();
    while let Some(handle) = owned.pop() {
        match handle.rx_dev() {
            Some(dev) => match dev.lock() {
                Ok(locked) => unbind(handle, Some(&locked)),
                // Not reached: the private data of a socket goes in
                // process context (`netlink_release`), holding no
                // device's lock. The binding, still installed, would be
                // kept.
                Err(_) => core::mem::forget(handle),
            },
            None => unbind(handle, None),
        }
    }
}

/// The TX binding `id` for a send on `sk`, with a reference, if the
/// socket's route goes out of its device or of the virtual device it was
/// bound through (`net_devmem_get_binding`).
pub(crate) fn tx_binding(sk: &Sock, id: u32) -> Result<BindingRef> {
    let binding = ids::lookup(id).ok_or(EINVAL)?;
    if !binding.is_tx() {
        return Err(EINVAL);
    }
    let rcu = rcu::read_lock();
    let route = match sk.route(&rcu) {
        Some(route) => route,
        None => {
            // The route expired: rebuild it, as the send would.
            // SAFETY: devmem TX sockets are TCP sockets (the only caller
            // is `tcp_sendmsg_locked`).
            if unsafe { sk.rebuild_route() }.is_err() {
                return Err(EHOSTUNREACH);
            }
            sk.route(&rcu).ok_or(ENODEV)?
        }
    };
    let dst_dev = route.dev().ok_or(ENODEV)?.as_ptr().cast_mut();
    if dst_dev != binding.dev_ptr() && dst_dev != binding.vdev_ptr() {
        return Err(ENODEV);
    }
    drop(rcu);
    Ok(binding)
}

/// The `net_iov` of TX binding `b` at dma-buf offset `virt`, with the
/// offset into it and the bytes left in it (`net_devmem_get_niov_at`).
pub(crate) fn tx_niov_at(
    b: &Binding,
    virt: usize,
) -> Option<(&kernel::net::netmem::NetIov, usize)> {
    // Past the end of the mapping, which `Binding::bind` keeps within the
    // dma-buf: at or past the dma-buf's end, where C's size check stops.
    b.tx_net_iov_at(virt).map(|n| (n, virt % PAGE_SIZE))
}

#[kunit_tests(devmem_rs_genl)]
mod tests {
    use super::*;
    use crate::{
        binding::{
            forget_device,
            wait_unmapped, //
        },
        exports,
        test_netdev::{
            Rig,
            PAGE, //
        },
    };
    use kernel::{
        device::Bound,
        dma_buf::test_exporter,
        faux,
        net::{
            netdev::RxQueue,
            netlink::request::ExtAckBuf, //
        },
        time::{
            delay::fsleep,
            Delta, //
        },
    };

    impl Rig<'_> {
        /// The provider data of rx queue `idx` (`mp_params.mp_priv`): null
        /// when the queue has no provider.
        fn mp_priv(&self, idx: u32) -> *const c_void {
            self.rx_queue(idx)
                .map_or(core::ptr::null(), RxQueue::mp_priv)
        }
    }

    #[test]
    fn socket_teardown_unbinds_everything_it_owns() -> Result {
        // CAST: a page fits a u32 segment length.
        let page = PAGE_SIZE as u32;
        let buf = test_exporter::export(2 * PAGE_SIZE, &[(0x10_0000, 2 * page)])?;
        let reg = faux::Registration::new(c"devmem-rs-genl", None)?;
        let fdev: &faux::Device<Bound> = reg.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();

        // A socket's private data, as the genetlink core sets it up.
        let sock = KBox::pin_init(SockPriv::new(), GFP_KERNEL)?;

        let mut ids = KVec::new();
        for _ in 0..2 {
            let h = Binding::bind(&buf, dev, DataDirection::ToDevice, PAGE_SHIFT as u32)
                .map_err(|e| e.errno())?;
            ids.push(ids::publish(&h)?, GFP_KERNEL)?;
            sock.lock().push(h);
        }
        assert_eq!(test_exporter::live_maps(&buf), 2);
        for &id in ids.iter() {
            let b = ids::lookup(id).ok_or(EINVAL)?;
            assert!(b.is_tx());
        }

        // The socket goes: every binding loses its id and is freed.
        sock_gone(&sock);
        for &id in ids.iter() {
            assert!(ids::lookup(id).is_none());
        }
        assert!(sock.lock().pop().is_none());
        assert!(wait_unmapped(&buf));
        Ok(())
    }

    #[test]
    fn tx_binding_stays_mapped_until_the_last_frag_goes() -> Result {
        let buf = test_exporter::export(2 * PAGE_SIZE, &[(0x10_0000, 2 * PAGE)])?;
        let reg = faux::Registration::new(c"devmem-rs-genl", None)?;
        let fdev: &faux::Device<Bound> = reg.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        // CAST: PAGE_SHIFT is small.
        let h = Binding::bind(&buf, dev, DataDirection::ToDevice, PAGE_SHIFT as u32)
            .map_err(|e| e.errno())?;
        let id = ids::publish(&h)?;

        // A send as `tcp_sendmsg_locked` makes it: the binding by its id,
        // the `net_iov` at an offset, and an skb frag holding it, with the
        // reference `get_netmem` takes; the send's own reference to the
        // binding goes when it returns.
        let b = ids::lookup(id).ok_or(EINVAL)?;
        let (niov, off) = tx_niov_at(&b, PAGE_SIZE + 100).ok_or(EINVAL)?;
        assert_eq!(off, 100);
        let niov = niov.as_raw();
        // SAFETY: a `net_iov` of the live binding `b`.
        unsafe { exports::net_devmem_get_net_iov(niov) };
        drop(b);

        // The owner unbinds (its socket goes) while the skb is queued: the
        // id is gone, the memory stays mapped for the device to read.
        unbind(h, None);
        assert!(ids::lookup(id).is_none());
        fsleep(Delta::from_millis(50));
        assert_eq!(test_exporter::seen(&buf).unmaps, 0);
        assert_eq!(test_exporter::live_maps(&buf), 1);

        // The skb is freed: its frag drops the last reference.
        // SAFETY: gives up the reference taken above; nothing uses the
        // binding through `niov` afterwards.
        unsafe { exports::net_devmem_put_net_iov(niov) };
        assert!(wait_unmapped(&buf));
        let seen = test_exporter::seen(&buf);
        assert_eq!((seen.maps, seen.unmaps, seen.wrong_direction), (1, 1, 0));
        assert_eq!(seen.last_unmap, Some(DataDirection::ToDevice));
        Ok(())
    }

    #[test]
    fn bind_rx_rolls_back_when_a_queue_is_taken() -> Result {
        // CAST: PAGE_SHIFT is small.
        let shift = PAGE_SHIFT as u32;
        let taken_buf = test_exporter::export(PAGE_SIZE, &[(0x10_0000, PAGE)])?;
        let buf = test_exporter::export(PAGE_SIZE, &[(0x20_0000, PAGE)])?;
        let reg = faux::Registration::new(c"devmem-rs-genl", None)?;
        let fdev: &faux::Device<Bound> = reg.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let rig = Rig::with_queue_api(dev)?;
        let mut extack_buf = ExtAckBuf::new(GFP_KERNEL)?;
        let extack = extack_buf.ext_ack();

        let mut taken = Binding::bind(&taken_buf, dev, DataDirection::FromDevice, shift)
            .map_err(|e| e.errno())?;
        taken.set_netdev(rig.netdev(), None)?;
        let locked = rig.netdev().lock()?;
        // Queue 1 is another binding's already.
        provider::install(&taken, &locked, 1, &extack)?;

        // bind-rx of queues 0 and 1, from where `bind_dmabuf` leaves it.
        let mut h =
            Binding::bind(&buf, dev, DataDirection::FromDevice, shift).map_err(|e| e.errno())?;
        h.set_netdev(rig.netdev(), None)?;
        let id = ids::publish(&h)?;
        let got = install_rxqs(h, &locked, [0, 1], &extack).map(|h| unbind(h, Some(&locked)));
        let (queue0, queue1) = (rig.mp_priv(0), rig.mp_priv(1));
        provider::uninstall_all(&taken, Some(&locked));
        drop(locked);

        // Queue 0 went first and was free, so only queue 1 can have failed,
        // with C's errno and message.
        assert_eq!(got.err(), Some(EEXIST));
        assert_eq!(
            extack_buf.msg().map(|m| m.to_bytes()),
            Some(&b"designated queue already memory provider bound"[..])
        );
        // Queue 0 was closed again; queue 1 kept its binding.
        assert!(queue0.is_null());
        assert!(core::ptr::eq(queue1, core::ptr::from_ref(&*taken).cast()));
        // The failed binding is unpublished and freed: no page pool is left
        // with its provider, since each would hold a reference.
        assert!(ids::lookup(id).is_none());
        assert!(wait_unmapped(&buf));
        assert_eq!(test_exporter::live_maps(&taken_buf), 1);
        drop(taken);
        assert!(wait_unmapped(&taken_buf));
        drop(rig);
        Ok(())
    }

    #[test]
    fn rx_binding_unmaps_when_its_device_goes() -> Result {
        // CAST: PAGE_SHIFT is small.
        let shift = PAGE_SHIFT as u32;
        let buf = test_exporter::export(2 * PAGE_SIZE, &[(0x10_0000, 2 * PAGE)])?;
        let reg = faux::Registration::new(c"devmem-rs-genl", None)?;
        let fdev: &faux::Device<Bound> = reg.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let rig = Rig::with_queue_api(dev)?;
        let mut extack_buf = ExtAckBuf::new(GFP_KERNEL)?;
        let extack = extack_buf.ext_ack();

        let mut h =
            Binding::bind(&buf, dev, DataDirection::FromDevice, shift).map_err(|e| e.errno())?;
        h.set_netdev(rig.netdev(), None)?;
        let locked = rig.netdev().lock()?;
        provider::install(&h, &locked, 0, &extack)?;
        let q = locked.rx_queue(0).ok_or(EINVAL)?;
        // What the core does to the binding's last queue when it
        // unregisters the device, which it closed first: the dma-buf is
        // unmapped then, while the binding lives on for its socket and
        // frags, not when they are gone (after the driver let go of the
        // device).
        <Binding as kernel::net::page_pool::MemoryProvider>::uninstall(&h, q);
        assert_eq!(test_exporter::live_maps(&buf), 0);
        let seen = test_exporter::seen(&buf);
        assert_eq!((seen.maps, seen.unmaps, seen.wrong_direction), (1, 1, 0));
        assert!(h.rx_dev().is_none());
        // The rig's device is not unregistered: close its queue as an
        // unbind would, so that nothing names the binding when it goes.
        h.add_rxq(q)?;
        provider::uninstall_all(&h, Some(&locked));
        drop(locked);
        drop(h);
        // Released: unmapped once, not twice.
        assert!(wait_unmapped(&buf));
        assert_eq!(test_exporter::seen(&buf).unmaps, 1);
        drop(rig);
        Ok(())
    }

    #[test]
    fn tx_binding_forgets_its_device_when_it_goes() -> Result {
        // CAST: PAGE_SHIFT is small.
        let shift = PAGE_SHIFT as u32;
        let buf = test_exporter::export(2 * PAGE_SIZE, &[(0x10_0000, 2 * PAGE)])?;
        let other = test_exporter::export(PAGE_SIZE, &[(0x30_0000, PAGE)])?;
        let reg = faux::Registration::new(c"devmem-rs-genl", None)?;
        let fdev: &faux::Device<Bound> = reg.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        // Two netdevs: a NIC, and a virtual device sending through it.
        let phys = Rig::with_queue_api(dev)?;
        let virt = Rig::with_queue_api(dev)?;
        let null = core::ptr::null_mut();

        let to_dev = DataDirection::ToDevice;
        let mut h = Binding::bind(&buf, dev, to_dev, shift).map_err(|e| e.errno())?;
        h.set_netdev(phys.netdev(), Some(virt.netdev()))?;
        let mut o = Binding::bind(&other, dev, to_dev, shift).map_err(|e| e.errno())?;
        o.set_netdev(virt.netdev(), None)?;
        // A frag still holds a `net_iov` of `h`.
        let frag = h.tryget().ok_or(EINVAL)?;

        // The virtual device goes: `h` keeps its NIC and its mapping; `o`,
        // made for the virtual device itself, loses both.
        forget_device(virt.netdev());
        assert_eq!(h.vdev_ptr(), null);
        assert_eq!(h.dev_ptr(), core::ptr::from_ref(phys.netdev()).cast_mut());
        assert_eq!(test_exporter::live_maps(&buf), 1);
        assert_eq!(o.dev_ptr(), null);
        assert_eq!(test_exporter::live_maps(&other), 0);

        // The NIC goes while the binding is still owned and a frag holds
        // it: unmapped now, in the direction it was mapped, and never
        // again.
        forget_device(phys.netdev());
        assert_eq!((h.dev_ptr(), h.vdev_ptr()), (null, null));
        assert_eq!(test_exporter::live_maps(&buf), 0);
        let seen = test_exporter::seen(&buf);
        assert_eq!((seen.maps, seen.unmaps, seen.wrong_direction), (1, 1, 0));
        // A device allocated later at the same address matches nothing;
        // and hearing of the device again changes nothing.
        forget_device(phys.netdev());
        assert_eq!(test_exporter::seen(&buf).unmaps, 1);
        drop(h);
        drop(o);
        drop(frag);
        assert!(wait_unmapped(&buf) && wait_unmapped(&other));
        assert_eq!(test_exporter::seen(&buf).unmaps, 1);
        assert_eq!(test_exporter::seen(&other).unmaps, 1);
        drop((phys, virt));
        Ok(())
    }

    #[test]
    fn tx_niov_at_stops_at_the_end_of_the_buffer_and_of_its_mapping() -> Result {
        // CAST: PAGE_SHIFT is small.
        let shift = PAGE_SHIFT as u32;
        let whole = test_exporter::export(3 * PAGE_SIZE, &[(0x10_0000, 3 * PAGE)])?;
        // Four pages, of which the mapping covers two, in two segments.
        let short = test_exporter::export(4 * PAGE_SIZE, &[(0x20_0000, PAGE), (0x40_0000, PAGE)])?;
        let reg = faux::Registration::new(c"devmem-rs-genl", None)?;
        let fdev: &faux::Device<Bound> = reg.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();

        let b =
            Binding::bind(&whole, dev, DataDirection::ToDevice, shift).map_err(|e| e.errno())?;
        let size = 3 * PAGE_SIZE;
        let (last, off) = tx_niov_at(&b, size - 1).ok_or(EINVAL)?;
        assert_eq!(b.index_of(last), Some(2));
        assert_eq!(off, PAGE_SIZE - 1);
        assert!(tx_niov_at(&b, size).is_none());
        assert!(tx_niov_at(&b, usize::MAX).is_none());
        // As C's send path sees it (`net_devmem_get_niov_at`): the last byte
        // has one byte left in its `net_iov`; past the end is null.
        let raw = core::ptr::from_ref(&*b).cast_mut().cast();
        let (mut o, mut left) = (0usize, 0usize);
        // SAFETY: `raw` is the live binding `b`; `o` and `left` are writable.
        let n = unsafe { exports::net_devmem_get_niov_at(raw, size - 1, &mut o, &mut left) };
        assert_eq!(n, last.as_raw());
        assert_eq!((o, left), (PAGE_SIZE - 1, 1));
        // SAFETY: as above.
        let n = unsafe { exports::net_devmem_get_niov_at(raw, size, &mut o, &mut left) };
        assert!(n.is_null());

        let s =
            Binding::bind(&short, dev, DataDirection::ToDevice, shift).map_err(|e| e.errno())?;
        assert_eq!(s.niov_count(), 2);
        let (n, off) = tx_niov_at(&s, 2 * PAGE_SIZE - 1).ok_or(EINVAL)?;
        assert_eq!(n.dma_addr(), 0x40_0000);
        assert_eq!(off, PAGE_SIZE - 1);
        // Inside the buffer but past its mapping: no `net_iov`, where the C
        // core's `tx_vec` has no valid entry to give.
        assert!(tx_niov_at(&s, 2 * PAGE_SIZE).is_none());
        assert!(tx_niov_at(&s, 4 * PAGE_SIZE - 1).is_none());

        drop(b);
        drop(s);
        assert!(wait_unmapped(&whole));
        assert!(wait_unmapped(&short));
        Ok(())
    }
}
