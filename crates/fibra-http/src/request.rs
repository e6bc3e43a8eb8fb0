//! The request a handler receives: the parsed head (method, target, version, header fields)
//! and a streaming [`Body`].
//!
//! [`Request`] is a thin wrapper with the accessors of `http::Request<Body>` (`method()`,
//! `uri()`, `headers()`, `body_mut()`, …). What it adds is how the head is held: shared, by
//! reference count, with the worker's parser. A client that sends a byte-identical head again
//! (a benchmark client, a health check, a poller, a pipelining client) gets its request without
//! a parse, without a copy of the header map and without an allocation. A `_mut` accessor
//! copies the head first when it is shared (copy on write), so handlers never see one
//! another's changes. [`Request::into_http`] converts into the `http` type.
//!
//! ```
//! use std::io::Read;
//! use fibra_http::{Body, Request};
//!
//! let mut req = Request::from(
//!     http::Request::post("/echo")
//!         .header("content-type", "text/plain")
//!         .body(Body::from_bytes("hi"))
//!         .unwrap(),
//! );
//! assert_eq!(req.uri().path(), "/echo");
//! assert_eq!(req.headers()["content-type"], "text/plain");
//! req.headers_mut().insert("x-seen", http::HeaderValue::from_static("1"));
//! let mut body = String::new();
//! req.body_mut().read_to_string(&mut body).unwrap();
//! assert_eq!(body, "hi");
//! let req: http::Request<Body> = req.into_http();
//! assert_eq!(req.headers()["x-seen"], "1");
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::rc::Rc;

use http::{Extensions, HeaderMap, Method, Uri, Version};

use crate::body::Body;
use crate::lazy::{Lazy, NO_EXTENSIONS};
use crate::parse::RequestHead;

/// The request type handlers receive. See the module docs.
///
/// Like its [`Body`], a `Request` is not `Send`: it lives in the connection's fiber.
pub struct Request {
    head: Rc<RequestHead>,
    /// Boxed on first use: most requests never have any, and an absent box costs nothing to
    /// drop.
    extensions: Lazy<Extensions>,
    body: Body,
}

impl Request {
    /// `GET / HTTP/1.1` with no header fields and `body` (as `http::Request::new`).
    pub fn new(body: Body) -> Self {
        Self::from_head(Rc::new(RequestHead::default()), body)
    }

    /// A request over a parsed head, shared with the parser's cache.
    pub(crate) fn from_head(head: Rc<RequestHead>, body: Body) -> Self {
        Request {
            head,
            extensions: Lazy::none(),
            body,
        }
    }

    /// The head for changing: copied first if the parser's cache (or anything else) shares it.
    fn head_mut(&mut self) -> &mut RequestHead {
        Rc::make_mut(&mut self.head)
    }

    /// The request method.
    pub fn method(&self) -> &Method {
        &self.head.method
    }
    /// Whether this is a `GET` or a `HEAD`: answer both the same way, the server leaves the
    /// body out of a `HEAD` response (and keeps its `Content-Length`).
    ///
    /// ```
    /// use fibra_http::{Request, Response};
    /// use fibra_http::http::StatusCode;
    ///
    /// fn handler(req: Request) -> Response {
    ///     if !req.is_get_or_head() {
    ///         return Response::builder()
    ///             .status(StatusCode::METHOD_NOT_ALLOWED)
    ///             .body("".into())
    ///             .unwrap();
    ///     }
    ///     Response::new("hello".into())
    /// }
    /// ```
    pub fn is_get_or_head(&self) -> bool {
        self.head.method == Method::GET || self.head.method == Method::HEAD
    }
    /// The request method, for changing.
    pub fn method_mut(&mut self) -> &mut Method {
        &mut self.head_mut().method
    }
    /// The request target.
    pub fn uri(&self) -> &Uri {
        &self.head.uri
    }
    /// The request target, for changing.
    pub fn uri_mut(&mut self) -> &mut Uri {
        &mut self.head_mut().uri
    }
    /// `HTTP/1.0` or `HTTP/1.1`.
    pub fn version(&self) -> Version {
        self.head.version
    }
    /// The version, for changing.
    pub fn version_mut(&mut self) -> &mut Version {
        &mut self.head_mut().version
    }
    /// The header fields, in the order received.
    pub fn headers(&self) -> &HeaderMap {
        &self.head.headers
    }
    /// The header fields, for changing.
    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        &mut self.head_mut().headers
    }
    /// Typed values attached to the request (empty as the server hands it over).
    pub fn extensions(&self) -> &Extensions {
        self.extensions.get_or(&NO_EXTENSIONS)
    }
    /// Typed values attached to the request, for changing.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        self.extensions.get_mut()
    }
    /// The body.
    pub fn body(&self) -> &Body {
        &self.body
    }
    /// The body, for reading (it implements `std::io::Read`).
    pub fn body_mut(&mut self) -> &mut Body {
        &mut self.body
    }
    /// The body alone.
    pub fn into_body(self) -> Body {
        self.body
    }
    /// The client's address (`None` for a request not made by the server).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.body.peer_addr()
    }
    /// The head as `http`'s parts, and the body.
    pub fn into_parts(mut self) -> (http::request::Parts, Body) {
        let head = Rc::try_unwrap(self.head).unwrap_or_else(|shared| (*shared).clone());
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.method = head.method;
        parts.uri = head.uri;
        parts.version = head.version;
        parts.headers = head.headers;
        if let Some(e) = self.extensions.take() {
            parts.extensions = e;
        }
        (parts, self.body)
    }
    /// Converts into `http::Request<Body>`.
    pub fn into_http(self) -> http::Request<Body> {
        let (parts, body) = self.into_parts();
        http::Request::from_parts(parts, body)
    }
}

impl From<http::Request<Body>> for Request {
    fn from(req: http::Request<Body>) -> Self {
        let (parts, body) = req.into_parts();
        Request {
            head: Rc::new(RequestHead {
                method: parts.method,
                uri: parts.uri,
                version: parts.version,
                headers: parts.headers,
            }),
            extensions: Lazy::unless_empty(parts.extensions, Extensions::is_empty),
            body,
        }
    }
}

impl From<Request> for http::Request<Body> {
    fn from(req: Request) -> Self {
        req.into_http()
    }
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", self.method())
            .field("uri", self.uri())
            .field("version", &self.version())
            .field("headers", self.headers())
            .field("body", &self.body)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_head_cached;
    use crate::parse::HeadCache;
    use crate::Settings;

    /// Two requests made from one cached head share it until one of them changes it; the
    /// change is seen by that request alone, not by the other or by the next repeat.
    #[test]
    fn shared_head_is_copied_on_write() {
        let wire = b"GET /a HTTP/1.1\r\nHost: x\r\nX-N: 1\r\n\r\n";
        let settings = Settings::default();
        let mut cache = HeadCache::default();
        let mut heads = Vec::new();
        for _ in 0..4 {
            let (head, n) = parse_head_cached(wire, &settings, &mut cache)
                .unwrap()
                .unwrap();
            assert_eq!(n, wire.len());
            heads.push(head);
        }
        // From the second repeat on, the parser hands out the head it kept.
        assert!(Rc::ptr_eq(&heads[2].request, &heads[3].request));
        let mut a = Request::from_head(heads[2].request.clone(), Body::empty());
        let b = Request::from_head(heads[3].request.clone(), Body::empty());
        a.headers_mut()
            .insert("x-n", http::HeaderValue::from_static("2"));
        *a.uri_mut() = Uri::from_static("/b");
        *a.method_mut() = Method::POST;
        assert_eq!(a.headers()["x-n"], "2");
        assert_eq!((a.method(), a.uri().path()), (&Method::POST, "/b"));
        assert_eq!(b.headers()["x-n"], "1");
        assert_eq!((b.method(), b.uri().path()), (&Method::GET, "/a"));
        let (next, _) = parse_head_cached(wire, &settings, &mut cache)
            .unwrap()
            .unwrap();
        assert_eq!(next.headers["x-n"], "1");
        assert_eq!(next.uri.path(), "/a");
        // A request alone with its head changes it in place.
        let alone = Rc::new(RequestHead::default());
        let mut c = Request::from_head(alone, Body::empty());
        let before = Rc::as_ptr(&c.head);
        *c.version_mut() = Version::HTTP_10;
        assert_eq!(Rc::as_ptr(&c.head), before);
        assert_eq!(c.version(), Version::HTTP_10);
    }

    #[test]
    fn converts_to_and_from_http() {
        let mut req = http::Request::put("/x?y=1")
            .version(Version::HTTP_10)
            .header("a", "1")
            .body(Body::from_bytes("z"))
            .unwrap();
        req.extensions_mut().insert(7u32);
        let mut req = Request::from(req);
        assert_eq!(req.method(), Method::PUT);
        assert_eq!(req.uri().query(), Some("y=1"));
        assert_eq!(req.version(), Version::HTTP_10);
        assert_eq!(req.extensions().get::<u32>(), Some(&7));
        assert_eq!(req.body().remaining(), Some(1));
        assert_eq!(req.peer_addr(), None);
        req.extensions_mut().insert(8u32);
        let back: http::Request<Body> = req.into();
        assert_eq!(back.headers()["a"], "1");
        assert_eq!(back.extensions().get::<u32>(), Some(&8));
        assert_eq!(back.uri(), "/x?y=1");
        let fresh = Request::new(Body::empty());
        assert!(format!("{fresh:?}").contains("GET"));
        assert_eq!(
            (fresh.method(), fresh.uri().path(), fresh.version()),
            (&Method::GET, "/", Version::HTTP_11)
        );
        assert!(fresh.headers().is_empty());
        assert!(fresh.extensions().is_empty());
        let mut fresh = fresh;
        fresh.extensions_mut().insert("tag");
        assert_eq!(fresh.extensions().get::<&str>(), Some(&"tag"));
        assert_eq!(fresh.into_http().extensions().get::<&str>(), Some(&"tag"));
    }
}
