//! Options Salt 3008 sites carry that salt-rs reads without acting on them the way Salt
//! does: each is accepted (never "unknown"), checked for its type, and, when set to ask for
//! something salt-rs does differently, warned about by name with what salt-rs does instead.
//! Security options are not here (see `fail_closed`).

use crate::OptionDoc;
use crate::node::{Kind, Node};
use crate::reader::{Reader, boolean};
use crate::types::invalid;

/// Salt 3007/3008's cluster mode (masters joined over `cluster_pool_port`, a shared
/// `cluster_pki_dir`, Raft voters). `cluster_id` itself names a salt-rs master group.
const CLUSTER_KEYS: [&str; 16] = [
    "cluster_peers",
    "cluster_pki_dir",
    "cluster_pool_port",
    "cluster_secret",
    "cluster_pub_fingerprint",
    "cluster_isolated_filesystem",
    "cluster_max_log_size",
    "cluster_max_voters",
    "cluster_min_voters",
    "cluster_voter_health_check_interval",
    "cluster_voter_timeout",
    "cluster_demote_cooldown",
    "cluster_auto_replace_voters",
    "cluster_key_pass",
    "cluster_encryption_algorithm",
    "cluster_mode",
];

const CLUSTER_INSTEAD: &str = "Salt's cluster mode (peers over `cluster_pool_port`, a shared \
     `cluster_pki_dir`, Raft voters) is not how salt-rs groups masters: masters of one \
     `cluster_id` share a PostgreSQL database (`keys.cache_driver: postgres`, docs/group.md); \
     ignored";

/// Reads the 3008 options of the master.
pub(crate) fn read_master(r: &mut Reader<'_>) {
    let pools_enabled = r.get("worker_pools_enabled", true, boolean);
    if let Some(e) = r.entry("worker_pools") {
        match &e.node.kind {
            Kind::Map(items) if items.is_empty() => {}
            Kind::Map(_) if !pools_enabled => {}
            Kind::Map(_) => r.warnings.push(format!(
                "{}: option `worker_pools`: salt-rs runs every request on one pool of \
                 `worker_threads` threads (quick file-server requests answered on the socket \
                 thread); the pools are ignored",
                crate::error::Where(&e.file, e.node.line)
            )),
            _ => r.fail(
                e,
                invalid(&e.node.describe(), "expected a mapping of pools"),
            ),
        }
    }
    read_pillar_mask_output(r);
    if let Some(e) = r.entry("pki_index_enabled") {
        match boolean(&e.node) {
            Ok(_) => r.warnings.push(format!(
                "{}: option `pki_index_enabled`: salt-rs always keeps an in-memory index of \
                 `pki_dir` (crates/keystore); the option has no effect",
                crate::error::Where(&e.file, e.node.line)
            )),
            Err(p) => r.fail(e, p),
        }
    }
    read_cluster(r);
}

/// Reads the 3008 options of the minion.
pub(crate) fn read_minion(r: &mut Reader<'_>) {
    read_pillar_mask_output(r);
}

/// `pillar_mask_output` (3008, default `True`): whether `pillar.items` masks values marked
/// secret. salt-rs marks no pillar value secret, so there is nothing to mask either way.
fn read_pillar_mask_output(r: &mut Reader<'_>) {
    let entry = r.entry("pillar_mask_output");
    if let Some(e) = entry {
        match boolean(&e.node) {
            Ok(false) => {}
            Ok(true) => r.warnings.push(format!(
                "{}: option `pillar_mask_output`: salt-rs marks no pillar value secret, so \
                 `pillar.items` shows every value (as `pillar_mask_output: False`)",
                crate::error::Where(&e.file, e.node.line)
            )),
            Err(p) => r.fail(e, p),
        }
    }
}

fn read_cluster(r: &mut Reader<'_>) {
    for key in CLUSTER_KEYS {
        if let Some(e) = r.entry(key)
            && !is_default(&e.node)
        {
            r.warnings.push(format!(
                "{}: option `{key}`: {CLUSTER_INSTEAD}",
                crate::error::Where(&e.file, e.node.line)
            ));
        }
    }
}

/// `False`, an empty list or string: Salt's defaults, nothing to warn about.
fn is_default(node: &Node) -> bool {
    match &node.kind {
        Kind::Null | Kind::Bool(false) => true,
        Kind::Seq(v) => v.is_empty(),
        Kind::Str(s) => s.is_empty(),
        _ => false,
    }
}

/// The option table rows of [`read_master`] (`master`) or [`read_minion`].
pub(crate) fn docs(role: &str) -> Vec<OptionDoc> {
    let doc = |name, default, doc: &str| OptionDoc {
        name,
        default,
        doc: doc.to_owned(),
    };
    let mask = doc(
        "pillar_mask_output",
        "True (3008)",
        "Salt 3008: `pillar.items` masks values marked secret. salt-rs marks none, so every \
         value shows (as `False`); `True` is accepted with a warning.",
    );
    if role != "master" {
        return vec![mask];
    }
    let mut v = vec![
        doc(
            "worker_pools_enabled",
            "True (3008)",
            "Salt 3008's request routing to worker pools. Accepted; salt-rs has one pool.",
        ),
        doc(
            "worker_pools",
            "{} (3008)",
            "Salt 3008's named worker pools. salt-rs runs every request on one pool of \
             `worker_threads` threads; a non-empty mapping is accepted with a warning.",
        ),
        mask,
        doc(
            "pki_index_enabled",
            "-",
            "Accepted with a warning: salt-rs always indexes `pki_dir` in memory.",
        ),
    ];
    v.extend(CLUSTER_KEYS.iter().map(|k| {
        doc(
            k,
            "-",
            "Salt's cluster mode; accepted with a warning when set: salt-rs groups masters \
             through PostgreSQL (`cluster_id`, docs/group.md).",
        )
    }));
    v
}
