//! Replays the committed cargo-fuzz corpora of the `salt-proto` targets
//! (`fuzz/corpus/{envelope,messages,publish,clear,auth_master,auth_client}`) and any minimized crash reproducers
//! (`fuzz/artifacts-regressions/<target>`) through the very entry functions the fuzz
//! targets call, so every `cargo test` on stable re-checks what fuzzing found.

#![allow(clippy::unwrap_used)] // tests may unwrap

#[allow(dead_code)]
#[path = "../../../fuzz/src/auth_entries.rs"]
mod auth_entries;
#[allow(dead_code)]
#[path = "../../../fuzz/src/proto_entries.rs"]
mod entries;
#[allow(dead_code)]
#[path = "../../../fuzz/src/keys.rs"]
mod keys;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;

use replay::{inputs, replay};

#[test]
fn envelope_corpus() {
    replay("envelope", 20, entries::envelope);
}

#[test]
fn messages_corpus() {
    replay("messages", 20, entries::messages);
}

#[test]
fn publish_corpus() {
    replay("publish", 10, entries::publish);
}

#[test]
fn clear_corpus() {
    replay("clear", 10, entries::clear);
}

#[test]
fn auth_master_corpus() {
    replay("auth_master", 5, auth_entries::auth_master);
}

#[test]
fn auth_client_corpus() {
    replay("auth_client", 5, |d| {
        auth_entries::auth_client(d);
    });
}

/// The sealed seeds of `auth_client` are complete, valid sign-ins: the fuzzer starts
/// from replies that get past every check, not only from rejections.
#[test]
fn auth_client_corpus_signs_in() {
    let ok = inputs("auth_client")
        .iter()
        .filter(|(_, d)| auth_entries::auth_client(d))
        .count();
    assert!(
        ok >= 2,
        "only {ok} accepted sign-ins in the auth_client corpus"
    );
}

/// The corpora are not all rejections: the golden wire vectors (seeds) are in them
/// and must still read as the messages they are.
#[test]
fn corpora_hold_valid_messages() {
    let ok = inputs("envelope")
        .iter()
        .filter(|(_, d)| salt_proto::msg::RequestEnvelope::from_bytes(d).is_ok())
        .count();
    assert!(ok >= 3, "only {ok} valid envelopes in the corpus");
    let ok = inputs("publish")
        .iter()
        .filter(|(_, d)| salt_proto::msg::JobLoad::from_bytes(d).is_ok())
        .count();
    assert!(ok >= 1, "no valid job load in the publish corpus");
}
