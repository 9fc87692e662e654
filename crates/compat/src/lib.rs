//! Python and Salt compatibility helpers, one copy each, for every crate of the workspace.
//!
//! A leaf crate (no workspace dependency): what Salt gets from Python's standard library or
//! from small `salt.utils` functions, written once so that the master, the minion, the key
//! store, the config loader and the CLIs agree to the byte.
//!
//! * [`fnmatch`]: `fnmatch.fnmatchcase` / `fnmatch.translate` (CPython 3.11);
//! * Python's `str()` and `repr()` ([`py_str`], [`py_repr`], [`py_json_str`],
//!   [`py_json_repr`], [`py_str_repr`], [`py_float_repr`]);
//! * [`time`]: proleptic Gregorian dates and `time.asctime`;
//! * [`id`]: `salt.utils.verify.valid_id` / `clean_path` (the one minion-id rule);
//! * [`json`]: JSON values to msgpack values and back, key order kept;
//! * [`map_get`]: `dict.get` on a decoded msgpack map;
//! * [`py_truthy`], [`py_truthy_json`]: Python's `bool(x)`;
//! * [`posixpath`]: `os.path.normpath`/`join`/`abspath` on text and Salt's
//!   `salt.utils.path.join`;
//! * [`par::par_chunks`]: work split over the CPUs (scoped threads);
//! * [`LOCALE_VARS`]: what `cmd.run` sets to `C` (Salt's `reset_system_locale`).

pub mod fnmatch;
pub mod id;
pub mod json;
mod map;
pub mod par;
pub mod posixpath;
mod repr;
pub mod time;
mod truth;

pub use fnmatch::fnmatch;
pub use id::valid_id;
pub use map::map_get;
pub use repr::{py_float_repr, py_json_repr, py_json_str, py_repr, py_str, py_str_repr};
pub use truth::{py_truthy, py_truthy_json};

/// The variables Salt's `cmd._run` sets to `C` unless the environment has them
/// (`reset_system_locale: True`, its default): Salt parses English output only.
#[rustfmt::skip]
pub const LOCALE_VARS: &[&str] = &[
    "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES", "LC_PAPER",
    "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION", "LANGUAGE",
];
