//! The roots file server on a real directory tree: reply shapes, listings, hashing, chunked
//! serving, hostile paths, `__env__`, `cp.push`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use salt_config::{FileServerConfig, HashType, LoadOptions, MasterConfig};
use salt_fileserver::FileServer;
use salt_fileserver::inline::Budget;
use salt_proto::msg::FileLoad;
use salt_proto::{MapBuilder, Value, ValueExt};

fn cfg(yaml: &str) -> FileServerConfig {
    MasterConfig::from_yaml_str(yaml, &LoadOptions::new("/nonexistent"))
        .unwrap()
        .config
        .fileserver
}

fn write(root: &Path, rel: &str, data: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
}

struct Tree {
    _dir: tempfile::TempDir,
    base: PathBuf,
    outside: PathBuf,
    cache: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let outside = dir.path().join("outside");
    let cache = dir.path().join("cache");
    write(&base, "top.sls", b"base:\n  '*':\n    - web\n");
    write(&base, "web/init.sls", b"x:\n  test.nop\n");
    write(&base, "files/a.txt", b"hello\n");
    write(&base, ".git/config", b"secret");
    std::fs::create_dir_all(base.join("empty")).unwrap();
    write(&outside, "passwd", b"root:x:0:0\n");
    std::os::unix::fs::symlink(outside.join("passwd"), base.join("files/escape")).unwrap();
    std::os::unix::fs::symlink("a.txt", base.join("files/inside")).unwrap();
    Tree {
        _dir: dir,
        base,
        outside,
        cache,
    }
}

fn server(t: &Tree, extra: &str) -> FileServer {
    let yaml = format!(
        "file_roots:\n  base: [{}]\n  __env__: [{}/__env__]\nfile_ignore_regex: ['/\\.git']\nfile_ignore_glob: ['.git*']\n{extra}",
        t.base.display(),
        t.outside.display()
    );
    FileServer::new(cfg(&yaml), HashType::Sha256, t.cache.clone())
}

fn load(pairs: &[(&str, Value)]) -> Value {
    let mut b = MapBuilder::new();
    for (k, v) in pairs {
        b = b.insert(k, v.clone());
    }
    b.build()
}

fn ask(fs: &FileServer, cmd: &str, pairs: &[(&str, Value)]) -> Value {
    fs.handle(cmd, &load(pairs), "m1").unwrap()
}

fn texts(v: &Value) -> Vec<String> {
    v.as_items()
        .unwrap()
        .iter()
        .map(|x| x.as_text().unwrap().to_owned())
        .collect()
}

#[test]
fn listings_are_sorted_filtered_and_prefixed() {
    let t = tree();
    let fs = server(&t, "");
    let env = ("saltenv", Value::from("base"));
    let files = texts(&ask(&fs, "_file_list", std::slice::from_ref(&env)));
    assert_eq!(
        files,
        [
            "files/a.txt",
            "files/escape",
            "files/inside",
            "top.sls",
            "web/init.sls"
        ]
    );
    let pre = texts(&ask(
        &fs,
        "_file_list",
        &[env.clone(), ("prefix", Value::from("/web/"))],
    ));
    assert_eq!(pre, ["web/init.sls"]);
    assert_eq!(
        texts(&ask(&fs, "_dir_list", std::slice::from_ref(&env))),
        ["empty", "files", "web"]
    );
    assert_eq!(
        texts(&ask(
            &fs,
            "_file_list_emptydirs",
            std::slice::from_ref(&env)
        )),
        ["empty"]
    );
    let links = ask(&fs, "_symlink_list", std::slice::from_ref(&env));
    assert_eq!(
        links.get("files/inside").and_then(ValueExt::as_text),
        Some("a.txt")
    );
    assert!(
        links.get("files/escape").is_none(),
        "escaping link listed: {links}"
    );
    assert_eq!(ask(&fs, "_file_list", &[]), Value::Array(vec![]));
    assert_eq!(
        ask(&fs, "_file_list", &[("saltenv", Value::from("nope/x"))]),
        Value::Array(vec![])
    );
    assert_eq!(texts(&ask(&fs, "_file_envs", &[])), ["__env__", "base"]);
}

#[test]
fn find_hash_and_serve_follow_salt_shapes() {
    let t = tree();
    let fs = server(&t, "file_buffer_size: 4\n");
    let q = |p: &str| [("path", Value::from(p)), ("saltenv", Value::from("base"))];
    let h = ask(&fs, "_file_hash", &q("files/a.txt"));
    assert_eq!(
        h.get("hsum").and_then(ValueExt::as_text),
        Some(hex::encode(HashType::Sha256.digest(b"hello\n")).as_str())
    );
    assert_eq!(
        h.get("hash_type").and_then(ValueExt::as_text),
        Some("sha256")
    );
    assert_eq!(ask(&fs, "_file_hash", &q("missing")), Value::from(""));
    let hs = ask(&fs, "_file_hash_and_stat", &q("files/a.txt"));
    assert_eq!(hs.as_items().unwrap()[1].as_items().unwrap().len(), 10);
    assert_eq!(
        ask(&fs, "_file_hash_and_stat", &q("missing")),
        Value::Array(vec![Value::from(""), Value::Nil])
    );
    let f = ask(&fs, "_file_find", &q("files/./a.txt"));
    assert_eq!(
        f.get("rel").and_then(ValueExt::as_text),
        Some("files/a.txt")
    );
    assert_eq!(f.get("back").and_then(ValueExt::as_text), Some("roots"));
    // Chunks of file_buffer_size from loc; past the end, empty data.
    let mut got = Vec::new();
    for loc in (0u64..8).step_by(4) {
        let mut l = q("files/a.txt").to_vec();
        l.push(("loc", Value::from(loc)));
        let r = ask(&fs, "_serve_file", &l);
        assert_eq!(
            r.get("dest").and_then(ValueExt::as_text),
            Some("files/a.txt")
        );
        got.extend_from_slice(r.get("data").unwrap().as_bytes().unwrap());
    }
    assert_eq!(got, b"hello\n");
    let mut l = q("files/a.txt?saltenv=base").to_vec();
    l.push(("loc", Value::from(0)));
    l.push(("gzip", Value::from(5)));
    let r = ask(&fs, "_serve_file", &l);
    assert_eq!(r.get("gzip"), Some(&Value::from(5)));
    let z = r.get("data").unwrap().as_bytes().unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(z), &mut out).unwrap();
    assert_eq!(out, "hell");
    // A missing path key: Salt's empty reply.
    assert_eq!(
        ask(&fs, "_serve_file", &[("path", Value::from("x"))]),
        load(&[("data", Value::from("")), ("dest", Value::from(""))])
    );
}

#[test]
fn hostile_paths_get_not_found_and_read_nothing() {
    let t = tree();
    let fs = server(&t, "fileserver_followsymlinks: False\n");
    let empty = load(&[("path", Value::from("")), ("rel", Value::from(""))]);
    for p in [
        "../outside/passwd",
        "/etc/passwd",
        "files/../../outside/passwd",
        "files/escape",
        "files/a.txt\0",
        ".git/config",
        "x?saltenv=../outside",
    ] {
        let q = [("path", Value::from(p)), ("saltenv", Value::from("base"))];
        assert_eq!(ask(&fs, "_file_find", &q), empty, "{p:?}");
        assert_eq!(ask(&fs, "_file_hash", &q), Value::from(""), "{p:?}");
    }
    let long = "a/".repeat(100_000);
    let q = [
        ("path", Value::from(long.as_str())),
        ("saltenv", Value::from("base")),
    ];
    assert_eq!(ask(&fs, "_file_find", &q), empty);
    // __env__ with a name that would move the root.
    let q = [
        ("path", Value::from("passwd")),
        ("saltenv", Value::from("..")),
    ];
    assert_eq!(ask(&fs, "_file_find", &q), empty);
    let q = [
        ("path", Value::from("files/a.txt")),
        ("saltenv", Value::from("base")),
        ("loc", Value::from(-1)),
    ];
    assert_eq!(ask(&fs, "_serve_file", &q), Value::from(""));
    let q = [
        ("path", Value::from("files/a.txt")),
        ("saltenv", Value::from("base")),
        ("loc", Value::from(u64::MAX)),
    ];
    let r = ask(&fs, "_serve_file", &q);
    assert_eq!(r.get("data").unwrap().as_bytes(), Some(&b""[..]));
}

#[test]
fn followed_symlinks_are_served_as_salt_does() {
    let t = tree();
    let fs = server(&t, "");
    let q = [
        ("path", Value::from("files/escape")),
        ("saltenv", Value::from("base")),
    ];
    assert_ne!(ask(&fs, "_file_hash", &q), Value::from(""));
}

#[test]
fn env_substitution_and_changes_are_seen() {
    let t = tree();
    write(&t.outside, "dev/f.sls", b"a");
    let fs = server(&t, "");
    let dev = ("saltenv", Value::from("dev"));
    assert_eq!(
        texts(&ask(&fs, "_file_list", std::slice::from_ref(&dev))),
        ["f.sls"]
    );
    write(&t.base, "new.sls", b"n");
    let base = ("saltenv", Value::from("base"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let files = texts(&ask(&fs, "_file_list", std::slice::from_ref(&base)));
        if files.contains(&"new.sls".to_owned()) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "change not seen: {files:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // A rewritten file gets a new hash.
    let q = [
        ("path", Value::from("new.sls")),
        ("saltenv", Value::from("base")),
    ];
    let h1 = ask(&fs, "_file_hash", &q);
    write(&t.base, "new.sls", b"changed");
    let h2 = ask(&fs, "_file_hash", &q);
    assert_ne!(h1, h2);
}

#[test]
fn master_opts_and_tops() {
    let t = tree();
    let fs = server(&t, "state_top: mytop.sls\nenv_order: [base]\n");
    let o = ask(&fs, "_master_opts", &[]);
    let keys: Vec<&str> = o
        .as_entries()
        .unwrap()
        .iter()
        .map(|(k, _)| k.as_text().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "file_roots",
            "top_file_merging_strategy",
            "env_order",
            "default_top",
            "renderer",
            "failhard",
            "state_top",
            "state_top_saltenv",
            "nodegroups",
            "state_auto_order",
            "state_events",
            "state_aggregate",
            "jinja_env",
            "jinja_sls_env",
            "jinja_lstrip_blocks",
            "jinja_trim_blocks"
        ]
    );
    assert_eq!(
        o.get("state_top").and_then(ValueExt::as_text),
        Some("mytop.sls")
    );
    let e = ask(&fs, "_master_opts", &[("env_only", Value::Boolean(true))]);
    assert_eq!(e.as_entries().unwrap().len(), 4);
    assert_eq!(ask(&fs, "_master_tops", &[]), Value::Map(vec![]));
    assert!(fs.handle("_pillar", &Value::Map(vec![]), "m1").is_none());
}

#[test]
fn file_recv_only_when_enabled_and_inside_the_cache() {
    let t = tree();
    let push = |fs: &FileServer, path: &[&str], loc: i64| {
        ask(
            fs,
            "_file_recv",
            &[
                (
                    "path",
                    Value::Array(path.iter().map(|p| Value::from(*p)).collect()),
                ),
                ("loc", Value::from(loc)),
                ("data", Value::Binary(b"data".to_vec())),
            ],
        )
    };
    let off = server(&t, "");
    assert_eq!(push(&off, &["tmp", "x"], 0), Value::Boolean(false));
    let on = server(&t, "file_recv: True\nfile_recv_max_size: 1\n");
    assert_eq!(push(&on, &["tmp", "x"], 0), Value::Boolean(true));
    assert_eq!(
        std::fs::read(t.cache.join("minions/m1/files/tmp/x")).unwrap(),
        b"data"
    );
    assert_eq!(push(&on, &["..", "x"], 0), Value::Boolean(false));
    assert_eq!(push(&on, &["/etc", "x"], 0), Value::Boolean(false));
    assert_eq!(push(&on, &["tmp", "x"], -1), Value::Boolean(false));
    assert_eq!(push(&on, &["tmp", "x"], 1 << 20), Value::Boolean(false));
}

fn serve_req(load: &Value) -> salt_proto::msg::ServeFile<'_> {
    match FileLoad::read("_serve_file", load) {
        Some(FileLoad::Serve(s)) => s,
        other => panic!("{other:?}"),
    }
}

/// The in-place `_serve_file` writes exactly the bytes of the encoded ordinary reply, or
/// hands back the ordinary reply (miss, bad loc, gzip).
#[test]
fn serve_file_into_matches_the_encoded_reply() {
    let t = tree();
    let big: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
    write(&t.base, "files/big.bin", &big);
    write(
        &t.base,
        &format!("files/{}.txt", "n".repeat(40)),
        b"long name",
    );
    let fs = server(&t, "file_buffer_size: 66000\n");
    let long = format!("files/{}.txt", "n".repeat(40));
    for (path, loc) in [
        ("files/a.txt", Value::from(0)),
        ("files/a.txt", Value::from(3)),
        ("files/a.txt", Value::from(99)),
        ("files/big.bin", Value::from(0)),
        ("files/big.bin", Value::from(65_900)),
        ("files/big.bin", Value::from(69_800)),
        (long.as_str(), Value::from(0)),
        ("missing", Value::from(0)),
        ("files/a.txt", Value::from(-1)),
    ] {
        let l = load(&[
            ("path", Value::from(path)),
            ("saltenv", Value::from("base")),
            ("loc", loc.clone()),
        ]);
        let want = salt_proto::encode(&ask(
            &fs,
            "_serve_file",
            &[
                ("path", Value::from(path)),
                ("saltenv", Value::from("base")),
                ("loc", loc.clone()),
            ],
        ));
        let mut out = b"prefix".to_vec();
        let got = match fs.serve_file_into(&serve_req(&l), &mut out, &Budget::unlimited()) {
            Ok(()) => out[6..].to_vec(),
            Err(v) => {
                assert_eq!(out, b"prefix", "nothing written on the ordinary path");
                salt_proto::encode(&v)
            }
        };
        assert_eq!(got, want, "{path} at {loc}");
    }
    let gz = load(&[
        ("path", Value::from("files/a.txt")),
        ("saltenv", Value::from("base")),
        ("loc", Value::from(0)),
        ("gzip", Value::from(5)),
    ]);
    let mut out = Vec::new();
    let r = fs
        .serve_file_into(&serve_req(&gz), &mut out, &Budget::unlimited())
        .unwrap_err();
    assert!(out.is_empty());
    assert_eq!(r.get("gzip"), Some(&Value::from(5)));
}

/// Small files are served from memory yet follow rewrites; on a socket thread's quick
/// budget (`salt_fileserver::inline`) cheap requests are answered and long work is declined.
#[test]
fn small_files_from_memory_and_the_quick_budget() {
    let quick = |fs: &FileServer, cmd: &str, pairs: &[(&str, Value)], b: &Budget| {
        fs.answer(FileLoad::read(cmd, &load(pairs)).unwrap(), "m1", b)
    };
    let t = tree();
    write(&t.base, "big.bin", &vec![7u8; 100 * 1024]);
    let fs = server(&t, "file_buffer_size: 1048576\n");
    let q = |p: &str| [("path", Value::from(p)), ("saltenv", Value::from("base"))];
    let serve = |fs: &FileServer, p: &str| {
        let mut load = q(p).to_vec();
        load.push(("loc", Value::from(0)));
        ask(fs, "_serve_file", &load)
            .get("data")
            .and_then(ValueExt::as_bytes)
            .map(<[u8]>::to_vec)
    };
    // No index yet: building one is declined under the guard.
    {
        let g = Budget::quick();
        let _ = quick(&fs, "_file_hash", &q("files/a.txt"), &g);
        assert!(
            g.declined(),
            "an index build is not done on a socket thread"
        );
    }
    assert_eq!(serve(&fs, "files/a.txt").unwrap(), b"hello\n");
    {
        let g = Budget::quick();
        let h = quick(&fs, "_file_hash", &q("files/a.txt"), &g);
        let mut load = q("files/a.txt").to_vec();
        load.push(("loc", Value::from(0)));
        let served = quick(&fs, "_serve_file", &load, &g);
        assert_eq!(
            served.get("data").and_then(ValueExt::as_bytes),
            Some(&b"hello\n"[..])
        );
        assert!(!g.declined(), "small files are answered under the guard");
        let want = HashType::Sha256.digest(b"hello\n");
        assert_eq!(
            h.get("hsum").and_then(ValueExt::as_text).unwrap(),
            hex::encode(want)
        );
    }
    for cmd in ["_file_hash", "_serve_file"] {
        let g = Budget::quick();
        let mut load = q("big.bin").to_vec();
        load.push(("loc", Value::from(0)));
        let _ = quick(&fs, cmd, &load, &g);
        assert!(g.declined(), "{cmd} of 100 KiB is declined under the guard");
    }
    assert_eq!(serve(&fs, "big.bin").unwrap().len(), 100 * 1024);
    let _ = ask(&fs, "_file_hash", &q("big.bin"));
    {
        let g = Budget::quick();
        let _ = quick(&fs, "_file_hash", &q("big.bin"), &g);
        assert!(
            !g.declined(),
            "a hash computed once is answered from memory"
        );
    }
    write(&t.base, "files/a.txt", b"hello, rewritten\n");
    assert_eq!(
        serve(&fs, "files/a.txt").unwrap(),
        b"hello, rewritten\n",
        "a rewritten small file is served anew"
    );
}
