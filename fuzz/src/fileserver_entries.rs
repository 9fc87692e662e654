//! Fuzz entry point over `salt-fileserver`: any msgpack load, as a signed-in minion would
//! send it, to every file-server command, against a fixed tree with a secret outside the
//! roots, a symlink to it, and `fileserver_followsymlinks: False`.
//!
//! Shared with `crates/fileserver/tests/fuzz_corpus.rs` (included with `#[path]`), so it
//! depends on nothing but `salt_config`, `salt_fileserver`, `salt_proto` and `std`.
//!
//! Invariants: no panic; no reply holds a byte sequence of the secret.

use std::path::PathBuf;
use std::sync::OnceLock;

use salt_config::{HashType, LoadOptions, MasterConfig};
use salt_fileserver::{COMMANDS, FileServer};
use salt_proto::{ValueExt, decode, encode};

const SECRET: &[u8] = b"FUZZ-SECRET-OUTSIDE-THE-ROOTS";

fn server() -> &'static FileServer {
    static FS: OnceLock<FileServer> = OnceLock::new();
    FS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("salt-fuzz-fileserver-{}", std::process::id()));
        let base = dir.join("base");
        let outside = dir.join("outside");
        let _ = std::fs::create_dir_all(base.join("files/sub"));
        let _ = std::fs::create_dir_all(dir.join("envs/dev"));
        let _ = std::fs::create_dir_all(&outside);
        let _ = std::fs::write(base.join("top.sls"), b"base:\n  '*': [web]\n");
        let _ = std::fs::write(base.join("files/a.txt"), b"hello\n");
        let _ = std::fs::write(base.join("files/sub/b.txt"), vec![7u8; 5000]);
        let _ = std::fs::write(dir.join("envs/dev/d.txt"), b"dev\n");
        let _ = std::fs::write(outside.join("secret"), SECRET);
        let _ = std::fs::write(dir.join("secret"), SECRET);
        let _ = std::os::unix::fs::symlink(outside.join("secret"), base.join("files/escape"));
        let _ = std::os::unix::fs::symlink(&outside, base.join("outdir"));
        let yaml = format!(
            "file_roots:\n  base: ['{b}']\n  __env__: ['{e}/__env__']\n\
             fileserver_followsymlinks: False\nfile_buffer_size: 1024\nfile_recv: True\n\
             file_recv_max_size: 1\n",
            b = base.display(),
            e = dir.join("envs").display()
        );
        let cfg = MasterConfig::from_yaml_str(&yaml, &LoadOptions::new("/nonexistent"))
            .map(|l| l.config.fileserver)
            .unwrap_or_else(|e| panic!("fuzz config: {e}"));
        FileServer::new(cfg, HashType::Sha256, PathBuf::from(&dir).join("cache"))
    })
}

/// `data`: first byte picks the command when the load has no text `cmd`; the rest is the
/// msgpack load.
pub fn fileserver(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(load) = decode(rest) else {
        return;
    };
    let fs = server();
    let cmd = load
        .get("cmd")
        .and_then(ValueExt::as_text)
        .filter(|c| COMMANDS.contains(c))
        .unwrap_or(COMMANDS[usize::from(pick) % COMMANDS.len()])
        .to_owned();
    let Some(reply) = fs.handle(&cmd, &load, "fuzzer") else {
        panic!("{cmd} is a file-server command");
    };
    let bytes = encode(&reply);
    assert!(
        !bytes.windows(SECRET.len()).any(|w| w == SECRET),
        "{cmd} served the secret: {load}"
    );
}
