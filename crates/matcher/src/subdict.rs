//! Salt's `subdict_match` (`salt/utils/data.py`) compiled once per expression: the key
//! splits, the lower-cased patterns and their regexes are made once, then the expression is
//! tested against any number of minions' data ([`Tree`]) without allocating (the text of a
//! non-ASCII or non-string value aside).
//!
//! `subdict_match(data, expr, delimiter, regex)` tries the deepest key split first:
//! `a:b:c` looks for `c` under `data[a][b]`, then `b:c` under `data[a]`. A dict found is
//! matched by `_dict_match` (a key named by the pattern, a key the pattern matches, a nested
//! `subdict_match` with the default delimiter `:` as Salt calls it, and for `*:` any value
//! below); a list by each member (`_dict_match` for a dict member, then Python's text of
//! the member); anything else by its text. Values compare lower-cased, by glob or by regex
//! (`re.match`).

use std::collections::HashMap;

use regex::Regex;

use crate::basic::DEFAULT_DELIMITER;
use crate::tree::{Shape, Tree};

/// One part of a key path, with the readings `traverse_dict_and_list` gives it.
#[derive(Debug, Clone)]
pub(crate) struct KeyPart {
    text: Box<str>,
    /// The part as a list index (`int(part)`).
    index: Option<i64>,
    /// The part as a number map key (`yamlify_arg(part)` gave a number).
    number: Option<f64>,
}

impl KeyPart {
    pub(crate) fn new(part: &str) -> Self {
        let t = part.trim();
        let number = t
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
            .then(|| t.parse::<f64>().ok())
            .flatten();
        KeyPart {
            text: part.into(),
            index: t.parse::<i64>().ok(),
            number,
        }
    }
}

/// Salt's `traverse_dict_and_list` over parts already read.
pub(crate) fn traverse_parts<'a, T: Tree<'a>>(data: T, parts: &[KeyPart]) -> Option<T> {
    let mut cur = data;
    for part in parts {
        cur = step(cur, part)?;
    }
    Some(cur)
}

fn step<'a, T: Tree<'a>>(cur: T, part: &KeyPart) -> Option<T> {
    match cur.shape() {
        Shape::Map => cur.map_get(&part.text).or_else(|| number_key(cur, part)),
        Shape::Array => {
            let embedded = |found: &dyn Fn(T) -> Option<T>| {
                cur.items()
                    .filter(|x| x.shape() == Shape::Map)
                    .find_map(found)
            };
            match part.index {
                None => embedded(&|m: T| m.map_get(&part.text)),
                Some(i) => match embedded(&|m: T| number_key(m, part)) {
                    Some(v) => Some(v),
                    None => {
                        let i = if i < 0 { cur.len() as i64 + i } else { i };
                        cur.item(usize::try_from(i).ok()?)
                    }
                },
            }
        }
        Shape::Scalar => None,
    }
}

/// A map's entry under the number `part` reads as (Salt YAML-loads a key it did not find).
fn number_key<'a, T: Tree<'a>>(map: T, part: &KeyPart) -> Option<T> {
    let want = part.number?;
    map.entries()
        .rev()
        .find(|(k, _)| k.number() == Some(want))
        .map(|(_, v)| v)
}

/// Salt's `_match(target, pattern)`: `str(target).lower()` against `pattern.lower()`, by
/// `fnmatch` or `re.match`; compiled once.
#[derive(Debug, Clone)]
pub(crate) enum ValuePat {
    /// Matches nothing (an invalid regex or glob).
    Never,
    /// A glob without `*?[`: the text itself.
    Literal(Box<str>),
    /// A glob or a regex, compiled.
    Re(Regex),
}

impl ValuePat {
    pub(crate) fn new(pattern: &str, regex: bool) -> Self {
        let p = pattern.to_lowercase();
        if regex {
            return Regex::new(&format!("\\A(?:{p})")).map_or(ValuePat::Never, ValuePat::Re);
        }
        if !p.contains(['*', '?', '[']) {
            return ValuePat::Literal(p.into());
        }
        match salt_compat::fnmatch::translate(&p) {
            Ok(Some(re)) => {
                salt_compat::fnmatch::compile(&[re], &p).map_or(ValuePat::Never, ValuePat::Re)
            }
            _ => ValuePat::Never,
        }
    }

    pub(crate) fn matches<'a, T: Tree<'a>>(&self, target: T, buf: &mut String) -> bool {
        match self {
            ValuePat::Never => false,
            ValuePat::Literal(p) => target.with_lower(buf, |t| t == &**p),
            ValuePat::Re(re) => target.with_lower(buf, |t| re.is_match(t)),
        }
    }
}

/// `_dict_match(target, pattern)` for one pattern.
#[derive(Debug)]
struct DictPat {
    /// `_match(x, pattern)` (the pattern before a `*:` is stripped).
    whole: ValuePat,
    /// `rest == "*"` (`rest`: the pattern, or what follows its `*:`).
    star: bool,
    rest: Box<str>,
    /// `_match(x, rest)` when `rest` differs from the pattern.
    rest_value: Option<ValuePat>,
    /// `subdict_match(target, rest)` (default delimiter); `None`: no delimiter in `rest`.
    sub: Option<usize>,
    /// `_dict_match(x, rest)` for the wildcard's recursion (`None`: no `*:`).
    inner: Option<usize>,
}

/// One `idx` of `subdict_match`'s loop.
#[derive(Debug)]
struct Try {
    /// The key path (`None`: the key is `*`, the data itself).
    key: Option<Box<[KeyPart]>>,
    /// The `_dict_match`/`_match` pattern (`matchstr`).
    pat: usize,
}

/// A compiled `subdict_match(data, expr, delimiter, regex)`.
#[derive(Debug)]
pub struct Subdict {
    root: Option<usize>,
    subs: Vec<Vec<Try>>,
    pats: Vec<DictPat>,
}

#[derive(Default)]
struct Builder {
    regex: bool,
    subs: Vec<Vec<Try>>,
    pats: Vec<DictPat>,
    sub_ix: HashMap<(String, String), Option<usize>>,
    pat_ix: HashMap<String, usize>,
}

impl Builder {
    fn sub(&mut self, expr: &str, delim: &str) -> Option<usize> {
        let memo = (expr.to_owned(), delim.to_owned());
        if let Some(&i) = self.sub_ix.get(&memo) {
            return i;
        }
        // Python raises on an empty delimiter; nothing matches. Guards a cycle too.
        self.sub_ix.insert(memo.clone(), None);
        if delim.is_empty() {
            return None;
        }
        let splits: Vec<&str> = expr.split(delim).collect();
        if splits.len() < 2 {
            return None;
        }
        let mut tries = Vec::new();
        for idx in (1..splits.len()).rev() {
            let key = splits[..idx].join(delim);
            let t = if key == "*" {
                Try {
                    key: None,
                    pat: self.pat(expr),
                }
            } else {
                Try {
                    key: Some(splits[..idx].iter().map(|p| KeyPart::new(p)).collect()),
                    pat: self.pat(&splits[idx..].join(delim)),
                }
            };
            tries.push(t);
        }
        self.subs.push(tries);
        let i = Some(self.subs.len() - 1);
        self.sub_ix.insert(memo, i);
        i
    }

    fn pat(&mut self, pattern: &str) -> usize {
        if let Some(&i) = self.pat_ix.get(pattern) {
            return i;
        }
        let (wildcard, rest) = match pattern.strip_prefix("*:") {
            Some(r) => (true, r),
            None => (false, pattern),
        };
        let sub = self.sub(rest, DEFAULT_DELIMITER);
        let inner = wildcard.then(|| self.pat(rest));
        self.pats.push(DictPat {
            whole: ValuePat::new(pattern, self.regex),
            star: rest == "*",
            rest: rest.into(),
            rest_value: wildcard.then(|| ValuePat::new(rest, self.regex)),
            sub,
            inner,
        });
        let i = self.pats.len() - 1;
        self.pat_ix.insert(pattern.to_owned(), i);
        i
    }
}

impl Subdict {
    /// Compile `subdict_match(_, expr, delim, regex)`.
    pub fn new(expr: &str, delim: &str, regex: bool) -> Self {
        let mut b = Builder {
            regex,
            ..Builder::default()
        };
        let root = b.sub(expr, delim);
        Subdict {
            root,
            subs: b.subs,
            pats: b.pats,
        }
    }

    /// Whether the expression can match anything (it holds the delimiter).
    pub fn has_delimiter(&self) -> bool {
        self.root.is_some()
    }

    /// Does `data` match?
    pub fn matches<'a, T: Tree<'a>>(&self, data: T) -> bool {
        let mut buf = String::new();
        self.root.is_some_and(|r| self.sub_match(r, data, &mut buf))
    }

    fn sub_match<'a, T: Tree<'a>>(&self, sub: usize, data: T, buf: &mut String) -> bool {
        for t in &self.subs[sub] {
            let found = match &t.key {
                None => data,
                Some(parts) => match traverse_parts(data, parts) {
                    Some(f) => f,
                    None => continue,
                },
            };
            let pat = &self.pats[t.pat];
            let hit = match found.shape() {
                Shape::Map if found.is_empty() => false,
                Shape::Map => self.dict_match(pat, found, buf),
                Shape::Array => found.items().any(|m| {
                    (m.shape() == Shape::Map && self.dict_match(pat, m, buf))
                        || pat.whole.matches(m, buf)
                }),
                Shape::Scalar => pat.whole.matches(found, buf),
            };
            if hit {
                return true;
            }
        }
        false
    }

    fn dict_match<'a, T: Tree<'a>>(&self, pat: &DictPat, target: T, buf: &mut String) -> bool {
        if target.shape() != Shape::Map {
            return false;
        }
        if pat.star || target.map_get(&pat.rest).is_some() {
            return true;
        }
        let rest = pat.rest_value.as_ref().unwrap_or(&pat.whole);
        if target.entries().any(|(k, _)| rest.matches(k, buf)) {
            return true;
        }
        if pat.sub.is_some_and(|s| self.sub_match(s, target, buf)) {
            return true;
        }
        let Some(inner) = pat.inner else {
            return false;
        };
        target.entries().any(|(_, v)| match v.shape() {
            Shape::Map => self.dict_match(&self.pats[inner], v, buf),
            Shape::Array => v.items().any(|i| rest.matches(i, buf)),
            Shape::Scalar => rest.matches(v, buf),
        })
    }
}
