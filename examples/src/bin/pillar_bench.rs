//! Pillar compiles per second of our master's compiler (`salt_pillar::compile`,
//! the work of one `_pillar` request) for N minions over a pillar tree.
//!
//! `pillar_bench --tree DIR --grains FILE.json -n 1000 [--threads T]`; prints one line:
//! `ours: N compiles in S s = R compiles/s (T threads)`. Used by `scripts/bench-pillar.sh`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use clap::Parser;
use salt_compat::json::json_to_msgpack;
use salt_pillar::{Options, Request, compile};

#[derive(Parser)]
struct Args {
    /// The pillar tree (`pillar_roots: {base: [TREE]}`).
    #[arg(long)]
    tree: PathBuf,
    /// Grains of one minion as JSON (`salt-call --local grains.items --out json`'s `local`).
    #[arg(long)]
    grains: PathBuf,
    /// Minions (one compile each, ids `m0`..).
    #[arg(short = 'n', default_value_t = 1000)]
    n: usize,
    /// Compiling threads (the master's `worker_threads`).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Extra master config YAML appended (e.g. `nodegroups: {...}`).
    #[arg(long, default_value = "")]
    extra: String,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("master"),
        format!(
            "root_dir: {}\npillar_roots: {{base: [{}]}}\n{}\n",
            dir.path().display(),
            args.tree.display(),
            args.extra
        ),
    )?;
    let cfg = salt_config::MasterConfig::load(&salt_config::LoadOptions::new(dir.path()))
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .config;
    let cfg = Options::from(&cfg);
    let text = std::fs::read_to_string(&args.grains).context("grains file")?;
    let grains: serde_json::Value = serde_json::from_str(&text)?;
    let grains = json_to_msgpack(&grains);
    let per = args.n.div_ceil(args.threads.max(1));
    let t0 = Instant::now();
    let keys: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.threads.max(1))
            .map(|t| {
                let cfg = &cfg;
                let grains = &grains;
                s.spawn(move || {
                    let mut keys = 0;
                    for i in (t * per)..((t + 1) * per).min(args.n) {
                        let mut g = grains.clone();
                        if let rmpv::Value::Map(m) = &mut g {
                            m.retain(|(k, _)| k.as_str() != Some("id"));
                            m.push(("id".into(), format!("m{i}").into()));
                        }
                        let req = Request {
                            id: format!("m{i}"),
                            grains: g,
                            saltenv: None,
                            pillarenv: None,
                            pillar_override: rmpv::Value::Nil,
                            ext: None,
                            salt: salt_pillar::SaltHook::default(),
                        };
                        keys += compile(cfg, &req).as_map().map_or(0, Vec::len);
                    }
                    keys
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "ours: {} compiles in {secs:.2} s = {:.0} compiles/s ({} threads, {:.1} keys/minion)",
        args.n,
        args.n as f64 / secs,
        args.threads,
        keys as f64 / args.n as f64
    );
    Ok(())
}
