//! Compound targets (`-C`, `salt/matchers/compound_match.py`) and node groups
//! (`salt/utils/minions.py` `nodegroup_comp`).
//!
//! Words are split on whitespace; `and`, `or`, `not`, `(`, `)` are operators only as whole
//! words (as in Salt); `not` right after an operand means `and not`. Each other word is
//! `X@pattern` (`G`, `P`, `I`, `J`, `L`, `S`, `E`, `N`, and 3008's `T`, `M`; `G`/`P`/`I`/`J`
//! may name a delimiter as `G|@os|Debian`) or a glob on the id. Evaluation is Python's
//! precedence (`not` > `and` > `or`) over tri-state values.
//!
//! A minion manages no resources here (salt-rs's minion refuses them), so `T@...` is false
//! for it, and `M@<id>` is its id exactly (`managing_minion_match.py`). A resource (on the
//! master) is evaluated by [`crate::resource`]'s rules.

use rmpv::Value;

#[cfg(test)]
use crate::Facts;
use crate::NodeGroups;

/// A target that cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompoundError {
    /// Not a well-formed compound expression.
    #[error("invalid compound target: {0}")]
    Invalid(String),
    /// A target engine or type salt-rs does not implement.
    #[error("target type {0:?} is not supported by salt-rs")]
    UnsupportedType(String),
    /// `N@name` or `-N name` for a node group that is not configured.
    #[error("unknown nodegroup {0:?}")]
    UnknownNodegroup(String),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    And,
    Or,
    Not,
    Open,
    Close,
    /// An operand: the index of its [`Word`].
    Word(usize),
}

/// One operand of a compound: `X@pattern` (or `X<delim>@pattern`), or a glob on the id.
#[derive(Debug, Clone)]
pub(crate) struct Word {
    pub engine: Option<char>,
    pub delim: Option<String>,
    pub pattern: String,
}

/// A parsed compound expression over its words.
#[derive(Debug, Clone)]
enum Expr {
    Word(usize),
    Not(Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
}

/// A compound expression parsed once: its operands and their structure.
#[derive(Debug, Clone)]
pub(crate) struct Compound {
    pub words: Vec<Word>,
    expr: Expr,
    /// For a resource, `not X` is false (Salt: `all_minions() - X`, keys only).
    resource: bool,
}

/// Evaluate a compound string for a minion.
#[cfg(test)]
fn eval(facts: Facts<'_>, tgt: &str, groups: &NodeGroups) -> Result<Option<bool>, CompoundError> {
    let words = tgt.split_whitespace().map(str::to_owned).collect();
    let compiled = crate::CompiledTarget::compound(words, groups)?;
    Ok(compiled.eval(facts.id, facts.grains, facts.pillar))
}

/// Parse a compound expression given as words (node groups expanded). Whether the
/// expression is valid does not depend on the data, so every error is found here. For a
/// minion, an engine salt-rs does not implement is refused; a resource matches no word of
/// such an engine ([`crate::resource`]).
pub(crate) fn parse(
    words: Vec<String>,
    groups: &NodeGroups,
    resource: bool,
) -> Result<Compound, CompoundError> {
    let invalid = || CompoundError::Invalid(words.join(" "));
    let mut toks: Vec<Tok> = Vec::new();
    let mut operands: Vec<Word> = Vec::new();
    let mut queue: std::collections::VecDeque<String> = words.iter().cloned().collect();
    let mut expansions = 0;
    while let Some(word) = queue.pop_front() {
        let op = match word.as_str() {
            "and" => Some(Tok::And),
            "or" => Some(Tok::Or),
            "not" => Some(Tok::Not),
            "(" => Some(Tok::Open),
            ")" => Some(Tok::Close),
            _ => None,
        };
        if let Some(op) = op {
            match toks.last() {
                Some(Tok::Open) if matches!(op, Tok::And | Tok::Or) => return Err(invalid()),
                Some(last) if op == Tok::Not && !matches!(last, Tok::And | Tok::Or | Tok::Open) => {
                    toks.push(Tok::And);
                }
                Some(_) => {}
                None if !matches!(op, Tok::Open | Tok::Not) => return Err(invalid()),
                None => {}
            }
            toks.push(op);
            continue;
        }
        let (engine, delim, pattern) = parse_target(&word);
        match engine {
            Some('N') => {
                expansions += 1;
                if expansions > 100 {
                    return Err(invalid());
                }
                for w in expand_nodegroup(pattern, groups)?.into_iter().rev() {
                    queue.push_front(w);
                }
                continue;
            }
            Some(e) if !resource && !"GPIJLSETM".contains(e) => {
                return Err(CompoundError::UnsupportedType(format!("{e}@")));
            }
            _ => {}
        }
        operands.push(Word {
            engine,
            delim: delim.map(str::to_owned),
            pattern: pattern.to_owned(),
        });
        toks.push(Tok::Word(operands.len() - 1));
    }
    let mut p = Parser {
        toks: &toks,
        pos: 0,
    };
    let expr = p.or().ok_or_else(invalid)?;
    if p.pos != toks.len() {
        return Err(invalid());
    }
    Ok(Compound {
        words: operands,
        expr,
        resource,
    })
}

impl Compound {
    /// The value of the expression over tri-state words, given the value of each word
    /// (asked only where `and`/`or` are not already decided; the answer is the same).
    pub(crate) fn eval(&self, word: &mut impl FnMut(usize) -> Option<bool>) -> Option<bool> {
        self.eval_expr(&self.expr, word)
    }

    fn eval_expr(&self, e: &Expr, word: &mut impl FnMut(usize) -> Option<bool>) -> Option<bool> {
        match e {
            Expr::Word(i) => word(*i),
            Expr::Not(_) if self.resource => Some(false),
            Expr::Not(x) => self.eval_expr(x, word).map(|b| !b),
            Expr::And(xs) => {
                let mut acc = Some(true);
                for x in xs {
                    match self.eval_expr(x, word) {
                        Some(false) => return Some(false),
                        None => acc = None,
                        Some(true) => {}
                    }
                }
                acc
            }
            Expr::Or(xs) => {
                let mut acc = Some(false);
                for x in xs {
                    match self.eval_expr(x, word) {
                        Some(true) => return Some(true),
                        None => acc = None,
                        Some(false) => {}
                    }
                }
                acc
            }
        }
    }
}

/// Salt's `parse_target`: `(engine, delimiter, pattern)`.
fn parse_target(word: &str) -> (Option<char>, Option<&str>, &str) {
    let mut chars = word.char_indices();
    let Some((_, e)) = chars.next() else {
        return (None, None, word);
    };
    if !"GPIJLNSERTM".contains(e) {
        return (None, None, word);
    }
    match chars.next() {
        Some((i, '@')) if word.len() > i + 1 => (Some(e), None, &word[i + 1..]),
        Some((i, d)) if "GPIJ".contains(e) => {
            let after = i + d.len_utf8();
            match word[after..].strip_prefix('@') {
                Some(rest) if !rest.is_empty() => (Some(e), Some(&word[i..after]), rest),
                _ => (None, None, word),
            }
        }
        _ => (None, None, word),
    }
}

/// Expand a node group into compound words, wrapped in parentheses (nested `N@` expanded,
/// cycles refused). A list of plain ids becomes one `L@` word.
pub fn expand_nodegroup(name: &str, groups: &NodeGroups) -> Result<Vec<String>, CompoundError> {
    let mut seen = Vec::new();
    expand(name, groups, &mut seen)
}

fn expand(
    name: &str,
    groups: &NodeGroups,
    seen: &mut Vec<String>,
) -> Result<Vec<String>, CompoundError> {
    if seen.iter().any(|s| s == name) {
        return Err(CompoundError::Invalid(format!(
            "nested nodegroup cycle through {name:?}"
        )));
    }
    let Some((_, def)) = groups.iter().find(|(n, _)| n == name) else {
        return Err(CompoundError::UnknownNodegroup(name.to_owned()));
    };
    let words: Vec<String> = match def {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(salt_compat::py_str).collect();
            let plain = items
                .iter()
                .all(|w| !w.contains('@') && !["and", "or", "not", "(", ")"].contains(&w.as_str()));
            if plain {
                vec![format!("L@{}", items.join(","))]
            } else {
                items
            }
        }
        other => salt_compat::py_str(other)
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
    };
    seen.push(name.to_owned());
    let mut out = vec!["(".to_owned()];
    for w in words {
        match w.strip_prefix("N@") {
            Some(inner) if !inner.is_empty() => out.extend(expand(inner, groups, seen)?),
            _ => out.push(w),
        }
    }
    out.push(")".to_owned());
    seen.pop();
    Ok(out)
}

/// Python's precedence (`not` > `and` > `or`) over the tokens.
struct Parser<'t> {
    toks: &'t [Tok],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Tok> {
        self.toks.get(self.pos).copied()
    }

    fn or(&mut self) -> Option<Expr> {
        let mut xs = vec![self.and()?];
        while self.peek() == Some(Tok::Or) {
            self.pos += 1;
            xs.push(self.and()?);
        }
        Some(if xs.len() == 1 {
            xs.remove(0)
        } else {
            Expr::Or(xs)
        })
    }

    fn and(&mut self) -> Option<Expr> {
        let mut xs = vec![self.not()?];
        while self.peek() == Some(Tok::And) {
            self.pos += 1;
            xs.push(self.not()?);
        }
        Some(if xs.len() == 1 {
            xs.remove(0)
        } else {
            Expr::And(xs)
        })
    }

    fn not(&mut self) -> Option<Expr> {
        if self.peek() == Some(Tok::Not) {
            self.pos += 1;
            return Some(Expr::Not(Box::new(self.not()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Option<Expr> {
        match self.peek()? {
            Tok::Word(i) => {
                self.pos += 1;
                Some(Expr::Word(i))
            }
            Tok::Open => {
                self.pos += 1;
                let v = self.or()?;
                if self.peek() != Some(Tok::Close) {
                    return None;
                }
                self.pos += 1;
                Some(v)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::from(v)
    }

    fn facts<'a>(id: &'a str, g: &'a Value, p: Option<&'a Value>) -> Facts<'a> {
        Facts {
            id,
            grains: Some(g),
            pillar: p,
        }
    }

    #[test]
    fn operators_and_precedence() {
        let g = Value::Map(vec![(s("os"), s("Debian")), (s("role"), s("web"))]);
        let f = facts("web1", &g, None);
        let e = |t: &str| eval(f, t, &[]).unwrap();
        assert_eq!(e("G@os:Debian and web*"), Some(true));
        assert_eq!(e("G@os:RedHat or E@^web\\d"), Some(true));
        assert_eq!(e("web* and not G@os:Debian"), Some(false));
        assert_eq!(e("web* not G@os:RedHat"), Some(true), "implicit and");
        assert_eq!(e("not ( db* or G@role:db )"), Some(true));
        assert_eq!(e("db* or web* and G@os:RedHat"), Some(false));
        assert_eq!(e("L@a,web1,b"), Some(true));
        assert_eq!(e("G|@role|web"), Some(true));
        assert_eq!(e("I@x:y"), None, "pillar unknown");
        assert_eq!(e("I@x:y and db*"), Some(false), "unknown and false");
        assert!(eval(f, "and web*", &[]).is_err());
        assert!(eval(f, "( web*", &[]).is_err());
        assert!(eval(f, "R@%foo", &[]).is_err());
        assert_eq!(
            e("T@dummy or T@dummy:d1"),
            Some(false),
            "a minion manages none"
        );
        assert_eq!(e("M@web1"), Some(true));
        assert_eq!(e("M@web*"), Some(false), "M@ is the id exactly");
    }

    #[test]
    fn nodegroups_expand() {
        let g = Value::Map(vec![(s("os"), s("Debian"))]);
        let groups = vec![
            ("web".to_owned(), s("web* and G@os:Debian")),
            ("ids".to_owned(), Value::Array(vec![s("db1"), s("db2")])),
            ("all".to_owned(), s("N@web or N@ids")),
            ("loop".to_owned(), s("N@loop")),
        ];
        assert_eq!(
            eval(facts("db2", &g, None), "N@all", &groups).unwrap(),
            Some(true)
        );
        assert_eq!(
            eval(facts("web1", &g, None), "N@ids", &groups).unwrap(),
            Some(false)
        );
        assert_eq!(
            eval(facts("web1", &g, None), "N@all", &groups).unwrap(),
            Some(true)
        );
        assert!(eval(facts("x", &g, None), "N@loop", &groups).is_err());
        assert!(eval(facts("x", &g, None), "N@nope", &groups).is_err());
    }
}
