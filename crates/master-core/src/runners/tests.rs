//! Runner argument binding against Salt's signatures.

use super::*;

fn kw(pairs: Value) -> Value {
    let mut m = pairs.as_object().cloned().unwrap_or_default();
    m.insert("__kwarg__".into(), true.into());
    Value::Object(m)
}

#[test]
fn arguments_bind_to_salts_signatures() {
    // `salt-run manage.up 'web*'`: `tgt` is up's first parameter (down's is removekeys).
    let a = bind("manage.up", &[json!("web*")]).unwrap().unwrap();
    assert_eq!(a.text("tgt").as_deref(), Some("web*"));
    let a = bind("manage.down", &[json!(true), json!("db*")])
        .unwrap()
        .unwrap();
    assert!(a.flag("removekeys", false));
    assert_eq!(a.text("tgt").as_deref(), Some("db*"));
    // list_jobs(ext_source, outputter, search_metadata, search_function, search_target, ...)
    let a = bind(
        "jobs.list_jobs",
        &[Value::Null, Value::Null, Value::Null, json!("test.*")],
    )
    .unwrap()
    .unwrap();
    assert_eq!(a.text("search_function").as_deref(), Some("test.*"));
    assert_eq!(
        bind("cache.grains", &[]).unwrap().unwrap_err(),
        "Passed invalid arguments: grains() missing 1 required positional argument: 'tgt'"
    );
    assert!(
        bind("cache.grains", &[json!("*"), kw(json!({"any": 1}))])
            .unwrap()
            .is_ok()
    );
    assert_eq!(
        bind("jobs.list_jobs", &[kw(json!({"search_funcion": "x"}))])
            .unwrap()
            .unwrap_err(),
        "The following keyword arguments are not valid: search_funcion=x"
    );
    assert_eq!(
        bind("jobs.active", &[kw(json!({"display_progress": true}))])
            .unwrap()
            .unwrap_err(),
        "jobs.active: display_progress is not supported by salt-rs"
    );
    assert!(
        bind("jobs.active", &[kw(json!({"display_progress": false}))])
            .unwrap()
            .is_ok()
    );
    assert!(bind("jobs.nothing", &[]).is_none());
}

/// The `saltutil.sync_*` runners have Salt's signature for keyword binding too (a
/// reaction's or `salt.runner`'s own keys).
#[test]
fn sync_runners_have_params() {
    for fun in [
        "saltutil.sync_all",
        "saltutil.sync_modules",
        "saltutil.sync_eauth_tokens",
    ] {
        assert_eq!(params(fun), Some((SYNC_PARAMS, false)), "{fun}");
    }
    assert_eq!(params("saltutil.sync_nothing"), None);
    assert_eq!(params("saltutil.tokens"), None);
}
