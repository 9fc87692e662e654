//! `file.managed` from an `http://` source with `source_hash`: a file served by
//! `python3 -m http.server` on 127.0.0.1, applied by the Python 3007.17 `salt-call --local`
//! and by ours, each in its own root. States: `sha256=<hash>`, a bare md5 hash, a wrong hash
//! (fails with Salt's "does not match actual checksum" comment, no file written), none
//! (fails with Salt's "Unable to verify upstream hash"). The
//! `--out json` output (roots, times, pids blanked), the retcode and the files written match.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::require;
use salt_integration_tests::states_support::{self, local_minion, normalize};
use salt_integration_tests::{TempRoot, bins};

const BODY: &str = "hello from http\n";

fn conf(root: &Path, port: u16) {
    let srv = root.join("srv");
    std::fs::create_dir_all(&srv).unwrap();
    local_minion(root, &srv, None, "").unwrap();
    let url = format!("http://127.0.0.1:{port}/pkg.txt");
    // sha256sum / md5sum of BODY.
    let sha256 = "9347bf9e5b6f42fa181ab19631e9011b836363d3a08b05a8faf318868be5882e";
    let md5 = "12823156f9fa3a23a174a035d9091924";
    let out = root.join("out").display().to_string();
    std::fs::write(
        srv.join("web.sls"),
        format!(
            "good-sha256:\n  file.managed:\n    - name: {out}/a.txt\n    - source: {url}\n    - source_hash: sha256={sha256}\n\
             good-md5:\n  file.managed:\n    - name: {out}/b.txt\n    - source: {url}\n    - source_hash: {md5}\n\
             bad-hash:\n  file.managed:\n    - name: {out}/c.txt\n    - source: {url}\n    - source_hash: sha256={}\n\
             no-hash:\n  file.managed:\n    - name: {out}/d.txt\n    - source: {url}\n",
            "0".repeat(64)
        ),
    )
    .unwrap();
}

fn salt_call(bin: &Path, root: &Path) -> (String, Option<i32>) {
    states_support::salt_call(Command::new(bin), root, "json", &["state.sls", "web"]).unwrap()
}

fn files(root: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(root.join("out"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Kills the http server when the test ends, pass or fail.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn http_source_with_source_hash_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let web = tmp.path().join("web");
    std::fs::create_dir_all(&web).unwrap();
    std::fs::write(web.join("pkg.txt"), BODY).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = Server(
        Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
            ])
            .current_dir(&web)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "http.server did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    conf(&py_root, port);
    conf(&rs_root, port);
    let t = Instant::now();
    let (py_out, py_rc) = salt_call(&venv.bin("salt-call"), &py_root);
    let py_t = t.elapsed();
    let t = Instant::now();
    let (rs_out, rs_rc) = salt_call(&ours, &rs_root);
    println!(
        "salt-call --local state.sls web (4 http sources): Python {:.2} s, ours {:.2} s",
        py_t.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
    assert!(
        py_out.contains("does not match actual checksum"),
        "Salt's run is not the expected one:\n{py_out}"
    );
    assert_eq!(
        normalize(&rs_out, &rs_root),
        normalize(&py_out, &py_root),
        "our salt-call --out json differs from Salt 3007.17's"
    );
    assert_eq!(rs_rc, py_rc, "retcode");
    assert_eq!(files(&rs_root), files(&py_root));
    assert_eq!(
        files(&rs_root),
        [
            ("a.txt".to_owned(), BODY.to_owned()),
            ("b.txt".to_owned(), BODY.to_owned())
        ]
    );
}
