//! `salt.state` (Salt's `saltmod.state`): `state.sls`, `state.highstate` or `state.top` on the
//! target, the minions' runs gathered into one state return.

use salt_client::local::PublishRequest;
use serde_json::{Map, Value, json};

use super::saltmod::{
    SaltMod, check_result, fail_minions, new_ret, refuse_any, refused, target, text, truthy,
};

/// `_format_failure_detail`: one line on a minion that failed without a state result.
fn failure_detail(minion: &str, m_ret: &Value, no_return: bool) -> String {
    if no_return {
        return format!("Minion {minion} did not return a state result.");
    }
    match m_ret {
        Value::Array(a) => {
            let parts: Vec<String> = a
                .iter()
                .filter(|i| truthy(Some(i)))
                .map(salt_compat::py_json_str)
                .collect();
            if parts.is_empty() {
                format!("Minion {minion} returned an empty error list.")
            } else {
                format!("Minion {minion} returned errors: {}", parts.join("; "))
            }
        }
        Value::Object(_) => String::new(),
        other => format!(
            "Minion {minion} returned {} instead of a state result.",
            salt_compat::py_json_repr(other)
        ),
    }
}

impl SaltMod {
    /// `salt.state`.
    pub(super) fn state(
        &self,
        low: &Map<String, Value>,
        test: bool,
        failhard: bool,
        refuse: &[&str],
    ) -> Value {
        if let Some(r) = refuse_any(low, "salt.state", refuse) {
            return r;
        }
        let mut ret = new_ret(low);
        let Some(tgt) = target(low) else {
            return refused(low, "Missing parameter tgt for state salt.state");
        };
        let allow_fail = match low.get("allow_fail") {
            None | Some(Value::Null) => 0,
            Some(v) => match salt_compat::py_json_str(v).trim().parse::<usize>() {
                Ok(n) => n,
                Err(_) => {
                    return refused(low, "Passed invalid value for 'allow_fail', must be an int");
                }
            },
        };
        let mut arg: Vec<Value> = Vec::new();
        let fun = if truthy(low.get("highstate")) {
            "state.highstate"
        } else if truthy(low.get("top")) {
            arg.push(json!(text(low, "top").unwrap_or_default()));
            "state.top"
        } else if truthy(low.get("sls")) {
            let sls = match &low["sls"] {
                Value::Array(a) => a
                    .iter()
                    .map(salt_compat::py_json_str)
                    .collect::<Vec<_>>()
                    .join(","),
                v => salt_compat::py_json_str(v),
            };
            arg.push(json!(sls));
            "state.sls"
        } else {
            return refused(low, "No highstate or sls specified, no execution made");
        };
        let mut kw = Map::new();
        let given_test = low.get("test").filter(|v| !v.is_null());
        if given_test.is_some() || test {
            kw.insert("test".into(), given_test.cloned().unwrap_or(json!(test)));
        }
        if truthy(low.get("pillar")) {
            kw.insert("pillar".into(), low["pillar"].clone());
        }
        for k in ["pillarenv", "saltenv", "exclude"] {
            if let Some(v) = low.get(k).filter(|v| !v.is_null()) {
                kw.insert(k.into(), v.clone());
            }
        }
        kw.insert(
            "queue".into(),
            low.get("queue").cloned().unwrap_or(json!(false)),
        );
        match low.get("concurrent") {
            None | Some(Value::Null) => {
                kw.insert("concurrent".into(), json!(false));
            }
            Some(Value::Bool(b)) => {
                kw.insert("concurrent".into(), json!(b));
            }
            Some(_) => return refused(low, "Must pass in boolean for value of 'concurrent'"),
        }
        kw.insert("__kwarg__".into(), json!(true));
        arg.push(Value::Object(kw));
        let req = PublishRequest {
            tgt,
            tgt_type: text(low, "tgt_type").unwrap_or_else(|| "glob".into()),
            fun: fun.into(),
            arg,
            timeout: self.timeout(low),
            ret: text(low, "ret").unwrap_or_default(),
            ..Default::default()
        };
        let expect = low.get("expect_minions").is_none_or(|v| truthy(Some(v)));
        let (jid, cmd_ret) = match self.cmd_or_batch(low, &req, expect, failhard) {
            Ok(r) => r,
            Err(e) => return refused(low, &e),
        };
        if !cmd_ret.is_empty() && !jid.is_empty() {
            ret.insert("__jid__".into(), json!(jid));
        }
        let fail_minions = fail_minions(low, &mut ret);
        if cmd_ret.is_empty() && expect {
            ret.insert("result".into(), json!(false));
            ret.insert("comment".into(), json!("No minions returned"));
            return Value::Object(ret);
        }
        let mut changes = Map::new();
        let mut fail: Vec<String> = Vec::new();
        let mut fail_detail: Vec<(String, String)> = Vec::new();
        let mut no_change: Vec<String> = Vec::new();
        for (minion, mdata) in &cmd_ret {
            let failed = truthy(mdata.get("failed"));
            let m_ret = mdata.get("ret").cloned();
            let no_return = m_ret.is_none();
            let ok = !failed && m_ret.as_ref().is_some_and(|r| check_result(r, true));
            let m_ret = m_ret.unwrap_or(json!(false));
            if !ok {
                if !fail_minions.contains(minion) {
                    fail.push(minion.clone());
                    fail_detail.push((minion.clone(), failure_detail(minion, &m_ret, no_return)));
                }
                changes.insert(minion.clone(), m_ret);
                continue;
            }
            let changed = match &m_ret {
                Value::Object(states) => states
                    .values()
                    .any(|s| s.get("changes").is_some_and(|c| truthy(Some(c)))),
                _ => false,
            };
            if changed {
                changes.insert(minion.clone(), m_ret);
            } else {
                no_change.push(minion.clone());
            }
        }
        if !changes.is_empty() {
            ret.insert(
                "changes".into(),
                json!({"out": "highstate", "ret": changes.clone()}),
            );
        }
        if fail.len() > allow_fail {
            fail.sort();
            let mut comment = format!("Run failed on minions: {}", fail.join(", "));
            let details: Vec<&str> = fail
                .iter()
                .filter_map(|m| fail_detail.iter().find(|(id, _)| id == m))
                .map(|(_, d)| d.as_str())
                .filter(|d| !d.is_empty())
                .collect();
            if !details.is_empty() {
                comment = format!("{comment}\n{}", details.join("\n"));
            }
            ret.insert("result".into(), json!(false));
            ret.insert("comment".into(), json!(comment));
        } else {
            let mut comment = "States ran successfully.".to_owned();
            if !changes.is_empty() {
                let ids: Vec<&str> = changes.keys().map(String::as_str).collect();
                comment.push_str(&format!(" Updating {}.", ids.join(", ")));
            }
            if !no_change.is_empty() {
                comment.push_str(&format!(" No changes made to {}.", no_change.join(", ")));
            }
            ret.insert("comment".into(), json!(comment));
        }
        let testing = given_test.is_some_and(|t| truthy(Some(t))) || test;
        if testing && !changes.is_empty() && ret.get("result") == Some(&json!(true)) {
            ret.insert("result".into(), Value::Null);
        }
        Value::Object(ret)
    }
}
