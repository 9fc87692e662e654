//! The master event bus as Salt's Python tools speak it on `sock_dir/master_event_pub.ipc`
//! and `master_event_pull.ipc` (or the loopback ports of `ipc_mode: tcp`), sans-IO.
//!
//! An event is `salt.utils.event.SaltEvent.pack`: the tag, `"\n\n"`, then
//! `salt.payload.dumps(data, use_bin_type=True)` ([`pack_event`], [`unpack_event`]). The
//! transports wrap it as the `body` of a frame `{"head": {}, "body": <bin>}`
//! (`salt.transport.frame`), written in one of two ways:
//!
//! * length-prefixed (`frame_msg_ipc`): a 4-byte big-endian length, then the msgpack frame.
//!   Every event writer of 3006.30, 3007.17 and 3008.5 sends this into the pull socket, and
//!   3006's `salt.transport.ipc.IPCMessagePublisher` sends it to the pub socket's readers;
//! * bare (`frame_msg`): the msgpack frames back to back. 3007/3008's publisher
//!   (`salt.transport.tcp.PubServer`, built by `salt.transport.base.ipc_publish_server`)
//!   sends this to its readers, and older 3007 writers sent it into the pull socket.
//!
//! Readers of the pub socket send nothing, so which form they want cannot be detected:
//! [`PubFraming`] is the master's setting. On the way in, [`FrameReader`] tells the two forms
//! apart by a stream's first byte (a length prefix starts with `0x00` since frames are at
//! most [`MAX_FRAME`]; a bare frame starts with a msgpack map marker). Golden bytes from
//! real Salt: `scripts/gen-ipc-golden.py`.
//!
//! Nothing here panics on hostile bytes; frames are bounded by [`MAX_FRAME`] and decoded with
//! [`crate::DecodeLimits`].

use rmpv::Value;

use crate::codec::{DecodeError, DecodeLimits, decode_with_limits};

/// Largest accepted frame (16 MiB). Salt trims an event to `max_event_size` (1 MiB by
/// default) before sending it, so real frames stay far below.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

/// Salt's `TAGEND`: what separates the tag from the packed data.
pub const TAGEND: &[u8] = b"\n\n";

/// How the master writes events to its pub socket's readers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PubFraming {
    /// Salt 3007/3008 (`salt.transport.tcp` over the Unix socket): bare msgpack frames.
    Tcp,
    /// Salt 3006 (`salt.transport.ipc`): length-prefixed frames.
    Ipc,
}

/// Why bytes from a peer are not an event.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IpcError {
    /// The first byte of a stream is neither a length prefix nor a msgpack map.
    #[error("unknown event framing (first byte {0:#04x})")]
    UnknownFraming(u8),
    /// A frame claims (or grows) beyond [`MAX_FRAME`].
    #[error("event frame of {0} bytes exceeds the limit of {MAX_FRAME} bytes")]
    TooLarge(usize),
    /// The frame is not msgpack.
    #[error("event frame is not msgpack: {0}")]
    Msgpack(#[from] DecodeError),
    /// The frame is msgpack but not `{"head": ..., "body": <bytes>}`.
    #[error("event frame has no `body` bytes")]
    NoBody,
    /// The body has no `"\n\n"` after the tag, or the tag is not UTF-8.
    #[error("event body has no valid tag")]
    BadTag,
}

/// `SaltEvent.pack(tag, data)`: the tag, `"\n\n"`, `msgpack(data, use_bin_type=True)`.
pub fn pack_event(tag: &str, data: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(tag.len() + 64);
    out.extend_from_slice(tag.as_bytes());
    out.extend_from_slice(TAGEND);
    // Writing into a Vec cannot fail.
    let _ = rmpv::encode::write_value(&mut out, data);
    out
}

/// `SaltEvent.unpack(raw)`: the tag (up to the first `"\n\n"`) and the decoded data.
///
/// # Errors
/// [`IpcError::BadTag`] without a separator or with a non-UTF-8 tag; [`IpcError::Msgpack`]
/// when the data is not one msgpack document within the limits.
pub fn unpack_event(body: &[u8]) -> Result<(String, Value), IpcError> {
    let at = body
        .windows(TAGEND.len())
        .position(|w| w == TAGEND)
        .ok_or(IpcError::BadTag)?;
    let tag = std::str::from_utf8(&body[..at]).map_err(|_| IpcError::BadTag)?;
    let data = decode_with_limits(&body[at + TAGEND.len()..], &limits())?;
    Ok((tag.to_owned(), data))
}

/// The frame `{"head": {}, "body": <bin>}` around `body`, as `framing` writes it.
pub fn frame(framing: PubFraming, body: &[u8]) -> Vec<u8> {
    let mut map = Vec::with_capacity(body.len() + 20);
    map.push(0x82);
    map.extend_from_slice(b"\xa4head\x80\xa4body");
    let _ = rmp::encode::write_bin_len(&mut map, u32::try_from(body.len()).unwrap_or(u32::MAX));
    map.extend_from_slice(body);
    match framing {
        PubFraming::Tcp => map,
        PubFraming::Ipc => {
            let mut out = Vec::with_capacity(map.len() + 4);
            let len = u32::try_from(map.len()).unwrap_or(u32::MAX);
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&map);
            out
        }
    }
}

fn limits() -> DecodeLimits {
    DecodeLimits {
        max_input: MAX_FRAME,
        ..DecodeLimits::default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Prefixed,
    Bare,
}

/// Splits a byte stream (either form) into event bodies; the form is fixed by its first byte.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    pos: usize,
    mode: Option<Mode>,
}

impl FrameReader {
    /// A reader for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append bytes read from the stream.
    ///
    /// # Errors
    /// [`IpcError::TooLarge`] when the unread bytes would exceed a frame's limit.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), IpcError> {
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let pending = self.buf.len() - self.pos + bytes.len();
        // A full frame plus its prefix plus one more read's worth is the most a well-behaved
        // writer can leave unread between two calls of `next_body`.
        if pending > MAX_FRAME + 4 + 1024 * 1024 {
            return Err(IpcError::TooLarge(pending));
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// The next complete event body, `None` until more bytes arrive.
    ///
    /// # Errors
    /// Any [`IpcError`]; the stream cannot be resynchronised after one (close it).
    pub fn next_body(&mut self) -> Result<Option<Vec<u8>>, IpcError> {
        let rest = &self.buf[self.pos..];
        let Some(&first) = rest.first() else {
            return Ok(None);
        };
        let mode = match self.mode {
            Some(m) => m,
            None => {
                let m = match first {
                    0x00 => Mode::Prefixed,
                    0x80..=0x8f | 0xde | 0xdf => Mode::Bare,
                    b => return Err(IpcError::UnknownFraming(b)),
                };
                self.mode = Some(m);
                m
            }
        };
        let (start, end) = match mode {
            Mode::Prefixed => {
                let Some(len) = rest.get(..4) else {
                    return Ok(None);
                };
                let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
                if len > MAX_FRAME {
                    return Err(IpcError::TooLarge(len));
                }
                if rest.len() < 4 + len {
                    return Ok(None);
                }
                (4, 4 + len)
            }
            Mode::Bare => match value_end(rest)? {
                Some(end) => (0, end),
                None if rest.len() > MAX_FRAME => return Err(IpcError::TooLarge(rest.len())),
                None => return Ok(None),
            },
        };
        let frame = decode_with_limits(&rest[start..end], &limits())?;
        self.pos += end;
        body_of(frame).map(Some)
    }
}

/// The `body` of a decoded frame, as bytes (bin, or str from a `use_bin_type=False` writer).
fn body_of(frame: Value) -> Result<Vec<u8>, IpcError> {
    let Value::Map(entries) = frame else {
        return Err(IpcError::NoBody);
    };
    for (k, v) in entries {
        let is_body = match &k {
            Value::String(s) => s.as_bytes() == b"body",
            Value::Binary(b) => b == b"body",
            _ => false,
        };
        if is_body {
            return match v {
                Value::Binary(b) => Ok(b),
                Value::String(s) => Ok(s.into_bytes()),
                _ => Err(IpcError::NoBody),
            };
        }
    }
    Err(IpcError::NoBody)
}

/// Where the msgpack value at the start of `buf` ends: `Some(len)`, `None` when `buf` is too
/// short. Iterative (a count of values still to read), so nesting cannot exhaust the stack.
fn value_end(buf: &[u8]) -> Result<Option<usize>, IpcError> {
    let mut pos = 0usize;
    let mut todo: u64 = 1;
    while todo > 0 {
        todo -= 1;
        let Some(&m) = buf.get(pos) else {
            return Ok(None);
        };
        let be = |at: usize, n: usize| -> Option<u64> {
            let b = buf.get(at..at.checked_add(n)?)?;
            Some(b.iter().fold(0u64, |acc, x| (acc << 8) | u64::from(*x)))
        };
        // (header bytes, payload bytes, children)
        let (head, skip, kids): (usize, u64, u64) = match m {
            0x00..=0x7f | 0xc0 | 0xc2 | 0xc3 | 0xe0..=0xff => (1, 0, 0),
            0x80..=0x8f => (1, 0, u64::from(m & 0x0f) * 2),
            0x90..=0x9f => (1, 0, u64::from(m & 0x0f)),
            0xa0..=0xbf => (1, u64::from(m & 0x1f), 0),
            0xc1 => {
                return Err(IpcError::Msgpack(DecodeError::ReservedMarker {
                    offset: pos,
                }));
            }
            0xc4 | 0xd9 => sized(be(pos + 1, 1), 2),
            0xc5 | 0xda => sized(be(pos + 1, 2), 3),
            0xc6 | 0xdb => sized(be(pos + 1, 4), 5),
            0xc7 => sized(be(pos + 1, 1), 3),
            0xc8 => sized(be(pos + 1, 2), 4),
            0xc9 => sized(be(pos + 1, 4), 6),
            0xca => (5, 0, 0),
            0xcb => (9, 0, 0),
            0xcc | 0xd0 => (2, 0, 0),
            0xcd | 0xd1 => (3, 0, 0),
            0xce | 0xd2 => (5, 0, 0),
            0xcf | 0xd3 => (9, 0, 0),
            0xd4 => (3, 0, 0),
            0xd5 => (4, 0, 0),
            0xd6 => (6, 0, 0),
            0xd7 => (10, 0, 0),
            0xd8 => (18, 0, 0),
            0xdc => count(be(pos + 1, 2), 3, 1),
            0xdd => count(be(pos + 1, 4), 5, 1),
            0xde => count(be(pos + 1, 2), 3, 2),
            0xdf => count(be(pos + 1, 4), 5, 2),
        };
        let Some(next) = u64::try_from(pos + head)
            .ok()
            .and_then(|p| p.checked_add(skip))
        else {
            return Err(IpcError::TooLarge(usize::MAX));
        };
        if next > MAX_FRAME as u64 {
            return Err(IpcError::TooLarge(
                usize::try_from(next).unwrap_or(usize::MAX),
            ));
        }
        pos = next as usize;
        todo = todo.saturating_add(kids);
        if todo > MAX_FRAME as u64 {
            // More values announced than bytes a frame may hold.
            return Err(IpcError::TooLarge(
                usize::try_from(todo).unwrap_or(usize::MAX),
            ));
        }
    }
    Ok((pos <= buf.len()).then_some(pos))
}

/// A str/bin/ext header: `len` payload bytes after `head` header bytes. A header cut short
/// (`None`) ends past the buffer, which reads as "need more".
fn sized(len: Option<u64>, head: usize) -> (usize, u64, u64) {
    (head, len.unwrap_or(0), 0)
}

/// An array/map header with `n` entries of `per` values each (cut short: as [`sized`]).
fn count(n: Option<u64>, head: usize, per: u64) -> (usize, u64, u64) {
    (head, 0, n.unwrap_or(0).saturating_mul(per))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn value_end_finds_each_form_and_waits_for_more() {
        let v = Value::Map(vec![(
            Value::from("a"),
            Value::Array(vec![
                Value::from(1),
                Value::from("x".repeat(300)),
                Value::F64(1.5),
            ]),
        )]);
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &v).unwrap();
        for cut in 0..bytes.len() {
            assert_eq!(value_end(&bytes[..cut]).unwrap(), None, "cut {cut}");
        }
        bytes.extend_from_slice(b"\x01\x02");
        assert_eq!(value_end(&bytes).unwrap(), Some(bytes.len() - 2));
    }

    #[test]
    fn hostile_streams_are_errors_not_panics() {
        for bad in [
            &b"\xc1"[..],
            b"\x7f\x00\x00\x00",
            b"\x01\x00\x00\x01",
            b"\xdf\xff\xff\xff\xff",
            b"\x81\xc1",
            b"\x00\x00\x00\x02\x01\x02",
            b"\x00\x00\x00\x03\x81\xa1a",
        ] {
            let mut r = FrameReader::new();
            r.feed(bad).unwrap();
            let got = r.next_body();
            assert!(matches!(got, Err(_) | Ok(None)), "{bad:02x?}: {got:?}");
        }
        // A deep nest of arrays cannot overflow anything.
        let mut deep = vec![0x81, 0xa1, b'x'];
        deep.extend(std::iter::repeat_n(0x91, 100_000));
        let mut r = FrameReader::new();
        r.feed(&deep).unwrap();
        assert_eq!(r.next_body().unwrap(), None);
        r.feed(&[0x01]).unwrap();
        assert!(r.next_body().is_err());
    }

    #[test]
    fn both_forms_round_trip_byte_by_byte() {
        let body = pack_event("a/b", &Value::Map(vec![(Value::from("x"), Value::from(1))]));
        for framing in [PubFraming::Tcp, PubFraming::Ipc] {
            let wire: Vec<u8> = [frame(framing, &body), frame(framing, b"t\n\n\x80")].concat();
            let mut r = FrameReader::new();
            let mut got = Vec::new();
            for b in &wire {
                r.feed(&[*b]).unwrap();
                while let Some(b) = r.next_body().unwrap() {
                    got.push(b);
                }
            }
            assert_eq!(got, vec![body.clone(), b"t\n\n\x80".to_vec()]);
        }
        let (tag, data) = unpack_event(&body).unwrap();
        assert_eq!(tag, "a/b");
        assert_eq!(data, Value::Map(vec![(Value::from("x"), Value::from(1))]));
        assert_eq!(unpack_event(b"no-separator"), Err(IpcError::BadTag));
        assert_eq!(unpack_event(b"\xff\n\n\x80"), Err(IpcError::BadTag));
    }

    #[test]
    fn oversized_prefix_is_refused_before_buffering() {
        let mut r = FrameReader::new();
        r.feed(&(MAX_FRAME as u32 + 1).to_be_bytes()).unwrap();
        assert!(r.next_body().is_err());
        let mut r = FrameReader::new();
        r.feed(&[0xdb, 0xff, 0xff, 0xff, 0xff]).unwrap();
        assert!(r.next_body().is_err());
    }
}
