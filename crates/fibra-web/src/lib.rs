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
