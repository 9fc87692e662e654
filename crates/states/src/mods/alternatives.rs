//! `alternatives.install`, `.remove`, `.auto`, `.set` (`salt/states/alternatives.py`) on
//! the `alternatives` execution module (`salt/modules/alternatives.py`): `update-alternatives`
//! (`alternatives` on RedHat) run as Salt runs it, the current choice read from the
//! `/etc/alternatives/<name>` link.

use std::path::Path;

use rmpv::Value;
use salt_compat::{map_get, py_str};

use super::args::Args;
use super::ret::comment;
use crate::engine::Ctx;
use crate::{map, set};

/// `alternatives.install`.
pub const INSTALL: Args = Args {
    honoured: &["name", "link", "path", "priority"],
    refused: &[],
    apply_only: &[],
};

/// `alternatives.remove` and `alternatives.set`.
pub const REMOVE: Args = Args {
    honoured: &["name", "path"],
    refused: &[],
    apply_only: &[],
};

/// `alternatives.set`.
pub const SET: Args = REMOVE;

/// `alternatives.auto`.
pub const AUTO: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};

/// Salt's `__virtual__`: the module loads where `/etc/alternatives` is.
const ALT_DIR: &str = "/etc/alternatives";

struct Module<'a> {
    cmd: &'a str,
}

/// `cmd.run_all`'s answer: (retcode, stdout, stderr).
type RunAll = (i32, String, String);

impl Module<'_> {
    fn new(ctx: &Ctx<'_>) -> Self {
        let redhat =
            map_get(&ctx.opts.grains, "os_family").and_then(Value::as_str) == Some("RedHat");
        Self {
            cmd: if redhat {
                "alternatives"
            } else {
                "update-alternatives"
            },
        }
    }

    fn run_all(&self, args: &[&str]) -> RunAll {
        let mut argv = vec![self.cmd];
        argv.extend_from_slice(args);
        let env: Vec<(&str, &str)> = salt_compat::LOCALE_VARS
            .iter()
            .filter(|v| std::env::var_os(v).is_none())
            .map(|v| (*v, "C"))
            .collect();
        match salt_execmods::run::run_env(&argv, &env, None) {
            Ok(o) => (o.retcode, o.stdout, o.stderr),
            Err(e) => (1, String::new(), e),
        }
    }

    /// `display`, `install`: stderr when it failed and said why, else stdout.
    fn out_or_err(&self, args: &[&str]) -> String {
        let (rc, out, err) = self.run_all(args);
        if rc > 0 && !err.is_empty() { err } else { out }
    }

    /// `remove`, `auto`, `set`: stderr when it failed, else stdout.
    fn out_unless_failed(&self, args: &[&str]) -> String {
        let (rc, out, err) = self.run_all(args);
        if rc > 0 { err } else { out }
    }

    fn display(&self, name: &str) -> String {
        self.out_or_err(&["--display", name])
    }

    /// `check_exists`: a line of `--display` starts with `path`.
    fn check_exists(&self, name: &str, path: &str) -> bool {
        let (rc, out, err) = self.run_all(&["--display", name]);
        if rc > 0 && !err.is_empty() {
            return false;
        }
        out.lines().any(|l| l.starts_with(path))
    }
}

/// `show_current`: the target of `/etc/alternatives/<name>`, `None` where Salt answers False.
fn show_current(name: &str) -> Option<String> {
    std::fs::read_link(Path::new(ALT_DIR).join(name))
        .ok()
        .map(|p| p.display().to_string())
}

fn arg(low: &Value, name: &str) -> Value {
    map_get(low, name).cloned().unwrap_or(Value::Nil)
}

fn install(ctx: &Ctx<'_>, low: &Value) -> Value {
    let (name, link, path, priority) = (
        super::name_of(low),
        arg(low, "link"),
        arg(low, "path"),
        arg(low, "priority"),
    );
    let (link_s, path_s, prio_s) = (py_str(&link), py_str(&path), py_str(&priority));
    let mut r = map(vec![
        ("name", Value::from(name.as_str())),
        ("link", link.clone()),
        ("path", path.clone()),
        ("priority", priority.clone()),
        ("result", Value::Boolean(true)),
        ("changes", Value::Map(vec![])),
        ("comment", Value::from("")),
    ]);
    let m = Module::new(ctx);
    if m.check_exists(&name, &path_s) {
        comment(
            &mut r,
            format!("Alternative {path_s} for {name} is already registered"),
        );
        return r;
    }
    if ctx.opts.test {
        comment(
            &mut r,
            format!("Alternative will be set for {name} to {path_s} with priority {prio_s}"),
        );
        set(&mut r, "result", Value::Nil);
        return r;
    }
    let out = m.out_or_err(&["--install", &link_s, &name, &path_s, &prio_s]);
    if !m.check_exists(&name, &path_s) {
        set(&mut r, "result", Value::Boolean(false));
        comment(
            &mut r,
            format!("Alternative for {name} not installed: {out}"),
        );
        return r;
    }
    let msg = if show_current(&name).as_deref() == Some(path_s.as_str()) {
        format!("Alternative for {name} set to path {path_s} with priority {prio_s}")
    } else {
        format!(
            "Alternative {path_s} for {name} registered with priority {prio_s} and not set to \
             default"
        )
    };
    comment(&mut r, msg);
    let changes = map(vec![
        ("name", Value::from(name.as_str())),
        ("link", link),
        ("path", path),
        ("priority", priority),
    ]);
    set(&mut r, "changes", changes);
    r
}

fn name_path_ret(name: &str, path: &Value) -> Value {
    map(vec![
        ("name", Value::from(name)),
        ("path", path.clone()),
        ("result", Value::Boolean(true)),
        ("changes", Value::Map(vec![])),
        ("comment", Value::from("")),
    ])
}

fn remove(ctx: &Ctx<'_>, low: &Value) -> Value {
    let (name, path) = (super::name_of(low), arg(low, "path"));
    let path_s = py_str(&path);
    let mut r = name_path_ret(&name, &path);
    let m = Module::new(ctx);
    if m.check_exists(&name, &path_s) {
        if ctx.opts.test {
            comment(&mut r, format!("Alternative for {name} will be removed"));
            set(&mut r, "result", Value::Nil);
            return r;
        }
        m.out_unless_failed(&["--remove", &name, &path_s]);
        match show_current(&name) {
            Some(current) => {
                comment(
                    &mut r,
                    format!("Alternative for {name} removed. Falling back to path {current}"),
                );
                set(&mut r, "changes", map(vec![("path", Value::from(current))]));
            }
            None => comment(&mut r, format!("Alternative for {name} removed")),
        }
        return r;
    }
    match show_current(&name) {
        Some(current) => comment(
            &mut r,
            format!("Alternative for {name} is set to it's default path {current}"),
        ),
        None => {
            set(&mut r, "result", Value::Boolean(false));
            comment(&mut r, format!("Alternative for {name} doesn't exist"));
        }
    }
    r
}

fn auto(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = map(vec![
        ("name", Value::from(name.as_str())),
        ("result", Value::Boolean(true)),
        ("comment", Value::from("")),
        ("changes", Value::Map(vec![])),
    ]);
    let m = Module::new(ctx);
    let display = m.display(&name);
    let Some(first) = display.lines().next() else {
        set(&mut r, "result", Value::Boolean(false));
        comment(
            &mut r,
            "An exception occurred in this state: IndexError: list index out of range",
        );
        return r;
    };
    if first.ends_with(" auto mode") {
        comment(&mut r, format!("{name} already in auto mode"));
        return r;
    }
    if ctx.opts.test {
        comment(&mut r, format!("{name} will be put in auto mode"));
        set(&mut r, "result", Value::Nil);
        return r;
    }
    let out = m.out_unless_failed(&["--auto", &name]);
    set(&mut r, "changes", map(vec![("result", Value::from(out))]));
    r
}

fn set_(ctx: &Ctx<'_>, low: &Value) -> Value {
    let (name, path) = (super::name_of(low), arg(low, "path"));
    let path_s = py_str(&path);
    let mut r = name_path_ret(&name, &path);
    if show_current(&name).as_deref() == Some(path_s.as_str()) {
        comment(
            &mut r,
            format!("Alternative for {name} already set to {path_s}"),
        );
        return r;
    }
    let m = Module::new(ctx);
    if !m.display(&name).lines().any(|l| l.starts_with(&path_s)) {
        set(&mut r, "result", Value::Boolean(false));
        comment(
            &mut r,
            format!("Alternative {path_s} for {name} doesn't exist"),
        );
        return r;
    }
    if ctx.opts.test {
        comment(
            &mut r,
            format!("Alternative for {name} will be set to path {path_s}"),
        );
        set(&mut r, "result", Value::Nil);
        return r;
    }
    m.out_unless_failed(&["--set", &name, &path_s]);
    match show_current(&name) {
        Some(current) if current == path_s => {
            comment(
                &mut r,
                format!("Alternative for {name} set to path {current}"),
            );
            set(&mut r, "changes", map(vec![("path", Value::from(current))]));
        }
        _ => comment(&mut r, format!("Alternative for {name} not updated")),
    }
    r
}

/// Dispatch `alternatives.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    if !Path::new(ALT_DIR).is_dir() {
        let mut r = super::base_ret(low);
        comment(&mut r, format!("'alternatives.{fun}' is not available."));
        return r;
    }
    match fun {
        "install" => install(ctx, low),
        "remove" => remove(ctx, low),
        "auto" => auto(ctx, low),
        "set" => set_(ctx, low),
        other => {
            let mut r = super::base_ret(low);
            comment(&mut r, format!("'alternatives.{other}' is not available."));
            r
        }
    }
}
