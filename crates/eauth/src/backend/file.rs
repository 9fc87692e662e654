//! Salt's `file` eauth backend (`salt/auth/file.py`): a text, htpasswd or htdigest file.
//!
//! Options come from the backend's `^` keys: `^filename` (required), `^filetype` (`text`,
//! `htpasswd`, `htdigest`; default `text`), and for text files `^hashtype` (`plaintext`,
//! `md5`, `sha256`, `sha512`: `hashutil.digest`), `^field_separator` (`:`),
//! `^username_field` (1), `^password_field` (2), counted from 1; htdigest needs `^realm`.
//! Salt reads htpasswd and htdigest files with passlib's `HtpasswdFile`/`HtdigestFile`;
//! their parsing rules are kept (a malformed line fails every login, a comment or blank
//! line is skipped, the first line of a user counts).

use std::fs;

use md5::Md5;
use rmpv::Value;
use salt_proto::ValueExt;
use sha2::{Digest, Sha256, Sha512};
use zeroize::Zeroizing;

use super::ct_eq;
use super::htpasswd::verify_htpasswd_hash;
use crate::config::BackendConfig;

/// `file.auth(username, password)`.
pub(super) fn authenticate(section: &BackendConfig, username: &str, password: &str) -> bool {
    let Some(filename) = section.option("filename").and_then(ValueExt::as_text) else {
        tracing::error!(
            "salt.auth.file: An authentication file must be specified via external_auth:file:^filename"
        );
        return false;
    };
    let text_opt = |name: &str, default: &str| -> Option<String> {
        match section.option(name) {
            None => Some(default.to_owned()),
            Some(v) => v.as_text().map(str::to_owned),
        }
    };
    let Some(filetype) = text_opt("filetype", "text") else {
        return false;
    };
    let Ok(content) = fs::read(filename).map(Zeroizing::new) else {
        tracing::error!(
            "salt.auth.file: The configured external_auth:file:^filename ({filename})does not exist on the filesystem"
        );
        return false;
    };
    let Ok(content) = std::str::from_utf8(&content) else {
        tracing::error!("salt.auth.file: {filename} is not UTF-8 text");
        return false;
    };
    match filetype.as_str() {
        "text" => {
            let (Some(hashtype), Some(sep)) = (
                text_opt("hashtype", "plaintext"),
                text_opt("field_separator", ":"),
            ) else {
                return false;
            };
            let (Some(user_field), Some(pass_field)) = (
                field_number(section.option("username_field"), 1),
                field_number(section.option("password_field"), 2),
            ) else {
                return false;
            };
            text(
                content,
                filename,
                &TextFormat {
                    hashtype: &hashtype,
                    sep: &sep,
                    user_field,
                    pass_field,
                },
                username,
                password,
            )
        }
        "htpasswd" | "htdigest" => {
            // Salt's `_htfile` lower-cases the type it dispatches on.
            if filetype.to_lowercase() == "htdigest" {
                let Some(realm) = section
                    .option("realm")
                    .and_then(ValueExt::as_text)
                    .filter(|r| !r.is_empty())
                else {
                    tracing::error!(
                        "salt.auth.file: A ^realm must be defined in external_auth:file for htdigest filetype"
                    );
                    return false;
                };
                htdigest(content, filename, username, realm, password)
            } else {
                htpasswd(content, filename, username, password)
            }
        }
        other => {
            // Salt looks the type up case-sensitively and fails calling the default.
            tracing::error!("salt.auth.file: unknown ^filetype '{other}'");
            false
        }
    }
}

/// `int(value)` of a `^..._field` option.
fn field_number(v: Option<&Value>, default: i64) -> Option<i64> {
    match v {
        None => Some(default),
        Some(Value::Integer(i)) => i.as_i64(),
        Some(v) => v.as_text().and_then(|s| s.trim().parse().ok()),
    }
}

struct TextFormat<'a> {
    hashtype: &'a str,
    sep: &'a str,
    user_field: i64,
    pass_field: i64,
}

/// Python's `fields[i]` (negative counts from the end).
fn py_index<'a>(fields: &[&'a str], i: i64) -> Option<&'a str> {
    let len = i64::try_from(fields.len()).ok()?;
    let idx = if i < 0 { len + i } else { i };
    usize::try_from(idx)
        .ok()
        .and_then(|i| fields.get(i).copied())
}

/// `_text`: the first line naming the user decides.
fn text(
    content: &str,
    filename: &str,
    fmt: &TextFormat<'_>,
    username: &str,
    password: &str,
) -> bool {
    if fmt.sep.is_empty() {
        // Python's str.split("") raises ValueError.
        return false;
    }
    for line in content.split_inclusive('\n') {
        let fields: Vec<&str> = line.trim().split(fmt.sep).collect();
        let Some(this_user) = py_index(&fields, fmt.user_field - 1) else {
            tracing::error!(
                "salt.auth.file: username field ({}) does not exist in file {filename}",
                fmt.user_field - 1
            );
            return false;
        };
        let Some(this_pass) = py_index(&fields, fmt.pass_field - 1) else {
            tracing::error!(
                "salt.auth.file: password field ({}) does not exist in file {filename}",
                fmt.pass_field - 1
            );
            return false;
        };
        if this_user == username {
            let given = match fmt.hashtype {
                "plaintext" => Zeroizing::new(password.to_owned()),
                "md5" => Zeroizing::new(hex::encode(Md5::digest(password.as_bytes()))),
                "sha256" => Zeroizing::new(hex::encode(Sha256::digest(password.as_bytes()))),
                "sha512" => Zeroizing::new(hex::encode(Sha512::digest(password.as_bytes()))),
                other => {
                    tracing::error!("Hash func '{other}' is not supported.");
                    return false;
                }
            };
            return constant_eq(this_pass, &given);
        }
    }
    false
}

/// The records of a passlib htpasswd/htdigest file: `None` if a line is malformed
/// (passlib raises, Salt's login fails).
fn records<'a>(content: &'a str, filename: &str, parts: usize) -> Option<Vec<Vec<&'a str>>> {
    let mut out = Vec::new();
    for (n, line) in content.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.trim_end().split(':').collect();
        if fields.len() != parts {
            tracing::error!(
                "salt.auth.file: malformed file {filename} (error reading line {})",
                n + 1
            );
            return None;
        }
        out.push(fields);
    }
    Some(out)
}

/// `HtpasswdFile(filename).check_password(username, password)`.
fn htpasswd(content: &str, filename: &str, username: &str, password: &str) -> bool {
    let Some(records) = records(content, filename, 2) else {
        return false;
    };
    records
        .iter()
        .find(|r| r[0] == username)
        .is_some_and(|r| verify_htpasswd_hash(password, r[1]))
}

/// `HtdigestFile(filename).check_password(username, realm, password)`.
fn htdigest(content: &str, filename: &str, username: &str, realm: &str, password: &str) -> bool {
    let Some(records) = records(content, filename, 3) else {
        return false;
    };
    records
        .iter()
        .find(|r| r[0] == username && r[1] == realm)
        .is_some_and(|r| {
            let material = Zeroizing::new(format!("{username}:{realm}:{password}"));
            let want = Zeroizing::new(hex::encode(Md5::digest(material.as_bytes())));
            constant_eq(&r[2].to_ascii_lowercase(), &want)
        })
}

/// [`ct_eq`] of two strings.
pub(super) fn constant_eq(a: &str, b: &str) -> bool {
    ct_eq(a.as_bytes(), b.as_bytes())
}
