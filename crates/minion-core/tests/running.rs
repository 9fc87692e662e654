//! `saltutil.running` / `find_job` / `kill_job` see the jobs in flight, and a killed job
//! returns nothing and takes its commands with it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmpv::Value;
use salt_minion_core::job::{self, Job};
use salt_minion_core::modules::{ExecContext, call};

fn ctx() -> ExecContext {
    ExecContext::new("m1", Arc::new(Value::Map(vec![])))
}

fn load(jid: &str, fun: &str, arg: Vec<Value>) -> Value {
    Value::Map(vec![
        (Value::from("fun"), Value::from(fun)),
        (Value::from("arg"), Value::Array(arg)),
        (Value::from("tgt"), Value::from("m1")),
        (Value::from("jid"), Value::from(jid)),
        (Value::from("user"), Value::from("root")),
    ])
}

async fn util(fun: &str, arg: Vec<Value>) -> Value {
    let l = load("20250101000000000099", fun, arg.clone());
    call(fun, &arg, &l, &ctx()).await.ret
}

fn get<'a>(m: &'a Value, k: &str) -> Option<&'a Value> {
    m.as_map()?
        .iter()
        .find(|(key, _)| key.as_str() == Some(k))
        .map(|(_, v)| v)
}

fn sleepers(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| {
            String::from_utf8_lossy(c).replace('\0', " ").trim() == format!("sleep {marker}")
        })
        .count()
}

#[tokio::test]
async fn running_find_and_kill() {
    let jid = "20250101000000000042";
    let j = Job::from_load(
        salt_proto::msg::JobLoad::from_value(&load(
            jid,
            "cmd.run",
            vec![Value::from("sleep 37.25; echo done")],
        ))
        .unwrap(),
    )
    .unwrap();
    let task = tokio::spawn(async move { job::run(&j, &ctx()).await });

    let deadline = Instant::now() + Duration::from_secs(10);
    while sleepers("37.25") == 0 {
        assert!(Instant::now() < deadline, "the job's command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let Value::Array(all) = util("saltutil.running", vec![]).await else {
        panic!()
    };
    let mine: Vec<&Value> = all
        .iter()
        .filter(|d| get(d, "jid") == Some(&Value::from(jid)))
        .collect();
    assert_eq!(mine.len(), 1, "{all:?}");
    assert_eq!(get(mine[0], "pid"), Some(&Value::from(std::process::id())));
    assert_eq!(get(mine[0], "fun"), Some(&Value::from("cmd.run")));
    // The calling job is not listed, as in Salt.
    assert!(
        all.iter()
            .all(|d| get(d, "jid") != Some(&Value::from("20250101000000000099")))
    );

    let found = util("saltutil.find_job", vec![Value::from(jid)]).await;
    assert_eq!(get(&found, "jid"), Some(&Value::from(jid)));
    assert_eq!(
        util("saltutil.find_job", vec![Value::from("1")]).await,
        Value::Map(vec![])
    );

    let msg = util("saltutil.kill_job", vec![Value::from(jid)]).await;
    assert_eq!(
        msg,
        Value::from(format!(
            "Signal 9 sent to job {jid} at pid {}",
            std::process::id()
        ))
    );
    let ret = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
    assert!(ret.is_none(), "a killed job returns nothing");
    assert_eq!(
        util("saltutil.find_job", vec![Value::from(jid)]).await,
        Value::Map(vec![])
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while sleepers("37.25") != 0 {
        assert!(
            Instant::now() < deadline,
            "the job's command outlived the kill"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        util("saltutil.kill_job", vec![Value::from(jid)]).await,
        Value::from("")
    );
    let r = util(
        "saltutil.signal_job",
        vec![Value::from(jid), Value::from(19)],
    )
    .await;
    assert!(
        r.as_str().unwrap().contains("signal 19 cannot be sent"),
        "{r:?}"
    );
}

#[tokio::test]
async fn sync_functions_say_they_load_nothing() {
    let r = util("saltutil.sync_modules", vec![]).await;
    assert!(
        r.as_str().unwrap().starts_with(
            "ERROR: saltutil.sync_modules: salt-rs minions do not load custom Python modules"
        ),
        "{r:?}"
    );
}
