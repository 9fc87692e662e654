//! `State.check_requisite`: the status of a chunk's requisites, from the returns so far
//! (`running`) and, for `prereq`, from the test runs of the pre-required states (`self.pre`).

use std::collections::HashSet;

use rmpv::Value;

use super::{Engine, Running, gen_tag};
use crate::requisite::{REQ_KINDS, req_list};
use crate::{get_str, set, truthy};
use salt_compat::map_get;

/// What the requisites of a chunk say.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Status {
    Met,
    Unmet,
    Fail,
    Change,
    OnFail,
    OnChanges,
    /// A `prereq` whose pre-required states would change nothing ("No changes detected").
    Pre,
}

/// Requisite kind -> the chunks it names.
pub(super) type Reqs = Vec<(String, Vec<Value>)>;

/// The requisite kinds `check_requisite` reads, in Salt's order (`prerequired` only with `pre`).
pub(super) fn kinds(pre: bool) -> Vec<&'static str> {
    let mut k = vec!["require", "watch", "prereq", "onfail", "onchanges"];
    if pre {
        k.push("prerequired");
    }
    k
}

impl Engine<'_> {
    /// `check_requisite(low, running, chunks, pre)`: `Err` when a requisite names nothing.
    pub(super) fn check_requisite(
        &self,
        low: &Value,
        running: &Running,
        chunks: &[Value],
        pre: bool,
    ) -> Result<(Status, Reqs), ()> {
        let mut low = low.clone();
        // watch without mod_watch becomes require
        if map_get(&low, "watch").is_some()
            && !self.has_mod_watch(get_str(&low, "state").unwrap_or(""))
        {
            let w = crate::pop(&mut low, "watch");
            if let Some(Value::Array(w)) = w {
                let mut r = match map_get(&low, "require") {
                    Some(Value::Array(a)) => a.clone(),
                    _ => Vec::new(),
                };
                r.extend(w);
                set(&mut low, "require", Value::Array(r));
            }
        }
        let present = REQ_KINDS
            .iter()
            .chain(&["prereq", "prerequired"])
            .any(|k| map_get(&low, k).is_some());
        if !present {
            return Ok((Status::Met, Vec::new()));
        }
        let mut reqs: Reqs = Vec::new();
        for kind in kinds(pre) {
            let mut found_chunks = Vec::new();
            for (rk, rv) in req_list(&low, kind) {
                if !self.find_required(chunks, &rk, &rv, &mut found_chunks) {
                    return Err(());
                }
            }
            reqs.push((kind.to_owned(), found_chunks));
        }
        let mut stats: HashSet<&str> = HashSet::new();
        for (kind, rchunks) in &reqs {
            // `prereq` looks at the test runs, everything else at the real ones.
            let run_dict = |tag: &str| {
                if kind == "prereq" {
                    self.pre.get(tag)
                } else {
                    running.get(tag)
                }
            };
            let mut req_stats: HashSet<&str> = HashSet::new();
            for c in rchunks {
                let Some(r) = run_dict(&gen_tag(c)) else {
                    req_stats.insert("unmet");
                    continue;
                };
                let result = map_get(r, "result");
                let changed = map_get(r, "changes").is_some_and(truthy);
                if kind == "onfail" {
                    if result == Some(&Value::Boolean(true)) {
                        req_stats.insert("onfail");
                        continue;
                    }
                } else if kind == "onchanges" {
                    if result == Some(&Value::Boolean(false)) || !changed {
                        req_stats.insert("onchanges");
                    } else {
                        req_stats.insert("onchangesmet");
                    }
                    continue;
                } else if result == Some(&Value::Boolean(false)) {
                    req_stats.insert("fail");
                    continue;
                }
                if kind == "watch" && changed {
                    req_stats.insert("change");
                    continue;
                }
                // Salt: a `None` result (a test run with changes) meets a prereq; any other
                // meets neither a prereq nor a prerequired ("pre": nothing would change).
                let none = matches!(result, None | Some(Value::Nil));
                if kind.starts_with("prereq") && none && kind == "prereq" {
                    req_stats.insert("premet");
                }
                if kind.starts_with("prereq") && !none {
                    if kind == "prereq" {
                        req_stats.insert("pre");
                    }
                } else if map_get(r, "__state_ran__") != Some(&Value::Boolean(false)) {
                    req_stats.insert("met");
                }
            }
            if kind == "onfail" {
                if (req_stats.contains("met") || req_stats.contains("change"))
                    && req_stats.contains("fail")
                {
                    req_stats.remove("fail");
                }
                if req_stats.contains("onchangesmet") {
                    req_stats.remove("onchanges");
                    req_stats.remove("fail");
                }
                if req_stats.contains("onfail") && req_stats.contains("met") {
                    req_stats.remove("onfail");
                }
            }
            stats.extend(req_stats);
        }
        let status = if stats.contains("unmet") {
            Status::Unmet
        } else if stats.contains("fail") {
            Status::Fail
        } else if stats.contains("pre") {
            if stats.contains("premet") {
                Status::Met
            } else {
                Status::Pre
            }
        } else if stats.contains("onfail") && !stats.contains("onchangesmet") {
            Status::OnFail
        } else if stats.contains("onchanges") && !stats.contains("onchangesmet") {
            Status::OnChanges
        } else if stats.contains("change") {
            Status::Change
        } else if stats.contains("onfail") {
            Status::OnFail
        } else {
            Status::Met
        };
        Ok((status, reqs))
    }
}
