//! `salt-key`: manage the minion keys of a Salt master, with Salt 3007's options, prompts,
//! output and exit codes, over the shared [`salt_keystore`] layout so it works on a pki
//! directory used by our master or by Salt's.
//!
//! Differences from Salt, on purpose: operational errors (unreadable key files, a pki_dir
//! others can read, invalid key files on accept) exit 1 instead of 0, and accepting is
//! all-or-nothing when a selected key file is not an RSA public key.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod app;
pub mod cli;
pub mod error;
mod group;
pub mod progress;
pub mod validate;

pub use app::run;
