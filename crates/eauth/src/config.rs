//! The master options the engine reads, typed, with Salt's defaults
//! (`salt/config/__init__.py` `DEFAULT_MASTER_OPTS`).
//!
//! Read from the master's options as a msgpack-shaped [`Value`] map (the YAML as Salt loads
//! it), every problem reported, then one failure ([`ConfigError`] list). Options of Salt's
//! that this engine does not implement are refused by name when they would change who may
//! do what (fail closed): `eauth_acl_module`, `auth.enable_expanded_auth_matching`, an
//! `eauth_tokens` other than `localfs` or our `postgres` (a master group's), an `external_auth` backend other than `pam`, `file`,
//! `auto`, `sharedsecret`.

use std::path::PathBuf;

use rmpv::Value;
use salt_proto::ValueExt;
use zeroize::Zeroizing;

use crate::acl::{AclEntry, AuthList};

/// Salt's `token_expire` default: 12 hours.
pub const DEFAULT_TOKEN_EXPIRE: f64 = 43200.0;
/// Salt's `auth.pam.service` default.
pub const DEFAULT_PAM_SERVICE: &str = "login";
/// Salt's `hash_type` default (3007: `DEFAULT_HASH_TYPE`).
pub const DEFAULT_HASH_TYPE: &str = "sha256";

/// An `external_auth` backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// `auto`: every password is right. Salt's own test backend; never for production.
    Auto,
    /// `file`: `^filename` of type `^filetype` (`text`, `htpasswd`, `htdigest`).
    File,
    /// `pam`: the system's PAM stack, service `auth.pam.service`.
    Pam,
    /// `sharedsecret`: the password must be the `sharedsecret` option.
    SharedSecret,
}

impl Backend {
    /// The backend of an `eauth` name, if implemented.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "auto" => Self::Auto,
            "file" => Self::File,
            "pam" => Self::Pam,
            "sharedsecret" => Self::SharedSecret,
            _ => return None,
        })
    }

    /// Salt's name of the backend.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::File => "file",
            Self::Pam => "pam",
            Self::SharedSecret => "sharedsecret",
        }
    }

    /// Whether the backend has Salt's `groups()` (only `pam` of these).
    pub fn has_groups(self) -> bool {
        matches!(self, Self::Pam)
    }
}

/// One backend's section of `external_auth`.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendConfig {
    /// The backend.
    pub backend: Backend,
    /// User, `group%` and regex keys with their auth lists, in config order.
    pub users: Vec<(String, AuthList)>,
    /// The `^option` keys (without the `^`), as given.
    pub options: Vec<(String, Value)>,
}

impl BackendConfig {
    /// A `^option` value.
    pub fn option(&self, name: &str) -> Option<&Value> {
        self.options
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
}

/// `eauth_tokens`: where tokens are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenBackend {
    /// Salt's `localfs`: files in `cachedir/tokens`.
    LocalFs,
    /// salt-rs's `postgres`: the master group's database, so a token made on one master
    /// works on every master (Salt's shared store is `rediscluster`).
    Postgres,
}

/// `token_expire_user_override`.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ExpireOverride {
    /// `False`: nobody sets their own `token_expire`.
    #[default]
    Nobody,
    /// `True`: everybody may.
    Everybody,
    /// `{eauth: [users]}`.
    Users(Vec<(String, Vec<String>)>),
}

/// `publisher_acl_blacklist`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Blacklist {
    /// User expressions.
    pub users: Vec<String>,
    /// Function expressions.
    pub modules: Vec<String>,
}

/// Everything the engine reads from the master's options.
#[derive(Clone, Debug)]
pub struct EauthConfig {
    /// `external_auth`, in config order.
    pub external_auth: Vec<BackendConfig>,
    /// `token_expire` (seconds).
    pub token_expire: f64,
    /// `token_expire_user_override`.
    pub token_expire_user_override: ExpireOverride,
    /// `keep_acl_in_token`.
    pub keep_acl_in_token: bool,
    /// `permissive_acl`.
    pub permissive_acl: bool,
    /// `publisher_acl`: user expression -> auth list.
    pub publisher_acl: Vec<(String, AuthList)>,
    /// `publisher_acl_blacklist`.
    pub publisher_acl_blacklist: Blacklist,
    /// `sudo_acl`.
    pub sudo_acl: bool,
    /// `sharedsecret` (held zeroized).
    pub sharedsecret: Option<Zeroizing<String>>,
    /// `auth.pam.service`.
    pub pam_service: String,
    /// `hash_type`: the digest whose hex is a token.
    pub hash_type: String,
    /// `token_dir` (`cachedir/tokens`, Salt forces it there).
    pub token_dir: PathBuf,
    /// `user`: the user the master runs as.
    pub user: String,
    /// `eauth_tokens` as written; unset: `postgres` in a master group (`cluster_id`),
    /// else `localfs` (decided where the group is known: `salt_pgstore::token_store`).
    pub eauth_tokens: Option<TokenBackend>,
}

/// A master option this engine cannot honour, or a value of the wrong shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// An option or value of Salt's that is not implemented; it would change who may do what.
    #[error("{option}: {what} is not implemented (refused rather than ignored)")]
    NotImplemented {
        /// The option.
        option: String,
        /// What of it.
        what: String,
    },
    /// A value of the wrong type.
    #[error("{option}: expected {expected}")]
    WrongType {
        /// The option.
        option: String,
        /// What it should be.
        expected: &'static str,
    },
}

impl EauthConfig {
    /// The configuration of a master with no `external_auth` and Salt's defaults.
    pub fn new(cachedir: PathBuf) -> Self {
        Self {
            external_auth: Vec::new(),
            token_expire: DEFAULT_TOKEN_EXPIRE,
            token_expire_user_override: ExpireOverride::Nobody,
            keep_acl_in_token: false,
            permissive_acl: false,
            publisher_acl: Vec::new(),
            publisher_acl_blacklist: Blacklist::default(),
            sudo_acl: false,
            sharedsecret: None,
            pam_service: DEFAULT_PAM_SERVICE.to_owned(),
            hash_type: DEFAULT_HASH_TYPE.to_owned(),
            token_dir: cachedir.join("tokens"),
            user: "root".to_owned(),
            eauth_tokens: None,
        }
    }

    /// Read the options map; `cachedir` is the master's (already resolved).
    pub fn from_opts(opts: &Value, cachedir: PathBuf) -> Result<Self, Vec<ConfigError>> {
        let mut errors = Vec::new();
        let mut cfg = Self::new(cachedir);
        let wrong = |option: &str, expected| ConfigError::WrongType {
            option: option.to_owned(),
            expected,
        };
        let refuse = |option: &str, what: String| ConfigError::NotImplemented {
            option: option.to_owned(),
            what,
        };
        let present = |k: &str| opts.get(k).filter(|v| !v.is_nil());

        if let Some(ea) = present("external_auth") {
            match ea.as_entries() {
                Some(entries) => {
                    for (name, section) in entries {
                        let name = name.as_text().unwrap_or("<non-text>");
                        match Backend::from_name(name) {
                            Some(backend) => {
                                cfg.external_auth
                                    .push(read_backend(backend, section, &mut errors))
                            }
                            None => errors.push(refuse(
                                "external_auth",
                                format!("the eauth backend '{name}'"),
                            )),
                        }
                    }
                }
                None => errors.push(wrong("external_auth", "a map")),
            }
        }
        if let Some(v) = present("token_expire") {
            match v.as_number() {
                Some(n) => cfg.token_expire = n,
                None => errors.push(wrong("token_expire", "a number")),
            }
        }
        match present("token_expire_user_override") {
            None | Some(Value::Boolean(false)) => {}
            Some(Value::Boolean(true)) => {
                cfg.token_expire_user_override = ExpireOverride::Everybody
            }
            Some(Value::Map(kv)) => {
                cfg.token_expire_user_override = ExpireOverride::Users(
                    kv.iter()
                        .filter_map(|(k, v)| Some((k.as_text()?.to_owned(), texts(v))))
                        .collect(),
                )
            }
            Some(_) => errors.push(wrong("token_expire_user_override", "a boolean or a map")),
        }
        for (key, slot) in [
            ("keep_acl_in_token", &mut cfg.keep_acl_in_token),
            ("permissive_acl", &mut cfg.permissive_acl),
            ("sudo_acl", &mut cfg.sudo_acl),
        ] {
            match present(key) {
                None => {}
                Some(Value::Boolean(b)) => *slot = *b,
                Some(_) => errors.push(wrong(key, "a boolean")),
            }
        }
        if let Some(v) = present("publisher_acl") {
            match v.as_entries() {
                Some(kv) => {
                    for (k, v) in kv {
                        let Some(k) = k.as_text() else { continue };
                        let list = acl_list(v, &format!("publisher_acl:{k}"), &mut errors);
                        cfg.publisher_acl.push((k.to_owned(), list));
                    }
                }
                None => errors.push(wrong("publisher_acl", "a map")),
            }
        }
        if let Some(v) = present("publisher_acl_blacklist") {
            match v.as_entries() {
                Some(_) => {
                    cfg.publisher_acl_blacklist = Blacklist {
                        users: v.get("users").map(texts).unwrap_or_default(),
                        modules: v.get("modules").map(texts).unwrap_or_default(),
                    }
                }
                None => errors.push(wrong("publisher_acl_blacklist", "a map")),
            }
        }
        if let Some(v) = present("sharedsecret") {
            match v.as_text() {
                Some(s) => cfg.sharedsecret = Some(Zeroizing::new(s.to_owned())),
                None => errors.push(wrong("sharedsecret", "text")),
            }
        }
        for (key, slot) in [
            ("auth.pam.service", &mut cfg.pam_service),
            ("hash_type", &mut cfg.hash_type),
            ("user", &mut cfg.user),
        ] {
            if let Some(v) = present(key) {
                match v.as_text() {
                    Some(s) => *slot = s.to_owned(),
                    None => errors.push(wrong(key, "text")),
                }
            }
        }
        if crate::token::digest_len(&cfg.hash_type).is_none() {
            errors.push(refuse("hash_type", format!("'{}'", cfg.hash_type)));
        }
        if let Some(v) = present("eauth_acl_module").filter(|v| v.is_truthy()) {
            errors.push(refuse(
                "eauth_acl_module",
                format!("'{}'", v.as_text().unwrap_or("<non-text>")),
            ));
        }
        if present("auth.enable_expanded_auth_matching").is_some_and(ValueExt::is_truthy) {
            errors.push(refuse("auth.enable_expanded_auth_matching", "True".into()));
        }
        if let Some(v) = present("eauth_tokens") {
            match v.as_text() {
                Some("localfs") => cfg.eauth_tokens = Some(TokenBackend::LocalFs),
                Some("postgres") => cfg.eauth_tokens = Some(TokenBackend::Postgres),
                other => errors.push(refuse(
                    "eauth_tokens",
                    format!("'{}'", other.unwrap_or("<non-text>")),
                )),
            }
        }
        if errors.is_empty() {
            if cfg.backend(Backend::Auto).is_some() {
                tracing::warn!(
                    "external_auth 'auto' accepts every password: Salt's test backend, not for production"
                );
            }
            Ok(cfg)
        } else {
            Err(errors)
        }
    }

    /// The section of `backend`, if `external_auth` enables it.
    pub fn backend(&self, backend: Backend) -> Option<&BackendConfig> {
        self.external_auth.iter().find(|b| b.backend == backend)
    }

    /// The section of an `eauth` name from a load, if enabled.
    pub fn backend_named(&self, name: &str) -> Option<&BackendConfig> {
        Backend::from_name(name).and_then(|b| self.backend(b))
    }
}

fn read_backend(backend: Backend, section: &Value, errors: &mut Vec<ConfigError>) -> BackendConfig {
    let mut users = Vec::new();
    let mut options = Vec::new();
    for (k, v) in section.as_entries().unwrap_or_default() {
        let Some(k) = k.as_text() else { continue };
        match k.strip_prefix('^') {
            Some(opt) => options.push((opt.to_owned(), v.clone())),
            None => users.push((
                k.to_owned(),
                acl_list(v, &format!("external_auth:{}:{k}", backend.name()), errors),
            )),
        }
    }
    BackendConfig {
        backend,
        users,
        options,
    }
}

/// An auth list. Anything but a list is refused: Salt would `list.extend` a string into its
/// characters (`'.*'` becomes the entries `.` and `*`, and `.` allows every function).
fn acl_list(v: &Value, option: &str, errors: &mut Vec<ConfigError>) -> AuthList {
    if v.as_items().is_none() {
        errors.push(ConfigError::WrongType {
            option: option.to_owned(),
            expected: "a list",
        });
    }
    AclEntry::list(v)
}

fn texts(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_text().map(str::to_owned))
            .collect(),
        other => other
            .as_text()
            .map(|s| vec![s.to_owned()])
            .unwrap_or_default(),
    }
}
