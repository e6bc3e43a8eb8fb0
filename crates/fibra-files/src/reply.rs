//! What the file server answers: [`FileReply`] (status, header fields, a [`FileBody`]), and
//! the common case apart (`Answer::Whole`: a whole cached file with its prepared head).

use std::fs::File;
use std::sync::Arc;

use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, StatusCode};

use crate::meta::Encoding;
use crate::open::{FileData, FileEntry, OpenFile};

/// The body of a [`FileReply`].
#[derive(Debug, Clone)]
pub enum FileBody {
    /// No body (304, HEAD-irrelevant statuses, 412, 416).
    Empty,
    /// A small generated body (error text, listing).
    Bytes(bytes::Bytes),
    /// `len` bytes of `file` from `offset`: send with `sendfile`.
    File {
        /// The open file, shared with the fd cache.
        file: Arc<File>,
        /// First byte to send.
        offset: u64,
        /// Number of bytes to send.
        len: u64,
    },
}

impl FileBody {
    /// `len` bytes of `file` from `offset`: shared from memory or read from the open file.
    pub(crate) fn part_of(file: &OpenFile, offset: u64, len: u64) -> FileBody {
        match &file.data {
            FileData::Memory(bytes) => {
                FileBody::Bytes(bytes.slice(offset as usize..(offset + len) as usize))
            }
            FileData::Open(f) => FileBody::File {
                file: Arc::clone(f.shared()),
                offset,
                len,
            },
        }
    }

    /// Length in bytes (the `Content-Length` of a GET, also announced for HEAD).
    pub fn len(&self) -> u64 {
        match self {
            FileBody::Empty => 0,
            FileBody::Bytes(b) => b.len() as u64,
            FileBody::File { len, .. } => *len,
        }
    }

    /// True when there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What to answer: status, header fields (never `Content-Length`, `Date`, `Connection`: the
/// response writer owns those) and the body to send for a GET.
#[derive(Debug, Clone)]
pub struct FileReply {
    /// Response status.
    pub status: StatusCode,
    /// Header fields, in the order added (moved into the response as they are).
    pub headers: HeaderMap,
    /// Body (for HEAD: what a GET would send; the writer announces its length and skips it).
    pub body: FileBody,
}

/// `503` for a lookup the server could not make (out of descriptors or memory), with
/// `Retry-After: 1`: the shortage is usually over by then.
#[cold]
pub(crate) fn unavailable() -> FileReply {
    let mut r = FileReply::error(StatusCode::SERVICE_UNAVAILABLE);
    r.header(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

impl FileReply {
    pub(crate) fn new(status: StatusCode) -> FileReply {
        FileReply {
            status,
            headers: HeaderMap::new(),
            body: FileBody::Empty,
        }
    }

    /// A short `text/plain` error page, e.g. `404 Not Found`.
    pub fn error(status: StatusCode) -> FileReply {
        let mut r = FileReply::new(status);
        let text = format!(
            "{} {}\n",
            status.as_str(),
            status.canonical_reason().unwrap_or("")
        );
        r.header(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        r.body = FileBody::Bytes(text.into());
        r
    }

    pub(crate) fn header(&mut self, name: HeaderName, value: HeaderValue) {
        self.headers.append(name, value);
    }

    /// The first value of header `name`, if set.
    pub fn get(&self, name: &HeaderName) -> Option<&HeaderValue> {
        self.headers.get(name)
    }
}

/// What `FileServer::answer` found: a whole cached file (`200`, its fields rendered ahead
/// of time as HTTP/1.1 field lines), or any other reply.
pub(crate) enum Answer {
    /// A `200` with the whole file as it is stored (identity or a precompressed sibling): the
    /// fields are `entry.head(encoding)` (rendered by now), the body is that representation.
    Whole {
        /// The cached file.
        entry: Arc<FileEntry>,
        /// Which representation of it.
        encoding: Encoding,
    },
    /// Anything else.
    Reply(FileReply),
}
