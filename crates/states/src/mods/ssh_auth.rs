//! `ssh_auth.present`, `ssh_auth.absent` (`salt/states/ssh_auth.py`) on the `ssh` module's
//! authorized-key functions (`ssh_keys`) and `ssh_auth_source` (`source`: the keys of a
//! `salt://` file; other URLs are refused by name).

use rmpv::Value;
use salt_compat::{map_get, py_str};

use super::args::Args;
use super::ret::{self, comment, fail};
use super::ssh_auth_source as source;
use super::ssh_keys::{self as ssh, Check, key_line, py_split};
use crate::engine::Ctx;
use crate::{map, set};

/// `ssh_auth.present`.
pub const PRESENT: Args = Args {
    honoured: &[
        "name",
        "user",
        "enc",
        "comment",
        "options",
        "config",
        "fingerprint_hash_type",
        "source",
    ],
    refused: &[],
    apply_only: &[],
};

/// `ssh_auth.absent`.
pub const ABSENT: Args = PRESENT;

/// A state's arguments, with Salt's defaults.
pub(super) struct Key {
    pub name: String,
    pub user: String,
    pub enc: String,
    pub comment: String,
    pub options: Vec<String>,
    pub config: String,
    pub hash_type: Option<String>,
}

/// Python's `",".join(options)` input: a list's items, a string's characters.
fn options_of(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a.iter().map(py_str).collect(),
        Some(Value::Nil) | None => Vec::new(),
        Some(v) => py_str(v).chars().map(String::from).collect(),
    }
}

fn text_or(low: &Value, arg: &str, default: &str) -> String {
    map_get(low, arg).map_or_else(|| default.to_owned(), py_str)
}

impl Key {
    fn from_low(low: &Value) -> Self {
        Self {
            name: super::name_of(low),
            user: text_or(low, "user", ""),
            enc: text_or(low, "enc", "ssh-rsa"),
            comment: text_or(low, "comment", ""),
            options: options_of(map_get(low, "options")),
            config: text_or(low, "config", ".ssh/authorized_keys"),
            hash_type: map_get(low, "fingerprint_hash_type")
                .filter(|v| !v.is_nil())
                .map(py_str),
        }
    }

    /// Salt's parse of `name` as `{options} {enc} {key} {comment}` or `{key} [comment]`;
    /// `limited`: split as `present` does (`{key} {comment}` once, `{enc} {key} {comment}`
    /// twice), else without a limit (a comment with spaces is then dropped).
    fn parse_name(&mut self, limited: bool) {
        let full = key_line().captures(&self.name).map(|c| {
            (
                c.get(1).map_or("", |m| m.as_str()).to_owned(),
                c.get(2).map_or("", |m| m.as_str()).to_owned(),
            )
        });
        match full {
            None => {
                let kc = py_split(&self.name, limited.then_some(1));
                if let Some(k) = kc.first() {
                    if kc.len() == 2 {
                        self.comment = kc[1].clone();
                    }
                    self.name = k.clone();
                }
            }
            Some((opts, rest)) => {
                if !opts.is_empty() {
                    self.options = opts.split(',').map(str::to_owned).collect();
                }
                let comps = py_split(&rest, limited.then_some(2));
                if comps.len() >= 2 {
                    self.enc = comps[0].clone();
                    self.name = comps[1].clone();
                }
                if comps.len() == 3 {
                    self.comment = comps[2].clone();
                }
            }
        }
    }

    fn check(&self) -> Result<Check, String> {
        ssh::check_key(
            &self.user,
            &self.name,
            &self.enc,
            &self.comment,
            &self.options,
            &self.config,
            self.hash_type.as_deref(),
        )
    }
}

/// A `CommandExecutionError` out of the module, as the state engine reports it.
pub(super) fn raised(r: Value, e: &str) -> Value {
    fail(
        r,
        format!("An exception occurred in this state: CommandExecutionError: {e}"),
    )
}

fn missing_user(low: &Value, fun: &str) -> Option<Value> {
    map_get(low, "user").is_none().then(|| {
        let r = ret::new(low_name(low), false, "");
        fail(
            r,
            format!("Missing parameter user for state ssh_auth.{fun}"),
        )
    })
}

fn low_name(low: &Value) -> Value {
    map_get(low, "name").cloned().unwrap_or(Value::Nil)
}

fn present(ctx: &Ctx<'_>, low: &Value) -> Value {
    if let Some(r) = missing_user(low, "present") {
        return r;
    }
    let mut r = ret::new(low_name(low), true, "");
    let mut k = Key::from_low(low);
    if let Some(src) = source::of(low) {
        return source::present(ctx, low, r, &k, &src);
    }
    k.parse_name(true);
    if ctx.opts.test {
        // `_present_test` parses the parsed name again, splitting without a limit.
        k.parse_name(false);
        let (result, msg) = match k.check() {
            Err(e) => return raised(r, &e),
            Ok(Check::Update) => (
                Value::Nil,
                format!("Key {} for user {} is set to be updated", k.name, k.user),
            ),
            Ok(Check::Add) => (
                Value::Nil,
                format!("Key {} for user {} is set to be added", k.name, k.user),
            ),
            Ok(Check::Exists) => (
                Value::Boolean(true),
                format!(
                    "The authorized host key {} is already present for user {}",
                    k.name, k.user
                ),
            ),
        };
        set(&mut r, "result", result);
        comment(&mut r, msg);
        return r;
    }
    let data = match ssh::set_auth_key(
        &k.user,
        &k.name,
        &k.enc,
        &k.comment,
        &k.options,
        &k.config,
        k.hash_type.as_deref(),
    ) {
        Ok(d) => d,
        Err(e) => return raised(r, &e),
    };
    answer(r, data, &k.name, &k.user)
}

/// `present`'s answer to what `ssh.set_auth_key` (or `set_auth_key_from_file`) did.
pub(super) fn answer(mut r: Value, data: &str, name: &str, user: &str) -> Value {
    match data {
        "replace" => ret::changed(
            r,
            false,
            map(vec![(name, Value::from("Updated"))]),
            format!("The authorized host key {name} for user {user} was updated"),
        ),
        "no change" => {
            comment(
                &mut r,
                format!("The authorized host key {name} is already present for user {user}"),
            );
            r
        }
        "new" => ret::changed(
            r,
            false,
            map(vec![(name, Value::from("New"))]),
            format!("The authorized host key {name} for user {user} was added"),
        ),
        "fail" => fail(
            r,
            "Failed to add the ssh key. Is the home directory available, and/or does the \
             key file exist?"
                .into(),
        ),
        _ => fail(
            r,
            "Invalid public ssh key, most likely has spaces or invalid syntax".into(),
        ),
    }
}

fn absent(ctx: &Ctx<'_>, low: &Value) -> Value {
    if let Some(r) = missing_user(low, "absent") {
        return r;
    }
    let mut r = ret::new(low_name(low), true, "");
    let mut k = Key::from_low(low);
    if let Some(src) = source::of(low) {
        return source::absent(ctx, low, r, &k, &src);
    }
    if ctx.opts.test {
        k.parse_name(false);
        let (result, msg) = match k.check() {
            Err(e) => return raised(r, &e),
            Ok(Check::Update | Check::Exists) => (
                Value::Nil,
                format!("Key {} for user {} is set for removal", k.name, k.user),
            ),
            Ok(Check::Add) => (Value::Boolean(true), "Key is already absent".to_owned()),
        };
        set(&mut r, "result", result);
        comment(&mut r, msg);
        return r;
    }
    // Salt's `absent` splits `{key} {comment}` once, `{enc} {key} {comment}` fully.
    let limited_plain = key_line().captures(&k.name).is_none();
    k.parse_name(limited_plain);
    let msg = match ssh::rm_auth_key(&k.user, &k.name, &k.config, k.hash_type.as_deref()) {
        Ok(m) => m,
        Err(e) => return raised(r, &e),
    };
    if msg == "Key removed" {
        set(
            &mut r,
            "changes",
            map(vec![(k.name.as_str(), Value::from("Removed"))]),
        );
    }
    comment(&mut r, msg);
    r
}

/// Dispatch `ssh_auth.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    match fun {
        "present" => present(ctx, low),
        "absent" => absent(ctx, low),
        other => {
            let mut r = super::base_ret(low);
            comment(&mut r, format!("'ssh_auth.{other}' is not available."));
            r
        }
    }
}
