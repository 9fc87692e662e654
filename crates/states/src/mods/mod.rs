//! State functions. Each returns Salt's return dict with Salt's key order.

pub mod alternatives;
pub mod args;
pub mod args_table;
pub mod checks;
pub mod cmd;
mod cmd_script;
pub mod cron;
pub mod file;
pub mod file_args;
mod file_block;
mod file_edit;
mod file_http;
mod file_link;
mod file_recurse;
mod file_serialize;
pub mod group;
pub mod host;
pub mod ini;
pub mod locale;
mod module_run;
pub mod pkg;
pub mod pkg_hold;
mod pkg_version;
pub mod pkgrepo;
mod ret;
pub mod retry;
pub mod service;
pub mod ssh_auth;
mod ssh_auth_source;
mod ssh_keys;
pub mod ssh_known_hosts;
pub mod sysctl;
pub mod test;
pub mod user;

use rmpv::Value;

use crate::engine::Ctx;
use args::Args;
use args_table as T;

/// Every state function salt-rs has, with its argument policy (`args_table`).
pub const REGISTRY: &[(&str, &Args)] = &[
    ("alternatives.install", &alternatives::INSTALL),
    ("alternatives.remove", &alternatives::REMOVE),
    ("alternatives.auto", &alternatives::AUTO),
    ("alternatives.set", &alternatives::SET),
    ("cmd.run", &T::CMD_RUN),
    ("cmd.wait", &T::CMD_WAIT),
    ("cmd.mod_watch", &T::CMD_MOD_WATCH),
    ("cmd.script", &T::CMD_SCRIPT),
    ("cron.present", &T::CRON_PRESENT),
    ("cron.absent", &T::CRON_ABSENT),
    ("cron.env_present", &T::CRON_ENV_PRESENT),
    ("cron.env_absent", &T::CRON_ENV_ABSENT),
    ("file.managed", &T::FILE_MANAGED),
    ("file.directory", &T::FILE_DIRECTORY),
    ("file.absent", &T::FILE_ABSENT),
    ("file.symlink", &T::FILE_SYMLINK),
    ("file.append", &T::FILE_APPEND),
    ("file.replace", &T::FILE_REPLACE),
    ("file.touch", &T::FILE_TOUCH),
    ("file.line", &T::FILE_LINE),
    ("file.recurse", &T::FILE_RECURSE),
    ("file.blockreplace", &file_block::FILE_BLOCKREPLACE),
    ("file.comment", &file_block::FILE_COMMENT),
    ("file.uncomment", &file_block::FILE_UNCOMMENT),
    ("file.serialize", &file_serialize::FILE_SERIALIZE),
    ("module.run", &module_run::MODULE_RUN),
    ("module.wait", &module_run::MODULE_WAIT),
    ("module.watch", &module_run::MODULE_WAIT),
    ("module.mod_watch", &module_run::MODULE_RUN),
    ("host.present", &T::HOST_PRESENT),
    ("host.absent", &T::HOST_ABSENT),
    ("ini.options_present", &ini::OPTIONS_PRESENT),
    ("ini.options_absent", &ini::OPTIONS_ABSENT),
    ("ini.sections_present", &ini::SECTIONS_PRESENT),
    ("ini.sections_absent", &ini::SECTIONS_ABSENT),
    ("locale.present", &T::LOCALE_PRESENT),
    ("locale.system", &T::LOCALE_SYSTEM),
    ("timezone.system", &T::TIMEZONE_SYSTEM),
    ("pkg.installed", &T::PKG_INSTALLED),
    ("pkg.latest", &T::PKG_LATEST),
    ("pkg.removed", &T::PKG_REMOVED),
    ("pkg.purged", &T::PKG_PURGED),
    ("pkg.held", &pkg_hold::PKG_HELD),
    ("pkg.unheld", &pkg_hold::PKG_UNHELD),
    ("pkgrepo.managed", &pkgrepo::PKGREPO_MANAGED),
    ("pkgrepo.absent", &pkgrepo::PKGREPO_ABSENT),
    ("service.running", &T::SERVICE_RUNNING),
    ("service.dead", &T::SERVICE_DEAD),
    ("service.enabled", &T::SERVICE_ENABLED),
    ("service.disabled", &T::SERVICE_DISABLED),
    ("service.mod_watch", &T::SERVICE_MOD_WATCH),
    ("sysctl.present", &T::SYSCTL_PRESENT),
    ("ssh_auth.present", &ssh_auth::PRESENT),
    ("ssh_auth.absent", &ssh_auth::ABSENT),
    ("ssh_known_hosts.present", &ssh_known_hosts::PRESENT),
    ("ssh_known_hosts.absent", &ssh_known_hosts::ABSENT),
    ("user.present", &T::USER_PRESENT),
    ("user.absent", &T::USER_ABSENT),
    ("group.present", &T::GROUP_PRESENT),
    ("group.absent", &T::GROUP_ABSENT),
    ("test.nop", &T::TEST_NOP),
    (
        "test.succeed_without_changes",
        &T::TEST_SUCCEED_WITHOUT_CHANGES,
    ),
    ("test.succeed_with_changes", &T::TEST_SUCCEED_WITH_CHANGES),
    ("test.fail_without_changes", &T::TEST_FAIL_WITHOUT_CHANGES),
    ("test.fail_with_changes", &T::TEST_FAIL_WITH_CHANGES),
    ("test.show_notification", &T::TEST_SHOW_NOTIFICATION),
    ("test.mod_watch", &T::TEST_MOD_WATCH),
];

/// Whether `state.fun` exists here.
pub fn available(full: &str) -> bool {
    policy(full).is_some()
}

/// The argument policy of `full` (`state.fun`).
pub fn policy(full: &str) -> Option<&'static Args> {
    REGISTRY.iter().find(|(n, _)| *n == full).map(|(_, a)| *a)
}

/// Whether a state module has `mod_watch`.
pub fn has_mod_watch(state: &str) -> bool {
    available(&format!("{state}.mod_watch"))
}

/// The `name` argument as text.
pub fn name_of(low: &Value) -> String {
    salt_compat::py_str(salt_compat::map_get(low, "name").unwrap_or(&Value::Nil))
}

/// `{name, changes, result, comment}` (the common initial return).
pub fn base_ret(low: &Value) -> Value {
    let name = salt_compat::map_get(low, "name")
        .cloned()
        .unwrap_or(Value::Nil);
    ret::new(name, false, "")
}

/// Call `full` (`state.fun`) for `low`; `watch` are the watched chunks for `mod_watch`.
pub fn call(ctx: &Ctx<'_>, full: &str, low: &Value, watch: Option<&[Value]>) -> Value {
    if let Some(msg) = policy(full).and_then(|a| {
        args::invalid_keywords(full, a, low).or_else(|| args::refused(full, a, low, ctx.opts.test))
    }) {
        let mut r = base_ret(low);
        ret::comment(&mut r, msg);
        return r;
    }
    match full.split_once('.') {
        Some(("test", f)) => test::call(ctx, f, low, watch),
        Some(("alternatives", f)) => alternatives::call(ctx, f, low),
        Some(("cmd", f)) => cmd::call(ctx, f, low),
        Some(("file", f)) => file::call(ctx, f, low),
        Some(("pkg", f @ ("held" | "unheld"))) => pkg_hold::call(ctx, f, low),
        Some(("pkg", f)) => pkg::call(ctx, f, low),
        Some(("pkgrepo", f)) => pkgrepo::call(ctx, f, low),
        Some(("host", f)) => host::call(ctx, f, low),
        Some(("cron", f)) => cron::call(ctx, f, low),
        Some(("user" | "group", _)) => user::call(ctx, full, low),
        Some(("service", f)) => service::call(ctx, f, low),
        Some(("sysctl", f)) => sysctl::call(ctx, f, low),
        Some(("ini", f)) => ini::call(ctx, f, low),
        Some(("module", f)) => module_run::call(ctx, f, low),
        Some(("ssh_auth", f)) => ssh_auth::call(ctx, f, low),
        Some(("ssh_known_hosts", f)) => ssh_known_hosts::call(ctx, f, low),
        Some(("locale" | "timezone", _)) => locale::call(ctx, full, low),
        _ if ctx.opts.extra.has(full) => match &ctx.opts.extra.0 {
            Some(h) => h.call(full, low, ctx.opts),
            None => base_ret(low),
        },
        _ => {
            let mut r = base_ret(low);
            ret::comment(&mut r, format!("'{full}' is not available."));
            r
        }
    }
}
