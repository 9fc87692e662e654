//! State functions. Each returns Salt's return dict with Salt's key order.

pub mod checks;
pub mod cmd;
mod cmd_script;
pub mod cron;
pub mod file;
pub mod file_args;
mod file_edit;
mod file_http;
mod file_link;
mod file_recurse;
pub mod group;
pub mod host;
pub mod locale;
pub mod pkg;
mod ret;
pub mod retry;
pub mod service;
pub mod sysctl;
pub mod test;
pub mod user;

use rmpv::Value;

use crate::engine::Ctx;

/// Every state function salt-rs has.
pub const STATES: &[&str] = &[
    "cmd.run",
    "cmd.wait",
    "cmd.mod_watch",
    "cmd.script",
    "cron.present",
    "cron.absent",
    "cron.env_present",
    "cron.env_absent",
    "file.managed",
    "file.directory",
    "file.absent",
    "file.symlink",
    "file.append",
    "file.replace",
    "file.touch",
    "file.line",
    "file.recurse",
    "host.present",
    "host.absent",
    "locale.present",
    "locale.system",
    "timezone.system",
    "pkg.installed",
    "pkg.latest",
    "pkg.removed",
    "pkg.purged",
    "service.running",
    "service.dead",
    "service.enabled",
    "service.disabled",
    "service.mod_watch",
    "sysctl.present",
    "user.present",
    "user.absent",
    "group.present",
    "group.absent",
    "test.nop",
    "test.succeed_without_changes",
    "test.succeed_with_changes",
    "test.fail_without_changes",
    "test.fail_with_changes",
    "test.show_notification",
    "test.mod_watch",
];

/// Whether `state.fun` exists here.
pub fn available(full: &str) -> bool {
    STATES.contains(&full)
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
    match full.split_once('.') {
        Some(("test", f)) => test::call(ctx, f, low, watch),
        Some(("cmd", f)) => cmd::call(ctx, f, low),
        Some(("file", f)) => file::call(ctx, f, low),
        Some(("pkg", f)) => pkg::call(ctx, f, low),
        Some(("host", f)) => host::call(ctx, f, low),
        Some(("cron", f)) => cron::call(ctx, f, low),
        Some(("user" | "group", _)) => user::call(ctx, full, low),
        Some(("service", f)) => service::call(ctx, f, low),
        Some(("sysctl", f)) => sysctl::call(ctx, f, low),
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
