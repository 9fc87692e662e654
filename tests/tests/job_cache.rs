//! The job cache stays bounded: with `keep_jobs_seconds: 2` (and `loop_interval: 1`) our
//! master removes every job older than two seconds on its maintenance tick, keeps the young
//! ones and the directories that are not jobs; with `job_cache: False` a return still reaches
//! the `salt` command but nothing is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use salt_integration_tests::e2e_support::{Cluster, KeyDir, MINION_READY};
use salt_integration_tests::{wait_for_log, wait_until};

const START: Duration = Duration::from_secs(30);

/// The jids cached (Salt's local_cache layout: the `jid` file of `jobs/<h[:2]>/<h[2:]>/`).
fn jids(c: &Cluster) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(c.cachedir().join("jobs")) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .flatten()
        .filter(|t| !t.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|t| std::fs::read_dir(t.path()).ok())
        .flat_map(|rd| rd.flatten())
        .filter_map(|j| std::fs::read_to_string(j.path().join("jid")).ok())
        .collect();
    v.sort();
    v
}

fn job_dir(c: &Cluster, jid: &str) -> std::path::PathBuf {
    salt_master_core::job_cache::local_cache::jid_dir(
        &c.cachedir().join("jobs"),
        jid,
        salt_pki::HashType::Sha256,
    )
}

fn ping(c: &Cluster) -> String {
    let out = c.salt(&["-t", "10", "m1", "test.ping"]).unwrap();
    assert!(
        out.status.is_some_and(|s| s.success()),
        "salt failed: {out:?}"
    );
    out.stdout
}

#[test]
fn keep_jobs_seconds_removes_old_jobs() {
    let mut c = Cluster::new(|m| m.set("keep_jobs_seconds", 2u32)).unwrap();
    c.start_master().unwrap();
    let m1 = c.minion("m1").unwrap();
    c.wait_key(KeyDir::Pending, "m1", START).unwrap();
    c.accept("m1").unwrap();
    wait_for_log(&m1, MINION_READY, START).unwrap();

    for _ in 0..3 {
        assert!(ping(&c).contains("True"));
    }
    let first = jids(&c);
    assert_eq!(first.len(), 3, "three jobs cached: {first:?}");
    // A job directory without a `jid` file is scrubbed, as Salt's clean_old_jobs does.
    std::fs::create_dir_all(c.cachedir().join("jobs/ab/cdef/m1")).unwrap();

    // Within a few maintenance ticks after they turn 2 s old, all three are gone.
    wait_until("old jobs removed", Duration::from_secs(15), || {
        jids(&c).iter().all(|j| !first.contains(j))
    })
    .expect("old jobs removed");
    assert!(!c.cachedir().join("jobs/ab/cdef").exists());
    let log = c.master().unwrap().output();
    assert!(
        log.contains("Job cache: removed"),
        "the clean-up is logged: {log}"
    );

    // A new job is kept while young.
    assert!(ping(&c).contains("True"));
    assert_eq!(jids(&c).len(), 1);
}

#[test]
fn job_cache_false_writes_no_returns() {
    let mut c = Cluster::new(|m| m.set("job_cache", false)).unwrap();
    c.start_master().unwrap();
    let m1 = c.minion("m1").unwrap();
    c.wait_key(KeyDir::Pending, "m1", START).unwrap();
    c.accept("m1").unwrap();
    wait_for_log(&m1, MINION_READY, START).unwrap();

    assert!(ping(&c).contains("True"), "the return reaches salt");
    for jid in jids(&c) {
        let dir = job_dir(&c, &jid);
        assert!(
            !dir.join("m1").exists(),
            "job {jid}: no return stored with job_cache: False"
        );
    }
}

/// Python's own `salt-run jobs.*` (3006.30, 3007.17, 3008.5), pointed at our master's config
/// dir, reads the job our master ran through our minion with the answers our `salt-run` gives;
/// our `salt-run jobs.list_jobs` then lists the runner jobs Python's `salt-run` recorded.
#[test]
fn python_salt_run_reads_our_master_history() {
    let mut c = Cluster::new(|m| m.set("master_job_cache", "local_cache")).unwrap();
    c.start_master().unwrap();
    let m1 = c.minion("m1").unwrap();
    c.wait_key(KeyDir::Pending, "m1", START).unwrap();
    c.accept("m1").unwrap();
    wait_for_log(&m1, MINION_READY, START).unwrap();
    assert!(ping(&c).contains("True"));
    let jid = jids(&c).pop().expect("a job cached");
    // 3008's runner client writes its proc file under cachedir/proc.
    std::fs::create_dir_all(c.cachedir().join("proc")).unwrap();

    let ours = |args: &[&str]| -> serde_json::Value {
        let mut a = vec!["--out", "json"];
        a.extend_from_slice(args);
        let out = c.salt_run(&a).unwrap();
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {out:?}"))
    };
    let want_lookup = ours(&["jobs.lookup_jid", &jid]);
    assert_eq!(want_lookup, serde_json::json!({"m1": true}));
    let want_list = ours(&["jobs.list_jobs"]);
    let want_job = ours(&["jobs.list_job", &jid]);

    for v in salt_integration_tests::interop_support::VERSIONS {
        let Some(venv) =
            salt_integration_tests::require(salt_integration_tests::interop_support::venv_for(v))
        else {
            continue;
        };
        let python = |args: &[&str]| -> serde_json::Value {
            let out = std::process::Command::new(venv.bin("salt-run"))
                .arg("-c")
                .arg(c.master_conf().conf_dir())
                .args(["--out", "json"])
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{v} salt-run {args:?}: {out:?}");
            serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{v} salt-run {args:?}: {e}: {out:?}"))
        };
        assert_eq!(
            python(&["jobs.lookup_jid", &jid]),
            want_lookup,
            "{v}: lookup_jid"
        );
        // Each salt-run records its own runner jobs in the cache, so the lists differ by
        // those: the job our master ran is compared.
        assert_eq!(
            python(&["jobs.list_jobs"])[&jid],
            want_list[&jid],
            "{v}: list_jobs"
        );
        assert_eq!(python(&["jobs.list_job", &jid]), want_job, "{v}: list_job");
    }
    let listed = ours(&["jobs.list_jobs", "search_function=runner.jobs.*"]);
    assert!(
        listed.as_object().is_some_and(|m| !m.is_empty()),
        "Python's runner jobs read by ours: {listed}"
    );
}
