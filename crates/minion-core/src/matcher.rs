//! Target matching on the minion: does a published job address this minion?
//!
//! The matchers themselves live in `salt-matcher` (one implementation shared with the
//! master); this module decides with what the minion knows about itself: its id, grains
//! and the pillar it last received (`I@`/`J@` are false before the first pillar arrives).

use rmpv::Value;

pub use salt_matcher::{
    DEFAULT_DELIMITER, fnmatch, fnmatch_to_regex, list_match, pcre_match, subdict_match, traverse,
};

/// What the minion knows about itself for matching.
#[derive(Debug, Clone, Copy)]
pub struct MatchContext<'a> {
    /// The minion id.
    pub id: &'a str,
    /// The grains map.
    pub grains: &'a Value,
    /// The pillar last received from the master, if any.
    pub pillar: Option<&'a Value>,
}

/// Decide whether a job with `tgt` / `tgt_type` / `delimiter` targets this minion.
///
/// `tgt_type` defaults to `glob` when absent (Salt's behaviour). A target type the matcher
/// does not know is not matched (logged), as a Python minion does.
pub fn matches(
    ctx: MatchContext<'_>,
    tgt: &Value,
    tgt_type: Option<&str>,
    delimiter: Option<&str>,
) -> bool {
    let facts = salt_matcher::Facts {
        id: ctx.id,
        grains: Some(ctx.grains),
        pillar: ctx.pillar,
    };
    match salt_matcher::check(facts, tgt, tgt_type.unwrap_or("glob"), delimiter, &[]) {
        Ok(v) => v == Some(true),
        Err(e) => {
            tracing::warn!("Publish not matched: {e}");
            false
        }
    }
}

/// Salt Resources (3008) are not implemented by this minion: a pillar that declares some
/// (Salt's default `resource_pillar_key`, `resources`) is refused by name, once per pillar
/// received. Nothing is registered with the master and `T@` targets never match here.
pub fn refuse_resources(pillar: &Value) {
    let Some(Value::Map(types)) = salt_compat::map_get(pillar, "resources") else {
        return;
    };
    if types.is_empty() {
        return;
    }
    let names: Vec<String> = types.iter().map(|(k, _)| salt_compat::py_str(k)).collect();
    tracing::error!(
        "Salt Resources (pillar `resources`: {}) are not implemented by the salt-rs minion: \
         none is registered with the master and T@ targets do not match this minion; run a \
         Salt 3008 minion to manage resources",
        names.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compound_publishes_match() {
        let g = Value::Map(vec![(Value::from("os"), Value::from("Debian"))]);
        let p = Value::Map(vec![(Value::from("role"), Value::from("web"))]);
        let ctx = MatchContext {
            id: "web1",
            grains: &g,
            pillar: Some(&p),
        };
        let m = |t: &str, ty: &str| matches(ctx, &Value::from(t), Some(ty), None);
        assert!(m("G@os:Debian and web*", "compound"));
        assert!(!m("G@os:Debian and not web*", "compound"));
        assert!(m("web*", "glob"));
        assert!(m("role:web", "pillar"));
        assert!(m("I@role:w* and G@os:Debian", "compound"));
        let none = MatchContext {
            pillar: None,
            ..ctx
        };
        assert!(!matches(
            none,
            &Value::from("role:web"),
            Some("pillar"),
            None
        ));
        assert!(!m("x", "range"));
    }
}
