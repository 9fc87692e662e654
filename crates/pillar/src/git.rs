//! `ext_pillar: - git: [...]` (Salt's `salt/pillar/git_pillar.py` `ext_pillar`): each
//! checked-out remote is a pillar root of its environment, compiled as a pillar of its own
//! (top file and SLS, no external pillars) and merged in remote order.
//!
//! The checkouts come from a [`GitPillarSource`] the master supplies (salt-fileserver's
//! git_pillar, which fetches in the background): this crate reads directories only.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rmpv::Value;

use crate::{Options, Request};

/// One checked-out remote (Salt's `GitPillar.pillar_dirs` entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PillarDir {
    /// The directory holding the remote's pillar SLS (its checkout joined with `root`).
    pub dir: PathBuf,
    /// The pillar environment (`__env__`: the one asked for).
    pub env: String,
    /// A `mountpoint` remote: only searched by `include:` from another remote of `env`.
    pub linked: bool,
}

/// The checkouts of one `git` ext_pillar item.
pub trait GitPillarSource: Send + Sync + std::fmt::Debug {
    /// The remotes checked out for a request with this `pillarenv` and `saltenv`, in order.
    fn pillar_dirs(&self, pillarenv: Option<&str>, saltenv: Option<&str>) -> Vec<PillarDir>;
    /// `git_pillar_includes`.
    fn includes(&self) -> bool;
    /// `git_pillar_base`.
    fn base(&self) -> String;
}

/// Salt's git_pillar `ext_pillar`: every remote's pillar, merged.
pub(crate) fn ext_pillar(
    cfg: &Options,
    req: &Request,
    pillarenv: Option<&str>,
    src: &dyn GitPillarSource,
) -> Value {
    let dirs = src.pillar_dirs(pillarenv, req.saltenv.as_deref());
    let mut ret = Value::Map(Vec::new());
    for d in &dirs {
        let env = if d.env == "__env__" {
            pillarenv
                .map(str::to_owned)
                .or_else(|| req.saltenv.clone())
                .unwrap_or_else(|| src.base())
        } else {
            d.env.clone()
        };
        if pillarenv.is_some_and(|p| p != env) {
            tracing::debug!(
                "env '{env}' for pillar dir '{}' does not match pillarenv, skipping",
                d.dir.display()
            );
            continue;
        }
        if d.linked {
            continue;
        }
        let mut roots = vec![d.dir.display().to_string()];
        if src.includes() {
            roots.extend(
                dirs.iter()
                    .filter(|o| o.env == env && o.dir != d.dir)
                    .map(|o| o.dir.display().to_string()),
            );
        }
        let sub = Options {
            pillar_roots: BTreeMap::from([(env.clone(), roots)]),
            ext_pillar: Vec::new(),
            git_pillars: Vec::new(),
            ..cfg.clone()
        };
        let sreq = Request {
            id: req.id.clone(),
            grains: req.grains.clone(),
            saltenv: Some(env),
            pillarenv: pillarenv.map(str::to_owned),
            pillar_override: Value::Nil,
            ext: None,
            salt: req.salt.clone(),
        };
        ret = cfg.merge(ret, crate::compile(&sub, &sreq));
    }
    ret
}
