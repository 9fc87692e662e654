//! `_file_recv` (`cp.push`): chunks a minion sends into `<cachedir>/minions/<id>/files/`,
//! only with `file_recv: True` and within `file_recv_max_size` MiB (`AESFuncs._file_recv`).

use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;

use salt_proto::ValueExt;
use salt_proto::msg::FileRecv;

use crate::FileServer;

impl FileServer {
    pub(crate) fn file_recv(&self, load: &FileRecv<'_>, id: &str) -> bool {
        let (Some(path), Some(loc), Some(data)) = (load.path, load.loc, load.data) else {
            return false;
        };
        if !self.cfg.file_recv || !salt_proto::auth_master::valid_id(id) {
            return false;
        }
        let Some(loc) = loc.as_u64() else {
            tracing::error!("Invalid file pointer: load[loc] < 0");
            return false;
        };
        let max = u64::from(self.cfg.file_recv_max_size) * 1024 * 1024;
        if (data.len() as u64).saturating_add(loc) > max {
            tracing::error!(
                "file_recv_max_size limit of {max} bytes exceeded by a push from {id}; refused"
            );
            return false;
        }
        let mut rel = PathBuf::new();
        for comp in path {
            match comp.as_text() {
                Some(c) if !c.is_empty() && c != "." && c != ".." && !c.contains(['/', '\0']) => {
                    rel.push(c);
                }
                _ => {
                    tracing::warn!("cp.push from {id} with a refused path component; refused");
                    return false;
                }
            }
        }
        if rel.as_os_str().is_empty() {
            return false;
        }
        let base = self.cachedir.join("minions").join(id).join("files");
        let target = base.join(&rel);
        if let Some(dir) = target.parent()
            && std::fs::create_dir_all(dir).is_err()
        {
            return false;
        }
        // No directory on the way may be a symlink out of the cache.
        if !crate::paths::under_root(&base, target.parent().unwrap_or(&base), true) {
            tracing::warn!("Attempt to write received file outside of master cache directory");
            return false;
        }
        if target
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            tracing::warn!("cp.push from {id} onto a symlink in the master cache; refused");
            return false;
        }
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true);
        if loc == 0 {
            opts.truncate(true);
        }
        let write = || -> std::io::Result<()> {
            let mut f = opts.open(&target)?;
            f.seek(SeekFrom::Start(loc))?;
            f.write_all(data)
        };
        write().is_ok()
    }
}
