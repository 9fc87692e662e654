//! `yaml_dump` against Salt 3007's own `safe_dump`, `yaml_encode`, `yaml_dquote` and
//! `yaml_squote` (the venv's Python), and through the Jinja filters.

use super::*;

#[rustfmt::skip]
const STRINGS: &[&str] = &[
    "plain", "yes", "No", "Off", "y", "null", "~", "1.0", "1e3", "1.0e+3", "0644", "1:30",
    "0x1F", ".inf", "-.5", "._5", "_1:30.5", ".5", "2024-01-02", "2001-12-14 21:59:43.10 -5",
    "2001-12-14 21:59:43.10 ", "<<", "=", "- a", "-", "-x", "a: b", "a:b", "x:", "a,b", "a]",
    "[x", "{x", "x}", "#x", "x #y", "x#y", " lead", "trail ", "a  b", "multi\nline",
    "trail\n", "\nlead", "a \nb", "a\n b", "a\n\nb", "a\rb", "tab\there", "é ü", "\u{7}bell",
    "\u{2028}", "a\u{2029}b", "\u{85}", "\u{feff}", "\u{a0}x", "x\u{a0}", "'quote'",
    "it's", "\"dq\"", "back\\slash", "---", "--- x", "...x", ":x", "?x", "? x", "@x", "%x",
    "*x", "&x", "!x", "|x", ">x", "`x", "", "emoji 😀", "\0nul", "\u{7f}", "\u{fffe}",
];

/// Scalars and collections, as one YAML list (the loader keeps key order; Salt sorts).
#[rustfmt::skip]
const TREES: &str = "[0, 1, -5, 9223372036854775807, -9223372036854775808,
    18446744073709551615, true, false, null, 1.5, 1.0e+16, 1.0e-05, .nan, .inf, -.inf, -0.0,
    1.0e+22, [], {}, {b: {y: [1, 2, {z: null}], x: text}, a: [[1, 2], [], {}], c: {}},
    [{a: 1, b: 2}, {c: [3]}], [[1, [2, 3]], [[]], [[4]]], {k: [{x: {y: z}}]},
    {a: [1, 2], b: [{d: [3], c: 1}]}, [{a: [1, [2, 3]], b: {c: []}}], {2: b, 1: a, 10: c},
    {1.5: x, 1: y}, {true: 1, 0.5: 2}, {b: 1, 1: 2, a: 3}, {null: 1, a: 2}, {null: 1},
    {emoji 😀: 😀, ü: é}, [0.1, 1.0e+100, 123456789.123, 5.0e-324, 1.0e-10, 100.0]]";

fn cases() -> Vec<Value> {
    let (s, i) = (|t: &str| Value::from(t), |n: i64| Value::from(n));
    let (list, map) = (Value::Array, Value::Map);
    let one = |v: Value| list(vec![v]);
    let long = "lorem ipsum dolor sit amet ".repeat(8)[..200].to_owned();
    let variants = [
        long.clone(),
        format!("'{long}"),
        format!("{long}\t"),
        format!("{}\tend", long.replace("dolor ", "dolor  ")),
        "x".repeat(200),
        long.replace("sit ", "sit: "),
        format!("line one\n{long}\n\nlast"),
    ]
    .map(Value::from);
    let mut out: Vec<Value> = STRINGS.iter().map(|t| s(t)).collect();
    out.push(list(STRINGS.iter().map(|t| s(t)).collect()));
    out.push(map(STRINGS.iter().map(|t| (s(t), s(t))).collect()));
    let Some(Value::Array(trees)) = crate::yaml::load(TREES).unwrap() else {
        panic!("TREES is a list")
    };
    out.extend(trees);
    for v in &variants {
        out.extend([v.clone(), map(vec![(s("k"), v.clone())]), one(v.clone())]);
        out.push(map(vec![(s("a"), list(vec![v.clone(), v.clone()]))]));
        out.push(map(vec![(s("a"), map(vec![(s("b"), one(v.clone()))]))]));
        out.push(map(vec![(s(&"K".repeat(100)), v.clone())]));
    }
    out.push(list(variants.to_vec()));
    for (c, n) in [("k", 130), ("x", 128), ("x", 129), ("é", 65), ("é", 64)] {
        let key = c.repeat(n);
        out.push(map(vec![(s(&key), i(1)), (s("z"), i(2))]));
        out.push(map(vec![(s(&key), list(vec![i(1), i(2)]))]));
    }
    out.push(list((0..40).map(i).collect()));
    out.push(map((0..30)
        .map(|n| (s(&format!("key{n}")), i(n)))
        .collect()));
    let items = (0..25).map(|n| s(&format!("item{n}"))).collect();
    out.push(map(vec![(s("outer"), list(items))]));
    let maps = (0..6).map(|n| map(vec![(s(&format!("k{n}")), s(&format!("value number {n}")))]));
    out.push(list(maps.collect()));
    out
}

/// Our five outputs for a case, in the order the Python side prints them.
fn ours(v: &Value) -> [String; 5] {
    let quoted = |f: fn(&str) -> String| match v {
        Value::Array(_) | Value::Map(_) => "-".to_owned(),
        other => f(&crate::pytext::py_text(&crate::values::to_jinja(other))),
    };
    let encoded = encode_scalar(v).unwrap_or_else(|| "TypeError".to_owned());
    [
        safe_dump(v, true),
        safe_dump(v, false),
        encoded,
        quoted(dquote),
        quoted(squote),
    ]
}

/// Salt's side: every case (msgpack, in the file named by `argv[1]`) through Salt's functions.
const SCRIPT: &str = r#"
import sys, msgpack
import salt.utils.yaml as y, salt.utils.yamlencoding as e
def fmt(v, f):
    t = y.safe_dump(v, default_flow_style=f).strip()
    return t[:-4] if t.endswith('\n...') else t
def enc(v):
    try:
        return e.yaml_encode(v)
    except TypeError:
        return 'TypeError'
def q(f, v):
    return '-' if isinstance(v, (list, dict)) else f(v)
out = []
for v in msgpack.unpackb(open(sys.argv[1], 'rb').read(), raw=False, strict_map_key=False):
    out += [fmt(v, True), fmt(v, False), enc(v), q(e.yaml_dquote, v), q(e.yaml_squote, v)]
sys.stdout.write('\x00--\x00'.join(out))
"#;

/// Every case byte for byte against Salt 3007 in the venv.
#[test]
fn matches_salt() {
    let Some(python) = crate::venv_python() else {
        return;
    };
    let cases = cases();
    let mut packed = Vec::new();
    rmpv::encode::write_value(&mut packed, &Value::Array(cases.clone())).unwrap();
    let input = std::env::temp_dir().join(format!("yaml-dump-{}.msgpack", std::process::id()));
    std::fs::write(&input, packed).unwrap();
    let got = std::process::Command::new(&python)
        .env("PYTHONIOENCODING", "utf-8")
        .args(["-c", SCRIPT])
        .arg(&input)
        .output()
        .unwrap();
    std::fs::remove_file(&input).unwrap();
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert!(got.status.success(), "{stderr}");
    let want = String::from_utf8(got.stdout).unwrap();
    let want: Vec<&str> = want.split("\0--\0").collect();
    let ours: Vec<String> = cases.iter().flat_map(ours).collect();
    assert_eq!(ours.len(), want.len());
    let mut bad = 0;
    for (n, (o, w)) in ours.iter().zip(&want).enumerate() {
        if o != w {
            bad += 1;
            println!("case {} output {}: {:?}", n / 5, n % 5, cases[n / 5]);
            println!(" ours: {o:?}\n salt: {w:?}");
        }
    }
    let total = ours.len();
    println!(
        "{} of {total} outputs ({} cases) match Salt 3007",
        total - bad,
        cases.len()
    );
    assert_eq!(bad, 0);
}

/// The filters as templates call them.
#[test]
fn jinja_filters() {
    struct NoFiles;
    impl crate::Loader for NoFiles {
        fn load(&self, _: &str, _: &str) -> Result<Option<String>, String> {
            Ok(None)
        }
    }
    let render = |t: &str| {
        crate::render_jinja_text(t, &crate::Context::default(), std::sync::Arc::new(NoFiles))
    };
    let t = "{{ {'b': [1, 'yes'], 'a': none} | yaml(False) }}|{{ {'b': [1]} | yaml }}|\
             {{ 'é' | yaml_dquote }}|{{ none | yaml_squote }}|{{ 1.5 | yaml_encode }}";
    assert_eq!(
        render(t).unwrap(),
        "a: null\nb:\n- 1\n- 'yes'|{b: [1]}|\"\\xE9\"|'None'|1.5"
    );
    let e = render("{{ [1] | yaml_encode }}").unwrap_err().to_string();
    assert!(
        e.contains("yaml_encode() only works with YAML scalar data"),
        "{e}"
    );
}
