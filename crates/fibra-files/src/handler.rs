//! Glue between [`FileServer`] and the fibra-http server: `handle(&Request) -> Response` (and
//! the [`Service`](fibra_http::Service) that calls it), the `FileReply -> Response` conversion
//! (file bodies become `sendfile` ranges). Access logging is the connection loop's job (see
//! [`fibra_http::access_log`]).
//!
//! ```no_run
//! use std::sync::Arc;
//! use fibra_files::{FileServer, FileServerConfig};
//!
//! let mut config = FileServerConfig::new("./public");
//! config.prefix = "/static".into();
//! let files = Arc::new(FileServer::new(config).unwrap());
//! // Inside a handler: static files under /static, the app's own routes elsewhere.
//! let handler = move |req: fibra_http::Request| {
//!     if files.matches(req.uri().path()) {
//!         files.handle(&req)
//!     } else {
//!         fibra_http::Response::new("app".into())
//!     }
//! };
//! # let _ = handler;
//! ```

use crate::meta::Encoding;
use crate::open::{FileData, FileEntry};
use crate::reply::{Answer, FileBody, FileReply};
use crate::server::FileServer;
use fibra_http::prepared::{Prepared, PreparedBody, PreparedHead, PreparedRef};
use fibra_http::{FileRange, Request, Response, ResponseBody};
use http::header::{self, HeaderValue};
use http::StatusCode;

impl FileServer {
    /// Answers one request (any path: those outside the prefix get 404; use
    /// [`FileServer::matches`] to route).
    pub fn handle(&self, req: &Request) -> Response {
        let uri = req.uri();
        match self.answer(req.method(), uri.path(), uri.query(), req.headers()) {
            // A whole cached file: its fields go out as rendered when the file was cached (no
            // header map is built; `Response::headers` shows them when asked), and the
            // response holds the entry rather than its head and its file (`fibra_http::prepared`).
            Answer::Whole { entry, encoding } => {
                Response::prepared(PreparedRef::new(entry, encoding as usize))
            }
            Answer::Reply(r) => r.into_response(),
        }
    }
}

/// A file server is a [`Service`](fibra_http::Service): served on its own, or mounted in an
/// application's router (fibra-web's `Router::mount("/static", files)`). A router that
/// mounts it takes the mount's prefix off the path before the server sees it, so mount a
/// server whose own [`prefix`](crate::FileServerConfig::prefix) is empty (the default);
/// a server with a prefix of its own wants the whole path (fibra-web's `route_service`,
/// `fallback_service`). Paths outside its prefix get `404`.
///
/// Unlike [`FileServer::handle`], it sends a directory named without its slash to a
/// relative `Location` (`/static/docs` → `./docs/`): the server does not know which prefix
/// a router took off the path, and a relative reference is right under any.
impl fibra_http::Service for FileServer {
    fn call(&self, req: Request) -> Response {
        let mut res = self.handle(&req);
        if res.status() == StatusCode::MOVED_PERMANENTLY {
            relative_redirect(&req, &mut res);
        }
        res
    }
}

/// Makes a directory's redirect to its slashed URL relative (`./name/`, and the query).
fn relative_redirect(req: &Request, res: &mut Response) {
    let uri = req.uri();
    let Some(last) = uri.path().rsplit('/').next().filter(|s| !s.is_empty()) else {
        return;
    };
    // `./` first: a name with a colon is not taken for a scheme.
    let mut location = format!("./{last}/");
    if let Some(q) = uri.query() {
        location.push('?');
        location.push_str(q);
    }
    if let Ok(v) = HeaderValue::try_from(location) {
        res.headers_mut().insert(header::LOCATION, v);
    }
}

impl FileBody {
    fn into_body(self) -> ResponseBody {
        match self {
            FileBody::Empty => ResponseBody::empty(),
            FileBody::Bytes(b) => ResponseBody::from(b),
            FileBody::File { file, offset, len } => {
                ResponseBody::file(FileRange::new(file, offset, len))
            }
        }
    }
}

impl FileReply {
    /// Converts into a fibra-http response (`Content-Length` is added by the writer; for HEAD
    /// it announces the body length and sends nothing).
    pub fn into_response(self) -> Response {
        let mut resp = Response::new(self.body.into_body());
        *resp.status_mut() = self.status;
        *resp.headers_mut() = self.headers;
        resp
    }
}

/// A cached file is the owner of its prepared `200`s: representation `i` is
/// `Encoding` number `i` (identity, brotli, gzip), with the head the file server rendered for
/// it and the bytes of that file.
impl Prepared for FileEntry {
    fn head(&self, which: usize) -> &PreparedHead {
        // Made before a response refers to the entry (`FileServer::file`).
        self.head(encoding_of(which))
            .expect("a cached file's head is made before it is sent")
    }
    fn body(&self, which: usize) -> PreparedBody<'_> {
        let file = self.representation(encoding_of(which));
        match &file.data {
            FileData::Memory(bytes) => PreparedBody::Memory(bytes),
            FileData::Open(f) => PreparedBody::File {
                file: f.get(),
                len: file.size,
            },
        }
    }
}

fn encoding_of(which: usize) -> Encoding {
    match which {
        1 => Encoding::Brotli,
        2 => Encoding::Gzip,
        _ => Encoding::Identity,
    }
}
