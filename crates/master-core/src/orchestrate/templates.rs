//! The `salt` dunder of orchestration templates on the master: `saltutil.runner` (Salt's
//! `salt/modules/saltutil.py` `runner`, as the master minion runs it), so an orchestration
//! can read e.g. `salt.saltutil.runner('mine.get', tgt=..., fun=...)` while it renders.
//! Other execution functions are not on the master here: the renderer names them.

use std::sync::Arc;

use salt_client::local::RunnerRequest;
use salt_compat::json::{json_to_msgpack, msgpack_to_json};
use serde_json::{Map, Value};

use super::saltmod::SaltMod;

/// Execution functions orchestration templates reach.
pub(crate) struct MasterFuns(pub Arc<SaltMod>);

impl salt_render::SaltFunctions for MasterFuns {
    fn call(
        &self,
        fun: &str,
        args: &[rmpv::Value],
        kwargs: &[(String, rmpv::Value)],
    ) -> Option<Result<rmpv::Value, String>> {
        (fun == "saltutil.runner").then(|| self.runner(args, kwargs))
    }

    fn has(&self, fun: &str) -> bool {
        fun == "saltutil.runner"
    }
}

impl MasterFuns {
    /// `saltutil.runner(name, arg=None, kwarg=None, full_return=False, saltenv='base',
    /// jid=None, **kwargs)`: the runner's return.
    fn runner(
        &self,
        args: &[rmpv::Value],
        kwargs: &[(String, rmpv::Value)],
    ) -> Result<rmpv::Value, String> {
        const PARAMS: [&str; 6] = ["name", "arg", "kwarg", "full_return", "saltenv", "jid"];
        let mut named: Vec<Option<Value>> = vec![None; PARAMS.len()];
        for (slot, v) in named.iter_mut().zip(args) {
            *slot = Some(msgpack_to_json(v));
        }
        let mut kw = Map::new();
        for (k, v) in kwargs {
            match PARAMS.iter().position(|p| p == k) {
                Some(i) => named[i] = Some(msgpack_to_json(v)),
                // `clean_kwargs`: the `__`-keys are not the runner's.
                None if !k.starts_with("__") => {
                    kw.insert(k.clone(), msgpack_to_json(v));
                }
                None => {}
            }
        }
        let name = match &named[0] {
            Some(n) => salt_compat::py_json_str(n),
            None => return Err("runner() missing 1 required positional argument: 'name'".into()),
        };
        if matches!(&named[3], Some(v) if super::saltmod::truthy(Some(v))) {
            return Err("saltutil.runner: 'full_return' is not supported by salt-rs".into());
        }
        let mut arg: Vec<Value> = match named[1].take() {
            Some(Value::Array(a)) => a,
            Some(Value::Null) | None => Vec::new(),
            Some(other) => vec![other],
        };
        if let Some(Value::Object(extra)) = named[2].take() {
            kw.extend(extra);
        }
        if !kw.is_empty() {
            kw.insert("__kwarg__".into(), Value::Bool(true));
            arg.push(Value::Object(kw));
        }
        let hook = &self.0;
        let req = RunnerRequest {
            fun: name,
            arg,
            timeout: None,
            auth: None,
        };
        let ctx = crate::runners::ctx::Ctx {
            shared: hook.shared.clone(),
            publisher: hook.publisher.clone(),
            stop: hook.stop.clone(),
            console: hook.console.clone(),
        };
        hook.rt
            .block_on(Box::pin(crate::runners::call(
                &ctx, &req, &hook.user, true, None,
            )))
            .map(|v| json_to_msgpack(&v))
    }
}
