//! APT sources files as Salt's `aptpkg` edits them without python3-apt (its own
//! `SourceEntry`/`SourcesList`, `salt/modules/aptpkg.py` of 3007): `/etc/apt/sources.list`
//! and `/etc/apt/sources.list.d/*.list` (fixed paths, as Salt's), lines parsed and written
//! back with Salt's quirks (options re-emitted from the line, comments after `#`, every
//! file holding an entry rewritten on save).

use std::path::{Path, PathBuf};

use regex::Regex;
use rmpv::Value;

use crate::map;

/// Salt's `SourcesList` files: the main list and the `.list` directory.
pub const SOURCES_LIST: &str = "/etc/apt/sources.list";
/// The directory of `.list` files.
pub const SOURCES_DIR: &str = "/etc/apt/sources.list.d";

/// The fields `mod_repo` may set (`_MODIFY_OK`).
pub const MODIFY_OK: &[&str] = &[
    "uri",
    "comps",
    "architectures",
    "disabled",
    "file",
    "dist",
    "signedby",
];

/// One option of `[..]`: its text and value.
#[derive(Clone, Debug)]
struct Opt {
    key: String,
    full: String,
    value: Vec<String>,
}

/// `_get_opts`: the options between the first `[` and `]` holding a `=`.
fn get_opts(line: &str) -> Result<Vec<Opt>, String> {
    let re = Regex::new(r"\[(.*=.*?)\]").map_err(|e| e.to_string())?;
    let Some(m) = re.find(line) else {
        return Ok(Vec::new());
    };
    let body = m.as_str().trim_matches(['[', ']']);
    let mut ret: Vec<Opt> = Vec::new();
    let mut archs: Vec<String> = Vec::new();
    for opt in body.split_whitespace() {
        let Some((k, v)) = opt.split_once('=') else {
            return Err("IndexError: list index out of range".into());
        };
        let (key, value) = if opt.starts_with("arch") {
            archs.extend(v.split(',').map(str::to_owned));
            ("arch".to_owned(), archs.clone())
        } else if opt.starts_with("signed-by") {
            ("signedby".to_owned(), vec![v.to_owned()])
        } else {
            (k.to_owned(), vec![v.to_owned()])
        };
        let o = Opt {
            key: key.clone(),
            full: opt.to_owned(),
            value,
        };
        match ret.iter_mut().find(|x| x.key == key) {
            Some(x) => *x = o,
            None => ret.push(o),
        }
    }
    Ok(ret)
}

/// `_invalid`: `(disabled, invalid, comment, words)`.
fn invalid(line: &str) -> (bool, bool, String, Vec<String>) {
    let mut line = line.trim();
    if line.is_empty() {
        return (false, true, String::new(), Vec::new());
    }
    let disabled = line.starts_with('#');
    if disabled {
        line = &line[1..];
    }
    let mut comment = String::new();
    if let Some(idx) = line.find('#').filter(|i| *i > 0) {
        comment = line[idx + 1..].to_owned();
        line = &line[..idx];
    }
    let words = |s: &str| -> Vec<String> { s.split_whitespace().map(str::to_owned).collect() };
    let cdrom = Regex::new(r"^(.*)(cdrom:.*/)(.*)").ok();
    let t = line.trim();
    let repo_line = match cdrom.as_ref().and_then(|re| re.captures(t)) {
        Some(c) => {
            let mut v = words(&c[1]);
            v.push(c[2].trim().to_owned());
            v.extend(words(&c[3]));
            v
        }
        None => words(t),
    };
    let bad = repo_line.len() < 3
        || !["deb", "deb-src", "rpm", "rpm-src"].contains(&repo_line[0].as_str())
        || (repo_line[1].starts_with('[') && !repo_line[1..].iter().any(|x| x.ends_with(']')));
    (disabled, bad, comment, repo_line)
}

/// Salt's `SourceEntry` (without python3-apt).
#[derive(Clone, Debug, Default)]
pub struct SourceEntry {
    pub invalid: bool,
    pub comps: Vec<String>,
    pub disabled: bool,
    pub comment: String,
    pub dist: String,
    pub kind: String,
    pub uri: String,
    pub line: String,
    pub architectures: Vec<String>,
    pub signedby: String,
    pub file: String,
}

impl SourceEntry {
    /// Parse `line` (of `file`, else the main list).
    pub fn new(line: &str, file: Option<&str>) -> Result<Self, String> {
        let mut e = SourceEntry {
            line: line.to_owned(),
            file: file.unwrap_or(SOURCES_LIST).to_owned(),
            ..SourceEntry::default()
        };
        let (disabled, bad, comment, mut words) = invalid(line);
        e.disabled = disabled;
        e.invalid = bad;
        e.comment = comment;
        if bad {
            return Ok(e);
        }
        if words[1].starts_with('[') {
            words = words
                .iter()
                .map(|w| w.trim_matches(['[', ']']).to_owned())
                .filter(|w| !w.is_empty())
                .collect();
            for o in get_opts(&e.line)? {
                match o.key.as_str() {
                    "arch" => e.architectures.extend(o.value.iter().cloned()),
                    "signedby" => e.signedby = o.value.concat(),
                    _ => {}
                }
                let pos = words
                    .iter()
                    .position(|w| *w == o.full)
                    .ok_or("ValueError: list.index(x): x not in list")?;
                words.remove(pos);
            }
        }
        if words.len() < 3 {
            return Err("IndexError: list index out of range".into());
        }
        e.kind = words[0].clone();
        e.uri = words[1].clone();
        e.dist = words[2].clone();
        e.comps = words[3..].to_vec();
        Ok(e)
    }

    /// `repo_line`: the line written for this entry (ending in a newline).
    pub fn repo_line(&self) -> String {
        if self.invalid {
            return self.line.clone();
        }
        let mut parts: Vec<String> = Vec::new();
        if self.disabled {
            parts.push("#".into());
        }
        parts.push(self.kind.clone());
        let mut opts = get_opts(&self.line).unwrap_or_default();
        let mut set = |key: &str, full: String| match opts.iter_mut().find(|o| o.key == key) {
            Some(o) => o.full = full,
            None => opts.push(Opt {
                key: key.into(),
                full,
                value: Vec::new(),
            }),
        };
        if !self.architectures.is_empty() {
            set("arch", format!("arch={}", self.architectures.join(",")));
        }
        if !self.signedby.is_empty() {
            set("signedby", format!("signed-by={}", self.signedby));
        }
        let ordered: Vec<&str> = opts
            .iter()
            .map(|o| o.full.as_str())
            .filter(|f| !f.is_empty())
            .collect();
        if !ordered.is_empty() {
            parts.push(format!("[{}]", ordered.join(" ")));
        }
        parts.extend([self.uri.clone(), self.dist.clone(), self.comps.join(" ")]);
        if !self.comment.is_empty() {
            parts.push(format!("#{}", self.comment));
        }
        parts.join(" ") + "\n"
    }

    /// The entry as `list_repos` reports it (Salt's key order).
    pub fn to_value(&self) -> Value {
        let strs = |v: &[String]| Value::Array(v.iter().cloned().map(Value::from).collect());
        map(vec![
            ("file", Value::from(self.file.clone())),
            ("comps", strs(&self.comps)),
            ("disabled", Value::Boolean(self.disabled)),
            ("dist", Value::from(self.dist.clone())),
            ("type", Value::from(self.kind.clone())),
            ("uri", Value::from(self.uri.clone())),
            ("line", Value::from(self.line.trim())),
            ("architectures", strs(&self.architectures)),
            ("signedby", Value::from(self.signedby.clone())),
        ])
    }
}

/// Salt's `SourcesList`: every line of the main list and of `sources.list.d/*.list`.
#[derive(Debug, Default)]
pub struct SourcesList {
    pub list: Vec<SourceEntry>,
}

impl SourcesList {
    /// Read the files (a missing one is skipped).
    pub fn load() -> Result<Self, String> {
        let mut s = SourcesList::default();
        s.add_file(Path::new(SOURCES_LIST))?;
        if let Ok(rd) = std::fs::read_dir(SOURCES_DIR) {
            for e in rd.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "list") {
                    s.add_file(&p)?;
                }
            }
        }
        Ok(s)
    }

    fn add_file(&mut self, file: &Path) -> Result<(), String> {
        if !file.is_file() {
            return Ok(());
        }
        let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
        let name = file.display().to_string();
        for line in text.split_inclusive('\n') {
            self.list.push(SourceEntry::new(line, Some(&name))?);
        }
        Ok(())
    }

    /// `add`: a new entry from its parts (`arch=`/`signed-by=` options as given).
    pub fn add(
        kind: &str,
        uri: &str,
        dist: &str,
        comps: &[String],
        archs: &[String],
        signedby: &str,
    ) -> Result<SourceEntry, String> {
        let mut opts = Vec::new();
        if !archs.is_empty() {
            opts.push(format!("arch={}", archs.join(",")));
        }
        if !signedby.is_empty() {
            opts.push(format!("signed-by={signedby}"));
        }
        let opts_line = if opts.is_empty() {
            String::new()
        } else {
            format!("[{}]", opts.join(" "))
        };
        let parts = [
            kind.to_owned(),
            opts_line,
            uri.to_owned(),
            dist.to_owned(),
            comps.join(" "),
        ];
        let line: Vec<&str> = parts
            .iter()
            .map(String::as_str)
            .filter(|p| !p.trim().is_empty())
            .collect();
        SourceEntry::new(&line.join(" "), None)
    }

    /// `save`: every file holding an entry is rewritten with its entries' lines.
    pub fn save(&self) -> Result<(), String> {
        let mut files: Vec<(String, String)> = Vec::new();
        for s in &self.list {
            match files.iter_mut().find(|(f, _)| *f == s.file) {
                Some((_, t)) => t.push_str(&s.repo_line()),
                None => files.push((s.file.clone(), s.repo_line())),
            }
        }
        for (file, text) in files {
            write_replace(Path::new(&file), &text)?;
        }
        Ok(())
    }
}

/// Write `text` to a new file beside `path`, then rename it over `path`.
fn write_replace(path: &Path, text: &str) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let tmp: PathBuf = dir.join(format!(
        ".{}.salt-rs-tmp",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// `_split_repo_str`: the parts of a repo line.
pub fn split_repo_str(repo: &str) -> Result<SourceEntry, String> {
    SourceEntry::new(repo, None)
}

/// `list_repos`: valid entries, in file order (Salt groups them by uri, first seen first).
pub fn list_repos() -> Result<Vec<SourceEntry>, String> {
    let all: Vec<SourceEntry> = SourcesList::load()?
        .list
        .into_iter()
        .filter(|s| !s.invalid)
        .collect();
    let mut uris: Vec<&str> = Vec::new();
    for s in &all {
        if !uris.contains(&s.uri.as_str()) {
            uris.push(&s.uri);
        }
    }
    Ok(uris
        .iter()
        .flat_map(|u| all.iter().filter(move |s| s.uri == *u))
        .cloned()
        .collect())
}

/// `get_repo`: the configured entry matching `repo` (type, uri, dist, one of its comps).
pub fn get_repo(repo: &str) -> Result<Option<SourceEntry>, String> {
    let repos = list_repos()?;
    if repos.is_empty() {
        return Ok(None);
    }
    let want = split_repo_str(repo)?;
    Ok(repos.into_iter().find(|s| {
        s.kind == want.kind
            && s.uri.trim_end_matches('/') == want.uri.trim_end_matches('/')
            && s.dist == want.dist
            && (want.comps.is_empty() || want.comps.iter().any(|c| s.comps.contains(c)))
    }))
}
