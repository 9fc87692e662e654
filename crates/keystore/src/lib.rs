//! salt-keystore: the minion keys of a Salt master, in Salt's own `pki_dir` layout, shared
//! by the master daemon and `salt-key` so that the two can never disagree.
//!
//! # Layout (salt-wire-protocol.md §9.1, Salt's `salt/key.py`)
//!
//! ```text
//! pki_dir/            mode 0700 (0750 tolerated)
//!   minions/           accepted keys          KeyState::Accepted
//!   minions_pre/       pending ("Unaccepted") KeyState::Pending
//!   minions_rejected/  rejected keys          KeyState::Rejected
//!   minions_denied/    impostor keys          KeyState::Denied
//!   minions_autosign/  one-shot autosign stubs
//! ```
//!
//! One file per minion, named by the minion id, holding its PEM public key (written with
//! mode 0644, see [`KEY_FILE_MODE`]). Names starting with `.` are ignored everywhere (Salt
//! keeps `.key_cache` there; our temp files are dotfiles too).
//!
//! # What this crate does not do
//!
//! It does not parse RSA keys (a light PEM check stands behind the replaceable
//! [`KeyValidator`]), fire Salt events, clear the master's minion cache, or talk to a
//! master. It does not decide auth: the master reads [`KeyStore::state`] and follows
//! Salt's decision order itself.
//!
//! # Crash safety
//!
//! Invariant: at every instant, every minion id is in **at most one** of the exclusive
//! states (accepted, pending, rejected), and a listed key file is always complete. Denied
//! is a side record that may coexist with one of them, as in Salt.
//!
//! * A state change (accept, reject) is one `rename(2)` from one key directory to another
//!   inside `pki_dir` (same file system). `rename` is atomic: at any instant, and after a
//!   crash at any point, the file has either its old name or its new one, never both or
//!   neither. Bulk changes are a sequence of such renames (`renameat(2)` between the two
//!   directories, opened once per batch); a crash in the middle leaves a prefix done and
//!   the rest untouched, each key in exactly one state. Both directories are fsync-ed
//!   afterwards so the change survives power loss.
//! * Deleting is one `unlink(2)` per state file (accepted first, to revoke access first).
//! * New content is written to a dot-prefixed temp file in the destination directory,
//!   fsync-ed, chmod-ed, then renamed over the final name, then the directory is fsync-ed.
//!   Before the rename, nothing visible changed (the temp file is ignored by every
//!   reader, and swept at the next open when older than an hour); after it, the complete
//!   file is there.
//! * Writing a key for an id that is currently in another exclusive state (e.g. the master
//!   auto-accepting a pending minion) never creates a second file: the new text goes to a
//!   temp file in the target directory, the existing file is renamed into the target
//!   state, then the temp file replaces it. A crash before the first rename leaves the id
//!   in its old state; between the renames, in its new state with its old text; never in
//!   two states. This holds even when another process moves the same id concurrently.
//! * `put_pending` refuses ids that are accepted or rejected; a racing writer could still
//!   make a pending file appear next to a just-accepted one (only if `salt-key` accepts an
//!   id in the instant the master first records it); the master's auth order (rejected,
//!   then accepted, then pending) makes such a leftover harmless.
//!
//! The unit tests simulate a crash between each of these steps and check the invariant.
//!
//! # Concurrency
//!
//! A master and `salt-key` (or two threads) may work on the same directory at once: every
//! change is a single atomic system call; a file that vanishes under an operation (another
//! process moved or deleted it) is treated as "not found", never as an error or a panic.
//! Within one process, mutations are serialised by the `KeyStore` so its index follows the
//! file system exactly.
//!
//! # The AES dropfile
//!
//! [`write_dropfile`] / [`take_dropfile`] implement Salt's rotation request
//! (`{cachedir}/.dfn`), see [`dropfile`].
// `deny`, not `forbid`: the one exception is the read-only map of Salt's mmap_key index
// (`mmap::table::map`), see docs/decisions.md.
#![deny(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod changes;
pub mod dropfile;
mod error;
mod fsutil;
mod glob;
mod id;
mod mmap;
mod pem;
mod store;

pub use changes::KeyChanges;
pub use dropfile::{DropfileCheck, check_dropfile, clear_dropfile, take_dropfile, write_dropfile};
pub use error::{KeyStoreError, Result};
pub use fsutil::create_linked;
pub use glob::{GlobList, fnmatch};
pub use id::validate_id;
pub use mmap::Geometry as MmapGeometry;
pub use pem::{KeyValidator, PemArmorValidator};
/// Salt's `hash_type` for key fingerprints: `salt_pki::HashType`.
pub use salt_pki::HashType as FingerprintHash;
/// Salt's `pem_finger` of key text (`salt-key -f` format: lowercase hex pairs joined by `:`).
pub use salt_pki::pem_finger;
pub use store::{
    AUTOSIGN_DIR, AcceptFrom, DeferredDone, KEY_FILE_MODE, KeyState, KeyStore, OpenOptions,
    PKI_DIR_MODE, RejectFrom, Report,
};

#[cfg(test)]
mod tests;
