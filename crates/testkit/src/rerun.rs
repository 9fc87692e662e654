//! [`rerun_as_nobody`]: a test of permission bits, run where the tests run as root.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::{Missing, command, current_test};

/// Runs the current test again, alone, as `nobody` (uid/gid 65534 through `setpriv`), and
/// returns the child's output once it has finished.
///
/// Root reads and writes whatever the mode bits say, so a test of "mode 000 is refused"
/// proves nothing as root; CI runs as root. The test calls this when it is root and asserts
/// on the child's result; in the child (not root) it runs its real body. The test binary is
/// copied into a fresh world-readable directory first, since `nobody` may not reach the
/// target directory.
pub fn rerun_as_nobody() -> Result<Output, Missing> {
    let setpriv = command("setpriv")?;
    let test = current_test();
    let (_, filter) = test
        .split_once("::")
        .ok_or_else(|| Missing::new("rerun_as_nobody: not inside a named test thread"))?;
    let exe = std::env::current_exe()
        .map_err(|e| Missing::new(format!("rerun_as_nobody: the test binary: {e}")))?;
    let dir = std::env::temp_dir().join(format!(
        "salt-testkit-nobody-{}-{}",
        std::process::id(),
        filter.replace("::", "-")
    ));
    let copy = copy_binary(&exe, &dir)
        .map_err(|e| Missing::new(format!("rerun_as_nobody: copy to {}: {e}", dir.display())))?;
    let out = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&copy)
        .args(["--exact", filter, "--nocapture", "--test-threads=1"])
        .current_dir(&dir)
        .env("TMPDIR", &dir)
        .stdin(Stdio::null())
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    out.map_err(|e| Missing::new(format!("rerun_as_nobody: setpriv: {e}")))
}

fn copy_binary(exe: &std::path::Path, dir: &std::path::Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    // World-writable and sticky, as /tmp: the child writes its temp files here.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777))?;
    let copy = dir.join(exe.file_name().unwrap_or_default());
    std::fs::copy(exe, &copy)?;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))?;
    Ok(copy)
}
