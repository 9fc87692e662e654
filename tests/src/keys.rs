//! Key pairs in Salt's files (`NAME.pem`: PKCS#1 "RSA PRIVATE KEY", `NAME.pub`: SPKI).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::cli::run_with_timeout;
use crate::error::HarnessError;

/// Writes `dir/NAME.pem` and `dir/NAME.pub` with our `salt-key --gen-keys NAME --gen-keys-dir
/// dir` (as an operator would make a `master_sign` pair). Returns the two paths.
pub fn gen_keys(
    key_bin: &Path,
    dir: &Path,
    name: &str,
) -> Result<(PathBuf, PathBuf), HarnessError> {
    std::fs::create_dir_all(dir).map_err(|e| HarnessError::io(dir.display().to_string(), e))?;
    // salt-key reads a master config even for --gen-keys: give it one that keeps every path
    // next to the keys (real Salt would otherwise create /etc/salt/pki/master).
    let home = dir.join(format!(".{name}-salt-key"));
    let conf = crate::config::MasterConf::new(&home).write()?;
    let mut c = Command::new(key_bin);
    c.arg("-c")
        .arg(&conf)
        .args(["--gen-keys", name, "--gen-keys-dir"])
        .arg(dir);
    run_with_timeout(c, Duration::from_secs(60))?.ok()?;
    written(
        dir,
        name,
        &format!("{} --gen-keys {name}", key_bin.display()),
    )
}

/// [`gen_keys`], falling back (with a note on stderr) to the `openssl` CLI writing the same
/// formats when `salt-key` is missing or fails. For labs whose subject is not `salt-key`.
pub fn gen_keys_or_openssl(
    key_bin: &Path,
    dir: &Path,
    name: &str,
) -> Result<(PathBuf, PathBuf), HarnessError> {
    match gen_keys(key_bin, dir, name) {
        Ok(p) => Ok(p),
        Err(e) => {
            eprintln!("note: salt-key --gen-keys failed ({e}); generating {name} with openssl");
            let pem = dir.join(format!("{name}.pem"));
            let pubf = dir.join(format!("{name}.pub"));
            let mut g = Command::new("openssl");
            g.args(["genrsa", "-traditional", "-out"])
                .arg(&pem)
                .arg("2048");
            run_with_timeout(g, Duration::from_secs(60))?.ok()?;
            let mut p = Command::new("openssl");
            p.args(["rsa", "-in"])
                .arg(&pem)
                .args(["-pubout", "-out"])
                .arg(&pubf);
            run_with_timeout(p, Duration::from_secs(60))?.ok()?;
            written(dir, name, "openssl genrsa")
        }
    }
}

fn written(dir: &Path, name: &str, cmd: &str) -> Result<(PathBuf, PathBuf), HarnessError> {
    let pem = dir.join(format!("{name}.pem"));
    let pubf = dir.join(format!("{name}.pub"));
    for p in [&pem, &pubf] {
        if !p.is_file() {
            return Err(HarnessError::Command {
                cmd: cmd.into(),
                status: "succeeded".into(),
                stderr: format!("but {} was not written", p.display()),
            });
        }
    }
    Ok((pem, pubf))
}

/// Copies `files` into `dir` (created), keeping their names.
pub fn copy_into(dir: &Path, files: &[&Path]) -> Result<(), HarnessError> {
    std::fs::create_dir_all(dir).map_err(|e| HarnessError::io(dir.display().to_string(), e))?;
    for f in files {
        let Some(name) = f.file_name() else { continue };
        let to = dir.join(name);
        std::fs::copy(f, &to)
            .map_err(|e| HarnessError::io(format!("copy to {}", to.display()), e))?;
    }
    Ok(())
}
