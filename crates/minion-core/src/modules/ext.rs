//! The functions of `salt-execmods` (`pkg`, `service`, `user`, `group`, `cron`, `hosts`,
//! `file`, `network`, `disk`, `status`) as this minion's execution modules: the default
//! [`Provider`](super::Provider).

use rmpv::Value;

use super::{ExecContext, Provider};

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
        // Salt's CommandExecutionError text on the minion: "ERROR: <message>".
        salt_execmods::call(fun, args, kwargs, &c).map(|r| r.map_err(|e| format!("ERROR: {e}")))
    }
}
