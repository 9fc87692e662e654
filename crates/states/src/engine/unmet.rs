//! The `unmet` and `fail` branches of `State.call_chunk`: run what a chunk requires (and,
//! for `prereq`, test-run what it pre-requires) before it, or say why it did not run.

use rmpv::Value;

use super::check::Status;
use super::{Engine, Running, gen_tag};
use crate::requisite::req_list;
use crate::{empty, get_str, set, truthy};
use salt_compat::map_get;
use salt_compat::py_str;

impl Engine<'_> {
    /// Salt's `status == "unmet"`: report requisites naming nothing, else call each required
    /// chunk not yet run (a pre-required one marked `__prereq__`: a test run), then this chunk
    /// again (a chunk itself marked `__prereq__`: its test run). True when failhard stops.
    pub(super) fn unmet(
        &mut self,
        low: &Value,
        running: &mut Running,
        chunks: &[Value],
        depth: usize,
    ) -> bool {
        let tag = gen_tag(low);
        let is_pre = self.prereq_mark.contains(&tag);
        let mut lost: Vec<(&str, String, String)> = Vec::new();
        let mut to_run: Vec<Value> = Vec::new();
        for kind in super::check::kinds(!is_pre) {
            for (rk, rv) in req_list(low, kind) {
                let before = to_run.len();
                if !self.find_required(chunks, &rk, &rv, &mut to_run) {
                    lost.push((kind, rk.clone(), rv));
                }
                for c in &to_run[before..] {
                    if kind == "prereq" {
                        self.prereq_mark.insert(gen_tag(c));
                    } else if kind == "prerequired" && rk != "sls" {
                        self.prerequired_mark.insert(gen_tag(c));
                    }
                }
            }
        }
        if !lost.is_empty() {
            let mut comment = String::from("The following requisites were not found:\n");
            let mut last = "";
            for (kind, rk, rv) in &lost {
                if kind != &last {
                    comment.push_str(&format!("{}{kind}:\n", " ".repeat(19)));
                    last = kind;
                }
                comment.push_str(&format!("{}{rk}: {rv}\n", " ".repeat(23)));
            }
            let v = self.not_run(false, comment, None);
            let v = self.tail(v, low);
            if is_pre {
                self.pre.insert(tag, v);
            } else {
                running.insert(tag, v);
            }
            self.run_num += 1;
            return false;
        }
        for c in &to_run {
            let ctag = gen_tag(c);
            if running.contains(&ctag) {
                continue;
            }
            if self.active.contains(&ctag) {
                if self.prerequired_mark.contains(&ctag) {
                    // Salt's "Prereq recursive": this chunk's test run, filed under `ctag`.
                    if !self.pre.contains_key(&tag) {
                        self.prereq_mark.insert(tag.clone());
                        let r = self.call(low, running, None);
                        self.pre.insert(ctag, r);
                    }
                    return false;
                }
                let v = self.recursive();
                running.insert(tag.clone(), self.tail(v, low));
                self.run_num += 1;
                return false;
            }
            if self.call_chunk(c, running, chunks, 0) || self.check_failhard(c, running) {
                return true;
            }
        }
        if self.prereq_mark.contains(&tag) {
            let status = self.check_requisite(low, running, chunks, false);
            let mut r = self.call(low, running, None);
            if !map_get(&r, "changes").is_some_and(truthy)
                && matches!(status, Ok((Status::Change, _)))
            {
                set(
                    &mut r,
                    "changes",
                    crate::map(vec![("watch", Value::from("watch"))]),
                );
                set(&mut r, "result", Value::Nil);
            }
            self.pre.insert(tag, r);
        } else if depth + 1 >= 20 {
            let v = self.recursive();
            running.insert(tag.clone(), self.tail(v, low));
        } else if self.call_chunk(low, running, chunks, depth + 1) {
            return true;
        }
        self.check_failhard(low, running)
    }

    /// Salt's `status == "fail"`. A chunk test-run as pre-required answers that test run
    /// (its changes emptied: they were never made); any other names the requisites that
    /// failed (their test runs first: `self.pre.get(tag, running.get(tag))`).
    pub(super) fn failed(
        &mut self,
        low: &Value,
        reqs: &[(String, Vec<Value>)],
        running: &mut Running,
    ) {
        let tag = gen_tag(low);
        if let Some(mut v) = self.pre.get(&tag).cloned() {
            if map_get(&v, "changes").is_some_and(truthy) {
                set(&mut v, "changes", empty());
            }
            set(&mut v, "__run_num__", Value::from(self.run_num));
            let v = self.tail(v, low);
            self.pre.insert(tag.clone(), v.clone());
            running.insert(tag, v);
        } else {
            let mut failed: Vec<String> = Vec::new();
            for (_, rl) in reqs {
                for rlow in rl {
                    let rtag = gen_tag(rlow);
                    let Some(r) = self.pre.get(&rtag).or_else(|| running.get(&rtag)) else {
                        continue;
                    };
                    if map_get(r, "result") == Some(&Value::Boolean(false)) {
                        let k = format!(
                            "{}.{}",
                            get_str(rlow, "__sls__").unwrap_or("None"),
                            py_str(map_get(rlow, "__id__").unwrap_or(&Value::Nil))
                        );
                        if !failed.contains(&k) {
                            failed.push(k);
                        }
                    }
                }
            }
            let comment = format!("One or more requisite failed: {}", failed.join(", "));
            let v = self.not_run(false, comment, None);
            let v = self.tail(v, low);
            self.pre.insert(tag.clone(), v.clone());
            running.insert(tag, v);
        }
        self.run_num += 1;
    }
}
