//! The master's event bus: Salt's tags and payloads, for `salt-run state.event` and anything
//! else on the local socket that wants them.
//!
//! Fired: `salt/job/<jid>/new` when a job is published, `salt/job/<jid>/ret/<id>` for every
//! return, `salt/auth` for every sign-in decision, and every event a minion sends with
//! `_minion_event` under its own tag (`salt/minion/<id>/start`, `event.send`, state events).
//! Each payload carries Salt 3008's `_stamp` (UTC with its offset, `salt_compat::time::event_stamp`). An event costs
//! nothing but a counter check when nobody listens; a slow listener loses the oldest events
//! (a bounded broadcast channel), never slows the request server. The reactor is the bus's
//! [`Tap`]: it sees every event in the firing thread and only queues (`reactor/`).

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

/// One event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Salt's tag, e.g. `salt/job/20250101000000000000/new`.
    pub tag: String,
    /// The payload, with `_stamp`.
    pub data: Value,
}

/// Events buffered per listener before the oldest are dropped.
const CAPACITY: usize = 4096;

/// A listener called with every event as it is fired, in the firing thread (the reactor:
/// it must only look and queue, never wait). Unlike a subscriber it cannot fall behind and
/// lose events.
pub type Tap = Box<dyn Fn(&Arc<Event>) + Send + Sync>;

/// The bus.
pub struct EventBus {
    tx: broadcast::Sender<Arc<Event>>,
    tap: std::sync::OnceLock<Tap>,
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("tap", &self.tap.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Default for EventBus {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(CAPACITY).0,
            tap: std::sync::OnceLock::new(),
        }
    }
}

impl EventBus {
    /// Whether anyone listens (build the payload only then).
    pub fn wanted(&self) -> bool {
        self.tx.receiver_count() > 0 || self.tap.get().is_some()
    }

    /// Set the [`Tap`] (once; `false` if one was set already).
    pub fn set_tap(&self, tap: Tap) -> bool {
        self.tap.set(tap).is_ok()
    }

    /// Hand `ev` to the tap, then to the subscribers.
    fn send(&self, ev: Event) {
        let ev = Arc::new(ev);
        if let Some(tap) = self.tap.get() {
            tap(&ev);
        }
        let _ = self.tx.send(ev);
    }

    /// Fire `data` (a map; anything else is wrapped as `{"data": …}`) under `tag`.
    pub fn fire(&self, tag: impl Into<String>, data: Value) {
        if !self.wanted() {
            return;
        }
        let mut data = match data {
            Value::Object(m) => m,
            other => {
                let mut m = serde_json::Map::new();
                m.insert("data".into(), other);
                m
            }
        };
        data.insert(
            "_stamp".into(),
            Value::String(salt_compat::time::event_stamp_now()),
        );
        self.send(Event {
            tag: tag.into(),
            data: Value::Object(data),
        });
    }

    /// An event from Salt's pull socket (`crate::events::ipc`): sent as it came, its own
    /// `_stamp` kept (Salt's publisher forwards the bytes untouched); one is added if missing.
    pub fn forward(&self, tag: String, data: Value) {
        match &data {
            Value::Object(m) if m.contains_key("_stamp") => {
                if self.wanted() {
                    self.send(Event { tag, data });
                }
            }
            _ => self.fire(tag, data),
        }
    }

    /// Fire a msgpack payload (converted only when someone listens).
    pub fn fire_mp(&self, tag: impl Into<String>, data: &rmpv::Value) {
        if self.wanted() {
            self.fire(tag, salt_compat::json::msgpack_to_json(data));
        }
    }

    /// `salt/auth`, as Salt's request server fires it for each sign-in decision.
    pub fn fire_auth(&self, id: &str, act: &str, result: bool, pub_key: &str) {
        if self.wanted() {
            self.fire(
                "salt/auth",
                serde_json::json!({"result": result, "act": act, "id": id, "pub": pub_key}),
            );
        }
    }

    /// Salt's `masterapi._minion_event`: each event of a batch under its own tag (and under
    /// `<pretag>/<tag>`), or a single event's whole `load` under its tag. A batch event whose
    /// tag only the master may fire ([`valid_minion_tag`]) is dropped, as Salt drops it (the
    /// caller logs it).
    pub fn fire_minion_events(&self, ev: &salt_proto::msg::MinionEvent, load: &rmpv::Value) {
        if !self.wanted() {
            return;
        }
        match &ev.body {
            salt_proto::msg::EventBody::Batch(evs) => {
                for (tag, data) in evs.iter().filter(|(tag, _)| valid_minion_tag(tag)) {
                    self.fire_mp(tag.as_str(), data);
                    if let Some(pre) = &ev.pretag {
                        self.fire_mp(format!("{pre}/{tag}"), data);
                    }
                }
            }
            salt_proto::msg::EventBody::Single { tag, .. } => self.fire_mp(tag.as_str(), load),
        }
    }

    /// `salt/job/<jid>/ret/<id>`: the return load as Salt's master fires it (`cmd` first, `id`).
    pub fn fire_return(&self, jid: &str, id: &str, load: &rmpv::Value) {
        if !self.wanted() {
            return;
        }
        let mut ev = load.clone();
        if let rmpv::Value::Map(m) = &mut ev {
            m.insert(0, (rmpv::Value::from("cmd"), rmpv::Value::from("_return")));
            if !m.iter().any(|(k, _)| k.as_str() == Some("id")) {
                m.push((rmpv::Value::from("id"), rmpv::Value::from(id)));
            }
        }
        self.fire_mp(format!("salt/job/{jid}/ret/{id}"), &ev);
    }

    /// Listen from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }
}

/// Tags a minion may not fire through `_minion_event`: Salt's `masterapi.MINION_EVENT_BLACKLIST`
/// (job publications and returns, key events, runner, wheel, cloud and cluster events).
const MINION_EVENT_BLACKLIST: [&str; 9] = [
    "salt/job/*/publish",
    "salt/job/*/new",
    "salt/job/*/return",
    "salt/key",
    "salt/cloud/*",
    "salt/run/*",
    "salt/cluster/*",
    "salt/wheel/*/new",
    "salt/wheel/*/return",
];

/// Salt's `masterapi.valid_minion_tag`: whether a minion's batch event may go on the bus.
pub fn valid_minion_tag(tag: &str) -> bool {
    static BLACKLIST: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        let alternatives: Vec<String> = MINION_EVENT_BLACKLIST
            .iter()
            .filter_map(|glob| salt_compat::fnmatch::translate(glob).ok().flatten())
            .collect();
        salt_compat::fnmatch::compile(&alternatives, "MINION_EVENT_BLACKLIST").ok()
    });
    match &*BLACKLIST {
        Some(re) => !re.is_match(tag),
        // Never happens (constant globs); checked one by one if it did.
        None => !MINION_EVENT_BLACKLIST
            .iter()
            .any(|black| salt_compat::fnmatch(tag, black)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minion_tags_salt_blacklists_are_refused() {
        for tag in [
            "salt/job/20250101000000000000/new",
            "salt/job/1/return",
            "salt/job/1/publish",
            "salt/key",
            "salt/run/1/new",
            "salt/cloud/x/created",
            "salt/cluster/peer",
            "salt/wheel/1/return",
        ] {
            assert!(!valid_minion_tag(tag), "{tag}");
        }
        for tag in [
            "salt/minion/m1/start",
            "salt/job/1/ret/m1",
            "salt/keys",
            "salt/state_result/1/m1",
            "my/custom/tag",
            "salt/wheel/1/progress",
        ] {
            assert!(valid_minion_tag(tag), "{tag}");
        }
    }

    /// The filter is applied where batch events are fired: a blacklisted tag never reaches a
    /// listener (nor its `<pretag>/` copy), the allowed ones around it do.
    #[tokio::test]
    async fn blacklisted_batch_events_never_reach_the_bus() {
        let bus = EventBus::default();
        let mut rx = bus.subscribe();
        let data = || rmpv::Value::Map(vec![("x".into(), 1.into())]);
        let ev = salt_proto::msg::MinionEvent {
            id: "m1".into(),
            pretag: Some("pre".into()),
            tok: None,
            body: salt_proto::msg::EventBody::Batch(vec![
                ("my/first".into(), data()),
                ("salt/job/123/return".into(), data()),
                ("salt/key".into(), data()),
                ("my/last".into(), data()),
            ]),
            grains: None,
            extra: Vec::new(),
        };
        bus.fire_minion_events(&ev, &rmpv::Value::Nil);
        let mut tags = Vec::new();
        while let Ok(e) = rx.try_recv() {
            tags.push(e.tag.clone());
        }
        assert_eq!(tags, ["my/first", "pre/my/first", "my/last", "pre/my/last"]);
    }

    #[tokio::test]
    async fn listeners_get_stamped_events_and_nobody_costs_nothing() {
        let bus = EventBus::default();
        assert!(!bus.wanted());
        bus.fire("lost", Value::Null);
        let mut rx = bus.subscribe();
        bus.fire("salt/auth", serde_json::json!({"id": "m1", "result": true}));
        let ev = rx.recv().await.unwrap();
        assert_eq!(ev.tag, "salt/auth");
        assert_eq!(ev.data["id"], "m1");
        assert!(ev.data["_stamp"].as_str().unwrap().ends_with("+00:00"));
    }
}
