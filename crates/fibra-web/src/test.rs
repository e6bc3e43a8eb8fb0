//! Testing an application: [`TestClient`] sends requests to a router in process, without a
//! socket, on a one-worker fibra runtime (handlers may block, as in production);
//! [`TestServer`] serves it on a loopback address for real clients.
//!
//! ```
//! use fibra_web::routing::{get, post};
//! use fibra_web::test::TestClient;
//! use fibra_web::{Json, Router};
//!
//! let app = Router::new()
//!     .route("/", get(|| "hello"))
//!     .route("/echo", post(|Json(v): Json<serde_json::Value>| Json(v)));
//! let client = TestClient::new(app);
//!
//! let res = client.get("/").send();
//! assert_eq!(res.status(), 200);
//! assert_eq!(res.text(), "hello");
//!
//! let res = client.post("/echo").json(&serde_json::json!({"a": 1})).send();
//! assert_eq!(res.json::<serde_json::Value>()["a"], 1);
//! ```

use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use fibra_http::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use fibra_http::http::{self, HeaderMap, Method, StatusCode};
use fibra_http::{Body, Request, Server, ServerHandle, Service};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::extract::ConnectInfo;

/// Sends requests to a service (a [`Router`](crate::Router)) in process: see the module docs.
pub struct TestClient {
    service: Arc<dyn Service + Send + Sync>,
    runtime: fibra::Runtime,
    peer: SocketAddr,
}

impl TestClient {
    /// A client of `service`, with a runtime of its own (one worker).
    pub fn new<T: Service + Send + Sync + 'static>(service: T) -> Self {
        let runtime = fibra::Runtime::builder()
            .workers(1)
            .thread_name("fibra-web-test")
            .build()
            .expect("fibra-web: cannot start the test client's runtime");
        TestClient {
            service: Arc::new(service),
            runtime,
            peer: SocketAddr::from(([127, 0, 0, 1], 40000)),
        }
    }

    /// The address [`ConnectInfo`] reports for this client's requests (default
    /// `127.0.0.1:40000`).
    pub fn peer_addr(mut self, addr: SocketAddr) -> Self {
        self.peer = addr;
        self
    }

    /// A request with `method` to `uri` (a path with an optional query).
    pub fn request(&self, method: Method, uri: &str) -> TestRequest<'_> {
        TestRequest {
            client: self,
            builder: http::Request::builder().method(method).uri(uri),
            body: Vec::new(),
        }
    }

    /// A `GET` of `uri`.
    pub fn get(&self, uri: &str) -> TestRequest<'_> {
        self.request(Method::GET, uri)
    }
    /// A `HEAD` of `uri`.
    pub fn head(&self, uri: &str) -> TestRequest<'_> {
        self.request(Method::HEAD, uri)
    }
    /// A `POST` to `uri`.
    pub fn post(&self, uri: &str) -> TestRequest<'_> {
        self.request(Method::POST, uri)
    }
    /// A `PUT` to `uri`.
    pub fn put(&self, uri: &str) -> TestRequest<'_> {
        self.request(Method::PUT, uri)
    }
    /// A `PATCH` to `uri`.
    pub fn patch(&self, uri: &str) -> TestRequest<'_> {
        self.request(Method::PATCH, uri)
    }
    /// A `DELETE` of `uri`.
    pub fn delete(&self, uri: &str) -> TestRequest<'_> {
        self.request(Method::DELETE, uri)
    }
    /// An `OPTIONS` of `uri`.
    pub fn options(&self, uri: &str) -> TestRequest<'_> {
        self.request(Method::OPTIONS, uri)
    }
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
            .field("peer", &self.peer)
            .finish()
    }
}

/// A request being built: see [`TestClient`].
pub struct TestRequest<'c> {
    client: &'c TestClient,
    builder: http::request::Builder,
    body: Vec<u8>,
}

impl TestRequest<'_> {
    /// Adds a header field. Panics on a name or value that is not one.
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        K: TryInto<HeaderName>,
        K::Error: Into<http::Error>,
        V: TryInto<HeaderValue>,
        V::Error: Into<http::Error>,
    {
        self.builder = self.builder.header(name, value);
        self
    }
    /// The body, as it is (no `Content-Type`).
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }
    /// `value` as a JSON body, with `Content-Type: application/json`.
    pub fn json<T: Serialize + ?Sized>(self, value: &T) -> Self {
        let body = serde_json::to_vec(value).expect("the value serializes to JSON");
        self.header(CONTENT_TYPE, "application/json").body(body)
    }
    /// The request's HTTP version (default HTTP/1.1): `Version::HTTP_2` to see what a
    /// handler does over HTTP/2.
    pub fn version(mut self, version: http::Version) -> Self {
        self.builder = self.builder.version(version);
        self
    }
    /// `value` as a urlencoded form body, with its `Content-Type`.
    pub fn form<T: Serialize + ?Sized>(self, value: &T) -> Self {
        let body = serde_urlencoded::to_string(value).expect("the value serializes as a form");
        self.header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
    }

    /// Sends the request: the service answers on the client's runtime, in a fiber; a panic in
    /// it answers `500`, as the server does. The body is read whole (a streamed one too).
    pub fn send(self) -> TestResponse {
        let mut builder = self.builder;
        let len = self.body.len();
        if len > 0 {
            if let Some(h) = builder.headers_mut() {
                h.entry(http::header::CONTENT_LENGTH)
                    .or_insert_with(|| HeaderValue::from(len));
            }
        }
        let req = builder
            .extension(ConnectInfo(self.client.peer))
            .body(self.body)
            .expect("a valid test request");
        let service = self.client.service.clone();
        self.client.runtime.block_on(move || {
            let (parts, body) = req.into_parts();
            let is_head = parts.method == Method::HEAD;
            let req = Request::from(http::Request::from_parts(parts, Body::from_bytes(body)));
            let res = match catch_unwind(AssertUnwindSafe(|| service.call(req))) {
                Ok(res) => res,
                Err(_) => {
                    return TestResponse {
                        status: StatusCode::INTERNAL_SERVER_ERROR,
                        headers: HeaderMap::new(),
                        body: Bytes::new(),
                    }
                }
            };
            let status = res.status();
            let mut headers = res.headers().clone();
            let body = res.into_body();
            if let Some(ct) = body.content_type() {
                headers.entry(CONTENT_TYPE).or_insert_with(|| ct.clone());
            }
            let body = if is_head {
                Bytes::new()
            } else {
                body.collect().map(|c| c.bytes).unwrap_or_default()
            };
            TestResponse {
                status,
                headers,
                body,
            }
        })
    }
}

impl std::fmt::Debug for TestRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestRequest").finish_non_exhaustive()
    }
}

/// The answer to a [`TestRequest`]: status, header fields (with the body's `Content-Type`)
/// and the whole body.
#[derive(Debug, Clone)]
pub struct TestResponse {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl TestResponse {
    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }
    /// The header fields.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }
    /// The value of the field `name`, as text (`None` if absent or not text).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    /// The body.
    pub fn bytes(&self) -> &Bytes {
        &self.body
    }
    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The body as JSON. Panics with the body if it is not `T`.
    pub fn json<T: DeserializeOwned>(&self) -> T {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not the JSON expected ({e}): {}", self.text()))
    }
}

/// A router served on a loopback address (one worker) for real clients; shut down when
/// dropped.
pub struct TestServer {
    handle: Option<ServerHandle>,
}

impl TestServer {
    /// Serves `service` on `127.0.0.1` at a free port.
    pub fn spawn<T: Service + Send + Sync + 'static>(service: T) -> io::Result<TestServer> {
        let handle = Server::bind("127.0.0.1:0").workers(1).serve(service)?;
        Ok(TestServer {
            handle: Some(handle),
        })
    }
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.handle
            .as_ref()
            .expect("running until dropped")
            .local_addr()
    }
    /// `http://ADDR` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr())
    }
    /// Shuts the server down gracefully, as `ServerHandle::shutdown` does: it stops
    /// accepting, closes idle connections, tells long responses (event streams, WebSockets)
    /// to end, lets requests in flight finish for up to 30 s, then closes what is left.
    /// Returns once the server has stopped.
    pub fn shutdown(mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown(Duration::from_secs(30));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown(Duration::from_secs(5));
        }
    }
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer").finish_non_exhaustive()
    }
}
