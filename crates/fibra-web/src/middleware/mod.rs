//! Middleware: code around handlers. [`from_fn`] makes a layer of a plain function
//! `Fn(Request, Next) -> impl IntoResponse` that calls `next.run(req)` to go on (or answers
//! itself); [`Router::layer`](crate::Router::layer) puts a layer around every route so far
//! and the fallback (405s and rejections included), and
//! [`Router::route_layer`](crate::Router::route_layer) only around matched routes' handlers.
//! Of several layers, the last one added is the outermost: it sees the request first and the
//! response last.
//!
//! Built in, one module each (tower-http's names): [`request_id`] ([`RequestIdLayer`]),
//! [`cors`] ([`CorsLayer`]), [`compression`] ([`CompressionLayer`]), [`catch_panic`]
//! ([`CatchPanicLayer`]) and [`auth`] ([`RequireAuthorization`]). A usual stack, innermost
//! first: `.layer(CatchPanicLayer::new()).layer(CompressionLayer::new())
//! .layer(RequestIdLayer::new()).layer(cors)` — the panic's `500` then carries the request id
//! and the CORS fields, and a CORS preflight is answered before anything else runs.
//!
//! ```
//! use fibra_web::middleware::{from_fn, Next};
//! use fibra_web::routing::get;
//! use fibra_web::{Request, Response, Router};
//!
//! fn server_timing(req: Request, next: Next) -> Response {
//!     let started = std::time::Instant::now();
//!     let mut res = next.run(req);
//!     let ms = started.elapsed().as_secs_f64() * 1000.0;
//!     res.headers_mut().insert("server-timing", format!("app;dur={ms:.3}").parse().unwrap());
//!     res
//! }
//!
//! let app: Router = Router::new().route("/", get(|| "hi")).layer(from_fn(server_timing));
//! ```

pub mod auth;
pub mod catch_panic;
pub mod compression;
pub mod cors;
mod from_fn;
pub mod request_id;

pub use auth::{AuthenticatedUser, RequireAuthorization};
pub use catch_panic::CatchPanicLayer;
pub use compression::CompressionLayer;
pub use cors::CorsLayer;
pub use from_fn::{from_fn, from_fn_with_state, FromFn, FromFnWithState, Next};
pub use request_id::{RequestId, RequestIdLayer};

pub use crate::layer::Layer;
