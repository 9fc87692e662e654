//! `wheel.` reactions: Salt's `WheelClient.low` as the reactor calls it — `salt/wheel/<jid>/new`,
//! the wheel function, `salt/wheel/<jid>/ret`.
//!
//! The one place the reactor reaches the wheel modules: today salt-rs has none (as the clear
//! `wheel` command answers, `requests/clear.rs`), so every function answers Salt's
//! `'<fun>' is not available.`; once `crate::wheel` exists, [`dispatch`] calls
//! `crate::wheel::call(ctx, fun, args, kwargs, user)` instead.

use serde_json::{Map, Value, json};

use crate::runners::ctx::Ctx;

/// Run wheel function `fun` with `args`/`kwargs` for `user`, firing Salt's events.
pub(crate) async fn run(
    ctx: &Ctx,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
    user: &str,
) {
    let shared = &ctx.shared;
    let jid = shared.jids.next();
    let tag = format!("salt/wheel/{jid}");
    let mut fun_args = args.clone();
    if !kwargs.is_empty() {
        fun_args.push(Value::Object(kwargs.clone()));
    }
    let name = format!("wheel.{fun}");
    shared.events.fire(
        format!("{tag}/new"),
        json!({"fun": name, "fun_args": fun_args, "jid": jid, "user": user}),
    );
    let (ret, success) = match dispatch(ctx, fun, args, kwargs, user).await {
        Ok(v) => (v, true),
        Err(m) => (Value::String(m), false),
    };
    shared.events.fire(
        format!("{tag}/ret"),
        json!({"fun": name, "fun_args": fun_args, "jid": jid, "user": user,
               "return": ret, "success": success}),
    );
}

/// The wheel function itself (see the module doc).
async fn dispatch(
    _ctx: &Ctx,
    fun: &str,
    _args: Vec<Value>,
    _kwargs: Map<String, Value>,
    _user: &str,
) -> Result<Value, String> {
    tracing::warn!("wheel {fun}: salt-rs implements no wheel modules; is not available");
    Err(format!("'{fun}' is not available."))
}
