//! `salt` flags of Salt's that salt-rs does not support yet, refused by name before clap.

/// Salt's `salt` flags salt-rs does not support yet, with the Salt feature each one needs.
/// Checked before clap, so the user reads the feature's name rather than clap's
/// "unexpected argument". Remove a row when its feature lands.
pub const UNSUPPORTED: &[(&[&str], &str)] = &[
    (&["-R", "--range"], "range targeting"),
    (&["--subset"], "subset targeting"),
    (
        &["--batch-safe-limit", "--batch-safe-size"],
        "batch safe limits",
    ),
    (
        &["-d", "--doc", "--documentation"],
        "function documentation (-d, sys.doc)",
    ),
    (
        &[
            "--return_config",
            "--return-config",
            "--return_kwargs",
            "--return-kwargs",
        ],
        "returner options",
    ),
    (
        &[
            "--failhard",
            "--summary",
            "--hide-timeout",
            "--preview-target",
            "--metadata",
            "--output-diff",
        ],
        "this job output option",
    ),
    (
        &["--module-executors", "--executor-opts"],
        "module executors",
    ),
];

/// The first unsupported flag in `argv` (before a `--`) and its feature, as a message.
pub fn unsupported_flag(argv: &[String]) -> Option<String> {
    for a in argv.iter().skip(1) {
        if a == "--" {
            return None;
        }
        if !a.starts_with('-') {
            continue;
        }
        for (flags, feature) in UNSUPPORTED {
            for f in *flags {
                // `--batch=10`, `-b10`, `-b 10`: the flag and its value.
                let hit = a == f
                    || (f.starts_with("--") && a.starts_with(&format!("{f}=")))
                    || (f.len() == 2
                        && !f.starts_with("--")
                        && a.starts_with(f)
                        && !a.starts_with("--"));
                if hit {
                    return Some(format!(
                        "salt: {f}: {feature} is not supported yet by salt-rs (see docs/migration.md, Known differences)"
                    ));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_flags_name_their_feature() {
        let argv = |a: &[&str]| {
            std::iter::once("salt")
                .chain(a.iter().copied())
                .map(String::from)
                .collect::<Vec<_>>()
        };
        let m = unsupported_flag(&argv(&["-R", "%cluster", "test.ping"])).unwrap();
        assert!(
            m.contains("-R: range targeting is not supported yet"),
            "{m}"
        );
        assert_eq!(
            unsupported_flag(&argv(&["-C", "G@os:Debian and web*", "test.ping"])),
            None
        );
        let m = unsupported_flag(&argv(&["--batch-safe-limit=10", "*", "test.ping"])).unwrap();
        assert!(m.contains("batch safe limits"), "{m}");
        // Implemented since: batches, --async, -v, -a/-T.
        assert_eq!(
            unsupported_flag(&argv(&["-a", "pam", "-T", "*", "test.ping"])),
            None
        );
        assert_eq!(unsupported_flag(&argv(&["-b10", "*", "test.ping"])), None);
        assert_eq!(
            unsupported_flag(&argv(&["--async", "*", "test.ping"])),
            None
        );
        assert_eq!(unsupported_flag(&argv(&["-v", "*", "test.ping"])), None);
        assert_eq!(unsupported_flag(&argv(&["-L", "a,b", "test.ping"])), None);
        assert_eq!(unsupported_flag(&argv(&["*", "cmd.run", "ls -N"])), None);
        assert_eq!(unsupported_flag(&argv(&["--", "*", "cmd.run", "-v"])), None);
    }
}
