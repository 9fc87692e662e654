//! The two ways Salt's ACL code matches a name, with Python's `re` semantics.
//!
//! * [`match_check`]: `CkMinions.match_check(regex, fun)`: `re.match(regex, fun)`, i.e. the
//!   regex anchored at the start of the name only (`test.ping` allows `test.pingx`).
//! * [`expr_match`]: `salt.utils.stringutils.expr_match(line, expr)`: `fnmatch(line, expr)`,
//!   else `re.match(r"\A{expr}\Z", line)`, the expression pasted into the pattern as is (an
//!   alternation `a|b` is not grouped, exactly as Salt builds it).
//!
//! Python regexes are compiled with the `regex` crate after turning Python's `\Z` into `\z`.
//! A pattern the `regex` crate refuses (look-around, back-references) matches nothing: an ACL
//! we cannot read denies rather than allows, and the refusal is logged once per check with the
//! pattern, as Salt logs "Invalid regular expression".

use regex::Regex;
use salt_compat::fnmatch;

/// Compile a Python regex for `re.match` (anchored at the start).
fn compile_match(pattern: &str) -> Option<Regex> {
    let translated = translate(pattern);
    match Regex::new(&format!(r"\A(?:{translated})")) {
        Ok(re) => Some(re),
        Err(_) => {
            tracing::error!("Invalid regular expression: {pattern}");
            None
        }
    }
}

/// Python's `\Z` (end of string) is Rust's `\z`; everything else is common ground.
fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('Z') => out.push_str("\\z"),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `CkMinions.match_check(regex, fun)` for one function name: `re.match(regex, fun)`.
pub fn match_check(regex: &str, fun: &str) -> bool {
    compile_match(regex).is_some_and(|re| re.is_match(fun))
}

/// `CkMinions.match_check(regex, funs)` for a list of names: all of them must match, and an
/// empty list matches nothing (`vals and all(vals)`).
pub fn match_check_all(regex: &str, funs: &[&str]) -> bool {
    match compile_match(regex) {
        Some(re) => !funs.is_empty() && funs.iter().all(|f| re.is_match(f)),
        None => false,
    }
}

/// `salt.utils.stringutils.expr_match(line, expr)`.
pub fn expr_match(line: &str, expr: &str) -> bool {
    ExprMatch::new(expr).is_match(line)
}

/// [`expr_match`] against one expression many times (the regex compiled once).
#[derive(Clone, Debug)]
pub struct ExprMatch {
    expr: String,
    re: Option<Regex>,
}

impl ExprMatch {
    /// Compile `expr`; one that is no valid regex matches as a glob only (Salt skips it
    /// silently).
    pub fn new(expr: &str) -> Self {
        // Salt builds `\A{expr}\Z` and re.match()es it.
        let pattern = format!(r"\A(?:\A{}\z)", translate(expr));
        Self {
            expr: expr.to_owned(),
            re: Regex::new(&pattern).ok(),
        }
    }

    /// Whether `line` matches, as `expr_match(line, expr)`.
    pub fn is_match(&self, line: &str) -> bool {
        fnmatch(line, &self.expr) || self.re.as_ref().is_some_and(|re| re.is_match(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_is_anchored_at_the_start_only() {
        assert!(match_check("test.ping", "test.ping"));
        assert!(match_check("test.ping", "test.pingx"));
        assert!(match_check("test.ping", "testXping"));
        assert!(!match_check("ping", "test.ping"));
        assert!(match_check(".*", ""));
        assert!(!match_check("test.ping\\Z", "test.pingx"));
        assert!(!match_check("(?=x)", "x"), "look-ahead refused: denies");
    }

    #[test]
    fn match_all_of_a_list() {
        assert!(match_check_all("test\\.", &["test.ping", "test.echo"]));
        assert!(!match_check_all("test\\.", &["test.ping", "cmd.run"]));
        assert!(!match_check_all(".*", &[]));
    }

    #[test]
    fn expr_match_as_salt_builds_it() {
        assert!(expr_match("fred", "fred"));
        assert!(expr_match("fred", "fr*"));
        assert!(expr_match("fred", "f.*"));
        assert!(!expr_match("fredx", "fred"));
        // `\Aalice|bob\Z`: the first branch is anchored at the start only.
        assert!(expr_match("alicexyz", "alice|bob"));
        assert!(expr_match("bob", "alice|bob"));
        assert!(!expr_match("xbob", "alice|bob"));
    }
}
