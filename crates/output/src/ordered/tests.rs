use super::*;

fn listing() -> Val {
    Val::Map(vec![
        ("minions".into(), Val::List(vec!["acc1".into()])),
        (
            "minions_pre".into(),
            Val::List(vec!["Alpha".into(), "db1".into()]),
        ),
        ("minions_rejected".into(), Val::List(vec![])),
        ("minions_denied".into(), Val::List(vec!["web1".into()])),
    ])
}
const PLAIN: Style = Style {
    color: false,
    indent: None,
};

#[test]
fn key_outputter_plain_and_colored() {
    assert_eq!(
        render(&listing(), Outputter::Key, PLAIN),
        "Accepted Keys:\nacc1\nDenied Keys:\nweb1\nUnaccepted Keys:\nAlpha\ndb1\nRejected Keys:"
    );
    let colored = render(
        &listing(),
        Outputter::Key,
        Style {
            color: true,
            indent: None,
        },
    );
    assert!(colored.starts_with("\x1b[0;1;32mAccepted Keys:\x1b[0;0m\n\x1b[0;32macc1\x1b[0;0m\n"));
}

/// `strip_esc_sequence`: an escape in an id is printed as `?`, in lists and in maps.
#[test]
fn key_outputter_strips_escapes() {
    let v = Val::Map(vec![
        (
            "minions".into(),
            Val::List(vec!["a\x1b[31mb".into(), "c".into()]),
        ),
        (
            "minions_pre".into(),
            Val::Map(vec![("d\x1be".into(), Val::Str("fp".into()))]),
        ),
    ]);
    assert_eq!(
        render(&v, Outputter::Key, PLAIN),
        "Accepted Keys:\na?[31mb\nc\nUnaccepted Keys:\nd?e:  fp"
    );
}

#[test]
fn key_falls_back_to_nested() {
    let v = Val::ret(Val::Bool(true));
    assert_eq!(render(&v, Outputter::Key, PLAIN), "return:\n    True");
}

#[test]
fn json_like_python() {
    assert_eq!(
        render(&listing(), Outputter::Json, PLAIN),
        "{\n    \"minions\": [\n        \"acc1\"\n    ],\n    \"minions_pre\": [\n        \"Alpha\",\n        \"db1\"\n    ],\n    \"minions_rejected\": [],\n    \"minions_denied\": [\n        \"web1\"\n    ]\n}"
    );
    let one = Style {
        color: false,
        indent: Some(-1),
    };
    assert_eq!(
        render(&listing(), Outputter::Json, one),
        "{\"minions\": [\"acc1\"], \"minions_pre\": [\"Alpha\", \"db1\"], \"minions_rejected\": [], \"minions_denied\": [\"web1\"]}"
    );
}

#[test]
fn yaml_like_pyyaml() {
    assert_eq!(
        render(&listing(), Outputter::Yaml, PLAIN),
        "minions:\n- acc1\nminions_denied:\n- web1\nminions_pre:\n- Alpha\n- db1\nminions_rejected: []"
    );
    let pem = Val::Map(vec![(
        "minions".into(),
        Val::Map(vec![(
            "a".into(),
            Val::Str("-----BEGIN X-----\nAB\n".into()),
        )]),
    )]);
    assert_eq!(
        render(&pem, Outputter::Yaml, PLAIN),
        "minions:\n  a: '-----BEGIN X-----\n\n    AB\n\n    '"
    );
    for (text, want) in [
        ("yes", "'yes'"),
        ("12:34:56", "'12:34:56'"),
        ("ab:cd:12", "ab:cd:12"),
        ("-a", "-a"),
        ("#a", "'#a'"),
    ] {
        assert_eq!(render(&Val::Str(text.into()), Outputter::Yaml, PLAIN), want);
    }
}

#[test]
fn nested_and_txt_and_raw() {
    assert_eq!(
        render(&listing(), Outputter::Nested, PLAIN),
        "minions:\n    - acc1\nminions_denied:\n    - web1\nminions_pre:\n    - Alpha\n    - db1\nminions_rejected:"
    );
    assert_eq!(
        render(&listing(), Outputter::Txt, PLAIN),
        "minions: ['acc1']\nminions_pre: ['Alpha', 'db1']\nminions_rejected: []\nminions_denied: ['web1']"
    );
    assert_eq!(
        render(
            &Val::Map(vec![("a".into(), Val::Str("it's".into()))]),
            Outputter::Raw,
            PLAIN
        ),
        "{'a': \"it's\"}"
    );
    let fp = Val::Map(vec![(
        "minions".into(),
        Val::Map(vec![("a".into(), Val::Str("ab:cd".into()))]),
    )]);
    assert_eq!(
        render(&fp, Outputter::Nested, PLAIN),
        "minions:\n    ----------\n    a:\n        ab:cd"
    );
}
