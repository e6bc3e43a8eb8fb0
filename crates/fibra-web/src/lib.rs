//! An application framework on fibra fibers: a [`Router`], typed extractors, middleware and
//! a test client, with axum 0.8's names and behaviour — in plain blocking Rust. A handler runs
//! on its request's fiber and may block (a database call, a sleep, a file read): other
//! requests go on meanwhile.
//!
//! ```no_run
//! use fibra_web::extract::{Path, Query};
//! use fibra_web::routing::get;
//! use fibra_web::{Json, Router, Server};
//!
//! #[derive(serde::Deserialize)]
//! struct Fields { fields: Option<String> }
//!
//! fn user(Path(id): Path<u32>, Query(q): Query<Fields>) -> Json<serde_json::Value> {
//!     Json(serde_json::json!({ "id": id, "fields": q.fields }))
//! }
//!
//! let app = Router::new()
//!     .route("/plaintext", get(|| "Hello, World!"))
//!     .route("/users/{id}", get(user));
//! Server::bind("127.0.0.1:8080").workers(4).run(app)?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Guide
//!
//! **Routing.** [`Router::route`] maps a path (`/users/{id}`, a catch-all `/{*rest}`) to a
//! [`MethodRouter`](routing::MethodRouter) built with [`routing::get`], [`routing::post`], …;
//! [`Router::nest`] puts a router under a prefix (its handlers see the path without it),
//! [`Router::merge`] joins two, [`Router::mount`] serves a prefix with any [`Service`] (the
//! file server, the proxy), [`Router::fallback`] answers what matches nothing. A method with
//! no handler gets `405` with `Allow`; `HEAD` is answered by the `GET` handler without a body;
//! `OPTIONS` gets `204` with `Allow` unless routed. Two routes that could match the same path
//! panic when the router is built, naming both.
//!
//! **Handlers and extractors.** A handler is a plain `fn` or closure of up to 16
//! [extractors](extract) returning anything [`IntoResponse`](response::IntoResponse): path
//! parameters ([`Path`](extract::Path)), the query ([`Query`](extract::Query)), a JSON or
//! form body ([`Json`], [`Form`]), the state ([`State`](extract::State)), extensions,
//! headers, cookies, the peer's address. An extractor that fails answers for the handler
//! with axum's status and text (`400` naming a path parameter that does not parse, `415`,
//! `422` with serde's message, `413` over the body limit); take `Option<T>` or
//! `Result<T, T::Rejection>` to handle it yourself. Only the last argument may read the
//! body: a handler taking two bodies does not compile.
//!
//! **Blocking is fine.** A handler runs on its request's fiber: it may call the database
//! through `fibra-postgres`, sleep with `fibra::time::sleep`, read a file or wait on a
//! channel, and the worker serves other requests meanwhile. Long CPU work belongs on
//! `fibra::task::spawn_blocking`.
//!
//! **State.** [`Router::with_state`] gives handlers a value (`State<S>`, or a part of it
//! through [`FromRef`](extract::FromRef)); it is cloned per request, so keep shared data in
//! an `Arc` (a pool, a cache).
//!
//! **Middleware.** [`Router::layer`] puts a [`Layer`](middleware::Layer) around every route
//! so far and the fallback (405s and rejections included), [`Router::route_layer`] only
//! around matched routes' handlers; the last layer added runs first. A layer is a plain
//! function with [`middleware::from_fn`] (`Fn(Request, Next) -> impl IntoResponse`), or a
//! built-in one: request ids, CORS, compression, catch-panic, authorization (basic and
//! bearer), [`DefaultBodyLimit`](extract::DefaultBodyLimit) (2 MiB unless set; a router with
//! a larger limit raises the server's).
//!
//! **Testing.** [`test::TestClient`] sends requests to a router in process, on a one-worker
//! runtime, and gives the status, header fields and body back; [`test::TestServer`] serves
//! it on a loopback port for real clients.
//!
//! **Serving.** A `Router` (with its state given) is a [`Service`]: `Server::bind(addr)
//! .workers(n).serve(router)` serves it over HTTP/1.1 and HTTP/2, `Server::tls` over HTTPS,
//! `Server::with_acceptor` over a Unix socket — the engine's limits, timeouts, access log
//! and graceful shutdown apply unchanged.
//!
//! **Where it differs from axum.** Handlers and middleware are blocking functions, not
//! futures; layers are this crate's [`Layer`](middleware::Layer) (not tower's), applied when
//! the router is built; custom extractors read [`Parts`](extract::Parts), which dereferences
//! to the request (`parts.headers()` where axum has `parts.headers`); `OPTIONS` without a
//! handler answers `204` with `Allow` (axum answers `405`).
//!
//! Modules: [`routing`] (the router, method routers), [`handler`] (what a handler is),
//! [`extract`] (extractors and their rejections), [`response`] (what handlers return),
//! [`middleware`] (layers). The router is a [`Service`]: the same router serves HTTP/1.1,
//! HTTP/2, TLS and Unix sockets through fibra-http's [`Server`].

mod endpoint;
pub mod extract;
pub mod handler;
mod layer;
pub mod middleware;
pub mod response;
mod route_match;
pub mod routing;
pub mod test;

pub use extract::Json;
pub use extract::{Extension, Form};
pub use fibra_http::{http, Request, Response, ResponseBody, Server, Service};
pub use routing::Router;
