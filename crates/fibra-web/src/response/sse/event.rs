//! [`Event`]: one server-sent event, built field by field and encoded as it is built (the
//! `text/event-stream` format of the HTML standard, §9.2).

use std::fmt;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use serde::Serialize;

/// One server-sent event, as axum's: a builder of its fields, each set at most once (the
/// comment excepted), panicking on values the format cannot carry.
///
/// ```
/// use std::time::Duration;
/// use fibra_web::response::sse::Event;
///
/// let event = Event::default()
///     .event("update")
///     .id("42")
///     .retry(Duration::from_millis(1500))
///     .data("line one\nline two");
/// assert_eq!(
///     event.to_string(),
///     "event: update\nid: 42\nretry: 1500\ndata: line one\ndata: line two\n\n"
/// );
/// ```
#[derive(Clone, Default)]
#[must_use]
pub struct Event {
    /// The fields so far, encoded; the event's closing blank line is added when it is sent.
    fields: BytesMut,
    set: Fields,
}

/// Which of the fields that may appear once are set.
#[derive(Clone, Copy, Default, Debug)]
struct Fields {
    data: bool,
    event: bool,
    id: bool,
    retry: bool,
}

impl Event {
    /// The event's data: one `data:` line per line of `data` (a line ends at `\n`, `\r\n` or
    /// `\r`), which the client joins again with `\n`. An event with empty data is ignored by
    /// browsers.
    ///
    /// # Panics
    /// If the data is set already.
    pub fn data<T: AsRef<str>>(mut self, data: T) -> Event {
        if std::mem::replace(&mut self.set.data, true) {
            panic!("Called `Event::data*` multiple times");
        }
        let data = data.as_ref();
        let mut rest = data;
        loop {
            let end = rest.find(['\r', '\n']).unwrap_or(rest.len());
            self.put_field("data", &rest[..end]);
            if end == rest.len() {
                break;
            }
            let skip = if rest[end..].starts_with("\r\n") {
                2
            } else {
                1
            };
            rest = &rest[end + skip..];
        }
        self
    }

    /// The event's data: `data` as compact JSON (one line).
    ///
    /// # Panics
    /// If the data is set already.
    pub fn json_data<T: Serialize>(self, data: T) -> Result<Event, serde_json::Error> {
        let json = serde_json::to_string(&data)?;
        Ok(self.data(json))
    }

    /// A comment (`: text`), which clients ignore; may be given several times.
    ///
    /// # Panics
    /// If `comment` has a newline or a carriage return.
    pub fn comment<T: AsRef<str>>(mut self, comment: T) -> Event {
        self.put_field("", comment.as_ref());
        self
    }

    /// The event's type (`event: name`): the name a browser's
    /// `EventSource.addEventListener` listens for (`message` when there is none).
    ///
    /// # Panics
    /// If `event` has a newline or a carriage return, or the type is set already.
    pub fn event<T: AsRef<str>>(mut self, event: T) -> Event {
        if std::mem::replace(&mut self.set.event, true) {
            panic!("Called `Event::event` multiple times");
        }
        self.put_field("event", event.as_ref());
        self
    }

    /// The event's id (`id: …`), which a reconnecting browser sends back in
    /// `Last-Event-ID`.
    ///
    /// # Panics
    /// If `id` has a newline, a carriage return or a NUL, or the id is set already.
    pub fn id<T: AsRef<str>>(mut self, id: T) -> Event {
        if std::mem::replace(&mut self.set.id, true) {
            panic!("Called `Event::id` multiple times");
        }
        let id = id.as_ref();
        assert!(
            !id.contains('\0'),
            "Event ID cannot contain null characters"
        );
        self.put_field("id", id);
        self
    }

    /// How long the client waits before it reconnects (`retry: milliseconds`).
    ///
    /// # Panics
    /// If the retry is set already.
    pub fn retry(mut self, duration: Duration) -> Event {
        if std::mem::replace(&mut self.set.retry, true) {
            panic!("Called `Event::retry` multiple times");
        }
        self.put_field("retry", &duration.as_millis().to_string());
        self
    }

    /// Appends `name: value` (a comment for an empty name).
    fn put_field(&mut self, name: &str, value: &str) {
        assert!(
            !value.contains(['\r', '\n']),
            "SSE field value cannot contain newlines or carriage returns"
        );
        self.fields.extend_from_slice(name.as_bytes());
        self.fields.extend_from_slice(b": ");
        self.fields.extend_from_slice(value.as_bytes());
        self.fields.extend_from_slice(b"\n");
    }

    /// The event on the wire: its fields and the blank line that ends it.
    pub(crate) fn encode(mut self) -> Bytes {
        self.fields.extend_from_slice(b"\n");
        self.fields.freeze()
    }
}

impl fmt::Display for Event {
    /// The event as it is sent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.fields))?;
        f.write_str("\n")
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("encoded", &String::from_utf8_lossy(&self.fields))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panics(f: impl FnOnce() -> Event + std::panic::UnwindSafe) -> String {
        let err = std::panic::catch_unwind(f).expect_err("should panic");
        err.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| err.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    }

    #[test]
    fn data_lines_split_at_every_line_end() {
        let e = Event::default().data("a\nb\r\nc\rd");
        assert_eq!(e.to_string(), "data: a\ndata: b\ndata: c\ndata: d\n\n");
        assert_eq!(Event::default().data("").to_string(), "data: \n\n");
        assert_eq!(
            Event::default().data("end\n").to_string(),
            "data: end\ndata: \n\n"
        );
    }

    #[test]
    fn json_comment_and_retry() {
        let e = Event::default()
            .comment("hi")
            .json_data(serde_json::json!({"a": "x\ny"}))
            .unwrap();
        assert_eq!(e.to_string(), ": hi\ndata: {\"a\":\"x\\ny\"}\n\n");
        let r = Event::default().retry(Duration::from_secs(3)).data("x");
        assert_eq!(r.to_string(), "retry: 3000\ndata: x\n\n");
        assert_eq!(&Event::default().data("x").encode()[..], b"data: x\n\n");
    }

    #[test]
    fn bad_fields_panic_as_axum() {
        assert!(panics(|| Event::default().event("a\nb")).contains("newlines"));
        assert!(panics(|| Event::default().id("a\0")).contains("null"));
        assert!(panics(|| Event::default().id("1").id("2")).contains("`Event::id`"));
        assert!(panics(|| Event::default().data("1").data("2")).contains("`Event::data*`"));
        assert!(panics(|| Event::default().event("a").event("b")).contains("`Event::event`"));
        assert!(
            panics(|| Event::default().retry(Duration::ZERO).retry(Duration::ZERO))
                .contains("`Event::retry`")
        );
        assert!(panics(|| Event::default().comment("x\ry")).contains("carriage"));
    }
}
