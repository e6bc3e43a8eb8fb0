//! [`Endpoint`]: a routed request's handler as the router stores it — a handler, a method
//! router or a mounted service, with the layers put around it.

use std::fmt;
use std::sync::Arc;

use fibra_http::{Request, Response, Service};

use crate::route_match::RouteMatch;

type Call<S> = dyn Fn(Request, &mut RouteMatch<'_>, &S) -> Response + Send + Sync;

/// A request's handler as the router keeps it: called with the request, the router's match
/// (which a layer may change, e.g. the body limit) and the router's state. Cheap to clone.
/// [`Layer`](crate::middleware::Layer)s turn one endpoint into another.
pub struct Endpoint<S>(Arc<Call<S>>);

impl<S> Endpoint<S> {
    /// An endpoint calling `f`.
    pub fn new(
        f: impl Fn(Request, &mut RouteMatch<'_>, &S) -> Response + Send + Sync + 'static,
    ) -> Self {
        Endpoint(Arc::new(f))
    }
    /// Answers `req`.
    #[inline]
    pub fn call(&self, req: Request, route: &mut RouteMatch<'_>, state: &S) -> Response {
        (self.0)(req, route, state)
    }

    /// An endpoint calling `service` (every method; the route and the state unused).
    pub(crate) fn of_service<T: Service + Send + Sync + 'static>(service: T) -> Self
    where
        S: 'static,
    {
        Endpoint::new(move |req, _, _| service.call(req))
    }

    /// This endpoint given `state`: one that needs a state of type `S2`, which it ignores
    /// (`Router::with_state`).
    pub(crate) fn with_state<S2>(self, state: &Arc<S>) -> Endpoint<S2>
    where
        S: Send + Sync + 'static,
    {
        let state = state.clone();
        Endpoint::new(move |req, route, _: &S2| self.call(req, route, &state))
    }
}

impl<S> Clone for Endpoint<S> {
    fn clone(&self) -> Self {
        Endpoint(self.0.clone())
    }
}

impl<S> fmt::Debug for Endpoint<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Endpoint")
    }
}
