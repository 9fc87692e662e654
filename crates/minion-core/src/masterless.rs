//! A masterless minion (`file_client: local`, `salt-call --local`): `salt://` from
//! `file_roots` on this host, the pillar compiled here from `pillar_roots` by `salt-pillar`
//! (the compiler the master runs for `_pillar`).

use std::path::PathBuf;

use rmpv::Value;
use salt_states::LocalFileClient;

/// Where a masterless minion's files and pillar come from.
#[derive(Clone, Debug)]
pub struct Masterless {
    /// `file_roots`: saltenv -> directories, in order.
    pub file_roots: Vec<(String, Vec<PathBuf>)>,
    /// `pillar_roots` and the pillar options.
    pub pillar: salt_pillar::Options,
}

impl Masterless {
    /// From the minion's options map (its config file as loaded, with command-line
    /// overrides already applied): Salt's defaults for what is not set.
    pub fn from_opts(opts: &Value) -> Result<Self, String> {
        let file_roots = match salt_compat::map_get(opts, "file_roots") {
            None | Some(Value::Nil) => vec![(
                "base".to_owned(),
                vec![PathBuf::from("/srv/salt"), PathBuf::from("/srv/spm/salt")],
            )],
            Some(Value::Map(envs)) => envs
                .iter()
                .map(|(env, dirs)| {
                    let dirs = match dirs {
                        Value::Array(d) => d
                            .iter()
                            .map(|p| PathBuf::from(salt_compat::py_str(p)))
                            .collect(),
                        other => vec![PathBuf::from(salt_compat::py_str(other))],
                    };
                    (salt_compat::py_str(env), dirs)
                })
                .collect(),
            Some(other) => return Err(format!("file_roots: expected a map, got {other}")),
        };
        Ok(Self {
            file_roots,
            pillar: salt_pillar::Options::from_opts(opts)?,
        })
    }

    /// The file client over `file_roots`.
    pub fn file_client(&self) -> LocalFileClient {
        LocalFileClient {
            roots: self.file_roots.clone(),
        }
    }

    /// Compile the pillar of minion `id`.
    pub fn pillar(
        &self,
        id: &str,
        grains: &Value,
        saltenv: Option<&str>,
        pillarenv: Option<&str>,
        pillar_override: Value,
        salt: salt_render::SaltHook,
    ) -> Value {
        let req = salt_pillar::Request {
            id: id.to_owned(),
            grains: grains.clone(),
            saltenv: saltenv.map(str::to_owned),
            pillarenv: pillarenv.map(str::to_owned),
            pillar_override,
            ext: None,
            salt,
        };
        salt_pillar::compile(&self.pillar, &req)
    }
}
