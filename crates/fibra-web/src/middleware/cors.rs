//! [`CorsLayer`]: Cross-Origin Resource Sharing, with tower-http's builder. The layer answers
//! preflight requests itself and adds the `Access-Control-*` fields to the others.
//!
//! ```
//! use std::time::Duration;
//! use fibra_web::http::{header, HeaderValue, Method};
//! use fibra_web::middleware::cors::CorsLayer;
//! use fibra_web::routing::get;
//! use fibra_web::test::TestClient;
//! use fibra_web::Router;
//!
//! let cors = CorsLayer::new()
//!     .allow_origin([HeaderValue::from_static("https://app.example")])
//!     .allow_methods([Method::GET, Method::POST])
//!     .allow_headers([header::CONTENT_TYPE])
//!     .allow_credentials(true)
//!     .max_age(Duration::from_secs(600));
//! let app: Router = Router::new().route("/api", get(|| "data")).layer(cors);
//!
//! let client = TestClient::new(app);
//! let res = client.get("/api").header("origin", "https://app.example").send();
//! assert_eq!(res.header("access-control-allow-origin"), Some("https://app.example"));
//! assert_eq!(res.header("vary"), Some("origin"));
//! ```
//!
//! - A **preflight** is an `OPTIONS` request with `Origin` and
//!   `Access-Control-Request-Method`: the layer answers it with `204` and the
//!   `Access-Control-Allow-{Origin,Methods,Headers,Credentials}` and `Max-Age` fields it is
//!   configured with, without calling the handler (or the router's own `OPTIONS` answer).
//! - Any other request goes to the handler; its response gets `Access-Control-Allow-Origin`,
//!   `-Allow-Credentials` and `-Expose-Headers`.
//! - An origin that is not allowed gets no `Access-Control-*` field at all (the browser then
//!   refuses the response to the page); neither does a request without `Origin`, unless any
//!   origin is allowed (`*`).
//! - Whenever the answer depends on the request's `Origin` (anything but
//!   [`AllowOrigin::any`]), the response says so with `Vary: origin`, added to the `Vary`
//!   the response already has; a preflight's also names the request-method and
//!   request-headers fields.
//! - [`CorsLayer::new`] allows nothing; [`CorsLayer::permissive`] allows every origin,
//!   method and header (`*`). `allow_credentials(true)` with a `*` (origin, methods,
//!   headers or exposed headers) is a mistake browsers reject: the layer panics when it is
//!   put on a router, as tower-http does. Use [`AllowOrigin::mirror_request`] (and the
//!   mirrors of methods and headers) to allow any origin with credentials.
//! - Put it with [`Router::layer`](crate::Router::layer), not `route_layer`: a preflight to a
//!   route without an `OPTIONS` handler is answered by the route's fallback, which only
//!   `layer` wraps.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use fibra_http::http::header::{self, HeaderName, HeaderValue};
use fibra_http::http::{Method, StatusCode};
use fibra_http::{Request, Response};

use super::Layer;
use crate::endpoint::Endpoint;
use crate::response::IntoResponse;

/// A wildcard: any origin, method or header (sent as `*`).
#[derive(Debug, Clone, Copy)]
pub struct Any;

/// Whether an origin may be accepted by a predicate.
type OriginPredicate = Arc<dyn Fn(&HeaderValue, &Request) -> bool + Send + Sync>;

/// Which origins are allowed (`Access-Control-Allow-Origin`).
#[derive(Clone, Default)]
pub struct AllowOrigin(OriginKind);

#[derive(Clone, Default)]
enum OriginKind {
    #[default]
    None,
    Any,
    List(Vec<HeaderValue>),
    Predicate(OriginPredicate),
    Mirror,
}

impl AllowOrigin {
    /// Any origin: `*`.
    pub fn any() -> Self {
        AllowOrigin(OriginKind::Any)
    }
    /// Only `origin` (compared byte for byte: `https://app.example`, no trailing slash).
    pub fn exact(origin: HeaderValue) -> Self {
        AllowOrigin(OriginKind::List(vec![origin]))
    }
    /// The origins in `origins`.
    pub fn list(origins: impl IntoIterator<Item = HeaderValue>) -> Self {
        AllowOrigin(OriginKind::List(origins.into_iter().collect()))
    }
    /// The origins `f(origin, request)` accepts.
    pub fn predicate(f: impl Fn(&HeaderValue, &Request) -> bool + Send + Sync + 'static) -> Self {
        AllowOrigin(OriginKind::Predicate(Arc::new(f)))
    }
    /// Any origin, named back to it (not `*`): what allows any origin with credentials.
    pub fn mirror_request() -> Self {
        AllowOrigin(OriginKind::Mirror)
    }

    /// The `Access-Control-Allow-Origin` value for a request from `origin`, if allowed.
    fn value(&self, origin: Option<&HeaderValue>, req: &Request) -> Option<HeaderValue> {
        match (&self.0, origin) {
            (OriginKind::Any, _) => Some(HeaderValue::from_static("*")),
            (OriginKind::List(l), Some(o)) if l.contains(o) => Some(o.clone()),
            (OriginKind::Predicate(f), Some(o)) if f(o, req) => Some(o.clone()),
            (OriginKind::Mirror, Some(o)) => Some(o.clone()),
            _ => None,
        }
    }
}

impl fmt::Debug for AllowOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            OriginKind::None => f.write_str("AllowOrigin::None"),
            OriginKind::Any => f.write_str("AllowOrigin::Any"),
            OriginKind::List(l) => f.debug_tuple("AllowOrigin::List").field(l).finish(),
            OriginKind::Predicate(_) => f.write_str("AllowOrigin::Predicate"),
            OriginKind::Mirror => f.write_str("AllowOrigin::MirrorRequest"),
        }
    }
}

impl From<Any> for AllowOrigin {
    fn from(_: Any) -> Self {
        AllowOrigin::any()
    }
}
impl From<HeaderValue> for AllowOrigin {
    fn from(v: HeaderValue) -> Self {
        AllowOrigin::exact(v)
    }
}
impl<const N: usize> From<[HeaderValue; N]> for AllowOrigin {
    fn from(v: [HeaderValue; N]) -> Self {
        AllowOrigin::list(v)
    }
}
impl From<Vec<HeaderValue>> for AllowOrigin {
    fn from(v: Vec<HeaderValue>) -> Self {
        AllowOrigin::list(v)
    }
}

/// A list-valued field's setting: none, `*`, a fixed list, or the request's own value.
#[derive(Debug, Clone, Default)]
enum ListKind {
    #[default]
    None,
    Any,
    List(HeaderValue),
    /// The value of this request field, sent back.
    Mirror(HeaderName),
}

impl ListKind {
    fn value(&self, req: &Request) -> Option<HeaderValue> {
        match self {
            ListKind::None => None,
            ListKind::Any => Some(HeaderValue::from_static("*")),
            ListKind::List(v) => Some(v.clone()),
            ListKind::Mirror(name) => req.headers().get(name).cloned(),
        }
    }
    fn is_any(&self) -> bool {
        matches!(self, ListKind::Any)
    }
}

/// `items` as one comma-separated field value.
fn join<T: AsRef<str>>(items: impl IntoIterator<Item = T>) -> ListKind {
    let joined = items
        .into_iter()
        .map(|s| s.as_ref().to_owned())
        .collect::<Vec<_>>()
        .join(",");
    match HeaderValue::try_from(joined) {
        Ok(v) if !v.is_empty() => ListKind::List(v),
        _ => ListKind::None,
    }
}

/// Which methods a preflight allows (`Access-Control-Allow-Methods`).
#[derive(Debug, Clone, Default)]
pub struct AllowMethods(ListKind);

impl AllowMethods {
    /// Any method: `*`.
    pub fn any() -> Self {
        AllowMethods(ListKind::Any)
    }
    /// The methods in `methods`.
    pub fn list(methods: impl IntoIterator<Item = Method>) -> Self {
        AllowMethods(join(methods))
    }
    /// The method the preflight asks for, named back to it.
    pub fn mirror_request() -> Self {
        AllowMethods(ListKind::Mirror(header::ACCESS_CONTROL_REQUEST_METHOD))
    }
}

impl From<Any> for AllowMethods {
    fn from(_: Any) -> Self {
        AllowMethods::any()
    }
}
impl From<Method> for AllowMethods {
    fn from(m: Method) -> Self {
        AllowMethods::list([m])
    }
}
impl<const N: usize> From<[Method; N]> for AllowMethods {
    fn from(m: [Method; N]) -> Self {
        AllowMethods::list(m)
    }
}
impl From<Vec<Method>> for AllowMethods {
    fn from(m: Vec<Method>) -> Self {
        AllowMethods::list(m)
    }
}

/// Which request header fields a preflight allows (`Access-Control-Allow-Headers`).
#[derive(Debug, Clone, Default)]
pub struct AllowHeaders(ListKind);

impl AllowHeaders {
    /// Any field: `*`.
    pub fn any() -> Self {
        AllowHeaders(ListKind::Any)
    }
    /// The fields in `names`.
    pub fn list(names: impl IntoIterator<Item = HeaderName>) -> Self {
        AllowHeaders(join(names))
    }
    /// The fields the preflight asks for, named back to it.
    pub fn mirror_request() -> Self {
        AllowHeaders(ListKind::Mirror(header::ACCESS_CONTROL_REQUEST_HEADERS))
    }
}

impl From<Any> for AllowHeaders {
    fn from(_: Any) -> Self {
        AllowHeaders::any()
    }
}
impl From<HeaderName> for AllowHeaders {
    fn from(n: HeaderName) -> Self {
        AllowHeaders::list([n])
    }
}
impl<const N: usize> From<[HeaderName; N]> for AllowHeaders {
    fn from(n: [HeaderName; N]) -> Self {
        AllowHeaders::list(n)
    }
}
impl From<Vec<HeaderName>> for AllowHeaders {
    fn from(n: Vec<HeaderName>) -> Self {
        AllowHeaders::list(n)
    }
}

/// Which response header fields the page may read (`Access-Control-Expose-Headers`).
#[derive(Debug, Clone, Default)]
pub struct ExposeHeaders(ListKind);

impl ExposeHeaders {
    /// Any field: `*`.
    pub fn any() -> Self {
        ExposeHeaders(ListKind::Any)
    }
    /// The fields in `names`.
    pub fn list(names: impl IntoIterator<Item = HeaderName>) -> Self {
        ExposeHeaders(join(names))
    }
}

impl From<Any> for ExposeHeaders {
    fn from(_: Any) -> Self {
        ExposeHeaders::any()
    }
}
impl From<HeaderName> for ExposeHeaders {
    fn from(n: HeaderName) -> Self {
        ExposeHeaders::list([n])
    }
}
impl<const N: usize> From<[HeaderName; N]> for ExposeHeaders {
    fn from(n: [HeaderName; N]) -> Self {
        ExposeHeaders::list(n)
    }
}
impl From<Vec<HeaderName>> for ExposeHeaders {
    fn from(n: Vec<HeaderName>) -> Self {
        ExposeHeaders::list(n)
    }
}

/// The CORS layer: see the module docs. Built by chaining the setters below.
#[derive(Debug, Clone, Default)]
pub struct CorsLayer {
    origin: AllowOrigin,
    methods: AllowMethods,
    headers: AllowHeaders,
    expose: ExposeHeaders,
    credentials: bool,
    max_age: Option<Duration>,
}

impl CorsLayer {
    /// A layer that allows nothing until told: no origin, method or header.
    pub fn new() -> Self {
        CorsLayer::default()
    }
    /// Any origin, method and header allowed, every response header exposed (all `*`), no
    /// credentials.
    pub fn permissive() -> Self {
        CorsLayer::new()
            .allow_origin(Any)
            .allow_methods(Any)
            .allow_headers(Any)
            .expose_headers(Any)
    }
    /// The origins allowed: [`Any`], a `HeaderValue`, an array or `Vec` of them, or an
    /// [`AllowOrigin`] (a predicate, the request's own).
    pub fn allow_origin(mut self, origin: impl Into<AllowOrigin>) -> Self {
        self.origin = origin.into();
        self
    }
    /// The methods a preflight allows: [`Any`], a `Method`, an array or `Vec` of them, or
    /// [`AllowMethods::mirror_request`].
    pub fn allow_methods(mut self, methods: impl Into<AllowMethods>) -> Self {
        self.methods = methods.into();
        self
    }
    /// The request fields a preflight allows: [`Any`], a `HeaderName`, an array or `Vec` of
    /// them, or [`AllowHeaders::mirror_request`].
    pub fn allow_headers(mut self, headers: impl Into<AllowHeaders>) -> Self {
        self.headers = headers.into();
        self
    }
    /// The response fields the page may read beyond the safelisted ones.
    pub fn expose_headers(mut self, headers: impl Into<ExposeHeaders>) -> Self {
        self.expose = headers.into();
        self
    }
    /// Whether the page may send and read credentials (cookies, `Authorization`):
    /// `Access-Control-Allow-Credentials: true`. Default: no.
    pub fn allow_credentials(mut self, allow: bool) -> Self {
        self.credentials = allow;
        self
    }
    /// How long a browser may cache a preflight's answer (`Access-Control-Max-Age`).
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = Some(max_age);
        self
    }

    /// Panics on credentials with a wildcard (see the module docs).
    fn check(&self) {
        if !self.credentials {
            return;
        }
        let wildcard = [
            (
                matches!(self.origin.0, OriginKind::Any),
                "Access-Control-Allow-Origin",
            ),
            (self.methods.0.is_any(), "Access-Control-Allow-Methods"),
            (self.headers.0.is_any(), "Access-Control-Allow-Headers"),
            (self.expose.0.is_any(), "Access-Control-Expose-Headers"),
        ];
        for (is_any, field) in wildcard {
            assert!(
                !is_any,
                "Invalid CORS configuration: Cannot combine \
                 `Access-Control-Allow-Credentials: true` with `{field}: *`"
            );
        }
    }

    /// Whether the response varies with the request's `Origin`.
    fn varies(&self) -> bool {
        !matches!(self.origin.0, OriginKind::Any)
    }

    fn preflight(&self, req: &Request, origin: Option<HeaderValue>) -> Response {
        let mut res = StatusCode::NO_CONTENT.into_response();
        let h = res.headers_mut();
        h.append(
            header::VARY,
            HeaderValue::from_static(
                "origin, access-control-request-method, access-control-request-headers",
            ),
        );
        let Some(origin) = origin else {
            return res;
        };
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        if self.credentials {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        if let Some(v) = self.methods.0.value(req) {
            h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, v);
        }
        if let Some(v) = self.headers.0.value(req) {
            h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, v);
        }
        if let Some(age) = self.max_age {
            h.insert(header::ACCESS_CONTROL_MAX_AGE, age.as_secs().into());
        }
        res
    }

    fn actual(&self, res: &mut Response, origin: Option<HeaderValue>, expose: Option<HeaderValue>) {
        let varies = self.varies();
        if origin.is_none() && !varies {
            return;
        }
        let h = res.headers_mut();
        if varies {
            h.append(header::VARY, HeaderValue::from_static("origin"));
        }
        let Some(origin) = origin else {
            return;
        };
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        if self.credentials {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        if let Some(v) = expose {
            h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, v);
        }
    }
}

impl Layer for CorsLayer {
    /// Panics if credentials are allowed with a wildcard.
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S> {
        self.check();
        let cors = Arc::new(self.clone());
        Endpoint::new(move |req: Request, route, state| {
            let origin = req.headers().get(header::ORIGIN);
            let allowed = cors.origin.value(origin, &req);
            let is_preflight = req.method() == Method::OPTIONS
                && origin.is_some()
                && req
                    .headers()
                    .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
            if is_preflight {
                return cors.preflight(&req, allowed);
            }
            let expose = cors.expose.0.value(&req);
            let mut res = inner.call(req, route, state);
            cors.actual(&mut res, allowed, expose);
            res
        })
    }
}
