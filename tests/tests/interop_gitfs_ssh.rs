//! Interop: gitfs and git_pillar over ssh. An sshd on loopback (a high port, a throwaway host
//! key and user key, Debian's `openssh-server`) serves local bare repositories as
//! `ssh://<user>@127.0.0.1:<port>/<path>`; our master and Salt 3007.17's (GitPython, its gitfs
//! and git_pillar provider) fetch them, each serving one real Python minion:
//!
//! 1. `cp.list_master` (`base`, `dev`), `cp.hash_file`, `pillar.items`: identical answers;
//! 2. a new commit, `fileserver.update` on both: the new file is listed on both.
//!
//! Ours gets the key as Salt documents it, per remote (`pubkey`/`privkey`; the user from the
//! URL). Salt's GitPython provider refuses `pubkey`/`privkey` ("only supported by pygit2"), so
//! its master gets the same key the way a GitPython site gives it: `GIT_SSH_COMMAND` with
//! `-i`. Both see the throwaway host key through `GIT_SSH_COMMAND`'s `UserKnownHostsFile`
//! (ours puts its `-i <privkey>` after the master's own `GIT_SSH_COMMAND`). Under `CI=true` a
//! missing `git`, `ssh`, `sshd`, venv or GitPython fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use salt_integration_tests::git_support::{gitpython, venv_with};
use salt_integration_tests::interop_pair::{Pair, PairSide};
use salt_integration_tests::interop_support::{Side, assert_no_leftovers, serial, venv_for};
use salt_integration_tests::{TempRoot, Yaml, bins, free_port_pair};
use salt_testkit::{bare, commit, git, write_file as write};
use serde_json::json;

const VERSION: &str = "3007.17";
const SSHD: &str = "/usr/sbin/sshd";

/// A prerequisite is missing: fail under `CI=true`, else a counted skip.
fn missing(what: &str) {
    let _: Option<()> = salt_integration_tests::require(Err(salt_integration_tests::Missing::new(
        format!("interop_gitfs_ssh: {what}"),
    )));
}

/// The loopback sshd, stopped when dropped.
struct Sshd {
    child: Child,
    port: u16,
    /// The throwaway user key (its `.pub` beside it).
    key: PathBuf,
    /// A known_hosts file naming the throwaway host key.
    known_hosts: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "gitfs-test", "-f"])
        .arg(path)
        .output()
        .expect("ssh-keygen");
    assert!(out.status.success(), "ssh-keygen: {out:?}");
}

/// Starts `sshd -D` on 127.0.0.1 with keys made under `dir`; `None` when it does not listen.
fn start_sshd(dir: &Path) -> Sshd {
    std::fs::create_dir_all(dir).unwrap();
    let (host_key, key) = (dir.join("host_key"), dir.join("user_key"));
    keygen(&host_key);
    keygen(&key);
    let authorized = dir.join("authorized_keys");
    std::fs::copy(key.with_extension("pub"), &authorized).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let port = free_port_pair().unwrap().0;
    let conf = dir.join("sshd_config");
    std::fs::write(
        &conf,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {h}\nPidFile {d}/sshd.pid\n\
             AuthorizedKeysFile {a}\nStrictModes no\nPubkeyAuthentication yes\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             PermitRootLogin prohibit-password\n",
            h = host_key.display(),
            d = dir.display(),
            a = authorized.display()
        ),
    )
    .unwrap();
    // As root, sshd wants its privilege separation directory (made by the package's service).
    if is_root() {
        std::fs::create_dir_all("/run/sshd").unwrap();
    }
    let child = Command::new(SSHD)
        .args(["-D", "-e", "-f"])
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("sshd.log")).unwrap())
        .spawn()
        .expect("sshd");
    let known_hosts = dir.join("known_hosts");
    let host_pub = std::fs::read_to_string(host_key.with_extension("pub")).unwrap();
    std::fs::write(&known_hosts, format!("[127.0.0.1]:{port} {host_pub}")).unwrap();
    let sshd = Sshd {
        child,
        port,
        key,
        known_hosts,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "sshd did not listen on {port}: {}",
            std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    sshd
}

fn is_root() -> bool {
    user() == "root"
}

fn user() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Rewrites each `bin/*` wrapper under `dir` to export `GIT_SSH_COMMAND=<ssh>` first.
fn with_ssh_command(dir: &Path, ssh: &str) {
    for e in std::fs::read_dir(dir.join("bin")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let body = text.strip_prefix("#!/bin/sh\n").unwrap_or(&text);
        std::fs::write(
            &p,
            format!("#!/bin/sh\nexport GIT_SSH_COMMAND=\"{ssh}\"\n{body}"),
        )
        .unwrap();
    }
}

#[test]
fn gitfs_and_git_pillar_over_ssh_3007() {
    for (cmd, arg) in [("git", "--version"), ("ssh", "-V")] {
        if Command::new(cmd).arg(arg).output().is_err() {
            return missing(&format!("no `{cmd}` command"));
        }
    }
    if !Path::new(SSHD).is_file() || Command::new("ssh-keygen").arg("-?").output().is_err() {
        return missing("no sshd (Debian's openssh-server: /usr/sbin/sshd, ssh-keygen)");
    }
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return missing(&format!("no Salt {VERSION} venv"));
    };
    let Some(gitpy) = gitpython(&venv) else {
        return missing("GitPython is not installable into target/gitfs-gitpython");
    };
    let _guard = serial();
    let t0 = Instant::now();
    let step = |what: &str| println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
    let root = TempRoot::new().unwrap();
    let sshd = start_sshd(&root.path().join("ssh"));
    let gitdir = root.path().join("git");
    std::fs::create_dir_all(&gitdir).unwrap();
    let (work, states) = bare(&gitdir, "states", |w| {
        write(w, "top.sls", "base:\n  '*':\n    - web\n");
        write(w, "web/init.sls", "web: {test.nop: []}\n");
        write(w, "files/index.html", "<h1>over ssh</h1>\n");
        commit(w, "one");
        git(w, &["checkout", "-q", "-b", "dev"]);
        write(w, "files/dev-only.txt", "dev\n");
        commit(w, "dev");
        git(w, &["checkout", "-q", "master"]);
    });
    let (_, pillar) = bare(&gitdir, "pillar", |w| {
        write(w, "top.sls", "base:\n  '*':\n    - common\n");
        write(w, "common.sls", "common:\n  from: ssh\n  list: [1, 2]\n");
        commit(w, "one");
    });
    let url = |repo: &Path| format!("ssh://{}@127.0.0.1:{}{}", user(), sshd.port, repo.display());
    step("sshd up, repositories made");

    let kh = format!(
        "ssh -o UserKnownHostsFile={} -o GlobalKnownHostsFile=/dev/null",
        sshd.known_hosts.display()
    );
    // Ours: a salt-master wrapper adding only the known_hosts (the key is per remote).
    let mut our_bins = bins().unwrap();
    let wrap = root.path().join("ours-bin");
    std::fs::create_dir_all(&wrap).unwrap();
    let master = wrap.join("salt-master");
    std::fs::write(
        &master,
        format!(
            "#!/bin/sh\nexport GIT_SSH_COMMAND=\"{kh}\"\nexec '{}' \"$@\"\n",
            our_bins.master.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&master, std::fs::Permissions::from_mode(0o755)).unwrap();
    our_bins.master = master;
    // Salt's: GitPython, the key through GIT_SSH_COMMAND (its master and salt-run, which runs
    // fileserver.update itself).
    let master_venv = venv_with(&venv, &gitpy, &root.path().join("venv-gitpython"));
    with_ssh_command(
        &root.path().join("venv-gitpython"),
        &format!(
            "{kh} -i {} -o IdentitiesOnly=yes -o BatchMode=yes",
            sshd.key.display()
        ),
    );
    let keys = format!(
        "[{{pubkey: '{}'}}, {{privkey: '{}'}}]",
        sshd.key.with_extension("pub").display(),
        sshd.key.display()
    );
    let (states_url, pillar_url) = (url(&states), url(&pillar));
    let pair = Pair::start_each(
        root.path(),
        &Side::Ours(our_bins),
        &Side::Salt(master_venv),
        &Side::Salt(venv.clone()),
        ["ssh-ours", "ssh-salt"],
        |side, c| {
            let (remotes, ext) = match side {
                Side::Ours(_) => (
                    format!("[{{'{states_url}': {keys}}}]"),
                    format!("[{{git: [{{'master {pillar_url}': {keys}}}]}}]"),
                ),
                Side::Salt(_) => (
                    format!("['{states_url}']"),
                    format!("[{{git: ['master {pillar_url}']}}]"),
                ),
            };
            c.set("fileserver_backend", Yaml::Raw("[gitfs]".into()))
                .set("gitfs_remotes", Yaml::Raw(remotes))
                .set("ext_pillar", Yaml::Raw(ext))
        },
    );
    step("both masters and minions up");
    let (o, s) = (&pair.ours, &pair.salt);
    assert_eq!(o.salt_run(&["fileserver.update"]), json!(true));
    assert_eq!(s.salt_run(&["fileserver.update"]), json!(true));
    let both = |args: &[&str]| pair.both(args, 60, &[]);

    // 1. Listings, hashes and pillar, fetched over ssh.
    let base = both(&["cp.list_master"]);
    assert_eq!(
        base,
        json!(["files/index.html", "top.sls", "web/init.sls"]),
        "{base}"
    );
    let dev = both(&["cp.list_master", "saltenv=dev"]);
    assert!(
        dev.as_array()
            .unwrap()
            .contains(&json!("files/dev-only.txt")),
        "{dev}"
    );
    both(&["cp.hash_file", "salt://files/index.html"]);
    let items = both(&["pillar.items"]);
    assert_eq!(items["common"]["from"], json!("ssh"), "{items:#}");
    step("cp.list_master (base, dev), cp.hash_file, pillar.items");

    // 2. A new commit over ssh, fileserver.update on both.
    write(&work, "files/new.txt", "new\n");
    commit(&work, "two");
    git(&work, &["push", "-q", states.to_str().unwrap(), "master"]);
    assert_eq!(o.salt_run(&["fileserver.update"]), json!(true));
    assert_eq!(s.salt_run(&["fileserver.update"]), json!(true));
    let listed = |r: &PairSide| r.list_master_until("files/new.txt");
    let (a, b) = (listed(o), listed(s));
    assert_eq!(a, b, "after the update: ours (left), Salt's (right)");
    assert!(
        a.as_array().unwrap().contains(&json!("files/new.txt")),
        "{a}"
    );
    assert_eq!(o.master.count("fetch failed"), 0);
    step("new commit, fileserver.update over ssh");
    drop(pair);
    drop(sshd);
    assert_no_leftovers(root.path());
}
