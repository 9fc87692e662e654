//! `file.serialize` (`salt/states/file.py`): a data set written as JSON or YAML by Salt's
//! serializers, then managed as `file.managed` manages `contents` (Salt's
//! `check_managed_changes` under `test`, `manage_file` otherwise).

use rmpv::Value;

use super::args::{Args, Default as D};
use super::ret::{self, comment, fail};
use crate::engine::Ctx;
use crate::{empty, map, set, truthy};
use salt_compat::{map_get, py_str};

/// `file.serialize`.
pub const FILE_SERIALIZE: Args = Args {
    honoured: &[
        "name",
        "dataset",
        "dataset_pillar",
        "user",
        "group",
        "mode",
        "makedirs",
        "show_changes",
        "create",
        "merge_if_exists",
        "serializer",
    ],
    refused: &[
        ("backup", D::Str("")),
        ("encoding", D::None),
        ("encoding_errors", D::Str("strict")),
        ("serializer_opts", D::None),
        ("deserializer_opts", D::None),
        ("check_cmd", D::None),
        ("tmp_dir", D::Str("")),
        ("tmp_ext", D::Str("")),
    ],
    apply_only: &["check_cmd", "tmp_dir", "tmp_ext"],
};

/// Salt's serializers salt-rs does not write (Salt 3007's `salt/serializers`).
const NOT_DONE: &[&str] = &[
    "configparser",
    "keyvalue",
    "msgpack",
    "plist",
    "python",
    "toml",
    "yamlex",
];

/// `{serializer}.serialize` with `file.serialize`'s options.
fn serialize(kind: &str, data: &Value) -> String {
    match kind {
        "json" => salt_render::py_json(
            data,
            salt_render::JsonOpts {
                sort_keys: true,
                ensure_ascii: false,
                indent: Some(2),
            },
        ),
        _ => salt_render::yaml_dump::safe_dump(data, false),
    }
}

/// `{serializer}.deserialize` of the file present.
fn deserialize(kind: &str, text: &str) -> Result<Option<Value>, String> {
    match kind {
        "json" => serde_json::from_str::<serde_json::Value>(text)
            .map(|j| Some(salt_compat::json::json_to_msgpack(&j)))
            .map_err(|e| e.to_string()),
        _ => salt_render::yaml::load(text).map_err(|e| e.to_string()),
    }
}

/// `salt.utils.dictdiffer.recursive_diff(old, new).diffs`.
fn recursive_diff(new: &Value, old: &Value) -> Value {
    let (Value::Map(n), Value::Map(o)) = (new, old) else {
        return empty();
    };
    let mut out = empty();
    for (k, v) in n {
        let key = py_str(k);
        match o.iter().find(|(ok, _)| ok == k) {
            None => set(
                &mut out,
                &key,
                map(vec![("new", v.clone()), ("old", Value::from("<_null_>"))]),
            ),
            Some((_, ov)) if ov != v => {
                if matches!((v, ov), (Value::Map(_), Value::Map(_))) {
                    let sub = recursive_diff(v, ov);
                    if truthy(&sub) {
                        set(&mut out, &key, sub);
                    }
                } else {
                    set(
                        &mut out,
                        &key,
                        map(vec![("new", v.clone()), ("old", ov.clone())]),
                    );
                }
            }
            Some(_) => {}
        }
    }
    out
}

/// `file.serialize`.
pub fn serialize_state(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name_v = map_get(low, "name").cloned().unwrap_or(Value::Nil);
    let name = py_str(&name_v);
    let mut r = map(vec![
        ("changes", empty()),
        ("comment", Value::from("")),
        ("name", name_v.clone()),
        ("result", Value::Boolean(true)),
    ]);
    if name.is_empty() {
        return fail(r, "Must provide name to file.serialize".into());
    }
    if map_get(low, "create").is_some_and(|v| !truthy(v)) && !std::path::Path::new(&name).is_file()
    {
        comment(
            &mut r,
            format!("File {name} is not present and is not set for creation"),
        );
        return r;
    }
    let given = |k: &str| map_get(low, k).filter(|v| truthy(v));
    let (serializer, formatter) = (given("serializer"), given("formatter"));
    if serializer.is_some() && formatter.is_some() {
        return fail(r, "Only one of serializer and formatter are allowed".into());
    }
    let kind = serializer
        .or(formatter)
        .map_or_else(|| "yaml".to_owned(), |v| py_str(v).to_lowercase());
    let (dataset, pillar_key) = (given("dataset"), given("dataset_pillar"));
    if dataset.is_some() && pillar_key.is_some() {
        return fail(
            r,
            "Only one of 'dataset' and 'dataset_pillar' is permitted".into(),
        );
    }
    let mut data = match pillar_key {
        // `pillar.get(key)`: `""` when absent.
        Some(k) => salt_matcher::traverse(&ctx.opts.pillar, &py_str(k), ":")
            .cloned()
            .unwrap_or(Value::from("")),
        None => match map_get(low, "dataset") {
            Some(v) if !v.is_nil() => v.clone(),
            _ => {
                return fail(
                    r,
                    "Neither 'dataset' nor 'dataset_pillar' was defined".into(),
                );
            }
        },
    };
    if NOT_DONE.contains(&kind.as_str()) {
        return fail(
            r,
            format!(
                "file.serialize serializer '{kind}' is not supported by salt-rs (only json and yaml)"
            ),
        );
    }
    if kind != "json" && kind != "yaml" {
        return fail(
            r,
            format!(
                "The {kind} serializer could not be found. It either does not exist or its prerequisites are not installed."
            ),
        );
    }
    let mut merged: Option<(Value, Value)> = None;
    if map_get(low, "merge_if_exists").is_some_and(truthy) && std::path::Path::new(&name).is_file()
    {
        let text = std::fs::read_to_string(&name).unwrap_or_default();
        let existing = match deserialize(&kind, &text) {
            Ok(v) => v,
            Err(e) => {
                set(&mut r, "result", Value::Boolean(false));
                comment(&mut r, format!("Failed to deserialize existing data: {e}"));
                return r;
            }
        };
        if let Some(existing) = existing {
            if !matches!((&existing, &data), (Value::Map(_), Value::Map(_))) {
                return fail(
                    r,
                    "Cannot update using non-dict types in dictupdate.update()".into(),
                );
            }
            let m = salt_render::merge::update(existing.clone(), data, false);
            if m == existing {
                comment(&mut r, format!("The file {name} is in the correct state"));
                return r;
            }
            data = m.clone();
            merged = Some((existing, m));
        }
    }
    let contents = format!("{}\n", serialize(&kind, &data));
    let show = map_get(low, "show_changes").is_none_or(truthy);
    let mut mlow = map(vec![
        ("name", name_v.clone()),
        ("contents", Value::from(contents)),
    ]);
    for k in ["user", "group", "mode", "makedirs"] {
        if let Some(v) = map_get(low, k) {
            set(&mut mlow, k, v.clone());
        }
    }
    let mut out = super::file::managed(ctx, &mlow);
    let changed = map_get(&out, "changes").is_some_and(truthy);
    if ctx.opts.test {
        if changed {
            if !show {
                set_diff(&mut out, Value::from("<show_changes=False>"));
            }
            out = ret::would(
                out,
                format!("Dataset will be serialized and stored into {name}"),
            );
        } else {
            comment(&mut out, format!("The file {name} is in the correct state"));
        }
    } else if !show
        && map_get(&out, "changes")
            .and_then(|c| map_get(c, "diff"))
            .is_some_and(|d| d.as_str() != Some("New file"))
    {
        set_diff(&mut out, Value::from("<show_changes=False>"));
    }
    if let Some((existing, m)) = merged {
        set_diff(&mut out, recursive_diff(&m, &existing));
    }
    out
}

fn set_diff(r: &mut Value, diff: Value) {
    let mut changes = map_get(r, "changes").cloned().unwrap_or_else(empty);
    set(&mut changes, "diff", diff);
    set(r, "changes", changes);
}
