//! Taking a nested router's or a mounted service's prefix off the request's path (as axum's
//! `nest` and `nest_service`): `/api/users/7` reaches a router nested at `/api` as
//! `/users/7`, and `/api` as `/`.

use fibra_http::http::uri::{PathAndQuery, Uri};
use fibra_http::Request;

use crate::endpoint::Endpoint;
use crate::layer::Layer;

/// A layer removing as many leading path segments as `prefix` has (so a prefix with
/// parameters, `/{tenant}/api`, works too).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StripPrefix {
    segments: usize,
}

impl StripPrefix {
    pub(crate) fn new(prefix: &str) -> Self {
        StripPrefix {
            segments: prefix.split('/').filter(|s| !s.is_empty()).count(),
        }
    }
}

/// `path` without its first `segments` segments; `/` when nothing is left.
fn strip(path: &str, segments: usize) -> &str {
    let mut rest = path;
    for _ in 0..segments {
        let trimmed = rest.strip_prefix('/').unwrap_or(rest);
        rest = match trimmed.find('/') {
            Some(i) => &trimmed[i..],
            None => "",
        };
    }
    if rest.is_empty() {
        "/"
    } else {
        rest
    }
}

pub(crate) fn strip_request(req: &mut Request, segments: usize) {
    let uri = req.uri();
    let path = strip(uri.path(), segments);
    let pq = match uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    let Ok(pq) = PathAndQuery::try_from(pq) else {
        return;
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(pq);
    if let Ok(new) = Uri::from_parts(parts) {
        *req.uri_mut() = new;
    }
}

impl Layer for StripPrefix {
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S> {
        let segments = self.segments;
        Endpoint::new(move |mut req, route, state| {
            strip_request(&mut req, segments);
            inner.call(req, route, state)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::strip;

    #[test]
    fn strips_whole_segments() {
        assert_eq!(strip("/api/users/7", 1), "/users/7");
        assert_eq!(strip("/api", 1), "/");
        assert_eq!(strip("/api/", 1), "/");
        assert_eq!(strip("/t1/api/x", 2), "/x");
        assert_eq!(strip("/x", 0), "/x");
    }
}
