//! `wheel.` reactions: Salt's `WheelClient.cmd_async(low)` as the reactor calls it, through
//! the master's wheel modules (`crate::wheel::call`, which fires `salt/wheel/<jid>/new` and
//! `/ret`).

use serde_json::{Map, Value};

use crate::runners::ctx::Ctx;

/// Run wheel function `fun` with `args`/`kwargs` for `user` (on the blocking pool: key files,
/// the group's database).
pub(crate) async fn run(
    ctx: &Ctx,
    fun: &str,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
    user: &str,
) {
    let (shared, fun2, user2) = (ctx.shared.clone(), fun.to_owned(), user.to_owned());
    let done = tokio::task::spawn_blocking(move || {
        crate::wheel::call(&shared, &fun2, &args, &kwargs, &user2)
    })
    .await;
    if let Err(e) = done {
        tracing::error!("reactor: wheel.{fun} did not finish: {e}");
    }
}
