//! Tests of the files job store.
use super::*;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Regression (found by `tests/tests/durability_jobs.rs`): a master SIGKILLed between
/// creating a temporary file and renaming it left the file in the jid directory forever.
/// Temporary files now live in `jobs/.tmp`, and the next start removes those of dead
/// processes, keeping live processes' files and names it did not make.
#[test]
fn stale_temps_of_dead_processes_are_swept_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("jobs").join(TMP_DIR);
    std::fs::create_dir_all(&tmp).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let own = std::process::id();
    for name in [
        format!("{dead}.0"),
        format!("{dead}.17"),
        format!("{own}.5"),
        "1.3".to_owned(),
        format!("{dead}.x"),
        "notes".to_owned(),
    ] {
        std::fs::write(tmp.join(name), b"\x81\xa6ret").unwrap();
    }
    // A half-created job (killed before its load was written) does not get in the way.
    let job = jid_dir(
        &dir.path().join("jobs"),
        "20250101000000000007",
        HashType::Sha256,
    );
    std::fs::create_dir_all(job.join("m1")).unwrap();

    let jobs = FileJobs::new(dir.path().join("jobs"));
    let mut want = vec!["1.3".to_owned(), format!("{dead}.x"), "notes".to_owned()];
    want.sort();
    assert_eq!(
        names(&tmp),
        want,
        "dead and own-pid files swept, others kept"
    );
    // Sweeping again removes nothing more; a missing directory is an empty one.
    assert_eq!(sweep_stale_temps(&tmp).unwrap(), 0);
    assert_eq!(sweep_stale_temps(&dir.path().join("nowhere")).unwrap(), 0);

    // Names a previous process with this pid may still have left (written after the
    // sweep here) are skipped, not failed on.
    let next = SEQ.load(Ordering::Relaxed);
    let planted: Vec<String> = (next..next + 50).map(|n| format!("{own}.{n}")).collect();
    for name in &planted {
        std::fs::write(tmp.join(name), b"").unwrap();
    }
    want.extend(planted);
    want.sort();

    // Writing leaves nothing behind in .tmp, and only `.load.p` / `return.p` in the job;
    // the job load written again replaces the first through `.tmp`, past the planted
    // names. m1's half-created directory counts as its return, as in Salt: a return of
    // m1 is dropped.
    let load = Value::Map(vec![(Value::from("return"), Value::from("test.ping"))]);
    jobs.store_job("20250101000000000007", &Value::Nil).unwrap();
    jobs.store_job("20250101000000000007", &load).unwrap();
    jobs.store_return("20250101000000000007", "m1", &load)
        .unwrap();
    jobs.store_return("20250101000000000007", "m2", &load)
        .unwrap();
    assert_eq!(names(&tmp), want);
    assert_eq!(names(&job), [".load.p", "jid", "m1", "m2"]);
    assert!(names(&job.join("m1")).is_empty());
    assert_eq!(names(&job.join("m2")), ["return.p"]);
    for f in [".load.p", "m2/return.p"] {
        let bytes = std::fs::read(job.join(f)).unwrap();
        assert_eq!(salt_proto::decode(&bytes).unwrap(), load, "{f}");
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(job.join("m2/return.p"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

/// Normally (where the file system has `O_TMPFILE`) a file is written as an unnamed file in
/// the job's directory, linked once complete; the job directory itself is made in `.tmp` and
/// renamed into place, and `.tmp` is left empty. A minion's second return for a job
/// is dropped, the first kept (Salt's `local_cache`). A session key's temporary file is a
/// dot file next to it, which no minion id names.
#[test]
fn named_temporary_files_only_when_needed() {
    let dir = tempfile::tempdir().unwrap();
    let jobs_dir = dir.path().join("jobs");
    std::fs::create_dir_all(&jobs_dir).unwrap();
    let jobs = FileJobs::new(jobs_dir.clone());
    jobs.store_job("20250101000000000008", &Value::Nil).unwrap();
    let ret = |b: bool| {
        Value::Map(vec![
            (Value::from("return"), Value::Boolean(b)),
            (Value::from("out"), Value::from("nested")),
        ])
    };
    jobs.store_return("20250101000000000008", "m1", &ret(false))
        .unwrap();
    let job = jobs.job_dir("20250101000000000008");
    let top = job.parent().unwrap().file_name().unwrap().to_str().unwrap();
    let probe = jobs_dir.join("probe");
    if salt_keystore::create_linked(&probe, b"", 0o600, false).is_ok_and(|f| f.is_some()) {
        std::fs::remove_file(&probe).unwrap();
        assert_eq!(names(&jobs_dir), [".tmp", top]);
        assert!(names(&jobs_dir.join(".tmp")).is_empty());
    }
    for f in [".load.p", "jid", "m1/return.p", "m1/out.p"] {
        let meta = std::fs::metadata(job.join(f)).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
        assert_eq!(mode & 0o777, 0o600, "{f}");
    }
    // A second return of m1 (a retry, a replay) is dropped: the first stays.
    jobs.store_return("20250101000000000008", "m1", &ret(true))
        .unwrap();
    assert_eq!(
        jobs.returns("20250101000000000008").unwrap(),
        [("m1".to_owned(), ret(false))]
    );
    let bytes = std::fs::read(job.join("m1/return.p")).unwrap();
    assert_eq!(
        salt_proto::decode(&bytes).unwrap(),
        Value::Map(vec![(Value::from("return"), Value::Boolean(false))])
    );
    // The job load written again goes through `.tmp` (its name exists).
    jobs.store_job("20250101000000000008", &Value::from(1))
        .unwrap();
    assert_eq!(names(&jobs_dir), [".tmp", top]);
    assert!(names(&jobs_dir.join(".tmp")).is_empty());
    let bytes = std::fs::read(job.join(".load.p")).unwrap();
    assert_eq!(salt_proto::decode(&bytes).unwrap(), Value::from(1));

    // A minion's own job (`jid: req`) marked nocache keeps no returns (Salt's returner).
    jobs.prep_jid("20250101000000000009", true).unwrap();
    jobs.store_return("20250101000000000009", "m1", &ret(true))
        .unwrap();
    assert!(jobs.returns("20250101000000000009").unwrap().is_empty());
    let n = jobs.job_dir("20250101000000000009");
    assert_eq!(names(&n), ["jid", "nocache"]);

    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    write_unsynced(&sessions.join("web.example.com"), b"key").unwrap();
    assert_eq!(names(&sessions), ["web.example.com"]);
}
