//! `test.*` states (`salt/states/test.py`).

use rmpv::Value;

use super::base_ret;
use super::ret;
use crate::engine::{Ctx, gen_tag};
use crate::{get_str, map, set, truthy};
use salt_compat::map_get;

fn changes() -> Value {
    map(vec![(
        "testing",
        map(vec![
            ("old", Value::from("Unchanged")),
            ("new", Value::from("Something pretended to change")),
        ]),
    )])
}

/// Dispatch `test.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value, watch: Option<&[Value]>) -> Value {
    let test = ctx.opts.test;
    let comment = |d: &str| {
        map_get(low, "comment")
            .cloned()
            .unwrap_or_else(|| Value::from(d))
    };
    let mut r = base_ret(low);
    match fun {
        "nop" => {
            set(&mut r, "result", Value::Boolean(true));
            ret::comment(&mut r, "Success!");
        }
        "succeed_without_changes" => {
            set(&mut r, "result", Value::Boolean(true));
            set(&mut r, "comment", comment("Success!"));
        }
        "fail_without_changes" => {
            set(&mut r, "comment", comment("Failure!"));
            if test {
                ret::comment(&mut r, "If we weren't testing, this would be a failure!");
            }
        }
        "succeed_with_changes" | "fail_with_changes" => {
            let ok = fun == "succeed_with_changes";
            set(&mut r, "result", Value::Boolean(ok));
            set(
                &mut r,
                "comment",
                comment(if ok { "Success!" } else { "Failure!" }),
            );
            set(&mut r, "changes", changes());
            if test {
                let outcome = if ok { "successful" } else { "failed" };
                let text = format!("If we weren't testing, this would be {outcome} with changes");
                set(&mut r, "result", Value::Nil);
                ret::comment(&mut r, text);
            }
        }
        "show_notification" => {
            set(&mut r, "result", Value::Boolean(true));
            set(
                &mut r,
                "comment",
                map_get(low, "text").cloned().unwrap_or(Value::Nil),
            );
        }
        "mod_watch" => {
            let mut has = Vec::new();
            for w in watch.unwrap_or(&[]) {
                if ctx.running_changes(&gen_tag(w)) {
                    has.push(Value::from(format!(
                        "{}: {}",
                        get_str(w, "state").unwrap_or(""),
                        salt_compat::py_str(map_get(w, "__id__").unwrap_or(&Value::Nil))
                    )));
                }
            }
            return map(vec![
                ("name", map_get(low, "name").cloned().unwrap_or(Value::Nil)),
                (
                    "result",
                    map_get(low, "result")
                        .cloned()
                        .unwrap_or(Value::Boolean(true)),
                ),
                (
                    "comment",
                    map_get(low, "comment")
                        .cloned()
                        .unwrap_or_else(|| Value::from("Watch statement fired.")),
                ),
                (
                    "changes",
                    map_get(low, "changes").cloned().unwrap_or_else(|| {
                        map(vec![("Requisites with changes", Value::Array(has))])
                    }),
                ),
            ]);
        }
        other => {
            ret::comment(&mut r, format!("'test.{other}' is not available."));
        }
    }
    let _ = truthy;
    r
}
