//! `salt-key -a/-r/-d` and friends: select, confirm, move in batches, rotate the AES key.

use super::*;

impl Cli {
    pub(super) fn include_flags(&self, action: Action) -> (bool, bool, bool) {
        // (include_accepted, include_rejected, include_denied) after Salt's _update_opts.
        let a = &self.args;
        match action {
            Action::Accept => (false, a.include_all || a.include_rejected, a.include_denied),
            Action::Reject => (a.include_all || a.include_accepted, false, a.include_denied),
            Action::Delete => (a.include_accepted, a.include_rejected, a.include_denied),
        }
    }

    /// Salt's `_filter_ret`.
    pub(super) fn filter_ret(
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

    pub(super) fn no_match_message(&self, action: Action, glob: &str) -> String {
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

    pub(super) fn change(
        &self,
        action: Action,
        glob: &str,
        input: &mut dyn BufRead,
    ) -> Result<i32> {
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
        let whole = changes.one_batch();
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
                self.batched(&ids, whole, "accepting keys", &mut errors, |chunk| {
                    changes.accept_many(chunk, from)
                })?;
            }
            Action::Reject => {
                let from = RejectFrom {
                    include_accepted: inc_acc,
                    include_denied: inc_den,
                };
                self.batched(&ids, whole, "rejecting keys", &mut errors, |chunk| {
                    changes.reject_many(chunk, from)
                })?;
            }
            Action::Delete => {
                self.batched(&ids, whole, "deleting keys", &mut errors, |chunk| {
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

    pub(super) fn rotate_aes_key(&self) -> StrBool {
        match &self.args.rotate_aes_key {
            Some(_) => cli::salt_bool_opt(&self.args.rotate_aes_key, true),
            None => StrBool::Bool(true),
        }
    }

    /// Apply `op` to `ids` in batches of [`BATCH`] (the progress bar's steps), or in one
    /// call when `whole` ([`KeyChanges::one_batch`](salt_keystore::KeyChanges::one_batch)).
    pub(super) fn batched(
        &self,
        ids: &[String],
        whole: bool,
        label: &str,
        errors: &mut Vec<KeyStoreError>,
        mut op: impl FnMut(&[String]) -> salt_keystore::Result<salt_keystore::Report>,
    ) -> Result<()> {
        let progress = Progress::start(label, ids.len(), ids.len() >= BATCH);
        let batch = if whole { ids.len().max(1) } else { BATCH };
        for chunk in ids.chunks(batch) {
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
    pub(super) fn validate_before_accept(
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
    pub(super) fn check_minion_cache(&self, store: &KeyStore, preserve: &[String]) {
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
    pub(super) fn dropfile(&self) -> Result<()> {
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
}
