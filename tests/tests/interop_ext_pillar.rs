//! Interop: `ext_pillar` through our salt-master to a real Python salt-minion 3007.17: the
//! master's `_pillar` answer with `cmd_json` and `cmd_yaml` equals Salt's own compilation of
//! the same tree and scripts (`salt-call --local pillar.items` with the same options).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use salt_integration_tests::interop_support::{Daemon, SaltCli, Side, serial, venv_for};
use salt_integration_tests::pillar_support::salt_call_local_with;
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, Yaml, bins, free_port_pair};

#[test]
fn master_serves_cmd_json_and_cmd_yaml_like_salt_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv.clone());
    let root = TempRoot::new().unwrap();
    let tree = root.path().join("tree");
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(tree.join("top.sls"), "base:\n  '*':\n    - common\n").unwrap();
    std::fs::write(
        tree.join("common.sls"),
        "app: {name: from-top, port: 80}\nowner: top\n",
    )
    .unwrap();
    let json = bin.join("cmdb-json");
    std::fs::write(
        &json,
        "#!/bin/sh\nprintf '{\"app\": {\"port\": 8080}, \"host\": \"%s\"}' \"$1\"\n",
    )
    .unwrap();
    let yaml = bin.join("cmdb-yaml");
    std::fs::write(
        &yaml,
        "#!/bin/sh\necho \"owner: yaml-$1\"\necho 'on: yes'\n",
    )
    .unwrap();
    for p in [&json, &yaml] {
        let mut perm = std::fs::metadata(p).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(p, perm).unwrap();
    }
    let ext = format!(
        "[{{cmd_json: '{} %s'}}, {{cmd_yaml: [{} %s]}}, {{cmd_json: [a, b]}}]",
        json.display(),
        yaml.display()
    );

    let ports = free_port_pair().unwrap();
    let mconf = MasterConf::new(root.path().join("m"))
        .id("rsmaster")
        .ports(ports.0, ports.1)
        .auto_accept(true)
        .set("worker_threads", 2u32)
        .set(
            "pillar_roots",
            Yaml::Raw(format!("{{base: [{}]}}", tree.display())),
        )
        .set("ext_pillar", Yaml::Raw(ext.clone()));
    let mut master = Daemon::start_master(&ours, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let cli = SaltCli::new(&ours, &master.conf_dir);
    let pconf = MinionConf::new(root.path().join("pym1"), "pym1").ports(ports.0, ports.1);
    let pym = Daemon::start_minion(&py, &pconf).unwrap();
    pym.wait_minion_ready().unwrap();
    cli.until_answer("pym1", &["pym1", "test.ping"], Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", master.proc.tail(40)));

    let want = salt_call_local_with(
        &venv,
        &root.path().join("golden"),
        &tree,
        "pym1",
        &format!("ext_pillar: {ext}\n"),
        &["pillar.items"],
    )
    .unwrap();
    assert_eq!(want["app"]["port"], 8080, "{want:#}");
    assert_eq!(want["owner"], "yaml-pym1", "{want:#}");
    assert_eq!(
        want["_errors"].as_array().map(Vec::len),
        Some(1),
        "{want:#}"
    );
    let (got, _) = cli.salt_json(&["pym1", "pillar.items"], 30).unwrap();
    assert_eq!(
        got["pym1"], want,
        "pillar.items through our master differs from Salt's"
    );
    drop(pym);
    drop(master);
}
