//! [`Layer`]: what wraps an endpoint in another — the seam every middleware, body limit and
//! prefix strip goes through.

use crate::endpoint::Endpoint;

/// What wraps an [`Endpoint`] in another: [`from_fn`](crate::middleware::from_fn)'s layers, the built-in middleware,
/// [`DefaultBodyLimit`](crate::extract::DefaultBodyLimit),
/// [`Extension`](crate::Extension). Applied once, when the router is built.
pub trait Layer {
    /// `inner` with this layer around it.
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S>;

    /// The body limit this layer sets, if it is a body limit (`Some(None)`: disabled); the
    /// router raises the server's limit to the largest.
    fn body_limit(&self) -> Option<Option<usize>> {
        None
    }
}
