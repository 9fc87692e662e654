//! `locale.present`, `locale.system` (`salt/states/locale.py`) and `timezone.system`
//! (`salt/states/timezone.py`) for Debian. Checks and test runs as Salt's; making the
//! change (generating a locale, setting the system locale, the zone or the hardware clock)
//! is refused by name: salt-rs does not implement it yet.

use rmpv::Value;
use salt_execmods::locale::{self as sys, ZoneError};

use super::ret::{self, fail, would};
use crate::engine::Ctx;
use crate::truthy;
use salt_compat::{map_get, py_str};

/// Dispatch `locale.<fun>` and `timezone.<fun>`.
pub fn call(ctx: &Ctx<'_>, full: &str, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = ret::new(Value::from(name.as_str()), false, "");
    crate::set(&mut r, "result", Value::Nil);
    match full {
        "locale.present" => present(ctx, r, &name),
        "locale.system" => system(ctx, r, &name),
        "timezone.system" => timezone(ctx, r, &name, low),
        other => fail(r, format!("'{other}' is not available.")),
    }
}

fn not_implemented(r: Value, what: &str) -> Value {
    fail(
        r,
        format!("{what} is not supported by salt-rs (only checks and test=True)"),
    )
}

fn present(ctx: &Ctx<'_>, mut r: Value, name: &str) -> Value {
    match sys::avail(name) {
        Ok(true) => {
            crate::set(&mut r, "result", Value::Boolean(true));
            ret::comment(&mut r, format!("Locale {name} is already present"));
            r
        }
        Ok(false) if ctx.opts.test => would(r, format!("Locale {name} needs to be generated")),
        Ok(false) => not_implemented(r, "locale.present: generating a locale"),
        Err(e) => fail(r, format!("An exception occurred in this state: {e}")),
    }
}

fn system(ctx: &Ctx<'_>, mut r: Value, name: &str) -> Value {
    match sys::get_locale() {
        Ok(cur) if cur == name => {
            crate::set(&mut r, "result", Value::Boolean(true));
            ret::comment(&mut r, format!("System locale {name} already set"));
            r
        }
        Ok(_) if ctx.opts.test => would(r, format!("System locale {name} needs to be set")),
        Ok(_) => not_implemented(r, "locale.system: setting the system locale"),
        Err(e) => fail(r, format!("Failed to set system locale: {e}")),
    }
}

fn timezone(ctx: &Ctx<'_>, mut r: Value, name: &str, low: &Value) -> Value {
    let utc = map_get(low, "utc").is_none_or(truthy);
    let compzone = match sys::zone_compare(name) {
        Ok(c) => c,
        Err(e @ (ZoneError::Unknown(_) | ZoneError::System(_))) => {
            return fail(
                r,
                format!("Unable to compare desired timezone '{name}' to system timezone: {e}"),
            );
        }
    };
    // Salt lets get_hwclock's CommandExecutionError escape the state (an exception).
    let myutc = match sys::get_hwclock() {
        Ok(clock) => clock.as_deref() != Some("localtime"),
        Err(e) => {
            return fail(
                r,
                format!("An exception occurred in this state: CommandExecutionError: {e}"),
            );
        }
    };
    let mut messages = Vec::new();
    if compzone {
        crate::set(&mut r, "result", Value::Boolean(true));
        messages.push(format!("Timezone {name} already set"));
    }
    if utc && utc != myutc {
        crate::set(&mut r, "result", Value::Nil);
    } else if utc && utc == myutc {
        messages.push(format!("UTC already set to {name}"));
    }
    if map_get(&r, "result") == Some(&Value::Boolean(true)) {
        ret::comment(&mut r, messages.join(", "));
        return r;
    }
    if ctx.opts.test {
        let mut messages = Vec::new();
        if !compzone {
            messages.push(format!("Timezone {name} needs to be set"));
        }
        if utc && myutc != utc {
            messages.push(format!(
                "UTC needs to be set to {}",
                py_str(&Value::Boolean(utc))
            ));
        }
        ret::comment(&mut r, messages.join(", "));
        return r;
    }
    not_implemented(
        r,
        "timezone.system: setting the timezone or the hardware clock",
    )
}
