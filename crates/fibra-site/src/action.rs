//! What a route does once its checks pass: serve files (with `try_files`), forward to
//! upstreams, redirect, or answer with a fixed response.

use std::sync::Arc;

use bytes::Bytes;
use fibra_files::FileServer;
use fibra_http::http::{header, HeaderValue, StatusCode, Uri};
use fibra_http::{Request, Response, ResponseBody};
use fibra_proxy::Proxy;

/// A route's action, ready to run.
pub enum Action {
    /// Files under a root.
    Files(FilesAction),
    /// Forward to upstreams.
    Proxy(Arc<Proxy>),
    /// A redirect to `to` (placeholders `{path}`, `{query}`).
    Redirect {
        /// The target template.
        to: String,
        /// The status.
        code: StatusCode,
    },
    /// A fixed answer.
    Respond {
        /// Its status.
        status: StatusCode,
        /// Its body.
        body: Bytes,
        /// Its Content-Type.
        content_type: HeaderValue,
    },
    /// No action: 404.
    NotFound,
}

/// One `try_files` candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidate {
    /// A path: `before` + the request's path + `after`, or `before` alone when `path` is false.
    Path {
        /// Text before `{path}` (or the whole candidate).
        before: String,
        /// Whether `{path}` is in it.
        path: bool,
        /// Text after `{path}`.
        after: String,
    },
    /// `=404`: answer with this status.
    Status(StatusCode),
}

impl Candidate {
    /// Parses `"{path}"`, `"{path}/"`, `"/index.html"`, `"=404"`.
    pub fn parse(s: &str) -> Candidate {
        if let Some(code) = s.strip_prefix('=').and_then(|c| c.parse::<u16>().ok()) {
            if let Ok(status) = StatusCode::from_u16(code) {
                return Candidate::Status(status);
            }
        }
        match s.split_once("{path}") {
            Some((before, after)) => Candidate::Path {
                before: before.to_owned(),
                path: true,
                after: after.to_owned(),
            },
            None => Candidate::Path {
                before: s.to_owned(),
                path: false,
                after: String::new(),
            },
        }
    }

    /// The path this candidate names for a request whose path is `path`.
    fn expand(&self, path: &str) -> Option<String> {
        match self {
            Candidate::Path {
                before,
                path: true,
                after,
            } => Some(format!("{before}{path}{after}")),
            Candidate::Path { before, .. } => Some(before.clone()),
            Candidate::Status(_) => None,
        }
    }
}

/// Files under a root, maybe with `try_files`.
pub struct FilesAction {
    /// The file server (shared by routes with the same settings, and kept across reloads).
    pub server: Arc<FileServer>,
    /// Candidates in order; empty: the path itself.
    pub try_files: Vec<Candidate>,
}

impl FilesAction {
    /// The answer, and whether the file server made it (then it has the route's header
    /// rules already).
    fn run(&self, mut req: Request) -> (Response, bool) {
        if self.try_files.is_empty() {
            return (self.server.handle(&req), true);
        }
        let path = req.uri().path().to_owned();
        let query = req.uri().query().map(str::to_owned);
        let last = self.try_files.len() - 1;
        for (i, c) in self.try_files.iter().enumerate() {
            let Some(candidate) = c.expand(&path) else {
                if let Candidate::Status(s) = c {
                    return (status_response(*s), false);
                }
                continue;
            };
            if set_path(&mut req, &candidate, query.as_deref()).is_err() {
                continue;
            }
            let resp = self.server.handle(&req);
            // Before the last: taken when it names something (a file, a directory's index
            // or redirect); the last is the answer whatever it is.
            if i == last || resp.status() != StatusCode::NOT_FOUND {
                return (resp, true);
            }
        }
        (status_response(StatusCode::NOT_FOUND), false)
    }
}

/// Points `req` at `path` (keeping `query`).
pub(crate) fn set_path(req: &mut Request, path: &str, query: Option<&str>) -> Result<(), ()> {
    let pq = match query {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    let uri: Uri = pq.parse().map_err(|_| ())?;
    *req.uri_mut() = uri;
    Ok(())
}

/// A small text answer with `status`.
pub(crate) fn status_response(status: StatusCode) -> Response {
    let text = format!(
        "{} {}\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    let mut r = Response::new(
        ResponseBody::from(text)
            .with_content_type(HeaderValue::from_static("text/plain; charset=utf-8")),
    );
    *r.status_mut() = status;
    r
}

impl Action {
    /// Runs the action for `req`: the answer, and whether the action applied the route's
    /// header rules itself (a file server's answer).
    pub fn run(&self, req: Request) -> (Response, bool) {
        match self {
            Action::Files(f) => f.run(req),
            other => (other.run_other(req), false),
        }
    }

    /// The actions other than files.
    fn run_other(&self, req: Request) -> Response {
        match self {
            Action::Files(f) => f.run(req).0,
            Action::Proxy(p) => p.respond(req),
            Action::Redirect { to, code } => {
                let path = req.uri().path();
                let query = req
                    .uri()
                    .query()
                    .map(|q| format!("?{q}"))
                    .unwrap_or_default();
                let location = to.replace("{path}", path).replace("{query}", &query);
                let mut r = status_response(*code);
                match HeaderValue::try_from(location) {
                    Ok(v) => {
                        r.headers_mut().insert(header::LOCATION, v);
                        r
                    }
                    Err(_) => status_response(StatusCode::BAD_REQUEST),
                }
            }
            Action::Respond {
                status,
                body,
                content_type,
            } => {
                let mut r = Response::new(
                    ResponseBody::from(body.clone()).with_content_type(content_type.clone()),
                );
                *r.status_mut() = *status;
                r
            }
            Action::NotFound => status_response(StatusCode::NOT_FOUND),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_expand_the_path() {
        let c = Candidate::parse("{path}/");
        assert_eq!(c.expand("/a"), Some("/a/".into()));
        assert_eq!(
            Candidate::parse("/index.html").expand("/a"),
            Some("/index.html".into())
        );
        assert_eq!(
            Candidate::parse("=404"),
            Candidate::Status(StatusCode::NOT_FOUND)
        );
    }
}
