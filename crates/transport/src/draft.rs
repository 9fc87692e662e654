//! libzmq's DRAFT socket options, which the `zmq` crate does not wrap.
//!
//! The vendored libzmq is built with `ZMQ_BUILD_DRAFT_API` (`.cargo/config.toml` passes the
//! define to the `cc` build of `zmq-sys`); without it libzmq answers `EINVAL` for these
//! options. The only `unsafe` of this crate: two FFI calls on a socket we own.
#![allow(unsafe_code)]

use std::os::raw::{c_int, c_void};

/// `ZMQ_IN_BATCH_SIZE` (zmq_draft.h): bytes read from a connection's TCP socket per call.
pub(crate) const ZMQ_IN_BATCH_SIZE: c_int = 101;
/// `ZMQ_OUT_BATCH_SIZE` (zmq_draft.h): bytes encoded per connection before a write.
pub(crate) const ZMQ_OUT_BATCH_SIZE: c_int = 102;

/// `zmq_setsockopt` of an `int` option.
pub(crate) fn set_int(sock: &mut zmq::Socket, option: c_int, value: i32) -> Result<(), zmq::Error> {
    let raw = sock.as_mut_ptr();
    let value: c_int = value;
    // SAFETY: `raw` is the live socket `sock` owns, borrowed mutably for the call (a socket
    // is only ever used by its one owning thread); libzmq reads `size_of::<c_int>()` bytes
    // from a pointer to a local that outlives the call.
    let rc = unsafe {
        zmq_sys::zmq_setsockopt(
            raw,
            option,
            (&raw const value).cast::<c_void>(),
            size_of::<c_int>(),
        )
    };
    if rc == 0 { Ok(()) } else { Err(last_error()) }
}

/// `zmq_getsockopt` of an `int` option.
#[cfg(test)]
pub(crate) fn get_int(sock: &mut zmq::Socket, option: c_int) -> Result<i32, zmq::Error> {
    let raw = sock.as_mut_ptr();
    let mut value: c_int = 0;
    let mut len = size_of::<c_int>();
    // SAFETY: as in `set_int`; libzmq writes at most `len` bytes to `value` and the new
    // length to `len`, both locals that outlive the call.
    let rc = unsafe {
        zmq_sys::zmq_getsockopt(raw, option, (&raw mut value).cast::<c_void>(), &raw mut len)
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(last_error())
    }
}

fn last_error() -> zmq::Error {
    // SAFETY: `zmq_errno` only reads the calling thread's errno.
    zmq::Error::from_raw(unsafe { zmq_sys::zmq_errno() })
}
