// SPDX-License-Identifier: GPL-2.0

//! The request side of generic netlink: what a `doit` handler reads and how
//! it reports errors.
//!
//! - [`Attr`]: one attribute of a request, with typed accessors;
//! - [`Attrs`]: the attributes of a payload in order, as
//!   `nla_for_each_attr` walks them;
//! - [`Policy`] and [`Attr::parse_nested`]: a nested attribute parsed and
//!   validated by the netlink core against a C policy, as
//!   `nla_parse_nested` does;
//! - [`ExtAck`]: the extended ACK, with the semantics of the C macros
//!   `NL_SET_ERR_MSG`, `NL_SET_ERR_MSG_ATTR`, `NL_SET_BAD_ATTR`,
//!   `NL_SET_ERR_ATTR_MISS` and `NL_SET_ERR_MSG_FMT`;
//! - [`Info`]: a request as the genetlink core hands it to `doit`.
//!
//! C headers: [`include/net/netlink.h`](srctree/include/net/netlink.h),
//! [`include/linux/netlink.h`](srctree/include/linux/netlink.h),
//! [`include/net/genetlink.h`](srctree/include/net/genetlink.h)

use crate::{
    alloc::Flags,
    error::to_result,
    fmt,
    prelude::*,
    str::CStr,
    types::Opaque, //
};
use core::{
    marker::PhantomData,
    ptr, //
};

/// Size of `struct nlattr`, the header of every attribute.
const HDR_LEN: usize = core::mem::size_of::<bindings::nlattr>();

/// Attributes start on this alignment.
// CAST: NLA_ALIGNTO is 4.
const ALIGN: usize = bindings::NLA_ALIGNTO as usize;

/// The flag bits of `nla_type`.
// CAST: the mask is the complement of the two flag bits of a u16 field.
const TYPE_MASK: u16 = bindings::NLA_TYPE_MASK as u16;

/// `NLA_F_NESTED`.
// CAST: bit 15 of a u16 field.
const F_NESTED: u16 = bindings::NLA_F_NESTED as u16;

/// `NL_VALIDATE_STRICT`, what `nla_parse_nested` validates with.
const VALIDATE_STRICT: bindings::netlink_validation =
    bindings::netlink_validation_NL_VALIDATE_TRAILING
        | bindings::netlink_validation_NL_VALIDATE_MAXTYPE
        | bindings::netlink_validation_NL_VALIDATE_UNSPEC
        | bindings::netlink_validation_NL_VALIDATE_STRICT_ATTRS
        | bindings::netlink_validation_NL_VALIDATE_NESTED;

/// `NLMSG_HDRLEN`: the netlink header, aligned.
const NLMSG_HDRLEN: usize = core::mem::size_of::<bindings::nlmsghdr>().next_multiple_of(ALIGN);

/// The longest message `NL_SET_ERR_MSG_FMT` keeps, with its NUL.
// CAST: 80.
const MAX_FMTMSG_LEN: usize = bindings::NETLINK_MAX_FMTMSG_LEN as usize;

/// One attribute of a netlink message: its header and payload.
///
/// # Invariants
///
/// `bytes` is exactly the attribute: at least [`HDR_LEN`] bytes, as many
/// as its `nla_len` says, and inside the message it was found in.
#[derive(Clone, Copy)]
pub struct Attr<'a> {
    bytes: &'a [u8],
}

impl<'a> Attr<'a> {
    /// Takes the attribute at the front of `buf`, as `nla_ok` would accept
    /// it, and the rest of `buf` after its aligned end.
    fn split(buf: &'a [u8]) -> Option<(Self, &'a [u8])> {
        let hdr = buf.get(..HDR_LEN)?;
        let len = usize::from(u16::from_ne_bytes([hdr[0], hdr[1]]));
        if len < HDR_LEN || len > buf.len() {
            return None;
        }
        let next = len.next_multiple_of(ALIGN).min(buf.len());
        // INVARIANT: `len` bytes, checked against the header and `buf`.
        Some((Self { bytes: &buf[..len] }, &buf[next..]))
    }

    /// The attribute at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to an attribute whose `nla_len` bytes are readable and
    /// unchanged for `'a`, such as one the netlink core parsed and validated
    /// out of a request being handled.
    pub unsafe fn from_raw(ptr: *const bindings::nlattr) -> Self {
        // SAFETY: the header is readable, per the caller.
        let len = usize::from(unsafe { (*ptr).nla_len }).max(HDR_LEN);
        // SAFETY: `len` bytes are readable for `'a`, per the caller; `len`
        // is at least the header, which is readable too.
        let bytes = unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len) };
        // INVARIANT: validated attributes have `nla_len >= HDR_LEN`.
        Self { bytes }
    }

    /// The attribute as the C `struct nlattr` it is.
    pub fn as_raw(&self) -> *const bindings::nlattr {
        self.bytes.as_ptr().cast()
    }

    fn raw_type(&self) -> u16 {
        u16::from_ne_bytes([self.bytes[2], self.bytes[3]])
    }

    /// The attribute type, without the flag bits (`nla_type`).
    pub fn kind(&self) -> u16 {
        self.raw_type() & TYPE_MASK
    }

    /// Whether the sender marked the attribute as nested (`NLA_F_NESTED`).
    pub fn is_nested(&self) -> bool {
        self.raw_type() & F_NESTED != 0
    }

    /// The payload (`nla_data`, `nla_len`).
    pub fn payload(&self) -> &'a [u8] {
        &self.bytes[HDR_LEN..]
    }

    /// The payload as a `u32`, as `nla_get_u32` reads it, or `None` when it
    /// is shorter than that (a policy of `NLA_U32` rules that out).
    pub fn read_u32(&self) -> Option<u32> {
        let b = self.payload().get(..4)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The attributes nested in this one, in order (`nla_for_each_nested`).
    pub fn nested(&self) -> Attrs<'a> {
        Attrs {
            rest: self.payload(),
        }
    }

    /// Parses and validates the attributes nested in this one against
    /// `policy`, as `nla_parse_nested` does: the sender must have set
    /// `NLA_F_NESTED`, and errors are reported through `extack`.
    pub fn parse_nested<const N: usize>(
        &self,
        policy: &Policy<N>,
        extack: &ExtAck<'a>,
    ) -> Result<Nested<'a, N>> {
        if !self.is_nested() {
            extack.set_msg_attr(self, c"NLA_F_NESTED is missing");
            return Err(EINVAL);
        }
        let mut tb = [ptr::null_mut::<bindings::nlattr>(); N];
        let payload = self.payload();
        // CAST: the payload of an attribute is shorter than 64 KiB.
        let len = payload.len() as i32;
        // C points the extended ACK at the attribute that failed, inside
        // this one: forgotten below if this one is not in the request.
        let _own = extack.keep_own();
        // SAFETY: `tb` has `N` entries, which `policy` covers (its
        // invariant); the payload is readable for `len` bytes; `extack` is
        // null or valid (its invariant).
        to_result(unsafe {
            bindings::__nla_parse(
                tb.as_mut_ptr(),
                // CAST: `N - 1` fits, a policy has at most 65536 entries.
                (N - 1) as i32,
                payload.as_ptr().cast(),
                len,
                policy.table.as_ptr(),
                VALIDATE_STRICT,
                extack.raw,
            )
        })?;
        // INVARIANT: `__nla_parse` fills `tb` with null or pointers to
        // validated attributes inside the payload.
        Ok(Nested {
            tb,
            _msg: PhantomData,
        })
    }
}

/// The attributes of a payload in order; stops at the first malformed one,
/// like `nla_for_each_attr`.
#[derive(Clone)]
pub struct Attrs<'a> {
    rest: &'a [u8],
}

impl<'a> Attrs<'a> {
    /// The attributes in `buf`, a netlink payload.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { rest: buf }
    }

    /// Only the attributes of type `kind` (`nla_for_each_attr_type`).
    pub fn of_kind(self, kind: u16) -> impl Iterator<Item = Attr<'a>> {
        self.filter(move |a| a.kind() == kind)
    }
}

impl<'a> Iterator for Attrs<'a> {
    type Item = Attr<'a>;

    fn next(&mut self) -> Option<Attr<'a>> {
        let (attr, rest) = Attr::split(self.rest)?;
        self.rest = rest;
        Some(attr)
    }
}

/// A C attribute policy with `N` entries, for types `0..N`.
///
/// The table is `'static`: the netlink core keeps a pointer to the entry
/// an attribute failed in the request's extended ACK, and reads it (and
/// the nested policies it names) when it writes the ACK, after the handler
/// returned.
///
/// # Invariants
///
/// `table` is a well-formed policy, as the netlink core expects.
pub struct Policy<const N: usize> {
    table: &'static [bindings::nla_policy; N],
}

impl<const N: usize> Policy<N> {
    /// Wraps a C policy table.
    ///
    /// # Safety
    ///
    /// `table` is a policy the netlink core can validate against: every
    /// entry's type, validation and pointers are consistent, as in the
    /// tables the YNL code generator emits.
    pub const unsafe fn new(table: &'static [bindings::nla_policy; N]) -> Self {
        // INVARIANT: the caller guarantees a well-formed table.
        Self { table }
    }
}

/// The attributes nested in an attribute, parsed against a [`Policy`] with
/// `N` entries.
///
/// # Invariants
///
/// Every entry of `tb` is null or points to a validated attribute that is
/// readable for `'a`.
pub struct Nested<'a, const N: usize> {
    tb: [*mut bindings::nlattr; N],
    _msg: PhantomData<&'a [u8]>,
}

impl<'a, const N: usize> Nested<'a, N> {
    /// The attribute of type `kind`, if it was present.
    pub fn get(&self, kind: u16) -> Option<Attr<'a>> {
        let p = *self.tb.get(usize::from(kind))?;
        // SAFETY: non-null entries point to validated attributes readable
        // for `'a`, by the type invariant.
        (!p.is_null()).then(|| unsafe { Attr::from_raw(p) })
    }

    /// The attribute of type `kind` of the nest `nest`, or `EINVAL` with
    /// the missing type reported (`NL_REQ_ATTR_CHECK`).
    pub fn require(&self, kind: u16, nest: &Attr<'a>, extack: &ExtAck<'a>) -> Result<Attr<'a>> {
        self.get(kind).ok_or_else(|| {
            extack.set_missing(Some(nest), kind);
            EINVAL
        })
    }
}

/// The extended ACK of a request, where a handler says what went wrong.
///
/// Like the C macros, every setter does nothing on a request without one.
///
/// An attribute it points at is one of the request's own: the core sends
/// its offset in the request back, and warns (`netlink_ack`) about one
/// outside it. An `ExtAck` that knows its request
/// ([`ExtAck::from_raw_in`], [`Info::extack`]) points only at attributes
/// inside it, and one that does not ([`ExtAck::from_raw`]) at none: the
/// message is reported either way.
///
/// # Invariants
///
/// `raw` is null or points to a `netlink_ext_ack` that is valid for `'a`
/// and, during `'a`, used only through `ExtAck`s on one thread (and the C
/// functions they hand it to), which keep no reference into it across
/// calls.
///
/// So an `ExtAck` has no getter: a message read back would be a reference
/// into the extended ACK's own buffer, which the next formatted message
/// rewrites. An [`ExtAckBuf`] is read once the `ExtAck` it lent is gone:
///
/// ```ignore,compile_fail,E0502
/// use kernel::net::netlink::request::ExtAckBuf;
///
/// fn read_while_reporting() -> Result {
///     let mut buf = ExtAckBuf::new(GFP_KERNEL)?;
///     let e = buf.ext_ack();
///     let m = buf.msg(); // misuse
///     e.set_msg(c"x");
///     drop(m); // misuse
/// #   // twin: let m = buf.msg();
/// #   // twin: drop(m);
///     Ok(())
/// }
/// ```
pub struct ExtAck<'a> {
    raw: *mut bindings::netlink_ext_ack,
    /// The request's message, which every attribute it points at is in;
    /// empty when not known.
    msg: &'a [u8],
    _req: PhantomData<&'a mut bindings::netlink_ext_ack>,
}

impl<'a> ExtAck<'a> {
    /// The extended ACK at `raw`, which may be null.
    ///
    /// # Safety
    ///
    /// `raw` is null or valid for `'a`, and during `'a` only used through
    /// `ExtAck`s on this thread (the returned one, and others made for the
    /// same request) and the C functions they hand it to.
    pub unsafe fn from_raw(raw: *mut bindings::netlink_ext_ack) -> Self {
        // SAFETY: per the caller; an empty message holds no attribute.
        unsafe { Self::from_raw_in(raw, &[]) }
    }

    /// As [`ExtAck::from_raw`], for the request whose message is `msg`:
    /// the attributes it reports must be inside `msg`, and those that are
    /// not are not pointed at.
    ///
    /// # Safety
    ///
    /// As for [`ExtAck::from_raw`].
    pub unsafe fn from_raw_in(raw: *mut bindings::netlink_ext_ack, msg: &'a [u8]) -> Self {
        // INVARIANT: per the caller.
        Self {
            raw,
            msg,
            _req: PhantomData,
        }
    }

    /// `attr`, if it is inside the request's message, as the core requires
    /// of an attribute reported back; null otherwise.
    fn in_request(&self, attr: &Attr<'_>) -> *const bindings::nlattr {
        self.own(attr.as_raw())
    }

    /// `p`, if inside the request's message; null otherwise.
    fn own(&self, p: *const bindings::nlattr) -> *const bindings::nlattr {
        if self.msg.as_ptr_range().contains(&p.cast()) {
            p
        } else {
            ptr::null()
        }
    }

    /// A guard that, when dropped, forgets an attribute a C function
    /// pointed the extended ACK at meanwhile (`bad_attr`, `miss_nest`)
    /// if it is not in the request, as [`ExtAck::set_bad_attr`] does.
    fn keep_own(&self) -> KeepOwn<'_, 'a> {
        let mut before = (ptr::null(), ptr::null());
        self.with(|e| before = (e.bad_attr, e.miss_nest));
        KeepOwn {
            extack: self,
            before,
        }
    }

    /// The C `struct netlink_ext_ack`, possibly null, for a C function
    /// that reports through it.
    pub fn as_raw(&self) -> *mut bindings::netlink_ext_ack {
        self.raw
    }

    fn with(&self, f: impl FnOnce(&mut bindings::netlink_ext_ack)) {
        if !self.raw.is_null() {
            // SAFETY: non-null `raw` is valid for `'a`, by the type
            // invariant. No other reference to it exists while `f` runs:
            // it is used only through `ExtAck`s on this thread, which hand
            // out no reference into it (there is no getter) and make one
            // only here, for the span of a closure that does not call back
            // into an `ExtAck`.
            f(unsafe { &mut *self.raw })
        }
    }

    /// Reports `msg` (`NL_SET_ERR_MSG`).
    pub fn set_msg(&self, msg: &'static CStr) {
        // SAFETY: `msg` is a NUL-terminated string.
        unsafe { bindings::do_trace_netlink_extack(msg.as_char_ptr()) };
        self.with(|e| e._msg = msg.as_char_ptr());
    }

    /// Reports `msg` about `attr` (`NL_SET_ERR_MSG_ATTR`).
    pub fn set_msg_attr(&self, attr: &Attr<'a>, msg: &'static CStr) {
        // SAFETY: `msg` is a NUL-terminated string.
        unsafe { bindings::do_trace_netlink_extack(msg.as_char_ptr()) };
        let bad = self.in_request(attr);
        self.with(|e| {
            e._msg = msg.as_char_ptr();
            e.bad_attr = bad;
            e.policy = ptr::null();
        });
    }

    /// Points at `attr` as the culprit, with no message (`NL_SET_BAD_ATTR`).
    pub fn set_bad_attr(&self, attr: &Attr<'a>) {
        let bad = self.in_request(attr);
        self.with(|e| {
            e.bad_attr = bad;
            e.policy = ptr::null();
        });
    }

    /// Reports a missing attribute of type `kind`, at the top level or in
    /// `nest` (`NL_SET_ERR_ATTR_MISS`).
    pub fn set_missing(&self, nest: Option<&Attr<'a>>, kind: u16) {
        let nest = nest.map_or(ptr::null(), |n| self.in_request(n));
        self.with(|e| {
            e.miss_nest = nest;
            e.miss_type = kind;
        });
    }

    /// Reports a formatted message (`NL_SET_ERR_MSG_FMT`): it is kept in
    /// the extended ACK's own buffer, cut to 79 bytes; a longer one is
    /// logged whole, rate limited, as "truncated extack: ...".
    ///
    /// `args` runs the `Display` code of its arguments, which may report
    /// into this same extended ACK: the message is formatted (and logged)
    /// into a buffer of its own first, and only copied in afterwards, so
    /// the outer message is the one kept.
    pub fn set_msg_fmt(&self, args: fmt::Arguments<'_>) {
        if self.raw.is_null() {
            return;
        }
        // Not inside `with`: formatting may call back into an `ExtAck`.
        let mut msg: [c_char; MAX_FMTMSG_LEN] = [0; MAX_FMTMSG_LEN];
        let mut w = FmtBuf {
            buf: &mut msg,
            len: 0,
            total: 0,
        };
        // Cannot fail: `FmtBuf` truncates instead.
        let _ = fmt::Write::write_fmt(&mut w, args);
        // `msg[w.len]` is still 0: `FmtBuf` leaves room for the NUL.
        if w.total >= MAX_FMTMSG_LEN
            // SAFETY: no requirements.
            && unsafe { bindings::net_ratelimit() } != 0
        {
            // SAFETY: the format string is NUL-terminated and takes one
            // `%pA`, given a pointer to `fmt::Arguments`, as `_printk`
            // expects for Rust formatting.
            unsafe {
                bindings::_printk(
                    c"\x014truncated extack: %pA\n".as_char_ptr(),
                    ptr::from_ref(&args).cast::<c_void>(),
                )
            };
        }
        self.with(|e| {
            e._msg_buf = msg;
            // SAFETY: `_msg_buf` holds a NUL-terminated string.
            unsafe { bindings::do_trace_netlink_extack(e._msg_buf.as_ptr()) };
            e._msg = e._msg_buf.as_ptr();
        });
    }
}

/// The message of the extended ACK at `raw`, if any.
///
/// # Safety
///
/// `raw` points to a `netlink_ext_ack` whose `_msg` is null or a
/// NUL-terminated string (static, or in its own `_msg_buf`), and nothing
/// writes to either during `'b`.
unsafe fn msg_at<'b>(raw: *const bindings::netlink_ext_ack) -> Option<&'b CStr> {
    // SAFETY: `raw` is valid, per the caller.
    let m = unsafe { (*raw)._msg };
    // SAFETY: a non-null `_msg` is a NUL-terminated string left unchanged
    // for `'b`, per the caller.
    (!m.is_null()).then(|| unsafe { CStr::from_char_ptr(m) })
}

/// What [`ExtAck::keep_own`] returns.
struct KeepOwn<'e, 'a> {
    extack: &'e ExtAck<'a>,
    before: (*const bindings::nlattr, *const bindings::nlattr),
}

impl Drop for KeepOwn<'_, '_> {
    fn drop(&mut self) {
        let ext = self.extack;
        let (bad, miss) = self.before;
        ext.with(|e| {
            if e.bad_attr != bad && ext.own(e.bad_attr).is_null() {
                e.bad_attr = ptr::null();
                e.policy = ptr::null();
            }
            if e.miss_nest != miss && ext.own(e.miss_nest).is_null() {
                e.miss_nest = ptr::null();
            }
        });
    }
}

/// An extended ACK of one's own, empty until a handler reports into it:
/// for a request the kernel makes itself, as a test of a handler does.
pub struct ExtAckBuf(KBox<Opaque<bindings::netlink_ext_ack>>);

impl ExtAckBuf {
    /// An empty extended ACK.
    pub fn new(flags: Flags) -> Result<Self> {
        Ok(Self(KBox::new(Opaque::zeroed(), flags)?))
    }

    /// The extended ACK, for the handler to report into and the caller to
    /// read back with [`ExtAckBuf::msg`] once it is done.
    pub fn ext_ack(&mut self) -> ExtAck<'_> {
        // SAFETY: all zeroes is an empty `netlink_ext_ack`; it lives in
        // the box, which the `&mut` borrow keeps alive and unshared for
        // the lifetime of the result.
        unsafe { ExtAck::from_raw(self.0.get()) }
    }

    /// The message reported so far, if any.
    pub fn msg(&self) -> Option<&CStr> {
        // SAFETY: the box holds a `netlink_ext_ack` that only `ExtAck`s
        // lent by `ext_ack` wrote, and they leave `_msg` null, static or
        // pointing into `_msg_buf`, NUL-terminated. None is alive while
        // `self` is borrowed shared (`ext_ack` borrows it mutably), so
        // nothing writes to it for the lifetime of the result.
        unsafe { msg_at(self.0.get()) }
    }
}

/// Formats into a fixed C buffer, always leaving room for the NUL, and
/// counts what it would have written (like `snprintf`).
struct FmtBuf<'b> {
    buf: &'b mut [c_char],
    len: usize,
    total: usize,
}

impl fmt::Write for FmtBuf<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - 1 - self.len;
        let n = s.len().min(room);
        for (dst, &b) in self.buf[self.len..self.len + n]
            .iter_mut()
            .zip(s.as_bytes())
        {
            // CAST: a byte of the message, as a C char.
            *dst = b as c_char;
        }
        self.len += n;
        self.total += s.len();
        Ok(())
    }
}

/// A generic netlink request being handled by a `doit` handler.
///
/// # Invariants
///
/// `raw` points to the `genl_info` of a request under way for `'a`, whose
/// `attrs` array has `maxattr + 1` entries, each null or a validated
/// attribute of the request.
pub struct Info<'a> {
    raw: *const bindings::genl_info,
    maxattr: u16,
    _req: PhantomData<&'a bindings::genl_info>,
}

impl<'a> Info<'a> {
    /// The request at `raw`, parsed with a policy of `maxattr + 1` entries.
    ///
    /// # Safety
    ///
    /// `raw` is the `genl_info` of a request being handled, valid for
    /// `'a`, whose attributes were parsed into `attrs` for types up to
    /// `maxattr` (the op's `maxattr`).
    pub unsafe fn from_raw(raw: *const bindings::genl_info, maxattr: u16) -> Self {
        // INVARIANT: per the caller.
        Self {
            raw,
            maxattr,
            _req: PhantomData,
        }
    }

    /// The C `struct genl_info`.
    pub fn as_raw(&self) -> *const bindings::genl_info {
        self.raw
    }

    fn info(&self) -> &'a bindings::genl_info {
        // SAFETY: valid for `'a`, by the type invariant.
        unsafe { &*self.raw }
    }

    /// The attribute of type `kind`, if present.
    pub fn attr(&self, kind: u16) -> Option<Attr<'a>> {
        if kind > self.maxattr {
            return None;
        }
        // SAFETY: `attrs` has `maxattr + 1` entries, by the type invariant.
        let p = unsafe { *self.info().attrs.add(usize::from(kind)) };
        // SAFETY: non-null entries are validated attributes of the request.
        (!p.is_null()).then(|| unsafe { Attr::from_raw(p) })
    }

    /// The attribute of type `kind`, or `EINVAL` with the missing type
    /// reported (`GENL_REQ_ATTR_CHECK`).
    pub fn require(&self, kind: u16) -> Result<Attr<'a>> {
        self.attr(kind).ok_or_else(|| {
            self.extack().set_missing(None, kind);
            EINVAL
        })
    }

    /// Every top-level attribute of the request, in message order, as
    /// `nla_for_each_attr` over `genlmsg_data` walks them; use it for
    /// multi-attributes.
    pub fn all_attrs(&self) -> Attrs<'a> {
        let info = self.info();
        let gnlh = info.genlhdr.cast::<u8>().cast_const();
        let nlh = info.nlhdr;
        let genl_hdr = core::mem::size_of::<bindings::genlmsghdr>();
        // SAFETY: the request's netlink header is valid for `'a`.
        let msg_len = unsafe { (*nlh).nlmsg_len } as usize;
        let payload_len = msg_len
            .saturating_sub(NLMSG_HDRLEN)
            .saturating_sub(genl_hdr);
        // SAFETY: the genetlink header is followed by the request's
        // attributes, `payload_len` bytes of it, all inside the message
        // the core validated; readable for `'a`.
        let payload = unsafe { core::slice::from_raw_parts(gnlh.add(genl_hdr), payload_len) };
        Attrs::new(payload)
    }

    /// The extended ACK of the request.
    pub fn extack(&self) -> ExtAck<'a> {
        let nlh = self.info().nlhdr;
        // CAST: u32 to usize is lossless on Linux.
        // SAFETY: the request's netlink header is valid for `'a`.
        let len = unsafe { (*nlh).nlmsg_len } as usize;
        // SAFETY: the message the core validated, `nlmsg_len` bytes from
        // its header, readable for `'a`; its payload, where the core takes
        // attributes from (`nlmsg_check_in_payload`), follows the header.
        let msg = unsafe {
            core::slice::from_raw_parts(
                nlh.cast::<u8>().add(NLMSG_HDRLEN),
                len.saturating_sub(NLMSG_HDRLEN),
            )
        };
        // SAFETY: the request's extended ACK is null or valid while it is
        // handled, and a handler reports through it alone.
        unsafe { ExtAck::from_raw_in(self.info().extack, msg) }
    }
}

#[macros::kunit_tests(rust_kernel_netlink_request)]
mod tests {
    use super::*;
    use crate::alloc::KVec;

    /// Appends an attribute to a message being built, padded to alignment.
    fn put(msg: &mut KVec<u8>, kind: u16, payload: &[u8]) -> Result {
        // CAST: test payloads are small.
        let len = (HDR_LEN + payload.len()) as u16;
        msg.extend_from_slice(&len.to_ne_bytes(), GFP_KERNEL)?;
        msg.extend_from_slice(&kind.to_ne_bytes(), GFP_KERNEL)?;
        msg.extend_from_slice(payload, GFP_KERNEL)?;
        while msg.len() % ALIGN != 0 {
            msg.push(0, GFP_KERNEL)?;
        }
        Ok(())
    }

    fn nest(msg: &mut KVec<u8>, kind: u16, inner: &KVec<u8>) -> Result {
        put(msg, kind | F_NESTED, inner)
    }

    fn zeroed_extack() -> Result<KBox<bindings::netlink_ext_ack>> {
        // SAFETY: all-zero is a valid, empty `netlink_ext_ack`.
        let e: bindings::netlink_ext_ack = unsafe { core::mem::zeroed() };
        Ok(KBox::new(e, GFP_KERNEL)?)
    }

    /// The policy of the netdev family's queue-id nest, as YNL generates it.
    /// A policy of two `NLA_U32` attributes, of types 1 and 2.
    struct QueuePolicy([bindings::nla_policy; 3]);

    // SAFETY: only read, and its pointers are null.
    unsafe impl Sync for QueuePolicy {}

    static QUEUE_POLICY: QueuePolicy = QueuePolicy({
        // SAFETY: all-zero is a valid policy entry (NLA_UNSPEC).
        let mut p: [bindings::nla_policy; 3] = unsafe { core::mem::zeroed() };
        // CAST: policy types fit the u8 field.
        p[1].type_ = bindings::NLA_U32 as u8;
        p[2].type_ = bindings::NLA_U32 as u8;
        p
    });

    #[test]
    fn walks_attributes_in_order_and_by_kind() -> Result {
        let mut m = KVec::new();
        put(&mut m, 1, &7u32.to_ne_bytes())?;
        put(&mut m, 3, &[1, 2, 3])?;
        put(&mut m, 1, &9u32.to_ne_bytes())?;
        let kinds: KVec<u16> = {
            let mut v = KVec::new();
            for a in Attrs::new(&m) {
                v.push(a.kind(), GFP_KERNEL)?;
            }
            v
        };
        assert_eq!(&kinds[..], &[1, 3, 1]);
        let mut ones = Attrs::new(&m).of_kind(1);
        assert_eq!(ones.next().and_then(|a| a.read_u32()), Some(7));
        assert_eq!(ones.next().and_then(|a| a.read_u32()), Some(9));
        assert!(ones.next().is_none());
        let odd = Attrs::new(&m).of_kind(3).next().ok_or(EINVAL)?;
        assert_eq!(odd.payload(), &[1, 2, 3]);
        assert_eq!(odd.read_u32(), None);
        Ok(())
    }

    #[test]
    fn malformed_tail_ends_the_walk() -> Result {
        let mut m = KVec::new();
        put(&mut m, 1, &7u32.to_ne_bytes())?;
        // An attribute claiming more bytes than are left.
        m.extend_from_slice(&[200, 0, 2, 0, 0, 0], GFP_KERNEL)?;
        assert_eq!(Attrs::new(&m).count(), 1);
        Ok(())
    }

    #[test]
    fn nested_attributes_parse_against_a_policy() -> Result {
        let mut inner = KVec::new();
        put(&mut inner, 1, &5u32.to_ne_bytes())?;
        put(&mut inner, 2, &0u32.to_ne_bytes())?;
        let mut m = KVec::new();
        nest(&mut m, 6, &inner)?;
        let attr = Attrs::new(&m).next().ok_or(EINVAL)?;
        // SAFETY: a well-formed table of NLA_U32 entries.
        let policy = unsafe { Policy::new(&QUEUE_POLICY.0) };
        let mut raw = zeroed_extack()?;
        // SAFETY: `raw` is valid and used only through `extack` here.
        let extack = unsafe { ExtAck::from_raw_in(&raw mut *raw, &m) };
        let tb = attr.parse_nested(&policy, &extack)?;
        assert_eq!(tb.get(1).and_then(|a| a.read_u32()), Some(5));
        assert_eq!(tb.get(2).and_then(|a| a.read_u32()), Some(0));
        assert!(tb.get(0).is_none());
        assert!(tb.get(9).is_none());
        Ok(())
    }

    #[test]
    fn nest_without_flag_is_refused_like_c() -> Result {
        let mut inner = KVec::new();
        put(&mut inner, 1, &5u32.to_ne_bytes())?;
        let mut m = KVec::new();
        put(&mut m, 6, &inner)?;
        let attr = Attrs::new(&m).next().ok_or(EINVAL)?;
        // SAFETY: a well-formed table of NLA_U32 entries.
        let policy = unsafe { Policy::new(&QUEUE_POLICY.0) };
        let mut raw = zeroed_extack()?;
        {
            // SAFETY: `raw` is valid and used only through `extack` here.
            let extack = unsafe { ExtAck::from_raw_in(&raw mut *raw, &m) };
            assert_eq!(attr.parse_nested(&policy, &extack).err(), Some(EINVAL));
        }
        // SAFETY: only `extack` wrote to `raw`, and nothing does now.
        let msg = unsafe { msg_at(&raw const *raw) };
        assert_eq!(
            msg.map(|m| m.to_bytes()),
            Some(&b"NLA_F_NESTED is missing"[..])
        );
        assert_eq!(raw.bad_attr, attr.as_raw());
        Ok(())
    }

    #[test]
    fn policy_violation_and_missing_member_are_reported() -> Result {
        // A u32 attribute with a 2-byte payload fails strict validation.
        let mut inner = KVec::new();
        put(&mut inner, 1, &[1, 2])?;
        let mut m = KVec::new();
        nest(&mut m, 6, &inner)?;
        let attr = Attrs::new(&m).next().ok_or(EINVAL)?;
        // SAFETY: a well-formed table of NLA_U32 entries.
        let policy = unsafe { Policy::new(&QUEUE_POLICY.0) };
        let mut raw = zeroed_extack()?;
        {
            // SAFETY: `raw` is valid and used only through `extack` here.
            let extack = unsafe { ExtAck::from_raw_in(&raw mut *raw, &m) };
            assert_eq!(attr.parse_nested(&policy, &extack).err(), Some(EINVAL));
        }
        // SAFETY: only `extack` wrote to `raw`, and nothing does now.
        let msg = unsafe { msg_at(&raw const *raw) };
        assert_eq!(
            msg.map(|m| m.to_bytes()),
            Some(&b"invalid attribute length"[..])
        );
        let bad = Attrs::new(attr.payload()).next().ok_or(EINVAL)?;
        assert_eq!(raw.bad_attr, bad.as_raw());

        // A nest lacking a member it needs.
        let mut inner = KVec::new();
        put(&mut inner, 2, &0u32.to_ne_bytes())?;
        let mut m = KVec::new();
        nest(&mut m, 6, &inner)?;
        let attr = Attrs::new(&m).next().ok_or(EINVAL)?;
        let mut raw = zeroed_extack()?;
        {
            // SAFETY: `raw` is valid and used only through `extack` here.
            let extack = unsafe { ExtAck::from_raw_in(&raw mut *raw, &m) };
            let tb = attr.parse_nested(&policy, &extack)?;
            assert_eq!(tb.require(1, &attr, &extack).err(), Some(EINVAL));
        }
        assert_eq!(raw.miss_type, 1);
        assert_eq!(raw.miss_nest, attr.as_raw());
        Ok(())
    }

    #[test]
    fn formatted_message_fits() -> Result {
        let mut raw = zeroed_extack()?;
        {
            // SAFETY: `raw` is valid and used only through `extack` here.
            let extack = unsafe { ExtAck::from_raw(&raw mut *raw) };
            extack.set_msg_fmt(fmt!("DMA device mismatch between queue {} and {}", 3, 1));
        }
        // SAFETY: only `extack` wrote to `raw`, and nothing does now.
        let msg = unsafe { msg_at(&raw const *raw) };
        assert_eq!(
            msg.map(|m| m.to_bytes()),
            Some(&b"DMA device mismatch between queue 3 and 1"[..])
        );
        assert_eq!(raw._msg, raw._msg_buf.as_ptr());
        Ok(())
    }

    #[test]
    fn long_formatted_message_is_cut_like_c() -> Result {
        let mut buf = ExtAckBuf::new(GFP_KERNEL)?;
        let addr: u64 = 0x1_0000_0800;
        buf.ext_ack().set_msg_fmt(fmt!(
            "dmabuf sg entry (addr={addr:#018x}, len={}) not aligned to niov size {}",
            4096,
            4096
        ));
        let msg = buf.msg().ok_or(EINVAL)?;
        assert_eq!(msg.to_bytes().len(), MAX_FMTMSG_LEN - 1);
        assert_eq!(
            msg.to_bytes(),
            &b"dmabuf sg entry (addr=0x0000000100000800, len=4096) not aligned to niov size 40"[..]
        );
        Ok(())
    }

    /// Reports into the extended ACK it is formatted for, as a `Display`
    /// implementation may.
    struct Reenters<'x, 'a>(&'x ExtAck<'a>);

    impl fmt::Display for Reenters<'_, '_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.set_msg(c"inner, static");
            self.0.set_msg_fmt(fmt!("inner, formatted {}", 1));
            f.write_str("outer")
        }
    }

    #[test]
    fn reentrant_display_keeps_the_outer_message() -> Result {
        let mut buf = ExtAckBuf::new(GFP_KERNEL)?;
        {
            let e = buf.ext_ack();
            e.set_msg_fmt(fmt!("{} message", Reenters(&e)));
        }
        assert_eq!(buf.msg().map(|m| m.to_bytes()), Some(&b"outer message"[..]));
        // A long one is also logged whole, which formats it again.
        {
            let e = buf.ext_ack();
            e.set_msg_fmt(fmt!("{} {:-<90}", Reenters(&e), ""));
        }
        let msg = buf.msg().ok_or(EINVAL)?.to_bytes();
        assert_eq!(msg.len(), MAX_FMTMSG_LEN - 1);
        assert!(msg.starts_with(b"outer ---"));
        Ok(())
    }

    #[test]
    fn null_extack_ignores_everything() {
        // SAFETY: null is allowed.
        let extack = unsafe { ExtAck::from_raw(ptr::null_mut()) };
        extack.set_msg(c"nobody hears this");
        extack.set_msg_fmt(fmt!("nor {}", "this"));
        extack.set_missing(None, 3);
    }

    #[test]
    fn buffer_reads_back_the_last_message() -> Result {
        let mut buf = ExtAckBuf::new(GFP_KERNEL)?;
        assert!(buf.msg().is_none());
        buf.ext_ack().set_msg(c"first");
        let first = buf.msg().ok_or(EINVAL)?.to_bytes().len();
        // A message made of the one read back, as the aliasing `ExtAck`
        // getter once allowed, now copies it out first.
        buf.ext_ack()
            .set_msg_fmt(fmt!("{} bytes, then a second", first));
        assert_eq!(
            buf.msg().map(|m| m.to_bytes()),
            Some(&b"5 bytes, then a second"[..])
        );
        Ok(())
    }

    #[test]
    fn request_attributes_and_missing_ones() -> Result {
        // nlmsghdr + genlmsghdr + attributes, as a request arrives.
        let mut m = KVec::new();
        m.extend_from_slice(&[0u8; 20], GFP_KERNEL)?;
        put(&mut m, 1, &4u32.to_ne_bytes())?;
        put(&mut m, 3, &0u32.to_ne_bytes())?;
        put(&mut m, 3, &1u32.to_ne_bytes())?;
        // CAST: a short message.
        let total = m.len() as u32;
        m[..4].copy_from_slice(&total.to_ne_bytes());
        let mut attrs = [ptr::null_mut::<bindings::nlattr>(); 4];
        // The first attribute of each type, as the core's parse leaves it.
        for a in Attrs::new(&m[20..]) {
            let slot = &mut attrs[usize::from(a.kind())];
            if slot.is_null() {
                *slot = a.as_raw().cast_mut();
            }
        }
        let mut raw_extack = zeroed_extack()?;
        // SAFETY: all-zero is a valid `genl_info` to fill in.
        let mut info: bindings::genl_info = unsafe { core::mem::zeroed() };
        info.nlhdr = m.as_ptr().cast();
        info.genlhdr = m[16..].as_ptr().cast_mut().cast();
        info.attrs = attrs.as_mut_ptr();
        info.extack = &raw mut *raw_extack;
        {
            // SAFETY: `info` describes the request in `m`, parsed for types
            // up to 3, and outlives `req`.
            let req = unsafe { Info::from_raw(&info, 3) };
            assert_eq!(req.require(1)?.read_u32(), Some(4));
            assert_eq!(req.attr(7).map(|a| a.kind()), None);
            let mut queues = req.all_attrs().of_kind(3);
            assert_eq!(queues.next().and_then(|a| a.read_u32()), Some(0));
            assert_eq!(queues.next().and_then(|a| a.read_u32()), Some(1));
            assert!(queues.next().is_none());
            assert_eq!(req.require(2).err(), Some(EINVAL));
        }
        assert_eq!(raw_extack.miss_type, 2);
        assert!(raw_extack.miss_nest.is_null());

        // An attribute of another buffer is not the request's: the message
        // is reported without pointing at it, which the core would warn of.
        let mut other = KVec::new();
        put(&mut other, 1, &4u32.to_ne_bytes())?;
        let stray = Attrs::new(&other).next().ok_or(EINVAL)?;
        {
            // SAFETY: as above.
            let req = unsafe { Info::from_raw(&info, 3) };
            req.extack().set_msg_attr(&stray, c"stray");
            req.extack().set_missing(Some(&stray), 1);
        }
        assert!(raw_extack.bad_attr.is_null());
        assert!(raw_extack.miss_nest.is_null());
        assert!(!raw_extack._msg.is_null());
        // Nor at the member of another buffer's nest that fails the policy,
        // which C points it at.
        let mut inner = KVec::new();
        put(&mut inner, 1, &[1, 2])?;
        let mut other = KVec::new();
        nest(&mut other, 6, &inner)?;
        // SAFETY: a well-formed table of NLA_U32 entries.
        let policy = unsafe { Policy::new(&QUEUE_POLICY.0) };
        {
            // SAFETY: as above.
            let req = unsafe { Info::from_raw(&info, 3) };
            let foreign = Attrs::new(&other).next().ok_or(EINVAL)?;
            let parsed = foreign.parse_nested(&policy, &req.extack());
            assert_eq!(parsed.err(), Some(EINVAL));
        }
        assert!(raw_extack.bad_attr.is_null());
        assert!(raw_extack.policy.is_null());
        {
            // SAFETY: as above.
            let req = unsafe { Info::from_raw(&info, 3) };
            let own = req.attr(1).ok_or(EINVAL)?;
            req.extack().set_msg_attr(&own, c"own");
        }
        assert_eq!(raw_extack.bad_attr, attrs[1].cast_const());
        Ok(())
    }
}
