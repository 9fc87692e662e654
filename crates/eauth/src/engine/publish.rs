//! The publish half of [`Eauth`]: `ClearFuncs.publish` up to the jid (the blacklist,
//! authentication, `auth_check` over the targeted minions), for clear publishes on 4506 and
//! for our `salt` on the local socket.

use rmpv::Value;
use salt_proto::clear::{AuthKind, EauthFields, Publish, Secret};

use super::{Authenticated, Eauth, KeyAuth};
use crate::acl::{self, Call, MinionResolver};
use crate::error::Refusal;
use crate::pyre::expr_match;

impl Eauth {
    /// `ClearFuncs.publish` up to the jid: the blacklist, authentication (eauth fields from
    /// `kwargs`, else the key), then `auth_check` over the targeted `minions` (with
    /// `saltutil.find_job` always allowed). Returns the user to record on the job.
    pub fn authorize_publish(
        &self,
        p: &Publish,
        minions: &[String],
        keys: &[(String, Secret)],
        resolver: &dyn MinionResolver,
    ) -> Result<String, Refusal> {
        self.check_publish_blacklist(p)?;
        let kind = p.auth.kind();
        let auth = match kind {
            AuthKind::User => {
                let f = EauthFields::default();
                self.check_authentication(&f, Some(&p.user), p.key.as_ref(), keys)
            }
            _ => self.check_authentication(&p.auth, None, None, keys),
        };
        let auth = auth.map_err(|_| {
            tracing::warn!(
                "Authentication failure of type \"{}\" occurred.",
                kind.name()
            );
            Refusal::PublishAuthentication
        })?;
        self.check_publish_acl(p, &auth, minions, resolver)
    }

    /// [`Eauth::authorize_publish`] for a local caller the master knows by its OS
    /// credentials instead of an access key (our `salt` over the local socket,
    /// `SO_PEERCRED`): `p.user` is that user, or `sudo_<name>` when root publishes under
    /// sudo. `privileged`: the caller is root or the master's own user (Salt: the root key).
    /// The blacklist (for everyone, as Salt), then, but for a privileged caller, the user's
    /// `publisher_acl` entries (`sudo_acl` for `sudo_<name>`) and `auth_check` over the
    /// targeted `minions`, with Salt's refusals. Returns the job's user.
    pub fn authorize_local_publish(
        &self,
        p: &Publish,
        privileged: bool,
        minions: &[String],
        resolver: &dyn MinionResolver,
    ) -> Result<String, Refusal> {
        self.check_publish_blacklist(p)?;
        // A user who is not root cannot be "sudo_" anything, whatever their name.
        let (ret, sudo) = match p.user.strip_prefix("sudo_") {
            Some(name) if privileged => (KeyAuth::User(name.to_owned()), Some(p.user.as_str())),
            _ if privileged => return Ok(p.user.clone()),
            _ => (KeyAuth::User(p.user.clone()), None),
        };
        let auth = self.key_user_acl(ret, sudo, p.user.clone()).map_err(|_| {
            tracing::warn!("Authentication failure of type \"user\" occurred.");
            Refusal::PublishAuthentication
        })?;
        self.check_publish_acl(p, &auth, minions, resolver)
    }

    /// `publisher_acl_blacklist`: the publishing user or any of its functions.
    fn check_publish_blacklist(&self, p: &Publish) -> Result<(), Refusal> {
        let funs = p.fun.names();
        let bl = &self.cfg.publisher_acl_blacklist;
        let user_blacklisted = bl.users.iter().any(|e| expr_match(&p.user, e));
        let fun_blacklisted = funs
            .iter()
            .any(|f| bl.modules.iter().any(|e| expr_match(f, e)));
        if user_blacklisted || fun_blacklisted {
            tracing::error!(
                "{} does not have permissions to run {}. Please contact your local administrator if you believe this is in error.\n",
                p.user,
                funs.join(",")
            );
            return Err(Refusal::PublishAuthorization);
        }
        Ok(())
    }

    /// The auth-list half of `ClearFuncs.publish`: `auth_check` over the targeted `minions`
    /// (a root caller, whose list is empty, is not checked). Returns the job's user.
    fn check_publish_acl(
        &self,
        p: &Publish,
        auth: &Authenticated,
        minions: &[String],
        resolver: &dyn MinionResolver,
    ) -> Result<String, Refusal> {
        let funs = p.fun.names();
        let kind = auth.kind;
        let err_msg = format!(
            "Authentication failure of type \"{}\" occurred.",
            kind.name()
        );
        let list = auth.auth_list.clone();
        let needs_check = kind != AuthKind::User || list.as_ref().is_some_and(|l| !l.is_empty());
        if needs_check {
            let args: Vec<&[Value]> = match &p.fun {
                salt_proto::clear::Funs::One(_) => vec![p.arg.as_slice()],
                salt_proto::clear::Funs::Compound(_) => p
                    .arg
                    .iter()
                    .map(|a| a.as_array().map(Vec::as_slice).unwrap_or_default())
                    .collect(),
            };
            let allowed = list.as_ref().is_some_and(|l| {
                acl::auth_check(
                    l,
                    Call {
                        funs: &funs,
                        args: &args,
                    },
                    minions,
                    &["saltutil.find_job"],
                    resolver,
                )
            });
            if !allowed {
                if kind == AuthKind::Eauth && list.as_ref().is_none_or(Vec::is_empty) {
                    tracing::debug!(
                        "Auth configuration for eauth \"{}\" and user \"{}\" is empty",
                        p.auth.eauth.as_deref().unwrap_or_default(),
                        p.auth.username.as_deref().unwrap_or_default()
                    );
                }
                tracing::warn!("{err_msg}");
                return Err(Refusal::PublishAuthorization);
            }
        }
        Ok(match kind {
            AuthKind::Token | AuthKind::Eauth => auth.username.clone(),
            AuthKind::User => p.user.clone(),
        })
    }
}
