//! salt-master-core: the master daemon's services.
//!
//! Layout:
//! * [`target`]: which accepted ids a target expression names (fnmatch / pcre / list).
//! * [`acl`]: `publisher_acl` / `publisher_acl_blacklist` for non-root local callers.
//! * [`jid`]: Salt-formatted, strictly increasing job ids.
//! * [`local`]: the `salt` ↔ master protocol on the local Unix socket.
//! * [`output`]: outputters used by the `salt` command.
//! * [`convert`]: msgpack ↔ JSON values.
#![forbid(unsafe_code)]

pub mod acl;
pub mod convert;
pub mod jid;
pub mod local;
pub mod output;
pub mod target;
