//! A route as it runs: the access checks (`allow`/`deny`, `rate_limit`, `basic_auth`,
//! `max_body`), then the action, then the error pages and the response header rules.

use std::net::IpAddr;
use std::sync::Arc;

use bytes::Bytes;
use fibra_http::http::{header, HeaderValue, StatusCode};
use fibra_http::{Request, Response, ResponseBody};

use crate::access::{AccessList, BasicAuth, RateLimit};
use crate::action::{status_response, Action};
pub use fibra_files::field_rules::FieldRules as HeaderOps;

/// An error page: the file's bytes (read at start and on reload) and their type.
#[derive(Debug, Clone)]
pub struct ErrorPage {
    /// The status it is for.
    pub status: StatusCode,
    /// The page.
    pub body: Bytes,
    /// Its Content-Type.
    pub content_type: HeaderValue,
}

/// One route, ready to answer.
pub struct Route {
    /// What it does.
    pub action: Action,
    /// Response header rules (a `files` action's file server has them too, rendered into
    /// its cached heads: they are applied here only to the other answers).
    pub headers: Option<HeaderOps>,
    /// Request header rules (for a proxy route's upstream request).
    pub headers_up: Option<HeaderOps>,
    /// `allow`/`deny`.
    pub access: Option<AccessList>,
    /// `rate_limit` (process-wide state, kept across reloads).
    pub rate_limit: Option<Arc<RateLimit>>,
    /// `basic_auth`.
    pub basic_auth: Option<Arc<BasicAuth>>,
    /// `max_body`.
    pub max_body: Option<u64>,
    /// `error_pages`.
    pub error_pages: Vec<ErrorPage>,
}

impl Route {
    /// Answers `req`.
    #[inline]
    pub fn handle(&self, mut req: Request) -> Response {
        if let Some(refused) = self.check(&mut req) {
            return self.finish(refused, false);
        }
        if let Some(up) = &self.headers_up {
            up.apply(req.headers_mut());
        }
        if let Action::Files(files) = &self.action {
            // The common case without the (answer, applied) pair: a file server's answer has
            // the header rules already, and without error pages nothing is left to do.
            if files.try_files.is_empty() && self.error_pages.is_empty() {
                return files.server.handle(&req);
            }
        }
        let (resp, applied) = self.action.run(req);
        self.finish(resp, applied)
    }

    /// The refusal of `req` by an access check, if one refuses it.
    #[inline]
    fn check(&self, req: &mut Request) -> Option<Response> {
        if self.access.is_none()
            && self.rate_limit.is_none()
            && self.basic_auth.is_none()
            && self.max_body.is_none()
        {
            return None;
        }
        self.check_each(req)
    }

    fn check_each(&self, req: &mut Request) -> Option<Response> {
        let ip: Option<IpAddr> = match self.access.is_some() || self.rate_limit.is_some() {
            true => req.peer_addr().map(|a| a.ip()),
            false => None,
        };
        if let Some(access) = &self.access {
            // A client without an IP address (a Unix socket) passes `deny`, not `allow`.
            let permitted = match ip {
                Some(ip) => access.permits(ip),
                None => access.allow.is_empty(),
            };
            if !permitted {
                return Some(status_response(StatusCode::FORBIDDEN));
            }
        }
        if let (Some(limit), Some(ip)) = (&self.rate_limit, ip) {
            if let Err(retry_after) = limit.check(ip, std::time::Instant::now()) {
                return Some(crate::access::too_many(retry_after));
            }
        }
        if let Some(auth) = &self.basic_auth {
            if let Err(refused) = auth.check(req.headers()) {
                return Some(refused);
            }
        }
        if let Some(max) = self.max_body {
            let declared = req
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > max) {
                return Some(status_response(StatusCode::PAYLOAD_TOO_LARGE));
            }
            // A chunked (or HTTP/2) body that grows past it fails as it is read: the server
            // answers 413.
            req.body_mut().limit(max);
        }
        None
    }

    /// The error page for the response's status, then the header rules (unless `applied`
    /// already and the response is still the action's).
    #[inline]
    fn finish(&self, resp: Response, applied: bool) -> Response {
        // Most routes: nothing to do (a file server applied the rules itself).
        if self.error_pages.is_empty() && (applied || self.headers.is_none()) {
            return resp;
        }
        self.finish_each(resp, applied)
    }

    fn finish_each(&self, mut resp: Response, mut applied: bool) -> Response {
        if !self.error_pages.is_empty() {
            let status = resp.status();
            if let Some(page) = self.error_pages.iter().find(|p| p.status == status) {
                let mut paged = Response::new(
                    ResponseBody::from(page.body.clone())
                        .with_content_type(page.content_type.clone()),
                );
                *paged.status_mut() = status;
                // Keep what tells the client how to go on.
                for name in [
                    header::WWW_AUTHENTICATE,
                    header::RETRY_AFTER,
                    header::ALLOW,
                    header::LOCATION,
                ] {
                    if let Some(v) = resp.headers().get(&name) {
                        paged.headers_mut().insert(name, v.clone());
                    }
                }
                resp = paged;
                applied = false;
            }
        }
        if let (Some(ops), false) = (&self.headers, applied) {
            ops.apply(resp.headers_mut());
        }
        resp
    }
}
