//! Building and sending publishes (§7.1, §7.2).

use rmpv::Value;
use salt_proto::msg::{JobLoad, PublishPayload};
use salt_transport::Publisher;

use crate::shared::Shared;

/// A job to publish, already authorised.
#[derive(Clone, Debug)]
pub(crate) struct Job {
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
    /// `salt --start-event` (Salt 3008): minions fire `salt/job/<jid>/start/<id>` on taking it.
    pub start_event: bool,
}

impl Job {
    /// The job load (`salt_proto::msg::JobLoad`, Salt's key order), without `serial`.
    pub(crate) fn job_load(&self) -> JobLoad {
        JobLoad {
            fun: Value::from(self.fun.as_str()),
            arg: self.arg.clone(),
            tgt: self.tgt.clone(),
            jid: self.jid.clone(),
            ret: Some(Value::from(self.ret.as_str())),
            tgt_type: Some(self.tgt_type.clone()),
            user: Some(self.user.clone()),
            serial: None,
            extra: if self.start_event {
                vec![(Value::from("start_event"), Value::Boolean(true))]
            } else {
                Vec::new()
            },
        }
    }

    /// The clear job load in Salt's key order (without `serial`), as the job cache keeps it.
    pub(crate) fn load(&self) -> Value {
        self.job_load().to_value()
    }
}

/// Publish failures.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PublishError {
    /// Signing the payload failed.
    #[error("signing the publish: {0}")]
    Sign(#[from] salt_pki::Error),
    /// The PUB socket is gone.
    #[error("publisher: {0}")]
    Transport(#[from] salt_transport::TransportError),
}

/// Encrypt `job` with the publish key (next serial), sign it if `sign_pub_messages`, and
/// send it as one frame. Blocking (one RSA signature): call from the worker pool. Publishes
/// are signed in parallel and sent in serial order ([`crate::keys::aes::Ticket`]).
pub(crate) fn publish(
    shared: &Shared,
    publisher: &Publisher,
    job: &Job,
) -> Result<(), PublishError> {
    let ticket = shared.aes.ticket();
    let mut load = job.job_load();
    load.serial = Some(i64::try_from(ticket.serial).unwrap_or(i64::MAX));
    let ct = ticket
        .key
        .crypticle
        .dumps(&salt_proto::encode(&load.to_value()), None);
    let (sig_algo, sig) = if shared.cfg.sign_pub_messages {
        let sig = shared
            .keys
            .key
            .sign(shared.cfg.publish_signing_algorithm, &ct)?;
        (
            Some(shared.cfg.publish_signing_algorithm.as_str().to_owned()),
            Some(sig),
        )
    } else {
        (None, None)
    };
    let payload = PublishPayload {
        load: ct,
        sig_algo,
        sig,
    };
    let frame = salt_proto::encode(&payload.to_value());
    ticket.in_turn(|| publisher.publish(vec![frame]))?;
    shared.metrics.publishes.inc();
    tracing::info!(
        "Published job {} ({}) to {} {}",
        job.jid,
        job.fun,
        job.tgt_type,
        target_text(&job.tgt)
    );
    Ok(())
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
