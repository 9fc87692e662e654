//! The functions of `salt-execmods` (`pkg`, `service`, `user`, `group`, `cron`, `hosts`,
//! `file`, `network`, `disk`, `status`) as this minion's execution modules: the default
//! [`Provider`](super::Provider).

use rmpv::Value;

use super::{ExecContext, OwnedSpec, Provider};

/// `salt-execmods` behind the registry's [`Provider`] interface.
#[derive(Debug, Default)]
pub struct Execmods;

impl Provider for Execmods {
    fn functions(&self) -> Vec<&'static str> {
        salt_execmods::FUNCTIONS.to_vec()
    }

    fn call(
        &self,
        fun: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
        ctx: &ExecContext,
    ) -> Option<Result<Value, String>> {
        let c = salt_execmods::Ctx {
            opts: &ctx.opts,
            grains: &ctx.grains,
        };
        // Bound to Salt's parameter names; an argument salt-rs does not honour is refused.
        let (args, kwargs) = match salt_execmods::sigs::bind(fun, args, kwargs) {
            Ok(bound) => bound,
            Err(e) => return Some(Err(format!("ERROR: {e}"))),
        };
        // Salt's CommandExecutionError text on the minion: "ERROR: <message>".
        salt_execmods::call(fun, &args, &kwargs, &c).map(|r| r.map_err(|e| format!("ERROR: {e}")))
    }

    fn signature(&self, fun: &str) -> Option<OwnedSpec> {
        salt_execmods::sigs::signature(fun).map(|s| OwnedSpec {
            params: s.names(),
            required: s.required(),
            varargs: s.varargs,
            varkw: s.varkw,
        })
    }
}
