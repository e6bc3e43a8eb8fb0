//! Glue between [`FileServer`] and the fibra-http server: `handle(&Request) -> Response`, the
//! `FileReply -> Response` conversion (file bodies become `sendfile` ranges), and access logging.
//!
//! ```no_run
//! use std::sync::Arc;
//! use fibra_http::files::{FileServer, FileServerConfig};
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

use std::time::SystemTime;

use http::Version;

use super::access_log::{AccessLog, LogEntry};
use super::server::{FileBody, FileReply, FileServer};
use crate::{FileRange, Request, Response, ResponseBody};

impl FileServer {
    /// Answers one request (any path: those outside the prefix get 404; use
    /// [`FileServer::matches`] to route). Logs it when an access log is attached.
    pub fn handle(&self, req: &Request) -> Response {
        let uri = req.uri();
        let reply = self.reply(req.method(), uri.path(), uri.query(), req.headers());
        if let Some(log) = self.access_log() {
            log_request(log, req, &reply);
        }
        reply.into_response()
    }
}

impl FileReply {
    /// Converts into a fibra-http response (`Content-Length` is added by the writer; for HEAD
    /// it announces the body length and sends nothing).
    pub fn into_response(self) -> Response {
        let body = match self.body {
            FileBody::Empty => ResponseBody::empty(),
            FileBody::Bytes(b) => ResponseBody::from(b),
            FileBody::File { file, offset, len } => {
                ResponseBody::file(FileRange::new(file, offset, len))
            }
        };
        let mut resp = Response::new(body);
        *resp.status_mut() = self.status;
        *resp.headers_mut() = self.headers;
        resp
    }
}

fn log_request(log: &AccessLog, req: &Request, reply: &FileReply) {
    let uri = req.uri();
    let target = uri.path_and_query().map_or(uri.path(), |pq| pq.as_str());
    let version = match req.version() {
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_11 => "HTTP/1.1",
        _ => "HTTP",
    };
    let is_head = req.method() == http::Method::HEAD;
    let h = |name: http::header::HeaderName| req.headers().get(name).map(|v| v.as_bytes());
    log.log(&LogEntry {
        peer: req.peer_addr().map(|a| a.ip()),
        method: req.method().as_str(),
        target,
        version,
        status: reply.status.as_u16(),
        bytes: if is_head { 0 } else { reply.body.len() },
        referer: h(http::header::REFERER),
        user_agent: h(http::header::USER_AGENT),
        time: SystemTime::now(),
    });
}
