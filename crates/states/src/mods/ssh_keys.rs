//! The parts of Salt's `ssh` execution module (`salt/modules/ssh.py`) that the `ssh_auth`
//! and `ssh_known_hosts` states call: authorized-key files read, checked and rewritten
//! line by line as Salt does (so the bytes written are Salt's), key fingerprints, and the
//! user's key-file path (`%u`, `%h`).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use base64::Engine;
use regex::Regex;
use salt_execmods::user::{Passwd, user};

/// Salt's `{options} {enc} {key} {comment}` line pattern.
pub(crate) const KEY_LINE: &str = r"^(.*?)\s?((?:sk-)?(?:ssh\-|ecds)[\w@.-]+\s.+)$";

/// A `CommandExecutionError` raised by Salt's module (the state engine turns it into a
/// failed state).
pub(crate) type Raised = String;

/// `KEY_LINE` compiled.
pub(crate) fn key_line() -> Regex {
    #[allow(clippy::expect_used)]
    Regex::new(KEY_LINE).expect("KEY_LINE is a valid pattern")
}

/// Python's `str.split()` (runs of whitespace), at most `max` splits when given.
pub(crate) fn py_split(s: &str, max: Option<usize>) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        if max.is_some_and(|m| out.len() == m) {
            out.push(rest.to_owned());
            break;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push(rest[..end].to_owned());
        rest = rest[end..].trim_start();
    }
    out
}

/// Python's `str.strip()`.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// A text file's lines as Python's universal-newline iteration gives them, stripped, blank
/// ones dropped.
pub(crate) fn stripped_lines(path: &Path) -> std::io::Result<Vec<String>> {
    Ok(stripped_lines_of(&std::fs::read(path)?))
}

/// `stripped_lines` of a file's bytes.
fn stripped_lines_of(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes).replace("\r\n", "\n");
    text.split(['\n', '\r'])
        .map(py_strip)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Salt's `_refine_enc`.
pub(crate) fn refine_enc(enc: &str) -> Result<String, Raised> {
    let also = [
        "rsa-sha2-512",
        "rsa-sha2-256",
        "rsa-sha2-512-cert-v01@openssh.com",
        "rsa-sha2-256-cert-v01@openssh.com",
        "ssh-rsa-cert-v01@openssh.com",
        "ecdsa-sha2-nistp256-cert-v01@openssh.com",
        "ecdsa-sha2-nistp384-cert-v01@openssh.com",
        "ecdsa-sha2-nistp521-cert-v01@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
        "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
        "ssh-ed25519-cert-v01@openssh.com",
        "sk-ssh-ed25519@openssh.com",
        "sk-ssh-ed25519-cert-v01@openssh.com",
    ];
    Ok(match enc {
        "r" | "rsa" | "ssh-rsa" => "ssh-rsa",
        "d" | "dsa" | "dss" | "ssh-dss" => "ssh-dss",
        "e" | "ecdsa" => "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp521" | "ecdsa-sha2-nistp384" | "ecdsa-sha2-nistp256" => enc,
        "ed25519" | "ssh-ed25519" => "ssh-ed25519",
        _ if also.contains(&enc) => enc,
        _ => return Err(format!("Incorrect encryption key type '{enc}'.")),
    }
    .to_owned())
}

/// Python's `base64.b64decode(s, validate=True)`.
fn b64decode(s: &str) -> Option<Vec<u8>> {
    let body = s.trim_end_matches('=');
    if s.len() - body.len() > 2
        || !body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
    {
        return None;
    }
    let config = base64::engine::GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical);
    base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, config)
        .decode(s)
        .ok()
}

/// Salt's `_fingerprint`: `xx:xx:..` of the decoded key, `None` when it is not base64.
pub(crate) fn fingerprint(key: &str, hash_type: Option<&str>) -> Result<Option<String>, Raised> {
    use sha2::Digest;
    let hash_type = hash_type
        .filter(|h| !h.is_empty())
        .unwrap_or("sha256")
        .to_lowercase();
    let hash: fn(&[u8]) -> Vec<u8> = match hash_type.as_str() {
        "md5" => |b| md5::Md5::digest(b).to_vec(),
        "sha1" => |b| sha1::Sha1::digest(b).to_vec(),
        "sha224" => |b| sha2::Sha224::digest(b).to_vec(),
        "sha256" => |b| sha2::Sha256::digest(b).to_vec(),
        "sha384" => |b| sha2::Sha384::digest(b).to_vec(),
        "sha512" => |b| sha2::Sha512::digest(b).to_vec(),
        h if h.starts_with("blake2") || h.starts_with("sha3_") || h.starts_with("shake_") => {
            return Err(format!(
                "The fingerprint_hash_type {h} is not supported by salt-rs (md5, sha1, sha224, \
                 sha256, sha384, sha512 are)"
            ));
        }
        h => return Err(format!("The fingerprint_hash_type {h} is not supported.")),
    };
    Ok(b64decode(key).map(|raw| {
        hash(&raw)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    }))
}

/// One authorized key as Salt's `_validate_keys` reads it.
#[derive(Debug, Clone)]
pub(crate) struct AuthKey {
    pub enc: String,
    pub comment: String,
    pub options: Vec<String>,
}

/// Salt's `_format_auth_line`.
pub(crate) fn format_auth_line(key: &str, enc: &str, comment: &str, options: &[String]) -> String {
    let mut line = String::new();
    if !options.is_empty() {
        line.push_str(&options.join(","));
        line.push(' ');
    }
    line.push_str(&format!("{enc} {key} {comment}\n"));
    line
}

/// Salt's `_expand_authorized_keys_path`.
fn expand_path(path: &str, user: &str, home: &str) -> Result<String, Raised> {
    let mut out = String::new();
    let mut escape = false;
    for c in path.chars() {
        if escape {
            escape = false;
            match c {
                '%' => out.push('%'),
                'u' => out.push_str(user),
                'h' => out.push_str(home),
                _ => {
                    return Err(format!(
                        "AuthorizedKeysFile path: unknown token character \"%{c}\""
                    ));
                }
            }
        } else if c == '%' {
            escape = true;
        } else {
            out.push(c);
        }
    }
    if escape {
        return Err("AuthorizedKeysFile path: Last character can't be escape character".into());
    }
    Ok(out)
}

/// Python's `os.path.join(a, b)`.
pub(crate) fn path_join(a: &str, b: &str) -> String {
    if b.starts_with('/') || a.is_empty() {
        b.to_owned()
    } else if a.ends_with('/') {
        format!("{a}{b}")
    } else {
        format!("{a}/{b}")
    }
}

/// Salt's `_get_config_file`: the absolute key file of `user`, and the user.
pub(crate) fn config_file(user_name: &str, config: &str) -> Result<(String, Passwd), Raised> {
    let Some(pw) = user(user_name) else {
        return Err(format!("User '{user_name}' does not exist"));
    };
    let config = expand_path(config, user_name, &pw.home)?;
    Ok((path_join(&pw.home, &config), pw))
}

/// Salt's `_validate_keys`: the keys of a file, in file order (a repeated key keeps its
/// first place and its last value, as a Python dict does).
fn validate_keys(path: &Path, hash_type: Option<&str>) -> Result<Vec<(String, AuthKey)>, Raised> {
    let bytes = std::fs::read(path)
        .map_err(|_| format!("Problem reading ssh key file {}", path.display()))?;
    keys_of(&bytes, hash_type)
}

/// `_validate_keys` of a file's bytes.
pub(crate) fn keys_of(
    bytes: &[u8],
    hash_type: Option<&str>,
) -> Result<Vec<(String, AuthKey)>, Raised> {
    let lines = stripped_lines_of(bytes);
    let re = key_line();
    let mut out: Vec<(String, AuthKey)> = Vec::new();
    for line in lines {
        if line.starts_with('#') {
            continue;
        }
        let Some(c) = re.captures(&line) else {
            continue;
        };
        let opts = c.get(1).map_or("", |m| m.as_str());
        let comps = py_split(c.get(2).map_or("", |m| m.as_str()), None);
        if comps.len() < 2 {
            continue;
        }
        let options = if opts.is_empty() {
            Vec::new()
        } else {
            opts.split(',').map(str::to_owned).collect()
        };
        if fingerprint(&comps[1], hash_type)?.is_none() {
            continue;
        }
        let k = AuthKey {
            enc: comps[0].clone(),
            comment: comps[2..].join(" "),
            options,
        };
        match out.iter_mut().find(|(key, _)| *key == comps[1]) {
            Some(slot) => slot.1 = k,
            None => out.push((comps[1].clone(), k)),
        }
    }
    Ok(out)
}

/// Salt's `auth_keys` for one user (`{}` when the user or file is missing).
pub(crate) fn auth_keys(
    user_name: &str,
    config: &str,
    hash_type: Option<&str>,
) -> Result<Vec<(String, AuthKey)>, Raised> {
    match config_file(user_name, config) {
        Ok((full, _)) if Path::new(&full).is_file() => validate_keys(Path::new(&full), hash_type),
        _ => Ok(Vec::new()),
    }
}

/// What a key needs: Salt's `check_key` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    Add,
    Update,
    Exists,
}

/// Salt's `check_key`.
pub(crate) fn check_key(
    user_name: &str,
    key: &str,
    enc: &str,
    comment: &str,
    options: &[String],
    config: &str,
    hash_type: Option<&str>,
) -> Result<Check, Raised> {
    let enc = refine_enc(enc)?;
    let current = auth_keys(user_name, config, hash_type)?;
    let nline = format_auth_line(key, &enc, comment, options);
    Ok(match current.iter().find(|(k, _)| k == key) {
        None => Check::Add,
        Some((_, c)) if format_auth_line(key, &c.enc, &c.comment, &c.options) != nline => {
            Check::Update
        }
        Some(_) => Check::Exists,
    })
}

/// `chown` as root only, as Salt does (`os.geteuid() == 0`).
fn chown_if_root(path: &str, pw: &Passwd) -> Result<(), Raised> {
    if nix::unistd::geteuid().is_root() {
        std::os::unix::fs::chown(path, Some(pw.uid), Some(pw.gid))
            .map_err(|e| format!("{e}: '{path}'"))?;
    }
    Ok(())
}

fn chmod(path: &str, mode: u32) -> Result<(), Raised> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{e}: '{path}'"))
}

/// `restorecon` on `path` where SELinux's tools are installed, as Salt does.
fn restorecon(path: &str) {
    if let Some(rcon) = salt_execmods::run::which_path("restorecon") {
        let _ = salt_execmods::run::run(&[&rcon.display().to_string(), path]);
    }
}

/// Salt's `_replace_auth_key`: every line of `key` rewritten.
fn replace_auth_key(full: &str, line_out: &str, key: &str) -> Result<(), Raised> {
    let re = Regex::new(
        r"((.*)\s)?((?:sk-)?(?:ssh|ecdsa)-[a-z0-9@.-]+)\s([a-zA-Z0-9+/]+={0,2})(\s(.*))?",
    )
    .map_err(|e| e.to_string())?;
    let lines = stripped_lines(Path::new(full))
        .map_err(|e| format!("Problem reading or writing to key file: {e}"))?;
    let mut out = String::new();
    for line in lines {
        let line = format!("{line}\n");
        let hit = !line.starts_with('#')
            && re
                .captures(&line)
                .and_then(|c| c.get(4))
                .is_some_and(|m| m.as_str() == key);
        out.push_str(if hit { line_out } else { &line });
    }
    std::fs::write(full, out).map_err(|e| format!("Problem reading or writing to key file: {e}"))
}

/// Salt's `set_auth_key`: "invalid", "fail", "Invalid public key", "replace", "no change"
/// or "new".
#[allow(clippy::too_many_arguments)]
pub(crate) fn set_auth_key(
    user_name: &str,
    key: &str,
    enc: &str,
    comment: &str,
    options: &[String],
    config: &str,
    hash_type: Option<&str>,
) -> Result<&'static str, Raised> {
    if py_split(key, None).len() > 1 {
        return Ok("invalid");
    }
    let enc = refine_enc(enc)?;
    let Some(pw) = user(user_name) else {
        return Ok("fail");
    };
    if fingerprint(key, hash_type)?.is_none() {
        return Ok("Invalid public key");
    }
    let auth_line = format_auth_line(key, &enc, comment, options);
    match check_key(user_name, key, &enc, comment, options, config, hash_type)? {
        Check::Update => {
            let (full, _) = config_file(user_name, config)?;
            replace_auth_key(&full, &auth_line, key)?;
            return Ok("replace");
        }
        Check::Exists => return Ok("no change"),
        Check::Add => {}
    }
    let (fconfig, _) = config_file(user_name, config)?;
    if fconfig.starts_with(&pw.home) && !Path::new(&pw.home).is_dir() {
        return Ok("fail");
    }
    let dpath = Path::new(&fconfig)
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if !Path::new(&dpath).is_dir() {
        std::fs::create_dir_all(&dpath).map_err(|e| format!("{e}: '{dpath}'"))?;
        chown_if_root(&dpath, &pw)?;
        chmod(&dpath, 0o700)?;
        restorecon(&dpath);
    }
    let new_file = !Path::new(&fconfig).is_file();
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&fconfig)?;
        if !new_file {
            let old = std::fs::read(&fconfig)?;
            if old.last().is_some_and(|b| *b != b'\n') {
                f.write_all(b"\n")?;
            }
        }
        f.write_all(auth_line.as_bytes())
    };
    write().map_err(|e| format!("Could not write to key file: {e}"))?;
    if new_file {
        chown_if_root(&fconfig, &pw)?;
        chmod(&fconfig, 0o600)?;
        restorecon(&fconfig);
    }
    Ok("new")
}

/// Salt's `rm_auth_key`: "Key removed", "Key not removed", "Key not present", ...
pub(crate) fn rm_auth_key(
    user_name: &str,
    key: &str,
    config: &str,
    hash_type: Option<&str>,
) -> Result<String, Raised> {
    let current = auth_keys(user_name, config, hash_type)?;
    if !current.iter().any(|(k, _)| k == key) {
        return Ok("Key not present".into());
    }
    let (full, _) = config_file(user_name, config)?;
    if !Path::new(&full).is_file() {
        return Ok(format!("Authorized keys file {full} not present"));
    }
    let re = key_line();
    let Ok(lines) = stripped_lines(Path::new(&full)) else {
        return Ok("Key not removed".into());
    };
    let mut out = String::new();
    for line in lines {
        if !line.starts_with('#') {
            let Some(c) = re.captures(&line) else {
                continue;
            };
            let comps = py_split(c.get(2).map_or("", |m| m.as_str()), None);
            if comps.len() >= 2 && comps[1] == key {
                continue;
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    if std::fs::write(&full, out).is_err() {
        return Ok("Key not removed".into());
    }
    Ok("Key removed".into())
}
