//! Target matching on the master: which accepted minion ids a `salt` call expects
//! (Salt's `CkMinions.check_minions`), with the shared matchers of `salt-matcher`.
//!
//! `glob`, `pcre`, `list` are decided from the key list. `grain`, `grain_pcre`, `pillar`,
//! `pillar_pcre`, `ipcidr`, `compound` and `nodegroup` use the minion data cache; a minion
//! with nothing cached is expected (Salt's greedy mode) unless the caller asks otherwise.
//! A node group (and each `N@` word of a compound) is published as the compound expression
//! it expands to, as Salt's `LocalClient` does, so minions need no `nodegroups:` of their own.

use rmpv::Value;
use salt_matcher::{CompiledTarget, CompoundError, expand_nodegroup};
#[cfg(test)]
use salt_matcher::{Facts, check};

use crate::minions::data::MinionCache;
use crate::minions::resources::Entry;

/// Functions a managing minion runs for its resources inline (Salt's `_MERGE_RESOURCE_FUNS`):
/// a wildcard glob does not add resource ids to the expected set for them.
const MERGE_RESOURCE_FUNS: [&str; 5] = [
    "state.apply",
    "state.highstate",
    "state.sls",
    "state.sls_id",
    "state.single",
];

/// Target types the `salt` command may send (Salt's `tgt_type` names).
pub(crate) const TARGET_TYPES: [&str; 10] = [
    "glob",
    "pcre",
    "list",
    "grain",
    "grain_pcre",
    "pillar",
    "pillar_pcre",
    "ipcidr",
    "compound",
    "nodegroup",
];

/// A target ready to publish.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Target {
    /// `tgt` as published (a list for `list`, the expansion for `nodegroup`).
    pub tgt: Value,
    /// `tgt_type` as published (`compound` for a node group).
    pub tgt_type: String,
}

/// Resolve a `salt` target: node groups expanded, lists split. Unknown types are refused.
pub(crate) fn resolve(
    tgt: &str,
    tgt_type: &str,
    nodegroups: &[(String, Value)],
) -> Result<Target, CompoundError> {
    if !TARGET_TYPES.contains(&tgt_type) {
        return Err(CompoundError::UnsupportedType(tgt_type.to_owned()));
    }
    Ok(match tgt_type {
        "list" => Target {
            tgt: Value::Array(
                tgt.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(Value::from)
                    .collect(),
            ),
            tgt_type: "list".into(),
        },
        "nodegroup" => Target {
            tgt: Value::from(expand_nodegroup(tgt, nodegroups)?.join(" ")),
            tgt_type: "compound".into(),
        },
        // Node groups inside a compound are resolved here, so that minions don't have to
        // (Salt's `LocalClient._prep_pub`).
        "compound" => {
            let mut words = Vec::new();
            for w in tgt.split_whitespace() {
                match w.strip_prefix("N@") {
                    Some(ng) if !ng.is_empty() => words.extend(expand_nodegroup(ng, nodegroups)?),
                    _ => words.push(w.to_owned()),
                }
            }
            Target {
                tgt: Value::from(words.join(" ")),
                tgt_type: "compound".into(),
            }
        }
        "pcre" => {
            regex::Regex::new(tgt)
                .map_err(|e| CompoundError::Invalid(format!("invalid pcre target: {e}")))?;
            Target {
                tgt: Value::from(tgt),
                tgt_type: "pcre".into(),
            }
        }
        other => Target {
            tgt: Value::from(tgt),
            tgt_type: other.into(),
        },
    })
}

impl Target {
    /// The expected minions among `accepted` (sorted). `greedy`: a minion whose data is
    /// not cached counts as expected.
    pub(crate) fn expected<'a>(
        &self,
        accepted: impl IntoIterator<Item = &'a str>,
        cache: &MinionCache,
        nodegroups: &[(String, Value)],
        greedy: bool,
    ) -> Result<Vec<String>, CompoundError> {
        let needs_data = !matches!(self.tgt_type.as_str(), "glob" | "pcre" | "list");
        let mut out = Vec::new();
        // A glob or pcre is compiled once, not once per accepted id (10,000 regex
        // compilations took ~0.7 s of every `salt` call at 10k minions).
        if let Some(re) = self.id_regex() {
            out.extend(
                accepted
                    .into_iter()
                    .filter(|id| re.as_ref().is_some_and(|re| re.is_match(id)))
                    .map(str::to_owned),
            );
            out.sort();
            out.dedup();
            return Ok(out);
        }
        // Compiled once (globs, regexes, key splits, the compound's parse), then tested
        // against each minion's cached grains and pillar in the in-memory index
        // (`minions::index`), not one `data.p` read per accepted minion.
        let compiled = CompiledTarget::new(&self.tgt, &self.tgt_type, None, nodegroups)?;
        let keep = |hit: Option<bool>| hit == Some(true) || (hit.is_none() && greedy);
        if needs_data {
            // Split over the CPUs from 8,192 minions up (100,000 grain matches cost ~65 ms
            // on one core of the 2-core reference box).
            let ids: Vec<&str> = accepted.into_iter().collect();
            cache.with_facts(|view| {
                let parts = salt_compat::par::par_chunks(&ids, 8192, |part| {
                    part.iter()
                        .filter(|id| {
                            let (g, p) = view.get(id).unwrap_or((None, None));
                            keep(compiled.eval(id, g, p))
                        })
                        .map(|id| (*id).to_owned())
                        .collect::<Vec<String>>()
                });
                out.extend(parts.into_iter().flatten());
            });
        } else {
            out.extend(
                accepted
                    .into_iter()
                    .filter(|id| keep(compiled.eval::<&Value>(id, None, None)))
                    .map(str::to_owned),
            );
        }
        // The accepted ids usually come sorted (a directory listing sorted by the key store).
        if !out.is_sorted() {
            out.sort();
        }
        out.dedup();
        Ok(out)
    }

    /// The registered resources the target addresses (their ids, sorted), given the minions
    /// it matched (Salt 3008's `CkMinions.check_minions`): a wildcard glob adds the resources
    /// of the minions it matched (not for [`MERGE_RESOURCE_FUNS`]); every target adds the
    /// resources [`salt_matcher::check_resource`] says it addresses.
    pub(crate) fn expected_resources(
        &self,
        minions: &[String],
        registry: &[Entry],
        nodegroups: &[(String, Value)],
        fun: Option<&str>,
    ) -> Result<Vec<String>, CompoundError> {
        let wildcard_glob = self.tgt_type == "glob"
            && self
                .tgt
                .as_str()
                .is_some_and(|t| t.contains(['*', '?', '[']))
            && !fun.is_some_and(|f| MERGE_RESOURCE_FUNS.contains(&f));
        // Salt's `_check_resource_minions` expects the id of a full SRN (`T@dummy:dummy-09`)
        // whether or not it is registered ("the minion might not have registered yet"): such
        // a resource is evaluated as one with no grains and no managing minion.
        let unregistered: Vec<Entry> = self
            .srn_words()
            .filter(|(t, i)| !registry.iter().any(|e| e.rtype == *t && e.id == *i))
            .filter(|(_, i)| salt_proto::auth_master::valid_id(i))
            .map(|(t, i)| Entry {
                minion: String::new(),
                rtype: t.to_owned(),
                id: i.to_owned(),
                grains: None,
            })
            .collect();
        let mut out = Vec::new();
        for e in registry.iter().chain(&unregistered) {
            if (wildcard_glob && minions.contains(&e.minion))
                || salt_matcher::check_resource(
                    &e.as_matcher(),
                    &self.tgt,
                    &self.tgt_type,
                    nodegroups,
                )?
            {
                out.push(e.id.clone());
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// The `T@<type>:<id>` words of a compound target, as `(type, id)`.
    fn srn_words(&self) -> impl Iterator<Item = (&str, &str)> {
        let words: Vec<&str> = match (&self.tgt, self.tgt_type.as_str()) {
            (Value::String(s), "compound") => {
                s.as_str().unwrap_or_default().split_whitespace().collect()
            }
            (Value::Array(items), "compound") => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        words.into_iter().filter_map(|w| {
            let (t, i) = w.strip_prefix("T@")?.split_once(':')?;
            (!t.is_empty() && !i.is_empty()).then_some((t, i))
        })
    }

    /// For a `glob` or `pcre` string: the pattern compiled once (`Some(None)`: it does not
    /// compile and matches nothing), giving the answers of `salt_matcher::check` (Python's
    /// `fnmatchcase`, `re.match`).
    fn id_regex(&self) -> Option<Option<regex::Regex>> {
        let pat = self.tgt.as_str()?;
        Some(match self.tgt_type.as_str() {
            "glob" => match salt_compat::fnmatch::translate(pat) {
                Ok(Some(re)) => salt_compat::fnmatch::compile(&[re], pat).ok(),
                _ => None,
            },
            "pcre" => regex::Regex::new(&format!("\\A(?:{pat})")).ok(),
            _ => return None,
        })
    }
}

/// `nodegroups:` from the config as matcher input (read with the file server's options,
/// which `_master_opts` also sends).
pub(crate) fn nodegroups(cfg: &salt_config::MasterConfig) -> Vec<(String, Value)> {
    cfg.fileserver
        .nodegroups
        .iter()
        .map(|(k, v)| (k.clone(), salt_compat::json::json_to_msgpack(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_sets() {
        let dir = tempfile::tempdir().unwrap();
        let cache = MinionCache::new(dir.path());
        let grains = |os: &str| {
            Value::Map(vec![(
                Value::from("grains"),
                Value::Map(vec![(Value::from("os"), Value::from(os))]),
            )])
        };
        cache.store("m1", "data", &grains("Debian")).unwrap();
        cache.store("m2", "data", &grains("RedHat")).unwrap();
        let ids = ["m1", "m2", "web1"];
        let groups = vec![("deb".to_owned(), Value::from("G@os:Debian"))];
        let ex = |tgt: &str, ty: &str, greedy: bool| {
            resolve(tgt, ty, &groups)
                .unwrap()
                .expected(ids, &cache, &groups, greedy)
                .unwrap()
        };
        assert_eq!(ex("m*", "glob", true), vec!["m1", "m2"]);
        assert_eq!(ex("m", "pcre", true), vec!["m1", "m2"]);
        assert_eq!(ex("eb", "pcre", true), Vec::<String>::new());
        assert_eq!(ex("web1, m2,nope", "list", true), vec!["m2", "web1"]);
        assert_eq!(ex("os:Debian", "grain", true), vec!["m1", "web1"]);
        assert_eq!(ex("os:Debian", "grain", false), vec!["m1"]);
        assert_eq!(
            ex("G@os:RedHat or web*", "compound", false),
            vec!["m2", "web1"]
        );
        assert_eq!(ex("deb", "nodegroup", false), vec!["m1"]);
        assert_eq!(
            resolve("deb", "nodegroup", &groups).unwrap().tgt,
            Value::from("( G@os:Debian )")
        );
        assert_eq!(
            resolve("N@deb or web*", "compound", &groups).unwrap().tgt,
            Value::from("( G@os:Debian ) or web*")
        );
        assert_eq!(ex("N@deb or web*", "compound", false), vec!["m1", "web1"]);
        assert!(resolve("(", "pcre", &groups).is_err());
        assert!(resolve("x", "range", &groups).is_err());
        assert!(resolve("nope", "nodegroup", &groups).is_err());
    }

    #[test]
    fn resources_expected() {
        let entry = |m: &str, t: &str, id: &str| Entry {
            minion: m.into(),
            rtype: t.into(),
            id: id.into(),
            grains: None,
        };
        let reg = vec![
            entry("res1", "dummy", "dummy-01"),
            entry("res1", "dummy", "dummy-02"),
            entry("other", "ssh", "web-01"),
        ];
        let minions = vec!["res1".to_owned()];
        let ex = |tgt: &str, ty: &str, fun: Option<&str>| {
            resolve(tgt, ty, &[])
                .unwrap()
                .expected_resources(&minions, &reg, &[], fun)
                .unwrap()
        };
        assert_eq!(ex("*", "glob", None), vec!["dummy-01", "dummy-02"]);
        assert_eq!(ex("*", "glob", Some("state.apply")), Vec::<String>::new());
        assert_eq!(ex("res1", "glob", None), Vec::<String>::new());
        assert_eq!(ex("web-01", "glob", None), vec!["web-01"]);
        assert_eq!(
            ex("T@dummy", "compound", None),
            vec!["dummy-01", "dummy-02"]
        );
        assert_eq!(ex("T@dummy:dummy-02", "compound", None), vec!["dummy-02"]);
        assert_eq!(ex("T@dummy:dummy-09", "compound", None), vec!["dummy-09"]);
        assert_eq!(
            ex("T@dummy:dummy-09 and G@os:x", "compound", None),
            Vec::<String>::new()
        );
        assert_eq!(
            ex("dummy-01,web-01", "list", None),
            vec!["dummy-01", "web-01"]
        );
    }

    /// The in-memory index of cached grains and pillar gives the answers a read of every
    /// `data.p` gives (`check` over [`MinionCache::facts`]), also after another process
    /// creates or removes minion directories (as `salt-key -d` does).
    #[test]
    fn indexed_facts_answer_like_file_scan() {
        let dir = tempfile::tempdir().unwrap();
        let cache = MinionCache::new(dir.path());
        let data = |os: &str, role: &str, n: i64| {
            let map = |kv: Vec<(&str, Value)>| {
                Value::Map(kv.into_iter().map(|(k, v)| (Value::from(k), v)).collect())
            };
            map(vec![
                (
                    "grains",
                    map(vec![
                        ("os", Value::from(os)),
                        ("num_cpus", Value::from(n)),
                        (
                            "roles",
                            Value::Array(vec![Value::from(role), "base".into()]),
                        ),
                    ]),
                ),
                ("pillar", map(vec![("tier", Value::from(role))])),
            ])
        };
        let oses = ["Debian", "RedHat", "Ubuntu"];
        let roles = ["web", "db", "cache", "Web"];
        let mut ids: Vec<String> = (0..60).map(|i| format!("m{i}")).collect();
        for (i, id) in ids.iter().enumerate().take(50) {
            let d = data(oses[i % 3], roles[i % 4], i as i64 % 5);
            cache.store(id, "data", &d).unwrap();
        }
        let targets = [
            ("os:Debian", "grain"),
            ("os:deb*", "grain"),
            ("roles:web", "grain"),
            ("num_cpus:3", "grain"),
            ("os:^(Red|Ubu)", "grain_pcre"),
            ("tier:w?b", "pillar"),
            ("tier:^c", "pillar_pcre"),
            ("G@os:Ubuntu and I@tier:db", "compound"),
            ("G@roles:cache or m1*", "compound"),
            ("not G@os:Debian and m*", "compound"),
        ];
        let groups = Vec::new();
        let check_all = |ids: &[String], label: &str| {
            for (tgt, ty) in targets {
                for greedy in [true, false] {
                    let t = resolve(tgt, ty, &groups).unwrap();
                    let mut want: Vec<String> = ids
                        .iter()
                        .filter(|id| {
                            let (g, p) = cache.facts(id);
                            let f = Facts {
                                id,
                                grains: g.as_ref(),
                                pillar: p.as_ref(),
                            };
                            let hit = check(f, &t.tgt, &t.tgt_type, None, &groups).unwrap();
                            hit == Some(true) || (hit.is_none() && greedy)
                        })
                        .cloned()
                        .collect();
                    want.sort();
                    let got = t
                        .expected(ids.iter().map(String::as_str), &cache, &groups, greedy)
                        .unwrap();
                    assert_eq!(got, want, "{label}: {ty} {tgt} greedy={greedy}");
                }
            }
        };
        check_all(&ids, "stored through the cache");
        // Another process writes two new minions and removes one (salt-key -d), then the
        // master rewrites one.
        let minions = dir.path().join("minions");
        for (id, os) in [("m50", "Debian"), ("m51", "Ubuntu")] {
            std::fs::create_dir_all(minions.join(id)).unwrap();
            std::fs::write(
                minions.join(id).join("data.p"),
                salt_proto::encode(&data(os, "db", 3)),
            )
            .unwrap();
        }
        std::fs::remove_dir_all(minions.join("m3")).unwrap();
        cache.store("m4", "data", &data("Ubuntu", "db", 3)).unwrap();
        assert!(cache.flush("m5", "data"));
        check_all(&ids, "after changes by another process");
        ids.retain(|id| id != "m7");
        check_all(&ids, "fewer accepted");
    }

    /// Past 8,192 accepted minions a data target is matched on several threads: the answer
    /// is the one-thread answer, sorted, minions without data kept only when greedy.
    #[test]
    fn split_matching_answers_like_one_thread() {
        let dir = tempfile::tempdir().unwrap();
        let cache = MinionCache::new(dir.path());
        let ids: Vec<String> = (0..9_000).map(|i| format!("m{i:05}")).collect();
        let oses = ["Debian", "Ubuntu", "Rocky"];
        for (i, id) in ids.iter().enumerate().take(1_200) {
            let grains = Value::Map(vec![("os".into(), oses[i % 3].into())]);
            let d = Value::Map(vec![("grains".into(), grains)]);
            cache.store(id, "data", &d).unwrap();
        }
        let want = |f: &dyn Fn(usize) -> bool| -> Vec<String> {
            (0..9_000)
                .filter(|&i| f(i))
                .map(|i| ids[i].clone())
                .collect()
        };
        let cases: [(&str, &str, bool, Vec<String>); 3] = [
            (
                "os:Debian",
                "grain",
                false,
                want(&|i| i < 1_200 && i % 3 == 0),
            ),
            (
                "os:Debian",
                "grain",
                true,
                want(&|i| i >= 1_200 || i % 3 == 0),
            ),
            (
                "G@os:Rocky and not m000*",
                "compound",
                false,
                want(&|i| i < 1_200 && i % 3 == 2 && i >= 100),
            ),
        ];
        // Accepted ids in reverse: the answer is sorted whatever their order.
        let accepted: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
        for (tgt, ty, greedy, want) in cases {
            let t = resolve(tgt, ty, &[]).unwrap();
            let got = t
                .expected(accepted.iter().copied(), &cache, &[], greedy)
                .unwrap();
            assert_eq!(got.len(), want.len(), "{ty} {tgt} greedy={greedy}");
            assert_eq!(got, want, "{ty} {tgt} greedy={greedy}");
        }
    }

    /// Globs and regexes compiled once per target give `check`'s answer for every id.
    #[test]
    fn compiled_glob_and_pcre_match_like_check() {
        let dir = tempfile::tempdir().unwrap();
        let cache = MinionCache::new(dir.path());
        let ids = [
            "web1", "web10", "Web1", "weba", "web]", "a.b", "axb", "fan-1", "fan-10", "x",
        ];
        let cases = [
            ("glob", "web?"),
            ("glob", "web*"),
            ("glob", "web[!]a]"),
            ("glob", "web[0-9]"),
            ("glob", "a.b"),
            ("glob", "fan-*"),
            ("glob", "[z-a]"),
            ("glob", "["),
            ("pcre", "web\\d+$"),
            ("pcre", "eb"),
            ("pcre", "("),
            ("pcre", "fan-1"),
        ];
        for (ty, pat) in cases {
            let t = Target {
                tgt: Value::from(pat),
                tgt_type: ty.into(),
            };
            let mut want: Vec<String> = ids
                .iter()
                .filter(|id| {
                    let facts = Facts {
                        id,
                        grains: None,
                        pillar: None,
                    };
                    check(facts, &t.tgt, ty, None, &[]).unwrap() == Some(true)
                })
                .map(|id| (*id).to_owned())
                .collect();
            want.sort();
            assert_eq!(
                t.expected(ids, &cache, &[], true).unwrap(),
                want,
                "{ty} {pat}"
            );
        }
    }
}
