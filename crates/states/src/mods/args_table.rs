//! The argument policy of each state function salt-rs registers (`mods::REGISTRY`), checked
//! against Salt's signatures by `tests/state_args.rs`
//! (`tests/data/salt-state-signatures.json`, from `scripts/gen-salt-signatures.py`).

use super::args::{Args, Default as D};
use super::file_args;

/// `cmd.run`.
pub const CMD_RUN: Args = Args {
    honoured: &[
        "name",
        "cwd",
        "timeout",
        "success_retcodes",
        "success_stdout",
        "success_stderr",
        "output_loglevel",
    ],
    refused: &[
        ("root", D::None),
        ("runas", D::None),
        ("password", D::None),
        ("shell", D::None),
        ("env", D::None),
        ("prepend_path", D::None),
        ("stateful", D::Bool(false)),
        ("hide_output", D::Bool(false)),
        ("ignore_timeout", D::Bool(false)),
        ("use_vt", D::Bool(false)),
    ],
    apply_only: &[],
};
/// `cmd.wait`.
pub const CMD_WAIT: Args = Args {
    honoured: &[
        "name",
        "cwd",
        "success_retcodes",
        "success_stdout",
        "success_stderr",
        "output_loglevel",
    ],
    refused: &[
        ("root", D::None),
        ("runas", D::None),
        ("shell", D::None),
        ("env", D::EmptyList),
        ("stateful", D::Bool(false)),
        ("hide_output", D::Bool(false)),
        ("use_vt", D::Bool(false)),
    ],
    apply_only: &[],
};
/// `cmd.mod_watch`.
pub const CMD_MOD_WATCH: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `cmd.script`.
pub const CMD_SCRIPT: Args = Args {
    honoured: &["name", "source", "cwd", "output_loglevel"],
    refused: &[
        ("template", D::None),
        ("runas", D::None),
        ("password", D::None),
        ("shell", D::None),
        ("env", D::None),
        ("stateful", D::Bool(false)),
        ("timeout", D::None),
        ("use_vt", D::Bool(false)),
        ("hide_output", D::Bool(false)),
        ("defaults", D::None),
        ("context", D::None),
        ("success_retcodes", D::None),
        ("success_stdout", D::None),
        ("success_stderr", D::None),
    ],
    apply_only: &[],
};
/// `cron.present`.
pub const CRON_PRESENT: Args = Args {
    honoured: &[
        "name",
        "user",
        "minute",
        "hour",
        "daymonth",
        "month",
        "dayweek",
        "comment",
        "commented",
        "identifier",
    ],
    refused: &[("special", D::None)],
    apply_only: &[],
};
/// `cron.absent`.
pub const CRON_ABSENT: Args = Args {
    honoured: &["name", "user", "identifier"],
    refused: &[("special", D::None)],
    apply_only: &[],
};
/// `cron.env_present`.
pub const CRON_ENV_PRESENT: Args = Args {
    honoured: &["name", "value", "user"],
    refused: &[],
    apply_only: &[],
};
/// `cron.env_absent`.
pub const CRON_ENV_ABSENT: Args = Args {
    honoured: &["name", "user"],
    refused: &[],
    apply_only: &[],
};
/// `file.managed`.
pub const FILE_MANAGED: Args = Args {
    honoured: file_args::HONOURED,
    refused: file_args::REFUSED,
    apply_only: file_args::APPLY_ONLY,
};
/// `file.directory`.
pub const FILE_DIRECTORY: Args = Args {
    honoured: &[
        "name",
        "user",
        "group",
        "recurse",
        "dir_mode",
        "makedirs",
        "win_owner",
        "win_perms",
        "win_deny_perms",
        "win_inheritance",
        "win_perms_reset",
    ],
    refused: &[
        ("max_depth", D::None),
        ("file_mode", D::None),
        ("clean", D::Bool(false)),
        ("exclude_pat", D::None),
        ("follow_symlinks", D::Bool(false)),
        ("force", D::Bool(false)),
        ("backupname", D::None),
        ("allow_symlink", D::Bool(true)),
        ("children_only", D::Bool(false)),
    ],
    apply_only: &[],
};
/// `file.absent`.
pub const FILE_ABSENT: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `file.symlink`.
pub const FILE_SYMLINK: Args = Args {
    honoured: &[
        "name",
        "target",
        "force",
        "makedirs",
        "win_perms",
        "win_deny_perms",
        "win_inheritance",
    ],
    refused: &[
        ("backupname", D::None),
        ("user", D::None),
        ("group", D::None),
        ("mode", D::None),
        ("win_owner", D::None),
        ("atomic", D::Bool(false)),
        ("disallow_copy_and_unlink", D::Bool(false)),
        ("inherit_user_and_group", D::Bool(false)),
        ("follow_symlinks", D::Bool(true)),
    ],
    apply_only: &[],
};
/// `file.append`.
pub const FILE_APPEND: Args = Args {
    honoured: &["name", "text", "makedirs", "ignore_whitespace"],
    refused: &[
        ("source", D::None),
        ("source_hash", D::None),
        ("template", D::Str("jinja")),
        ("sources", D::None),
        ("source_hashes", D::None),
        ("defaults", D::None),
        ("context", D::None),
        ("encoding", D::None),
        ("encoding_errors", D::Str("strict")),
    ],
    apply_only: &[],
};
/// `file.replace`.
pub const FILE_REPLACE: Args = Args {
    honoured: &[
        "name",
        "pattern",
        "repl",
        "count",
        "flags",
        "bufsize",
        "append_if_not_found",
        "prepend_if_not_found",
        "not_found_content",
        "backup",
        "show_changes",
        "ignore_if_missing",
        "backslash_literal",
        "encoding",
    ],
    refused: &[],
    apply_only: &[],
};
/// `file.touch`.
pub const FILE_TOUCH: Args = Args {
    honoured: &["name", "makedirs"],
    refused: &[("atime", D::None), ("mtime", D::None)],
    apply_only: &[],
};
/// `file.line`.
pub const FILE_LINE: Args = Args {
    honoured: &[
        "name",
        "content",
        "match",
        "mode",
        "location",
        "before",
        "after",
        "show_changes",
        "quiet",
        "indent",
    ],
    refused: &[
        ("backup", D::Bool(false)),
        ("create", D::Bool(false)),
        ("user", D::None),
        ("group", D::None),
        ("file_mode", D::None),
    ],
    apply_only: &[],
};
/// `file.recurse`.
pub const FILE_RECURSE: Args = Args {
    honoured: &[
        "name",
        "source",
        "user",
        "group",
        "dir_mode",
        "file_mode",
        "template",
        "context",
        "replace",
        "defaults",
        "win_owner",
        "win_perms",
        "win_deny_perms",
        "win_inheritance",
    ],
    refused: &[
        ("keep_source", D::Bool(true)),
        ("clean", D::Bool(false)),
        ("sym_mode", D::None),
        ("include_empty", D::Bool(false)),
        ("backup", D::Str("")),
        ("include_pat", D::None),
        ("exclude_pat", D::None),
        ("maxdepth", D::None),
        ("keep_symlinks", D::Bool(false)),
        ("force_symlinks", D::Bool(false)),
    ],
    apply_only: &[],
};
/// `host.present`.
pub const HOST_PRESENT: Args = Args {
    honoured: &["name", "ip", "comment", "clean"],
    refused: &[],
    apply_only: &[],
};
/// `host.absent`.
pub const HOST_ABSENT: Args = Args {
    honoured: &["name", "ip"],
    refused: &[],
    apply_only: &[],
};
/// `locale.present`.
pub const LOCALE_PRESENT: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `locale.system`.
pub const LOCALE_SYSTEM: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `timezone.system`.
pub const TIMEZONE_SYSTEM: Args = Args {
    honoured: &["name", "utc"],
    refused: &[],
    apply_only: &[],
};
/// `pkg.installed`.
pub const PKG_INSTALLED: Args = Args {
    honoured: &[
        "name",
        "version",
        "refresh",
        "pkgs",
        "fromrepo",
        "skip_verify",
        "update_holds",
    ],
    refused: &[
        ("skip_suggestions", D::Bool(false)),
        ("sources", D::None),
        ("allow_updates", D::Bool(false)),
        ("pkg_verify", D::Bool(false)),
        ("normalize", D::Bool(true)),
        ("ignore_epoch", D::None),
        ("reinstall", D::Bool(false)),
    ],
    apply_only: &[],
};
/// `pkg.latest`.
pub const PKG_LATEST: Args = Args {
    honoured: &["name", "refresh", "pkgs", "fromrepo", "skip_verify"],
    refused: &[("watch_flags", D::Bool(true))],
    apply_only: &[],
};
/// `pkg.removed`.
pub const PKG_REMOVED: Args = Args {
    honoured: &["name", "version", "pkgs"],
    refused: &[("normalize", D::Bool(true)), ("ignore_epoch", D::None)],
    apply_only: &[],
};
/// `pkg.purged`.
pub const PKG_PURGED: Args = Args {
    honoured: &["name", "version", "pkgs"],
    refused: &[("normalize", D::Bool(true)), ("ignore_epoch", D::None)],
    apply_only: &[],
};
/// `service.running`.
pub const SERVICE_RUNNING: Args = Args {
    honoured: &["name", "enable"],
    refused: &[("sig", D::None), ("init_delay", D::None)],
    apply_only: &[],
};
/// `service.dead`.
pub const SERVICE_DEAD: Args = Args {
    honoured: &["name", "enable"],
    refused: &[("sig", D::None), ("init_delay", D::None)],
    apply_only: &[],
};
/// `service.enabled`.
pub const SERVICE_ENABLED: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `service.disabled`.
pub const SERVICE_DISABLED: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `service.mod_watch`.
pub const SERVICE_MOD_WATCH: Args = Args {
    honoured: &["name", "sfun", "reload"],
    refused: &[
        ("sig", D::None),
        ("full_restart", D::Bool(false)),
        ("init_delay", D::None),
        ("force", D::Bool(false)),
    ],
    apply_only: &[],
};
/// `sysctl.present`.
pub const SYSCTL_PRESENT: Args = Args {
    honoured: &["name", "value", "config"],
    refused: &[],
    apply_only: &[],
};
/// `user.present`.
pub const USER_PRESENT: Args = Args {
    honoured: &[
        "name",
        "uid",
        "gid",
        "usergroup",
        "groups",
        "remove_groups",
        "home",
        "createhome",
        "persist_home",
        "shell",
        "unique",
        "system",
        "fullname",
        "allow_uid_change",
        "allow_gid_change",
    ],
    refused: &[
        ("optional_groups", D::None),
        ("password", D::None),
        ("hash_password", D::Bool(false)),
        ("enforce_password", D::Bool(true)),
        ("empty_password", D::Bool(false)),
        ("roomnumber", D::None),
        ("workphone", D::None),
        ("homephone", D::None),
        ("other", D::None),
        ("loginclass", D::None),
        ("date", D::None),
        ("mindays", D::None),
        ("maxdays", D::None),
        ("inactdays", D::None),
        ("warndays", D::None),
        ("expire", D::None),
        ("win_homedrive", D::None),
        ("win_profile", D::None),
        ("win_logonscript", D::None),
        ("win_description", D::None),
        ("nologinit", D::Bool(false)),
        ("password_lock", D::None),
        ("local", D::Bool(false)),
    ],
    apply_only: &[],
};
/// `user.absent`.
pub const USER_ABSENT: Args = Args {
    honoured: &["name", "purge", "force"],
    refused: &[("local", D::Bool(false))],
    apply_only: &[],
};
/// `group.present`.
pub const GROUP_PRESENT: Args = Args {
    honoured: &["name", "gid", "system", "addusers", "delusers"],
    refused: &[
        ("members", D::None),
        ("non_unique", D::Bool(false)),
        ("local", D::Bool(false)),
    ],
    apply_only: &[],
};
/// `group.absent`.
pub const GROUP_ABSENT: Args = Args {
    honoured: &["name"],
    refused: &[("local", D::Bool(false))],
    apply_only: &[],
};
/// `test.nop`.
pub const TEST_NOP: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `test.succeed_without_changes`.
pub const TEST_SUCCEED_WITHOUT_CHANGES: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `test.succeed_with_changes`.
pub const TEST_SUCCEED_WITH_CHANGES: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `test.fail_without_changes`.
pub const TEST_FAIL_WITHOUT_CHANGES: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `test.fail_with_changes`.
pub const TEST_FAIL_WITH_CHANGES: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};
/// `test.show_notification`.
pub const TEST_SHOW_NOTIFICATION: Args = Args {
    honoured: &["name", "text"],
    refused: &[],
    apply_only: &[],
};
/// `test.mod_watch`.
pub const TEST_MOD_WATCH: Args = Args {
    honoured: &["name", "sfun"],
    refused: &[],
    apply_only: &[],
};
