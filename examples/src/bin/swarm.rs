//! `swarm`: N simulated minions in one process against a Salt master (ours or real Salt's).
//!
//! Prints one `swarm key=value ...` stats line per interval (sign-ins, sign-ins/s, publishes
//! decrypted, returns sent/acknowledged), `swarm ALL_SIGNED_IN n=.. secs=.. signins_per_s=..`
//! once every minion has signed in, and a final stats line. See docs/benchmarks.md.
#![forbid(unsafe_code)]

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use salt_examples::swarm::highstate::HighstatePlan;
use salt_examples::swarm::{Config, Mode, ReturnValue, run};

/// Simulated minions speaking Salt's wire protocol.
#[derive(Parser, Debug)]
#[command(name = "swarm", version)]
struct Args {
    /// Number of minions.
    #[arg(short = 'n', long, default_value_t = 100)]
    minions: usize,
    /// Master address.
    #[arg(long, default_value = "127.0.0.1")]
    master: String,
    /// Master ret_port.
    #[arg(long, default_value_t = 4506)]
    ret_port: u16,
    /// Master publish_port.
    #[arg(long, default_value_t = 4505)]
    publish_port: u16,
    /// Sign-ins in flight at once.
    #[arg(short = 'c', long, default_value_t = 64)]
    concurrency: usize,
    /// Socket threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Minions sharing one request (DEALER) socket.
    #[arg(long, default_value_t = 8)]
    minions_per_req: usize,
    /// Key cache directory (keys are DIR/rsa2048/<i>.pem).
    #[arg(long, default_value = "swarm-keys")]
    key_cache: PathBuf,
    /// Distinct keys (minion i uses key i % keys); default: one per minion.
    #[arg(long)]
    keys: Option<usize>,
    /// Use only keys already in the cache (reused round-robin); never generate.
    #[arg(long)]
    cached_only: bool,
    /// Threads generating missing keys.
    #[arg(long)]
    keygen_threads: Option<usize>,
    /// The master's master_sign.pub (a master with master_sign_pubkey: True).
    #[arg(long)]
    master_sign_pub: Option<PathBuf>,
    /// The master's master.pub, known from the start: sign-ins carry a token, as those of
    /// minions that signed in before (a storm of returning minions).
    #[arg(long)]
    master_pub: Option<PathBuf>,
    /// Run every sign-in check a real minion makes (3 RSA private ops per sign-in).
    #[arg(long)]
    strict: bool,
    /// Decrypt each session key at its first return instead of at sign-in.
    #[arg(long)]
    lazy_session: bool,
    /// What to return: true, text:STRING or bytes:N.
    #[arg(long = "ret", default_value = "true")]
    ret: ReturnValue,
    /// Minion id prefix.
    #[arg(long, default_value = "swarm-")]
    id_prefix: String,
    /// Index of the first minion (to split a swarm over processes).
    #[arg(long, default_value_t = 0)]
    id_start: usize,
    /// Connect each minion's SUB socket after its first sign-in (as a Python minion), not
    /// all at start.
    #[arg(long)]
    sub_at_signin: bool,
    /// Stop after this many seconds.
    #[arg(long)]
    run_time: Option<f64>,
    /// Stop after K distinct jobs were received and all returns acknowledged.
    #[arg(long)]
    exit_after: Option<u64>,
    /// Stop once every minion has signed in.
    #[arg(long)]
    exit_after_signin: bool,
    /// Seconds between stats lines.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Seconds between retries of a pending sign-in.
    #[arg(long, default_value_t = 1.0)]
    retry_wait: f64,
    /// Seconds to wait for a sign-in's answer before sending it again (a Salt minion's
    /// `auth_timeout` is 5).
    #[arg(long, default_value_t = 60.0)]
    auth_timeout: f64,
    /// After a publish that no longer decrypts (AES rotation), wait a random delay in
    /// [0, min(S, 2)] seconds before signing in again, as our salt-minion does with
    /// `random_reauth_delay: S`; 0 (default): at once, as a Python minion.
    #[arg(long, default_value_t = 0.0)]
    reauth_spread: f64,
    /// Highstate mode: a publish of `state.apply` / `state.highstate` fetches the
    /// `salt://` paths listed in FILE (one per line) as a minion's highstate does, then
    /// returns a highstate result; each minion gets its own request socket.
    #[arg(long, value_name = "FILE")]
    highstate: Option<PathBuf>,
    /// Highstate mode: seconds a request may go unanswered before the highstate fails.
    #[arg(long, default_value_t = 60.0)]
    highstate_timeout: f64,
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let mut cfg = Config::new(a.minions, a.master, a.key_cache);
    cfg.ret_port = a.ret_port;
    cfg.publish_port = a.publish_port;
    cfg.concurrency = a.concurrency.max(1);
    cfg.threads = a.threads.max(1);
    cfg.minions_per_req = a.minions_per_req.max(1);
    cfg.keys = a.keys.unwrap_or(a.minions);
    cfg.cached_only = a.cached_only;
    if let Some(t) = a.keygen_threads {
        cfg.keygen_threads = t.max(1);
    }
    cfg.master_sign_pub = a.master_sign_pub;
    if let Some(p) = &a.master_pub {
        let text = std::fs::read_to_string(p)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", p.display()))?;
        cfg.master_pub = Some(salt_pki::clean_key(&text).into());
    }
    cfg.mode = if a.strict { Mode::Strict } else { Mode::Lean };
    cfg.eager_session = !a.lazy_session;
    cfg.ret = a.ret;
    cfg.id_prefix = a.id_prefix;
    cfg.id_start = a.id_start;
    cfg.sub_at_signin = a.sub_at_signin;
    cfg.run_time = a.run_time.map(Duration::from_secs_f64);
    cfg.exit_after = a.exit_after;
    cfg.exit_after_signin = a.exit_after_signin;
    cfg.report_every = Duration::from_secs_f64(a.interval.max(0.05));
    cfg.retry_wait = Duration::from_secs_f64(a.retry_wait.max(0.01));
    cfg.auth_timeout = Duration::from_secs_f64(a.auth_timeout.max(0.1));
    cfg.reauth_spread = Duration::from_secs_f64(a.reauth_spread.max(0.0));
    if let Some(list) = &a.highstate {
        let plan =
            HighstatePlan::from_list(list, Duration::from_secs_f64(a.highstate_timeout.max(0.1)))
                .map_err(|e| anyhow::anyhow!("--highstate: {e}"))?;
        cfg.highstate = Some(std::sync::Arc::new(plan));
    }
    let mut stdout = std::io::stdout();
    let summary = run(cfg, &mut |l| {
        let _ = writeln!(stdout, "{l}");
        let _ = stdout.flush();
    })?;
    println!(
        "swarm DONE signed_in={} pubs_decrypted={} returns_sent={} returns_acked={} reauths={} elapsed_s={:.2}",
        summary.signed_in,
        summary.pubs_decrypted,
        summary.returns_sent,
        summary.returns_acked,
        summary.reauths,
        summary.elapsed_secs
    );
    Ok(())
}
