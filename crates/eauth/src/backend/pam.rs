//! Salt's `pam` eauth backend (`salt/auth/pam.py`) through the `pam-client` crate.
//!
//! As Salt's `_authenticate`: `pam_start(service, username)`, a conversation answering
//! hidden prompts with the password and visible prompts with the username (informational
//! messages need no answer), `pam_authenticate`, then `pam_acct_mgmt`; success only if both
//! succeed. Salt runs this in a subprocess of the system Python; we call libpam directly from
//! the caller's (blocking) thread. A master not running as root needs to read `/etc/shadow`
//! (Debian: the `shadow` group) for `unix_chkpwd` to check other users; the failure log says
//! so once, as Salt 3007.17's does (#64275).
//!
//! `groups()` is Salt's `salt.utils.user.get_group_list`: the names of `getgrouplist(user,
//! primary gid)`, sorted.

use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};

use nix::unistd::{Group, User, getgrouplist};
use pam_client::{ConversationHandler, ErrorCode, Flag};
use zeroize::Zeroizing;

static SHADOW_DIAGNOSTIC_LOGGED: AtomicBool = AtomicBool::new(false);

/// Answers PAM's prompts with the credentials; the password is wiped when this is dropped.
struct Credentials {
    username: Zeroizing<String>,
    password: Zeroizing<String>,
}

impl ConversationHandler for Credentials {
    fn prompt_echo_on(&mut self, _prompt: &CStr) -> Result<CString, ErrorCode> {
        CString::new(self.username.as_bytes()).map_err(|_| ErrorCode::CONV_ERR)
    }

    fn prompt_echo_off(&mut self, _prompt: &CStr) -> Result<CString, ErrorCode> {
        CString::new(self.password.as_bytes()).map_err(|_| ErrorCode::CONV_ERR)
    }

    fn text_info(&mut self, _msg: &CStr) {}

    fn error_msg(&mut self, _msg: &CStr) {}
}

/// `pam.auth(username, password)` against `service`.
pub(super) fn authenticate(service: &str, username: &str, password: &str) -> bool {
    let conv = Credentials {
        username: Zeroizing::new(username.to_owned()),
        password: Zeroizing::new(password.to_owned()),
    };
    let result = pam_client::Context::new(service, Some(username), conv).and_then(|mut ctx| {
        ctx.authenticate(Flag::NONE)?;
        ctx.acct_mgmt(Flag::NONE)
    });
    match result {
        Ok(()) => true,
        Err(e) => {
            tracing::error!("Pam auth failed for {username}: {e}");
            log_shadow_diagnostic_once(username);
            false
        }
    }
}

fn log_shadow_diagnostic_once(username: &str) {
    let euid = nix::unistd::geteuid();
    if euid.is_root() || nix::unistd::access("/etc/shadow", nix::unistd::AccessFlags::R_OK).is_ok()
    {
        return;
    }
    if SHADOW_DIAGNOSTIC_LOGGED.swap(true, Ordering::Relaxed) {
        return;
    }
    tracing::error!(
        "PAM authentication for {username:?} failed and process running as uid {euid} cannot read /etc/shadow, so PAM's unix_chkpwd helper will refuse to authenticate users other than the caller. Either run the salt-master as the 'root' user, or add the master's user to the 'shadow' group so it can read /etc/shadow (the latter works on Debian-derived distributions; on RPM-based distributions the master must run as root for PAM eauth to work). See https://github.com/saltstack/salt/issues/64275 for context."
    );
}

/// The sorted names of the system groups `username` belongs to (empty if unknown).
pub fn user_groups(username: &str) -> Vec<String> {
    let Ok(Some(user)) = User::from_name(username) else {
        return Vec::new();
    };
    let Ok(cname) = CString::new(username) else {
        return Vec::new();
    };
    let Ok(gids) = getgrouplist(&cname, user.gid) else {
        return Vec::new();
    };
    let mut names: Vec<String> = gids
        .into_iter()
        .filter_map(|gid| Group::from_gid(gid).ok().flatten().map(|g| g.name))
        .collect();
    names.sort();
    names.dedup();
    names
}
