//! The client's error: what kind of failure it was ([`ErrorKind`]), a readable message, and
//! for errors the server reported, the server's fields ([`DbError`]).

use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::ErrorResponseBody;
use std::fmt;
use std::sync::Arc;

/// What went wrong, in the terms a caller acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The database URL or a setting is invalid.
    Config,
    /// The server could not be reached or refused the session before authentication
    /// (connection refused, unreachable, the connect timeout, the server starting or stopping).
    Connect,
    /// The server rejected the credentials (SQLSTATE class 28) or asked for an
    /// authentication method this client does not speak.
    Auth,
    /// The server answered a query with an error ([`Error::db_error`] has its fields).
    Db,
    /// The connection was lost (closed by the server, reset, a write failed) before the
    /// answer arrived. The pool replaces the connection; the query may or may not have run.
    Closed,
    /// No answer within the query timeout. The query is cancelled on the server and its
    /// connection is retired.
    Timeout,
    /// The server sent something this client did not expect.
    Protocol,
    /// `query_one` found no row, or more than one.
    RowCount,
    /// A parameter could not be encoded, or a column decoded, as the Rust type asked for.
    Conversion,
}

/// The fields of an error the server reported (an `ErrorResponse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbError {
    /// `ERROR`, `FATAL` or `PANIC`.
    pub severity: String,
    /// The SQLSTATE code, such as `42P01` (undefined table) or `57014` (query cancelled).
    pub code: String,
    /// The primary message.
    pub message: String,
    /// The optional detail.
    pub detail: Option<String>,
}

impl DbError {
    /// Reads the fields of an `ErrorResponse` body.
    pub(crate) fn parse(body: &ErrorResponseBody) -> DbError {
        let mut e = DbError {
            severity: String::new(),
            code: String::new(),
            message: String::new(),
            detail: None,
        };
        let mut fields = body.fields();
        while let Ok(Some(f)) = fields.next() {
            let v = String::from_utf8_lossy(f.value_bytes()).into_owned();
            match f.type_() {
                b'S' => e.severity = v,
                b'C' => e.code = v,
                b'M' => e.message = v,
                b'D' => e.detail = Some(v),
                _ => {}
            }
        }
        e
    }
}

/// An error from the client: cheap to clone (a failed connection hands the same error to
/// every query that was waiting on it).
#[derive(Clone)]
pub struct Error(Arc<Inner>);

struct Inner {
    kind: ErrorKind,
    message: String,
    db: Option<DbError>,
}

impl Error {
    /// An error of `kind` with a message.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error(Arc::new(Inner {
            kind,
            message: message.into(),
            db: None,
        }))
    }

    /// An error the server reported; its class 28 (invalid authorization) makes it
    /// [`ErrorKind::Auth`] during startup.
    pub(crate) fn db(kind: ErrorKind, db: DbError) -> Error {
        Error(Arc::new(Inner {
            kind,
            message: format!("{}: {} ({})", db.severity, db.message, db.code),
            db: Some(db),
        }))
    }

    /// An I/O error while doing `what`, as `kind`.
    pub(crate) fn io(kind: ErrorKind, what: &str, e: std::io::Error) -> Error {
        Error::new(kind, format!("{what}: {e}"))
    }

    /// The message, without the `postgres: ` its display starts with.
    pub(crate) fn message(&self) -> &str {
        &self.0.message
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The server's error fields, when the server reported the error.
    pub fn db_error(&self) -> Option<&DbError> {
        self.0.db.as_ref()
    }

    /// The SQLSTATE code of a server-reported error.
    pub fn code(&self) -> Option<&str> {
        self.0.db.as_ref().map(|d| d.code.as_str())
    }

    /// Whether the database is unavailable rather than the query wrong: the server could not
    /// be reached, the connection was lost, or no answer came in time. A web handler answers
    /// these with `503 Service Unavailable`.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self.0.kind,
            ErrorKind::Connect | ErrorKind::Closed | ErrorKind::Timeout
        ) || self.code().is_some_and(|c| c.starts_with("57"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "postgres: {}", self.0.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.0.kind)
            .field("message", &self.0.message)
            .field("db", &self.0.db)
            .finish()
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> std::io::Error {
        let kind = match e.kind() {
            ErrorKind::Timeout => std::io::ErrorKind::TimedOut,
            ErrorKind::Connect => std::io::ErrorKind::ConnectionRefused,
            ErrorKind::Closed => std::io::ErrorKind::ConnectionAborted,
            ErrorKind::Config => std::io::ErrorKind::InvalidInput,
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, e)
    }
}
