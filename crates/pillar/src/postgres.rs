//! `postgres` (Salt's `salt/pillar/postgres.py` over `sql_base.py`): queries run against
//! PostgreSQL for the minion, their rows folded into nested mappings.
//!
//! The queries (positional ones into the pillar's top level, keyword ones under their key,
//! in key order) are Salt's: a string, `[query, depth]`, or `{query, depth, as_list,
//! as_json, with_lists, ignore_null}`. `%s` is the minion id, interpolated as psycopg2 does
//! (a quoted literal; exactly one `%s`, `%%` a percent sign). One connection (the master's
//! `postgres` option) serves all queries; a failing query ends the module with what the
//! earlier ones gave (logged), as Salt does. Columns of type boolean, integer, float, text
//! (`text`, `varchar`, `char`, `name`) and `json`/`jsonb` are read; any other type fails
//! the module naming it.

use rmpv::Value;
use tokio_postgres::types::{FromSql, Type};

use crate::{Options, Request};

mod fold;

/// One query as `extract_queries` normalizes it.
#[derive(Clone, Debug)]
pub(crate) struct Query {
    pub root: Option<String>,
    pub query: String,
    pub depth: i64,
    pub as_list: bool,
    pub as_json: bool,
    pub with_lists: Vec<i64>,
    pub ignore_null: bool,
}

/// Runs the `postgres` external pillar.
pub(crate) fn ext_pillar(cfg: &Options, req: &Request, arg: &Value) -> Result<Value, String> {
    let queries = extract_queries(arg)?;
    let conn = cfg.postgres.clone();
    let id = req.id.clone();
    // Off any async runtime the caller runs on: a thread of its own with its own runtime.
    let worker = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("starting the PostgreSQL client: {e}"))?;
        rt.block_on(run(conn, id, queries))
    });
    worker
        .join()
        .map_err(|_| "the PostgreSQL query thread panicked".to_owned())?
}

async fn run(
    conn: salt_config::PgPillarConn,
    id: String,
    queries: Vec<Query>,
) -> Result<Value, String> {
    let mut pg = tokio_postgres::Config::new();
    pg.host(&conn.host)
        .port(conn.port)
        .user(&conn.user)
        .password(conn.pass.expose())
        .dbname(&conn.db);
    let (client, connection) = pg
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| format!("connecting to PostgreSQL at {}: {e}", conn.host))?;
    let driver = tokio::spawn(connection);
    let mut state = fold::State::new();
    for q in queries {
        let sql = interpolate(&q.query, &id)?;
        let rows = match client.query(sql.as_str(), &[]).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::error!("Error in ext_pillar POSTGRES: {e}");
                break;
            }
        };
        let names: Vec<String> = match rows.first() {
            Some(r) => r.columns().iter().map(|c| c.name().to_owned()).collect(),
            None => match client.prepare(sql.as_str()).await {
                Ok(st) => st.columns().iter().map(|c| c.name().to_owned()).collect(),
                Err(e) => {
                    tracing::error!("Error in ext_pillar POSTGRES: {e}");
                    break;
                }
            },
        };
        let mut values = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut r = Vec::with_capacity(row.len());
            for (i, col) in row.columns().iter().enumerate() {
                let raw: Raw = row.try_get(i).map_err(|e| e.to_string())?;
                r.push(decode(col.type_(), raw.0, col.name())?);
            }
            values.push(r);
        }
        state.query(&q, &names, values)?;
    }
    drop(client);
    let _ = driver.await;
    Ok(state.into_result())
}

/// A column's value in the binary format, whatever its type.
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }
    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A value as psycopg2 gives it.
fn decode(ty: &Type, raw: Option<&[u8]>, col: &str) -> Result<Value, String> {
    let Some(b) = raw else {
        return Ok(Value::Nil);
    };
    let bad = || format!("column {col}: malformed {ty} value");
    let be = |n: usize| -> Result<[u8; 8], String> {
        let mut a = [0u8; 8];
        if b.len() != n {
            return Err(bad());
        }
        a[8 - n..].copy_from_slice(b);
        Ok(a)
    };
    Ok(match *ty {
        Type::BOOL => Value::Boolean(b.first().is_some_and(|x| *x != 0)),
        Type::INT2 => Value::from(i16::from_be_bytes([b[0], *b.get(1).ok_or_else(bad)?])),
        Type::INT4 => Value::from(i32::from_be_bytes(b.try_into().map_err(|_| bad())?)),
        Type::INT8 => Value::from(i64::from_be_bytes(be(8)?)),
        Type::FLOAT4 => Value::F64(f64::from(f32::from_be_bytes(
            b.try_into().map_err(|_| bad())?,
        ))),
        Type::FLOAT8 => Value::F64(f64::from_be_bytes(be(8)?)),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            Value::from(std::str::from_utf8(b).map_err(|_| bad())?)
        }
        Type::JSON | Type::JSONB => {
            let text = if *ty == Type::JSONB {
                b.get(1..).ok_or_else(bad)?
            } else {
                b
            };
            let v: serde_json::Value = serde_json::from_slice(text).map_err(|_| bad())?;
            salt_compat::json::json_to_msgpack(&v)
        }
        _ => {
            return Err(format!(
                "column {col}: PostgreSQL type {ty} is not supported by salt-rs's postgres \
                 ext_pillar (boolean, integer, float, text and json are)"
            ));
        }
    })
}

/// psycopg2's `cursor.execute(query, (minion_id,))`: `%s` the quoted id, `%%` a `%`.
fn interpolate(query: &str, id: &str) -> Result<String, String> {
    let mut out = String::with_capacity(query.len() + id.len());
    let mut used = 0;
    let mut chars = query.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('s') => {
                used += 1;
                if used > 1 {
                    return Err("tuple index out of range".to_owned());
                }
                out.push('\'');
                out.push_str(&id.replace('\'', "''"));
                out.push('\'');
            }
            Some('(') => return Err("format requires a mapping".to_owned()),
            Some(other) => {
                return Err(format!("unsupported format character '{other}'"));
            }
            None => return Err("incomplete format".to_owned()),
        }
    }
    if used == 0 {
        return Err("not all arguments converted during string formatting".to_owned());
    }
    Ok(out)
}

/// `extract_queries(args, kwargs)`.
fn extract_queries(arg: &Value) -> Result<Vec<Query>, String> {
    let mut buf: Vec<(Option<String>, Value)> = Vec::new();
    match arg {
        Value::Array(a) => buf.extend(a.iter().map(|v| (None, v.clone()))),
        Value::Map(m) => {
            let mut kw: Vec<(String, Value)> = m
                .iter()
                .map(|(k, v)| (salt_compat::py_str(k), v.clone()))
                .collect();
            kw.sort_by(|a, b| a.0.cmp(&b.0));
            buf.extend(kw.into_iter().map(|(k, v)| (Some(k), v)));
        }
        other => buf.push((None, other.clone())),
    }
    let mut out = Vec::new();
    for (root, v) in buf {
        let mut q = Query {
            root,
            query: String::new(),
            depth: 0,
            as_list: false,
            as_json: false,
            with_lists: Vec::new(),
            ignore_null: false,
        };
        match &v {
            Value::String(s) => match s.as_str() {
                Some(s) if !s.is_empty() => q.query = s.to_owned(),
                _ => continue,
            },
            Value::Array(a) => {
                if a.first().is_none_or(|f| !crate::ext::truthy(f)) {
                    continue;
                }
                q.query = a[0].as_str().ok_or("a query must be a string")?.to_owned();
                if let Some(d) = a.get(1) {
                    q.depth = d.as_i64().ok_or("depth must be an integer")?;
                }
            }
            Value::Map(m) => {
                let get = |k: &str| salt_compat::map_get(&v, k);
                match get("query").and_then(Value::as_str) {
                    Some(s) if !s.is_empty() => q.query = s.to_owned(),
                    _ => continue,
                }
                let flag = |k: &str| get(k).is_some_and(crate::ext::truthy);
                if let Some(d) = get("depth") {
                    q.depth = d.as_i64().ok_or("depth must be an integer")?;
                }
                q.as_list = flag("as_list");
                q.as_json = flag("as_json");
                q.ignore_null = flag("ignore_null");
                q.with_lists = match get("with_lists") {
                    None | Some(Value::Nil) => Vec::new(),
                    Some(Value::String(s)) => s
                        .as_str()
                        .unwrap_or_default()
                        .split(',')
                        .filter(|p| !p.is_empty() || s.as_str() != Some(""))
                        .map(|p| {
                            p.trim().parse::<i64>().map_err(|_| {
                                format!("invalid literal for int() with base 10: '{p}'")
                            })
                        })
                        .collect::<Result<_, _>>()?,
                    Some(Value::Array(a)) => a.iter().filter_map(Value::as_i64).collect(),
                    Some(_) => Vec::new(),
                };
                let _ = m;
            }
            _ => continue,
        }
        out.push(q);
    }
    Ok(out)
}
