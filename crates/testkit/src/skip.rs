//! [`require`]: a missing prerequisite fails the test under CI, and is a recorded skip
//! elsewhere.

use std::io::Write as _;

use crate::Missing;

/// The environment variable naming the file skips are appended to (`scripts/test.sh` sets
/// it to `target/test-skips.log` and summarises it at the end).
pub const SKIP_LOG_ENV: &str = "SALT_RS_SKIP_LOG";

/// `CI` is `true` (or `1`): every prerequisite must be there.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// The running test as `<test binary>::<test path>` (libtest names each test's thread after
/// the test), e.g. `interop_keys::keys_3008_5`.
pub fn current_test() -> String {
    let binary = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .map(|n| match n.rsplit_once('-') {
            // cargo names test binaries `<name>-<16 hex digits>`.
            Some((name, hash))
                if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) =>
            {
                name.to_owned()
            }
            _ => n,
        })
        .unwrap_or_else(|| "?".into());
    match std::thread::current().name() {
        Some(t) if t != "main" => format!("{binary}::{t}"),
        _ => binary,
    }
}

/// The prerequisite's value, or, when it is missing: under `CI=true` a panic naming it (the
/// test fails); otherwise `None` after the skip was printed and recorded, and the caller
/// returns.
///
/// # Panics
///
/// Under `CI=true` when `found` is a [`Missing`].
pub fn require<T>(found: Result<T, Missing>) -> Option<T> {
    match found {
        Ok(v) => Some(v),
        Err(missing) => {
            skip(&missing);
            None
        }
    }
}

fn skip(missing: &Missing) {
    let test = current_test();
    assert!(
        !in_ci(),
        "{test}: prerequisite missing: {missing}\n(CI=true: a test whose prerequisite is \
         missing fails; .ci/run installs what the tests need)"
    );
    println!("SKIPPED: {missing}");
    eprintln!("SKIPPED: {missing}");
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV).filter(|p| !p.is_empty()) {
        // One write of one line in append mode: lines of parallel tests do not interleave.
        let line = format!("SKIPPED {test} : {}\n", one_line(missing.reason()));
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            eprintln!(
                "cannot record the skip in {} ({SKIP_LOG_ENV}): {e}",
                std::path::Path::new(&path).display()
            );
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_name_is_the_binary_and_the_test_path() {
        let name = current_test();
        assert!(
            name.ends_with("skip::tests::the_test_name_is_the_binary_and_the_test_path"),
            "{name}"
        );
        assert!(name.starts_with("salt_testkit::"), "{name}");
    }

    #[test]
    fn a_present_prerequisite_is_returned() {
        assert_eq!(require(Ok::<_, Missing>(7)), Some(7));
    }

    /// Run only by [`a_missing_prerequisite_fails_under_ci_and_is_recorded_elsewhere`].
    #[test]
    #[ignore = "run by a_missing_prerequisite_fails_under_ci_and_is_recorded_elsewhere"]
    fn needs_what_is_not_there() {
        let Some(()) = require(Err(Missing::new("the moon\nin a jar"))) else {
            return;
        };
        unreachable!("the prerequisite cannot be there");
    }

    /// This test binary runs [`needs_what_is_not_there`] twice: under `CI=true` it fails
    /// naming what is missing; without, it passes and leaves one line in the skip log.
    #[test]
    fn a_missing_prerequisite_fails_under_ci_and_is_recorded_elsewhere() {
        let dir = std::env::temp_dir().join(format!("salt-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips.log");
        let run = |ci: &str| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--ignored",
                    "--nocapture",
                    "--exact",
                    "skip::tests::needs_what_is_not_there",
                ])
                .env("CI", ci)
                .env(SKIP_LOG_ENV, &log)
                .output()
                .unwrap()
        };
        let text = |out: &std::process::Output| {
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        };
        let failed = run("true");
        let text_ci = text(&failed);
        assert!(!failed.status.success(), "{text_ci}");
        assert!(
            text_ci
                .contains("skip::tests::needs_what_is_not_there: prerequisite missing: the moon"),
            "{text_ci}"
        );
        assert!(!log.exists(), "CI=true records no skip: it fails");

        let skipped = run("");
        let text = text(&skipped);
        assert!(skipped.status.success(), "{text}");
        assert!(text.contains("SKIPPED: the moon"), "{text}");
        let recorded = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            recorded,
            "SKIPPED salt_testkit::skip::tests::needs_what_is_not_there : the moon in a jar\n"
        );
    }

    #[test]
    fn reasons_are_recorded_on_one_line() {
        assert_eq!(one_line("no venv\n  at  x"), "no venv at x");
    }
}
