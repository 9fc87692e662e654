//! TLS to the group database (`postgres.sslmode`, docs/group.md "TLS"): a real PostgreSQL
//! started by the harness with `ssl = on`, a CA and a server certificate made here with the
//! `openssl` command, listening on 127.0.0.1, and a `pg_hba.conf` that takes the group's
//! database over TLS only (`hostssl`); PostgreSQL, root and `openssl` are required
//! (a failure under CI=true where missing, else a recorded skip).
//!
//! Checked, with the group store in this process and with real `salt-master`/`salt-key`:
//! `disable` is refused by the server, by name; `allow` falls back to TLS, `prefer` and
//! `require` use it (the server's `pg_stat_ssl` says so); `verify-full` with the right CA
//! works, with a wrong CA or a host name the certificate does not name fails with the
//! certificate error (no fallback to plain); a master given the wrong CA keeps running
//! (its local keys), says why at start, and `salt-key` refuses changes naming the error.
//! Prints the connect time of plain TCP, `require` and `verify-full` (median of 20).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use salt_integration_tests::pg::{PgOptions, Postgres};
use salt_integration_tests::process::ProcSpec;
use salt_integration_tests::root::TempRoot;
use salt_integration_tests::wait::{wait_for_log, wait_until};
use salt_integration_tests::{MasterConf, bins, cli, command, ports, require};
use salt_keystore::{KeyChanges, KeyState, KeyStore};
use salt_pgstore::{SslMode, Tls};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA named `name` in `dir`: `<name>.crt`, `<name>.key`.
fn ca(dir: &Path, name: &str) -> PathBuf {
    let (crt, key) = (format!("{name}.crt"), format!("{name}.key"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &crt,
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    dir.join(crt)
}

/// A server certificate for 127.0.0.1 signed by CA `ca`: (`server.crt`, `server.key`).
fn server_cert(dir: &Path, ca: &str) -> (PathBuf, PathBuf) {
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").expect("ext");
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=salt-rs test db",
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ],
    );
    (dir.join("server.crt"), dir.join("server.key"))
}

/// The group databases' `pg_hba.conf`: `postgres` over TLS only; `plain` (for the
/// plain-TCP figure) without; the harness's socket.
const HBA: &str = "local all all trust\n\
                   hostssl postgres all 127.0.0.1/32 trust\n\
                   host plain all 127.0.0.1/32 trust\n";

fn settings(pg: &Postgres, host: &str, db: &str, tls: Tls) -> salt_pgstore::Settings {
    salt_pgstore::Settings {
        cluster_id: "g1".into(),
        master: "t".into(),
        host: host.into(),
        port: pg.port(),
        user: "postgres".into(),
        pass: String::new(),
        db: db.into(),
        tls,
        rotate_on_revoke: true,
    }
}

fn tls(mode: SslMode, root: Option<&Path>) -> Tls {
    Tls {
        mode,
        rootcert: root.map(Path::to_path_buf),
        ..Tls::default()
    }
}

/// A group store's first sync (connect, schema, catch-up): Ok or the error text.
fn sync(dir: &Path, s: salt_pgstore::Settings) -> Result<(), String> {
    let store = Arc::new(KeyStore::open(dir).map_err(|e| e.to_string())?);
    let g = salt_pgstore::Group::new(s, store).map_err(|e| e.to_string())?;
    g.sync().map(|_| ()).map_err(|e| e.to_string())
}

/// Median time of `n` connects (a new job cache's connect: one connection, the schema
/// check) with `s`.
fn connect_time(root: &Path, s: &salt_pgstore::Settings, n: usize) -> Duration {
    let mut v: Vec<Duration> = (0..n)
        .map(|i| {
            let db =
                salt_pgstore::JobDb::new(s.clone(), root.join(format!("spool{i}"))).expect("jobdb");
            let t = Instant::now();
            db.connect().expect("connect");
            t.elapsed()
        })
        .collect();
    v.sort();
    v[n / 2]
}

#[test]
#[allow(clippy::too_many_lines)]
fn group_tls_sslmodes() {
    let root = TempRoot::new().expect("root");
    let Some(_) = require(command("openssl")) else {
        return;
    };
    let certs = root.dir("certs").expect("certs");
    let good = ca(&certs, "ca");
    let wrong = ca(&certs, "other-ca");
    let (crt, key) = server_cert(&certs, "ca");
    let opts = PgOptions {
        tcp: true,
        ssl: Some((crt, key)),
        hba: Some(HBA.to_owned()),
    };
    let Some(pg) = Postgres::start_with(&root.dir("pg").expect("pg"), &opts).expect("pg") else {
        return;
    };
    pg.psql("postgres", "CREATE DATABASE plain")
        .expect("createdb");
    let ip = "127.0.0.1";
    let dir = |n: &str| root.dir(n).expect("dir");

    // The server takes `postgres` over TLS only: `disable` is refused, by the server.
    let e = sync(
        &dir("k-disable"),
        settings(&pg, ip, "postgres", tls(SslMode::Disable, None)),
    )
    .expect_err("sslmode disable must be refused");
    assert!(
        e.contains("pg_hba.conf") && e.contains("no encryption"),
        "{e}"
    );
    // `allow` tries plain, is refused, retries with TLS; `prefer` and `require` use TLS.
    for mode in [SslMode::Allow, SslMode::Prefer, SslMode::Require] {
        sync(
            &dir(mode.name()),
            settings(&pg, ip, "postgres", tls(mode, None)),
        )
        .unwrap_or_else(|e| panic!("sslmode {}: {e}", mode.name()));
    }
    // verify-full with the right CA.
    let full = settings(&pg, ip, "postgres", tls(SslMode::VerifyFull, Some(&good)));
    sync(&dir("k-full"), full.clone()).expect("verify-full with the right CA");
    // Every connection of salt-rs on TCP is TLS (the socket's psql is not salt-rs).
    let plain = pg
        .psql(
            "postgres",
            "SELECT count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
             WHERE a.application_name = 'salt-rs' AND a.client_addr IS NOT NULL AND NOT s.ssl",
        )
        .expect("pg_stat_ssl");
    assert_eq!(plain, "0", "a salt-rs connection without TLS");
    // The wrong CA, and a host name the certificate does not name: the certificate error,
    // never a fallback to plain.
    for (what, host, root_ca, want) in [
        ("wrong CA", ip, &wrong, "certificate verify failed"),
        (
            "wrong CA, verify-ca",
            ip,
            &wrong,
            "certificate verify failed",
        ),
        ("host name", "localhost", &good, "certificate verify failed"),
    ] {
        let mode = if what.ends_with("verify-ca") {
            SslMode::VerifyCa
        } else {
            SslMode::VerifyFull
        };
        let e = sync(
            &dir(&format!("k-{what}")),
            settings(&pg, host, "postgres", tls(mode, Some(root_ca))),
        )
        .expect_err(what);
        assert!(e.contains("TLS") && e.contains(want), "{what}: {e}");
        assert!(
            e.contains(mode.name()),
            "{what}: the error names the sslmode: {e}"
        );
    }
    // A CA file that is not there: named at once.
    let missing = certs.join("missing.crt");
    let e = sync(
        &dir("k-missing"),
        settings(
            &pg,
            ip,
            "postgres",
            tls(SslMode::VerifyFull, Some(&missing)),
        ),
    )
    .expect_err("missing CA file");
    assert!(e.contains("missing.crt"), "{e}");
    // A Unix socket never does TLS (as libpq), whatever the sslmode.
    let sock = pg.host().display().to_string();
    sync(
        &dir("k-sock"),
        settings(
            &pg,
            &sock,
            "postgres",
            tls(SslMode::VerifyFull, Some(&wrong)),
        ),
    )
    .expect("the socket is plain");

    // Figures: the connect time, plain TCP and TLS.
    let n = 20;
    let t_plain = connect_time(
        &dir("t-plain"),
        &settings(&pg, ip, "plain", tls(SslMode::Disable, None)),
        n,
    );
    let t_req = connect_time(
        &dir("t-req"),
        &settings(&pg, ip, "postgres", tls(SslMode::Require, None)),
        n,
    );
    let t_full = connect_time(&dir("t-full"), &full, n);
    println!(
        "group database connect (median of {n}, connection + schema check): plain TCP {:.1} ms, \
         TLS require {:.1} ms, TLS verify-full {:.1} ms",
        t_plain.as_secs_f64() * 1e3,
        t_req.as_secs_f64() * 1e3,
        t_full.as_secs_f64() * 1e3
    );

    // Real masters: require, verify-full with the right CA, verify-full with a wrong CA.
    let b = bins().expect("bins");
    let master = |name: &str, extra: &str| {
        let (publish, ret) = ports::free_port_pair().expect("ports");
        let conf = MasterConf::new(root.path().join(name))
            .id(name)
            .ports(publish, ret);
        let conf_dir = conf.write().expect("conf");
        let file = conf_dir.join("master");
        let mut text = std::fs::read_to_string(&file).expect("conf");
        text.push_str(&format!(
            "cluster_id: g1\nkeys.cache_driver: postgres\nmaster_job_cache: pgjsonb\n\
             postgres.host: {ip}\npostgres.port: {}\npostgres.user: postgres\n\
             postgres.db: postgres\n{extra}",
            pg.port()
        ));
        std::fs::write(&file, text).expect("conf");
        let proc = ProcSpec::new(name, &b.master, conf.dir())
            .args(["-c".into(), conf_dir.clone().into_os_string()])
            .args(["-l", "info"])
            .spawn()
            .expect("master");
        (proc, conf_dir, conf.pki_dir())
    };
    let pem = salt_pki::PrivateKey::generate(2048)
        .expect("key")
        .public_key()
        .to_pem();
    let wait = Duration::from_secs(60);
    let (mut ma, _, pki_a) = master("ma", "postgres.sslmode: require\n");
    wait_for_log(&ma, "keys up to change", wait).expect("require: the master reached the database");
    let (mut mb, conf_b, pki_b) = master(
        "mb",
        &format!(
            "returner.pgjsonb.sslmode: verify-full\nreturner.pgjsonb.sslrootcert: {}\n",
            good.display()
        ),
    );
    wait_for_log(&mb, "keys up to change", wait)
        .expect("verify-full: the master reached the database");
    // A key recorded through the database (verify-full) reaches both masters' keys.
    let wstore = Arc::new(KeyStore::open(dir("writer")).expect("store"));
    let writer = salt_pgstore::Group::new(full.clone(), wstore).expect("group");
    writer.sync().expect("sync");
    writer.put(KeyState::Pending, "m1", &pem).expect("put");
    for pki in [&pki_a, &pki_b] {
        wait_until("the key on every master", wait, || {
            pki.join("minions_pre/m1").exists()
        })
        .expect("the key reached the masters");
    }
    let out = cli::salt_key(&b.key, &conf_b, &["-y", "-a", "m1"], wait).expect("salt-key -a");
    assert!(out.success(), "{}{}", out.stdout, out.stderr);
    wait_until("accepted on A", wait, || pki_a.join("minions/m1").exists())
        .expect("accepted through B, on A");
    let (mut mc, conf_c, pki_c) = master(
        "mc",
        &format!(
            "postgres.sslmode: verify-full\npostgres.sslrootcert: {}\n",
            wrong.display()
        ),
    );
    wait_for_log(&mc, "certificate verify failed", wait).expect("the wrong CA is named at start");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        mc.is_running(),
        "the master with the wrong CA keeps running"
    );
    let log = mc.output();
    assert!(
        log.contains("verify-full"),
        "the log names the sslmode: {log}"
    );
    // A pending key in C's own copy: `salt-key -a` on C must refuse, naming the error.
    std::fs::create_dir_all(pki_c.join("minions_pre")).expect("pre");
    std::fs::write(pki_c.join("minions_pre/m2"), &pem).expect("pem");
    let out = cli::salt_key(&b.key, &conf_c, &["-y", "-a", "m2"], wait).expect("salt-key");
    assert!(
        !out.success(),
        "salt-key changes through the wrong CA must fail"
    );
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(text.contains("certificate verify failed"), "{text}");
    assert!(!pki_a.join("minions/m2").exists());
    for m in [&mut ma, &mut mb, &mut mc] {
        m.stop(Duration::from_secs(10));
    }
}
