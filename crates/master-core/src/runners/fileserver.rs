//! Salt's `fileserver` runner over our roots file server: `update`, `envs`, `file_list`,
//! `dir_list`, `empty_dir_list`, `symlink_list` (the same answers a minion gets).

use rmpv::Value as Mp;
use serde_json::{Value, json};

use super::ctx::{Args, Ctx};
use salt_compat::json::msgpack_to_json;

/// Run one `fileserver.*` runner.
pub(crate) fn call(ctx: &Ctx, fun: &str, a: &Args) -> Result<Value, String> {
    let files = &ctx.shared.files;
    if fun == "fileserver.update" {
        return super::gitfs::update(&ctx.shared, a);
    }
    if let Some(b) = a.text("backend").filter(|b| b != "roots" && b != "gitfs") {
        return Err(format!(
            "fileserver backend {b:?} is not implemented by salt-rs (roots and gitfs only)"
        ));
    }
    let cmd = match fun {
        "fileserver.envs" => return Ok(json!(files.envs())),
        "fileserver.file_list" => "_file_list",
        "fileserver.dir_list" => "_dir_list",
        "fileserver.empty_dir_list" => "_file_list_emptydirs",
        _ => "_symlink_list",
    };
    let saltenv = a.text("saltenv").unwrap_or_else(|| "base".into());
    let load = Mp::Map(vec![
        (Mp::from("cmd"), Mp::from(cmd)),
        (Mp::from("saltenv"), Mp::from(saltenv.as_str())),
    ]);
    let got = files
        .handle(cmd, &load, "master")
        .unwrap_or(Mp::Array(vec![]));
    Ok(msgpack_to_json(&got))
}
