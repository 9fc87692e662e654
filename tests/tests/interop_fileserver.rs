//! Interop: a real Python salt-minion (3006.30, 3007.17, 3008.5) doing everyday state work
//! against our master, compared with the same minion version against Salt's own master
//! (same version, same state tree), one master and one minion per side per version:
//!
//! 1. `saltutil.sync_modules` syncs a custom `_modules/hello.py`; `hello.world` then answers;
//! 2. `state.apply` (highstate: `file.managed` from `salt://`, a jinja template, a
//!    3 MiB file served in several chunks, `file.recurse`): same return (state ids, results,
//!    comments, changes; durations and times left out) and the same files written (content
//!    and mode); a second `state.apply` changes nothing on both;
//! 3. `state.sls extra` (an sls named on the command line; one of its states renders pillar
//!    values the master compiled from `pillar_roots`);
//! 4. `cp.list_master`, `cp.list_master_dirs`, `cp.hash_file`, `cp.get_file` (the big file,
//!    byte for byte).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Instant;

use salt_integration_tests::interop_pair::{Pair, UNTIMED};
use salt_integration_tests::interop_support::{Side, assert_no_leftovers, serial, venv_for};
use salt_integration_tests::{TempRoot, Yaml, bins, require};
use serde_json::json;

#[test]
fn fileserver_3006() {
    run("3006.30");
}

#[test]
fn fileserver_3007() {
    run("3007.17");
}

#[test]
fn fileserver_3008() {
    run("3008.5");
}

fn step(t0: Instant, what: &str) {
    println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
}

fn write(root: &Path, rel: &str, data: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
}

/// The state tree both masters serve; states write under `<out>/<minion id>/`.
fn make_tree(srv: &Path, out: &Path) {
    let o = out.display();
    write(srv, "top.sls", b"base:\n  '*':\n    - web\n");
    write(
        srv,
        "web/init.sls",
        format!(
            "{{% set out = '{o}/' ~ grains['id'] %}}\n\
             web-index:\n  file.managed:\n    - name: {{{{ out }}}}/index.html\n    - source: salt://files/index.html\n    - makedirs: True\n    - mode: '0640'\n\
             web-conf:\n  file.managed:\n    - name: {{{{ out }}}}/web.conf\n    - source: salt://files/web.conf.j2\n    - template: jinja\n    - makedirs: True\n\
             web-big:\n  file.managed:\n    - name: {{{{ out }}}}/big.bin\n    - source: salt://files/big.bin\n    - makedirs: True\n\
             web-tree:\n  file.recurse:\n    - name: {{{{ out }}}}/tree\n    - source: salt://files/tree\n"
        )
        .as_bytes(),
    );
    write(
        srv,
        "extra.sls",
        format!(
            "extra-dir:\n  file.directory:\n    - name: {o}/{{{{ grains['id'] }}}}/extra\n    - makedirs: True\n\
             extra-file:\n  file.managed:\n    - name: {o}/{{{{ grains['id'] }}}}/extra/note\n    - contents: note\n\
             extra-pillar:\n  file.managed:\n    - name: {o}/{{{{ grains['id'] }}}}/extra/pillar.txt\n    - contents: {{{{ pillar['color'] }}}}-{{{{ salt['pillar.get']('app:port') }}}}\n"
        )
        .as_bytes(),
    );
    // Pillar (served by each master from its own pillar_roots): used inside a state.
    let pillar = srv.parent().unwrap_or(srv).join("pillar");
    write(&pillar, "top.sls", b"base:\n  'fs-*':\n    - common\n");
    write(
        &pillar,
        "common.sls",
        b"{% set port = 8000 + 80 %}\ncolor: blue\napp:\n  port: {{ port }}\n",
    );
    write(srv, "files/index.html", b"<h1>hello</h1>\n");
    write(srv, "files/web.conf.j2", b"answer={{ 6 * 7 }}\n");
    let big: Vec<u8> = (0..3 * 1024 * 1024 + 17)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    write(srv, "files/big.bin", &big);
    write(srv, "files/tree/a.txt", b"a\n");
    write(srv, "files/tree/sub/b.txt", b"b\n");
    write(
        srv,
        "_modules/hello.py",
        b"def world():\n    return 'hello from a custom module'\n",
    );
}

/// Every file under `dir`: relative path → (mode, content).
fn files_under(dir: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
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

fn run(version: &str) {
    let Some(venv) = require(venv_for(version)) else {
        return;
    };
    let _guard = serial();
    let t0 = Instant::now();
    let root = TempRoot::new().unwrap();
    let srv = root.path().join("srv");
    let outdir = root.path().join("out");
    make_tree(&srv, &outdir);
    let roots = Yaml::Raw(format!("{{base: ['{}']}}", srv.display()));
    let proots = Yaml::Raw(format!(
        "{{base: ['{}']}}",
        root.path().join("pillar").display()
    ));
    let py = Side::Salt(venv);
    let ours = Side::Ours(bins().unwrap());
    let pair = Pair::start(root.path(), &ours, &py, &py, ["fs-ours", "fs-salt"], |c| {
        c.set("file_roots", roots.clone())
            .set("pillar_roots", proots.clone())
    });
    step(t0, "both masters and minions up");
    let (ours_run, salt_run) = (&pair.ours, &pair.salt);
    let both = |args: &[&str], timeout: u32| pair.both(args, timeout, UNTIMED);

    // 1. Custom modules.
    let synced = both(&["saltutil.sync_modules"], 120);
    assert_eq!(synced, json!(["modules.hello"]));
    let hello = both(&["hello.world"], 60);
    assert_eq!(hello, json!("hello from a custom module"));
    step(t0, "saltutil.sync_modules, hello.world");

    // 2. Highstate.
    let hs = both(&["state.apply"], 180);
    let states = hs.as_object().unwrap();
    assert_eq!(states.len(), 4, "{hs:#}");
    assert!(
        states.values().all(|s| s["result"] == json!(true)),
        "{hs:#}"
    );
    let ours_files = files_under(&outdir.join(ours_run.id));
    let salt_files = files_under(&outdir.join(salt_run.id));
    assert_eq!(
        ours_files.keys().collect::<Vec<_>>(),
        [
            "big.bin",
            "index.html",
            "tree/a.txt",
            "tree/sub/b.txt",
            "web.conf"
        ]
    );
    assert!(ours_files == salt_files, "files written differ");
    assert_eq!(ours_files["web.conf"].1, b"answer=42\n");
    assert_eq!(ours_files["index.html"].0, 0o640);
    assert_eq!(
        ours_files["big.bin"].1,
        std::fs::read(srv.join("files/big.bin")).unwrap()
    );
    let again = both(&["state.apply"], 180);
    assert!(
        again
            .as_object()
            .unwrap()
            .values()
            .all(|s| s["changes"] == json!({}) && s["result"] == json!(true)),
        "{again:#}"
    );
    step(t0, "state.apply twice");

    // 3. state.sls.
    let sls = both(&["state.sls", "extra"], 120);
    assert_eq!(sls.as_object().unwrap().len(), 3, "{sls:#}");
    assert_eq!(
        std::fs::read(outdir.join(ours_run.id).join("extra/note")).unwrap(),
        b"note\n"
    );
    // Pillar inside a state: `{{ pillar[...] }}` and `salt['pillar.get']` rendered by the
    // Python minion from the pillar our master compiled, as from Salt's.
    for id in [ours_run.id, salt_run.id] {
        assert_eq!(
            std::fs::read(outdir.join(id).join("extra/pillar.txt")).unwrap(),
            b"blue-8080\n",
            "{id}"
        );
    }
    step(t0, "state.sls");

    // 4. cp.*
    let listed = both(&["cp.list_master"], 60);
    assert!(
        listed
            .as_array()
            .unwrap()
            .contains(&json!("files/tree/sub/b.txt")),
        "{listed}"
    );
    both(&["cp.list_master_dirs"], 60);
    both(&["cp.hash_file", "salt://files/big.bin"], 60);
    for r in [ours_run, salt_run] {
        let dest = root.path().join("got").join(r.id).join("big.bin");
        let arg = format!("{}", dest.display());
        let got = r.salt(
            &["cp.get_file", "salt://files/big.bin", &arg, "makedirs=True"],
            120,
        );
        assert_eq!(got, json!(arg));
        assert!(
            std::fs::read(&dest).unwrap() == std::fs::read(srv.join("files/big.bin")).unwrap(),
            "{}: cp.get_file copy differs",
            r.cli.side.label()
        );
    }
    step(
        t0,
        "cp.list_master, cp.list_master_dirs, cp.hash_file, cp.get_file",
    );
    drop(pair);
    assert_no_leftovers(root.path());
}
