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
use std::sync::Arc;

use http::{Extensions, HeaderMap, Method, Uri, Version};

use crate::body::Body;
use crate::lazy::{Lazy, NO_EXTENSIONS};
use crate::parse::RequestHead;

/// The request type handlers receive. See the module docs.
///
/// Like its [`Body`], a `Request` is not `Send`: it lives in the connection's fiber.
pub struct Request {
    head: HeadRef,
    /// Boxed on first use: most requests never have any, and an absent box costs nothing to
    /// drop.
    extensions: Lazy<Extensions>,
    body: Body,
}

/// A request's head, given back to the parser when the request is done with it and nothing
/// else holds it ([`crate::parse::recycle`]): the next request parsed on the thread reuses its
/// allocations.
struct HeadRef(Option<Rc<RequestHead>>);

impl HeadRef {
    #[inline]
    fn get(&self) -> &Rc<RequestHead> {
        match &self.0 {
            Some(head) => head,
            None => unreachable!("the head is only taken by `into_parts`, which consumes it"),
        }
    }
    #[inline]
    fn get_mut(&mut self) -> &mut Rc<RequestHead> {
        match &mut self.0 {
            Some(head) => head,
            None => unreachable!("the head is only taken by `into_parts`, which consumes it"),
        }
    }
}

impl Drop for HeadRef {
    #[inline]
    fn drop(&mut self) {
        if let Some(head) = self.0.take() {
            // A head the parser's cache still holds (a repeated request's) just loses this
            // reference; one that nothing else holds goes back to the parser.
            if Rc::strong_count(&head) == 1 {
                crate::parse::recycle(head);
            }
        }
    }
}

impl Request {
    /// `GET / HTTP/1.1` with no header fields and `body` (as `http::Request::new`).
    pub fn new(body: Body) -> Self {
        Self::from_head(Rc::new(RequestHead::default()), body)
    }

    /// A request over a parsed head, shared with the parser's cache.
    pub(crate) fn from_head(head: Rc<RequestHead>, body: Body) -> Self {
        Request {
            head: HeadRef(Some(head)),
            extensions: Lazy::none(),
            body,
        }
    }

    /// The head for changing: copied first if the parser's cache (or anything else) shares it.
    fn head_mut(&mut self) -> &mut RequestHead {
        Rc::make_mut(self.head.get_mut())
    }

    /// The request method.
    pub fn method(&self) -> &Method {
        &self.head.get().method
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
        self.head.get().method == Method::GET || self.head.get().method == Method::HEAD
    }
    /// The request method, for changing.
    pub fn method_mut(&mut self) -> &mut Method {
        &mut self.head_mut().method
    }
    /// The request target.
    pub fn uri(&self) -> &Uri {
        &self.head.get().uri
    }
    /// The request target, for changing.
    pub fn uri_mut(&mut self) -> &mut Uri {
        &mut self.head_mut().uri
    }
    /// `HTTP/1.0` or `HTTP/1.1`.
    pub fn version(&self) -> Version {
        self.head.get().version
    }
    /// The version, for changing.
    pub fn version_mut(&mut self) -> &mut Version {
        &mut self.head_mut().version
    }
    /// The header fields, in the order received.
    pub fn headers(&self) -> &HeaderMap {
        &self.head.get().headers
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
    /// The host name the client sent in TLS's SNI extension (what a virtual host or an ACME
    /// `tls-alpn-01` answer is chosen by); `None` without TLS, without SNI, or for a request
    /// not read from a connection. Compare it with the `Host` a request names: they may
    /// differ (nginx answers such a mismatch with 421 only when asked to).
    pub fn server_name(&self) -> Option<Arc<str>> {
        self.body.server_name()
    }
    /// Which of the server's acceptors the request's connection came through: 0 for the
    /// main one, `k` for the `k`-th added beside it ([`crate::Server::also_acceptor`],
    /// `also_bind`, `also_tls`), so one service can tell its listening addresses apart
    /// (sites per address). 0 for a request not read from a connection.
    pub fn listener(&self) -> usize {
        self.body.listener()
    }
    /// The head as `http`'s parts, and the body.
    pub fn into_parts(mut self) -> (http::request::Parts, Body) {
        let head = self
            .head
            .0
            .take()
            .expect("a request's head is taken only here");
        let head = Rc::try_unwrap(head).unwrap_or_else(|shared| (*shared).clone());
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
            head: HeadRef(Some(Rc::new(RequestHead {
                method: parts.method,
                uri: parts.uri,
                version: parts.version,
                headers: parts.headers,
            }))),
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
    use crate::settings::Settings;

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
        let before = Rc::as_ptr(c.head.get());
        *c.version_mut() = Version::HTTP_10;
        assert_eq!(Rc::as_ptr(c.head.get()), before);
        assert_eq!(c.version(), Version::HTTP_10);
    }

    fn wire_with_fields(target: &str, fields: usize) -> Vec<u8> {
        let mut wire = format!("GET {target} HTTP/1.1\r\nHost: h{fields}\r\n");
        for i in 1..fields {
            wire.push_str(&format!("X-F{i}: {i}\r\n"));
        }
        wire.push_str("\r\n");
        wire.into_bytes()
    }

    /// A request dropped by its handler gives its head back to the parser: the next head
    /// parsed on the thread is made in it (its map keeps the room of the first one's 20
    /// fields) and shows nothing of the request before.
    #[test]
    fn a_dropped_head_is_reused_without_its_old_fields() {
        let settings = Settings::default();
        let mut cache = HeadCache::default();
        let parse = |wire: &[u8], cache: &mut HeadCache| {
            let (head, n) = parse_head_cached(wire, &settings, cache).unwrap().unwrap();
            assert_eq!(n, wire.len());
            head
        };
        let first = parse(&wire_with_fields("/first?q=1", 20), &mut cache);
        let room = first.headers.capacity();
        assert!(room >= 20);
        let req = Request::from_head(first.request, Body::empty());
        assert_eq!(req.headers().len(), 20);
        drop(req);
        let second = parse(
            b"POST /second HTTP/1.0\r\nContent-Length: 2\r\n\r\n",
            &mut cache,
        );
        assert_eq!(second.headers.capacity(), room, "made in the dropped head");
        assert_eq!(second.method, Method::POST);
        assert_eq!(second.uri, "/second");
        assert_eq!(second.version, Version::HTTP_10);
        assert_eq!(second.headers.len(), 1);
        assert_eq!(second.headers["content-length"], "2");
        assert!(second.headers.get("host").is_none() && second.headers.get("x-f1").is_none());

        // A head something else still holds (here: a clone, as the access log keeps one) is
        // left alone: the next parse makes its own, and the held one keeps its fields.
        let req = Request::from_head(second.request, Body::empty());
        let held = req.head.get().clone();
        drop(req);
        let third = parse(&wire_with_fields("/third", 2), &mut cache);
        assert!(!Rc::ptr_eq(&third.request, &held));
        assert_eq!((held.uri.path(), held.headers.len()), ("/second", 1));
        assert_eq!((third.uri.path(), third.headers.len()), ("/third", 2));
        // A request turned into `http`'s type takes its head along; nothing is given back.
        let req = Request::from_head(third.request, Body::empty()).into_http();
        let fourth = parse(&wire_with_fields("/fourth", 1), &mut cache);
        assert_eq!(req.uri(), "/third");
        assert_eq!(req.headers()["x-f1"], "1");
        assert_eq!(fourth.uri, "/fourth");
        assert_eq!(fourth.headers.len(), 1);
    }

    /// A head whose map grew past `RECYCLE_MAX_FIELDS` is not kept for reuse: the requests
    /// after one with many fields do not clear a large map each time.
    #[test]
    fn a_head_with_a_large_map_is_not_reused() {
        let settings = Settings {
            max_headers: 100,
            ..Settings::default()
        };
        let mut cache = HeadCache::default();
        let (big, _) = parse_head_cached(&wire_with_fields("/big", 60), &settings, &mut cache)
            .unwrap()
            .unwrap();
        assert!(big.headers.capacity() >= 60);
        drop(Request::from_head(big.request, Body::empty()));
        let (small, _) = parse_head_cached(&wire_with_fields("/small", 1), &settings, &mut cache)
            .unwrap()
            .unwrap();
        assert!(small.headers.capacity() < 60);
        assert_eq!(small.headers.len(), 1);
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
