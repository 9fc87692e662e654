//! States in master mode: our minion applies states published by a master.
//!
//! 1. `ours_and_python_on_our_master`: our master serves one tree (top, `file.directory`,
//!    `file.managed` from `salt://` with `mode`, a jinja template with `context`, pillar and a
//!    `salt['test.echo']` call, a `cmd.run` with `onchanges`) to a Python 3007.17 minion and
//!    to ours. `state.apply` (highstate, then again: nothing to do) and `state.sls extra`
//!    give the same returns (ids, results, comments, changes; times and pids left out), the
//!    same files (content, mode) and the same `--out highstate` text; `cp.list_master`,
//!    `cp.get_file`, `cp.hash_file`, `cp.push`, `pillar.items`, `pillar.get` answer the same; `salt-call state.apply` against our
//!    master (no `--local`) applies the same tree with our minion's keys. A second
//!    `state.sls` while one runs gets Salt's `state.running` conflict list on both minions
//!    (same text, pids/jids/times aside); ours with `queue=True` waits, then runs. An SLS
//!    whose template calls `salt['file.file_exists']` and `salt['cmd.run']` applies the
//!    same on both minions and through `salt-call` against the master.
//! 2. `ours_on_salt_master`: our minion applies the tree published by Salt 3007.17's master.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use salt_integration_tests::interop_support::{
    Daemon, SaltCli, Side, assert_no_leftovers, serial, venv_for,
};
use salt_integration_tests::require;
use salt_integration_tests::{
    MasterConf, MinionConf, TempRoot, Yaml, bins, free_port_pair, run_with_timeout,
};
use salt_testkit::write_file;
use serde_json::{Value, json};

fn step(t0: Instant, what: &str) {
    println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
}

/// The state tree and pillar; states write under `<out>/<minion id>/`.
fn make_tree(root: &Path) {
    let srv = root.join("srv");
    let o = root.join("out").display().to_string();
    write_file(&srv, "top.sls", "base:\n  '*':\n    - web\n");
    write_file(
        &srv,
        "web/init.sls",
        &format!(
            "{{% set out = '{o}/' ~ grains['id'] %}}\n\
             web-dir:\n  file.directory:\n    - name: {{{{ out }}}}/etc\n    - makedirs: True\n\
             web-index:\n  file.managed:\n    - name: {{{{ out }}}}/etc/index.html\n    - source: salt://files/index.html\n    - mode: '0640'\n    - require:\n      - file: web-dir\n\
             web-conf:\n  file.managed:\n    - name: {{{{ out }}}}/etc/web.conf\n    - source: salt://files/web.conf.j2\n    - template: jinja\n    - context:\n        port: 8080\n    - require:\n      - file: web-dir\n\
             web-reload:\n  cmd.run:\n    - name: echo reloaded\n    - onchanges:\n      - file: web-conf\n"
        ),
    );
    write_file(
        &srv,
        "extra.sls",
        &format!(
            "extra-note:\n  file.managed:\n    - name: {o}/{{{{ grains['id'] }}}}/note\n    - contents: {{{{ salt['pillar.get']('app:name') }}}}\n    - makedirs: True\n"
        ),
    );
    // A template calling execution modules (`salt[...]` once panicked "Cannot start a
    // runtime from within a runtime" outside the daemon's blocking threads).
    write_file(
        &srv,
        "tmpl.sls",
        &format!(
            "{{% if salt['file.file_exists']('{s}/top.sls') %}}\n\
             from-template:\n  test.succeed_without_changes:\n    - name: {{{{ salt['cmd.run']('echo from-cmd') }}}}\n\
             {{% endif %}}\n",
            s = srv.display()
        ),
    );
    write_file(
        &srv,
        "slow.sls",
        "slow-sleep:\n  cmd.run:\n    - name: sleep 5\n",
    );
    write_file(&srv, "files/index.html", "<h1>hello</h1>\n");
    write_file(
        &srv,
        "files/web.conf.j2",
        "port={{ port }}\ncolor={{ pillar['color'] }}\necho={{ salt['test.echo']('hi') }}\n",
    );
    write_file(root, "pillar/top.sls", "base:\n  '*':\n    - common\n");
    write_file(
        root,
        "pillar/common.sls",
        "color: blue\napp:\n  name: demo\n",
    );
}

fn master_conf(root: &Path, name: &str, ports: (u16, u16)) -> MasterConf {
    MasterConf::new(root.join(name))
        .ports(ports.0, ports.1)
        .auto_accept(true)
        .set("worker_threads", 2u32)
        .set(
            "file_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", root.join("srv").display())),
        )
        .set(
            "pillar_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", root.join("pillar").display())),
        )
}

/// A return without what differs per run, the minion id replaced by `ID`.
fn normalize(v: &Value, id: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace(id, "ID")),
        Value::Array(a) => Value::Array(a.iter().map(|x| normalize(x, id)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "duration" | "start_time" | "pid"))
                .map(|(k, x)| (k.replace(id, "ID"), normalize(x, id)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `--out highstate` text without times and pids, the id replaced by `ID`.
fn normalize_highstate(text: &str, id: &str) -> String {
    let mut out = Vec::new();
    let mut after_pid = false;
    for l in text.replace(id, "ID").lines() {
        let t = l.trim_start();
        let line = if after_pid {
            "PID".to_owned()
        } else if let Some(k) = ["Started:", "Duration:", "Total run time:"]
            .iter()
            .find(|k| t.starts_with(**k))
        {
            format!("{k} X")
        } else {
            l.to_owned()
        };
        after_pid = t == "pid:";
        out.push(line);
    }
    out.join("\n")
}

/// Every file under `dir`: relative path -> (mode, content).
fn files_under(dir: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            let m = std::fs::metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(
                    rel,
                    (m.permissions().mode() & 0o7777, std::fs::read(&p).unwrap()),
                );
            }
        }
    }
    out
}

fn answer(cli: &SaltCli, id: &str, args: &[&str], timeout: u32) -> Value {
    let mut full = vec![id];
    full.extend_from_slice(args);
    let (v, out) = cli.salt_json(&full, timeout).unwrap();
    let ret = v.get(id).cloned().unwrap_or(Value::Null);
    assert!(
        !ret.is_null(),
        "{id} {args:?}: no answer\n{}\n{}",
        out.stdout,
        out.stderr
    );
    ret
}

fn all_true(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| !m.is_empty() && m.values().all(|s| s["result"] == json!(true)))
}

#[test]
fn ours_and_python_on_our_master() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let t0 = Instant::now();
    let root = TempRoot::new().unwrap();
    make_tree(root.path());
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv);
    let ports = free_port_pair().unwrap();
    let mut master = Daemon::start_master(
        &ours,
        &master_conf(root.path(), "master", ports).set("file_recv", true),
    )
    .unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let (rs_id, py_id) = ("st-ours", "st-pyth");
    let rs_conf = MinionConf::new(root.path().join(rs_id), rs_id).ports(ports.0, ports.1);
    let minions = [
        Daemon::start_minion(&ours, &rs_conf).unwrap(),
        Daemon::start_minion(
            &py,
            &MinionConf::new(root.path().join(py_id), py_id)
                .ports(ports.0, ports.1)
                .set("auth_timeout", 10u32),
        )
        .unwrap(),
    ];
    for m in &minions {
        m.wait_minion_ready().unwrap();
    }
    let cli = SaltCli::new(&ours, &master.conf_dir);
    for id in [rs_id, py_id] {
        cli.until_answer(id, &[id, "test.ping"], Duration::from_secs(60))
            .unwrap();
    }
    step(t0, "master and both minions up");
    let both = |args: &[&str], timeout: u32| {
        let a = normalize(&answer(&cli, rs_id, args, timeout), rs_id);
        let b = normalize(&answer(&cli, py_id, args, timeout), py_id);
        assert_eq!(
            a, b,
            "{args:?}: ours (left) and the Python minion (right) differ"
        );
        a
    };
    let out = root.path().join("out");

    // Highstate: same returns, same files (wall time of each `salt` call printed).
    let timed = |id: &str| {
        let t = Instant::now();
        let r = normalize(&answer(&cli, id, &["state.apply"], 120), id);
        (r, t.elapsed())
    };
    let ((hs, rs_t), (py_hs, py_t)) = (timed(rs_id), timed(py_id));
    assert_eq!(
        hs, py_hs,
        "state.apply: ours (left) and the Python minion (right) differ"
    );
    println!(
        "first state.apply through `salt`: ours {:.2} s, Python minion {:.2} s",
        rs_t.as_secs_f64(),
        py_t.as_secs_f64()
    );
    assert!(all_true(&hs), "{hs:#}");
    assert_eq!(hs.as_object().unwrap().len(), 4, "{hs:#}");
    let (rs_files, py_files) = (files_under(&out.join(rs_id)), files_under(&out.join(py_id)));
    assert_eq!(
        rs_files.keys().collect::<Vec<_>>(),
        ["etc/index.html", "etc/web.conf"]
    );
    assert!(
        rs_files == py_files,
        "files differ:\n{rs_files:?}\n{py_files:?}"
    );
    assert_eq!(rs_files["etc/index.html"].0, 0o640);
    assert_eq!(
        rs_files["etc/web.conf"].1,
        b"port=8080\ncolor=blue\necho=hi\n"
    );
    assert!(
        root.path()
            .join(rs_id)
            .join("cache/files/base/web/init.sls")
            .is_file(),
        "SLS files are cached under cachedir/files/<saltenv>/"
    );
    let rss = |d: &Daemon| salt_integration_tests::e2e_support::vm_rss_kib(d.proc.pid());
    println!(
        "minion RSS after state.apply: ours {:?} KiB, Python minion {:?} KiB (main process)",
        rss(&minions[0]),
        rss(&minions[1])
    );
    step(t0, "state.apply: same returns and files");

    // A template calling `salt['file.file_exists']` and `salt['cmd.run']`, in the daemon.
    let t = both(&["state.sls", "tmpl"], 60);
    assert!(all_true(&t), "{t:#}");
    assert!(t.to_string().contains("from-cmd"), "{t:#}");
    step(
        t0,
        "template calling salt[...] in the daemon: same as the Python minion",
    );

    // Again: nothing to do; `--out highstate` text identical.
    let again = both(&["state.apply"], 120);
    assert!(all_true(&again), "{again:#}");
    let hs_text = |id: &str| {
        let res = salt_integration_tests::cli::salt(
            &ours.salt_bin(),
            None,
            &master.conf_dir,
            &[
                id,
                "state.apply",
                "test=True",
                "--out",
                "highstate",
                "-t",
                "120",
            ],
            Duration::from_secs(180),
        )
        .unwrap();
        normalize_highstate(&res.stdout, id)
    };
    let (rs_text, py_text) = (hs_text(rs_id), hs_text(py_id));
    assert!(rs_text.contains("Succeeded: 4"), "{rs_text}");
    assert_eq!(rs_text, py_text, "--out highstate differs");
    step(t0, "state.apply again, --out highstate identical");

    // state.sls with pillar through salt['pillar.get'].
    let sls = both(&["state.sls", "extra"], 120);
    assert!(all_true(&sls), "{sls:#}");
    assert_eq!(
        std::fs::read(out.join(rs_id).join("note")).unwrap(),
        b"demo\n"
    );
    both(&["pillar.items"], 60);
    both(&["pillar.get", "app:name"], 60);
    step(t0, "state.sls extra, pillar.items, pillar.get");

    // cp.*
    let listed = both(&["cp.list_master"], 60);
    assert!(
        listed
            .as_array()
            .unwrap()
            .contains(&json!("files/web.conf.j2"))
    );
    let mut got = Vec::new();
    for id in [rs_id, py_id] {
        let dest = root.path().join("got").join(id).join("index.html");
        let arg = dest.display().to_string();
        let r = answer(
            &cli,
            id,
            &[
                "cp.get_file",
                "salt://files/index.html",
                &arg,
                "makedirs=True",
            ],
            60,
        );
        assert_eq!(r, json!(arg));
        got.push(std::fs::read(&dest).unwrap());
    }
    assert_eq!(got[0], got[1]);
    both(&["cp.hash_file", "salt://files/index.html"], 60);
    both(&["cp.stat_file", "salt://files/index.html"], 60);
    both(&["cp.list_master_dirs"], 60);
    both(&["cp.envs"], 60);
    // cp.push: the file lands in the master's cachedir/minions/<id>/files/<path>.
    let pushed = root.path().join("push.txt");
    std::fs::write(&pushed, "pushed\n").unwrap();
    let arg = pushed.display().to_string();
    assert_eq!(both(&["cp.push", &arg], 60), json!(true));
    for id in [rs_id, py_id] {
        let got = root
            .path()
            .join("master/cache/minions")
            .join(id)
            .join("files")
            .join(arg.trim_start_matches('/'));
        assert_eq!(std::fs::read(&got).unwrap(), b"pushed\n", "{id}");
    }
    step(t0, "cp.list_master, cp.get_file, cp.hash_file, cp.push");

    // A long state job does not hold up the minion: test.ping answers meanwhile.
    let slow = std::thread::scope(|sc| {
        let job = sc.spawn(|| answer(&cli, rs_id, &["state.sls", "slow"], 60));
        std::thread::sleep(Duration::from_millis(1500));
        let t = Instant::now();
        assert_eq!(answer(&cli, rs_id, &["test.ping"], 20), json!(true));
        let ping = t.elapsed();
        let ret = job.join().unwrap();
        assert!(
            ping < Duration::from_secs(4),
            "test.ping took {ping:?} during a state run"
        );
        ret
    });
    assert!(all_true(&slow), "{slow:#}");
    step(t0, "test.ping answers during a 5 s state run");

    // A second state run while one is running gets Salt's conflict list (ours and Python's
    // minion alike, pids/jids/times aside); with queue=True ours waits and then runs.
    let conflict_shape = |v: &Value| -> Vec<String> {
        let digits = regex::Regex::new(r"[0-9]+").unwrap();
        v.as_array()
            .unwrap_or_else(|| panic!("not a conflict list: {v:#}"))
            .iter()
            .map(|l| digits.replace_all(l.as_str().unwrap(), "N").into_owned())
            .collect()
    };
    let cli_ref = &cli;
    let (conflicts, queued, queued_t) = std::thread::scope(|sc| {
        let jobs = [rs_id, py_id]
            .map(|id| sc.spawn(move || answer(cli_ref, id, &["state.sls", "slow"], 60)));
        std::thread::sleep(Duration::from_millis(2000));
        let conflicts =
            [rs_id, py_id].map(|id| conflict_shape(&answer(&cli, id, &["state.sls", "slow"], 20)));
        let t = Instant::now();
        let queued = answer(&cli, rs_id, &["state.sls", "slow", "queue=True"], 60);
        let queued_t = t.elapsed();
        for j in jobs {
            assert!(all_true(&j.join().unwrap()));
        }
        (conflicts, queued, queued_t)
    });
    assert_eq!(conflicts[0].len(), 1, "ours: {:?}", conflicts[0]);
    let line = &conflicts[0][0];
    assert!(
        line.starts_with("The function \"state.sls\" is running as PID N and was started at N, ")
            && line.ends_with(" N N:N:N.N with jid N"),
        "ours: {line}"
    );
    assert_eq!(
        conflicts[0], conflicts[1],
        "conflict: ours (left) and Python's (right)"
    );
    assert!(all_true(&queued), "{queued:#}");
    assert!(
        queued_t > Duration::from_secs(6),
        "queue=True did not wait: {queued_t:?}"
    );
    step(t0, "state conflict as Salt's, queue=True waits");

    // salt-call (no --local) output, ours and Salt's, each with its minion's config.
    for args in [
        &["cp.list_master"][..],
        &["pillar.items"],
        &["--out", "json", "pillar.get", "app"],
    ] {
        let mut texts = Vec::new();
        for (bin, conf) in [
            (
                bins().unwrap().minion.with_file_name("salt-call"),
                rs_conf.conf_dir(),
            ),
            (
                venv_for("3007.17").unwrap().bin("salt-call"),
                root.path().join(py_id).join("conf"),
            ),
        ] {
            let mut c = Command::new(bin);
            c.arg("-c").arg(&conf).args(args);
            let res = run_with_timeout(c, Duration::from_secs(60)).unwrap();
            assert_eq!(
                res.status.and_then(|s| s.code()),
                Some(0),
                "{args:?}: {}",
                res.stderr
            );
            texts.push(res.stdout);
        }
        assert_eq!(
            texts[0], texts[1],
            "salt-call {args:?}: ours (left) and Salt's differ"
        );
    }
    step(
        t0,
        "salt-call cp.list_master, pillar.items, pillar.get: same output as Salt's",
    );

    // salt-call against our master with our minion's config and keys.
    std::fs::remove_dir_all(out.join(rs_id)).unwrap();
    let mut c = Command::new(bins().unwrap().minion.with_file_name("salt-call"));
    c.arg("-c")
        .arg(rs_conf.conf_dir())
        .args(["--retcode-passthrough", "state.apply"]);
    let res = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    assert_eq!(
        res.status.and_then(|s| s.code()),
        Some(0),
        "{}\n{}",
        res.stdout,
        res.stderr
    );
    assert!(res.stdout.starts_with("local:\n"), "{}", res.stdout);
    assert!(
        res.stdout.contains("Succeeded: 4 (changed=4)"),
        "{}",
        res.stdout
    );
    assert_eq!(files_under(&out.join(rs_id)), py_files);
    step(t0, "salt-call state.apply against our master");
    // The template calling execution modules, through salt-call against the master.
    let mut c = Command::new(bins().unwrap().minion.with_file_name("salt-call"));
    c.arg("-c").arg(rs_conf.conf_dir()).args([
        "--retcode-passthrough",
        "--out",
        "json",
        "state.sls",
        "tmpl",
    ]);
    let res = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    assert_eq!(
        res.status.and_then(|s| s.code()),
        Some(0),
        "{}\n{}",
        res.stdout,
        res.stderr
    );
    assert!(res.stdout.contains("from-cmd"), "{}", res.stdout);
    step(
        t0,
        "salt-call state.sls with salt[...] templates against our master",
    );
    drop(minions);
    drop(master);
    assert_no_leftovers(root.path());
}

#[test]
fn ours_on_salt_master() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let t0 = Instant::now();
    let root = TempRoot::new().unwrap();
    make_tree(root.path());
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv);
    let ports = free_port_pair().unwrap();
    let mut master = Daemon::start_master(&py, &master_conf(root.path(), "master", ports)).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let id = "st-ours";
    let minion = Daemon::start_minion(
        &ours,
        &MinionConf::new(root.path().join(id), id).ports(ports.0, ports.1),
    )
    .unwrap();
    minion.wait_minion_ready().unwrap();
    let cli = SaltCli::new(&py, &master.conf_dir);
    cli.until_answer(id, &[id, "test.ping"], Duration::from_secs(60))
        .unwrap();
    step(t0, "Salt's master and our minion up");
    // Salt's CLI can miss a return that arrives before it listens (ours answers in
    // milliseconds); it then finds it through `saltutil.find_job` after `-t`: keep it short.
    let hs = answer(&cli, id, &["state.apply"], 10);
    assert!(all_true(&hs), "{hs:#}");
    let files = files_under(&root.path().join("out").join(id));
    assert_eq!(files["etc/web.conf"].1, b"port=8080\ncolor=blue\necho=hi\n");
    assert_eq!(files["etc/index.html"].0, 0o640);
    let sls = answer(&cli, id, &["state.sls", "extra"], 10);
    assert!(all_true(&sls), "{sls:#}");
    step(t0, "state.apply and state.sls from Salt 3007.17's master");
    drop(minion);
    drop(master);
    assert_no_leftovers(root.path());
}
