//! Building and sending publishes (§7.1, §7.2).

use rmpv::Value;
use salt_transport::Publisher;

use crate::state::Shared;

/// A job to publish, already authorised.
#[derive(Clone, Debug)]
pub struct Job {
    /// Function.
    pub fun: String,
    /// Arguments.
    pub arg: Vec<Value>,
    /// Target (a list for `tgt_type: list`).
    pub tgt: Value,
    /// Job id.
    pub jid: String,
    /// Returner (`""`).
    pub ret: String,
    /// Target type name.
    pub tgt_type: String,
    /// Publishing user.
    pub user: String,
}

impl Job {
    /// The clear job load in Salt's key order (without `serial`).
    pub fn load(&self) -> Value {
        let t = Value::from;
        Value::Map(vec![
            (t("fun"), t(self.fun.as_str())),
            (t("arg"), Value::Array(self.arg.clone())),
            (t("tgt"), self.tgt.clone()),
            (t("jid"), t(self.jid.as_str())),
            (t("ret"), t(self.ret.as_str())),
            (t("tgt_type"), t(self.tgt_type.as_str())),
            (t("user"), t(self.user.as_str())),
        ])
    }
}

/// Publish failures.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// Signing the payload failed.
    #[error("signing the publish: {0}")]
    Sign(#[from] salt_pki::Error),
    /// The PUB socket is gone.
    #[error("publisher: {0}")]
    Transport(#[from] salt_transport::TransportError),
}

/// Encrypt `job` with the publish key (next serial), sign it if `sign_pub_messages`, and
/// send it as one frame. Blocking (one RSA signature): call from the worker pool.
pub fn publish(shared: &Shared, publisher: &Publisher, job: &Job) -> Result<(), PublishError> {
    let t = Value::from;
    shared.aes.with_next_serial(|key, serial| {
        let mut load = job.load();
        if let Value::Map(entries) = &mut load {
            entries.push((t("serial"), Value::from(serial)));
        }
        let ct = key.crypticle.dumps(&salt_proto::encode(&load), None);
        let mut payload = vec![(t("enc"), t("aes"))];
        if shared.cfg.sign_pub_messages {
            let sig = shared.keys.key.sign(shared.publish_sig_algo, &ct)?;
            payload.push((t("load"), Value::Binary(ct)));
            payload.push((t("sig"), Value::Binary(sig)));
            payload.push((t("sig_algo"), t(shared.publish_sig_algo.as_str())));
        } else {
            payload.push((t("load"), Value::Binary(ct)));
        }
        publisher.publish(vec![salt_proto::encode(&Value::Map(payload))])?;
        shared.metrics.publishes.inc();
        tracing::info!(
            "Published job {} ({}) to {} {}",
            job.jid,
            job.fun,
            job.tgt_type,
            target_text(&job.tgt)
        );
        Ok(())
    })
}

/// The target for log lines: a string as written (`web*`), a list as `a,b`.
fn target_text(tgt: &Value) -> String {
    match tgt {
        Value::String(s) => s.as_str().unwrap_or_default().to_owned(),
        Value::Array(items) => items.iter().map(target_text).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod target_text_tests {
    use super::*;

    #[test]
    fn targets_print_once_quoted_or_not_at_all() {
        assert_eq!(target_text(&Value::from("*")), "*");
        assert_eq!(
            target_text(&Value::Array(vec![Value::from("a"), Value::from("b")])),
            "a,b"
        );
    }
}
