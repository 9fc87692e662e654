//! salt-eauth: Salt's external authentication, ACLs and eauth tokens, as one engine every
//! entry point uses (our `salt` CLI, Salt's clear commands on the request port, the HTTP API).
//!
//! What it does, each after Salt's own code:
//! * [`config`]: `external_auth` (backend -> user, `group%` or regex key -> auth list),
//!   `publisher_acl`, `publisher_acl_blacklist`, `sudo_acl`, `token_expire`,
//!   `token_expire_user_override`, `keep_acl_in_token`, `permissive_acl`, typed; what is not
//!   implemented is refused by name.
//! * [`acl`]: Salt's ACL grammar (`.*`, `mod.fun`, `{target: [funs]}`, `@runner`, `@wheel`,
//!   `@jobs`, `@module`, `args`/`kwargs` patterns) and `CkMinions`' checks (`auth_check`,
//!   `spec_check`, `fill_auth_list`).
//! * [`backend`]: `pam` (the system's PAM stack), `file` (text, htpasswd, htdigest), `auto`,
//!   `sharedsecret`.
//! * [`token`]: tokens as Salt's `localfs` `eauth_tokens` store writes them, behind a
//!   [`token::TokenStore`] trait.
//! * [`Eauth`] ([`engine`]): `LoadAuth` (`check_authentication`, `mk_token`, `get_tok`,
//!   `time_auth`) and the ACL steps of `ClearFuncs.publish`, `runner`, `wheel`.
//! * [`Refusal`] ([`error`]): every refusal, with one `wire()` giving Salt's reply.
//!
//! What it does not do: no sockets and no request parsing (the clear loads are read by
//! `salt_proto::clear`), no job running. Passwords are held in zeroizing types and never
//! logged. Calls block (PAM, the failure delay): async callers use a blocking thread.
//!
//! How the request server answers Salt's clear commands with it (`ClearFuncs`):
//!
//! ```no_run
//! use rmpv::Value;
//! use salt_eauth::{Eauth, EauthConfig, MinionResolver};
//! use salt_proto::clear::{ClearCommand, Secret};
//!
//! fn answer(
//!     eauth: &Eauth,
//!     body: &[u8],
//!     keys: &[(String, Secret)],      // access keys: root's from cachedir/.root_key, ...
//!     targets: &dyn MinionResolver,   // the master's targeting
//! ) -> Value {
//!     let Ok(cmd) = ClearCommand::decode(body) else {
//!         return Value::Map(vec![]); // Salt: "Received malformed clear command", {}
//!     };
//!     match cmd {
//!         ClearCommand::MkToken(f) => eauth.mk_token_reply(&f),
//!         ClearCommand::GetToken(t) => eauth.get_token_reply(t.as_ref()),
//!         ClearCommand::Runner(call) => match eauth.authorize_call(&call, "runner", keys) {
//!             Ok(_user) => todo!("run the runner as _user"),
//!             Err(refusal) => refusal.wire(),
//!         },
//!         ClearCommand::Publish(p) => {
//!             let minions: Vec<String> = todo!("resolve p.tgt / p.tgt_type");
//!             match eauth.authorize_publish(&p, &minions, keys, targets) {
//!                 Ok(_user) => todo!("publish, answer {{enc: clear, load: {{jid, minions}}}}"),
//!                 Err(refusal) => refusal.wire(),
//!             }
//!         }
//!         _ => Value::Map(vec![]), // unknown: Salt answers {}; log it once by name
//!     }
//! }
//! # let cfg = EauthConfig::new("/var/cache/salt/master".into());
//! # let _ = Eauth::with_localfs(cfg);
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod acl;
pub mod backend;
pub mod config;
pub mod engine;
pub mod error;
pub mod pyre;
pub mod token;

pub use acl::{AclEntry, AuthList, MinionResolver};
pub use config::{Backend, ConfigError, EauthConfig, TokenBackend};
pub use engine::{Authenticated, Eauth, KeyAuth};
pub use error::Refusal;
pub use token::{LocalFsStore, StoreError, TokenData, TokenStore};
