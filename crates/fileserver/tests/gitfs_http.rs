//! gitfs over smart HTTP with `user`/`password` (issue 36): a bare repository served by
//! `git http-backend` behind Basic authentication (`scripts/git-http-auth.py`, loopback).
//! The right credentials fetch and serve it; a wrong password is a failed update naming the
//! remote (never the password) with nothing served; a password over plain `http://` without
//! `insecure_auth` is refused as Salt refuses it. Over HTTPS with a self-signed certificate,
//! `ssl_verify` (default True) refuses the server and `ssl_verify: False` fetches. Salt's
//! GitPython provider has no `user`/`password` (pygit2 only), so there is no Salt peer here.
//!
//! Needs `git` (with `git http-backend`), `python3` and `openssl`: required under `CI=true`.
#![allow(clippy::unwrap_used)]

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use salt_config::{LoadOptions, MasterConfig};
use salt_fileserver::FileServer;
use salt_proto::Value;
use salt_testkit::{Missing, git, require, workspace_root, write_file as write};

const PASSWORD: &str = "s3cret-Pw-4711";

/// The HTTP server; killed and reaped on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn prerequisites() -> Option<()> {
    let git_ok = Command::new("git")
        .args(["http-backend", "-h"])
        .output()
        .is_ok();
    let py_ok = Command::new("python3").arg("--version").output().is_ok();
    let openssl_ok = Command::new("openssl").arg("version").output().is_ok();
    require(if git_ok && py_ok && openssl_ok {
        Ok(())
    } else {
        Err(Missing::new(
            "gitfs_http: `git http-backend`, `python3` and `openssl`",
        ))
    })
}

/// Starts the server on `root` for `u`/`PASSWORD` (HTTPS with `tls`: certificate, key);
/// its port.
fn serve(root: &Path, tls: Option<(&Path, &Path)>) -> (Server, u16) {
    let mut cmd = Command::new("python3");
    cmd.arg(workspace_root().join("scripts/git-http-auth.py"))
        .arg(root)
        .args(["u", PASSWORD]);
    if let Some((cert, key)) = tls {
        cmd.arg(cert).arg(key);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().unwrap();
    (Server(child), port)
}

/// A master's file server for the config `yaml`, caching under `cachedir`.
fn file_server(yaml: &str, cachedir: &Path) -> FileServer {
    let cfg = MasterConfig::from_yaml_str(yaml, &LoadOptions::new("/nonexistent"))
        .unwrap()
        .config;
    FileServer::new(cfg.fileserver, cfg.hash_type, cachedir.to_path_buf())
}

fn files(fs: &FileServer) -> Vec<String> {
    let load = Value::Map(vec![
        (Value::from("cmd"), Value::from("_file_list")),
        (Value::from("saltenv"), Value::from("base")),
    ]);
    let v = fs.handle("_file_list", &load, "m1").unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

/// A bare `repos/states.git` under `t` with `top.sls` and `web/init.sls`; `repos`.
fn repos(t: &Path) -> std::path::PathBuf {
    let work = t.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    write(&work, "top.sls", "base:\n  '*': [web]\n");
    write(&work, "web/init.sls", "x: 1\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "one"]);
    let repos = t.join("repos");
    std::fs::create_dir_all(&repos).unwrap();
    git(t, &["clone", "-q", "--bare", "work", "repos/states.git"]);
    repos
}

#[test]
fn user_and_password_over_http() {
    if prerequisites().is_none() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let repos = repos(t.path());
    let (_server, port) = serve(&repos, None);
    let url = format!("http://127.0.0.1:{port}/states.git");
    let server = |password: &str, insecure: bool, cache: &str| {
        let yaml = format!(
            "fileserver_backend: [gitfs]\ngitfs_remotes:\n  - {url}:\n    - user: u\n    \
             - password: {password}\n{}",
            if insecure {
                "    - insecure_auth: True\n"
            } else {
                ""
            }
        );
        file_server(&yaml, &t.path().join(cache))
    };

    let good = server(PASSWORD, true, "c-good");
    let report = good.gitfs().unwrap().update(None);
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(files(&good), ["top.sls", "web/init.sls"]);
    assert_eq!(good.envs(), ["base"]);

    let bad = server("wrong-password", true, "c-bad");
    let report = bad.gitfs().unwrap().update(None);
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert!(report.errors[0].contains("states.git"), "{report:?}");
    assert!(!report.errors[0].contains("wrong-password"), "{report:?}");
    assert!(files(&bad).is_empty());

    let plain = server(PASSWORD, false, "c-plain");
    let report = plain.gitfs().unwrap().update(None);
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert!(report.errors[0].contains("insecure_auth"), "{report:?}");
    assert!(!report.errors[0].contains(PASSWORD), "{report:?}");
    assert!(files(&plain).is_empty());
}

#[test]
fn ssl_verify_over_https() {
    if prerequisites().is_none() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let repos = repos(t.path());
    let (cert, key) = (t.path().join("cert.pem"), t.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let (_server, port) = serve(&repos, Some((&cert, &key)));
    let url = format!("https://127.0.0.1:{port}/states.git");
    let server = |verify: Option<bool>, cache: &str| {
        let yaml = format!(
            "fileserver_backend: [gitfs]\ngitfs_remotes:\n  - {url}:\n    - user: u\n    \
             - password: {PASSWORD}\n{}",
            verify.map_or(String::new(), |v| format!("    - ssl_verify: {v}\n"))
        );
        file_server(&yaml, &t.path().join(cache))
    };
    // The default verifies the server's certificate: a self-signed one is refused.
    let strict = server(None, "c-strict");
    let report = strict.gitfs().unwrap().update(None);
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert!(report.errors[0].contains("states.git"), "{report:?}");
    assert!(!report.errors[0].contains(PASSWORD), "{report:?}");
    assert!(files(&strict).is_empty());

    let lax = server(Some(false), "c-lax");
    let report = lax.gitfs().unwrap().update(None);
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(files(&lax), ["top.sls", "web/init.sls"]);
}
