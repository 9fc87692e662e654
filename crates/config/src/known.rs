//! Salt's real option names (generated from Salt's `salt/config/__init__.py` by
//! `scripts/gen-salt-options.py`), to tell a typo from a Salt option salt-rs does not
//! implement, and the nearest known name to suggest for a typo.

/// `VALID_OPTS` + `DEFAULT_MASTER_OPTS` keys of Salt 3006, 3007 and 3008.
const MASTER: &str = include_str!("../data/salt-master-options.txt");
/// `VALID_OPTS` + `DEFAULT_MINION_OPTS` keys of Salt 3006, 3007 and 3008.
const MINION: &str = include_str!("../data/salt-minion-options.txt");

/// The option names Salt knows for `role` (`"master"` or `"minion"`).
pub(crate) fn salt_options(role: &str) -> impl Iterator<Item = &'static str> {
    let text = if role == "master" { MASTER } else { MINION };
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Whether Salt itself knows `key` for `role`.
pub(crate) fn is_salt_option(role: &str, key: &str) -> bool {
    salt_options(role).any(|k| k == key)
}

/// The known name nearest to `key` (optimal string alignment distance: edits and transpositions, at most 2 edits and less
/// than a third of the name), preferring `implemented` names on a tie.
pub(crate) fn nearest<'a>(key: &str, implemented: &[&'a str], role: &str) -> Option<&'a str>
where
    'static: 'a,
{
    let limit = 2.min(key.chars().count().saturating_sub(1) / 3 + 1);
    let mut best: Option<(usize, bool, &'a str)> = None;
    let candidates = implemented
        .iter()
        .map(|k| (*k, true))
        .chain(salt_options(role).map(|k| (k, false)));
    for (cand, ours) in candidates {
        let d = strsim::osa_distance(key, cand);
        if d == 0 || d > limit {
            continue;
        }
        let better = match best {
            None => true,
            Some((bd, bours, bname)) => (d, !ours, cand) < (bd, !bours, bname),
        };
        if better {
            best = Some((d, ours, cand));
        }
    }
    best.map(|(_, _, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_come_from_salt_and_hold_its_core_options() {
        for role in ["master", "minion"] {
            assert!(salt_options(role).count() > 400, "{role}");
            for k in ["interface", "id", "master", "pki_dir", "log_level"] {
                assert!(is_salt_option(role, k), "{role}: {k}");
            }
            assert!(!is_salt_option(role, "interfce"));
        }
    }

    #[test]
    fn typos_get_the_nearest_name() {
        assert_eq!(
            nearest("interfce", &["interface"], "master"),
            Some("interface")
        );
        assert_eq!(nearest("pki_dri", &[], "minion"), Some("pki_dir"));
        assert_eq!(nearest("log_levle", &[], "master"), Some("log_level"));
        assert_eq!(nearest("my_own_setting", &[], "master"), None);
        // One-letter names would match everything: no suggestion.
        assert_eq!(nearest("q", &[], "master"), None);
    }
}
