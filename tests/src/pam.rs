//! A real PAM user for eauth tests: made with `groupadd`/`useradd`/`chpasswd` (root only),
//! removed when dropped.

use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::error::HarnessError;

/// A system user (no home) in a group of its own, with a password.
#[derive(Debug)]
pub struct PamUser {
    /// The user name.
    pub name: String,
    /// Its group.
    pub group: String,
}

impl PamUser {
    /// Make user `<prefix><pid>` in group `<prefix>g<pid>` with `password`.
    pub fn create(prefix: &str, password: &str) -> Result<Self, HarnessError> {
        let id = std::process::id();
        let user = Self {
            name: format!("{prefix}{id}"),
            group: format!("{prefix}g{id}"),
        };
        let failed = |cmd: &str, status: String| HarnessError::Command {
            cmd: cmd.to_owned(),
            status,
            stderr: String::new(),
        };
        let run = |args: &[&str]| -> Result<(), HarnessError> {
            let st = Command::new(args[0])
                .args(&args[1..])
                .status()
                .map_err(|e| HarnessError::io(args[0], e))?;
            if st.success() {
                Ok(())
            } else {
                Err(failed(&args.join(" "), st.to_string()))
            }
        };
        run(&["groupadd", &user.group])?;
        run(&["useradd", "-M", "-G", &user.group, &user.name])?;
        let mut child = Command::new("chpasswd")
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|e| HarnessError::io("chpasswd", e))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(format!("{}:{password}\n", user.name).as_bytes())
                .map_err(|e| HarnessError::io("chpasswd", e))?;
        }
        let st = child.wait().map_err(|e| HarnessError::io("chpasswd", e))?;
        if !st.success() {
            return Err(failed("chpasswd", st.to_string()));
        }
        Ok(user)
    }
}

impl Drop for PamUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).status();
        let _ = Command::new("groupdel").arg(&self.group).status();
    }
}
