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
use salt_keystore::{AcceptFrom, KeyState, KeyStore, KeyStoreError, OpenOptions, RejectFrom};

use crate::group::Opened;
use salt_pki::{HashType, PrivateKey, PublicKey, SigAlgo};

use crate::cli::{self, Args, Parsed, StrBool};
use crate::error::{Error, Result};
use crate::output::{self, Outputter, Style, Val};
use crate::progress::Progress;

/// Exit code of a usage error (Salt's `EX_USAGE`).
pub const EX_USAGE: i32 = 64;
/// Exit code when an operation failed (Salt prints `Error: ...` and exits 0; we exit 1
/// so scripts notice, see README of the crate).
pub const EX_FAILURE: i32 = 1;

/// Ids per batch in bulk operations (progress granularity).
const BATCH: usize = 2000;

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
            OpenOptions::new()
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

    fn include_flags(&self, action: Action) -> (bool, bool, bool) {
        // (include_accepted, include_rejected, include_denied) after Salt's _update_opts.
        let a = &self.args;
        match action {
            Action::Accept => (false, a.include_all || a.include_rejected, a.include_denied),
            Action::Reject => (a.include_all || a.include_accepted, false, a.include_denied),
            Action::Delete => (a.include_accepted, a.include_rejected, a.include_denied),
        }
    }

    /// Salt's `_filter_ret`.
    fn filter_ret(
        &self,
        action: Action,
        ret: Vec<(String, Vec<String>)>,
    ) -> Vec<(String, Vec<String>)> {
        if action == Action::Delete {
            return ret;
        }
        let (inc_acc, inc_rej, inc_den) = self.include_flags(action);
        let get = |name: &str| ret.iter().find(|(s, _)| s == name).map(|(_, v)| v.clone());
        let mut keys = Vec::new();
        if let Some(v) = get("minions_pre") {
            keys.push(("minions_pre".to_owned(), v));
        }
        for (flag, name) in [
            (inc_acc, "minions"),
            (inc_rej, "minions_rejected"),
            (inc_den, "minions_denied"),
        ] {
            if let Some(v) = get(name).filter(|v| flag && !v.is_empty()) {
                keys.push((name.to_owned(), v));
            }
        }
        keys
    }

    fn no_match_message(&self, action: Action, glob: &str) -> String {
        let (inc_acc, inc_rej, inc_den) = self.include_flags(action);
        let mut statuses = vec!["unaccepted"];
        if inc_acc {
            statuses.push("accepted");
        }
        if inc_rej {
            statuses.push("rejected");
        }
        if inc_den {
            statuses.push("denied");
        }
        let stat_str = match statuses.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => statuses.join(""),
        };
        format!("The key glob '{glob}' does not match any {stat_str} keys.")
    }

    fn change(&self, action: Action, glob: &str, input: &mut dyn BufRead) -> Result<i32> {
        let store = self.open_store()?;
        let matches = self.name_match(&store, glob, false)?;
        let selected = self.filter_ret(action, matches);
        if selected.is_empty() {
            say(&self.no_match_message(action, glob));
            return Ok(0);
        }
        // A group whose database is down refuses before anything is asked.
        let changes = store.changes()?;
        say(&format!(
            "The following keys are going to be {}:",
            action.past()
        ));
        self.display(&to_val(&selected))?;
        if !self.args.yes {
            let (prompt, default_yes) = match action {
                Action::Delete => ("Proceed? [N/y] ", false),
                _ => ("Proceed? [n/Y] ", true),
            };
            let mut out = io::stdout().lock();
            let _ = out.write_all(prompt.as_bytes());
            let _ = out.flush();
            drop(out);
            let mut line = String::new();
            let n = input
                .read_line(&mut line)
                .map_err(|e| Error::io("read answer from", Path::new("<stdin>"), e))?;
            if n == 0 {
                // Salt prints Python's "Error: EOF when reading a line" and exits 0, which a
                // script cannot tell from success: say what happened and fail.
                let _ = writeln!(io::stdout());
                eprintln!(
                    "salt-key: no answer to the prompt (standard input is closed): nothing was \
                     done; add -y to answer yes without a prompt"
                );
                return Ok(1);
            }
            let answer = line.trim_end_matches(['\n', '\r']);
            let yes = if answer.is_empty() {
                default_yes
            } else {
                answer.to_lowercase().starts_with('y')
            };
            if !yes {
                return Ok(0);
            }
        }

        let ids = unique_ids(&selected);
        let (inc_acc, inc_rej, inc_den) = self.include_flags(action);
        let mut errors: Vec<KeyStoreError> = Vec::new();
        match action {
            Action::Accept => {
                let dirs: Vec<&str> = std::iter::once("minions_pre")
                    .chain(inc_rej.then_some("minions_rejected"))
                    .chain(inc_den.then_some("minions_denied"))
                    .collect();
                self.validate_before_accept(&store, &selected, &dirs)?;
                let from = AcceptFrom {
                    include_rejected: inc_rej,
                    include_denied: inc_den,
                };
                // Validated just above: the store need not read every file again.
                self.batched(&ids, "accepting keys", &mut errors, |chunk| {
                    changes.accept_many(chunk, from)
                })?;
            }
            Action::Reject => {
                let from = RejectFrom {
                    include_accepted: inc_acc,
                    include_denied: inc_den,
                };
                self.batched(&ids, "rejecting keys", &mut errors, |chunk| {
                    changes.reject_many(chunk, from)
                })?;
            }
            Action::Delete => {
                self.batched(&ids, "deleting keys", &mut errors, |chunk| {
                    changes.delete_many(chunk)
                })?;
            }
        }
        if matches!(action, Action::Reject | Action::Delete) {
            let preserve: Vec<String> = if action == Action::Delete
                && cli::salt_bool_opt(&self.args.preserve_minions, false).is_true()
            {
                selected
                    .iter()
                    .find(|(s, _)| s == "minions")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            self.check_minion_cache(&store, &preserve);
            // A group rotates its publish key in the change's own transaction.
            if self.rotate_aes_key().truthy() && store.group.is_none() {
                self.dropfile()?;
            }
        }
        // What Salt prints: for delete the selection, else dict_match of the selection
        // against the keys as they are now.
        let report: Vec<(String, Vec<String>)> = if action == Action::Delete {
            selected
        } else {
            dict_match(&store, &selected)
        };
        let mut out = String::new();
        for (_, ids) in &report {
            for id in ids {
                let _ = writeln!(out, "Key for minion {id} {}.", action.past());
            }
        }
        say_raw(&out);
        if errors.is_empty() {
            Ok(0)
        } else {
            for e in &errors {
                eprintln!("Error: {e}");
            }
            Ok(EX_FAILURE)
        }
    }

    fn rotate_aes_key(&self) -> StrBool {
        match &self.args.rotate_aes_key {
            Some(_) => cli::salt_bool_opt(&self.args.rotate_aes_key, true),
            None => StrBool::Bool(true),
        }
    }

    fn batched(
        &self,
        ids: &[String],
        label: &str,
        errors: &mut Vec<KeyStoreError>,
        mut op: impl FnMut(&[String]) -> salt_keystore::Result<salt_keystore::Report>,
    ) -> Result<()> {
        let progress = Progress::start(label, ids.len(), ids.len() >= BATCH);
        for chunk in ids.chunks(BATCH) {
            let report = op(chunk).map_err(Error::Store)?;
            errors.extend(report.errors);
            progress.inc(chunk.len());
        }
        progress.finish();
        Ok(())
    }

    /// Every key about to be accepted must be an RSA public key (Salt checks each with
    /// `get_rsa_pub_key` and skips bad ones; we refuse the whole operation, naming every
    /// bad file, so that nothing changes). The store reads the files on every CPU.
    fn validate_before_accept(
        &self,
        store: &KeyStore,
        selected: &[(String, Vec<String>)],
        dirs: &[&str],
    ) -> Result<()> {
        let keys: Vec<(KeyState, &str)> = selected
            .iter()
            .filter(|(s, _)| dirs.contains(&s.as_str()))
            .filter_map(|(s, ids)| KeyState::from_dir_name(s).map(|state| (state, ids)))
            .flat_map(|(state, ids)| ids.iter().map(move |id| (state, id.as_str())))
            .collect();
        let bad = store
            .check_keys(&keys, |bytes| {
                crate::validate::rsa_public_key_pem(bytes)
                    .map_err(|why| format!("not a PEM RSA public key ({why})"))
            })
            .map_err(Error::Store)?;
        if bad.is_empty() {
            return Ok(());
        }
        for (i, problem) in &bad {
            let problem = match problem {
                KeyStoreError::InvalidKey { path, reason } => {
                    format!("{}: {reason}", path.display())
                }
                other => other.to_string(),
            };
            eprintln!("Unable to accept invalid key for {}: {problem}", keys[*i].1);
        }
        Err(Error::InvalidKeys(bad.len()))
    }

    /// Salt's `check_minion_cache`: remove `cachedir/minions/<id>` of minions that no
    /// longer have a key, unless `preserve_minion_cache` (or listed in `preserve`).
    fn check_minion_cache(&self, store: &KeyStore, preserve: &[String]) {
        if self.cfg.preserve_minion_cache {
            return;
        }
        let m_cache = self.cfg.cachedir.join("minions");
        let Ok(rd) = fs::read_dir(&m_cache) else {
            return;
        };
        let known: HashSet<String> = store.list_all().into_values().flatten().collect();
        for entry in rd.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if known.contains(&name) || preserve.contains(&name) {
                continue;
            }
            let path = entry.path();
            if let Err(e) =
                fs::remove_dir_all(&path).or_else(|e| if path.is_dir() { Err(e) } else { Ok(()) })
            {
                eprintln!("[WARNING ] Key: Delete cache for {name} got OSError/IOError: {e}");
            }
        }
    }

    /// Ask a running master to rotate its AES key (Salt's `salt.crypt.dropfile`).
    fn dropfile(&self) -> Result<()> {
        let cachedir = &self.cfg.cachedir;
        fs::create_dir_all(cachedir).map_err(|e| Error::io("create directory", cachedir, e))?;
        let written =
            salt_keystore::write_dropfile(cachedir, Some(&self.cfg.id)).map_err(Error::Store)?;
        if written {
            chown_to_user(
                &cachedir.join(salt_keystore::dropfile::DROPFILE),
                &self.cfg.user,
            );
        }
        if self.verbose {
            eprintln!(
                "[INFO    ] {}",
                if written {
                    "Rotating AES key"
                } else {
                    "AES key rotation already requested"
                }
            );
        }
        Ok(())
    }

    // ------------------------------------------------------------ key generation

    /// `signing_key_pass` (Salt uses it for every key salt-key generates or loads).
    fn passphrase(&self) -> Option<salt_pki::Zeroizing<Vec<u8>>> {
        self.cfg
            .signing_key_pass
            .as_ref()
            .map(|s| salt_pki::Zeroizing::new(s.expose().as_bytes().to_vec()))
    }

    fn keysize(&self) -> u32 {
        self.args
            .keysize
            .and_then(|k| u32::try_from(k).ok())
            .unwrap_or(self.cfg.keysize)
    }

    fn gen_keys(&self, name: &str) -> Result<i32> {
        check_key_name(name)?;
        let dir = &self.args.gen_keys_dir;
        fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
        let priv_path = dir.join(format!("{name}.pem"));
        let pub_path = dir.join(format!("{name}.pub"));
        if !priv_path.exists() {
            let pass = self.passphrase();
            generate_pair(
                &priv_path,
                &pub_path,
                self.keysize(),
                pass.as_ref().map(|p| p.as_slice()),
            )?;
        }
        let pub_pem = fs::read(&pub_path).map_err(|e| Error::io("read", &pub_path, e))?;
        self.display(&Val::ret(Val::Str(salt_pki::pem_finger(
            &pub_pem, self.hash,
        ))))?;
        Ok(0)
    }

    /// `salt-key --gen-signature` (Salt's `Key.gen_keys_signature`): sign the master's
    /// public key (or `--pub`) with the signing key (or `--priv`) and write
    /// `<signature-path or pki_dir>/<master_pubkey_signature>`, never replacing a file.
    fn gen_signature(&self) -> Result<i32> {
        let pki = &self.cfg.pki_dir;
        let mut pub_path: Option<PathBuf> = None;
        if let Some(p) = self
            .args
            .pub_path
            .as_ref()
            .filter(|p| !p.as_os_str().is_empty())
        {
            if !p.is_file() {
                return self.ret_str(&format!("Public-key {} does not exist", p.display()));
            }
            pub_path = Some(p.clone());
        } else {
            let mpub = pki.join("master.pub");
            if mpub.is_file() {
                pub_path = Some(mpub);
            }
        }
        let sign_name = &self.cfg.master_sign_key_name;
        let mut priv_path: Option<PathBuf> = None;
        if let Some(p) = self
            .args
            .priv_path
            .as_ref()
            .filter(|p| !p.as_os_str().is_empty())
        {
            if !p.is_file() {
                return self.ret_str(&format!("Private-key {} does not exist", p.display()));
            }
            priv_path = Some(p.clone());
        } else {
            let mpriv = pki.join(format!("{sign_name}.pem"));
            if mpriv.is_file() {
                priv_path = Some(mpriv);
            }
        }
        let pass = self.passphrase();
        let priv_path = match priv_path {
            Some(p) => p,
            None if self.args.auto_create => {
                check_key_name(sign_name)?;
                let p = pki.join(format!("{sign_name}.pem"));
                let pubp = pki.join(format!("{sign_name}.pub"));
                fs::create_dir_all(pki).map_err(|e| Error::io("create directory", pki, e))?;
                generate_pair(
                    &p,
                    &pubp,
                    self.keysize(),
                    pass.as_ref().map(|p| p.as_slice()),
                )?;
                p
            }
            None => return self.ret_str("No usable private-key found"),
        };
        let Some(pub_path) = pub_path else {
            return self.ret_str("No usable public-key found");
        };
        let sig_dir = self
            .args
            .signature_path
            .clone()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| pki.clone());
        let sign_path = sig_dir.join(&self.cfg.master_pubkey_signature);
        if !sig_dir.is_dir() {
            return Err(Error::io(
                "write",
                &sign_path,
                io::Error::new(io::ErrorKind::NotFound, "No such file or directory"),
            ));
        }

        let pub_text = fs::read(&pub_path).map_err(|e| Error::io("read", &pub_path, e))?;
        PublicKey::from_pem(&pub_text).map_err(|e| Error::pki(&pub_path, e))?;
        let pub_text = String::from_utf8_lossy(&pub_text);
        let key =
            salt_pki::files::read_private_key(&priv_path, pass.as_ref().map(|p| p.as_slice()))
                .map_err(|e| Error::pki(&priv_path, e))?;
        // Salt's gen_signature always signs with PKCS#1 v1.5 + SHA-1.
        let sig = salt_pki::pubsig::sign_master_pubkey(&key, &pub_text, SigAlgo::Pkcs1v15Sha1)
            .map_err(|e| Error::pki(&priv_path, e))?;
        if sign_path.exists() {
            return self.ret_bool(false);
        }
        let body = salt_pki::pubsig::signature_file(&sig);
        match salt_pki::files::atomic_create(&sign_path, body.as_bytes(), 0o644) {
            Ok(()) => self.ret_bool(true),
            Err(salt_pki::Error::Io { source, .. })
                if source.kind() == io::ErrorKind::AlreadyExists =>
            {
                self.ret_bool(false)
            }
            Err(e) => Err(Error::pki(&sign_path, e)),
        }
    }

    fn ret_str(&self, s: &str) -> Result<i32> {
        self.display(&Val::ret(Val::Str(s.to_owned())))?;
        Ok(0)
    }

    fn ret_bool(&self, b: bool) -> Result<i32> {
        self.display(&Val::ret(Val::Bool(b)))?;
        Ok(0)
    }
}

/// Generate an RSA pair: private key created without replacing an existing one (a
/// concurrent winner's key is kept, as Salt's `gen_keys` does), then the public key.
fn generate_pair(priv_path: &Path, pub_path: &Path, bits: u32, pass: Option<&[u8]>) -> Result<()> {
    let dir = priv_path.parent().unwrap_or(Path::new("."));
    let progress = Progress::spinner(&format!("generating {bits}-bit RSA key"));
    let key = PrivateKey::generate(bits);
    progress.finish();
    let key = key.map_err(|e| Error::pki(priv_path, e))?;
    let pem = key.to_pem(pass).map_err(|e| Error::pki(priv_path, e))?;
    match salt_pki::files::atomic_create(priv_path, &pem, 0o400) {
        Ok(()) => {}
        Err(salt_pki::Error::Io { source, .. })
            if source.kind() == io::ErrorKind::AlreadyExists =>
        {
            return Ok(());
        }
        Err(salt_pki::Error::Io { source, .. })
            if source.kind() == io::ErrorKind::PermissionDenied =>
        {
            let abs = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
            return Err(Error::WriteDenied {
                dir: abs,
                user: std::env::var("USER").unwrap_or_default(),
            });
        }
        Err(e) => return Err(Error::pki(priv_path, e)),
    }
    salt_pki::files::write_public_key(pub_path, &key.public_key())
        .map_err(|e| Error::pki(pub_path, e))
}

/// A key name for `--gen-keys` must be a plain file name (no path, not hidden).
fn check_key_name(name: &str) -> Result<()> {
    salt_keystore::validate_id(name).map_err(Error::Store)
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

/// `(id, fingerprint)` of each file, `None` for one that vanished meanwhile, in input order;
/// on up to as many threads as there are CPUs for large inputs.
fn fingerprint_files(
    paths: &[(String, PathBuf)],
    hash: HashType,
) -> Vec<Result<(String, Option<String>)>> {
    let one = |(id, path): &(String, PathBuf)| match fs::read(path) {
        Ok(bytes) => Ok((id.clone(), Some(salt_pki::pem_finger(&bytes, hash)))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((id.clone(), None)),
        Err(e) => Err(Error::io("read", path, e)),
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    if paths.len() < 512 || threads == 1 {
        return paths.iter().map(one).collect();
    }
    let chunk = paths.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join().unwrap_or_else(|_| {
                    vec![Err(Error::io(
                        "fingerprint",
                        Path::new("(worker thread)"),
                        io::Error::other("panicked"),
                    ))]
                })
            })
            .collect()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod fingerprint_tests {
    use super::*;

    #[test]
    fn threaded_fingerprints_keep_order_and_skip_vanished_files() {
        let dir = tempfile::tempdir().unwrap();
        let pem = PrivateKey::generate(2048).unwrap().public_key().to_pem();
        let other = PrivateKey::generate(2048).unwrap().public_key().to_pem();
        let mut paths = Vec::new();
        for i in 0..1500 {
            let p = dir.path().join(format!("m-{i}"));
            if i != 700 {
                fs::write(&p, if i % 2 == 0 { &pem } else { &other }).unwrap();
            }
            paths.push((format!("m-{i}"), p));
        }
        let got = fingerprint_files(&paths, HashType::Sha256);
        assert_eq!(got.len(), 1500);
        let even = salt_pki::pem_finger(pem.as_bytes(), HashType::Sha256);
        let odd = salt_pki::pem_finger(other.as_bytes(), HashType::Sha256);
        for (i, r) in got.into_iter().enumerate() {
            let (id, fp) = r.unwrap();
            assert_eq!(id, format!("m-{i}"), "input order kept");
            match i {
                700 => assert_eq!(fp, None, "vanished file skipped"),
                _ if i % 2 == 0 => assert_eq!(fp.as_deref(), Some(even.as_str())),
                _ => assert_eq!(fp.as_deref(), Some(odd.as_str())),
            }
        }
    }
}
