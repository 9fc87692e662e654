//! A formula-style tree rendered end to end: map.jinja with filter_by, import_yaml, do,
//! import of salt:// files, Salt's filters and YAML 1.1 scalars.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;

use rmpv::Value;
use salt_render::{Context, Loader, RenderError, render, yaml};

struct Files(HashMap<&'static str, &'static str>);

impl Loader for Files {
    fn load(&self, path: &str, _saltenv: &str) -> Result<Option<String>, String> {
        Ok(self.0.get(path).map(|s| (*s).to_owned()))
    }
}

fn files() -> Arc<dyn Loader> {
    Arc::new(Files(HashMap::from([
        (
            "nginx/map.jinja",
            r#"{% import_yaml "nginx/defaults.yaml" as defaults %}
{% set os_map = salt['grains.filter_by']({
    'Debian': {'pkg': 'nginx-full', 'user': 'www-data'},
    'RedHat': {'pkg': 'nginx', 'user': 'nginx'},
}, grain='os_family', merge=salt['pillar.get']('nginx:lookup')) %}
{% do defaults.nginx.update(os_map) %}
{% set nginx = defaults.nginx %}"#,
        ),
        (
            "nginx/defaults.yaml",
            "nginx:\n  port: 80\n  mode: 0644\n  workers: {{ grains['num_cpus'] }}\n",
        ),
    ])))
}

fn ctx() -> Context {
    let g = yaml::load("id: web1\nos_family: Debian\nnum_cpus: 4\nroles: [web, db, web]\n")
        .unwrap()
        .unwrap();
    Context {
        grains: g,
        pillar: yaml::load("nginx: {lookup: {user: custom}}")
            .unwrap()
            .unwrap(),
        sls: "nginx".into(),
        tplfile: "nginx/init.sls".into(),
        id: "web1".into(),
        ..Context::default()
    }
}

fn y(t: &str) -> Value {
    yaml::load(t).unwrap().unwrap()
}

#[test]
fn formula_tree_renders_like_salt() {
    let src = r#"{% from "nginx/map.jinja" import nginx with context %}
{% set extra = [] %}
{% for r in grains['roles']|unique %}{% do extra.append(r ~ '-x') %}{% endfor %}
{% set d = {} %}{% do d.update({'k': 'v'}) %}
nginx: {{ nginx|yaml }}
extra: {{ extra|json }}
d: {{ d|yaml }}
owner: owner-of-{{ grains["id"] }}
path: {{ slspath }}/{{ tpldir }}
seq: {{ 'one'|sequence|json }}
quoted: {{ 'yes'|yaml_dquote }}
enabled: on
"#;
    let out = render(src, &ctx(), files(), "jinja|yaml").unwrap();
    let want = y(r#"
nginx: {port: 80, mode: 644, workers: 4, pkg: nginx-full, user: custom}
extra: [web-x, db-x]
d: {k: v}
owner: owner-of-web1
path: nginx/nginx
seq: [one]
quoted: "yes"
enabled: true
"#);
    assert_eq!(sorted(out), sorted(want));
}

fn sorted(v: Value) -> Value {
    match v {
        Value::Map(mut m) => {
            m.sort_by_key(|(k, _)| salt_matcher_key(k));
            Value::Map(m.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        other => other,
    }
}

fn salt_matcher_key(k: &Value) -> String {
    k.as_str().unwrap_or_default().to_owned()
}

#[test]
fn shebangs_and_errors_name_what_is_missing() {
    let c = ctx();
    assert_eq!(
        render("#!yaml\na: '{{ x }}'\n", &c, files(), "jinja|yaml").unwrap(),
        y("a: '{{ x }}'")
    );
    assert_eq!(
        render("#!json\n{\"a\": 1}", &c, files(), "jinja|yaml").unwrap(),
        y("a: 1")
    );
    assert_eq!(
        render(
            "#!jinja|json\n{\"a\": \"{{ grains.id }}\"}",
            &c,
            files(),
            "jinja|yaml"
        )
        .unwrap(),
        y("a: web1")
    );
    // yamlex (Salt's serializer: `!aggregate`-aware maps), `or {}` for an empty document.
    assert_eq!(
        render(
            "#!jinja|yamlex\na: {{ grains.id }}\nb: [1, 2]",
            &c,
            files(),
            "jinja|yaml"
        )
        .unwrap(),
        y("a: web1\nb: [1, 2]")
    );
    assert_eq!(
        render("#!yamlex\n", &c, files(), "jinja|yaml").unwrap(),
        y("{}")
    );
    assert!(matches!(
        render("#!py\ndef run(): pass", &c, files(), "jinja|yaml"),
        Err(RenderError::Unsupported(r)) if r == "py"
    ));
    let e = render("a: {{ salt['cmd.run']('id') }}", &c, files(), "jinja|yaml").unwrap_err();
    assert!(e.to_string().contains("'cmd.run' is not available."), "{e}");
    // With the minion's modules behind the hook: its functions answer, others are named.
    struct Echo;
    impl salt_render::SaltFunctions for Echo {
        fn call(
            &self,
            fun: &str,
            args: &[Value],
            kwargs: &[(String, Value)],
        ) -> Option<Result<Value, String>> {
            match fun {
                "test.echo" => Some(Ok(args
                    .first()
                    .or(kwargs.first().map(|(_, v)| v))
                    .cloned()
                    .unwrap_or(Value::Nil))),
                "test.fail" => Some(Err("boom".into())),
                _ => None,
            }
        }
    }
    let mut h = c.clone();
    h.salt = salt_render::SaltHook(Some(Arc::new(Echo)));
    assert_eq!(
        render(
            "a: {{ salt['test.echo']('x') }}\nb: {{ salt['test.echo'](text='y') }}",
            &h,
            files(),
            "jinja|yaml"
        )
        .unwrap(),
        y("a: x\nb: y")
    );
    // `salt.mod.fun(...)` reaches the same functions as `salt['mod.fun'](...)`.
    assert_eq!(
        render(
            "a: {{ salt.test.echo('x') }}\nb: {{ salt.test.echo(text='y') }}",
            &h,
            files(),
            "jinja|yaml"
        )
        .unwrap(),
        y("a: x\nb: y")
    );
    // `#!py` (and any renderer salt-rs lacks) is refused by name.
    let e = render(
        "#!py\ndef run():\n    return {}\n",
        &h,
        files(),
        "jinja|yaml",
    )
    .unwrap_err();
    assert_eq!(e, RenderError::Unsupported("py".into()));
    assert_eq!(
        render("#!yamlex\na: 1\n", &h, files(), "jinja|yaml").unwrap(),
        y("a: 1")
    );
    let e = render("#!mako\na: 1\n", &h, files(), "jinja|yaml").unwrap_err();
    assert_eq!(e, RenderError::Unsupported("mako".into()));
    assert_eq!(
        render(
            "#!jinja|json\n{\"a\": {{ 1 + 1 }}}",
            &h,
            files(),
            "jinja|yaml"
        )
        .unwrap(),
        y("a: 2")
    );
    assert_eq!(
        render("#!yaml\na: '{{ x }}'", &h, files(), "jinja|yaml").unwrap(),
        y("a: '{{ x }}'")
    );
    let e = render("a: {{ salt['test.fail']() }}", &h, files(), "jinja|yaml").unwrap_err();
    assert!(
        e.to_string().contains("salt['test.fail'] failed: boom"),
        "{e}"
    );
    let e = render("a: {{ salt['nope.x']() }}", &h, files(), "jinja|yaml").unwrap_err();
    assert!(e.to_string().contains("'nope.x' is not available."), "{e}");
    let e = render("a: {{ nope }}", &c, files(), "jinja|yaml").unwrap_err();
    assert!(matches!(e, RenderError::Jinja(_)), "strict undefined: {e}");
    let e = render("a: 1\na: 2\n", &c, files(), "jinja|yaml").unwrap_err();
    assert!(e.to_string().contains("conflicting ID"), "{e}");
    assert_eq!(
        render("", &c, files(), "jinja|yaml").unwrap(),
        Value::Map(vec![])
    );
    assert_eq!(
        render(
            "{% load_yaml as v %}x: [1, 2]{% endload %}v: {{ v.x|json }}",
            &c,
            files(),
            "jinja|yaml"
        )
        .unwrap(),
        y("v: [1, 2]")
    );
}
