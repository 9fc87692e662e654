//! The reactor (issue 35, items 1 and 6) against Salt 3007.17's master as the reference, with
//! Python minions; the same steps and checks run on Salt's master first, then on ours:
//!
//! 1. `salt/minion/*/start` → a `local.cmd.run` reaction (new-style `args`) touches
//!    `started-<id>` on the minion that started;
//! 2. a custom `event.send` tag (`myco/deploy app=... target=...`) → a `runner.test.arg`
//!    reaction reading `data` (its `salt/run/<jid>/ret` returns `{"args": [], "kwargs":
//!    {"app": ...}}`, user `Reactor`) and an old-style `local.file.touch` (`arg:`) reaction
//!    touching `app-<app>` on the minion; the sls comes through `salt://` from `file_roots`;
//! 3. a reactor sls that does not render (`myco/broken`) is logged naming the sls, and the
//!    reactor goes on (a second `myco/deploy` still reacts);
//! 4. Foreman-style autosign: `salt/auth` with `act: pend` for an `fm*` id → `wheel.key.accept`
//!    with `match: <id>`. Salt's master accepts the key. Ours dispatches the reaction
//!    (`salt/wheel/<jid>/new` for `wheel.key.accept` with `match`); its `ret` succeeds and the
//!    key is accepted as on Salt's master;
//! 5. `salt-run reactor.is_leader`, `reactor.add`, `reactor.list`, `reactor.delete` answer the
//!    same on both masters (paths of the temporary root normalised).
//!
//! Under `CI=true` a missing venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use salt_integration_tests::bus_listener;
use salt_integration_tests::interop_support::{Daemon, SaltCli, Side, serial, venv_for};
use salt_integration_tests::{
    MasterConf, MinionConf, SaltVenv, TempRoot, Yaml, bins, free_port_pair, run_with_timeout,
    wait_until,
};
use serde_json::{Value, json};

const START_SLS: &str = "touch_on_start:
  local.cmd.run:
    - tgt: {{ data['id'] }}
    - args:
      - cmd: touch @OUT@/started-{{ data['id'] }}
";

const DEPLOY_SLS: &str = "run_arg:
  runner.test.arg:
    - args:
      - app: {{ data['data']['app'] }}

touch_app:
  local.file.touch:
    - tgt: {{ data['data']['target'] }}
    - arg:
      - @OUT@/app-{{ data['data']['app'] }}
";

const AUTH_SLS: &str =
    "{% if 'act' in data and data['act'] == 'pend' and data['id'].startswith('fm') %}
minion_add:
  wheel.key.accept:
    - match: {{ data['id'] }}
{% endif %}
";

const BROKEN_SLS: &str = "broken:\n  local.cmd.run:\n    - tgt: {{ data['nothing'\n";

#[test]
fn reactor_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv.clone());
    let salt_runs = scenario(&venv, &py);
    let our_runs = scenario(&venv, &ours);
    assert_eq!(our_runs, salt_runs, "salt-run reactor.* answers differ");
}

fn wait_file(label: &str, path: &Path, master: &Daemon) {
    wait_until(
        &format!("{label}: {} created by a reaction", path.display()),
        Duration::from_secs(90),
        || path.exists(),
    )
    .unwrap_or_else(|e| panic!("{e}\nmaster:\n{}", master.proc.tail(60)));
}

fn salt_run(side: &Side, conf_dir: &Path, args: &[&str]) -> Value {
    let bin = match side {
        Side::Ours(b) => b.salt.with_file_name("salt-run"),
        Side::Salt(v) => v.bin("salt-run"),
    };
    let mut c = std::process::Command::new(bin);
    c.arg("-c").arg(conf_dir).args(["--out", "json"]).args(args);
    let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    assert!(out.success(), "salt-run {args:?}: {out:?}");
    // Salt's salt-run prints the events its runner fires (`salt/reactors/manage/*`, with the
    // master's key) before the return: the last document is the return.
    serde_json::Deserializer::from_str(out.stdout.trim())
        .into_iter::<Value>()
        .map(|v| v.unwrap_or_else(|e| panic!("salt-run {args:?}: {e}: {}", out.stdout)))
        .last()
        .unwrap_or_else(|| panic!("salt-run {args:?}: no output"))
}

/// One master side: the checks above; returns the `salt-run reactor.*` answers.
fn scenario(venv: &SaltVenv, side: &Side) -> Vec<Value> {
    let label = format!("{} master", side.label());
    println!("== {label}");
    let root = TempRoot::new().unwrap();
    let out = root.dir("out").unwrap();
    let rdir = root.dir("reactor").unwrap();
    let srv = root.dir("srv").unwrap();
    let sub = |t: &str| t.replace("@OUT@", &out.display().to_string());
    std::fs::create_dir_all(srv.join("reactor")).unwrap();
    std::fs::write(rdir.join("start.sls"), sub(START_SLS)).unwrap();
    std::fs::write(srv.join("reactor/deploy.sls"), sub(DEPLOY_SLS)).unwrap();
    std::fs::write(rdir.join("auth.sls"), AUTH_SLS).unwrap();
    std::fs::write(rdir.join("broken.sls"), BROKEN_SLS).unwrap();
    let r = |f: &str| rdir.join(f).display().to_string();
    let reactor = format!(
        "\n  - 'salt/minion/*/start': ['{}']\n  - 'myco/deploy': ['salt://reactor/deploy.sls']\
         \n  - 'myco/broken': ['{}']\n  - 'salt/auth': ['{}']",
        r("start.sls"),
        r("broken.sls"),
        r("auth.sls")
    );
    let ports = free_port_pair().unwrap();
    let mconf = MasterConf::new(root.path().join("m"))
        .id("rmaster")
        .ports(ports.0, ports.1)
        .set("worker_threads", 2u32)
        .set(
            "file_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", srv.display())),
        )
        .set("reactor", Yaml::Raw(reactor));
    let mut master = Daemon::start_master(side, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let conf_dir = master.conf_dir.clone();
    let conf_file = conf_dir.join("master");
    let work = root.dir("work").unwrap();
    let mut listener = bus_listener::start(venv, &work, &conf_file, 900, &label);
    let py = Side::Salt(venv.clone());
    let cli = SaltCli::new(side, &conf_dir).with_key_side(&py);

    // 1. A minion starts: local.cmd.run touches started-<id>.
    let mid = "rm1";
    let minion = Daemon::start_minion(
        &py,
        &MinionConf::new(root.path().join(mid), mid).ports(ports.0, ports.1),
    )
    .unwrap();
    let pending = master.pki().join("minions_pre").join(mid);
    wait_until("the minion's key pending", Duration::from_secs(90), || {
        pending.exists()
    })
    .unwrap_or_else(|e| panic!("{label}: {e}\n{}", minion.proc.tail(30)));
    cli.key(&["-a", mid, "-y"]).unwrap();
    minion.wait_minion_ready().unwrap();
    wait_file(&label, &out.join(format!("started-{mid}")), &master);
    println!("{label}: salt/minion/{mid}/start → local.cmd.run ran on the minion");

    // 2. event.send myco/deploy: runner.test.arg and local.file.touch read `data`.
    let send = |app: &str| {
        cli.until_answer(
            mid,
            &[
                mid,
                "event.send",
                "myco/deploy",
                &format!("app={app}"),
                &format!("target={mid}"),
            ],
            Duration::from_secs(60),
        )
        .unwrap()
    };
    assert_eq!(send("shop"), Value::Bool(true), "{label}");
    wait_file(&label, &out.join("app-shop"), &master);
    let ret = bus_listener::seen(&listener, "runner.test.arg's ret", |t, d| {
        t.starts_with("salt/run/") && t.ends_with("/ret") && d["fun"] == "runner.test.arg"
    });
    assert_eq!(
        ret["return"],
        json!({"args": [], "kwargs": {"app": "shop"}}),
        "{label}: {ret}"
    );
    assert_eq!(ret["user"], "Reactor", "{label}: {ret}");
    assert_eq!(ret["success"], true, "{label}: {ret}");
    println!("{label}: myco/deploy → runner.test.arg and local.file.touch");

    // 3. A broken reactor sls is logged and the reactor goes on.
    assert_eq!(
        cli.until_answer(
            mid,
            &[mid, "event.send", "myco/broken"],
            Duration::from_secs(60)
        )
        .unwrap(),
        Value::Bool(true)
    );
    wait_until(
        &format!("{label}: the render error logged"),
        Duration::from_secs(60),
        || master.proc.output().contains(&r("broken.sls")),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", master.proc.tail(40)));
    assert_eq!(send("second"), Value::Bool(true), "{label}");
    wait_file(&label, &out.join("app-second"), &master);
    println!("{label}: a render error was logged and the reactor went on");

    // 4. Foreman-style autosign.
    let fm = "fm1";
    let fminion = Daemon::start_minion(
        &py,
        &MinionConf::new(root.path().join(fm), fm)
            .ports(ports.0, ports.1)
            .set("acceptance_wait_time", 2u32),
    )
    .unwrap();
    let accepted = master.pki().join("minions").join(fm);
    match side {
        Side::Salt(_) => {
            wait_until(
                "fm1 accepted by the reactor",
                Duration::from_secs(120),
                || accepted.exists(),
            )
            .unwrap_or_else(|e| panic!("{label}: {e}\n{}", master.proc.tail(40)));
            fminion.wait_minion_ready().unwrap();
        }
        Side::Ours(_) => {
            let new = bus_listener::seen(&listener, "wheel.key.accept's new", |t, d| {
                t.starts_with("salt/wheel/")
                    && t.ends_with("/new")
                    && d["fun"] == "wheel.key.accept"
            });
            assert_eq!(new["fun_args"], json!([{"match": fm}]), "{label}: {new}");
            assert_eq!(new["user"], "Reactor", "{label}: {new}");
            let ret = bus_listener::seen(&listener, "wheel.key.accept's ret", |t, d| {
                t.starts_with("salt/wheel/")
                    && t.ends_with("/ret")
                    && d["fun"] == "wheel.key.accept"
            });
            assert_eq!(ret["success"], true, "{label}: {ret}");
            wait_until(
                "fm1 accepted by the reactor",
                Duration::from_secs(120),
                || accepted.exists(),
            )
            .unwrap_or_else(|e| panic!("{label}: {e}\n{}", master.proc.tail(40)));
        }
    }
    println!("{label}: salt/auth pend → wheel.key.accept dispatched");

    // 5. The reactor runner.
    let root_text = root.path().display().to_string();
    let norm = |v: Value| -> Value {
        serde_json::from_str(&v.to_string().replace(&root_text, "<root>")).unwrap()
    };
    let runs = vec![
        salt_run(side, &conf_dir, &["reactor.is_leader"]),
        salt_run(
            side,
            &conf_dir,
            &["reactor.add", "myco/added", "reactors=/srv/added.sls"],
        ),
        salt_run(
            side,
            &conf_dir,
            &["reactor.add", "myco/added", "reactors=/srv/added.sls"],
        ),
        norm(salt_run(side, &conf_dir, &["reactor.list"])),
        salt_run(side, &conf_dir, &["reactor.delete", "myco/added"]),
        salt_run(side, &conf_dir, &["reactor.delete", "myco/added"]),
    ];
    println!("{label}: salt-run reactor.*: {runs:?}");

    drop(fminion);
    drop(minion);
    listener.stop(Duration::from_secs(5));
    master.proc.stop(Duration::from_secs(15));
    runs
}
