//! `_master_opts`: the master options a minion's HighState and fileclient read
//! (`AESFuncs._master_opts` in Salt's `salt/master.py`), in Salt's key order.

use salt_config::FileServerConfig;
use salt_proto::Value;

/// The reply; with a truthy `env_only` in the load, only the top-file keys.
pub(crate) fn master_opts(cfg: &FileServerConfig, envs: &[String], env_only: bool) -> Value {
    let s = |v: &str| Value::from(v);
    let strs = |v: &[String]| Value::Array(v.iter().map(|x| s(x)).collect());
    let file_roots = envs.iter().map(|e| (s(e), Value::Array(vec![]))).collect();
    let mut m = vec![
        ("file_roots", Value::Map(file_roots)),
        (
            "top_file_merging_strategy",
            s(cfg.top_file_merging_strategy.as_str()),
        ),
        ("env_order", strs(&cfg.env_order)),
        ("default_top", s(&cfg.default_top)),
    ];
    if !env_only {
        m.extend([
            ("renderer", s(&cfg.renderer)),
            ("failhard", Value::Boolean(cfg.failhard)),
            ("state_top", s(&cfg.state_top)),
            (
                "state_top_saltenv",
                cfg.state_top_saltenv.as_deref().map_or(Value::Nil, s),
            ),
            ("nodegroups", json_map(&cfg.nodegroups)),
            ("state_auto_order", Value::Boolean(cfg.state_auto_order)),
            ("state_events", Value::Boolean(cfg.state_events)),
            ("state_aggregate", Value::Boolean(cfg.state_aggregate)),
            ("jinja_env", json_map(&cfg.jinja_env)),
            ("jinja_sls_env", json_map(&cfg.jinja_sls_env)),
            (
                "jinja_lstrip_blocks",
                Value::Boolean(cfg.jinja_lstrip_blocks),
            ),
            ("jinja_trim_blocks", Value::Boolean(cfg.jinja_trim_blocks)),
        ]);
    }
    Value::Map(m.into_iter().map(|(k, v)| (s(k), v)).collect())
}

fn json_map(m: &serde_json::Map<String, serde_json::Value>) -> Value {
    Value::Map(
        m.iter()
            .map(|(k, v)| {
                (
                    Value::from(k.as_str()),
                    salt_compat::json::json_to_msgpack(v),
                )
            })
            .collect(),
    )
}
