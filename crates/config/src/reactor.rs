//! The reactor's options (Salt's `reactor`, `reactor_worker_threads`, `reactor_worker_hwm`,
//! `reactor_refresh_interval`, `reactor_niceness`); the reactor itself is in
//! `salt-master-core` (`reactor/`, docs/reactor.md).

use std::path::PathBuf;
use std::time::Duration;

use crate::common::SEC;
use crate::error::Problem;
use crate::node::{Kind, Node};
use crate::reader::{Reader, count, duration, int_in, string, string_list};
use crate::salt_options;
use crate::types::invalid;

/// Where the reactor map comes from: Salt's `reactor` is a list of `{tag glob: sls paths}`,
/// or the path of a YAML file holding that list (re-read when it changes).
#[derive(Clone, Debug, PartialEq)]
pub enum ReactorMap {
    /// The path of a YAML file with the list.
    File(PathBuf),
    /// The list, in order: a tag glob (`fnmatch`) and its sls paths (`salt://` or files,
    /// globs allowed).
    List(Vec<(String, Vec<String>)>),
}

impl Default for ReactorMap {
    fn default() -> Self {
        Self::List(Vec::new())
    }
}

impl ReactorMap {
    /// Whether no reactor is configured (Salt then starts no reactor and its `reactor.*`
    /// runners answer "Reactor system is not running.").
    pub fn is_empty(&self) -> bool {
        matches!(self, Self::List(l) if l.is_empty())
    }
}

salt_options! {
    /// The reactor: which events it reacts to and how many reactions run at once.
    #[derive(Clone, Debug, PartialEq)]
    #[non_exhaustive]
    pub struct ReactorConfig {
        /// Tag globs and the reaction sls files they render: a list of
        /// `{'<tag glob>': [<sls path>, ...]}` (a path is `salt://...` or a file on the
        /// master, globs allowed), or the path of a YAML file holding that list.
        #[salt_default = "[]"]
        pub reactor: ReactorMap,
        /// Reactions run at once (Salt: the thread pool of runner and wheel reactions; in
        /// salt-rs every reaction, `local.` included, runs in this pool).
        #[salt_default = "10"]
        pub reactor_worker_threads: u32,
        /// Reactions waiting for a worker; an event whose reaction finds the queue full is
        /// dropped with an error naming the tag (Salt: "TaskPool queue is full!").
        #[salt_default = "10000"]
        pub reactor_worker_hwm: u32,
        /// Salt's lifetime of the reactor's cached client objects (seconds). salt-rs keeps no
        /// client objects (the reactions call the master's own functions), so nothing goes
        /// stale; read and accepted.
        #[salt_default = "60"]
        pub reactor_refresh_interval: Duration,
    }
}

impl ReactorConfig {
    /// Every option of this group, for the master's option table.
    pub(crate) fn option_docs() -> Vec<crate::OptionDoc> {
        let mut docs = Self::field_docs();
        docs.push(crate::OptionDoc {
            name: "reactor_niceness",
            default: "None",
            doc: "Not implemented by salt-rs (the reactor runs as tasks of the master's \
                  process, not a process of its own to renice): a value other than null \
                  stops the master at start naming it."
                .to_owned(),
        });
        docs
    }

    /// Reads the group; problems are recorded in `r`.
    pub(crate) fn read(r: &mut Reader<'_>) -> Self {
        if let Some(e) = r.entry("reactor_niceness") {
            r.fail(
                e,
                invalid(
                    &e.node.describe(),
                    "reactor_niceness is not implemented by salt-rs (the reactor runs inside \
                     the master's process); remove it",
                ),
            );
        }
        Self {
            reactor: r.get("reactor", ReactorMap::default(), reactor_map),
            reactor_worker_threads: r.get("reactor_worker_threads", 10, int_in(1, 1024)),
            reactor_worker_hwm: r.get("reactor_worker_hwm", 10_000, count),
            reactor_refresh_interval: r.get(
                "reactor_refresh_interval",
                Duration::from_secs(60),
                duration(SEC),
            ),
        }
    }
}

/// Reads `reactor`: a file path, or the list of one-key mappings.
fn reactor_map(node: &Node) -> Result<ReactorMap, Problem> {
    match &node.kind {
        Kind::Str(s) if !s.is_empty() => Ok(ReactorMap::File(PathBuf::from(s))),
        Kind::Seq(items) => items
            .iter()
            .map(reactor_item)
            .collect::<Result<_, _>>()
            .map(ReactorMap::List),
        _ => Err(invalid(
            &node.describe(),
            "expected a list of {'<tag glob>': [<sls path>, ...]} or the path of a file \
             holding it",
        )),
    }
}

/// One `{tag glob: sls path(s)}` item. Salt skips an item of another shape without a word;
/// salt-rs refuses it, so a reaction is never silently missing.
fn reactor_item(item: &Node) -> Result<(String, Vec<String>), Problem> {
    match &item.kind {
        Kind::Map(entries) if entries.len() == 1 => {
            let (tag, sls) = &entries[0];
            let sls = string_list(sls).map_err(|_| {
                invalid(
                    &sls.describe(),
                    "a reactor's sls files are a path or a list of paths",
                )
            })?;
            Ok((string(tag).unwrap_or_else(|_| tag.key_string()), sls))
        }
        _ => Err(invalid(
            &item.to_json().to_string(),
            "each reactor item is one {'<tag glob>': [<sls path>, ...]} (Salt ignores any \
             other item)",
        )),
    }
}
