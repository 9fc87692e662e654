//! `FileServerConfig`: the master's file server and state options (the `roots` backend and
//! what `_master_opts` hands to a minion's HighState), with Salt 3007's defaults.

mod git_pillar;
mod gitfs;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::Problem;
use crate::reader::{
    Reader, boolean, count, int_in, json_map, string, string_list, string_list_map,
};
use crate::salt_options;
use crate::types::invalid;

pub(crate) use git_pillar::remotes as git_pillar_remotes;
pub use git_pillar::{GIT_PILLAR_PARAMS, GitPillarConfig, GitPillarRemote};
pub use gitfs::{GitfsConfig, GitfsRemote, GitfsSaltenv};

/// Default `file_buffer_size` of the master (1 MiB).
pub const DEFAULT_FILE_BUFFER_SIZE: u32 = 1_048_576;

/// `top_file_merging_strategy`.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum TopMergingStrategy {
    /// `merge` (Salt's default).
    Merge,
    /// `same`.
    Same,
    /// `merge_all`.
    MergeAll,
}

impl TopMergingStrategy {
    /// The Salt spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Merge => "merge",
            Self::Same => "same",
            Self::MergeAll => "merge_all",
        }
    }

    fn parse(s: &str) -> Result<Self, Problem> {
        Ok(match s {
            "merge" => Self::Merge,
            "same" => Self::Same,
            "merge_all" => Self::MergeAll,
            _ => return Err(invalid(s, "expected merge, same or merge_all")),
        })
    }
}

salt_options! {
    /// The file server (`roots` backend) and the state options the master hands to minions
    /// in `_master_opts`. Paths are used as given (Salt does not prefix `root_dir` here).
    #[derive(Clone, Debug, PartialEq)]
    #[non_exhaustive]
    pub struct FileServerConfig {
        /// Environments and their directories, searched in order; `__env__` serves any
        /// environment not listed, with `__env__` in the paths replaced by its name (a name
        /// with `/`, `..` or NUL is refused). Glob patterns in the paths are a config error
        /// (Salt expands them).
        #[salt_default = "{base: [/srv/salt, /srv/spm/salt]}"]
        pub file_roots: BTreeMap<String, Vec<PathBuf>>,
        /// File server backends, searched in order: `roots` and `gitfs` (alias `git`); any
        /// other is refused by name.
        #[salt_default = "[roots]"]
        pub fileserver_backend: Vec<String>,
        /// Bytes of a file sent per `_serve_file` request.
        #[salt_default = "1048576"]
        pub file_buffer_size: u32,
        /// Regular expressions (Python `re.search`) of paths the file server hides.
        #[salt_default = "[]"]
        pub file_ignore_regex: Vec<String>,
        /// Globs (`fnmatch`) of paths the file server hides.
        #[salt_default = "[]"]
        pub file_ignore_glob: Vec<String>,
        /// Follow symlinks when listing, and serve files whose links leave the root.
        #[salt_default = "True"]
        pub fileserver_followsymlinks: bool,
        /// Leave symlinks out of the file and directory lists.
        #[salt_default = "False"]
        pub fileserver_ignoresymlinks: bool,
        /// Accept `cp.push` files from minions (into `<cachedir>/minions/<id>/files`).
        #[salt_default = "False"]
        pub file_recv: bool,
        /// Largest file `cp.push` may send, in MiB.
        #[salt_default = "100"]
        pub file_recv_max_size: u32,
        /// Renderer pipeline the minions use for sls files (`_master_opts`).
        #[salt_default = "jinja|yaml"]
        pub renderer: String,
        /// Stop a highstate at the first failure (`_master_opts`).
        #[salt_default = "False"]
        pub failhard: bool,
        /// The top file (`_master_opts`).
        #[salt_default = "top.sls"]
        pub state_top: String,
        /// The only environment whose top file is read (`None`: all; `_master_opts`).
        #[salt_default = "None"]
        pub state_top_saltenv: Option<String>,
        /// How top files of several environments combine (`_master_opts`).
        #[salt_default = "merge"]
        pub top_file_merging_strategy: TopMergingStrategy,
        /// Order environments are evaluated in (`_master_opts`).
        #[salt_default = "[]"]
        pub env_order: Vec<String>,
        /// Environment whose top file is used when `same` finds none (`_master_opts`).
        #[salt_default = "base"]
        pub default_top: String,
        /// Order states by their position in the file (`_master_opts`).
        #[salt_default = "True"]
        pub state_auto_order: bool,
        /// Fire an event per state (`_master_opts`).
        #[salt_default = "False"]
        pub state_events: bool,
        /// Aggregate states (`_master_opts`).
        #[salt_default = "False"]
        pub state_aggregate: bool,
        /// Node groups, handed to minions in `_master_opts` for top-file matching.
        #[salt_default = "{}"]
        pub nodegroups: serde_json::Map<String, serde_json::Value>,
        /// Jinja environment options for templates (`_master_opts`).
        #[salt_default = "{}"]
        pub jinja_env: serde_json::Map<String, serde_json::Value>,
        /// Jinja environment options for sls files (`_master_opts`).
        #[salt_default = "{}"]
        pub jinja_sls_env: serde_json::Map<String, serde_json::Value>,
        /// Jinja `lstrip_blocks` (`_master_opts`).
        #[salt_default = "False"]
        pub jinja_lstrip_blocks: bool,
        /// Jinja `trim_blocks` (`_master_opts`).
        #[salt_default = "False"]
        pub jinja_trim_blocks: bool,
        /// `master_tops`: only `ext_nodes: <command>` (run as `<command> <minion id>`, its
        /// YAML's `classes` and `environment` answered to `_master_tops`); any other module
        /// stops the master at start by name.
        #[salt_default = "{}"]
        pub master_tops: Option<String>,
    }
    nested {
        /// The `gitfs` backend's options (`gitfs_*`).
        pub gitfs: GitfsConfig,
        /// The git external pillar's options (`git_pillar_*`).
        pub git_pillar: GitPillarConfig,
    }
}

impl FileServerConfig {
    /// Every option of this group, for the master's option table.
    pub(crate) fn option_docs() -> Vec<crate::OptionDoc> {
        let mut docs = Self::field_docs();
        docs.extend(GitfsConfig::option_docs());
        docs.extend(GitPillarConfig::option_docs());
        docs
    }

    /// Reads the group; problems are recorded in `r`.
    pub(crate) fn read(r: &mut Reader<'_>) -> Self {
        let default_roots = BTreeMap::from([(
            "base".to_owned(),
            vec![PathBuf::from("/srv/salt"), PathBuf::from("/srv/spm/salt")],
        )]);
        let file_roots = r.get("file_roots", default_roots, |n| {
            let map = string_list_map(n)?;
            // Salt expands shell globs in these paths; salt-rs does not, and says so.
            if let Some(p) = map.values().flatten().find(|p| p.contains(['*', '?', '['])) {
                return Err(invalid(
                    p,
                    "glob patterns in file_roots are not supported by salt-rs",
                ));
            }
            Ok(map
                .into_iter()
                .map(|(env, dirs)| (env, dirs.into_iter().map(PathBuf::from).collect()))
                .collect())
        });
        let fileserver_backend = r.get("fileserver_backend", vec!["roots".to_owned()], |n| {
            let list = string_list(n)?;
            match list
                .iter()
                .find(|b| !matches!(b.as_str(), "roots" | "gitfs" | "git"))
            {
                Some(other) => Err(invalid(
                    other,
                    "only the `roots` and `gitfs` file server backends are implemented by \
                     salt-rs",
                )),
                // Salt's loader knows `gitfs` by its alias `git` too.
                None => Ok(list
                    .into_iter()
                    .map(|b| if b == "git" { "gitfs".to_owned() } else { b })
                    .collect()),
            }
        });
        let file_ignore_regex = r.get("file_ignore_regex", Vec::new(), |n| {
            let list = string_list(n)?;
            for re in &list {
                regex::Regex::new(re).map_err(|e| invalid(re, &format!("bad regex: {e}")))?;
            }
            Ok(list)
        });
        Self {
            file_roots,
            fileserver_backend,
            file_buffer_size: r.get(
                "file_buffer_size",
                DEFAULT_FILE_BUFFER_SIZE,
                int_in(1, 64 << 20),
            ),
            file_ignore_regex,
            file_ignore_glob: r.get("file_ignore_glob", Vec::new(), string_list),
            fileserver_followsymlinks: r.get("fileserver_followsymlinks", true, boolean),
            fileserver_ignoresymlinks: r.get("fileserver_ignoresymlinks", false, boolean),
            file_recv: r.get("file_recv", false, boolean),
            file_recv_max_size: r.get("file_recv_max_size", 100, count),
            renderer: r.get("renderer", "jinja|yaml".to_owned(), string),
            failhard: r.get("failhard", false, boolean),
            state_top: r.get("state_top", "top.sls".to_owned(), string),
            state_top_saltenv: r.opt("state_top_saltenv", string),
            top_file_merging_strategy: r.get(
                "top_file_merging_strategy",
                TopMergingStrategy::Merge,
                crate::reader::word(TopMergingStrategy::parse),
            ),
            env_order: r.get("env_order", Vec::new(), string_list),
            default_top: r.get("default_top", "base".to_owned(), string),
            state_auto_order: r.get("state_auto_order", true, boolean),
            state_events: r.get("state_events", false, boolean),
            state_aggregate: r.get("state_aggregate", false, boolean),
            nodegroups: r.get("nodegroups", serde_json::Map::new(), json_map),
            jinja_env: r.get("jinja_env", serde_json::Map::new(), json_map),
            jinja_sls_env: r.get("jinja_sls_env", serde_json::Map::new(), json_map),
            jinja_lstrip_blocks: r.get("jinja_lstrip_blocks", false, boolean),
            jinja_trim_blocks: r.get("jinja_trim_blocks", false, boolean),
            master_tops: r.get("master_tops", None, crate::ext_pillar::master_tops),
            gitfs: GitfsConfig::read(r),
            git_pillar: GitPillarConfig::read(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{LoadOptions, MasterConfig};

    fn load(yaml: &str) -> Result<MasterConfig, String> {
        MasterConfig::from_yaml_str(yaml, &LoadOptions::new("/nonexistent"))
            .map(|l| l.config)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_follow_salt() {
        let c = load("").unwrap().fileserver;
        assert_eq!(c.file_roots["base"].len(), 2);
        assert_eq!(c.file_buffer_size, 1_048_576);
        assert!(c.fileserver_followsymlinks);
        assert_eq!(c.renderer, "jinja|yaml");
        assert_eq!(c.state_top, "top.sls");
    }

    #[test]
    fn other_backends_are_refused_by_name() {
        let e = load("fileserver_backend: [roots, s3fs]\n").unwrap_err();
        assert!(e.contains("s3fs"), "{e}");
        assert!(e.contains("roots"), "{e}");
        let c = load("fileserver_backend: [git, roots]\n")
            .unwrap()
            .fileserver;
        assert_eq!(c.fileserver_backend, ["gitfs", "roots"]);
    }

    #[test]
    fn file_roots_keep_order_and_bad_regex_is_an_error() {
        let c = load("file_roots:\n  base: [/a, /b]\n  dev: /c\n")
            .unwrap()
            .fileserver;
        assert_eq!(
            c.file_roots["base"],
            vec!["/a".into(), "/b".into()] as Vec<std::path::PathBuf>
        );
        assert_eq!(c.file_roots["dev"], vec![std::path::PathBuf::from("/c")]);
        assert!(load("file_ignore_regex: ['(']\n").is_err());
        assert!(load("top_file_merging_strategy: nope\n").is_err());
        let e = load("file_roots: {base: ['/srv/*']}\n").unwrap_err();
        assert!(e.contains("glob"), "{e}");
    }
}
