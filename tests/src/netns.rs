//! A private network namespace for fault injection.
//!
//! `Netns::new()` runs `ip netns add salt-lab-<pid>-<n>` and brings its `lo` up; addresses such
//! as 127.0.0.2 are added to that `lo` ([`Netns::add_addr`]); commands and daemons run inside
//! with `ip netns exec` ([`Netns::name`] for [`crate::ProcSpec::netns`],
//! [`Netns::command`]). A black hole ([`Netns::blackhole`]) is an nftables table *inside the
//! namespace* dropping every packet from or to one address, in both the input and output hooks,
//! so neither side gets an answer, an RST or an ICMP error: the peer looks frozen on the wire.
//! [`Netns::heal`] removes it. Drop deletes the namespace (and with it the rules and
//! addresses). Nothing outside the namespace is touched.
//!
//! Needs root and the `ip` and `nft` tools; [`Netns::require`] hands what is missing to
//! [`crate::require`] (a failure under `CI=true`, a recorded skip elsewhere).

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use salt_testkit::Missing;

use crate::cli::{CmdOutput, run_with_timeout};
use crate::error::HarnessError;

const TABLE: &str = "saltlab";
const CMD_TIMEOUT: Duration = Duration::from_secs(20);

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A network namespace owned by this test; deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
    holes: Mutex<BTreeSet<String>>,
}

fn run(args: &[&str]) -> Result<CmdOutput, HarnessError> {
    let mut c = Command::new(args.first().copied().unwrap_or("true"));
    c.args(args.get(1..).unwrap_or_default());
    run_with_timeout(c, CMD_TIMEOUT)?.ok()
}

impl Netns {
    /// What creating a namespace needs: root, `ip` (iproute2) and `nft` (nftables).
    pub fn prerequisites() -> Result<(), Missing> {
        salt_testkit::root()?;
        salt_testkit::command("ip")?;
        salt_testkit::command("nft")?;
        Ok(())
    }

    /// Creates `salt-lab-<pid>-<n>` with `lo` up.
    pub fn new() -> Result<Self, HarnessError> {
        Self::prerequisites().map_err(|m| HarnessError::Netns(m.to_string()))?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("salt-lab-{}-{}", std::process::id(), n);
        // A stale namespace of the same name (a previous process with our pid) is ours to reuse.
        let _ = run(&["ip", "netns", "del", &name]);
        run(&["ip", "netns", "add", &name]).map_err(|e| HarnessError::Netns(e.to_string()))?;
        let ns = Self {
            name,
            holes: Mutex::new(BTreeSet::new()),
        };
        run(&["ip", "-n", &ns.name, "link", "set", "lo", "up"])
            .map_err(|e| HarnessError::Netns(e.to_string()))?;
        // Check that nftables works in there before any test relies on it.
        ns.apply_rules(&BTreeSet::new())?;
        Ok(ns)
    }

    /// [`Netns::new`] for a test: `None` after [`crate::require`] recorded what is missing
    /// (its prerequisites, or the namespace could not be made).
    pub fn require() -> Option<Self> {
        crate::require(Self::prerequisites())?;
        crate::require(
            Self::new()
                .map_err(|e| Missing::new(format!("cannot create a network namespace: {e}"))),
        )
    }

    /// Its name (for `ip netns exec`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds `addr/8` to the namespace's `lo` (e.g. `127.0.0.2`).
    pub fn add_addr(&self, addr: &str) -> Result<(), HarnessError> {
        let cidr = format!("{addr}/8");
        run(&["ip", "-n", &self.name, "addr", "add", &cidr, "dev", "lo"])
            .map_err(|e| HarnessError::Netns(e.to_string()))?;
        Ok(())
    }

    /// A `Command` running `program` inside the namespace.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    /// Runs a shell snippet inside the namespace (tests and diagnostics).
    pub fn sh(&self, script: &str) -> Result<CmdOutput, HarnessError> {
        let mut c = self.command("/bin/sh");
        c.args(["-c", script]);
        run_with_timeout(c, CMD_TIMEOUT)
    }

    /// Whether something listens on `addr:port` (TCP) inside the namespace.
    pub fn listening(&self, addr: &str, port: u16) -> bool {
        let mut c = self.command("ss");
        c.args(["-Hltn"]);
        run_with_timeout(c, CMD_TIMEOUT).is_ok_and(|o| {
            let want = format!("{addr}:{port}");
            let any = format!("0.0.0.0:{port}");
            o.stdout
                .lines()
                .filter_map(|l| l.split_whitespace().nth(3))
                .any(|local| local == want || local == any)
        })
    }

    /// Drops every packet from or to `addr` inside the namespace, from now on.
    pub fn blackhole(&self, addr: &str) -> Result<(), HarnessError> {
        let mut holes = self.holes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = holes.clone();
        next.insert(addr.to_string());
        self.apply_rules(&next)?;
        *holes = next;
        Ok(())
    }

    /// Removes the black hole of `addr` (packets flow again; TCP retransmits catch up).
    pub fn heal(&self, addr: &str) -> Result<(), HarnessError> {
        let mut holes = self.holes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = holes.clone();
        next.remove(addr);
        self.apply_rules(&next)?;
        *holes = next;
        Ok(())
    }

    /// The addresses black-holed now.
    pub fn holes(&self) -> Vec<String> {
        self.holes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// The nftables ruleset inside the namespace (diagnostics).
    pub fn ruleset(&self) -> String {
        let mut c = self.command("nft");
        c.args(["list", "ruleset"]);
        run_with_timeout(c, CMD_TIMEOUT).map_or_else(|e| e.to_string(), |o| o.stdout)
    }

    /// Replaces our table atomically (one `nft -f` transaction) with rules for `holes`.
    fn apply_rules(&self, holes: &BTreeSet<String>) -> Result<(), HarnessError> {
        let mut rules = String::new();
        for a in holes {
            rules.push_str(&format!("    ip saddr {a} drop\n    ip daddr {a} drop\n"));
        }
        let script = format!(
            "table inet {TABLE} {{}}\ndelete table inet {TABLE}\n\
             table inet {TABLE} {{\n\
             \x20 chain input {{\n    type filter hook input priority -300; policy accept;\n{rules}  }}\n\
             \x20 chain output {{\n    type filter hook output priority -300; policy accept;\n{rules}  }}\n\
             }}\n"
        );
        let path = std::env::temp_dir().join(format!("{}.nft", self.name));
        std::fs::write(&path, &script)
            .map_err(|e| HarnessError::io(path.display().to_string(), e))?;
        let mut c = self.command("nft");
        c.arg("-f").arg(&path);
        let res = run_with_timeout(c, CMD_TIMEOUT).and_then(CmdOutput::ok);
        let _ = std::fs::remove_file(&path);
        res.map(|_| ())
            .map_err(|e| HarnessError::Netns(format!("nft: {e}")))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run(&["ip", "netns", "del", &self.name]);
    }
}
