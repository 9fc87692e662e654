//! CherryPy's RAM sessions as rest_cherrypy uses them: `/login` makes a session (a random
//! 40-hex id, sent as the `session_id` cookie and the `X-Auth-Token` header) holding the
//! Salt eauth token; requests name it by that header or cookie. Sessions idle for 10 hours
//! (`tools.sessions.timeout`) are forgotten. The eauth token itself lives on the master.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};
use zeroize::Zeroizing;

/// `tools.sessions.timeout`: 600 minutes.
pub const IDLE: Duration = Duration::from_secs(600 * 60);

struct Session {
    token: Zeroizing<String>,
    seen: Instant,
}

/// The sessions of this API process.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions").finish_non_exhaustive()
    }
}

/// A new session id: 40 hex digits from the OS's random source.
fn new_id() -> String {
    let mut bytes = [0u8; 20];
    if let Err(e) = getrandom(&mut bytes) {
        tracing::error!("no random bytes for a session id: {e}");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn getrandom(buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read as _;
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

/// The session id a request names: `X-Auth-Token`, else the `session_id` cookie.
pub fn requested_id(headers: &HeaderMap) -> Option<String> {
    if let Some(v) = headers.get("x-auth-token").and_then(|v| v.to_str().ok())
        && !v.is_empty()
    {
        return Some(v.to_owned());
    }
    cookie(headers, "session_id")
}

/// A cookie's value.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"').to_owned())
}

impl Sessions {
    /// A new session holding `token`; its id.
    pub fn create(&self, token: &str) -> String {
        let id = new_id();
        self.insert(&id, token);
        id
    }

    /// A session named by the eauth token it holds (a master group's salt-api: every
    /// member knows the token, so every member can serve the session).
    pub fn adopt(&self, token: &str) {
        self.insert(token, token);
    }

    fn insert(&self, id: &str, token: &str) {
        let mut map = self
            .map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        map.retain(|_, s| now.duration_since(s.seen) < IDLE);
        map.insert(
            id.to_owned(),
            Session {
                token: Zeroizing::new(token.to_owned()),
                seen: now,
            },
        );
    }

    /// The eauth token of session `id` (touching it).
    pub fn token(&self, id: &str) -> Option<Zeroizing<String>> {
        let mut map = self
            .map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let s = map.get_mut(id)?;
        let now = Instant::now();
        if now.duration_since(s.seen) >= IDLE {
            map.remove(id);
            return None;
        }
        s.seen = now;
        Some(s.token.clone())
    }

    /// Forgets session `id`; its token.
    pub fn remove(&self, id: &str) -> Option<Zeroizing<String>> {
        let mut map = self
            .map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.remove(id).map(|s| s.token)
    }
}

/// `Set-Cookie` for session `id` as CherryPy writes it (`expires` in 10 hours, path `/`).
pub fn set_cookie(id: &str) -> String {
    let when = std::time::SystemTime::now() + IDLE;
    format!(
        "session_id={id}; expires={}; Max-Age=36000; Path=/",
        http_date(when)
    )
}

/// An expired `session_id` cookie (`cherrypy.lib.sessions.expire`).
pub fn expired_cookie(id: &str) -> String {
    format!("session_id={id}; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/")
}

fn http_date(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let (y, mo, d) = salt_compat::time::civil_from_days(secs / 86400);
    let wd = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((secs / 86400) % 7) as usize];
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = months
        .get((mo as usize).saturating_sub(1))
        .unwrap_or(&"Jan");
    let s = secs % 86400;
    format!(
        "{wd}, {d:02} {month} {y} {:02}:{:02}:{:02} GMT",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_hold_tokens_and_are_named_by_header_or_cookie() {
        let s = Sessions::default();
        let id = s.create("abc");
        assert_eq!(id.len(), 40);
        assert_eq!(s.token(&id).unwrap().as_str(), "abc");
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            format!("a=b; session_id={id}").parse().unwrap(),
        );
        assert_eq!(requested_id(&h).unwrap(), id);
        h.insert("x-auth-token", "xyz".parse().unwrap());
        assert_eq!(requested_id(&h).unwrap(), "xyz");
        assert!(s.remove(&id).is_some());
        assert!(s.token(&id).is_none());
        assert_eq!(
            http_date(std::time::UNIX_EPOCH),
            "Thu, 01 Jan 1970 00:00:00 GMT"
        );
    }
}
