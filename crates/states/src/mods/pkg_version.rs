//! Version conditions of `pkg.installed` (`salt/states/pkg.py` of 3007):
//! `_parse_version_string` (`>=1.0,<2.0`), `_fulfills_version_string` and
//! `_fulfills_version_spec`, through `salt-execmods`' `pkg_match`.

use salt_execmods::pkg_match::{compare, repo_versions, split_comparison};

/// `_parse_version_string`: each comma-separated condition as `(operator, version)`, a
/// bare or `=` version as `==`.
pub fn parse(spec: &str) -> Vec<(String, String)> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Vec::new();
    }
    spec.split(',')
        .map(|c| {
            let (op, v) = split_comparison(c.trim());
            let op = if op.is_empty() || op == "=" {
                "==".to_owned()
            } else {
                op
            };
            (op, v)
        })
        .collect()
}

/// `fnmatch.fnmatch` of a version against a pattern (`*`, `?`).
fn fnmatch(s: &str, pat: &str) -> bool {
    let mut re = String::from("^");
    for ch in pat.chars() {
        match ch {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex::Regex::new(&re).is_ok_and(|r| r.is_match(s))
}

/// `_fulfills_version_string`: whether one of `installed` meets every condition of `spec`.
pub fn fulfills(installed: &[&str], spec: &str) -> bool {
    let conds = parse(spec);
    installed.iter().any(|have| {
        conds.iter().all(|(op, want)| {
            let ignore_epoch = !op.contains(['<', '>']) && !want.contains(':');
            (op == "==" && fnmatch(have, want)) || compare(have, op, want, ignore_epoch)
        })
    })
}

/// The first `Version:` `apt-cache show ARG` gives (Salt's `list_repo_pkgs(ARG)[0]`).
pub fn repo_version(arg: &str) -> Option<String> {
    repo_versions(arg).into_iter().next()
}
