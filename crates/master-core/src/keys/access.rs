//! The access keys of local callers (`salt.daemons.masterapi.access_keys`): Salt's
//! `LocalClient` reads `cachedir/.<user>_key` (`.root_key` for root) and sends it with a
//! clear `publish`; the master compares it with what it wrote at start. Written as Salt
//! writes them: a fresh Crypticle key string (base64 of 56 random bytes) for the master's
//! `user`, the user running the master and every `publisher_acl` user, mode 0600, owned by
//! that user when the master may chown; a key file already there is kept (3007.17 reads it).
//! With `publisher_acl` or `external_auth` set, `cachedir` gets the world-execute bit so
//! those users can reach their file (Salt's fix for #65317).

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use salt_config::MasterConfig;
use salt_proto::clear::Secret;

/// The user the master process runs as (Salt's `salt.utils.user.get_user()`).
pub(crate) fn running_user() -> String {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map_or_else(|| "root".to_owned(), |u| u.name)
}

/// Prepare every access key (`user -> key`). Failures to write one are logged and that
/// user has no key (its callers then fall back to eauth, as Salt's `LocalClient` does).
pub(crate) fn access_keys(cfg: &MasterConfig) -> Vec<(String, Secret)> {
    let mut users: BTreeSet<String> = cfg.publisher_acl.keys().cloned().collect();
    users.insert(cfg.user.clone());
    users.insert(running_user());
    let external_auth = cfg
        .eauth_opts
        .get("external_auth")
        .is_some_and(|v| !v.is_null());
    if (!cfg.publisher_acl.is_empty() || external_auth)
        && let Ok(meta) = std::fs::metadata(&cfg.cachedir)
    {
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o001 == 0
            && let Err(e) = std::fs::set_permissions(
                &cfg.cachedir,
                std::fs::Permissions::from_mode(mode | 0o001),
            )
        {
            tracing::warn!(
                "Unable to set traversal permissions on cachedir {} for publisher_acl users: {e}",
                cfg.cachedir.display()
            );
        }
    }
    let mut keys = Vec::new();
    for user in users {
        tracing::info!("Preparing the {user} key for local communication");
        let keyfile = cfg.cachedir.join(format!(".{user}_key"));
        let key = match std::fs::read_to_string(&keyfile) {
            Ok(k) => Some(k),
            Err(_) => mk_key(&keyfile, &user),
        };
        if let Some(k) = key {
            keys.push((user, Secret::new(k)));
        }
    }
    keys
}

/// Salt's `mk_key`: a new key in `keyfile` (0600, chowned to `user`); `None` for a user the
/// system does not know (`client_acl_verify`, on by default) or a file that cannot be written.
fn mk_key(keyfile: &Path, user: &str) -> Option<String> {
    let uid = match nix::unistd::User::from_name(user) {
        Ok(Some(u)) => Some(u.uid),
        _ => return None,
    };
    let _ = std::fs::remove_file(keyfile);
    let key = salt_pki::generate_key_string();
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(keyfile)
        .and_then(|mut f| {
            f.write_all(key.as_bytes())?;
            f.set_permissions(std::fs::Permissions::from_mode(0o600))
        });
    if let Err(e) = written {
        tracing::error!("cannot write {}: {e}", keyfile.display());
        return None;
    }
    // Not run as root, the master cannot chown: the key stays the master user's (as Salt).
    let _ = nix::unistd::chown(keyfile, uid, None);
    Some(key.to_string())
}
