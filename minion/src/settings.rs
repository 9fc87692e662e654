//! Map the typed Salt configuration onto the driver's settings.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmpv::Value;
use salt_config::{MasterType, MinionConfig};
use salt_failover::{self as failover, FailoverConfig, MasterAddr};
use salt_minion_core::driver::{MinionSettings, RunOutcome};
use salt_proto::auth_minion::AuthSettings;

/// A configuration the minion cannot run with.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// An option value this minion does not support.
    #[error("unsupported configuration: {0}")]
    Unsupported(String),
    /// A directory could not be created.
    #[error("cannot create {path}: {err}")]
    Dir {
        /// The directory.
        path: String,
        /// The error.
        err: std::io::Error,
    },
}

/// The minion's exit status for how the driver ended: 0 on a signal, the code the master
/// asked for, or the generic failure (logged).
pub fn exit_code(outcome: Result<RunOutcome, impl std::fmt::Display>) -> std::process::ExitCode {
    use salt_daemon::exit;
    match outcome {
        Ok(RunOutcome::Shutdown) => std::process::ExitCode::from(exit::OK),
        Ok(RunOutcome::Exit(code)) => std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            tracing::error!("{e}");
            std::process::ExitCode::from(exit::GENERIC)
        }
    }
}

/// The minion's single-threaded runtime (a failure is logged). Its blocking threads (jobs,
/// file work) end 2 s after their last task (tokio's default: 10 s), before the minion
/// unmaps the code its jobs ran once idle (`pageout::IDLE_TRIM_AFTER`, 5 s): a thread's
/// exit after that would map part of it again.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(2);
    const _: () = assert!(
        BLOCKING_KEEP_ALIVE.as_secs() < salt_minion_core::pageout::IDLE_TRIM_AFTER.as_secs()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_keep_alive(BLOCKING_KEEP_ALIVE)
        .build();
    rt.inspect_err(|e| tracing::error!("cannot start the runtime: {e}"))
}

fn nonzero(d: Duration) -> Option<Duration> {
    (!d.is_zero()).then_some(d)
}

/// The settings of `cfg` ([`from_config`]) with its directories made ([`prepare_dirs`]).
///
/// # Errors
/// See both.
pub fn build(cfg: &MinionConfig, config_dir: &Path) -> Result<MinionSettings, SettingsError> {
    salt_minion_core::startup::step("collect grains and build the settings");
    let mut settings = from_config(cfg)?;
    match file_opts(&config_dir.join("minion")) {
        Ok(opts) => settings.opts = Arc::new(opts),
        // The loader read the same file; our YAML renderer refusing it leaves jobs no opts.
        Err(e) => tracing::warn!("jobs get no config options: {e}"),
    }
    salt_minion_core::startup::step("prepare directories");
    prepare_dirs(cfg)?;
    Ok(settings)
}

/// The options of the minion config file at `path` as written, the jobs' `opts` (salt-call
/// and the daemon): `{}` when the file is missing or empty.
///
/// # Errors
/// The file is not YAML, or not a map of options.
pub fn file_opts(path: &Path) -> Result<Value, String> {
    let conf = match std::fs::read_to_string(path) {
        Ok(t) => salt_render::yaml::load(&t)
            .map_err(|e| format!("{}: {}", path.display(), e.0))?
            .unwrap_or(Value::Map(Vec::new())),
        Err(_) => Value::Map(Vec::new()),
    };
    match conf {
        Value::Map(_) => Ok(conf),
        _ => Err(format!("{}: not a map of options", path.display())),
    }
}

/// Build the driver settings from the loaded configuration.
pub fn from_config(cfg: &MinionConfig) -> Result<MinionSettings, SettingsError> {
    let mut masters: Vec<MasterAddr> = cfg
        .master
        .addrs()
        .iter()
        .map(|a| MasterAddr::new(a.host.clone(), a.port_or(cfg.master_port)))
        .collect();
    let master_type = match cfg.master_type {
        MasterType::Str => {
            if masters.len() > 1 {
                tracing::warn!(
                    "master_type 'str' with a list of masters (multi-master) is not supported yet: using {} only",
                    masters.first().map_or_else(String::new, |m| m.host.clone())
                );
                masters.truncate(1);
            }
            failover::MasterType::Str
        }
        MasterType::Failover => failover::MasterType::Failover,
        MasterType::Distributed => {
            // Salt starts at index crc32(id) % len; a stable rotation by a simple hash
            // keeps the idea (spread minions over masters) without crc32.
            let n = masters.len().max(1);
            let h = cfg
                .id
                .bytes()
                .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
            masters.rotate_left(h % n);
            failover::MasterType::Failover
        }
        MasterType::Disable => failover::MasterType::Disable,
        other => {
            return Err(SettingsError::Unsupported(format!(
                "master_type {}",
                other.as_str()
            )));
        }
    };
    let failover = FailoverConfig {
        masters,
        master_type,
        random_master: cfg.random_master,
        alive_interval: nonzero(cfg.master_alive_interval),
        failback: cfg.master_failback,
        failback_interval: nonzero(cfg.master_failback_interval),
        master_tries: cfg
            .master_tries
            .map_or(-1, |t| i32::try_from(t).unwrap_or(i32::MAX)),
        auth_tries: cfg.auth_tries,
        auth_timeout: cfg.auth_timeout,
        acceptance_wait_time: cfg.acceptance_wait_time,
        acceptance_wait_time_max: cfg.acceptance_wait_time_max,
        rejected_retry: cfg.rejected_retry,
        retry_dns: nonzero(cfg.retry_dns),
        ..FailoverConfig::default()
    };
    let unsupported = |what: &str| SettingsError::Unsupported(what.to_owned());
    let auth = AuthSettings {
        id: cfg.id.clone(),
        enc_algo: cfg.encryption_algorithm,
        sig_algo: cfg.signing_algorithm,
        verify_master_pubkey_sign: cfg.verify_master_pubkey_sign,
        always_verify_signature: cfg.always_verify_signature,
        open_mode: false,
        master_finger: cfg.master_finger.clone().filter(|f| !f.is_empty()),
        hash_type: cfg
            .hash_type
            .as_str()
            .parse()
            .map_err(|_| unsupported("hash_type"))?,
        rejected_retry: cfg.rejected_retry,
        master_sign_key_name: cfg.master_sign_key_name.clone(),
    };
    let master = match &cfg.master {
        salt_config::Masters::One(a) => Value::from(a.to_string()),
        salt_config::Masters::List(v) => {
            Value::Array(v.iter().map(|a| Value::from(a.to_string())).collect())
        }
    };
    let mut grains = salt_minion_core::grains::collect(&cfg.id, master);
    if let Value::Map(g) = &mut grains {
        for (k, v) in &cfg.grains {
            let v = salt_compat::json::json_to_msgpack(v);
            match g
                .iter_mut()
                .find(|(key, _)| key.as_str() == Some(k.as_str()))
            {
                Some(slot) => slot.1 = v,
                None => g.push((Value::from(k.as_str()), v)),
            }
        }
    }
    Ok(MinionSettings {
        id: cfg.id.clone(),
        pki_dir: cfg.pki_dir.clone(),
        keysize: cfg.keysize,
        failover,
        auth,
        publish_port: cfg.publish_port,
        zmq_filtering: cfg.zmq_filtering,
        sign_pub_messages: cfg.sign_pub_messages,
        minion_sign_messages: cfg.minion_sign_messages,
        return_timeout: cfg.return_retry_timer_max.max(Duration::from_secs(1)),
        return_tries: cfg.return_retry_tries.max(1),
        legacy_start_event: true,
        request_pillar: true,
        grains: Arc::new(grains),
        pillar: Default::default(),
        rng_seed: u64::from(std::process::id()) ^ 0x5a17_5a17,
        random_reauth_delay: cfg.random_reauth_delay,
        metrics: cfg
            .metrics_port
            .filter(|p| *p != 0)
            .map(|_| Arc::new(salt_minion_core::metrics::MinionMetrics::default())),
        cachedir: cfg.cachedir.clone(),
        opts: Arc::new(Value::Map(Vec::new())),
        keepalive: salt_transport::Keepalive {
            enabled: cfg.tcp_keepalive,
            idle: cfg.tcp_keepalive_idle,
            cnt: cfg.tcp_keepalive_cnt,
            intvl: cfg.tcp_keepalive_intvl,
        },
    })
}

/// Create `pki_dir` (mode 0700, as Salt enforces) and `cachedir`.
pub fn prepare_dirs(cfg: &MinionConfig) -> Result<(), SettingsError> {
    let dir_err = |p: &Path, err| SettingsError::Dir {
        path: p.display().to_string(),
        err,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&cfg.pki_dir)
        .map_err(|e| dir_err(&cfg.pki_dir, e))?;
    std::fs::set_permissions(&cfg.pki_dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| dir_err(&cfg.pki_dir, e))?;
    std::fs::create_dir_all(&cfg.cachedir).map_err(|e| dir_err(&cfg.cachedir, e))?;
    Ok(())
}
