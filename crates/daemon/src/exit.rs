//! The exit codes of both daemons (and `salt-key`): one table, Salt's
//! (`salt.defaults.exitcodes`), so the same fault exits with the same code everywhere.

/// Clean stop (SIGTERM/SIGINT, or the master told the minion to stop).
pub const OK: u8 = 0;
/// Any other failure: another instance is running, a socket or the runtime cannot start,
/// privileges cannot be dropped (Salt's `EX_GENERIC`).
pub const GENERIC: u8 = 1;
/// A bad command line or a bad configuration: an unknown log level, a missing or invalid
/// config file, a log file that cannot be opened (Salt's `EX_USAGE`).
pub const USAGE: u8 = 64;
