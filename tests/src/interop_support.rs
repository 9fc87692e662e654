//! Helpers for the interop tests (`tests/tests/interop_*.rs`): our daemons against real Salt.
//!
//! * [`versions`] / [`venv_for`]: the Salt venvs to run against (`salt_testkit`'s rule:
//!   `SALT_VENVS`, `SALT_VENV`, `<workspace>/.venv/salt-<version>`); a test per version
//!   passes [`venv_for`]'s answer to [`crate::require`].
//! * [`serial`]: a process-wide lock so the tests of one binary run one after another (the
//!   machine is small and real Salt is heavy; the brief asks for versions in sequence).
//! * [`Daemon`]: a running master or minion, ours or real Salt's, started from a
//!   [`MasterConf`] / [`MinionConf`], with readiness waits ([`Daemon::wait_master_ready`],
//!   [`Daemon::wait_minion_ready`]) on listening ports and log lines, never on sleeps.
//! * [`SaltCli`]: `salt` / `salt-key` of one implementation bound to one master config dir,
//!   with JSON output parsed.
//! * [`json_shape`] and [`shape_diff`]: the type skeleton of a JSON value and a readable diff
//!   between two skeletons (for "same keys, same types" comparisons of returns).

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::bins::Bins;
use crate::cli::{CmdOutput, run_with_timeout};
use crate::config::{Flavor, MasterConf, MinionConf};
use crate::error::HarnessError;
use crate::process::{Proc, ProcSpec};
use crate::venv::SaltVenv;
use crate::wait::{wait_for_log, wait_until};

/// The three Salt versions the interop suite covers.
pub use salt_testkit::SALT_VERSIONS as VERSIONS;

pub use crate::venv::{venv_for, versions};

/// A process-wide lock: interop tests of one binary hold it for their whole run.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which implementation a daemon or CLI is.
#[derive(Debug, Clone)]
pub enum Side {
    /// Ours (the binaries of this workspace).
    Ours(Bins),
    /// Real Salt from a venv.
    Salt(SaltVenv),
}

impl Side {
    /// Short label for messages (`ours` / `salt`).
    pub fn label(&self) -> &'static str {
        match self {
            Self::Ours(_) => "ours",
            Self::Salt(_) => "salt",
        }
    }
    /// The config flavour this side reads.
    pub fn flavor(&self) -> Flavor {
        match self {
            Self::Ours(_) => Flavor::Ours,
            Self::Salt(_) => Flavor::Salt,
        }
    }
    fn bins(&self) -> Bins {
        match self {
            Self::Ours(b) => b.clone(),
            Self::Salt(v) => Bins::from_venv(v),
        }
    }
    /// `salt-master`.
    pub fn master_bin(&self) -> PathBuf {
        self.bins().master
    }
    /// `salt-minion`.
    pub fn minion_bin(&self) -> PathBuf {
        self.bins().minion
    }
    /// `salt`.
    pub fn salt_bin(&self) -> PathBuf {
        self.bins().salt
    }
    /// `salt-key`.
    pub fn key_bin(&self) -> PathBuf {
        self.bins().key
    }
}

/// A running master or minion with where it lives.
#[derive(Debug)]
pub struct Daemon {
    /// The process (group).
    pub proc: Proc,
    /// Its directory (conf/, pki/, log file).
    pub dir: PathBuf,
    /// Its `-c` directory.
    pub conf_dir: PathBuf,
    /// Its log file.
    pub log: PathBuf,
    /// Real Salt (not ours).
    pub is_salt: bool,
}

/// Logged (info) by each Salt 3006-3008 MWorker once it is connected to the worker queue and
/// can answer requests.
const SALT_WORKER_UP: &str = "Worker binding to socket";

/// Generous bound for a real Salt daemon to come up on a loaded two-core machine.
pub const START_LIMIT: Duration = Duration::from_secs(90);

fn listening(addr: &str, port: u16) -> bool {
    let Ok(sa) = format!("{addr}:{port}").parse::<SocketAddr>() else {
        return false;
    };
    TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_ok()
}

impl Daemon {
    /// Writes `conf` and starts `side`'s salt-master on it (foreground, its log attached).
    pub fn start_master(side: &Side, conf: &MasterConf) -> Result<Self, HarnessError> {
        let conf = conf.clone().flavor(side.flavor());
        let conf_dir = conf.write()?;
        let log = conf.log_file();
        let spec = ProcSpec::new("master", side.master_bin(), conf.dir())
            .args(["-c".into(), conf_dir.clone().into_os_string()])
            .args(["-l", "info"])
            .log(&log);
        Ok(Self {
            proc: spec.spawn()?,
            dir: conf.dir().to_path_buf(),
            conf_dir,
            log,
            is_salt: matches!(side, Side::Salt(_)),
        })
    }

    /// Writes `conf` and starts `side`'s salt-minion on it (real Salt with
    /// `--disable-keepalive`: one process to watch, no restart behind the test's back).
    pub fn start_minion(side: &Side, conf: &MinionConf) -> Result<Self, HarnessError> {
        let conf = conf.clone().flavor(side.flavor());
        let conf_dir = conf.write()?;
        let log = conf.log_file();
        let mut spec = ProcSpec::new("minion", side.minion_bin(), conf.dir())
            .args(["-c".into(), conf_dir.clone().into_os_string()])
            .log(&log);
        spec = match side {
            Side::Salt(_) => spec.args(["-l", "info", "--disable-keepalive"]),
            Side::Ours(_) => spec.args(["-l", "debug"]),
        };
        Ok(Self {
            proc: spec.spawn()?,
            dir: conf.dir().to_path_buf(),
            conf_dir,
            log,
            is_salt: matches!(side, Side::Salt(_)),
        })
    }

    /// `dir/pki`.
    pub fn pki(&self) -> PathBuf {
        self.dir.join("pki")
    }

    /// Waits until the master listens on `addr:publish` and `addr:ret` (and, for real Salt,
    /// has started its publisher, which the `salt` CLI needs, and a request worker: Salt's
    /// ret port listens as soon as its MWorkerQueue is up, but nothing answers until an
    /// MWorker has loaded its modules, which takes ~10 s on a loaded machine; a minion whose
    /// sign-in times out meanwhile may give up, see docs/interop.md scenario 3).
    pub fn wait_master_ready(
        &mut self,
        addr: &str,
        publish: u16,
        ret: u16,
    ) -> Result<(), HarnessError> {
        let sock = self.dir.join("sock");
        let is_salt = self.is_salt;
        let proc = &mut self.proc;
        let res = wait_until(
            &format!("master on {addr}:{publish}/{ret}"),
            START_LIMIT,
            || {
                !proc.is_running()
                    || (listening(addr, ret)
                        && listening(addr, publish)
                        && (!is_salt
                            || (sock.join("master_event_pub.ipc").exists()
                                && proc.output().contains(SALT_WORKER_UP))))
            },
        );
        self.proc.check_running()?;
        res.map(|_| ()).map_err(|e| HarnessError::Timeout {
            what: format!("{e}\n{}", self.proc.tail(30)),
            after: START_LIMIT,
        })
    }

    /// Waits for the minion's "Minion is ready to receive requests!" (ours logs the same line).
    pub fn wait_minion_ready(&self) -> Result<(), HarnessError> {
        wait_for_log(
            &self.proc,
            "Minion is ready to receive requests!",
            START_LIMIT,
        )
    }

    /// How many times `needle` occurs in what this start wrote.
    pub fn count(&self, needle: &str) -> usize {
        self.proc.output().matches(needle).count()
    }
}

/// `salt` / `salt-key` of one side, bound to a master's config dir.
#[derive(Debug, Clone)]
pub struct SaltCli {
    /// Which implementation.
    pub side: Side,
    /// Whose `salt-key` (normally the same side).
    pub key_side: Side,
    /// The master's `-c` dir.
    pub conf_dir: PathBuf,
}

/// Default bound on a `salt-key` run.
pub const KEY_LIMIT: Duration = Duration::from_secs(60);

impl SaltCli {
    /// `side`'s CLIs for the master configured in `conf_dir`.
    pub fn new(side: &Side, conf_dir: &Path) -> Self {
        Self {
            side: side.clone(),
            key_side: side.clone(),
            conf_dir: conf_dir.to_path_buf(),
        }
    }

    /// Uses `side`'s `salt-key` instead (see [`key_side`]).
    pub fn with_key_side(mut self, side: &Side) -> Self {
        self.key_side = side.clone();
        self
    }

    /// `salt -c DIR <args> --out json --static -t <timeout>`; the parsed JSON (empty object
    /// when there was no output) and the raw output.
    pub fn salt_json(
        &self,
        args: &[&str],
        timeout_s: u32,
    ) -> Result<(serde_json::Value, CmdOutput), HarnessError> {
        let t = timeout_s.to_string();
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["--out", "json", "--static", "-t", &t]);
        let out = crate::cli::salt(
            &self.side.salt_bin(),
            None,
            &self.conf_dir,
            &full,
            Duration::from_secs(u64::from(timeout_s) + 60),
        )?;
        let text = out.stdout.trim();
        let v = if text.is_empty() {
            serde_json::Value::Object(serde_json::Map::new())
        } else {
            serde_json::from_str(text).map_err(|e| HarnessError::Command {
                cmd: out.cmd.clone(),
                status: format!("output is not JSON ({e})"),
                stderr: format!("stdout: {}\nstderr: {}", out.stdout, out.stderr),
            })?
        };
        Ok((v, out))
    }

    /// Runs a job until `id` answers (up to `limit`; "Minion did not return" does not count):
    /// the answer of `id`.
    pub fn until_answer(
        &self,
        id: &str,
        args: &[&str],
        limit: Duration,
    ) -> Result<serde_json::Value, HarnessError> {
        let t0 = std::time::Instant::now();
        let limit = crate::wait::scaled(limit);
        loop {
            // A master that has not seen the minion sign in yet (its key not accepted there:
            // a failover target, an auto_accept master) answers "No minions matched the
            // target" in plain text: that is "not yet", not a failure.
            let (v, last) = match self.salt_json(args, 10) {
                Ok((v, out)) => (v, format!("{}\n{}", out.stdout, out.stderr)),
                Err(HarnessError::Command { stderr, .. })
                    if stderr.contains("No minions matched the target") =>
                {
                    (serde_json::Value::Null, stderr)
                }
                Err(e) => return Err(e),
            };
            if let Some(a) = v.get(id)
                && !a
                    .as_str()
                    .is_some_and(|s| s.starts_with("Minion did not return"))
            {
                return Ok(a.clone());
            }
            if t0.elapsed() >= limit {
                return Err(HarnessError::Timeout {
                    what: format!("{id} to answer {args:?}; last output:\n{last}"),
                    after: limit,
                });
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// `salt-key -c DIR <args>` (must succeed).
    pub fn key(&self, args: &[&str]) -> Result<CmdOutput, HarnessError> {
        crate::cli::salt_key(&self.key_side.key_bin(), &self.conf_dir, args, KEY_LIMIT)?.ok()
    }

    /// The ids listed under `heading` ("Accepted Keys:", "Unaccepted Keys:", ...) by
    /// `salt-key -L`.
    pub fn key_list(&self, heading: &str) -> Result<Vec<String>, HarnessError> {
        let out = self.key(&["-L"])?;
        Ok(section(&out.stdout, heading))
    }
}

/// `ours` when our `salt-key` answers `--version`, else `fallback` (printing a note): lets
/// the suite run while our `salt-key` is not built yet.
pub fn key_side(ours: &Side, fallback: &Side) -> Side {
    let mut c = std::process::Command::new(ours.key_bin());
    c.arg("--version");
    let works = run_with_timeout(c, Duration::from_secs(30))
        .is_ok_and(|o| o.success() && !o.stdout.trim().is_empty());
    if works {
        ours.clone()
    } else {
        eprintln!("NOTE: our salt-key does not answer --version; using real Salt's salt-key");
        fallback.clone()
    }
}

/// The lines under `heading` in `salt-key -L` output, up to the next heading.
pub fn section(text: &str, heading: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let l = line.trim();
        if l.ends_with("Keys:") {
            inside = l == heading;
            continue;
        }
        if inside && !l.is_empty() {
            ids.push(l.to_string());
        }
    }
    ids
}

/// The type skeleton of a JSON value: objects keep their keys, arrays the shape of their first
/// element, scalars become `"str"`, `"int"`, `"float"`, `"bool"`, `"null"`.
pub fn json_shape(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        J::Null => J::from("null"),
        J::Bool(_) => J::from("bool"),
        J::Number(n) if n.is_f64() => J::from("float"),
        J::Number(_) => J::from("int"),
        J::String(_) => J::from("str"),
        J::Array(a) => J::Array(a.first().map(json_shape).into_iter().collect()),
        J::Object(m) => J::Object(m.iter().map(|(k, v)| (k.clone(), json_shape(v))).collect()),
    }
}

/// Differences between two shapes (`path: want X, got Y`, `path: missing`, `path: extra`);
/// `ignore_missing` skips keys that `want` has and `got` lacks (for subsets such as grains).
pub fn shape_diff(
    want: &serde_json::Value,
    got: &serde_json::Value,
    ignore_missing: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    diff_into("", want, got, ignore_missing, &mut out);
    out
}

fn diff_into(
    path: &str,
    want: &serde_json::Value,
    got: &serde_json::Value,
    ignore_missing: bool,
    out: &mut Vec<String>,
) {
    use serde_json::Value as J;
    match (want, got) {
        (J::Object(w), J::Object(g)) => {
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match g.get(k) {
                    Some(gv) => diff_into(&p, wv, gv, ignore_missing, out),
                    None if ignore_missing => {}
                    None => out.push(format!("{p}: missing")),
                }
            }
            for k in g.keys().filter(|k| !w.contains_key(*k)) {
                out.push(format!("{path}.{k}: extra (not in the reference)"));
            }
        }
        (J::Array(w), J::Array(g)) => {
            if let (Some(wv), Some(gv)) = (w.first(), g.first()) {
                diff_into(&format!("{path}[0]"), wv, gv, ignore_missing, out);
            }
        }
        _ if want == got => {}
        _ => out.push(format!("{path}: want {want}, got {got}")),
    }
}

/// A master_sign pair made once and copied into each master's pki dir (failover with a
/// shared signing key), plus the public half for the minions.
#[derive(Debug, Clone)]
pub struct SignPair {
    /// `master_sign.pem`.
    pub pem: PathBuf,
    /// `master_sign.pub`.
    pub public: PathBuf,
}

impl SignPair {
    /// Generates `dir/master_sign.{pem,pub}` with `side`'s `salt-key --gen-keys`.
    pub fn generate(side: &Side, dir: &Path) -> Result<Self, HarnessError> {
        let (pem, public) = crate::keys::gen_keys(&side.key_bin(), dir, "master_sign")?;
        Ok(Self { pem, public })
    }
    /// Copies both halves into a master's pki dir.
    pub fn install_master(&self, pki: &Path) -> Result<(), HarnessError> {
        crate::keys::copy_into(pki, &[&self.pem, &self.public])
    }
    /// Copies the public half into a minion's pki dir.
    pub fn install_minion(&self, pki: &Path) -> Result<(), HarnessError> {
        crate::keys::copy_into(pki, &[&self.public])
    }
}

/// Copies `from` to `to` (creating `to`'s directory).
pub fn copy_file(from: &Path, to: &Path) -> Result<(), HarnessError> {
    if let Some(p) = to.parent() {
        std::fs::create_dir_all(p).map_err(|e| HarnessError::io(p.display().to_string(), e))?;
    }
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| HarnessError::io(format!("copy {} to {}", from.display(), to.display()), e))
}

/// Waits until `path` exists.
pub fn wait_file(path: &Path, limit: Duration) -> Result<(), HarnessError> {
    wait_until(&format!("{} to exist", path.display()), limit, || {
        path.exists()
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_and_diffs() {
        let a = json_shape(&json!({"pid": 1, "retcode": 0, "stdout": "x", "l": [1.5]}));
        assert_eq!(
            a,
            json!({"pid": "int", "retcode": "int", "stdout": "str", "l": ["float"]})
        );
        let b = json_shape(&json!({"pid": "1", "retcode": 0, "extra": null, "l": []}));
        let d = shape_diff(&a, &b, false);
        assert!(
            d.contains(&".pid: want \"int\", got \"str\"".to_string()),
            "{d:?}"
        );
        assert!(d.contains(&".stdout: missing".to_string()));
        assert!(d.iter().any(|l| l.starts_with(".extra: extra")));
        assert!(
            !shape_diff(&a, &b, true)
                .iter()
                .any(|l| l.contains("missing"))
        );
    }

    #[test]
    fn key_list_sections() {
        let text = "Accepted Keys:\na\nb\nDenied Keys:\nRejected Keys:\nUnaccepted Keys:\nc\n";
        assert_eq!(section(text, "Accepted Keys:"), ["a", "b"]);
        assert_eq!(section(text, "Unaccepted Keys:"), ["c"]);
        assert!(section(text, "Rejected Keys:").is_empty());
    }
}

/// Which socket pair a recorded frame crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// Minion → master on the request (ret) port.
    Request,
    /// Master → minion reply on the request port.
    Reply,
    /// Master → minion on the publish port.
    Publish,
}

/// One recorded message: its channel and its last (payload) frame.
#[derive(Debug, Clone)]
pub struct WireFrame {
    /// Direction / port.
    pub channel: Channel,
    /// The payload frame (the last part of the multipart message).
    pub payload: Vec<u8>,
    /// How many parts the message had (envelope frames excluded).
    pub parts: usize,
}

/// A recording ZeroMQ proxy between minions and one master: a ROUTER (request port) that
/// forwards each client's messages through its own DEALER to the master, and an XPUB/XSUB pair
/// (publish port). It listens on `listen` with the master's ports, so the `publish_port` in the
/// master's auth reply stays right. Every message is recorded in order.
#[derive(Debug)]
pub struct WireRecorder {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    frames: std::sync::Arc<Mutex<Vec<WireFrame>>>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl WireRecorder {
    /// Starts the proxy: binds `listen:publish`/`listen:ret`, connects to
    /// `upstream:publish`/`upstream:ret`.
    pub fn start(
        listen: &str,
        upstream: &str,
        publish: u16,
        ret: u16,
    ) -> Result<Self, HarnessError> {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let frames = std::sync::Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let (s2, f2) = (stop.clone(), frames.clone());
        let (listen, upstream) = (listen.to_string(), upstream.to_string());
        let thread = std::thread::spawn(move || {
            proxy_loop(&listen, &upstream, publish, ret, &s2, &f2, ready_tx)
        });
        match ready_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => Ok(Self {
                stop,
                frames,
                thread: Some(thread),
            }),
            Ok(Err(e)) => Err(HarnessError::Command {
                cmd: "wire recorder".into(),
                status: "failed to start".into(),
                stderr: e,
            }),
            Err(_) => Err(HarnessError::Timeout {
                what: "wire recorder to bind".into(),
                after: Duration::from_secs(10),
            }),
        }
    }

    /// The messages recorded so far.
    pub fn frames(&self) -> Vec<WireFrame> {
        self.frames
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops the proxy thread; the recorded messages.
    pub fn finish(mut self) -> Vec<WireFrame> {
        self.halt();
        self.frames()
    }

    fn halt(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for WireRecorder {
    fn drop(&mut self) {
        self.halt();
    }
}

fn zerr(what: &str) -> impl Fn(zmq::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

fn proxy_loop(
    listen: &str,
    upstream: &str,
    publish: u16,
    ret: u16,
    stop: &std::sync::atomic::AtomicBool,
    frames: &Mutex<Vec<WireFrame>>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) -> Result<(), String> {
    let ctx = zmq::Context::new();
    let setup = || -> Result<(zmq::Socket, zmq::Socket, zmq::Socket), String> {
        let front = ctx.socket(zmq::ROUTER).map_err(zerr("router"))?;
        front.set_linger(0).map_err(zerr("linger"))?;
        front
            .bind(&format!("tcp://{listen}:{ret}"))
            .map_err(zerr("bind ret"))?;
        let xpub = ctx.socket(zmq::XPUB).map_err(zerr("xpub"))?;
        xpub.set_linger(0).map_err(zerr("linger"))?;
        xpub.set_xpub_verbose(true).map_err(zerr("xpub_verbose"))?;
        xpub.bind(&format!("tcp://{listen}:{publish}"))
            .map_err(zerr("bind publish"))?;
        let xsub = ctx.socket(zmq::XSUB).map_err(zerr("xsub"))?;
        xsub.set_linger(0).map_err(zerr("linger"))?;
        xsub.connect(&format!("tcp://{upstream}:{publish}"))
            .map_err(zerr("connect publish"))?;
        Ok((front, xpub, xsub))
    };
    let (front, xpub, xsub) = match setup() {
        Ok(s) => {
            let _ = ready.send(Ok(()));
            s
        }
        Err(e) => {
            let _ = ready.send(Err(e.clone()));
            return Err(e);
        }
    };
    let record = |channel: Channel, parts: &[Vec<u8>], skip: usize| {
        let payload = parts.last().cloned().unwrap_or_default();
        let n = parts.len().saturating_sub(skip);
        frames
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(WireFrame {
                channel,
                payload,
                parts: n,
            });
    };
    let mut dealers: Vec<(Vec<u8>, zmq::Socket)> = Vec::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let mut items = vec![
            front.as_poll_item(zmq::POLLIN),
            xpub.as_poll_item(zmq::POLLIN),
            xsub.as_poll_item(zmq::POLLIN),
        ];
        items.extend(dealers.iter().map(|(_, s)| s.as_poll_item(zmq::POLLIN)));
        zmq::poll(&mut items, 50).map_err(zerr("poll"))?;
        let readable: Vec<bool> = items.iter().map(zmq::PollItem::is_readable).collect();
        drop(items);
        if readable.first().copied().unwrap_or(false) {
            let parts = front.recv_multipart(0).map_err(zerr("recv front"))?;
            if let Some((id, rest)) = parts.split_first() {
                // Envelope: [identity, "", payload] from REQ clients.
                record(Channel::Request, &parts, 2);
                let idx = match dealers.iter().position(|(i, _)| i == id) {
                    Some(i) => i,
                    None => {
                        let d = ctx.socket(zmq::DEALER).map_err(zerr("dealer"))?;
                        d.set_linger(0).map_err(zerr("linger"))?;
                        d.connect(&format!("tcp://{upstream}:{ret}"))
                            .map_err(zerr("connect ret"))?;
                        dealers.push((id.clone(), d));
                        dealers.len() - 1
                    }
                };
                if let Some((_, d)) = dealers.get(idx) {
                    d.send_multipart(rest.iter(), 0).map_err(zerr("send up"))?;
                }
            }
        }
        if readable.get(1).copied().unwrap_or(false) {
            let parts = xpub.recv_multipart(0).map_err(zerr("recv sub"))?;
            xsub.send_multipart(parts.iter(), 0)
                .map_err(zerr("fwd sub"))?;
        }
        if readable.get(2).copied().unwrap_or(false) {
            let parts = xsub.recv_multipart(0).map_err(zerr("recv pub"))?;
            record(Channel::Publish, &parts, 0);
            xpub.send_multipart(parts.iter(), 0)
                .map_err(zerr("fwd pub"))?;
        }
        for (k, (id, d)) in dealers.iter().enumerate() {
            if readable.get(3 + k).copied().unwrap_or(false) {
                let parts = d.recv_multipart(0).map_err(zerr("recv rep"))?;
                record(Channel::Reply, &parts, 1);
                let mut out = vec![id.clone()];
                out.extend(parts);
                front
                    .send_multipart(out.iter(), 0)
                    .map_err(zerr("send rep"))?;
            }
        }
    }
    Ok(())
}

/// Processes whose command line mentions `root` (the test's temporary root), as
/// `pid: command` lines: after a test has dropped its daemons this must be empty, which shows
/// every process group it started (Python masters fork workers) was ended.
pub fn leftover_processes(root: &Path) -> Vec<String> {
    let needle = root.to_string_lossy().into_owned();
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == me || !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmd.contains(&needle) {
            out.push(format!("{name}: {}", cmd.trim_end()));
        }
    }
    out
}

/// Waits (bounded) until no process mentions `root` any more; panics with the list otherwise.
pub fn assert_no_leftovers(root: &Path) {
    let res = wait_until(
        "no process left in the test root",
        Duration::from_secs(10),
        || leftover_processes(root).is_empty(),
    );
    assert!(
        res.is_ok(),
        "processes left running:\n{}",
        leftover_processes(root).join("\n")
    );
}
