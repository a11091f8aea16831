// SPDX-License-Identifier: GPL-2.0

//! Importing dma-bufs.
//!
//! A device that reads or writes a buffer exported by someone else takes
//! three steps, each undone by dropping what it returns:
//!
//! 1. [`DmaBuf::get`]: the dma-buf behind a file descriptor (a reference to
//!    it, [`ARef<DmaBuf>`]);
//! 2. [`Attachment::new`]: attach the device to it;
//! 3. [`Attachment::map`]: map it for the device in one direction, which
//!    gives the scatterlist of DMA addresses ([`Mapping::sg_table`]).
//!
//! Dropping a [`Mapping`] unmaps it, then detaches, then drops the
//! reference: the reverse order.
//!
//! The exporter maps and unmaps for the device through the DMA API, which
//! a device may only be used with while it is bound to its driver. So
//! attaching and mapping take a [`Device<Bound>`], and a mapping comes
//! wrapped in a [`Devres`]: it is unmapped when the `Devres` is dropped or
//! when the driver unbinds from the device, whichever comes first, never
//! after.
//!
//! C header: [`include/linux/dma-buf.h`](srctree/include/linux/dma-buf.h)

use crate::{
    device::{
        Bound,
        Device, //
    },
    devres::Devres,
    dma::DataDirection,
    error::from_err_ptr,
    prelude::*,
    scatterlist::SGTable,
    sync::aref::{
        ARef,
        AlwaysRefCounted, //
    },
    types::Opaque, //
};
use core::ptr::NonNull;

/// A dma-buf: a buffer shared between devices, reference counted through
/// its file.
///
/// # Invariants
///
/// The wrapped `struct dma_buf` is valid and has a file whose reference
/// count keeps it alive.
#[repr(transparent)]
pub struct DmaBuf(Opaque<bindings::dma_buf>);

// SAFETY: a dma-buf is a shared object whose methods used here may be
// called from any thread.
unsafe impl Send for DmaBuf {}

// SAFETY: see `Send`; the fields read through `&DmaBuf` do not change after
// export.
unsafe impl Sync for DmaBuf {}

// SAFETY: `get_dma_buf` and `dma_buf_put` take and drop a reference to the
// dma-buf's file, which keeps it alive.
unsafe impl AlwaysRefCounted for DmaBuf {
    fn inc_ref(&self) {
        // SAFETY: the dma-buf is valid, by the type invariant.
        unsafe { bindings::get_dma_buf(self.as_raw()) }
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller owns a reference to this dma-buf.
        unsafe { bindings::dma_buf_put(obj.cast().as_ptr()) }
    }
}

impl DmaBuf {
    /// The dma-buf open as file descriptor `fd` in the current task
    /// (`dma_buf_get`): `EBADF` if `fd` is not open, `EINVAL` if it is not
    /// a dma-buf.
    pub fn get(fd: i32) -> Result<ARef<Self>> {
        // SAFETY: no requirements; the result is a reference or an error.
        let raw = from_err_ptr(unsafe { bindings::dma_buf_get(fd) })?;
        // SAFETY: `dma_buf_get` returned a valid dma-buf with a reference
        // that we now own.
        Ok(unsafe { ARef::from_raw(NonNull::new_unchecked(raw.cast())) })
    }

    /// The dma-buf at `raw`.
    ///
    /// # Safety
    ///
    /// `raw` is a valid dma-buf that stays alive for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(raw: *mut bindings::dma_buf) -> &'a Self {
        // SAFETY: `DmaBuf` is a transparent wrapper, and the caller keeps
        // the dma-buf alive for `'a`.
        unsafe { &*raw.cast() }
    }

    /// The C `struct dma_buf`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::dma_buf {
        self.0.get()
    }

    /// The size of the buffer in bytes.
    #[inline]
    pub fn size(&self) -> usize {
        // SAFETY: `size` is set at export and never changes.
        unsafe { (*self.as_raw()).size }
    }
}

/// A device attached to a dma-buf (`dma_buf_attach`); detached on drop.
///
/// # Invariants
///
/// `raw` is an attachment of `buf` for `dev`, made by `dma_buf_attach` and
/// not yet detached; both references keep what it points to alive.
pub struct Attachment {
    raw: NonNull<bindings::dma_buf_attachment>,
    buf: ARef<DmaBuf>,
    dev: ARef<Device>,
}

// SAFETY: an attachment may be mapped, unmapped and detached from any
// thread.
unsafe impl Send for Attachment {}

// SAFETY: `&Attachment` gives access to nothing mutable.
unsafe impl Sync for Attachment {}

impl Attachment {
    /// Attaches `dev` to `buf`.
    ///
    /// The attachment keeps references to both, so neither goes away
    /// under it. The device must be bound to its driver: the exporter may
    /// map the buffer for it through the DMA API, which needs the bus
    /// state a driver sets up, and an unbound device has none, so only a
    /// [`Device<Bound>`] attaches:
    ///
    /// ```ignore,compile_fail,E0308
    /// use kernel::{device::Device, dma_buf::{Attachment, DmaBuf}};
    /// # // twin: use kernel::device::Bound;
    ///
    /// fn attach(buf: &DmaBuf, dev: &Device) -> Result<Attachment> { // misuse
    /// # // twin: fn attach(buf: &DmaBuf, dev: &Device<Bound>) -> Result<Attachment> {
    ///     // `dev` may have no driver: this does not build.
    ///     Attachment::new(buf, dev)
    /// }
    /// ```
    pub fn new(buf: &DmaBuf, dev: &Device<Bound>) -> Result<Self> {
        // SAFETY: both pointers are valid; on success the attachment is
        // ours to detach.
        let raw = from_err_ptr(unsafe { bindings::dma_buf_attach(buf.as_raw(), dev.as_raw()) })?;
        // INVARIANT: a fresh attachment of `buf` for `dev`, with references
        // to both.
        Ok(Self {
            // SAFETY: `from_err_ptr` let only valid pointers through.
            raw: unsafe { NonNull::new_unchecked(raw) },
            buf: buf.into(),
            dev: dev.into(),
        })
    }

    /// The dma-buf attached to.
    pub fn dma_buf(&self) -> &DmaBuf {
        &self.buf
    }

    /// The attached device.
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// Maps the buffer for `dev`, the attached device, for transfers in
    /// `dir` (`dma_buf_map_attachment_unlocked`). On failure the
    /// attachment is dropped, and with it detached.
    ///
    /// The exporter maps through the DMA API, so the device must be bound
    /// (the caller shows it with `dev`), and the mapping is handed back in
    /// a [`Devres`] of `dev`, which unmaps it at the latest when the driver
    /// unbinds. A mapping needs the bound device:
    ///
    /// ```ignore,compile_fail,E0061
    /// use kernel::{dma::DataDirection, dma_buf::Attachment};
    /// # // twin: use kernel::device::{Bound, Device};
    ///
    /// fn map(att: Attachment) -> Result { // misuse
    /// # // twin: fn map(att: Attachment, dev: &Device<Bound>) -> Result {
    ///     // No `Device<Bound>`: this does not build.
    ///     att.map(DataDirection::ToDevice)?; // misuse
    /// #   // twin: att.map(dev, DataDirection::ToDevice)?;
    ///     Ok(())
    /// }
    /// ```
    ///
    /// `EINVAL` if `dev` is not the attached device, or if `dir` is
    /// [`DataDirection::None`], which is no direction to map for (the DMA
    /// API treats it as a bug).
    pub fn map(self, dev: &Device<Bound>, dir: DataDirection) -> Result<Devres<Mapping>> {
        if !core::ptr::eq(dev.as_raw(), self.dev.as_raw()) || dir == DataDirection::None {
            return Err(EINVAL);
        }
        // SAFETY: the attachment is valid (the type invariant) and not
        // mapped: mapping consumes it. `dir` is a valid direction.
        let sgt = from_err_ptr(unsafe {
            bindings::dma_buf_map_attachment_unlocked(self.raw.as_ptr(), dir.into())
        })?;
        // INVARIANT: a mapping of this attachment in `dir`.
        let mapping = Mapping {
            // SAFETY: `from_err_ptr` let only valid pointers through.
            sgt: unsafe { NonNull::new_unchecked(sgt) },
            dir,
            att: self,
        };
        // On failure `mapping` is dropped, unmapped while `dev` is bound.
        Devres::new(dev, mapping)
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        // Sleeps (the reservation lock).
        crate::task::might_sleep();
        // SAFETY: the attachment is of this dma-buf and not detached yet
        // (the type invariant); it is not mapped, since a `Mapping` owns
        // the attachment it maps.
        unsafe { bindings::dma_buf_detach(self.buf.as_raw(), self.raw.as_ptr()) }
    }
}

/// An attachment mapped for DMA in one direction; unmapped on drop, then
/// detached.
///
/// A `Mapping` only exists inside the [`Devres`] that
/// [`Attachment::map`] returns, which drops it while the device is bound:
/// the exporter unmaps through the DMA API for the attached device, which
/// must not happen after the driver unbound from it.
///
/// # Invariants
///
/// `sgt` is the table `dma_buf_map_attachment_unlocked` returned for `att`
/// in `dir`, not unmapped yet; `dir` is not [`DataDirection::None`]. The
/// attached device is bound to its driver.
pub struct Mapping {
    sgt: NonNull<bindings::sg_table>,
    dir: DataDirection,
    // Dropped after `Mapping::drop` unmaps: detaches last.
    att: Attachment,
}

// SAFETY: the table is only read; unmapping may happen on any thread.
unsafe impl Send for Mapping {}

// SAFETY: `&Mapping` only reads the table.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// The DMA segments of the buffer, for the attached device.
    pub fn sg_table(&self) -> &SGTable {
        // SAFETY: the table is valid and unchanged until it is unmapped on
        // drop, which outlives the borrow.
        unsafe { SGTable::from_raw(self.sgt.as_ptr()) }
    }

    /// The direction it was mapped for.
    pub fn direction(&self) -> DataDirection {
        self.dir
    }

    /// The attachment it maps.
    pub fn attachment(&self) -> &Attachment {
        &self.att
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Sleeps (the reservation lock).
        crate::task::might_sleep();
        // SAFETY: `sgt` is this attachment's mapping in `dir`, not unmapped
        // yet, and the device is still bound (the type invariant: the
        // `Devres` holding the mapping drops it before the driver unbinds).
        unsafe {
            bindings::dma_buf_unmap_attachment_unlocked(
                self.att.raw.as_ptr(),
                self.sgt.as_ptr(),
                self.dir.into(),
            )
        }
    }
}

/// A dma-buf exporter for tests: it exports a buffer whose mapping has the
/// DMA segments the test chooses, so importers can be tested with any
/// layout, including ones real exporters would not produce.
#[cfg(CONFIG_KUNIT)]
pub mod test_exporter {
    use super::*;
    use crate::{
        alloc::KVec,
        dma::DmaAddress,
        sync::atomic::{
            Atomic,
            Relaxed, //
        },
    };

    /// The `last_map` and `last_unmap` of a buffer not mapped or unmapped
    /// yet: no direction's value.
    const NO_DIRECTION: i32 = -1;

    /// What the exporter keeps per buffer.
    struct State {
        segments: KVec<(DmaAddress, u32)>,
        /// Mappings live now.
        maps: Atomic<u32>,
        /// Mappings made, ever.
        made: Atomic<u32>,
        /// Mappings unmapped, ever.
        unmaps: Atomic<u32>,
        /// Unmaps in another direction than their mapping was made for.
        wrong_direction: Atomic<u32>,
        /// The C value of the direction of the last map.
        last_map: Atomic<i32>,
        /// The C value of the direction of the last unmap.
        last_unmap: Atomic<i32>,
    }

    /// A table [`map`] made, with the direction it made it for, so that
    /// [`unmap`] can check it is given back the same one.
    #[repr(C)]
    struct Table {
        // First: the table's address is the one the dma-buf core sees.
        sgt: bindings::sg_table,
        dir: bindings::dma_data_direction,
    }

    /// `map_dma_buf`: a table with the test's segments.
    ///
    /// # Safety
    ///
    /// Called by the dma-buf core with a valid attachment of a buffer made
    /// by [`export`].
    unsafe extern "C" fn map(
        att: *mut bindings::dma_buf_attachment,
        dir: bindings::dma_data_direction,
    ) -> *mut bindings::sg_table {
        // SAFETY: the attachment and its dma-buf are valid during the call;
        // `priv_` is the `State` this exporter put there.
        let state = unsafe { &*(*(*att).dmabuf).priv_.cast::<State>() };
        let n = state.segments.len();
        let Ok(table) = KBox::new(
            Table {
                // SAFETY: all-zero is an empty `sg_table`.
                sgt: unsafe { core::mem::zeroed() },
                dir,
            },
            GFP_KERNEL,
        ) else {
            return ENOMEM.to_ptr();
        };
        let table = KBox::into_raw(table);
        // The table is the first field of the `#[repr(C)]` `Table`.
        let sgt = table.cast::<bindings::sg_table>();
        // CAST: at most a page of entries (`export`).
        // SAFETY: `sgt` is a valid, empty table.
        let ret = unsafe { bindings::sg_alloc_table(sgt, n as u32, GFP_KERNEL.as_raw()) };
        if ret != 0 {
            // SAFETY: `table` came from `KBox::into_raw` above.
            drop(unsafe { KBox::from_raw(table) });
            return Error::from_errno(ret).to_ptr();
        }
        // SAFETY: `sg_alloc_table` made `n` entries in one chunk: `n` is
        // at most `SG_MAX_SINGLE_ALLOC` (`export`).
        let sgl = unsafe { core::slice::from_raw_parts_mut((*sgt).sgl, n) };
        for (sg, &(addr, len)) in sgl.iter_mut().zip(state.segments.iter()) {
            sg.dma_address = addr;
            sg.dma_length = len;
            sg.length = len;
        }
        state.maps.add(1, Relaxed);
        state.made.add(1, Relaxed);
        state.last_map.store(dir.0, Relaxed);
        sgt
    }

    /// `unmap_dma_buf`: frees a table made by [`map`], noting whether the
    /// direction is the one it was mapped for.
    ///
    /// # Safety
    ///
    /// Called by the dma-buf core with a valid attachment of a buffer made
    /// by [`export`] and a table [`map`] returned for it.
    unsafe extern "C" fn unmap(
        att: *mut bindings::dma_buf_attachment,
        sgt: *mut bindings::sg_table,
        dir: bindings::dma_data_direction,
    ) {
        // SAFETY: as in `map`.
        let state = unsafe { &*(*(*att).dmabuf).priv_.cast::<State>() };
        // `map` returned the first field of a `Table`.
        let table = sgt.cast::<Table>();
        // SAFETY: `table` is valid until it is freed below.
        if unsafe { (*table).dir } != dir {
            state.wrong_direction.add(1, Relaxed);
        }
        state.unmaps.add(1, Relaxed);
        state.last_unmap.store(dir.0, Relaxed);
        state.maps.fetch_sub(1, Relaxed);
        // SAFETY: `sgt` is a table `map` made and nobody uses any more.
        unsafe { bindings::sg_free_table(sgt) };
        // SAFETY: `map` made `table` with `KBox::into_raw`.
        drop(unsafe { KBox::from_raw(table) });
    }

    /// `release`: frees the buffer's state.
    ///
    /// # Safety
    ///
    /// Called by the dma-buf core once, when the last reference to a buffer
    /// made by [`export`] is gone.
    unsafe extern "C" fn release(buf: *mut bindings::dma_buf) {
        // SAFETY: the last reference is gone; `priv_` is the `State` that
        // `export` leaked for this buffer.
        drop(unsafe { KBox::from_raw((*buf).priv_.cast::<State>()) });
    }

    static OPS: bindings::dma_buf_ops = {
        // SAFETY: all-zero is a valid `dma_buf_ops` with no callbacks.
        let mut ops: bindings::dma_buf_ops = unsafe { core::mem::zeroed() };
        ops.map_dma_buf = Some(map);
        ops.unmap_dma_buf = Some(unmap);
        ops.release = Some(release);
        ops
    };

    /// Exports a buffer of `size` bytes whose mapping, for any device, is
    /// `segments`, `(DMA address, length)` pairs. The CPU cannot access it.
    /// `EINVAL` for no segment, or more than one page of scatterlist
    /// entries holds (`SG_MAX_SINGLE_ALLOC`): the mapping is one chunk.
    pub fn export(size: usize, segments: &[(DmaAddress, u32)]) -> Result<ARef<DmaBuf>> {
        let max = crate::page::PAGE_SIZE / core::mem::size_of::<bindings::scatterlist>();
        if segments.is_empty() || segments.len() > max {
            return Err(EINVAL);
        }
        let mut segs = KVec::with_capacity(segments.len(), GFP_KERNEL)?;
        for &s in segments {
            segs.push(s, GFP_KERNEL)?;
        }
        let state = KBox::new(
            State {
                segments: segs,
                maps: Atomic::new(0),
                made: Atomic::new(0),
                unmaps: Atomic::new(0),
                wrong_direction: Atomic::new(0),
                last_map: Atomic::new(NO_DIRECTION),
                last_unmap: Atomic::new(NO_DIRECTION),
            },
            GFP_KERNEL,
        )?;
        let state = KBox::into_raw(state);
        // SAFETY: all-zero is a valid `dma_buf_export_info` to fill in.
        let mut info: bindings::dma_buf_export_info = unsafe { core::mem::zeroed() };
        info.exp_name = c"rust-test-exporter".as_char_ptr();
        info.ops = &OPS;
        info.size = size;
        // CAST: O_RDWR fits the flags field.
        info.flags = bindings::O_RDWR as i32;
        info.priv_ = state.cast();
        // SAFETY: `info` is complete; on success the buffer owns `state`
        // and frees it in `release`.
        match from_err_ptr(unsafe { bindings::dma_buf_export(&info) }) {
            // SAFETY: a fresh dma-buf with one reference, ours.
            Ok(raw) => Ok(unsafe { ARef::from_raw(NonNull::new_unchecked(raw.cast())) }),
            Err(e) => {
                // SAFETY: the export failed, so `state` is still ours.
                drop(unsafe { KBox::from_raw(state) });
                Err(e)
            }
        }
    }

    /// The state of `buf`, if [`export`] made it (its ops are this
    /// exporter's).
    fn state_of(buf: &DmaBuf) -> Option<&State> {
        // SAFETY: a live dma-buf; `ops` is set at export and not changed.
        let ops = unsafe { (*buf.as_raw()).ops };
        // SAFETY: a buffer with these ops was made by `export`, whose
        // `priv_` is a `State` that lives as long as the buffer.
        core::ptr::eq(ops, &OPS).then(|| unsafe { &*(*buf.as_raw()).priv_.cast::<State>() })
    }

    /// How many mappings of `buf`, made by [`export`], are live; 0 for a
    /// buffer of another exporter.
    pub fn live_maps(buf: &DmaBuf) -> u32 {
        state_of(buf).map_or(0, |s| s.maps.load(Relaxed))
    }

    /// What the exporter saw of the mappings of a buffer.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Seen {
        /// Mappings made.
        pub maps: u32,
        /// Mappings unmapped.
        pub unmaps: u32,
        /// Unmaps in another direction than the one their mapping was
        /// made for: an importer's bug, which a real exporter does not
        /// catch but passes on to its DMA unmapping.
        pub wrong_direction: u32,
        /// The direction of the last mapping, if there was one.
        pub last_map: Option<DataDirection>,
        /// The direction of the last unmap, if there was one.
        pub last_unmap: Option<DataDirection>,
    }

    /// The direction whose C value is `raw`, if any.
    fn direction(raw: i32) -> Option<DataDirection> {
        [
            DataDirection::Bidirectional,
            DataDirection::ToDevice,
            DataDirection::FromDevice,
            DataDirection::None,
        ]
        .into_iter()
        .find(|&d| bindings::dma_data_direction::from(d).0 == raw)
    }

    /// What the exporter saw of the mappings of `buf`, made by [`export`];
    /// nothing for a buffer of another exporter.
    pub fn seen(buf: &DmaBuf) -> Seen {
        let Some(s) = state_of(buf) else {
            return Seen::default();
        };
        Seen {
            maps: s.made.load(Relaxed),
            unmaps: s.unmaps.load(Relaxed),
            wrong_direction: s.wrong_direction.load(Relaxed),
            last_map: direction(s.last_map.load(Relaxed)),
            last_unmap: direction(s.last_unmap.load(Relaxed)),
        }
    }
}

#[macros::kunit_tests(rust_kernel_dma_buf)]
mod tests {
    use super::*;
    use crate::{
        device::Bound,
        faux,
        page::PAGE_SIZE, //
    };

    // CAST: a page fits a u32 segment length.
    const PAGE: u32 = PAGE_SIZE as u32;

    #[test]
    fn closed_fd_is_ebadf() {
        assert_eq!(DmaBuf::get(-1).err(), Some(EBADF));
    }

    #[test]
    fn import_maps_and_unmaps() -> Result {
        let segs = [(0x10_0000, PAGE), (0x80_0000, 2 * PAGE)];
        let buf = test_exporter::export(3 * PAGE_SIZE, &segs)?;
        assert_eq!(buf.size(), 3 * PAGE_SIZE);
        let faux = faux::Registration::new(c"rust-dma-buf-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let map = Attachment::new(&buf, dev)?.map(dev, DataDirection::FromDevice)?;
        assert_eq!(test_exporter::live_maps(&buf), 1);
        let map = map.access(dev)?;
        let mut seen = 0;
        for (sg, &(addr, len)) in map.sg_table().iter().zip(segs.iter()) {
            assert_eq!(sg.dma_address(), addr);
            assert_eq!(sg.dma_len(), u64::from(len));
            seen += 1;
        }
        assert_eq!(seen, 2);
        assert_eq!(map.direction(), DataDirection::FromDevice);
        assert_eq!(map.attachment().dma_buf().size(), 3 * PAGE_SIZE);
        Ok(())
    }

    #[test]
    fn dropping_the_devres_unmaps() -> Result {
        let buf = test_exporter::export(PAGE_SIZE, &[(0x10_0000, PAGE)])?;
        let faux = faux::Registration::new(c"rust-dma-buf-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let map = Attachment::new(&buf, dev)?.map(dev, DataDirection::FromDevice)?;
        assert_eq!(test_exporter::live_maps(&buf), 1);
        drop(map);
        assert_eq!(test_exporter::live_maps(&buf), 0);
        Ok(())
    }

    #[test]
    fn exporter_sees_the_unmap_direction() -> Result {
        let buf = test_exporter::export(PAGE_SIZE, &[(0x10_0000, PAGE)])?;
        let faux = faux::Registration::new(c"rust-dma-buf-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let none = test_exporter::seen(&buf);
        assert_eq!((none.maps, none.last_map, none.last_unmap), (0, None, None));

        // A `Mapping` unmaps in the direction it mapped.
        drop(Attachment::new(&buf, dev)?.map(dev, DataDirection::ToDevice)?);
        let seen = test_exporter::seen(&buf);
        assert_eq!((seen.maps, seen.unmaps, seen.wrong_direction), (1, 1, 0));
        assert_eq!(seen.last_map, Some(DataDirection::ToDevice));
        assert_eq!(seen.last_unmap, Some(DataDirection::ToDevice));

        // By hand, the bug the count is there to catch: mapped for the
        // device to read, unmapped as if it had written.
        let att = Attachment::new(&buf, dev)?;
        // SAFETY: the attachment is valid and not mapped.
        let sgt = from_err_ptr(unsafe {
            bindings::dma_buf_map_attachment_unlocked(
                att.raw.as_ptr(),
                DataDirection::ToDevice.into(),
            )
        })?;
        // SAFETY: `sgt` is this attachment's mapping, unmapped once, here.
        unsafe {
            bindings::dma_buf_unmap_attachment_unlocked(
                att.raw.as_ptr(),
                sgt,
                DataDirection::FromDevice.into(),
            )
        };
        drop(att);
        let seen = test_exporter::seen(&buf);
        assert_eq!((seen.maps, seen.unmaps, seen.wrong_direction), (2, 2, 1));
        assert_eq!(seen.last_unmap, Some(DataDirection::FromDevice));
        assert_eq!(test_exporter::live_maps(&buf), 0);
        Ok(())
    }

    #[test]
    fn mapping_keeps_the_buffer_alive() -> Result {
        let buf = test_exporter::export(PAGE_SIZE, &[(0x10_0000, PAGE)])?;
        let faux = faux::Registration::new(c"rust-dma-buf-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let map = Attachment::new(&buf, dev)?.map(dev, DataDirection::ToDevice)?;
        // Our own reference goes; the mapping holds another.
        drop(buf);
        let m = map.access(dev)?;
        assert_eq!(m.attachment().dma_buf().size(), PAGE_SIZE);
        assert_eq!(m.sg_table().iter().count(), 1);
        drop(map);
        Ok(())
    }

    #[test]
    fn no_direction_and_another_device_are_refused() -> Result {
        let buf = test_exporter::export(PAGE_SIZE, &[(0x10_0000, PAGE)])?;
        let faux = faux::Registration::new(c"rust-dma-buf-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let other = faux::Registration::new(c"rust-dma-buf-test-other", None)?;
        let odev: &faux::Device<Bound> = other.as_ref();
        let odev: &Device<Bound> = odev.as_ref();
        let att = Attachment::new(&buf, dev)?;
        assert_eq!(att.map(dev, DataDirection::None).err(), Some(EINVAL));
        let att = Attachment::new(&buf, dev)?;
        assert_eq!(att.map(odev, DataDirection::ToDevice).err(), Some(EINVAL));
        // Refused before the exporter saw anything.
        assert_eq!(test_exporter::seen(&buf).maps, 0);
        Ok(())
    }

    #[test]
    fn unbinding_the_device_unmaps() -> Result {
        let buf = test_exporter::export(PAGE_SIZE, &[(0x10_0000, PAGE)])?;
        let faux = faux::Registration::new(c"rust-dma-buf-test", None)?;
        let fdev: &faux::Device<Bound> = faux.as_ref();
        let dev: &Device<Bound> = fdev.as_ref();
        let map = Attachment::new(&buf, dev)?.map(dev, DataDirection::FromDevice)?;
        assert_eq!(test_exporter::live_maps(&buf), 1);
        // The device goes, and its driver with it: unmapped then.
        drop(faux);
        let seen = test_exporter::seen(&buf);
        assert_eq!((seen.maps, seen.unmaps, seen.wrong_direction), (1, 1, 0));
        assert!(map.try_access().is_none());
        // Not again when the `Devres` goes.
        drop(map);
        assert_eq!(test_exporter::seen(&buf).unmaps, 1);
        Ok(())
    }
}
