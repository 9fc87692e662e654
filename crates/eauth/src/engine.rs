//! [`Eauth`]: Salt's `LoadAuth` plus the ACL halves of `ClearFuncs`, one value shared by
//! every entry point (our `salt` CLI, the clear commands on 4506, the HTTP API).
//!
//! Method groups, in the order a request uses them:
//! * authentication: [`Eauth::check_authentication`] (token, eauth or root/user key), built
//!   on [`Eauth::authenticate_eauth`] (timing-levelled as Salt's `time_auth`),
//!   [`Eauth::authenticate_token`] and [`Eauth::authenticate_key`];
//! * authorisation: [`Eauth::authorize_call`] (runner, wheel) and
//!   [`Eauth::authorize_publish`] (publish: blacklist, then auth list; `engine/publish.rs`),
//!   [`Eauth::authorize_local_publish`] (the same for a caller known by its OS credentials);
//! * tokens: [`Eauth::mk_token`], [`Eauth::get_tok`], [`Eauth::rm_token`].
//!
//! Calls block (PAM, file reads, the failure delay): an async caller runs them on a
//! blocking thread.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::Rng;
use rmpv::Value;
use salt_proto::clear::{AuthKind, EauthFields, MasterCall, Secret};

use crate::acl::{self, AuthList, SpecVerdict};
use crate::backend;
use crate::config::{EauthConfig, ExpireOverride};
use crate::error::Refusal;
use crate::pyre::expr_match;
use crate::token::{StoreError, TokenData, TokenStore};

mod publish;

/// Who a request authenticated as, and what they may do.
#[derive(Clone, Debug, PartialEq)]
pub struct Authenticated {
    /// How.
    pub kind: AuthKind,
    /// The user (`username` of the load, the token's `name`, or the key's user).
    pub username: String,
    /// The auth list (`None`: Salt's `None`, which allows nothing).
    pub auth_list: Option<AuthList>,
}

/// The outcome of [`Eauth::authenticate_key`] (Salt returns `True`, `False` or a name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyAuth {
    /// Wrong or missing key.
    Denied,
    /// The master's own (root) key: everything allowed.
    Root,
    /// A per-user key (or `sudo_<name>`): `publisher_acl` of that user applies.
    User(String),
}

/// The engine.
pub struct Eauth {
    cfg: EauthConfig,
    store: Box<dyn TokenStore>,
    /// Salt's `max_fail`: the longest failed authentication seen, seconds (starts at 1).
    max_fail: Mutex<f64>,
}

impl std::fmt::Debug for Eauth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eauth").finish_non_exhaustive()
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Eauth {
    /// An engine over `cfg`, keeping tokens in `store`.
    pub fn new(cfg: EauthConfig, store: Box<dyn TokenStore>) -> Self {
        Self {
            cfg,
            store,
            max_fail: Mutex::new(1.0),
        }
    }

    /// An engine keeping tokens as Salt 3006/3007 do (`localfs` in `token_dir`).
    pub fn with_localfs(cfg: EauthConfig) -> Self {
        let store = crate::token::LocalFsStore::new(cfg.token_dir.clone(), &cfg.hash_type);
        Self::new(cfg, Box::new(store))
    }

    /// The configuration.
    pub fn config(&self) -> &EauthConfig {
        &self.cfg
    }

    // === authentication ===

    /// `LoadAuth.authenticate_eauth`: the backend named by `eauth` is enabled and accepts
    /// `username`/`password`. A failure takes as long as the slowest failure seen (±25%).
    pub fn authenticate_eauth(&self, f: &EauthFields) -> bool {
        let Some(eauth) = f.eauth.as_deref() else {
            tracing::warn!("Authentication failure of type \"eauth\" occurred.");
            return false;
        };
        if self.cfg.backend_named(eauth).is_none() {
            tracing::warn!("The eauth system \"{eauth}\" is not enabled");
            tracing::warn!("Authentication failure of type \"eauth\" occurred.");
            return false;
        }
        if !self.time_auth(f) {
            tracing::warn!("Authentication failure of type \"eauth\" occurred.");
            return false;
        }
        true
    }

    /// `time_auth`: make every failure last about as long.
    fn time_auth(&self, f: &EauthFields) -> bool {
        let start = Instant::now();
        if self.auth_call(f) {
            return true;
        }
        let elapsed = start.elapsed().as_secs_f64();
        let max_fail = {
            let mut m = self.max_fail.lock().unwrap_or_else(|p| p.into_inner());
            if elapsed > *m {
                *m = elapsed;
            }
            *m
        };
        let deviation = max_fail / 4.0;
        let target = rand::rngs::OsRng.gen_range((max_fail - deviation)..=(max_fail + deviation));
        let target = Duration::from_secs_f64(target.max(0.0));
        if let Some(left) = target.checked_sub(start.elapsed()) {
            std::thread::sleep(left);
        }
        false
    }

    /// `__auth_call`: the backend's `auth(username, password)`; a missing argument fails.
    fn auth_call(&self, f: &EauthFields) -> bool {
        let (Some(eauth), Some(username), Some(password)) = (
            f.eauth.as_deref(),
            f.username.as_deref(),
            f.password.as_ref(),
        ) else {
            tracing::debug!(
                "Authentication request for eauth '{}' is missing required arguments",
                f.eauth.as_deref().unwrap_or_default()
            );
            return false;
        };
        match self.cfg.backend_named(eauth) {
            Some(section) => backend::authenticate(&self.cfg, section, username, password.expose()),
            None => false,
        }
    }

    /// `LoadAuth.authenticate_token`: the token's data, if valid and its backend enabled.
    pub fn authenticate_token(&self, token: &Secret) -> Option<TokenData> {
        let tdata = self.get_tok(token.expose());
        match tdata {
            Some(t) if self.cfg.backend_named(&t.eauth).is_some() => Some(t),
            _ => {
                tracing::warn!("Authentication failure of type \"token\" occurred.");
                None
            }
        }
    }

    /// `LoadAuth.authenticate_key`: `key` against the master's access keys (`keys`: user ->
    /// key, as `salt.daemons.masterapi.access_keys`), compared in constant time.
    /// `running_user` is the user the master process runs as.
    pub fn authenticate_key(
        &self,
        user: Option<&str>,
        key: Option<&Secret>,
        keys: &[(String, Secret)],
        running_user: &str,
    ) -> KeyAuth {
        const MSG: &str = "Authentication failure of type \"user\" occurred.";
        let Some(key) = key else {
            tracing::warn!("{MSG}");
            return KeyAuth::Denied;
        };
        let any = || keys.iter().any(|(_, k)| secret_eq(k, key));
        let of = |name: &str| keys.iter().find(|(u, _)| u == name).map(|(_, k)| k);
        let matches_of = |name: &str| of(name).is_some_and(|k| secret_eq(k, key));
        let Some(user) = user else {
            if any() {
                return KeyAuth::Root;
            }
            tracing::warn!("{MSG}");
            return KeyAuth::Denied;
        };
        if let Some(name) = user.strip_prefix("sudo_") {
            return if any() {
                KeyAuth::User(name.to_owned())
            } else {
                KeyAuth::Denied
            };
        }
        if user == self.cfg.user || user == "root" {
            if any() {
                return KeyAuth::Root;
            }
            tracing::warn!(
                "Master runs as '{}', but user in payload is '{user}'",
                self.cfg.user
            );
            tracing::warn!("{MSG}");
            return KeyAuth::Denied;
        }
        if user == running_user {
            if !matches_of(user) {
                tracing::warn!("{MSG}");
                return KeyAuth::Denied;
            }
            return KeyAuth::Root;
        }
        if matches_of("root") || matches_of("salt") {
            return KeyAuth::Root;
        }
        if of(user).is_some() {
            if !matches_of(user) {
                tracing::warn!("{MSG}");
                return KeyAuth::Denied;
            }
            return KeyAuth::User(user.to_owned());
        }
        tracing::warn!("{MSG}");
        KeyAuth::Denied
    }

    /// `LoadAuth.check_authentication(load, auth_type, key)`: who the caller is and their
    /// auth list, or Salt's refusal. `user`/`key`/`keys` matter for [`AuthKind::User`] only.
    pub fn check_authentication(
        &self,
        f: &EauthFields,
        user: Option<&str>,
        key: Option<&Secret>,
        keys: &[(String, Secret)],
    ) -> Result<Authenticated, Refusal> {
        let username = f.username.clone().unwrap_or_else(|| "UNKNOWN".to_owned());
        let kind = f.kind();
        let refuse = |username: String| Refusal::Authentication {
            kind,
            username,
            show_username: false,
        };
        match kind {
            AuthKind::Token => {
                let token = f.token.as_ref().ok_or_else(|| refuse(username.clone()))?;
                let tdata = self
                    .authenticate_token(token)
                    .ok_or_else(|| refuse(username.clone()))?;
                let auth_list = self.get_auth_list(f, Some(&tdata));
                Ok(Authenticated {
                    kind,
                    username: tdata.name.clone(),
                    auth_list,
                })
            }
            AuthKind::Eauth => {
                if !self.authenticate_eauth(f) {
                    return Err(refuse(username));
                }
                let auth_list = self.get_auth_list(f, None);
                Ok(Authenticated {
                    kind,
                    username,
                    auth_list,
                })
            }
            AuthKind::User => {
                let ret = self.authenticate_key(user, key, keys, &self.cfg.user);
                self.key_user_acl(ret, user, username)
            }
        }
    }

    /// The rest of `check_authentication` for a caller known by key (or, for our local
    /// socket, by its OS credentials): under `sudo_<name>` without `sudo_acl` (or without a
    /// `publisher_acl`) the caller is root; a user's auth list is their `publisher_acl`
    /// entries, and none is Salt's authentication refusal. An empty list means root.
    fn key_user_acl(
        &self,
        mut ret: KeyAuth,
        user: Option<&str>,
        username: String,
    ) -> Result<Authenticated, Refusal> {
        let refuse = |username: String| Refusal::Authentication {
            kind: AuthKind::User,
            username,
            show_username: false,
        };
        if ret == KeyAuth::Denied {
            return Err(refuse(username));
        }
        if let KeyAuth::User(_) = ret
            && user.is_some_and(|u| u.starts_with("sudo_"))
            && (!self.cfg.sudo_acl || self.cfg.publisher_acl.is_empty())
        {
            ret = KeyAuth::Root;
        }
        let mut auth_list = Vec::new();
        if let KeyAuth::User(name) = &ret {
            auth_list = self
                .cfg
                .publisher_acl
                .iter()
                .filter(|(expr, _)| expr_match(name, expr))
                .flat_map(|(_, entries)| entries.iter().cloned())
                .collect();
            if auth_list.is_empty() {
                return Err(refuse(username));
            }
        }
        Ok(Authenticated {
            kind: AuthKind::User,
            username,
            auth_list: Some(auth_list),
        })
    }

    /// `LoadAuth.get_auth_list`: from the token (`keep_acl_in_token`), else from
    /// `external_auth` for the user and their groups. `None` is Salt's `None`.
    pub fn get_auth_list(&self, f: &EauthFields, token: Option<&TokenData>) -> Option<AuthList> {
        if let Some(t) = token
            && self.cfg.keep_acl_in_token
            && let Some(acl) = &t.auth_list
        {
            // None of our backends has `acl()`, so Salt stored `None` here; a list written
            // by another master is read as such.
            return match acl {
                Value::Array(_) => Some(acl::AclEntry::list(acl)),
                _ => None,
            };
        }
        let eauth = match token {
            Some(t) => t.eauth.as_str(),
            None => f.eauth.as_deref().unwrap_or_default(),
        };
        let Some(section) = self.cfg.backend_named(eauth) else {
            tracing::debug!("The eauth system \"{eauth}\" is not enabled");
            tracing::warn!("Authorization failure occurred.");
            return None;
        };
        let (name, groups) = match token {
            Some(t) => (t.name.clone(), t.groups.clone().unwrap_or_default()),
            None => {
                let name = f.username.clone().unwrap_or_default();
                let groups = backend::groups(section.backend, &name).unwrap_or_default();
                (name, groups)
            }
        };
        if section.users.is_empty() {
            tracing::debug!("eauth \"{eauth}\" configuration is empty");
        }
        Some(acl::fill_auth_list(
            &section.users,
            &name,
            &groups,
            self.cfg.permissive_acl,
        ))
    }

    // === authorisation ===

    /// `ClearFuncs.runner` / `wheel` up to "Do the job": authenticate, then (but for a
    /// root-key caller) `runner_check`/`wheel_check` over the call's `kwarg`. `form` is
    /// `"runner"` or `"wheel"`. Returns the user the job runs as.
    pub fn authorize_call(
        &self,
        call: &MasterCall,
        form: &str,
        keys: &[(String, Secret)],
    ) -> Result<String, Refusal> {
        let auth =
            self.check_authentication(&call.auth, call.user.as_deref(), call.key.as_ref(), keys)?;
        if auth.kind == AuthKind::User {
            return Ok(match call.user.as_deref() {
                Some(u) if u.starts_with("sudo_") => self.cfg.user.clone(),
                Some(u) => u.to_owned(),
                None => self.cfg.user.clone(),
            });
        }
        let list = auth.auth_list.unwrap_or_default();
        match acl::spec_check(&list, &call.fun, &call.kwarg, form) {
            SpecVerdict::Allowed => Ok(auth.username),
            SpecVerdict::BadSyntax => Err(Refusal::Syntax),
            SpecVerdict::Denied => {
                tracing::warn!(
                    "Authentication failure of type \"{}\" occurred for user {}.",
                    auth.kind.name(),
                    auth.username
                );
                Err(Refusal::Unauthorized {
                    kind: auth.kind,
                    username: auth.username,
                })
            }
        }
    }

    // === tokens ===

    /// `LoadAuth.mk_token`: authenticate, then store a token. `None` is Salt's failure
    /// (`ClearFuncs.mk_token` answers `""`).
    pub fn mk_token(&self, f: &EauthFields) -> Option<TokenData> {
        if !self.authenticate_eauth(f) {
            tracing::warn!("Authentication failure of type \"eauth\" occurred.");
            return None;
        }
        let eauth = f.eauth.clone().unwrap_or_default();
        let name = f.username.clone().unwrap_or_default();
        let expire = match f.token_expire {
            Some(t) if self.allow_custom_expire(&eauth, &name) => t,
            _ => self.cfg.token_expire,
        };
        let start = now();
        let backend = self.cfg.backend_named(&eauth).map(|s| s.backend);
        let groups = backend
            .and_then(|b| backend::groups(b, &name))
            .filter(|g| !g.is_empty());
        let tdata = TokenData {
            start,
            expire: start + expire,
            name,
            eauth,
            auth_list: self.cfg.keep_acl_in_token.then_some(Value::Nil),
            groups,
            token: String::new(),
            extra: Vec::new(),
        };
        match self.store.mk_token(tdata) {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!("Authentication failure of type \"eauth\" occurred: {e}");
                None
            }
        }
    }

    fn allow_custom_expire(&self, eauth: &str, username: &str) -> bool {
        match &self.cfg.token_expire_user_override {
            ExpireOverride::Nobody => false,
            ExpireOverride::Everybody => true,
            ExpireOverride::Users(map) => map
                .iter()
                .any(|(e, users)| e == eauth && users.iter().any(|u| u == username)),
        }
    }

    /// `LoadAuth.get_tok`: the token's data while it is valid; an expired or unreadable
    /// token is removed and reads as none (Salt's `{}`).
    pub fn get_tok(&self, token: &str) -> Option<TokenData> {
        match self.store.get_token(token) {
            Ok(Some(t)) if t.expire < now() => {
                self.rm_token(token);
                None
            }
            Ok(t) => t,
            Err(StoreError::Corrupt) => {
                // Salt names the token here; a token is never logged.
                tracing::warn!("A token could not be deserialized; removing it from the store.");
                self.rm_token(token);
                None
            }
            Err(StoreError::Io(e)) => {
                tracing::warn!(
                    "Token store transient error reading a token ({e}); treating as not-authenticated for this request without removing the token from the store."
                );
                None
            }
        }
    }

    /// `LoadAuth.rm_token`.
    pub fn rm_token(&self, token: &str) {
        let _ = self.store.rm_token(token);
    }

    /// `salt.daemons.masterapi.clean_expired_tokens` (the master's maintenance loop): every
    /// expired or unreadable token is removed. Returns how many were removed.
    pub fn clean_expired_tokens(&self) -> usize {
        match self.store.clean_expired(now()) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!("clean_expired_tokens: {e}");
                0
            }
        }
    }

    /// `LoadAuth.list_tokens`.
    pub fn list_tokens(&self) -> Vec<String> {
        self.store.list_tokens().unwrap_or_default()
    }

    /// The reply of the clear `mk_token`: the token data, or `""`.
    pub fn mk_token_reply(&self, f: &EauthFields) -> Value {
        match self.mk_token(f) {
            Some(t) => t.to_value(),
            None => Value::from(""),
        }
    }

    /// The reply of the clear `get_token`: `False` without a token, `{}` for an invalid one.
    pub fn get_token_reply(&self, token: Option<&Secret>) -> Value {
        match token {
            None => Value::Boolean(false),
            Some(t) => match self.get_tok(t.expose()) {
                Some(t) => t.to_value(),
                None => Value::Map(Vec::new()),
            },
        }
    }
}

/// Constant-time equality of two secrets (length leaks, content does not).
fn secret_eq(a: &Secret, b: &Secret) -> bool {
    backend::ct_eq(a.expose().as_bytes(), b.expose().as_bytes())
}
