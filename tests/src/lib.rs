//! salt-integration-tests: the harness every end-to-end, interop and failover-lab test uses.
//!
//! It runs the real binaries as real processes: our `salt-master`, `salt`, `salt-minion` and
//! `salt-key` (built once per test process, see [`bins`]) and, where a venv is present, real
//! Salt's (see [`venv`]). Each test gets a short temporary root ([`TempRoot`]), free ports
//! ([`ports`]), Salt-style YAML configs ([`MasterConf`], [`MinionConf`]), daemons in their own
//! process groups that die with the test ([`Proc`]), condition waits instead of sleeps
//! ([`wait_until`], [`wait_for_log`]) and, for fault injection, a private network namespace
//! with black-hole rules ([`Netns`]). [`lab`] puts these together into the three-master
//! failover lab.
//!
//! What it does not do: touch any address outside loopback or its own namespace, or leave a
//! process behind (every daemon is killed by process group on drop).
//!
//! A test cannot pass by skipping: each prerequisite (a Salt venv, root for a network
//! namespace, PostgreSQL, a command) goes through [`require`] (`salt_testkit`), which fails
//! the test under `CI=true` and otherwise prints and records the skip (`scripts/test.sh` ends
//! with the count of skipped tests by reason).
#![forbid(unsafe_code)]

pub mod api_support;
pub mod bins;
pub mod bus_listener;
pub mod chaos;
pub mod cli;
pub mod config;
pub mod e2e_support;
pub mod error;
pub mod fleet;
pub mod formulas_support;
pub mod git_support;
pub mod interop_pair;
pub mod interop_support;
pub mod keys;
pub mod lab;
pub mod netns;
pub mod orch_support;
pub mod pam;
pub mod pg;
pub mod pillar_support;
pub mod ports;
pub mod process;
pub mod root;
pub mod states_support;
pub mod venv;
pub mod wait;

pub use bins::{Bins, bins, workspace_root};
pub use cli::{CmdOutput, run_with_timeout};
pub use config::{Flavor, MasterConf, MinionConf, Yaml};
pub use error::HarnessError;
pub use keys::gen_keys;
pub use netns::Netns;
pub use ports::{free_port, free_port_pair};
pub use process::{Proc, ProcSpec};
pub use root::TempRoot;
pub use salt_testkit::{Missing, both, command, require, root};
pub use venv::{SaltVenv, salt_venv, venv_for};
pub use wait::{patience, wait_for_log, wait_until};
