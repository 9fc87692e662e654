//! Fail closed: Salt security options salt-rs does not implement. A site that sets one of
//! them to ask for a protection (a check, a restriction, encryption) gets a start-up error
//! naming the option, never a warning and a daemon that silently does less. Set to what asks
//! for nothing (Salt's default, an empty list), the option is accepted quietly.
//!
//! Options whose absence only refuses more (`external_auth`, `peer`, `allow_minion_key_revoke`:
//! salt-rs answers as Salt does when they are unset) are not here: ignoring them cannot let
//! anything in.

use crate::node::{Kind, Node};
use crate::reader::Reader;

/// What one option asks for.
enum Asks {
    /// A non-empty list (or any value other than null/empty) asks for a restriction.
    WhenSet,
    /// A renderer list that forbids (blacklist) or leaves out (whitelist) a renderer salt-rs
    /// renders with.
    RendererBlacklist,
    RendererWhitelist,
}

/// One refused option: the roles it applies to, what value asks for something, and what
/// salt-rs lacks.
struct Refused {
    key: &'static str,
    roles: &'static [&'static str],
    asks: Asks,
    lacks: &'static str,
}

const MINION: &[&str] = &["minion"];
const BOTH: &[&str] = &["master", "minion"];

/// The renderers salt-rs renders pillar and state files with (`jinja|yaml`).
const OUR_RENDERERS: [&str; 2] = ["jinja", "yaml"];

const REFUSED: &[Refused] = &[
    Refused {
        key: "ssl",
        roles: BOTH,
        asks: Asks::WhenSet,
        lacks: "TLS on the master connections is not implemented (ZeroMQ with Salt's AES only)",
    },
    Refused {
        key: "renderer_blacklist",
        roles: BOTH,
        asks: Asks::RendererBlacklist,
        lacks: "salt-rs renders with `jinja|yaml` and cannot leave out a renderer",
    },
    Refused {
        key: "renderer_whitelist",
        roles: BOTH,
        asks: Asks::RendererWhitelist,
        lacks: "salt-rs renders with `jinja|yaml` and cannot leave out a renderer",
    },
    Refused {
        key: "whitelist_modules",
        roles: MINION,
        asks: Asks::WhenSet,
        lacks: "the minion does not restrict which execution modules load",
    },
    Refused {
        key: "disable_modules",
        roles: MINION,
        asks: Asks::WhenSet,
        lacks: "the minion cannot disable execution modules",
    },
    Refused {
        key: "grains_blacklist",
        roles: MINION,
        asks: Asks::WhenSet,
        lacks: "the minion does not filter the grains it sends",
    },
    Refused {
        key: "cmd_blacklist_glob",
        roles: MINION,
        asks: Asks::WhenSet,
        lacks: "`cmd.*` does not check commands against a blacklist",
    },
    Refused {
        key: "cmd_whitelist_glob",
        roles: MINION,
        asks: Asks::WhenSet,
        lacks: "`cmd.*` does not check commands against a whitelist",
    },
    Refused {
        key: "sudo_user",
        roles: MINION,
        asks: Asks::WhenSet,
        lacks: "the minion does not run functions through sudo as another user",
    },
];

/// The options refused for `role`, for the option reference: name and what salt-rs lacks.
pub(crate) fn refused_options(role: &str) -> impl Iterator<Item = (&'static str, &'static str)> {
    REFUSED
        .iter()
        .filter(move |r| r.roles.contains(&role))
        .map(|r| (r.key, r.lacks))
}

/// Records an error for every refused option of `role` that asks for something, and marks
/// the others read (accepted quietly).
pub(crate) fn check(r: &mut Reader<'_>, role: &str) {
    for refused in REFUSED.iter().filter(|x| x.roles.contains(&role)) {
        let Some(entry) = r.peek(refused.key) else {
            r.mark_read(refused.key);
            continue;
        };
        let asks = match refused.asks {
            Asks::WhenSet => !is_empty(&entry.node),
            Asks::RendererBlacklist => {
                renderer_names(&entry.node).any(|n| OUR_RENDERERS.contains(&n.as_str()))
            }
            Asks::RendererWhitelist => {
                let names: Vec<String> = renderer_names(&entry.node).collect();
                !is_empty(&entry.node)
                    && OUR_RENDERERS
                        .iter()
                        .any(|ours| !names.iter().any(|n| n == ours))
            }
        };
        if asks {
            r.refuse(refused.key, entry, refused.lacks);
        } else {
            r.mark_read(refused.key);
        }
    }
}

/// Null, `False`, an empty string, list or mapping: asks for nothing.
fn is_empty(node: &Node) -> bool {
    match &node.kind {
        Kind::Null | Kind::Bool(false) => true,
        Kind::Str(s) => s.trim().is_empty(),
        Kind::Seq(items) => items.is_empty(),
        Kind::Map(items) => items.is_empty(),
        _ => false,
    }
}

/// The renderer names of a list (or a single name), lowercased.
fn renderer_names(node: &Node) -> impl Iterator<Item = String> + '_ {
    let items: Vec<&Node> = match &node.kind {
        Kind::Seq(items) => items.iter().collect(),
        _ => vec![node],
    };
    items.into_iter().filter_map(|n| match &n.kind {
        Kind::Str(s) => Some(s.trim().to_ascii_lowercase()),
        _ => None,
    })
}
