//! A whole response prepared ahead of time and kept by its owner — a cached file's `200`, see
//! [`crate::files`] — and sent by reference to it.
//!
//! The owner keeps the field lines (rendered once) and the body (bytes in memory, or an open
//! file whose descriptor it also keeps in its own memory) under one reference count, which a
//! cache hit touches anyway. A response that held its own `Bytes` of the fields and its own
//! `Arc` of the file took two more reference counts per request, each on a line of memory of
//! its own: on a site whose files do not fit in the CPU caches both are cold by the time the
//! file is asked for again. Sending by reference took about 3.5 % off the server's user time
//! per request on a documentation site (`docs/lab/site-2026-11-26c.md`).

use std::fmt;
use std::fs::File;
use std::sync::Arc;

use bytes::Bytes;

/// What keeps prepared responses: representation `which` of it has field lines and a body.
pub(crate) trait Prepared: Send + Sync {
    /// The field lines of representation `which`: whole lines as sent on HTTP/1.1, each
    /// ending in CRLF, never `Date`, `Server`, `Connection` or a framing field. Empty if
    /// `which` has none.
    fn fields(&self, which: usize) -> &[u8];
    /// The body of representation `which`.
    fn body(&self, which: usize) -> PreparedBody<'_>;
}

/// The body of a prepared response.
pub(crate) enum PreparedBody<'a> {
    /// Bytes in memory.
    Memory(&'a Bytes),
    /// The first `len` bytes of an open file.
    File {
        /// The file, to read or send from.
        file: &'a File,
        /// The same file, to share with a body that outlives this borrow.
        shared: &'a Arc<File>,
        /// Bytes to send.
        len: u64,
    },
}

impl PreparedBody<'_> {
    /// Length in bytes.
    pub(crate) fn len(&self) -> u64 {
        match self {
            PreparedBody::Memory(b) => b.len() as u64,
            PreparedBody::File { len, .. } => *len,
        }
    }
}

/// One representation of a prepared response, holding its owner.
#[derive(Clone)]
pub(crate) struct PreparedRef {
    owner: Arc<dyn Prepared>,
    which: usize,
}

impl PreparedRef {
    /// Representation `which` of `owner`.
    pub(crate) fn new(owner: Arc<dyn Prepared>, which: usize) -> PreparedRef {
        PreparedRef { owner, which }
    }
    /// Its field lines (see [`Prepared::fields`]).
    #[inline]
    pub(crate) fn fields(&self) -> &[u8] {
        self.owner.fields(self.which)
    }
    /// Its body.
    #[inline]
    pub(crate) fn body(&self) -> PreparedBody<'_> {
        self.owner.body(self.which)
    }
}

impl fmt::Debug for PreparedRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("fields", &self.fields().len())
            .field("body", &self.body().len())
            .finish()
    }
}
