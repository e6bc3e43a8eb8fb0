//! [`MethodRouter`]: one route's handlers by method — [`get`], [`post`], … and [`any`] —
//! answering other methods with `405` and `Allow`, `HEAD` with the `GET` handler and
//! `OPTIONS` with `Allow` unless routed.

use std::fmt;
use std::sync::{Arc, Mutex};

use fibra_http::http::header::ALLOW;
use fibra_http::http::{HeaderValue, Method, StatusCode};
use fibra_http::{Request, Response};

use crate::endpoint::Endpoint;
use crate::extract::Parts;
use crate::handler::Handler;
use crate::layer::Layer;
use crate::response::IntoResponse;
use crate::route_match::RouteMatch;

/// The methods a method router routes by name, in the order `Allow` lists them.
const METHODS: [Method; 9] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::OPTIONS,
    Method::TRACE,
    Method::CONNECT,
];

/// One route's handlers, by method. Built with [`get`], [`post`], … and chained:
/// `get(show).put(update).delete(remove)`.
///
/// A method with no handler answers `405 Method Not Allowed` with `Allow` listing the routed
/// ones (`HEAD` comes with `GET`); `HEAD` without a handler of its own is answered by the `GET`
/// handler (the server leaves the body out); `OPTIONS` without one answers `204` with `Allow`.
/// [`any`] takes every method; [`MethodRouter::fallback`] replaces the `405`.
pub struct MethodRouter<S = ()> {
    /// Handlers for [`METHODS`], by index.
    by_method: [Option<Endpoint<S>>; 9],
    /// Every other method ([`any`], [`on`] with an unlisted method).
    other: Vec<(Method, Endpoint<S>)>,
    any: Option<Endpoint<S>>,
    /// What answers a method without a handler (the `405`, `OPTIONS` and a custom fallback),
    /// with the layers put around it.
    fallback: Endpoint<S>,
    /// The `Allow` value the default fallback answers with, updated as methods are added.
    allow: Arc<Mutex<HeaderValue>>,
}

fn method_index(m: &Method) -> Option<usize> {
    METHODS.iter().position(|x| x == m)
}

impl<S: 'static> MethodRouter<S> {
    /// A method router with no handler (every method answers `405`).
    pub fn new() -> Self {
        let allow = Arc::new(Mutex::new(HeaderValue::from_static("")));
        let a = allow.clone();
        let fallback = Endpoint::new(move |req: Request, _: &mut RouteMatch<'_>, _: &S| {
            let allow = a.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let status = if req.method() == Method::OPTIONS {
                StatusCode::NO_CONTENT
            } else {
                StatusCode::METHOD_NOT_ALLOWED
            };
            let mut res = status.into_response();
            res.headers_mut().insert(ALLOW, allow);
            res
        });
        MethodRouter {
            by_method: Default::default(),
            other: Vec::new(),
            any: None,
            fallback,
            allow,
        }
    }

    /// Routes `method` to `handler`. Panics if the method already has one.
    pub fn on<H: Handler<T, S>, T: 'static>(self, method: Method, handler: H) -> Self {
        self.on_endpoint(method, handler_endpoint(handler))
    }

    pub(crate) fn on_endpoint(mut self, method: Method, endpoint: Endpoint<S>) -> Self {
        match method_index(&method) {
            Some(i) => {
                assert!(
                    self.by_method[i].is_none(),
                    "Overlapping method route: a handler for `{method}` already exists"
                );
                self.by_method[i] = Some(endpoint);
            }
            None => {
                assert!(
                    self.other.iter().all(|(m, _)| *m != method),
                    "Overlapping method route: a handler for `{method}` already exists"
                );
                self.other.push((method, endpoint));
            }
        }
        self.update_allow();
        self
    }

    /// Routes every method to `endpoint` (those routed by name keep theirs). Panics if `any`
    /// is already set.
    pub fn any_endpoint(mut self, endpoint: Endpoint<S>) -> Self {
        assert!(
            self.any.is_none(),
            "Overlapping method route: `any` is already set"
        );
        self.any = Some(endpoint);
        self
    }

    fn update_allow(&self) {
        let mut names: Vec<&str> = Vec::new();
        for (i, m) in METHODS.iter().enumerate() {
            let routed =
                self.by_method[i].is_some() || (*m == Method::HEAD && self.by_method[0].is_some());
            if routed {
                names.push(m.as_str());
            }
        }
        names.extend(self.other.iter().map(|(m, _)| m.as_str()));
        let value = HeaderValue::from_str(&names.join(",")).expect("method names are tokens");
        *self.allow.lock().unwrap_or_else(|e| e.into_inner()) = value;
    }

    /// Answers methods without a handler with `handler` instead of `405`.
    pub fn fallback<H: Handler<T, S>, T: 'static>(mut self, handler: H) -> Self {
        self.fallback = handler_endpoint(handler);
        self
    }

    /// Puts `layer` around every handler and the fallback (so around the `405` too).
    pub fn layer<L: Layer>(self, layer: L) -> Self {
        self.apply(&layer, true)
    }

    /// Puts `layer` around every handler, not the fallback: a `405` stays a `405` (an
    /// authorization layer does not turn it into a `401`).
    pub fn route_layer<L: Layer>(self, layer: L) -> Self {
        self.apply(&layer, false)
    }

    /// Puts `layer` around the handlers, and around the fallback if `fallback_too`.
    pub(crate) fn apply<L: Layer>(mut self, layer: &L, fallback_too: bool) -> Self {
        if fallback_too {
            self.fallback = layer.layer(self.fallback);
        }
        for e in self.by_method.iter_mut().flatten() {
            *e = layer.layer(e.clone());
        }
        for (_, e) in &mut self.other {
            *e = layer.layer(e.clone());
        }
        if let Some(e) = &mut self.any {
            *e = layer.layer(e.clone());
        }
        self
    }

    /// Adds `other`'s handlers to these (a route given twice). Panics if both route a method.
    pub(crate) fn merge(mut self, other: MethodRouter<S>) -> Self {
        for (i, e) in other.by_method.into_iter().enumerate() {
            if let Some(e) = e {
                self = self.on_endpoint(METHODS[i].clone(), e);
            }
        }
        for (m, e) in other.other {
            self = self.on_endpoint(m, e);
        }
        if let Some(e) = other.any {
            self = self.any_endpoint(e);
        }
        self
    }

    /// The same handlers on state `S2`, given `state` (see `Router::with_state`).
    pub(crate) fn with_state<S2: 'static>(self, state: &Arc<S>) -> MethodRouter<S2>
    where
        S: Send + Sync,
    {
        let map = |e: Endpoint<S>| e.with_state(state);
        MethodRouter {
            by_method: self.by_method.map(|e| e.map(map)),
            other: self.other.into_iter().map(|(m, e)| (m, map(e))).collect(),
            any: self.any.map(map),
            fallback: map(self.fallback),
            allow: self.allow,
        }
    }

    /// Answers `req` with the handler for its method.
    #[inline]
    pub(crate) fn call(&self, req: Request, route: &mut RouteMatch<'_>, state: &S) -> Response {
        let m = req.method();
        let slot = if *m == Method::GET {
            &self.by_method[0]
        } else if *m == Method::POST {
            &self.by_method[2]
        } else if *m == Method::HEAD {
            match &self.by_method[1] {
                Some(_) => &self.by_method[1],
                None => &self.by_method[0],
            }
        } else {
            match method_index(m) {
                Some(i) => &self.by_method[i],
                None => match self.other.iter().find(|(x, _)| x == m) {
                    Some((_, e)) => return e.call(req, route, state),
                    None => &None,
                },
            }
        };
        match slot.as_ref().or(self.any.as_ref()) {
            Some(e) => e.call(req, route, state),
            None => self.fallback.call(req, route, state),
        }
    }
}

impl<S: 'static> Default for MethodRouter<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Clone for MethodRouter<S> {
    fn clone(&self) -> Self {
        MethodRouter {
            by_method: self.by_method.clone(),
            other: self.other.clone(),
            any: self.any.clone(),
            fallback: self.fallback.clone(),
            allow: self.allow.clone(),
        }
    }
}

impl<S> fmt::Debug for MethodRouter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let allow = self.allow.lock().unwrap_or_else(|e| e.into_inner()).clone();
        f.debug_struct("MethodRouter")
            .field("allow", &allow)
            .finish()
    }
}

/// `handler` as an endpoint.
pub(crate) fn handler_endpoint<H: Handler<T, S>, T: 'static, S: 'static>(
    handler: H,
) -> Endpoint<S> {
    Endpoint::new(move |req, route, state| handler.call(Parts::new(req, route), state))
}

macro_rules! method_fns {
    ($($(#[$doc:meta])* $name:ident => $method:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name<H: Handler<T, S>, T: 'static, S: 'static>(handler: H) -> MethodRouter<S> {
                MethodRouter::new().on(Method::$method, handler)
            }
        )*

        impl<S: 'static> MethodRouter<S> {
            $(
                $(#[$doc])*
                pub fn $name<H: Handler<T, S>, T: 'static>(self, handler: H) -> Self {
                    self.on(Method::$method, handler)
                }
            )*
        }
    };
}

method_fns! {
    /// Routes `GET` (and `HEAD`, unless routed) to `handler`.
    get => GET;
    /// Routes `HEAD` to `handler`.
    head => HEAD;
    /// Routes `POST` to `handler`.
    post => POST;
    /// Routes `PUT` to `handler`.
    put => PUT;
    /// Routes `PATCH` to `handler`.
    patch => PATCH;
    /// Routes `DELETE` to `handler`.
    delete => DELETE;
    /// Routes `OPTIONS` to `handler`.
    options => OPTIONS;
    /// Routes `TRACE` to `handler`.
    trace => TRACE;
    /// Routes `CONNECT` to `handler`.
    connect => CONNECT;
}

/// Routes every method to `handler`.
pub fn any<H: Handler<T, S>, T: 'static, S: 'static>(handler: H) -> MethodRouter<S> {
    MethodRouter::new().any_endpoint(handler_endpoint(handler))
}

/// Routes `method` to `handler` (a method without a function of its own here, e.g.
/// `PROPFIND`).
pub fn on<H: Handler<T, S>, T: 'static, S: 'static>(method: Method, handler: H) -> MethodRouter<S> {
    MethodRouter::new().on(method, handler)
}
