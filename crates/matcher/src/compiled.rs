//! A target compiled once, then tested against any number of minions: the master's expected
//! set at 100,000 cached minions, and [`crate::check`] for one minion. Globs and regexes are
//! compiled, `subdict_match` expressions split and lower-cased ([`Subdict`]), a compound is
//! tokenised and parsed, node groups expanded, an `ipcidr` network parsed, once; testing a
//! minion allocates nothing (the text of a non-ASCII or non-string value aside).

use regex::Regex;
use rmpv::Value;

use crate::NodeGroups;
use crate::basic::{DEFAULT_DELIMITER, list_str_match};
use crate::compound::{self, Compound, CompoundError, expand_nodegroup};
use crate::ipcidr::{Cidr, cidr_match, parse_cidr};
use crate::subdict::Subdict;
use crate::tree::Tree;

/// One compiled expression on a minion.
#[derive(Debug)]
enum Leaf {
    /// `fnmatch(id, pattern)` (`None`: the pattern matches nothing).
    Glob(Option<IdGlob>),
    /// `re.match(pattern, id)` (`None`: an invalid pattern, matching nothing).
    Pcre(Option<Regex>),
    /// `list_match` with a comma-separated string.
    ListStr(String),
    /// `list_match` with a list.
    ListItems(Vec<Value>),
    /// `subdict_match` on the grains (`pillar: false`) or the pillar.
    Subdict { pillar: bool, sub: Subdict },
    /// `ipcidr` (`None`: an invalid target).
    Ipcidr(Option<Cidr>),
    /// `M@<id>`: the id exactly.
    Id(String),
    /// False for every minion (`T@...`, a glob that is not a string).
    False,
}

#[derive(Debug)]
enum IdGlob {
    Literal(String),
    Re(Regex),
}

/// A target compiled for matching minions.
#[derive(Debug)]
pub struct CompiledTarget {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Single(Leaf),
    Compound(Compound, Vec<Leaf>),
}

impl CompiledTarget {
    /// Compile `tgt` of `tgt_type` (Salt's names; a string, or for `list` a list or a
    /// comma-separated string, for `compound` a string or a list of words). `delimiter`
    /// applies to `grain`/`grain_pcre`/`pillar`/`pillar_pcre` (a compound word names its
    /// own).
    ///
    /// # Errors
    /// An unknown or unsupported target type, an invalid compound, an unknown node group.
    pub fn new(
        tgt: &Value,
        tgt_type: &str,
        delimiter: Option<&str>,
        nodegroups: &NodeGroups,
    ) -> Result<Self, CompoundError> {
        let delim = delimiter.unwrap_or(DEFAULT_DELIMITER);
        let text = tgt.as_str().unwrap_or_default();
        let single = |l| {
            Ok(CompiledTarget {
                kind: Kind::Single(l),
            })
        };
        match tgt_type {
            "glob" => single(match tgt.as_str() {
                Some(t) => glob(t),
                None => Leaf::False,
            }),
            "pcre" => single(match tgt.as_str() {
                Some(t) => pcre(t),
                None => Leaf::False,
            }),
            "list" => single(match tgt {
                Value::String(s) => s.as_str().map_or(Leaf::False, |t| Leaf::ListStr(t.into())),
                Value::Array(items) => Leaf::ListItems(items.clone()),
                _ => Leaf::False,
            }),
            "grain" | "grain_pcre" | "pillar" | "pillar_pcre" => single(Leaf::Subdict {
                pillar: tgt_type.starts_with("pillar"),
                sub: Subdict::new(text, delim, tgt_type.ends_with("_pcre")),
            }),
            "ipcidr" => single(Leaf::Ipcidr(parse_cidr(text))),
            "compound" => {
                let words = match tgt {
                    Value::Array(items) => items.iter().map(salt_compat::py_str).collect(),
                    _ => text.split_whitespace().map(str::to_owned).collect(),
                };
                Self::compound(words, nodegroups)
            }
            "nodegroup" => Self::compound(expand_nodegroup(text, nodegroups)?, nodegroups),
            other => Err(CompoundError::UnsupportedType(other.to_owned())),
        }
    }

    /// Compile a compound expression given as words.
    pub(crate) fn compound(
        words: Vec<String>,
        nodegroups: &NodeGroups,
    ) -> Result<Self, CompoundError> {
        let c = compound::parse(words, nodegroups, false)?;
        let leaves = c.words.iter().map(word).collect();
        Ok(CompiledTarget {
            kind: Kind::Compound(c, leaves),
        })
    }

    /// Does the target address the minion `id` with these grains and pillar (`None`: not
    /// known)? `None` when the answer needs facts that are not known.
    pub fn eval<'a, T: Tree<'a>>(
        &self,
        id: &str,
        grains: Option<T>,
        pillar: Option<T>,
    ) -> Option<bool> {
        match &self.kind {
            Kind::Single(l) => leaf(l, id, grains, pillar),
            Kind::Compound(c, leaves) => c.eval(&mut |i| leaf(&leaves[i], id, grains, pillar)),
        }
    }
}

/// A compound word for a minion (the engines `compound::parse` lets through).
fn word(w: &compound::Word) -> Leaf {
    let p = w.pattern.as_str();
    let sub = |pillar: bool, regex: bool| Leaf::Subdict {
        pillar,
        sub: Subdict::new(p, w.delim.as_deref().unwrap_or(DEFAULT_DELIMITER), regex),
    };
    match w.engine {
        None => glob(p),
        Some('G') => sub(false, false),
        Some('P') => sub(false, true),
        Some('I') => sub(true, false),
        Some('J') => sub(true, true),
        Some('L') => Leaf::ListStr(p.to_owned()),
        Some('S') => Leaf::Ipcidr(parse_cidr(p)),
        Some('E') => pcre(p),
        Some('M') => Leaf::Id(p.to_owned()),
        _ => Leaf::False,
    }
}

fn glob(pattern: &str) -> Leaf {
    if !pattern.contains(['*', '?', '[']) {
        return Leaf::Glob(Some(IdGlob::Literal(pattern.to_owned())));
    }
    Leaf::Glob(match salt_compat::fnmatch::translate(pattern) {
        Ok(Some(re)) => salt_compat::fnmatch::compile(&[re], pattern)
            .ok()
            .map(IdGlob::Re),
        _ => None,
    })
}

fn pcre(pattern: &str) -> Leaf {
    Leaf::Pcre(Regex::new(&format!("\\A(?:{pattern})")).ok())
}

fn leaf<'a, T: Tree<'a>>(l: &Leaf, id: &str, grains: Option<T>, pillar: Option<T>) -> Option<bool> {
    Some(match l {
        Leaf::Glob(None) | Leaf::Pcre(None) | Leaf::False => false,
        Leaf::Glob(Some(IdGlob::Literal(p))) => id == p,
        Leaf::Glob(Some(IdGlob::Re(re))) | Leaf::Pcre(Some(re)) => re.is_match(id),
        Leaf::ListStr(t) => list_str_match(t, id),
        Leaf::ListItems(items) => items.iter().any(|v| v.as_str() == Some(id)),
        Leaf::Id(want) => id == want,
        Leaf::Subdict { pillar: false, sub } => sub.matches(grains?),
        Leaf::Subdict { pillar: true, sub } => sub.matches(pillar?),
        Leaf::Ipcidr(c) => {
            let g = grains?;
            c.is_some_and(|c| cidr_match(g, c))
        }
    })
}
