//! What `salt-key` does, command by command, following Salt 3007's `salt/key.py`
//! (`KeyCLI.run` and `Key`): same selection rules, prompts, messages and output.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, BufRead, IsTerminal as _, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use salt_config::{LoadOptions, MasterConfig};
use salt_keystore::{AcceptFrom, KeyState, KeyStore, KeyStoreError, RejectFrom};

use crate::group::Opened;
use salt_pki::{HashType, PrivateKey, PublicKey, SigAlgo};

use crate::cli::{self, Args, Parsed, StrBool};
use crate::error::{Error, Result};
use crate::progress::Progress;
use salt_output::ordered::{self as output, Outputter, Style, Val};

/// Exit code of a usage error (Salt's `EX_USAGE`).
pub const EX_USAGE: i32 = 64;
/// Exit code when an operation failed (Salt prints `Error: ...` and exits 0; we exit 1
/// so scripts notice, see README of the crate).
pub const EX_FAILURE: i32 = 1;

/// Ids per batch in bulk operations (progress granularity).
const BATCH: usize = 2000;

mod change;
mod finger;
mod genkeys;

use finger::fingerprint_files;

/// Status names as Salt's `Key` uses them (the key outputter's map keys).
fn status_name(s: KeyState) -> &'static str {
    s.dir_name()
}

/// Run `salt-key` with `argv` (program name first); returns the exit code.
pub fn run(argv: Vec<OsString>) -> i32 {
    let args = match cli::parse(argv) {
        Parsed::Run(a) => a,
        Parsed::Help(text) => {
            print!("{text}");
            return 0;
        }
        Parsed::Usage(text) => {
            eprint!("{text}");
            return EX_USAGE;
        }
    };
    if args.version {
        println!(
            "salt-key {} (salt-rs; wire-compatible with Salt 3006, 3007 and 3008)",
            env!("CARGO_PKG_VERSION")
        );
        return 0;
    }
    let stdin = io::stdin();
    let mut input = stdin.lock();
    match Cli::new(*args).and_then(|mut c| c.run(&mut input)) {
        Ok(code) => code,
        Err(Error::Config(text)) => {
            eprint!(
                "{}",
                cli::usage_error(&format!("Failed to load configuration: {text}"))
            );
            EX_USAGE
        }
        Err(e) => {
            eprintln!("Error: {e}");
            EX_FAILURE
        }
    }
}

/// The selected command (Salt's `_update_opts` order decides between several).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Cmd {
    GenKeys(String),
    GenSignature,
    List(String),
    Print(String),
    Accept(String),
    Reject(String),
    Delete(String),
    Finger(String),
    FingerAll,
}

struct Cli {
    args: Args,
    cfg: MasterConfig,
    out: Outputter,
    style: Style,
    hash: HashType,
    verbose: bool,
}

impl Cli {
    fn new(args: Args) -> Result<Self> {
        let verbose = matches!(
            args.log_level.as_deref(),
            Some("info" | "debug" | "trace" | "garbage" | "all" | "profile")
        );
        let mut config_dir = args
            .config_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(salt_config::DEFAULT_CONFIG_DIR));
        // Salt's process_config_dir: generating keys without access to the config dir
        // uses --gen-keys-dir as the config dir.
        if args.gen_keys.is_some() && fs::read_dir(&config_dir).is_err() {
            fs::create_dir_all(&args.gen_keys_dir)
                .map_err(|e| Error::io("create directory", &args.gen_keys_dir, e))?;
            config_dir.clone_from(&args.gen_keys_dir);
        }
        let loaded = MasterConfig::load(&LoadOptions::from_system(Some(config_dir)))
            .map_err(|e| Error::Config(e.to_string()))?;
        if verbose {
            for w in &loaded.warnings {
                eprintln!("[WARNING ] {w}");
            }
        }
        let cfg = loaded.config;
        let out = match args.output.as_deref() {
            None => Outputter::Key,
            Some(name) => Outputter::parse(name).unwrap_or_else(|| {
                eprintln!("[ERROR   ] Invalid outputter {name} specified, fall back to nested");
                Outputter::Nested
            }),
        };
        let color = args.force_color || (!args.no_color && io::stdout().is_terminal());
        let style = Style {
            color,
            indent: args.output_indent,
        };
        let hash: HashType = cfg.hash_type.as_str().parse().map_err(|_| {
            Error::Config(format!("unsupported hash_type {}", cfg.hash_type.as_str()))
        })?;
        if let Some(path) = &args.output_file {
            // Salt truncates the output file at start unless --out-file-append.
            if !args.output_file_append && path.is_file() {
                fs::File::create(path).map_err(|e| Error::io("truncate", path, e))?;
            }
        }
        Ok(Self {
            args,
            cfg,
            out,
            style,
            hash,
            verbose,
        })
    }

    fn command(&self) -> Cmd {
        let a = &self.args;
        let nonempty =
            |o: &Option<String>| o.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
        if let Some(n) = nonempty(&a.gen_keys) {
            return Cmd::GenKeys(n);
        }
        if a.gen_signature {
            return Cmd::GenSignature;
        }
        if let Some(l) = nonempty(&a.list) {
            return Cmd::List(l);
        }
        if a.list_all {
            return Cmd::List("all".into());
        }
        if let Some(p) = nonempty(&a.print) {
            return Cmd::Print(p);
        }
        if a.print_all {
            return Cmd::Print("*".into());
        }
        if let Some(m) = nonempty(&a.accept) {
            return Cmd::Accept(m);
        }
        if a.accept_all {
            return Cmd::Accept("*".into());
        }
        if let Some(m) = nonempty(&a.reject) {
            return Cmd::Reject(m);
        }
        if a.reject_all {
            return Cmd::Reject("*".into());
        }
        if let Some(m) = nonempty(&a.delete) {
            return Cmd::Delete(m);
        }
        if a.delete_all {
            return Cmd::Delete("*".into());
        }
        if let Some(m) = nonempty(&a.finger) {
            return Cmd::Finger(m);
        }
        if a.finger_all {
            return Cmd::FingerAll;
        }
        Cmd::List("all".into())
    }

    fn run(&mut self, input: &mut dyn BufRead) -> Result<i32> {
        if self.args.delete_all && !self.args.args.is_empty() {
            return Err(Error::Usage(
                "Delete all takes no arguments. Use -d to delete specified keys".into(),
            ));
        }
        match self.command() {
            Cmd::GenKeys(name) => self.gen_keys(&name),
            Cmd::GenSignature => self.gen_signature(),
            Cmd::List(m) => self.list(&m),
            Cmd::Print(m) => self.print_keys(&m),
            Cmd::Finger(m) => self.finger(Some(&m)),
            Cmd::FingerAll => self.finger(None),
            Cmd::Accept(m) => self.change(Action::Accept, &m, input),
            Cmd::Reject(m) => self.change(Action::Reject, &m, input),
            Cmd::Delete(m) => self.change(Action::Delete, &m, input),
        }
    }

    // ------------------------------------------------------------ output

    /// `salt.output.display_output`: render, then print (or append to --out-file).
    fn display(&self, data: &Val) -> Result<()> {
        let text = output::render(data, self.out, self.style);
        if let Some(path) = &self.args.output_file {
            if !text.is_empty() {
                let mut f = fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(path)
                    .map_err(|e| Error::io("open", path, e))?;
                writeln!(f, "{text}").map_err(|e| Error::io("write", path, e))?;
            }
            return Ok(());
        }
        if !text.is_empty() {
            say(&text);
        }
        Ok(())
    }

    // ------------------------------------------------------------ store

    fn open_store(&self) -> Result<Opened> {
        let pki = &self.cfg.pki_dir;
        // As Salt's verify_env (which the master runs on the same directory): a pki_dir
        // that is not 0700/0750 is set to 0700; refused, naming the mode, only when that
        // chmod fails ("Unable to securely set the permissions").
        let store = Arc::new(
            salt_pgstore::key_store_options(&self.cfg)
                .fix_permissions(true)
                .open(pki)
                .map_err(Error::Store)?,
        );
        let group = crate::group::open(&self.cfg, &store, self.rotate_aes_key().truthy())?;
        Ok(Opened { store, group })
    }

    /// Salt's `name_match(match, full)`: statuses (in `list_keys` order, then `local`)
    /// with the ids matching the comma-separated globs.
    fn name_match(
        &self,
        store: &KeyStore,
        glob: &str,
        full: bool,
    ) -> Result<Vec<(String, Vec<String>)>> {
        check_glob(glob)?;
        let m = store.matching(glob, &KeyState::ALL).map_err(Error::Store)?;
        let mut ret: Vec<(String, Vec<String>)> = m
            .into_iter()
            .map(|(s, ids)| (status_name(s).to_owned(), ids))
            .collect();
        if full {
            let globs = salt_keystore::GlobList::new(glob).map_err(Error::Store)?;
            let local: Vec<String> = store
                .local_keys()
                .map_err(Error::Store)?
                .into_iter()
                .filter(|n| globs.is_match(n))
                .collect();
            if !local.is_empty() {
                ret.push(("local".into(), local));
            }
        }
        Ok(ret)
    }

    // ------------------------------------------------------------ list / print / finger

    fn list(&self, m: &str) -> Result<i32> {
        let store = self.open_store()?;
        let states: Vec<KeyState> = if m.starts_with("all") {
            KeyState::ALL.to_vec()
        } else {
            KeyState::parse_status(m).into_iter().collect()
        };
        let data = Val::Map(
            states
                .into_iter()
                .map(|s| (status_name(s).to_owned(), Val::List(store.list(s))))
                .collect(),
        );
        self.display(&data)?;
        Ok(0)
    }

    fn key_path(&self, status: &str, id: &str) -> PathBuf {
        if status == "local" {
            self.cfg.pki_dir.join(id)
        } else {
            self.cfg.pki_dir.join(status).join(id)
        }
    }

    fn print_keys(&self, m: &str) -> Result<i32> {
        let store = self.open_store()?;
        let mut data = Vec::new();
        for (status, ids) in self.name_match(&store, m, false)? {
            let mut keys = Vec::new();
            for id in ids {
                let path = self.key_path(&status, &id);
                match fs::read(&path) {
                    Ok(bytes) => {
                        keys.push((id, Val::Str(String::from_utf8_lossy(&bytes).into_owned())))
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io("read", &path, e)),
                }
            }
            data.push((status, Val::Map(keys)));
        }
        self.display(&Val::Map(data))?;
        Ok(0)
    }

    fn finger(&self, m: Option<&str>) -> Result<i32> {
        let store = self.open_store()?;
        let groups: Vec<(String, Vec<String>)> = match m {
            Some(m) => self.name_match(&store, m, true)?,
            None => {
                let mut g: Vec<(String, Vec<String>)> = KeyState::ALL
                    .into_iter()
                    .map(|s| (status_name(s).to_owned(), store.list(s)))
                    .collect();
                g.push(("local".into(), store.local_keys().map_err(Error::Store)?));
                g
            }
        };
        let total: usize = groups.iter().map(|(_, v)| v.len()).sum();
        let progress = Progress::start("fingerprinting keys", total, total >= 5000);
        let mut data = Vec::new();
        let hash = self.hash;
        for (status, ids) in groups {
            let mut fps = Vec::with_capacity(ids.len());
            if let Some(state) = KeyState::from_dir_name(&status) {
                // Reading and hashing 100k small files: the store splits them over the
                // CPUs (order kept), each opened from its directory.
                for chunk in ids.chunks(BATCH) {
                    let keys: Vec<(KeyState, &str)> =
                        chunk.iter().map(|id| (state, id.as_str())).collect();
                    let found = store
                        .read_keys(&keys, |pem| salt_pki::pem_finger(pem, hash))
                        .map_err(Error::Store)?;
                    for (id, fp) in chunk.iter().zip(found) {
                        if let Some(fp) = fp.map_err(Error::Store)? {
                            fps.push((id.clone(), Val::Str(fp)));
                        }
                    }
                    progress.inc(chunk.len());
                }
            } else {
                let paths: Vec<(String, PathBuf)> = ids
                    .into_iter()
                    .map(|id| {
                        let p = self.key_path(&status, &id);
                        (id, p)
                    })
                    .collect();
                for r in fingerprint_files(&paths, hash) {
                    let (id, fp) = r?;
                    if let Some(fp) = fp {
                        fps.push((id, Val::Str(fp)));
                    }
                }
                progress.inc(paths.len());
            }
            data.push((status, Val::Map(fps)));
        }
        progress.finish();
        self.display(&Val::Map(data))?;
        Ok(0)
    }

    // ------------------------------------------------------------ accept / reject / delete
}

/// Globs are matched against file names: one holding `/` or NUL can only be a mistake.
fn check_glob(glob: &str) -> Result<()> {
    if glob.contains('/') || glob.contains('\0') {
        return Err(Error::BadGlob(glob.to_owned()));
    }
    Ok(())
}

/// The selection as the key outputter's data.
fn to_val(sel: &[(String, Vec<String>)]) -> Val {
    Val::Map(
        sel.iter()
            .map(|(s, ids)| (s.clone(), Val::List(ids.clone())))
            .collect(),
    )
}

fn unique_ids(sel: &[(String, Vec<String>)]) -> Vec<String> {
    let mut seen = HashSet::new();
    sel.iter()
        .flat_map(|(_, ids)| ids.iter())
        .filter(|id| seen.insert(id.as_str()))
        .cloned()
        .collect()
}

/// Salt's `dict_match`: for each selected id, every state it is in now.
fn dict_match(store: &KeyStore, sel: &[(String, Vec<String>)]) -> Vec<(String, Vec<String>)> {
    let now = store.list_all();
    let now: Vec<(KeyState, HashSet<&str>)> = now
        .iter()
        .map(|(s, v)| (*s, v.iter().map(String::as_str).collect()))
        .collect();
    let mut ret: Vec<(String, Vec<String>)> = Vec::new();
    for (_, ids) in sel {
        let mut ids: Vec<&String> = ids.iter().collect();
        // sorted_ignorecase (stable; the selection is in that order already).
        if ids.iter().any(|s| s.chars().any(char::is_uppercase)) {
            ids.sort_by_cached_key(|s| s.to_lowercase());
        } else {
            ids.sort();
        }
        for id in ids {
            for (state, set) in &now {
                if set.contains(id.as_str()) {
                    let name = status_name(*state);
                    match ret.iter_mut().find(|(s, _)| s == name) {
                        Some((_, v)) => v.push(id.clone()),
                        None => ret.push((name.to_owned(), vec![id.clone()])),
                    }
                }
            }
        }
    }
    ret
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Accept,
    Reject,
    Delete,
}

impl Action {
    fn past(self) -> &'static str {
        match self {
            Self::Accept => "accepted",
            Self::Reject => "rejected",
            Self::Delete => "deleted",
        }
    }
}

/// Print a line on stdout, ignoring a closed pipe (Salt's `print_cli`).
fn say(text: &str) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

fn say_raw(text: &str) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Salt chowns the dropfile to the master's `user` when run as root.
fn chown_to_user(path: &Path, user: &str) {
    if !nix::unistd::geteuid().is_root() || user.is_empty() || user == "root" {
        return;
    }
    if let Ok(Some(u)) = nix::unistd::User::from_name(user) {
        let _ = std::os::unix::fs::chown(path, Some(u.uid.as_raw()), None);
    }
}
