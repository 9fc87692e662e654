//! Every refusal of the engine, and the one place that turns it into the reply Salt's master
//! sends (`salt/auth/__init__.py` `check_authentication`, `salt/master.py` `ClearFuncs`).
//!
//! All refusals are the caller's fault (wrong credentials, expired or unknown token, a
//! function the ACL does not allow); the engine's own failures (a token it cannot write)
//! surface as the same refusals, since Salt answers them alike. Replies never say which part
//! of the credentials was wrong.

use rmpv::Value;
use salt_proto::clear::AuthKind;

/// Why a request was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// Authentication failed (`check_authentication`): wrong password, unknown or expired
    /// token, wrong root/user key, an eauth backend not enabled.
    #[error("authentication failure of type {kind:?} for user {username}")]
    Authentication {
        /// How the caller tried to authenticate.
        kind: AuthKind,
        /// `username` of the load (`UNKNOWN` when absent).
        username: String,
        /// Whether the `user` message names the user (Salt's `show_username`).
        show_username: bool,
    },
    /// A runner or wheel function the caller's auth list does not allow.
    #[error("{kind:?} user {username} may not call this runner/wheel function")]
    Unauthorized {
        /// How the caller authenticated.
        kind: AuthKind,
        /// Who.
        username: String,
    },
    /// A runner or wheel `fun` that is not `module.function`.
    #[error("function name is not module.function")]
    Syntax,
    /// A publish whose credentials do not authenticate.
    #[error("publish: authentication error")]
    PublishAuthentication,
    /// A publish the caller may not make (blacklisted, or not in the auth list).
    #[error("publish: authorization error")]
    PublishAuthorization,
}

impl Refusal {
    /// Salt's exception name and message.
    pub fn name_and_message(&self) -> (&'static str, String) {
        match self {
            Self::Authentication {
                kind: AuthKind::Token,
                ..
            } => (
                "TokenAuthenticationError",
                "Authentication failure of type \"token\" occurred.".to_owned(),
            ),
            Self::Authentication {
                kind: AuthKind::Eauth,
                username,
                ..
            } => (
                "EauthAuthenticationError",
                format!("Authentication failure of type \"eauth\" occurred for user {username}."),
            ),
            Self::Authentication {
                kind: AuthKind::User,
                username,
                show_username,
            } => (
                "UserAuthenticationError",
                if *show_username {
                    format!("Authentication failure of type \"user\" occurred for user {username}.")
                } else {
                    "Authentication failure of type \"user\" occurred".to_owned()
                },
            ),
            Self::Unauthorized { kind, username } => (
                error_name(*kind),
                format!(
                    "Authentication failure of type \"{}\" occurred for user {username}.",
                    kind.name()
                ),
            ),
            Self::Syntax => (
                "SaltInvocationError",
                "A command invocation error occurred: Check syntax.".to_owned(),
            ),
            Self::PublishAuthentication => (
                "AuthenticationError",
                "Authentication error occurred.".to_owned(),
            ),
            Self::PublishAuthorization => (
                "AuthorizationError",
                "Authorization error occurred.".to_owned(),
            ),
        }
    }

    /// The reply: `{"error": {"name": ..., "message": ...}}`.
    pub fn wire(&self) -> Value {
        let (name, message) = self.name_and_message();
        Value::Map(vec![(
            Value::from("error"),
            Value::Map(vec![
                (Value::from("name"), Value::from(name)),
                (Value::from("message"), Value::from(message)),
            ]),
        )])
    }
}

/// `_prep_auth_info`'s `err_name` of an auth kind.
pub fn error_name(kind: AuthKind) -> &'static str {
    match kind {
        AuthKind::Token => "TokenAuthenticationError",
        AuthKind::Eauth => "EauthAuthenticationError",
        AuthKind::User => "UserAuthenticationError",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salt_shapes() {
        let r = Refusal::Authentication {
            kind: AuthKind::Eauth,
            username: "fred".into(),
            show_username: false,
        };
        assert_eq!(
            r.name_and_message(),
            (
                "EauthAuthenticationError",
                "Authentication failure of type \"eauth\" occurred for user fred.".to_owned()
            )
        );
        assert_eq!(
            Refusal::PublishAuthorization.wire().to_string(),
            r#"{"error": {"name": "AuthorizationError", "message": "Authorization error occurred."}}"#
        );
    }
}
