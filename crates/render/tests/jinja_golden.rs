//! The Jinja stage against Salt's own `jinja` renderer (3007.17's minion loader, via
//! `tests/salt/render_cases.py`): the `salt` dunder by attribute, `grains`/`pillar`/`opts`
//! attributes, Python `%` formatting and `str`/`list`/`dict` methods, `log`, the variables
//! of an SLS template, `import_*`/`load_*`, loop controls, the `callable` test. Each case
//! renders the same text as Salt, or fails where Salt fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use salt_render::{Context, Loader, render_jinja_text, yaml};

/// (template, sls, tplfile)
const CASES: &[(&str, &str, &str)] = &[
    // 1. attribute access into the dunders
    (
        "{{ salt.file.dirname('/a/b/c') }}|{{ salt['file.basename']('/a/b/c') }}",
        "",
        "",
    ),
    (
        "{{ salt.file.join('/a', 'b', 'c.conf') }}|{{ salt['file.join']('a', '/b') }}",
        "",
        "",
    ),
    (
        "{{ grains.os_family }}|{{ grains['id'] }}|{{ grains.get('nope', 'd') }}",
        "",
        "",
    ),
    (
        "{{ pillar.get('app') }}|{{ pillar.app.port }}|{{ pillar.get('x:y', 'dflt') }}",
        "",
        "",
    ),
    (
        "{{ opts.get('renderer_test_key') }}|{{ opts['renderer_test_key'] }}",
        "",
        "",
    ),
    (
        "{{ salt.pillar.get('app:port') }}|{{ salt.grains.get('os_family') }}",
        "",
        "",
    ),
    (
        "{{ salt.config.get('app:name') }}|{{ salt['config.option']('renderer_test_key') }}",
        "",
        "",
    ),
    (
        "{% set d = {'a': {'b': 1}, 'l': [1]} %}{% do salt['defaults.merge'](d, {'a': {'c': 2}, 'l': [2]}) %}{{ d }}",
        "",
        "",
    ),
    (
        "{% set d = {'l': [1]} %}{% set r = salt.defaults.merge(d, {'l': [1, 2]}, merge_lists=True, in_place=False) %}{{ d }}{{ r }}",
        "",
        "",
    ),
    (
        "{{ salt['status.time'] is callable }}|{{ none is callable }}|{{ 'x' is callable }}",
        "",
        "",
    ),
    // 2. Python % formatting
    (
        "{{ '/home/%s' % grains.id }}|{{ '%s-%d' % ('a', 3) }}|{{ '%(x)s/%(y)05.1f' % {'x': 'q', 'y': 2.25} }}",
        "",
        "",
    ),
    (
        "{{ '%5s|%-5s|%05d|%+d|%x|%X|%o|%e|%g|%g' % ('ab', 'cd', 42, 7, 255, 255, 8, 12345.678, 0.00001, 123456789) }}",
        "",
        "",
    ),
    (
        "{{ '%r %s %s %%' % ('a', none, [1, 'b']) }}|{{ '%s' % (1,) }}|{{ 'x%sx' % pillar.app.port|string }}",
        "",
        "",
    ),
    ("{{ '%s %s' % ('only one',) }}", "", ""),
    ("{{ '%d' % 'nope' }}", "", ""),
    // 2. str methods
    (
        "{{ 'a/b/c'.rpartition('/') }}|{{ 'a/b/c'.partition('/') }}|{{ 'abc'.partition('/') }}",
        "",
        "",
    ),
    (
        "{{ 'a,b,c,d'.split(',', 2) }}|{{ 'a,b,c,d'.rsplit(',', 1) }}|{{ ' a  b '.split() }}|{{ ' a  b c'.rsplit(None, 1) }}",
        "",
        "",
    ),
    (
        "{{ 'abc.conf'.startswith(('x', 'ab')) }}|{{ 'abc.conf'.endswith('.conf') }}|{{ 'xxhixx'.strip('x') }}|{{ 'a-b'.replace('-', '_') }}",
        "",
        "",
    ),
    (
        "{{ '{}-{}'.format('a', 1) }}|{{ '-'.join(['a', 'b']) }}|{{ 'aBc dEf'.upper() }}|{{ 'aBc dEf'.lower() }}|{{ 'aBc dEf'.title() }}|{{ 'aBc dEf'.capitalize() }}",
        "",
        "",
    ),
    (
        "{{ '42'.zfill(5) }}|{{ '-42'.zfill(5) }}|{{ 'hello'.find('l') }}|{{ 'hello'.index('l') }}|{{ 'hello'.rindex('l') }}|{{ 'hello'.count('l') }}|{{ '12'.isdigit() }}|{{ 'ab'.isalpha() }}",
        "",
        "",
    ),
    (
        "{{ 'ab'.center(7, '*') }}|{{ 'ab'.ljust(5, '.') }}|{{ 'ab'.rjust(5) }}|{{ 'Ab'.swapcase() }}",
        "",
        "",
    ),
    ("{{ 'hello'.index('z') }}", "", ""),
    // 2. list and dict methods
    (
        "{% set l = [3, 1] %}{% do l.append(2) %}{% do l.extend([5]) %}{% do l.insert(0, 9) %}{{ l.pop() }}{{ l }}{{ l.index(1) }}{{ l.count(3) }}",
        "",
        "",
    ),
    (
        "{% set p = 'a/b'.split('/') %}{% do p.append('c') %}{{ p }}",
        "",
        "",
    ),
    (
        "{% set d = {'a': 1} %}{% do d.update({'b': 2}) %}{{ d.setdefault('c', 3) }}{{ d.pop('a') }}{{ d.get('z', 0) }}{{ d.keys()|list }}{{ d.values()|list }}{{ d.items()|list }}{{ d.copy() }}",
        "",
        "",
    ),
    // 3. log
    (
        "{% do salt.log.debug('from a template') %}{% do salt['log.info']('x') %}{% do salt.log.warning('w') %}{% do salt.log.error('e') %}{% do salt.log.critical('c') %}ok",
        "",
        "",
    ),
    ("{% do log.debug('bare log') %}ok", "", ""),
    // 4. SLS variables
    (
        "{{ sls }}|{{ slspath }}|{{ slsdotpath }}|{{ slscolonpath }}|{{ sls_path }}|{{ tpldir }}|{{ tplfile }}|{{ tpldot }}|{{ tplpath }}|{{ saltenv }}",
        "app.web",
        "app/web/init.sls",
    ),
    (
        "{{ sls }}|{{ slspath }}|{{ slsdotpath }}|{{ sls_path }}|{{ tpldir }}|{{ tplfile }}|{{ tpldot }}",
        "app.web",
        "app/web.sls",
    ),
    (
        "{{ sls }}|[{{ slspath }}]|{{ tpldir }}|{{ tplfile }}|[{{ tpldot }}]",
        "top",
        "top.sls",
    ),
    ("{{ tplroot }}", "app.web", "app/web.sls"),
    ("{{ env }}", "app.web", "app/web.sls"),
    // 5. import_* / load_* and the formula template's conventions
    (
        "{% import_yaml 'app/defaults.yaml' as d %}{% import_json 'app/d.json' as j %}{% import_text 'app/t.txt' as t %}{{ d }}|{{ j }}|{{ t }}",
        "",
        "",
    ),
    (
        "{% load_yaml as y %}a: [1, 2]{% endload %}{% load_json as js %}{\"k\": true}{% endload %}{% load_text as tx %}plain{% endload %}{{ y }}|{{ js }}|{{ tx }}",
        "",
        "",
    ),
    ("{{ 'a: 1'|load_yaml }}|{{ '[1]'|load_json }}", "", ""),
    (
        "{%- set tplroot = tpldir.split('/')[0] %}{%- from tplroot ~ '/map.jinja' import mapdata with context %}{{ mapdata }}",
        "app.web",
        "app/web/init.sls",
    ),
    // filter_by with a false merge (pillar.get's '' default): no merge, as Salt's `if merge:`
    (
        "{{ salt['grains.filter_by']({'Debian': {'a': 1}}, merge='') }} {{ salt['grains.filter_by']({'Debian': {'a': 1}}, merge=none) }}",
        "",
        "",
    ),
    // loop controls, as Jinja2's loopcontrols extension
    (
        "{% for i in [1, 2, 3, 4] %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}",
        "",
        "",
    ),
];

fn files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("app/defaults.yaml", "app:\n  port: 80\n  mode: 0644\n"),
        ("app/d.json", "{\"b\": [1, 2]}"),
        ("app/t.txt", "some text\n"),
        (
            "app/map.jinja",
            "{%- import_yaml tplroot ~ '/defaults.yaml' as d %}\n{%- set mapdata = salt['grains.filter_by']({'Debian': {'pkg': 'a'}}, merge=d.app) %}",
        ),
    ]
}

struct Files(HashMap<String, String>);

impl Loader for Files {
    fn load(&self, path: &str, _saltenv: &str) -> Result<Option<String>, String> {
        Ok(self.0.get(path).cloned())
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn jinja_like_salts() {
    let Some(venv) = salt_testkit::require(salt_testkit::salt_venv("3007.17")) else {
        return;
    };
    let python = venv.join("bin/python");
    let tmp = std::env::temp_dir().join(format!("salt-render-golden-{}", std::process::id()));
    let tree = tmp.join("files");
    for (p, text) in files() {
        let f = tree.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    }
    let grains = serde_json::json!({"id": "web1", "os_family": "Debian", "os": "Debian"});
    let pillar = serde_json::json!({"app": {"port": 8080, "name": "shop"}});
    let opts = serde_json::json!({"renderer_test_key": "from-opts", "id": "web1"});
    let req = serde_json::json!({
        "root": tmp,
        "files": tree,
        "grains": grains,
        "pillar": pillar,
        "opts": opts,
        "cases": CASES.iter().map(|(t, sls, f)| serde_json::json!({"tmpl": t, "sls": sls, "tplfile": f})).collect::<Vec<_>>(),
    });
    let mut child = std::process::Command::new(&python)
        .arg(workspace().join("crates/render/tests/salt/render_cases.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), req.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(
        out.status.success(),
        "render_cases.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();

    let loader: Arc<dyn Loader> = Arc::new(Files(
        files()
            .into_iter()
            .map(|(p, t)| (p.to_owned(), t.to_owned()))
            .collect(),
    ));
    let mp = |v: &serde_json::Value| salt_compat::json::json_to_msgpack(v);
    let mut failures = Vec::new();
    for ((tmpl, sls, tplfile), want) in CASES.iter().zip(&want) {
        let ctx = Context {
            grains: mp(&grains),
            pillar: mp(&pillar),
            opts: mp(&opts),
            sls: (*sls).into(),
            tplfile: (*tplfile).into(),
            id: "web1".into(),
            ..Context::default()
        };
        let ours = render_jinja_text(tmpl, &ctx, loader.clone());
        let same = match (&ours, want.get("ok").and_then(|v| v.as_str())) {
            (Ok(text), Some(w)) => text == w,
            (Err(_), None) => true,
            _ => false,
        };
        if !same {
            failures.push(format!("{tmpl}\n  salt: {want}\n  ours: {ours:?}"));
        } else {
            println!("same: {tmpl}\n  -> {want}");
        }
    }
    let _ = yaml::load;
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from Salt:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}
