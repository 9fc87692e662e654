//! `salt` job semantics as Salt's CLI (our `salt`, master and three of our minions): a job
//! longer than `-t` is still returned (the master asks `saltutil.find_job`), `--async`, `-v`,
//! `--show-jid`, `-b` batches, and the "did not return" messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use salt_integration_tests::e2e_support::{Cluster, KeyDir, MINION_READY};
use salt_integration_tests::{Proc, wait_for_log};

const START: Duration = Duration::from_secs(30);

fn up(c: &Cluster, id: &str) -> Proc {
    let m = c.minion(id).unwrap();
    c.wait_key(KeyDir::Pending, id, START).unwrap();
    c.accept(id).unwrap();
    wait_for_log(&m, MINION_READY, START).unwrap();
    m
}

#[test]
fn find_job_async_verbose_batch_and_missing() {
    let mut c = Cluster::new(|m| m).unwrap();
    c.start_master().unwrap();
    let _m1 = up(&c, "m1");
    let _m2 = up(&c, "m2");
    let mut m3 = up(&c, "m3");

    // Longer than -t: returned all the same.
    let t0 = Instant::now();
    let out = c
        .salt(&[
            "-t",
            "2",
            "--static",
            "--out",
            "json",
            "*",
            "cmd.run",
            "sleep 5; echo done",
        ])
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect(&out.stdout);
    assert_eq!(
        v,
        serde_json::json!({"m1": "done", "m2": "done", "m3": "done"}),
        "{out:?}"
    );
    assert!(t0.elapsed() >= Duration::from_secs(5));

    let out = c.salt(&["--async", "*", "test.ping"]).unwrap();
    let line = out.stdout.trim();
    let jid = line
        .strip_prefix("Executed command with job ID: ")
        .expect(line);
    assert!(
        jid.len() == 20 && jid.chars().all(|ch| ch.is_ascii_digit()),
        "{line}"
    );

    let out = c.salt(&["-v", "m1", "test.ping"]).unwrap();
    let first = out.stdout.lines().next().unwrap();
    assert!(first.starts_with("Executing job with jid "), "{out:?}");
    assert_eq!(out.stdout.lines().nth(1).unwrap(), "-".repeat(first.len()));
    assert!(out.stdout.ends_with("m1:\n    True\n"), "{out:?}");

    let out = c.salt(&["--show-jid", "m1", "test.ping"]).unwrap();
    assert!(out.stdout.starts_with("jid: "), "{out:?}");
    let ping_jid = out.stdout.lines().next().unwrap()["jid: ".len()..].to_owned();

    // salt-run over the job cache.
    let out = c.salt_run(&["jobs.lookup_jid", &ping_jid]).unwrap();
    assert_eq!(out.stdout, "m1:\n    True\n", "{out:?}");
    let out = c
        .salt_run(&["jobs.list_jobs", "search_function=test.*", "--out", "json"])
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect(&out.stdout);
    assert_eq!(v[&ping_jid]["Function"], "test.ping", "{v:#}");
    assert_eq!(v[&ping_jid]["Target"], "m1", "{v:#}");
    assert!(
        v[&ping_jid]["StartTime"].as_str().unwrap().contains(", "),
        "{v:#}"
    );
    assert!(
        v.as_object()
            .unwrap()
            .values()
            .all(|j| j["Function"] != "cmd.run"),
        "{v:#}"
    );
    let out = c
        .salt_run(&["jobs.list_job", &ping_jid, "--out", "json"])
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect(&out.stdout);
    assert_eq!(v["Result"]["m1"]["return"], true, "{v:#}");
    // The minion data cache (written on each minion's `_pillar`).
    let out = c
        .salt_run(&["cache.grains", "m1", "--out", "json"])
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect(&out.stdout);
    assert_eq!(v["m1"]["id"], "m1", "{v:#}");
    assert!(v.get("m2").is_none(), "{v:#}");
    let out = c.salt_run(&["manage.up"]).unwrap();
    assert_eq!(out.stdout, "- m1\n- m2\n- m3\n", "{out:?}");
    // Positional arguments bind to Salt's signatures: up's first is `tgt`.
    let out = c.salt_run(&["manage.up", "m[12]"]).unwrap();
    assert_eq!(out.stdout, "- m1\n- m2\n", "{out:?}");
    // A keyword the runner does not have, and one salt-rs does not implement, say so.
    let out = c
        .salt_run(&["jobs.list_jobs", "search_funcion=test.*"])
        .unwrap();
    assert_eq!(
        out.stdout, "The following keyword arguments are not valid: search_funcion=test.*\n",
        "{out:?}"
    );
    let out = c
        .salt_run(&["jobs.active", "display_progress=True"])
        .unwrap();
    assert_eq!(
        out.stdout, "jobs.active: display_progress is not supported by salt-rs\n",
        "{out:?}"
    );
    let out = c.salt_run(&["foo.bar"]).unwrap();
    assert_eq!(out.stdout, "'foo.bar' is not available.\n");
    assert_eq!(out.status.and_then(|s| s.code()), Some(0));
    let out = c.salt_run(&["jobs.lookup_jid"]).unwrap();
    assert!(
        out.stdout.starts_with(
            "Passed invalid arguments: lookup_jid() missing 1 required positional argument: 'jid'"
        ),
        "{out:?}"
    );

    let out = c.salt(&["-b", "2", "*", "test.ping"]).unwrap();
    assert_eq!(
        out.stdout.matches("\nExecuting run on [").count(),
        2,
        "{out:?}"
    );
    // Salt 3008: the slots fill from the front of the pinged minions.
    assert!(
        out.stdout.contains("Executing run on ['m1', 'm2']"),
        "{out:?}"
    );
    for id in ["m1", "m2", "m3"] {
        assert!(out.stdout.contains(&format!("{id}:\n    True")), "{out:?}");
    }
    assert_eq!(out.status.and_then(|s| s.code()), Some(0));
    // Salt 3008: one jid for the whole batch (printed with each return), every minion in its
    // job cache.
    let is_jid = |l: &&str| l.len() == 20 && l.bytes().all(|b| b.is_ascii_digit());
    let jids: std::collections::BTreeSet<&str> =
        out.stdout.lines().map(str::trim).filter(is_jid).collect();
    assert_eq!(jids.len(), 1, "{out:?}");
    let jid = jids.into_iter().next().unwrap().to_owned();
    let json = |args: &[&str]| -> serde_json::Value {
        let mut full = vec!["--out", "json"];
        full.extend_from_slice(args);
        let out = c.salt_run(&full).unwrap();
        serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    };
    let found = json(&["jobs.lookup_jid", &jid]);
    for id in ["m1", "m2", "m3"] {
        assert_eq!(found[id], true, "{found}");
    }
    // `--async -b 1`: the first minion from `salt`, the others from the master, one jid.
    let out = c.salt(&["--async", "-b", "1", "*", "test.ping"]).unwrap();
    let jid = out
        .stdout
        .trim()
        .strip_prefix("Executed batch command with job ID: ")
        .unwrap_or_else(|| panic!("{out:?}"))
        .to_owned();
    let limit = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let st = json(&["batch.status", &jid]);
        if st["completed"] == 3 || Instant::now() > limit {
            break st;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(
        (&status["completed"], &status["driver"], &status["halted"]),
        (&3.into(), &"master".into(), &false.into()),
        "{status}"
    );
    let found = json(&["jobs.lookup_jid", &jid]);
    for id in ["m1", "m2", "m3"] {
        assert_eq!(found[id], true, "{found}");
    }
    assert_eq!(json(&["batch.list_active"]), serde_json::json!([]));

    // The event bus: a job's `new`, `publish` (Salt 3007+) and `ret` events as Salt's
    // `state.event` prints them.
    let listener = std::process::Command::new(c.bins().salt.with_file_name("salt-run"))
        .arg("-c")
        .arg(c.master_conf().conf_dir())
        .args(["state.event", "salt/job/*", "count=3"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let out = c.salt(&["--show-jid", "m1", "test.ping"]).unwrap();
    let jid = out.stdout.lines().next().unwrap()["jid: ".len()..].to_owned();
    let events = listener.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&events.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with(&format!("salt/job/{jid}/new\t{{")),
        "{text}"
    );
    assert!(lines[0].contains(r#""fun": "test.ping""#), "{text}");
    assert!(
        lines[1].starts_with(&format!("salt/job/{jid}/publish\t{{")),
        "{text}"
    );
    assert!(lines[1].contains(r#""fun": "test.ping""#), "{text}");
    assert!(
        lines[2].starts_with(&format!("salt/job/{jid}/ret/m1\t{{")),
        "{text}"
    );
    assert!(lines[2].contains(r#""return": true"#), "{text}");
    assert!(lines[2].contains(r#""_stamp": ""#), "{text}");

    // `tagmatch` as a regular expression, `count=0` (the first match), `pretty=True`.
    let listener = std::process::Command::new(c.bins().salt.with_file_name("salt-run"))
        .arg("-c")
        .arg(c.master_conf().conf_dir())
        .args(["state.event", r"salt/job/\d+/new", "count=0", "pretty=True"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    c.salt(&["m1", "test.ping"]).unwrap();
    let events = listener.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&events.stdout).into_owned();
    assert!(text.starts_with("salt/job/"), "{text}");
    assert!(text.contains("/new\t{\n    \"_stamp\": "), "{text}");
    assert!(text.contains("\n    \"fun\": \"test.ping\",\n"), "{text}");
    assert_eq!(text.matches("salt/job/").count(), 1, "{text}");
    // The minion's bus is not the master's.
    let out = c.salt_run(&["state.event", "node=minion"]).unwrap();
    assert!(
        out.stdout
            .starts_with("state.event: node=minion is not supported by salt-rs"),
        "{out:?}"
    );

    // A stopped minion: after -t and one find_job round, "[No response]" (it signed in).
    m3.stop(Duration::from_secs(5));
    let t0 = Instant::now();
    let out = c
        .salt(&["-t", "2", "--gather-job-timeout", "2", "*", "test.ping"])
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    assert!(
        out.stdout
            .contains("m3:\n    Minion did not return. [No response]"),
        "{out:?}"
    );
    assert_eq!(out.status.and_then(|s| s.code()), Some(1));
    let out = c.salt_run(&["manage.status", "timeout=2"]).unwrap();
    assert_eq!(
        out.stdout, "down:\n    - m3\nup:\n    - m1\n    - m2\n",
        "{out:?}"
    );
    let out = c.salt_run(&["manage.down", "timeout=2"]).unwrap();
    assert_eq!(out.stdout, "- m3\n", "{out:?}");
    let out = c
        .salt(&[
            "-b",
            "1",
            "-t",
            "2",
            "--gather-job-timeout",
            "1",
            "*",
            "test.ping",
        ])
        .unwrap();
    assert!(
        out.stdout
            .contains("Minion m3 did not respond. No job will be sent."),
        "{out:?}"
    );
    let out = c
        .salt_run(&["manage.down", "removekeys=True", "timeout=2"])
        .unwrap();
    assert_eq!(out.stdout, "- m3\n", "{out:?}");
    assert!(
        !c.key_path(KeyDir::Accepted, "m3").exists(),
        "m3's key deleted"
    );
    assert!(c.key_path(KeyDir::Accepted, "m1").exists());
}

#[test]
fn fileserver_runners() {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().join("base");
    std::fs::create_dir_all(base.join("sub")).unwrap();
    std::fs::write(base.join("top.sls"), "base: {'*': [web]}\n").unwrap();
    std::fs::write(base.join("sub/b.txt"), "b\n").unwrap();
    let roots = format!("{{base: ['{}']}}", base.display());
    let mut c = Cluster::new(|m| {
        m.set(
            "file_roots",
            salt_integration_tests::Yaml::Raw(roots.clone()),
        )
    })
    .unwrap();
    c.start_master().unwrap();
    let out = c.salt_run(&["fileserver.envs"]).unwrap();
    assert_eq!(out.stdout, "- base\n", "{out:?}");
    let out = c.salt_run(&["fileserver.file_list"]).unwrap();
    assert_eq!(out.stdout, "- sub/b.txt\n- top.sls\n", "{out:?}");
    let out = c
        .salt_run(&["fileserver.dir_list", "saltenv=base"])
        .unwrap();
    assert!(out.stdout.contains("- sub\n"), "{out:?}");
    std::fs::write(base.join("new.sls"), "x: y\n").unwrap();
    let out = c.salt_run(&["fileserver.update"]).unwrap();
    assert_eq!(out.stdout, "True\n", "{out:?}");
    let out = c.salt_run(&["fileserver.file_list"]).unwrap();
    assert!(out.stdout.contains("- new.sls\n"), "{out:?}");
}
