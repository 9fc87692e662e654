//! Version conditions as Salt's `salt.utils.pkg.split_comparison`, `match_version` and
//! `salt.utils.versions.compare` evaluate them, with `pkg.version_cmp` (`dpkg
//! --compare-versions`), and Salt's `list_repo_pkgs` (`apt-cache show`).

use crate::pkg::version_cmp;
use crate::run::run;

/// `split_comparison`: `(operator, version)`; no match leaves the whole text as the version.
pub fn split_comparison(v: &str) -> (String, String) {
    let re = regex::Regex::new(r"^(<=>|!=|>=|<=|>>|<<|<>|>|<|=)?\s?([^<>=]+)$").ok();
    match re.as_ref().and_then(|re| re.captures(v)) {
        Some(c) => (
            c.get(1).map_or("", |m| m.as_str()).to_owned(),
            c[2].to_owned(),
        ),
        None => (String::new(), v.to_owned()),
    }
}

/// `salt.utils.versions.compare(v1, op, v2)` with `pkg.version_cmp` (the epochs dropped
/// when `ignore_epoch`); an unknown operator or a failed comparison is false.
pub fn compare(v1: &str, op: &str, v2: &str, ignore_epoch: bool) -> bool {
    let allowed: &[i64] = match op {
        "<" => &[-1],
        "<=" => &[-1, 0],
        "==" => &[0],
        ">=" => &[0, 1],
        ">" => &[1],
        "!=" => &[-1, 1],
        _ => return false,
    };
    let norm = |x: &str| {
        if ignore_epoch {
            x.split_once(':').map_or(x, |(_, r)| r).to_owned()
        } else {
            x.to_owned()
        }
    };
    version_cmp(&norm(v1), &norm(v2)).is_ok_and(|r| allowed.contains(&r.clamp(-1, 1)))
}

/// `match_version`: the first of `available` meeting `spec` (a bare version meaning `==`).
pub fn match_version<'a>(spec: &str, available: &'a [String]) -> Option<&'a String> {
    let (op, v) = split_comparison(spec);
    let op = if op.is_empty() { "==".to_owned() } else { op };
    available.iter().find(|c| compare(c, &op, &v, false))
}

/// `list_repo_pkgs(ARG)` of one argument: the `Version:` values `apt-cache show ARG` gives.
pub fn repo_versions(arg: &str) -> Vec<String> {
    let Ok(out) = run(&["apt-cache", "show", arg]) else {
        return Vec::new();
    };
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("Version:").map(|v| v.trim().to_owned()))
        .collect()
}
