//! [`CatchPanicLayer`]: a panic in the layers inside it or the handler becomes a `500`
//! response, logged with the route and the panic's message. Without it the server still
//! answers `500` (the connection loop catches the panic), but as the outermost thing: the
//! layers outside this one — CORS, request ids, compression — never see that answer. With
//! it, they add their fields to the `500` as to any other response.
//!
//! ```
//! use fibra_web::middleware::catch_panic::CatchPanicLayer;
//! use fibra_web::middleware::request_id::RequestIdLayer;
//! use fibra_web::routing::get;
//! use fibra_web::test::TestClient;
//! use fibra_web::Router;
//!
//! fn broken() -> &'static str {
//!     panic!("the database handle is gone")
//! }
//!
//! let app: Router = Router::new()
//!     .route("/broken", get(broken))
//!     .layer(CatchPanicLayer::new())
//!     .layer(RequestIdLayer::new());
//! let res = TestClient::new(app).get("/broken").send();
//! assert_eq!(res.status(), 500);
//! assert_eq!(res.text(), "Internal Server Error");
//! assert!(res.header("x-request-id").is_some());
//! ```
//!
//! The log record (`log::error!`, target `fibra_web::middleware::catch_panic`) reads
//! `panic in GET /users/{id}: <message>` (the route's pattern, or the path when no route
//! matched). The panic hook still runs as well (by default it prints to stderr). What a
//! streamed body's closure does runs after the response left the layer, so a panic there is
//! not caught here: the connection is closed.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use fibra_http::http::StatusCode;

use super::Layer;
use crate::endpoint::Endpoint;
use crate::response::IntoResponse;

/// The layer: see the module docs.
#[derive(Debug, Clone, Default)]
pub struct CatchPanicLayer {
    _private: (),
}

impl CatchPanicLayer {
    /// The layer, answering `500` with the body `Internal Server Error`.
    pub fn new() -> Self {
        CatchPanicLayer::default()
    }
}

/// The message a panic was given (`panic!("…")`), if it was text.
fn message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(a panic without a text message)"
    }
}

impl Layer for CatchPanicLayer {
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S> {
        Endpoint::new(move |req, route, state| {
            let method = req.method().clone();
            // A cheap clone (shared bytes): the path is named only when no route matched.
            let uri = req.uri().clone();
            match catch_unwind(AssertUnwindSafe(|| inner.call(req, route, state))) {
                Ok(res) => res,
                Err(payload) => {
                    let what = route.pattern().map_or(uri.path(), |p| &**p);
                    log::error!("panic in {method} {what}: {}", message(&*payload));
                    (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error").into_response()
                }
            }
        })
    }
}
