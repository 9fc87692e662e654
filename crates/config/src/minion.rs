//! `MinionConfig`: the salt-minion options salt-rs implements, with Salt 3007's defaults
//! (`salt/config/__init__.py` `DEFAULT_MINION_OPTS`).

use std::path::PathBuf;
use std::time::Duration;

use crate::common::{MIN, MS, SEC, default_id};
use crate::error::{ConfigErrors, Problem};
use crate::load::{Paths, Shared, loader_methods, read_master_sign_key_name, with_shared};
use crate::node::{Kind, Node};
use crate::reader::{
    Reader, boolean, count, count_or_unset, duration, int_in, json_map, port, string, word,
};
use crate::types::{
    EncryptionAlgorithm, HashType, LogFile, MasterAddr, MasterType, Masters, SigningAlgorithm,
};
use crate::{LoadOptions, Loaded, OptionDoc, salt_options};

/// Default `master`.
pub const DEFAULT_MASTER: &str = "salt";
/// Default `master_port`.
pub const DEFAULT_MASTER_PORT: u16 = 4506;
/// Default `auth_tries`.
pub const DEFAULT_AUTH_TRIES: u32 = 7;
/// Default `auth_timeout` (5 s).
pub const DEFAULT_AUTH_TIMEOUT: Duration = Duration::from_secs(5);
/// Default `acceptance_wait_time` (10 s).
pub const DEFAULT_ACCEPTANCE_WAIT_TIME: Duration = Duration::from_secs(10);
/// Default `retry_dns` (30 s).
pub const DEFAULT_RETRY_DNS: Duration = Duration::from_secs(30);
/// Default `recon_default` (1000 ms).
pub const DEFAULT_RECON_DEFAULT: Duration = Duration::from_millis(1000);
/// Default `recon_max` (10 000 ms).
pub const DEFAULT_RECON_MAX: Duration = Duration::from_millis(10_000);
/// Default `random_reauth_delay` (10 s).
pub const DEFAULT_RANDOM_REAUTH_DELAY: Duration = Duration::from_secs(10);
/// Default `return_retry_timer` (5 s).
pub const DEFAULT_RETURN_RETRY_TIMER: Duration = Duration::from_secs(5);
/// Default `return_retry_timer_max` (10 s).
pub const DEFAULT_RETURN_RETRY_TIMER_MAX: Duration = Duration::from_secs(10);
/// Default `mine_interval` (60 minutes).
pub const DEFAULT_MINE_INTERVAL: Duration = Duration::from_secs(60 * 60);

salt_options! {
    /// The salt-minion configuration, typed. Paths are final (`root_dir` applied).
    #[derive(Clone, Debug, PartialEq)]
    #[non_exhaustive]
    pub struct MinionConfig {
        shared_daemon_options;
        /// The minion id. Unset: `<root_dir>/etc/salt/minion_id` if present, else the host name.
        #[salt_default = "<hostname>"]
        pub id: String,
        /// Master(s): `host`, `host:port`, `[v6addr]:port`, or a list of those. With
        /// `master_type` failover or distributed a single master becomes a one-element list.
        #[salt_default = "salt"]
        pub master: Masters,
        /// Master return port, for entries without their own port.
        #[salt_default = "4506"]
        pub master_port: u16,
        /// Master publish port (`None`: ask the master during authentication).
        #[salt_default = "unset"]
        pub publish_port: Option<u16>,
        /// How to use the `master` list: str, failover, distributed, func or disable.
        #[salt_default = "str"]
        pub master_type: MasterType,
        /// Shuffle the master list before use (deprecated alias `master_shuffle`).
        #[salt_default = "False"]
        pub random_master: bool,
        /// How often to check that the master is alive (seconds; zero: never).
        #[salt_default = "0"]
        pub master_alive_interval: Duration,
        /// Return to the first master of the list once it is back (failover only).
        #[salt_default = "False"]
        pub master_failback: bool,
        /// How often to check for the first master when failed over (seconds; zero: use
        /// `master_alive_interval`).
        #[salt_default = "0"]
        pub master_failback_interval: Duration,
        /// Connection attempts per master before giving up (`None`: forever; Salt's `-1`).
        #[salt_default = "-1 (3006: 1)"]
        pub master_tries: Option<u32>,
        /// Authentication attempts per connection.
        #[salt_default = "7"]
        pub auth_tries: u32,
        /// Timeout of one authentication request (seconds).
        #[salt_default = "5"]
        pub auth_timeout: Duration,
        /// Refuse to continue when the master's key changed (instead of re-authenticating).
        #[salt_default = "False"]
        pub auth_safemode: bool,
        /// Wait between authentication attempts while the key is pending (seconds).
        #[salt_default = "10"]
        pub acceptance_wait_time: Duration,
        /// Upper bound of the growing wait (seconds; zero: no growth).
        #[salt_default = "0"]
        pub acceptance_wait_time_max: Duration,
        /// Keep retrying when the key is rejected instead of exiting.
        #[salt_default = "False"]
        pub rejected_retry: bool,
        /// Wait between DNS resolution retries of the master (seconds; zero: fail at once).
        #[salt_default = "30"]
        pub retry_dns: Duration,
        /// Number of DNS retries (`None`: forever).
        #[salt_default = "None"]
        pub retry_dns_count: Option<u32>,
        /// Require the master's public key to be signed by `master_sign.pub`
        /// (alias `verify_master_pub_sig`).
        #[salt_default = "False"]
        pub verify_master_pubkey_sign: bool,
        /// Base name of the master signing key (alias `master_key_sign_name`).
        #[salt_default = "master_sign"]
        pub master_sign_key_name: String,
        /// Verify the signature on every auth reply, not only when the key changes.
        #[salt_default = "False"]
        pub always_verify_signature: bool,
        /// Expected fingerprint of the master public key (`None`: not pinned).
        #[salt_default = "''"]
        pub master_finger: Option<String>,
        /// RSA encryption scheme for the auth exchange.
        #[salt_default = "OAEP-SHA1"]
        pub encryption_algorithm: EncryptionAlgorithm,
        /// RSA signature scheme for the auth exchange.
        #[salt_default = "PKCS1v15-SHA1"]
        pub signing_algorithm: SigningAlgorithm,
        /// Directory of the minion key pair and the cached master key.
        #[salt_default = "/etc/salt/pki/minion"]
        pub pki_dir: PathBuf,
        /// Cache directory.
        #[salt_default = "/var/cache/salt/minion"]
        pub cachedir: PathBuf,
        /// Directory of local sockets (`<cachedir>/.salt-unix` when much longer than cachedir).
        #[salt_default = "/var/run/salt/minion"]
        pub sock_dir: PathBuf,
        /// PID file.
        #[salt_default = "/var/run/salt-minion.pid"]
        pub pidfile: PathBuf,
        /// Log destination: a path or a URL.
        #[salt_default = "/var/log/salt/minion"]
        pub log_file: LogFile,
        /// User the daemon runs as.
        #[salt_default = "root"]
        pub user: String,
        /// Prefix of every path option. Not root: `$HOME/.salt-rs/minion`.
        #[salt_default = "/"]
        pub root_dir: PathBuf,
        /// RSA key size when generating the minion key.
        #[salt_default = "2048"]
        pub keysize: u32,
        /// Hash for fingerprints.
        #[salt_default = "sha256"]
        pub hash_type: HashType,
        /// Subscribe only to publications for this minion (ZeroMQ topics).
        #[salt_default = "False"]
        pub zmq_filtering: bool,
        /// Initial ZeroMQ reconnect interval (milliseconds).
        #[salt_default = "1000"]
        pub recon_default: Duration,
        /// Maximum ZeroMQ reconnect interval (milliseconds).
        #[salt_default = "10000"]
        pub recon_max: Duration,
        /// Randomise the reconnect interval between `recon_default` and `recon_max`.
        #[salt_default = "True"]
        pub recon_randomize: bool,
        /// Require publications to be signed by the master.
        #[salt_default = "False"]
        pub sign_pub_messages: bool,
        /// Sign every request to the master with `minion.pem` (`sig`, `signing_algorithm`),
        /// as Salt 3008 does: for masters with `require_minion_sign_messages`.
        #[salt_default = "False"]
        pub minion_sign_messages: bool,
        /// Ping the master this often (minutes; zero: never).
        #[salt_default = "0"]
        pub ping_interval: Duration,
        /// Static grains (free-form mapping).
        #[salt_default = "{}"]
        pub grains: serde_json::Map<String, serde_json::Value>,
        /// Run each job in its own process (salt-rs: its own task).
        #[salt_default = "True"]
        pub multiprocessing: bool,
        /// Send mine data periodically.
        #[salt_default = "True"]
        pub mine_enabled: bool,
        /// Mine update period (minutes).
        #[salt_default = "60"]
        pub mine_interval: Duration,
        /// Watch ZeroMQ socket events (connect/disconnect) and log them.
        #[salt_default = "True (3007/3008), False (3006)"]
        pub zmq_monitor: bool,
        /// Connect over IPv6 (`None`: decided by the address).
        #[salt_default = "None"]
        pub ipv6: Option<bool>,
        /// Job ids remembered to drop duplicate publications.
        #[salt_default = "100"]
        pub minion_jid_queue_hwm: u32,
        /// Upper bound of the random delay before re-authenticating after a key rotation
        /// (seconds; salt-rs spreads over at most 2 s of it, `0`: at once).
        #[salt_default = "10"]
        pub random_reauth_delay: Duration,
        /// Minimum wait before retrying a failed return (seconds).
        #[salt_default = "5"]
        pub return_retry_timer: Duration,
        /// Maximum wait before retrying a failed return (seconds).
        #[salt_default = "10"]
        pub return_retry_timer_max: Duration,
        /// Attempts to send a return.
        #[salt_default = "3"]
        pub return_retry_tries: u32,
        /// Read (and Salt: write) `<root_dir>/etc/salt/minion_id` for a default `id`.
        #[salt_default = "True"]
        pub minion_id_caching: bool,
    }
}

impl MinionConfig {
    loader_methods!("minion");

    /// The master port to use for `addr`: its own port or `master_port`.
    pub fn ret_port_of(&self, addr: &MasterAddr) -> u16 {
        addr.port_or(self.master_port)
    }
}

impl crate::load::Role for MinionConfig {
    const ROLE: &'static str = "minion";

    fn read(r: &mut Reader<'_>, opts: &LoadOptions) -> Self {
        let paths = Paths::read(r, opts, Self::ROLE);

        let minion_id_caching = r.get("minion_id_caching", true, boolean);
        let id = match r.opt("id", string) {
            Some(id) => id,
            None => default_id(opts, &paths.root_dir, minion_id_caching),
        };

        let random_entry = r.entry_aliased(
            "random_master",
            "master_shuffle",
            "Salt deprecated `master_shuffle` in favour of `random_master`",
        );
        let random_master = r.convert(random_entry, false, boolean);
        let verify_entry = r.entry_aliased(
            "verify_master_pubkey_sign",
            "verify_master_pub_sig",
            "`verify_master_pub_sig` is not a Salt option",
        );
        let verify_master_pubkey_sign = r.convert(verify_entry, false, boolean);
        let master_sign_key_name = read_master_sign_key_name(r);

        let master_type = r.get("master_type", MasterType::Str, word(MasterType::parse));
        let default_master = Masters::One(MasterAddr {
            host: DEFAULT_MASTER.to_owned(),
            port: None,
        });
        let master = if master_type == MasterType::Func {
            // `master` names a module function; it is not an address.
            r.get("master", default_master, |n| {
                string(n).map(|s| {
                    Masters::One(MasterAddr {
                        host: s,
                        port: None,
                    })
                })
            })
        } else {
            match r.get("master", default_master, masters) {
                // Salt's eval_master turns a single master into a list for these modes.
                Masters::One(addr)
                    if matches!(master_type, MasterType::Failover | MasterType::Distributed) =>
                {
                    Masters::List(vec![addr])
                }
                other => other,
            }
        };

        for key in ["file_roots", "pillar_roots", "include", "default_include"] {
            r.ignore(key);
        }
        crate::salt3008::read_minion(r);
        // Read by the masterless pillar (crates/pillar) from the opts; checked here so that
        // an ext_pillar module salt-rs lacks stops the minion at start, by name.
        r.get("ext_pillar", Vec::new(), crate::ext_pillar::masterless_list);
        r.get("ext_pillar_first", false, boolean);
        // Read by the state compiler from the opts (crates/states: top_matches).
        r.get("master_tops_first", false, boolean);
        r.get(
            "on_demand_ext_pillar",
            Vec::new(),
            crate::ext_pillar::on_demand,
        );

        with_shared!(
            Shared::read(r),
            Self {
                id,
                master,
                master_port: r.get("master_port", DEFAULT_MASTER_PORT, port),
                publish_port: r.opt("publish_port", port),
                master_type,
                random_master,
                master_alive_interval: r.get(
                    "master_alive_interval",
                    Duration::ZERO,
                    duration(SEC)
                ),
                master_failback: r.get("master_failback", false, boolean),
                master_failback_interval: r.get(
                    "master_failback_interval",
                    Duration::ZERO,
                    duration(SEC),
                ),
                master_tries: r.get("master_tries", None, count_or_unset),
                auth_tries: r.get("auth_tries", DEFAULT_AUTH_TRIES, count),
                auth_timeout: r.get("auth_timeout", DEFAULT_AUTH_TIMEOUT, duration(SEC)),
                auth_safemode: r.get("auth_safemode", false, boolean),
                acceptance_wait_time: r.get(
                    "acceptance_wait_time",
                    DEFAULT_ACCEPTANCE_WAIT_TIME,
                    duration(SEC),
                ),
                acceptance_wait_time_max: r.get(
                    "acceptance_wait_time_max",
                    Duration::ZERO,
                    duration(SEC),
                ),
                rejected_retry: r.get("rejected_retry", false, boolean),
                retry_dns: r.get("retry_dns", DEFAULT_RETRY_DNS, duration(SEC)),
                retry_dns_count: r.opt("retry_dns_count", count),
                verify_master_pubkey_sign,
                master_sign_key_name,
                always_verify_signature: r.get("always_verify_signature", false, boolean),
                master_finger: r.opt("master_finger", string).filter(|f| !f.is_empty()),
                encryption_algorithm: r.get(
                    "encryption_algorithm",
                    EncryptionAlgorithm::OaepSha1,
                    word(crate::types::parse_enc_algo),
                ),
                signing_algorithm: r.get(
                    "signing_algorithm",
                    SigningAlgorithm::Pkcs1v15Sha1,
                    word(crate::types::parse_sig_algo),
                ),
                pki_dir: paths.pki_dir,
                cachedir: paths.cachedir,
                sock_dir: paths.sock_dir,
                pidfile: paths.pidfile,
                log_file: paths.log_file,
                user: r.get("user", opts.default_user(), string),
                keysize: r.get("keysize", 2048, int_in(2048, 16384)),
                hash_type: r.get(
                    "hash_type",
                    HashType::Sha256,
                    word(crate::types::parse_hash_type),
                ),
                zmq_filtering: r.get("zmq_filtering", false, boolean),
                recon_default: r.get("recon_default", DEFAULT_RECON_DEFAULT, duration(MS)),
                recon_max: r.get("recon_max", DEFAULT_RECON_MAX, duration(MS)),
                recon_randomize: r.get("recon_randomize", true, boolean),
                sign_pub_messages: r.get("sign_pub_messages", false, boolean),
                minion_sign_messages: r.get("minion_sign_messages", false, boolean),
                ping_interval: r.get("ping_interval", Duration::ZERO, duration(MIN)),
                grains: r.get("grains", serde_json::Map::new(), json_map),
                multiprocessing: r.get("multiprocessing", true, boolean),
                mine_enabled: r.get("mine_enabled", true, boolean),
                mine_interval: r.get("mine_interval", DEFAULT_MINE_INTERVAL, duration(MIN)),
                zmq_monitor: r.get("zmq_monitor", true, boolean),
                ipv6: r.opt("ipv6", boolean),
                minion_jid_queue_hwm: r.get("minion_jid_queue_hwm", 100, count),
                random_reauth_delay: r.get(
                    "random_reauth_delay",
                    DEFAULT_RANDOM_REAUTH_DELAY,
                    duration(SEC),
                ),
                return_retry_timer: r.get(
                    "return_retry_timer",
                    DEFAULT_RETURN_RETRY_TIMER,
                    duration(SEC),
                ),
                return_retry_timer_max: r.get(
                    "return_retry_timer_max",
                    DEFAULT_RETURN_RETRY_TIMER_MAX,
                    duration(SEC),
                ),
                return_retry_tries: r.get("return_retry_tries", 3, count),
                minion_id_caching,
                root_dir: paths.root_dir,
            }
        )
    }

    fn option_table() -> Vec<OptionDoc> {
        let mut table = Self::field_docs();
        table.extend(extra_docs());
        table
    }
}

/// `master`: a string or a non-empty list of strings, each a [`MasterAddr`].
fn masters(node: &Node) -> Result<Masters, Problem> {
    match &node.kind {
        Kind::Seq(items) if items.is_empty() => Err(Problem::Invalid {
            value: "[]".to_owned(),
            reason: "the master list is empty".to_owned(),
        }),
        Kind::Seq(items) => items
            .iter()
            .map(|item| string(item).and_then(|s| MasterAddr::parse(&s)))
            .collect::<Result<Vec<_>, _>>()
            .map(Masters::List),
        _ => match string(node) {
            Ok(s) => MasterAddr::parse(&s).map(Masters::One),
            Err(_) => Err(Problem::WrongType {
                expected: "a host or a list of hosts",
                found: node.describe(),
            }),
        },
    }
}

/// Options read by the loader that are not fields of [`MinionConfig`].
fn extra_docs() -> Vec<OptionDoc> {
    let doc = |name, default, doc: &str| OptionDoc {
        name,
        default,
        doc: doc.to_owned(),
    };
    vec![
        doc(
            "master_shuffle",
            "False",
            "Deprecated by Salt: used as `random_master`, with a warning.",
        ),
        doc(
            "verify_master_pub_sig",
            "-",
            "Not a Salt option: accepted as `verify_master_pubkey_sign` with a warning.",
        ),
        doc(
            "master_key_sign_name",
            "-",
            "Not a Salt option: accepted as `master_sign_key_name` with a warning.",
        ),
        doc(
            "include",
            "[]",
            "Extra files (string or list of globs, relative to the config directory), read \
             after `default_include`.",
        ),
        doc(
            "default_include",
            "minion.d/*.conf",
            "Glob of drop-in files merged in sorted order after the main file.",
        ),
        doc(
            "file_roots",
            "{base: [/srv/salt, /srv/spm/salt]}",
            "Accepted and ignored.",
        ),
        doc(
            "pillar_roots",
            "{base: [/srv/pillar, /srv/spm/pillar]}",
            "Accepted and ignored.",
        ),
        doc(
            "ext_pillar",
            "[]",
            "Masterless (`file_client: local`) external pillars, as the master's \
             (`cmd_json`, `cmd_yaml`, `cmd_yamlex`, `file_tree`, `http_json`, `http_yaml`; \
             `git` and any other module stop the minion at start by name).",
        ),
        doc(
            "ext_pillar_first",
            "False",
            "Masterless: run `ext_pillar` before the top-file pillar.",
        ),
        doc(
            "master_tops_first",
            "False",
            "The master's `master_tops` before the top file's matches (`state.show_top`, \
             highstate), not after.",
        ),
        doc(
            "on_demand_ext_pillar",
            "[libvirt, virtkey]",
            "Masterless: `ext_pillar` modules a pillar request's `ext` may name.",
        ),
    ]
    .into_iter()
    .chain(crate::salt3008::docs("minion"))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_table_matches_what_the_loader_reads() {
        let (asked, documented) = crate::load::asked_and_documented::<MinionConfig>();
        assert_eq!(asked, documented);
    }
}
