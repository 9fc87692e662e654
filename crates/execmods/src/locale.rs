//! What the `locale` and `timezone` states ask of the system (`salt/modules/localemod.py`,
//! `salt/modules/timezone.py`, `salt/utils/locales.py`), for Debian: locales from
//! `locale -a`, the system locale from `localectl` on a systemd-booted host else
//! `/etc/default/locale`, the zone compared byte for byte with `/etc/localtime`, the
//! hardware clock from `timedatectl` (else `/etc/default/rcS`, `/etc/adjtime`).

use std::path::Path;

use crate::run::{run, which};

/// `salt.utils.locales.split_locale`: (language, territory, codeset, modifier, charmap).
fn split_locale(loc: &str) -> [String; 5] {
    let split = |s: &str, c: char| -> (String, String) {
        match s.split_once(c) {
            Some((a, b)) => (a.to_owned(), b.to_owned()),
            None => (s.to_owned(), String::new()),
        }
    };
    let (work, charmap) = split(loc, ' ');
    let (work, modifier) = split(&work, '@');
    let (work, codeset) = split(&work, '.');
    let (language, territory) = split(&work, '_');
    [language, territory, codeset, modifier, charmap]
}

fn join_locale(c: &[String; 5]) -> String {
    let mut loc = c[0].clone();
    for (sep, part) in [("_", &c[1]), (".", &c[2]), ("@", &c[3]), (" ", &c[4])] {
        if !part.is_empty() {
            loc.push_str(sep);
            loc.push_str(part);
        }
    }
    loc
}

/// `salt.utils.locales.normalize_locale`: as `locale -a` writes it (`en_US.utf8`).
pub fn normalize_locale(loc: &str) -> String {
    let mut c = split_locale(loc);
    c[1] = c[1].to_uppercase();
    c[2] = c[2].to_lowercase().replace('-', "");
    c[4] = String::new();
    join_locale(&c)
}

/// `locale.avail`: whether `locale -a` lists the locale.
pub fn avail(name: &str) -> Result<bool, String> {
    let want = normalize_locale(name);
    let out = run(&["locale", "-a"])?;
    Ok(out
        .stdout
        .split('\n')
        .any(|x| normalize_locale(x.trim()) == want))
}

/// `locale.get_locale` on Debian.
pub fn get_locale() -> Result<String, String> {
    if Path::new("/run/systemd/system").exists() {
        return localectl_lang();
    }
    let out = run(&["grep", "^LANG=", "/etc/default/locale"])?;
    Ok(out
        .stdout
        .split('=')
        .nth(1)
        .map(|v| v.replace('"', ""))
        .unwrap_or_default())
}

/// `_localectl_status()["system_locale"]["LANG"]`.
fn localectl_lang() -> Result<String, String> {
    if !which("localectl") {
        return Err("Unable to find \"localectl\"".into());
    }
    let probe = run(&["localectl"])?;
    if probe
        .stderr
        .contains("Failed to connect to bus: No such file or directory")
    {
        return Err("Command \"localectl\" is in a degraded state.".into());
    }
    let out = run(&["localectl", "status"])?;
    let mut key: Option<String> = None;
    let mut lang: Option<String> = None;
    let mut any = false;
    for line in out.stdout.trim().lines() {
        let data = match line.split_once(": ") {
            Some((k, d)) => {
                key = Some(k.trim().to_lowercase().replace(' ', "_"));
                d
            }
            None => line.trim(),
        };
        if data.is_empty() || key.is_none() {
            continue;
        }
        any = true;
        if key.as_deref() == Some("system_locale")
            && let Some(("LANG", v)) = data.split_once('=')
        {
            lang = Some(v.to_owned());
        }
    }
    if !any {
        return Err("Unable to parse result of \"localectl\"".into());
    }
    Ok(lang.unwrap_or_default())
}

/// Why a zone could not be compared: the zone is unknown (`SaltInvocationError`) or the
/// system's file is unreadable (`CommandExecutionError`).
#[derive(Debug)]
pub enum ZoneError {
    /// No such zone under `/usr/share/zoneinfo`.
    Unknown(String),
    /// `/etc/localtime` unreadable.
    System(String),
}

impl std::fmt::Display for ZoneError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZoneError::Unknown(s) | ZoneError::System(s) => f.write_str(s),
        }
    }
}

/// `timezone.zone_compare`: `/etc/localtime` and the zone's file have the same bytes.
pub fn zone_compare(zone: &str) -> Result<bool, ZoneError> {
    let tzfile = "/etc/localtime";
    let zonepath = format!("/usr/share/zoneinfo/{zone}");
    let want = std::fs::read(&zonepath)
        .map_err(|_| ZoneError::Unknown(format!("Can't find a local timezone \"{zone}\"")))?;
    let have = std::fs::read(tzfile).map_err(|e| {
        ZoneError::System(format!(
            "Failed to read {tzfile} to determine current timezone: {}",
            e.to_string().split(" (os error").next().unwrap_or_default()
        ))
    })?;
    Ok(have == want)
}

/// `timezone.get_hwclock` on Debian: `UTC`, `localtime` or `None`.
pub fn get_hwclock() -> Result<Option<String>, String> {
    if which("timedatectl") {
        let out = run(&["timedatectl"])?;
        if out.retcode != 0 {
            return Err(format!("timedatectl failed: {}", out.stderr));
        }
        for line in out.stdout.lines().map(str::trim) {
            if line.to_lowercase().contains("rtc in local tz") {
                let v = line.rsplit(':').next().unwrap_or("").trim().to_lowercase();
                return Ok(Some(if v == "yes" { "localtime" } else { "UTC" }.into()));
            }
        }
        return Err(format!(
            "Failed to parse timedatectl output: {}\nPlease file an issue with SaltStack",
            out.stdout
        ));
    }
    if let Ok(text) = std::fs::read_to_string("/etc/default/rcS") {
        for line in text.lines() {
            if line.trim_start().starts_with('#') {
                continue;
            }
            if line.contains("UTC=") {
                let v = line.rsplit('=').next().unwrap_or("").to_lowercase();
                return Ok(Some(if v == "yes" { "UTC" } else { "localtime" }.into()));
            }
        }
    }
    if Path::new("/etc/adjtime").exists() {
        return Ok(Some(run(&["tail", "-n", "1", "/etc/adjtime"])?.stdout));
    }
    if Path::new("/dev/rtc").exists() {
        return Err("Unable to get hwclock timezone from /etc/adjtime".into());
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locales_normalised_as_salts() {
        assert_eq!(normalize_locale("en_us.UTF-8"), "en_US.utf8");
        assert_eq!(
            normalize_locale("ca_ES.UTF-8@valencia UTF-8"),
            "ca_ES.utf8@valencia"
        );
        assert_eq!(normalize_locale("C.UTF-8"), "C.utf8");
        assert_eq!(normalize_locale("POSIX"), "POSIX");
    }
}
