//! `MasterConfig`: the salt-master options salt-rs implements, with Salt 3007's defaults
//! (`salt/config/__init__.py` `DEFAULT_MASTER_OPTS`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::common::{MIN, MS, SEC, default_id, parse_ip, read_log_file, zero_disables};
use crate::error::{ConfigErrors, Problem};
use crate::fileserver::FileServerConfig;
use crate::load::{Paths, Shared, loader_methods, read_master_sign_key_name, with_shared};
use crate::master_eauth::{acl_blacklist, eauth_docs, read_eauth_opts};
use crate::reader::{
    Reader, boolean, count, duration, int_in, json_map, path, port, string, string_list_map, word,
};
use crate::types::{HashType, LogFile, PublisherAclBlacklist, Secret, SigningAlgorithm, invalid};
use crate::{LoadOptions, Loaded, OptionDoc, salt_options};

/// Default `publish_port`.
pub const DEFAULT_PUBLISH_PORT: u16 = 4505;
/// Default `ret_port`.
pub const DEFAULT_RET_PORT: u16 = 4506;
/// Default `worker_threads`.
pub const DEFAULT_WORKER_THREADS: u32 = 5;
/// Default `keysize`.
pub const DEFAULT_KEYSIZE: u32 = 2048;
/// Default `autosign_timeout` (120 minutes).
pub const DEFAULT_AUTOSIGN_TIMEOUT: Duration = Duration::from_secs(120 * 60);
/// Default `aes_rotation_grace` (60 s, salt-rs only): the previous AES key's grace window.
pub const DEFAULT_AES_ROTATION_GRACE: Duration = Duration::from_secs(60);
/// Default `publish_session` (86400 s): AES session key lifetime.
pub const DEFAULT_PUBLISH_SESSION: Duration = Duration::from_secs(86400);
/// Default `loop_interval` (60 s).
pub const DEFAULT_LOOP_INTERVAL: Duration = Duration::from_secs(60);
/// Default `keep_jobs_seconds` (86400 s, i.e. `keep_jobs: 24` hours).
pub const DEFAULT_KEEP_JOBS: Duration = Duration::from_secs(86400);
/// Default `zmq_heartbeat_timeout` (Salt 3008's `_DEFAULT_ZMQ_HEARTBEAT_TIMEOUT`, 30 000 ms).
pub const DEFAULT_ZMQ_HEARTBEAT_TIMEOUT: Duration = Duration::from_millis(30_000);
/// Default `tcp_keepalive_idle` (300 s).
pub const DEFAULT_TCP_KEEPALIVE_IDLE: Duration = Duration::from_secs(300);

salt_options! {
    /// The salt-master configuration, typed. Paths are final (`root_dir` applied).
    #[derive(Clone, Debug, PartialEq)]
    #[non_exhaustive]
    pub struct MasterConfig {
        shared_daemon_options;
        /// The master's id. Unset: the cached `minion_id` file or the host name, plus
        /// `_master`, as Salt does.
        #[salt_default = "<hostname>_master"]
        pub id: String,
        /// Address the publish and return ports bind to.
        #[salt_default = "0.0.0.0"]
        pub interface: IpAddr,
        /// Bind IPv6 sockets (`None`: decided by `interface`).
        #[salt_default = "None"]
        pub ipv6: Option<bool>,
        /// ZeroMQ PUB port the minions subscribe to.
        #[salt_default = "4505"]
        pub publish_port: u16,
        /// ZeroMQ ROUTER port for authentication and returns.
        #[salt_default = "4506"]
        pub ret_port: u16,
        /// Request-server workers (RSA and AES work runs on this many threads).
        #[salt_default = "5"]
        pub worker_threads: u32,
        /// Directory of the master key pair and the minion key directories.
        #[salt_default = "/etc/salt/pki/master"]
        pub pki_dir: PathBuf,
        /// Cache directory (job cache, minion data).
        #[salt_default = "/var/cache/salt/master"]
        pub cachedir: PathBuf,
        /// Directory of the master's local sockets. Salt replaces it by
        /// `<cachedir>/.salt-unix` when it is more than 10 characters longer than `cachedir`.
        #[salt_default = "/var/run/salt/master"]
        pub sock_dir: PathBuf,
        /// PID file.
        #[salt_default = "/var/run/salt-master.pid"]
        pub pidfile: PathBuf,
        /// Log destination: a path or a `udp://`/`tcp://`/`file://` URL.
        #[salt_default = "/var/log/salt/master"]
        pub log_file: LogFile,
        /// Log of key operations (salt-key).
        #[salt_default = "/var/log/salt/key"]
        pub key_logfile: LogFile,
        /// User the daemon runs as.
        #[salt_default = "root (the current user)"]
        pub user: String,
        /// Prefix of every path option (Salt's `prepend_root_dir`). Not root: `$HOME/.salt-rs/master`.
        #[salt_default = "/"]
        pub root_dir: PathBuf,
        /// Accept every new minion key automatically. Dangerous.
        #[salt_default = "False"]
        pub auto_accept: bool,
        /// File of minion id globs whose keys are accepted automatically.
        #[salt_default = "None"]
        pub autosign_file: Option<PathBuf>,
        /// File of minion id globs whose keys are rejected automatically.
        #[salt_default = "None"]
        pub autoreject_file: Option<PathBuf>,
        /// Lifetime of `autosign_timeout` grants in `<pki_dir>/minions_autosign` (minutes in Salt).
        #[salt_default = "120"]
        pub autosign_timeout: Duration,
        /// Accept any minion without key checks. Dangerous; for recovery only.
        #[salt_default = "False"]
        pub open_mode: bool,
        /// Maximum number of accepted minions (`None`: unlimited; Salt's `0`).
        #[salt_default = "0"]
        pub max_minions: Option<u32>,
        /// The soft descriptor limit (`RLIMIT_NOFILE`) the master raises itself to at start,
        /// up to the hard limit (Salt's `max_open_files`).
        #[salt_default = "100000"]
        pub max_open_files: u32,
        /// Sign the master public key in auth replies with the `master_sign` key pair.
        #[salt_default = "False"]
        pub master_sign_pubkey: bool,
        /// Base name of the signing key pair in `pki_dir` (alias `master_key_sign_name`).
        #[salt_default = "master_sign"]
        pub master_sign_key_name: String,
        /// File name (in `pki_dir`) of a pre-computed public-key signature.
        #[salt_default = "master_pubkey_signature (3008: None)"]
        pub master_pubkey_signature: String,
        /// Send the pre-computed signature file instead of signing at runtime.
        #[salt_default = "False"]
        pub master_use_pubkey_signature: bool,
        /// Sign every publication with the master key.
        #[salt_default = "True"]
        pub sign_pub_messages: bool,
        /// Signature scheme of signed publications.
        #[salt_default = "PKCS1v15-SHA1"]
        pub publish_signing_algorithm: SigningAlgorithm,
        /// Refuse `_return`s that carry no `sig` (minions need `minion_sign_messages`).
        #[salt_default = "False"]
        pub require_minion_sign_messages: bool,
        /// Refuse `_return`s whose `sig` does not verify (or whose minion key cannot be read);
        /// without it such a return is logged and still accepted, as in Salt.
        #[salt_default = "False"]
        pub drop_messages_signature_fail: bool,
        /// Algorithm of minion message signatures. Unset (Salt 3008.5 then fails on every
        /// signed `_return` with a `KeyError`): the one the request says it signed with
        /// (`sig_algo`).
        #[salt_default = "unset"]
        pub signing_algorithm: Option<SigningAlgorithm>,
        /// RSA key size when generating the master key.
        #[salt_default = "2048"]
        pub keysize: u32,
        /// Hash for fingerprints and file hashes.
        #[salt_default = "sha256"]
        pub hash_type: HashType,
        /// Lowest auth protocol version accepted from minions.
        #[salt_default = "3"]
        pub minimum_auth_version: u32,
        /// Session (AES) key lifetime before rotation (seconds in Salt).
        #[salt_default = "86400"]
        pub publish_session: Duration,
        /// Maintenance loop period (seconds in Salt).
        #[salt_default = "60"]
        pub loop_interval: Duration,
        /// Salt 3008's batch manager wakes this often (seconds) to check `salt --async -b`
        /// batches for minions past their timeout even when no event arrives (read by Salt with
        /// `opts.get`, not in its defaults); at least 0.1 s.
        #[salt_default = "5"]
        pub batch_manager_loop_interval: Duration,
        /// Rotate the AES key when a minion key is deleted or rejected.
        #[salt_default = "True"]
        pub rotate_aes_key: bool,
        /// Publish a ping after rotating the AES key so minions re-authenticate.
        #[salt_default = "False"]
        pub ping_on_rotate: bool,
        /// salt-rs only: seconds after a rotation during which requests still encrypted
        /// with the previous AES publish key are accepted (`0`: none), so jobs in flight and
        /// minions that have not re-authenticated yet lose nothing. Publishes always use the
        /// new key, and a removed minion is refused at once by its token check.
        #[salt_default = "60 (salt-rs only)"]
        pub aes_rotation_grace: Duration,
        /// Publish to topics (per-minion ZeroMQ filtering) instead of broadcasting.
        #[salt_default = "False"]
        pub zmq_filtering: bool,
        /// ZeroMQ high-water mark of the PUB socket.
        #[salt_default = "1000"]
        pub pub_hwm: u32,
        /// ZeroMQ listen backlog.
        #[salt_default = "1000"]
        pub zmq_backlog: u32,
        /// Where the master event bus listens: `ipc` (`sock_dir/master_event_pub.ipc` and
        /// `master_event_pull.ipc`) or `tcp` (loopback `tcp_master_pub_port` and
        /// `tcp_master_pull_port`), as Salt's (docs/interop.md, "The master event bus for Salt's tools").
        #[salt_default = "ipc"]
        pub ipc_mode: crate::IpcMode,
        /// Loopback port of the event bus's pub side with `ipc_mode: tcp`.
        #[salt_default = "4512"]
        pub tcp_master_pub_port: u16,
        /// Loopback port of the event bus's pull side with `ipc_mode: tcp`.
        #[salt_default = "4513"]
        pub tcp_master_pull_port: u16,
        /// salt-rs only: the framing the event bus's readers speak: `tcp` for Salt 3007/3008
        /// tools (`salt.transport.tcp` over the socket), `ipc` for Salt 3006 tools
        /// (`salt.transport.ipc`). Readers cannot be told apart by what they send; events
        /// fired into the pull socket are read in either framing.
        #[salt_default = "tcp (salt-rs only)"]
        pub event_bus_framing: crate::EventBusFraming,
        /// Users allowed to publish, with what each may run, in Salt's ACL grammar (function
        /// regexes, `{target: [functions]}`, argument patterns: `salt_eauth` reads it from
        /// `eauth_opts`; this copy tells the master who the users are).
        #[salt_default = "{}"]
        pub publisher_acl: serde_json::Map<String, serde_json::Value>,
        /// Users and modules denied even when `publisher_acl` allows them.
        #[salt_default = "{}"]
        pub publisher_acl_blacklist: PublisherAclBlacklist,
        /// The options of external authentication as written (`external_auth`,
        /// `publisher_acl`, `sudo_acl`, `token_expire`, ...: [`EAUTH_OPTIONS`]), read and
        /// checked by `salt_eauth::EauthConfig::from_opts` when the master starts.
        #[salt_default = "{}"]
        pub eauth_opts: serde_json::Map<String, serde_json::Value>,
        /// How long job results are kept (`keep_jobs_seconds`; the deprecated `keep_jobs`,
        /// in hours, applies when `keep_jobs_seconds` is left at its default). Zero: forever.
        #[salt_default = "86400"]
        pub keep_jobs_seconds: Duration,
        /// Seconds each `saltutil.find_job` round waits for answers once a job's timeout has
        /// passed with minions missing (the `salt` command keeps waiting while they run it).
        #[salt_default = "10"]
        pub gather_job_timeout: Duration,
        /// Store job returns in the master's job cache (`{cachedir}/jobs`); with `False`
        /// returns still reach a waiting `salt` command but are not written.
        #[salt_default = "True"]
        pub job_cache: bool,
        /// Store each runner call as a job of the master (Salt's `RunnerClient` reads this
        /// gate, `<client class>_returns`, though it is not in Salt's option list).
        #[salt_default = "True"]
        pub runnerclient_returns: bool,
        /// Store each wheel call as a job of the master (`WheelClient`'s gate, as
        /// `runnerclient_returns`).
        #[salt_default = "True"]
        pub wheelclient_returns: bool,
        /// Time-to-live of a request in the request server (`None`: no limit; Salt's `0`).
        #[salt_default = "0"]
        pub request_server_ttl: Option<Duration>,
        /// Allow `pki_dir` files readable by the group.
        #[salt_default = "False"]
        pub permissive_pki_access: bool,
        /// Keep a deleted minion's cache.
        #[salt_default = "False"]
        pub preserve_minion_cache: bool,
        /// Passphrase of the master private key.
        #[salt_default = "None"]
        pub key_pass: Option<Secret>,
        /// Passphrase of the `master_sign` private key.
        #[salt_default = "None"]
        pub signing_key_pass: Option<Secret>,
        /// ZMTP heartbeat interval on the master sockets (milliseconds; `0` disables).
        /// Salt 3008 sets 10000; Salt 3006/3007 and salt-rs (by default) do not: libzmq's
        /// heartbeat timers cost O(connections²) (docs/benchmarks.md), and minions detect a
        /// lost master with their own checks (docs/failover.md).
        #[salt_default = "0"]
        pub zmq_heartbeat_ivl: Option<Duration>,
        /// ZMTP heartbeat timeout (milliseconds; `0` disables).
        #[salt_default = "30000"]
        pub zmq_heartbeat_timeout: Option<Duration>,
        /// The master group this master belongs to (`cluster_id`, with `keys.cache_driver`
        /// and the `postgres.*` connection; docs/group.md). `None`: a single master.
        #[salt_default = "None"]
        pub cluster_id: Option<crate::cluster::ClusterConfig>,
        /// Event returners (`event_return`: `postgres` only; any other name stops the
        /// master), with `master_job_cache: postgres` and the `returner.postgres.*`
        /// connection of Salt's postgres returner.
        #[salt_default = "\"\""]
        pub event_return: crate::MasterReturners,
        /// Pillar environments and their directories (`__env__` maps any other name).
        #[salt_default = "{base: [/srv/pillar, /srv/spm/pillar]}"]
        pub pillar_roots: BTreeMap<String, Vec<String>>,
        /// How pillar SLS results merge: `smart`, `recurse`, `aggregate`, `overwrite`, `none`.
        #[salt_default = "smart"]
        pub pillar_source_merging_strategy: String,
        /// Merge lists instead of replacing them when pillar sources overlap.
        #[salt_default = "False"]
        pub pillar_merge_lists: bool,
        /// Hide render error details from the minion (`_errors` names the SLS only).
        #[salt_default = "True"]
        pub pillar_safe_render_error: bool,
        /// Included pillar SLS override the including one (instead of the reverse).
        #[salt_default = "False"]
        pub pillar_includes_override_sls: bool,
        /// Take the minion's `saltenv` as its `pillarenv` when it sends none.
        #[salt_default = "False"]
        pub pillarenv_from_saltenv: bool,
        /// Master-wide `pillarenv` (`None`: every environment).
        #[salt_default = "None"]
        pub pillarenv: Option<String>,
        /// External pillars, in order: `{module: argument}` items (implemented: `cmd_json`,
        /// `cmd_yaml`, `cmd_yamlex`, `file_tree`, `git`, `http_json`, `http_yaml`, `postgres`, `stack`;
        /// any other module stops the master at start by name). docs/pillar.md.
        #[salt_default = "[]"]
        pub ext_pillar: Vec<crate::ExtPillar>,
        /// The connection of the `postgres` external pillar: `{host, user, pass, db, port}`
        /// (a directory as `host`: its Unix socket; other keys ignored, as Salt does).
        #[salt_default = "{host: localhost, user: salt, pass: salt, db: salt, port: 5432}"]
        pub postgres: crate::PgPillarConn,
        /// Run `ext_pillar` before the top-file pillar (which then overrides it).
        #[salt_default = "False"]
        pub ext_pillar_first: bool,
        /// `ext_pillar` modules a minion may ask for in its pillar request's `ext`.
        #[salt_default = "[libvirt, virtkey]"]
        pub on_demand_ext_pillar: Vec<String>,
        /// Keep each minion's grains and pillar in `cachedir/minions/<id>/data.p`.
        #[salt_default = "True"]
        pub minion_data_cache: bool,
        /// Who may read mine data: minion id regex -> function regexes (empty: everyone).
        #[salt_default = "{}"]
        pub mine_get: BTreeMap<String, Vec<String>>,
    }
    nested {
        /// The file server and the state options handed to minions (`file_roots`, ...).
        pub fileserver: FileServerConfig,
        /// The reactor (`reactor`, `reactor_worker_*`; docs/reactor.md).
        pub reactor: crate::ReactorConfig,
        /// salt-api's options (`rest_cherrypy`, `netapi_enable_clients`, ...).
        pub api: crate::netapi::ApiOptions,
        /// `keys.cache_driver: mmap_key`: the shape of Salt 3008's key index files
        /// (`mmap_key_*`). `None`: another driver.
        pub keys_mmap: Option<crate::MmapKeyConfig>,
        /// Where this configuration was read from, and the process facts it was read with
        /// (the wheel's `config.values` re-reads the files: [`crate::master_values`]).
        pub load_options: LoadOptions,
    }
}

impl MasterConfig {
    loader_methods!("master");
}

impl crate::load::Role for MasterConfig {
    const ROLE: &'static str = "master";

    fn read(r: &mut Reader<'_>, opts: &LoadOptions) -> Self {
        let paths = Paths::read(r, opts, Self::ROLE);
        let key_logfile = read_log_file(r, "key_logfile", "/var/log/salt/key", &paths.root_dir);
        let autosign_file = r.opt("autosign_file", path).map(|p| paths.under_root(&p));
        let autoreject_file = r.opt("autoreject_file", path).map(|p| paths.under_root(&p));

        let id = match r.opt("id", string) {
            Some(id) => id,
            None => format!("{}_master", default_id(opts, &paths.root_dir, true)),
        };

        let keep_jobs_hours = r.get("keep_jobs", 24u32, count);
        let keep_jobs_seconds = r.get("keep_jobs_seconds", DEFAULT_KEEP_JOBS, duration(SEC));
        let keep_jobs_seconds = if keep_jobs_seconds == DEFAULT_KEEP_JOBS && keep_jobs_hours != 24 {
            Duration::from_secs(u64::from(keep_jobs_hours) * 3600)
        } else {
            keep_jobs_seconds
        };

        let master_sign_key_name = read_master_sign_key_name(r);

        // Handled by the loader (`include:`, `default_include`), not options of their own.
        for key in ["include", "default_include"] {
            r.ignore(key);
        }
        crate::salt3008::read_master(r);
        crate::ext_pillar::refuse_unimplemented(r);

        with_shared!(
            Shared::read(r),
            Self {
                id,
                interface: r.get("interface", IpAddr::from([0, 0, 0, 0]), word(parse_ip)),
                ipv6: r.opt("ipv6", boolean),
                publish_port: r.get("publish_port", DEFAULT_PUBLISH_PORT, port),
                ret_port: r.get("ret_port", DEFAULT_RET_PORT, port),
                worker_threads: r.get("worker_threads", DEFAULT_WORKER_THREADS, int_in(1, 1024)),
                pki_dir: paths.pki_dir,
                cachedir: paths.cachedir,
                sock_dir: paths.sock_dir,
                pidfile: paths.pidfile,
                log_file: paths.log_file,
                key_logfile,
                user: r.get("user", opts.default_user(), string),
                auto_accept: r.get("auto_accept", false, boolean),
                autosign_file,
                autoreject_file,
                autosign_timeout: r.get(
                    "autosign_timeout",
                    DEFAULT_AUTOSIGN_TIMEOUT,
                    duration(MIN)
                ),
                open_mode: r.get("open_mode", false, boolean),
                max_minions: r.get("max_minions", None, |n| {
                    count(n).map(|c| (c > 0).then_some(c))
                }),
                max_open_files: r.get("max_open_files", 100_000, count),
                master_sign_pubkey: r.get("master_sign_pubkey", false, boolean),
                master_sign_key_name,
                master_pubkey_signature: r.get(
                    "master_pubkey_signature",
                    "master_pubkey_signature".to_owned(),
                    string,
                ),
                master_use_pubkey_signature: r.get("master_use_pubkey_signature", false, boolean),
                sign_pub_messages: r.get("sign_pub_messages", true, boolean),
                publish_signing_algorithm: r.get(
                    "publish_signing_algorithm",
                    SigningAlgorithm::Pkcs1v15Sha1,
                    word(crate::types::parse_sig_algo),
                ),
                require_minion_sign_messages: r.get("require_minion_sign_messages", false, boolean),
                drop_messages_signature_fail: r.get("drop_messages_signature_fail", false, boolean),
                signing_algorithm: r.opt("signing_algorithm", word(crate::types::parse_sig_algo)),
                keysize: r.get("keysize", DEFAULT_KEYSIZE, int_in(2048, 16384)),
                hash_type: r.get(
                    "hash_type",
                    HashType::Sha256,
                    word(crate::types::parse_hash_type),
                ),
                minimum_auth_version: r.get("minimum_auth_version", 3, count),
                publish_session: r.get("publish_session", DEFAULT_PUBLISH_SESSION, duration(SEC)),
                loop_interval: r.get("loop_interval", DEFAULT_LOOP_INTERVAL, duration(SEC)),
                batch_manager_loop_interval: r
                    .get("batch_manager_loop_interval", 5 * SEC, duration(SEC))
                    .max(Duration::from_millis(100)),
                rotate_aes_key: r.get("rotate_aes_key", true, boolean),
                ipc_mode: r.get(
                    "ipc_mode",
                    crate::IpcMode::Ipc,
                    word(crate::event_bus::parse_ipc_mode)
                ),
                tcp_master_pub_port: r.get("tcp_master_pub_port", 4512, port),
                tcp_master_pull_port: r.get("tcp_master_pull_port", 4513, port),
                event_bus_framing: r.get(
                    "event_bus_framing",
                    crate::EventBusFraming::Tcp,
                    word(crate::event_bus::parse_framing)
                ),
                ping_on_rotate: r.get("ping_on_rotate", false, boolean),
                aes_rotation_grace: r.get(
                    "aes_rotation_grace",
                    DEFAULT_AES_ROTATION_GRACE,
                    duration(SEC),
                ),
                zmq_filtering: r.get("zmq_filtering", false, boolean),
                pub_hwm: r.get("pub_hwm", 1000, count),
                zmq_backlog: r.get("zmq_backlog", 1000, count),
                publisher_acl: r.get("publisher_acl", serde_json::Map::new(), json_map),
                eauth_opts: read_eauth_opts(r),
                publisher_acl_blacklist: r.get(
                    "publisher_acl_blacklist",
                    PublisherAclBlacklist::default(),
                    acl_blacklist,
                ),
                keep_jobs_seconds,
                request_server_ttl: r.get("request_server_ttl", None, |n| {
                    duration(SEC)(n).map(|d| (!d.is_zero()).then_some(d))
                }),
                permissive_pki_access: r.get("permissive_pki_access", false, boolean),
                preserve_minion_cache: r.get("preserve_minion_cache", false, boolean),
                job_cache: r.get("job_cache", true, boolean),
                runnerclient_returns: r.get("runnerclient_returns", true, boolean),
                wheelclient_returns: r.get("wheelclient_returns", true, boolean),
                gather_job_timeout: r.get(
                    "gather_job_timeout",
                    Duration::from_secs(10),
                    duration(SEC)
                ),
                key_pass: r.opt("key_pass", |n| string(n).map(Secret::new)),
                signing_key_pass: r.opt("signing_key_pass", |n| string(n).map(Secret::new)),
                zmq_heartbeat_ivl: r.get("zmq_heartbeat_ivl", None, zero_disables(MS)),
                zmq_heartbeat_timeout: r.get(
                    "zmq_heartbeat_timeout",
                    Some(DEFAULT_ZMQ_HEARTBEAT_TIMEOUT),
                    zero_disables(MS),
                ),
                keys_mmap: crate::cluster::read_mmap(r),
                cluster_id: crate::cluster::read(r),
                event_return: crate::returners::read(r),
                fileserver: FileServerConfig::read(r),
                reactor: crate::ReactorConfig::read(r),
                api: crate::netapi::read(r, &paths.root_dir),
                load_options: opts.clone(),
                pillar_roots: r.get("pillar_roots", default_pillar_roots(), string_list_map),
                pillar_source_merging_strategy: r.get(
                    "pillar_source_merging_strategy",
                    "smart".to_owned(),
                    word(merge_strategy),
                ),
                pillar_merge_lists: r.get("pillar_merge_lists", false, boolean),
                pillar_safe_render_error: r.get("pillar_safe_render_error", true, boolean),
                pillar_includes_override_sls: r.get("pillar_includes_override_sls", false, boolean),
                pillarenv_from_saltenv: r.get("pillarenv_from_saltenv", false, boolean),
                pillarenv: r.opt("pillarenv", string),
                ext_pillar: r.get("ext_pillar", Vec::new(), crate::ext_pillar::ext_pillar_list),
                postgres: r.get(
                    "postgres",
                    crate::PgPillarConn::default(),
                    crate::ext_pillar::pg_conn,
                ),
                ext_pillar_first: r.get("ext_pillar_first", false, boolean),
                on_demand_ext_pillar: r.get(
                    "on_demand_ext_pillar",
                    vec!["libvirt".to_owned(), "virtkey".to_owned()],
                    crate::ext_pillar::on_demand
                ),
                minion_data_cache: r.get("minion_data_cache", true, boolean),
                mine_get: r.get("mine_get", BTreeMap::new(), string_list_map),
                root_dir: paths.root_dir,
            }
        )
    }

    fn option_table() -> Vec<OptionDoc> {
        let mut table = Self::field_docs();
        // `eauth_opts` holds options by their Salt names: those are the documented ones.
        table.retain(|o| o.name != "eauth_opts");
        table.extend(FileServerConfig::option_docs());
        table.extend(crate::ReactorConfig::option_docs());
        table.extend(extra_docs());
        table.extend(eauth_docs());
        table.extend(crate::netapi::docs());
        table
    }
}

/// Options read by the loader that are not fields of [`MasterConfig`].
fn extra_docs() -> Vec<OptionDoc> {
    let mut v = crate::cluster::docs();
    v.extend(crate::returners::docs());
    v.extend(crate::ext_pillar::refused_docs());
    v.extend(crate::salt3008::docs("master"));
    v.extend([
        OptionDoc {
            name: "keep_jobs",
            default: "24",
            doc: "Deprecated by Salt in favour of `keep_jobs_seconds`; hours. Used only when \
                  `keep_jobs_seconds` is left at its default."
                .to_owned(),
        },
        OptionDoc {
            name: "master_key_sign_name",
            default: "-",
            doc: "Not a Salt option: accepted as `master_sign_key_name` with a warning.".to_owned(),
        },
        OptionDoc {
            name: "include",
            default: "[]",
            doc: "Extra files (string or list of globs, relative to the config directory), \
                  read after `default_include`."
                .to_owned(),
        },
        OptionDoc {
            name: "default_include",
            default: "master.d/*.conf",
            doc: "Glob of drop-in files merged in sorted order after the main file.".to_owned(),
        },
    ]);
    v
}

/// Salt's default `pillar_roots`.
fn default_pillar_roots() -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([(
        "base".to_owned(),
        vec!["/srv/pillar".to_owned(), "/srv/spm/pillar".to_owned()],
    )])
}

/// `pillar_source_merging_strategy`: one of Salt's names.
fn merge_strategy(s: &str) -> Result<String, Problem> {
    match s {
        "smart" | "recurse" | "aggregate" | "overwrite" | "none" => Ok(s.to_owned()),
        other => Err(invalid(
            other,
            "expected smart, recurse, aggregate, overwrite or none",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_table_matches_what_the_loader_reads() {
        let (asked, documented) = crate::load::asked_and_documented::<MasterConfig>();
        assert_eq!(asked, documented);
    }
}
