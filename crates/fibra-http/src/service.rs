//! [`Service`]: what a [`Server`](crate::Server) serves — a request in, a response out, on the
//! request's fiber.
//!
//! Every `Fn(Request) -> Response` is a service (the blanket impl below), so a closure or a
//! function serves as before; an application framework's router, the file server and the
//! reverse proxy implement it for their own types, so any of them can be served, mounted or
//! wrapped the same way.
//!
//! ```
//! use fibra_http::{Request, Response, Server, Service};
//!
//! struct Hello;
//! impl Service for Hello {
//!     fn call(&self, _req: Request) -> Response {
//!         Response::new("hello".into())
//!     }
//! }
//!
//! let server = Server::bind("127.0.0.1:0").workers(1).serve(Hello).unwrap();
//! # server.shutdown(std::time::Duration::from_secs(1));
//! ```
//!
//! A closure given straight to [`Server::serve`](crate::Server::serve) needs its parameter's
//! type written (`|req: Request| …`) when its body calls a method on the request before
//! anything else says what the request is: Rust infers a closure's parameter types only from
//! an `Fn` bound on the parameter itself, not from a trait with a blanket impl. A closure that
//! hands the request on (`|req| app(req)`) needs nothing written.

use crate::request::Request;
use crate::response::Response;

/// Answers requests. See the module docs.
///
/// Called on the request's fiber, which may block (a database call, a file read, a sleep):
/// other requests go on meanwhile. A panic becomes a `500` for that request (or a reset
/// stream on HTTP/2) and leaves the server running.
pub trait Service {
    /// The response to `req`.
    fn call(&self, req: Request) -> Response;

    /// The largest request body this service accepts, when it knows: a server raises its
    /// [`Settings::max_body_bytes`](crate::Settings::max_body_bytes) to it, never lowers it
    /// (an application framework's router whose routes accept bigger bodies than the
    /// server's default). `None`, the default: the server's setting stands.
    fn max_body_bytes(&self) -> Option<u64> {
        None
    }
}

impl<F> Service for F
where
    F: Fn(Request) -> Response + ?Sized,
{
    #[inline(always)]
    fn call(&self, req: Request) -> Response {
        self(req)
    }
}
