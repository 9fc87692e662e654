//! One swarm thread: a share of the minions, their sockets and one `zmq::poll` loop.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::RngCore;
use rmpv::Value;
use salt_compat::map_get;
use salt_failover::rekey::ReauthSpread;
use salt_minion_core::channel::Session;
use salt_minion_core::job::JidQueue;
use salt_pki::{Crypticle, PublicKey, Zeroizing};
use salt_proto::auth_minion::{AuthClient, AuthSettings};

use super::keys::CachedKey;
use super::signin::{self, Client, Mode, Pending, Reply, SessionKey};
use super::{Config, Hub, SwarmError};

mod highstate;
mod publish;
use publish::open_session;

/// Publishes kept while a minion re-authenticates (Salt decodes them after the re-auth).
const MAX_HELD: usize = 16;

enum Phase {
    /// Waiting in the sign-in queue.
    Queued,
    /// Sign-in sent.
    InFlight { pending: Pending, since: Instant },
    /// Signed in.
    Ready,
}

struct Creds {
    aes: Crypticle,
    session_key: SessionKey,
    master_pub: PublicKey,
    session: Option<Session>,
}

struct Minion {
    id: String,
    key: usize,
    dealer: usize,
    pub_text: Arc<str>,
    token: Zeroizing<String>,
    client: Client,
    phase: Phase,
    creds: Option<Creds>,
    signed_once: bool,
    serial: u64,
    held: Vec<Vec<Vec<u8>>>,
    jids: JidQueue,
    /// When to sign in again after a stale publish key (our minion's spread).
    rekey: ReauthSpread,
    /// The highstate in progress (highstate mode).
    hs: Option<highstate::HsRun>,
}

pub(crate) struct Worker {
    cfg: Arc<Config>,
    keys: Arc<Vec<CachedKey>>,
    shared: Arc<signin::Shared>,
    hub: Arc<Hub>,
    dealers: Vec<zmq::Socket>,
    subs: Vec<zmq::Socket>,
    minions: Vec<Minion>,
    /// Sign-in queue: (not before, local minion index).
    queue: VecDeque<(Instant, usize)>,
    /// Re-auths waiting out their spread delay: (due, local minion index), earliest first.
    delayed: BinaryHeap<Reverse<(Instant, usize)>>,
    by_nonce: HashMap<String, usize>,
    /// Dealers sent on since the last poll, and a flag per dealer.
    dirty: Vec<usize>,
    dirty_flag: Vec<bool>,
    ret_value: Value,
    failures_logged: u32,
    /// The last glob target and its compiled form.
    glob: Option<(String, regex::Regex)>,
}

/// Sockets from contexts of at most [`SOCKETS_PER_CONTEXT`] sockets (libzmq's default
/// `ZMQ_MAX_SOCKETS` is 1,023 and the `zmq` crate has no setter for it).
struct SocketFactory {
    ctx: zmq::Context,
    used: usize,
}

const SOCKETS_PER_CONTEXT: usize = 1000;

impl SocketFactory {
    fn new() -> Self {
        Self {
            ctx: zmq::Context::new(),
            used: 0,
        }
    }

    fn socket(&mut self, ty: zmq::SocketType) -> Result<zmq::Socket, zmq::Error> {
        if self.used >= SOCKETS_PER_CONTEXT {
            // Sockets keep their context alive; the old one lives on with them.
            self.ctx = zmq::Context::new();
            self.used = 0;
        }
        self.used += 1;
        self.ctx.socket(ty)
    }
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn new_nonce() -> String {
    let mut b = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut b);
    salt_proto::nonce_from_bytes(b)
}

impl Worker {
    pub(crate) fn new(
        t: usize,
        cfg: Arc<Config>,
        keys: Arc<Vec<CachedKey>>,
        shared: Arc<signin::Shared>,
        hub: Arc<Hub>,
    ) -> Result<Self, SwarmError> {
        let mut factory = SocketFactory::new();
        let threads = cfg.threads.max(1);
        // Highstate mode: a request socket per minion, one request in flight on it (as a
        // minion's channel), so each reply is its minion's current step.
        let per_req = if cfg.highstate.is_some() {
            1
        } else {
            cfg.minions_per_req.max(1)
        };
        let ret_ep = format!("tcp://{}:{}", cfg.master, cfg.ret_port);
        let pub_ep = format!("tcp://{}:{}", cfg.master, cfg.publish_port);
        let mut pub_texts: HashMap<usize, Arc<str>> = HashMap::new();
        let mut minions = Vec::new();
        let mut subs = Vec::new();
        let mut dealers = Vec::new();
        let now = Instant::now();
        let mut queue = VecDeque::new();
        for i in (t..cfg.minions).step_by(threads) {
            let j = minions.len();
            let key = (cfg.id_start + i) % keys.len().max(1);
            let Some(ck) = keys.get(key) else { break };
            let pub_text = pub_texts
                .entry(key)
                .or_insert_with(|| salt_pki::clean_key(&ck.key.public_key().to_pem()).into())
                .clone();
            let id = cfg.id_of(i);
            let client = match cfg.mode {
                Mode::Lean => Client::Lean {
                    master_pub: cfg.master_pub.clone(),
                },
                Mode::Strict => {
                    let mut s = AuthSettings::new(id.clone());
                    s.verify_master_pubkey_sign = shared.sign_pub.is_some();
                    Client::Strict(Box::new(AuthClient::new(
                        s,
                        ck.key.clone(),
                        None,
                        shared.sign_pub.clone(),
                    )))
                }
            };
            if j % per_req == 0 {
                let d = factory.socket(zmq::DEALER)?;
                d.set_linger(0)?;
                d.set_sndhwm(0)?;
                d.set_rcvhwm(0)?;
                d.connect(&ret_ep)?;
                dealers.push(d);
            }
            let s = factory.socket(zmq::SUB)?;
            s.set_linger(0)?;
            s.set_rcvhwm(0)?;
            s.set_subscribe(b"")?;
            if !cfg.sub_at_signin {
                s.connect(&pub_ep)?;
            }
            subs.push(s);
            minions.push(Minion {
                id,
                key,
                dealer: dealers.len() - 1,
                pub_text,
                token: salt_pki::generate_key_string(),
                client,
                phase: Phase::Queued,
                creds: None,
                signed_once: false,
                serial: 0,
                held: Vec::new(),
                jids: JidQueue::default(),
                rekey: ReauthSpread::new(cfg.reauth_spread, (cfg.id_start + i) as u64),
                hs: None,
            });
            queue.push_back((now, j));
        }
        let ret_value = cfg.ret.value();
        let n_dealers = dealers.len();
        Ok(Self {
            cfg,
            keys,
            shared,
            hub,
            dealers,
            subs,
            minions,
            queue,
            delayed: BinaryHeap::new(),
            by_nonce: HashMap::new(),
            dirty: Vec::new(),
            dirty_flag: vec![false; n_dealers],
            ret_value,
            failures_logged: 0,
            glob: None,
        })
    }

    pub(crate) fn run(mut self) {
        let per_thread_cap = (self.cfg.concurrency / self.cfg.threads.max(1)).max(1);
        let mut inflight = 0usize;
        let mut last_timeout_scan = Instant::now();
        let mut readable: Vec<usize> = Vec::new();
        // Wait on the sockets' ZMQ_FD descriptors through epoll (mio), not zmq_poll: zmq_poll
        // on socket items asks ZMQ_EVENTS of every socket on every call (a syscall each), and
        // even poll(2) on the bare descriptors scans all of them per call, which made the
        // swarm spend most of a fan-out in the kernel's `sock_poll` (2,800 descriptors per
        // thread); a real minion polls two. epoll reports only the ready ones. A ready
        // descriptor means "look at this socket"; each one found is drained until EAGAIN,
        // which re-arms it (ZMQ_FD signals edges, as mio's edge-triggered epoll does).
        let Ok(mut poll) = mio::Poll::new() else {
            eprintln!("swarm: cannot create an epoll instance");
            return;
        };
        let fds: Vec<i32> = self
            .dealers
            .iter()
            .chain(self.subs.iter())
            .map(|s| s.get_fd().unwrap_or(-1))
            .collect();
        for (k, fd) in fds.iter().enumerate() {
            if *fd >= 0
                && let Err(e) = poll.registry().register(
                    &mut mio::unix::SourceFd(fd),
                    mio::Token(k),
                    mio::Interest::READABLE,
                )
            {
                eprintln!("swarm: cannot watch socket {k}: {e}");
            }
        }
        let n_items = fds.len();
        let mut events = mio::Events::with_capacity(4096);
        let mut last_sweep = Instant::now() - Duration::from_secs(2);
        while !self.hub.stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            // Re-auths whose spread delay is over go to the front of the queue.
            while let Some(&Reverse((at, j))) = self.delayed.peek()
                && at <= now
            {
                self.delayed.pop();
                if let Some(m) = self.minions.get_mut(j) {
                    m.rekey.handle_timeout(now);
                }
                self.queue.push_front((now, j));
            }
            // Start sign-ins.
            while inflight < per_thread_cap {
                match self.queue.front() {
                    Some(&(at, j)) if at <= now => {
                        self.queue.pop_front();
                        if self.send_auth(j) {
                            inflight += 1;
                        }
                    }
                    _ => break,
                }
            }
            // Give up on lost sign-in replies.
            if now.duration_since(last_timeout_scan) >= Duration::from_secs(1) {
                last_timeout_scan = now;
                let timeout = self.cfg.auth_timeout;
                let mut expired = Vec::new();
                for (j, m) in self.minions.iter_mut().enumerate() {
                    if let Phase::InFlight { since, .. } = &m.phase
                        && now.duration_since(*since) >= timeout
                    {
                        m.phase = Phase::Queued;
                        expired.push(j);
                    }
                }
                for j in expired {
                    inflight = inflight.saturating_sub(1);
                    self.hub.stats.auth_failures.fetch_add(1, Ordering::Relaxed);
                    self.queue.push_back((now, j));
                }
                self.by_nonce
                    .retain(|_, j| matches!(self.minions[*j].phase, Phase::InFlight { .. }));
                self.hs_expire(now);
            }
            let wait_ms = match self.queue.front() {
                Some(&(at, _)) if inflight < per_thread_cap => {
                    i64::try_from(at.saturating_duration_since(now).as_millis())
                        .unwrap_or(100)
                        .min(100)
                }
                _ => 100,
            };
            let wait_ms = match self.delayed.peek() {
                Some(Reverse((at, _))) => wait_ms.min(
                    i64::try_from(at.saturating_duration_since(now).as_millis()).unwrap_or(100),
                ),
                None => wait_ms,
            };
            // Dealers we sent on must be read before sleeping: a send can consume the
            // socket's "readable" signal (ZMQ_FD is edge-like). Once a second, every socket.
            let sweep = now.duration_since(last_sweep) >= Duration::from_secs(1);
            let wait_ms = if self.dirty.is_empty() && !sweep {
                wait_ms
            } else {
                0
            };
            readable.clear();
            let wait = Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0));
            match poll.poll(&mut events, Some(wait)) {
                Ok(()) => readable.extend(events.iter().map(|e| e.token().0)),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => continue,
            }
            let nd = self.dealers.len();
            if sweep {
                last_sweep = now;
                readable.clear();
                readable.extend(0..n_items);
            }
            for d in std::mem::take(&mut self.dirty) {
                if let Some(flag) = self.dirty_flag.get_mut(d) {
                    *flag = false;
                }
                if !readable.contains(&d) {
                    readable.push(d);
                }
            }
            for &k in &readable {
                if k < nd {
                    inflight = inflight.saturating_sub(self.drain_dealer(k));
                } else {
                    self.drain_sub(k - nd);
                }
            }
        }
    }

    /// Remember that dealer `d` was sent on (read it before the next sleep).
    fn mark_dirty(&mut self, d: usize) {
        if let Some(flag) = self.dirty_flag.get_mut(d)
            && !*flag
        {
            *flag = true;
            self.dirty.push(d);
        }
    }

    /// Send a sign-in request for minion `j`; false if it could not be sent.
    fn send_auth(&mut self, j: usize) -> bool {
        let nonce = new_nonce();
        let Some(m) = self.minions.get_mut(j) else {
            return false;
        };
        let (body, pending) = signin::build_request(
            &m.client,
            &m.id,
            &m.pub_text,
            &m.token,
            &nonce,
            &self.shared,
        );
        let Some(d) = self.dealers.get(m.dealer) else {
            return false;
        };
        if d.send_multipart([&b""[..], &body[..]], zmq::DONTWAIT)
            .is_err()
        {
            self.queue
                .push_back((Instant::now() + self.cfg.retry_wait, j));
            return false;
        }
        m.phase = Phase::InFlight {
            pending,
            since: Instant::now(),
        };
        let dealer = m.dealer;
        self.by_nonce.insert(nonce, j);
        self.mark_dirty(dealer);
        self.hub.stats.auth_sent.fetch_add(1, Ordering::Relaxed);
        self.hub.inflight_auth.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Read every reply waiting on dealer `k`; returns how many sign-ins completed.
    fn drain_dealer(&mut self, k: usize) -> usize {
        let mut done = 0;
        while let Some(Ok(mut frames)) =
            self.dealers.get(k).map(|d| d.recv_multipart(zmq::DONTWAIT))
        {
            let Some(body) = frames.last_mut() else {
                continue;
            };
            let Ok(v) = salt_proto::decode(body) else {
                continue;
            };
            if let Some(nonce) = signin::reply_nonce(&v) {
                if let Some(j) = self.by_nonce.remove(&nonce) {
                    done += 1;
                    self.hub.inflight_auth.fetch_sub(1, Ordering::Relaxed);
                    self.on_auth_reply(j, &v);
                }
            } else if self.cfg.highstate.is_some() && self.hs_reply(k, body) {
                // Highstate mode: dealer k is minion k's own.
            } else if v.is_str() {
                // An error string instead of an encrypted reply: the master refused it.
                self.hub
                    .stats
                    .returns_refused
                    .fetch_add(1, Ordering::Relaxed);
            } else if map_get(&v, "load").is_none() {
                // An encrypted `_return` reply.
                self.hub.stats.returns_acked.fetch_add(1, Ordering::Relaxed);
            }
        }
        done
    }

    fn on_auth_reply(&mut self, j: usize, reply: &Value) {
        let Some(m) = self.minions.get_mut(j) else {
            return;
        };
        let Phase::InFlight { pending, .. } = std::mem::replace(&mut m.phase, Phase::Queued) else {
            return;
        };
        let Some(ck) = self.keys.get(m.key) else {
            return;
        };
        let stats = &self.hub.stats;
        match signin::handle_reply(&mut m.client, &pending, &ck.key, reply, &self.shared) {
            Reply::Accepted(a) => {
                let mut creds = Creds {
                    aes: a.aes,
                    session_key: a.session,
                    master_pub: a.master_pub,
                    session: None,
                };
                if self.cfg.eager_session {
                    let mut sk = creds.session_key.clone();
                    creds.session = open_session(&m.id, ck, &mut sk, &creds, &self.shared);
                    creds.session_key = sk;
                }
                m.creds = Some(creds);
                m.phase = Phase::Ready;
                m.serial = 0;
                stats.signins.fetch_add(1, Ordering::Relaxed);
                if m.signed_once {
                    stats.reauths.fetch_add(1, Ordering::Relaxed);
                    let us = self.hub.micros();
                    let _ = stats.reauth_first_us.compare_exchange(
                        0,
                        us,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                    stats.reauth_last_us.fetch_max(us, Ordering::Relaxed);
                } else {
                    m.signed_once = true;
                    if self.cfg.sub_at_signin
                        && let Some(sub) = self.subs.get(j)
                    {
                        let ep = format!("tcp://{}:{}", self.cfg.master, self.cfg.publish_port);
                        if let Err(e) = sub.connect(&ep) {
                            eprintln!("swarm: {} cannot connect to {ep}: {e}", m.id);
                        }
                    }
                    let us = self.hub.micros();
                    stats.last_first_signin_us.fetch_max(us, Ordering::Relaxed);
                    stats.first_signins.fetch_add(1, Ordering::Release);
                }
                let held = std::mem::take(&mut m.held);
                for frames in held {
                    self.on_publish(j, &frames);
                }
            }
            Reply::Retry => {
                stats.retries.fetch_add(1, Ordering::Relaxed);
                self.queue
                    .push_back((Instant::now() + self.cfg.retry_wait, j));
            }
            Reply::Failed(why) => {
                stats.auth_failures.fetch_add(1, Ordering::Relaxed);
                if self.failures_logged < 5 {
                    self.failures_logged += 1;
                    eprintln!("swarm: sign-in of {} failed: {why}", m.id);
                }
                self.queue
                    .push_back((Instant::now() + self.cfg.retry_wait, j));
            }
        }
    }
}
