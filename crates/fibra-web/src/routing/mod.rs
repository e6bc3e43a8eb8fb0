//! The [`Router`]: paths (axum 0.8's syntax, matched by `matchit`: `/users/{id}`, a
//! catch-all `/{*rest}`) to [`MethodRouter`]s, nested routers, mounted services and a
//! fallback; a [`Service`] the server serves.
//!
//! ```
//! use fibra_web::extract::Path;
//! use fibra_web::routing::get;
//! use fibra_web::Router;
//!
//! fn show(Path(id): Path<u32>) -> String {
//!     format!("user {id}")
//! }
//! fn update(Path(id): Path<u32>, body: String) -> String {
//!     format!("user {id} is now {body}")
//! }
//!
//! let api = Router::new().route("/users/{id}", get(show).put(update));
//! let app: Router = Router::new()
//!     .route("/", get(|| "home"))
//!     .nest("/api", api)
//!     .fallback(|| (fibra_web::http::StatusCode::NOT_FOUND, "nothing here"));
//! ```
//!
//! Routes that could match the same path (`/{a}` and `/{b}`, a path given twice with the same
//! method) panic when added, naming both. A path matches exactly: `/users/` is not
//! `/users`. Parameters match the raw path; their values are percent-decoded when
//! extracted.

mod method_router;
mod static_paths;
mod strip_prefix;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use fibra_http::http::StatusCode;
use fibra_http::{Request, Response, Service};

pub use crate::endpoint::Endpoint;
pub use crate::route_match::{RouteMatch, DEFAULT_BODY_LIMIT};
pub use method_router::{
    any, connect, delete, get, head, on, options, patch, post, put, trace, MethodRouter,
};

use crate::handler::Handler;
use crate::layer::Layer;
use crate::response::IntoResponse;
use method_router::handler_endpoint;
use static_paths::StaticPaths;
use strip_prefix::StripPrefix;

/// The name of the catch-all parameter a nested router's fallback and a mounted service are
/// routed with.
const TAIL: &str = "__fibra_tail";

/// Routes requests by path and method to handlers: see the module docs. `S` is the state the
/// handlers still need ([`Router::with_state`] gives it); a `Router<()>` is a [`Service`].
pub struct Router<S = ()> {
    routes: Vec<RouteEntry<S>>,
    /// Where each path pattern is in `routes` (a path routed twice merges its methods).
    by_pattern: HashMap<Arc<str>, usize>,
    matcher: matchit::Router<usize>,
    /// The routes without parameters, tried first (see `static_paths`).
    statics: StaticPaths,
    fallback: Endpoint<S>,
    custom_fallback: bool,
    /// The largest body limit a `DefaultBodyLimit` layer set (`Some(None)`: one disabled it).
    body_limit: Option<Option<usize>>,
}

struct RouteEntry<S> {
    pattern: Arc<str>,
    /// Whether the entry is a nested router's fallback (no `MatchedPath`).
    is_fallback: bool,
    methods: MethodRouter<S>,
}

impl<S> Clone for RouteEntry<S> {
    fn clone(&self) -> Self {
        RouteEntry {
            pattern: self.pattern.clone(),
            is_fallback: self.is_fallback,
            methods: self.methods.clone(),
        }
    }
}

fn not_found<S: 'static>() -> Endpoint<S> {
    Endpoint::new(|_req, _route, _state| StatusCode::NOT_FOUND.into_response())
}

impl<S: Send + Sync + 'static> Router<S> {
    /// A router with no routes: every request gets `404`.
    pub fn new() -> Self {
        Router {
            routes: Vec::new(),
            by_pattern: HashMap::new(),
            matcher: matchit::Router::new(),
            statics: StaticPaths::default(),
            fallback: not_found(),
            custom_fallback: false,
            body_limit: None,
        }
    }

    /// Routes `path` to `methods` (`get(h)`, `get(h).post(g)`, …). Routing the same path again
    /// adds methods to it. Panics on a path that does not start with `/`, on one that
    /// conflicts with a route already added (naming both), and on a method routed twice.
    #[track_caller]
    pub fn route(self, path: &str, methods: MethodRouter<S>) -> Self {
        self.add(path, methods, false)
    }

    /// Routes every method of `path` to `service` (any [`Service`]: the file server, the
    /// proxy, another server's closure); the path is passed on as it is.
    #[track_caller]
    pub fn route_service<T: Service + Send + Sync + 'static>(self, path: &str, service: T) -> Self {
        let endpoint = Endpoint::of_service(service);
        self.add(path, MethodRouter::new().any_endpoint(endpoint), false)
    }

    #[track_caller]
    fn add(mut self, path: &str, methods: MethodRouter<S>, is_fallback: bool) -> Self {
        assert!(
            path.starts_with('/'),
            "Paths must start with a `/`: `{path}` does not"
        );
        if let Some(&i) = self.by_pattern.get(path) {
            if !is_fallback && !self.routes[i].is_fallback {
                let entry = &mut self.routes[i];
                entry.methods = std::mem::take(&mut entry.methods).merge(methods);
                return self;
            }
        }
        let index = self.routes.len();
        if let Err(e) = self.matcher.insert(path, index) {
            panic!("Invalid route `{path}`: {e}");
        }
        let pattern: Arc<str> = Arc::from(path);
        self.by_pattern.insert(pattern.clone(), index);
        self.statics.add(path, index);
        self.routes.push(RouteEntry {
            pattern,
            is_fallback,
            methods,
        });
        self
    }

    /// Routes `router`'s paths under `prefix` (`/api` + `/users/{id}`), with the prefix taken
    /// off the request's path before its handlers see it (as axum's `nest`): `/api` + `/`
    /// routes `/api` itself. Its layers stay on its routes; its fallback, if it has one,
    /// answers unmatched paths under the prefix. Panics if `prefix` does not start with `/`,
    /// ends with `/`, or has a catch-all.
    #[track_caller]
    pub fn nest(mut self, prefix: &str, router: Router<S>) -> Self {
        check_prefix(prefix);
        let strip = StripPrefix::new(prefix);
        for entry in router.routes {
            let path = if &*entry.pattern == "/" {
                prefix.to_owned()
            } else {
                format!("{prefix}{}", entry.pattern)
            };
            self = self.add(&path, entry.methods.apply(&strip, true), entry.is_fallback);
        }
        if router.custom_fallback {
            let fallback = MethodRouter::new().any_endpoint(strip.layer(router.fallback));
            let tail = format!("{prefix}/{{*{TAIL}}}");
            self = self.add(&tail, fallback, true);
        }
        self.body_limit = max_limit(self.body_limit, router.body_limit);
        self
    }

    /// Serves every path under `prefix` (and `prefix` itself) with `service`, which sees the
    /// path without the prefix (as axum's `nest_service`): a file server mounted at `/static`
    /// gets `/static/app.css` as `/app.css`. Any [`Service`]: the file server, the proxy.
    #[track_caller]
    pub fn mount<T: Service + Send + Sync + 'static>(mut self, prefix: &str, service: T) -> Self {
        let methods = MethodRouter::new().any_endpoint(Endpoint::of_service(service));
        if prefix == "/" {
            self = self.add("/", methods.clone(), false);
            return self.add(&format!("/{{*{TAIL}}}"), methods, false);
        }
        check_prefix(prefix);
        let methods = methods.apply(&StripPrefix::new(prefix), true);
        self = self.add(prefix, methods.clone(), false);
        self.add(&format!("{prefix}/{{*{TAIL}}}"), methods, false)
    }

    /// Adds `other`'s routes (and its fallback, if it has one). Panics on a route both have,
    /// and if both have a fallback.
    #[track_caller]
    pub fn merge(mut self, other: Router<S>) -> Self {
        for entry in other.routes {
            self = self.add(&entry.pattern, entry.methods, entry.is_fallback);
        }
        if other.custom_fallback {
            assert!(
                !self.custom_fallback,
                "Cannot merge two `Router`s that both have a fallback"
            );
            self.fallback = other.fallback;
            self.custom_fallback = true;
        }
        self.body_limit = max_limit(self.body_limit, other.body_limit);
        self
    }

    /// Answers requests no route matches with `handler` (instead of an empty `404`).
    pub fn fallback<H: Handler<T, S>, T: 'static>(mut self, handler: H) -> Self {
        self.fallback = handler_endpoint(handler);
        self.custom_fallback = true;
        self
    }

    /// Answers requests no route matches with `service`.
    pub fn fallback_service<T: Service + Send + Sync + 'static>(mut self, service: T) -> Self {
        self.fallback = Endpoint::of_service(service);
        self.custom_fallback = true;
        self
    }

    /// Puts `layer` around every route added so far — their handlers, their `405`s and
    /// `OPTIONS` answers, their extractors' rejections — and around the fallback (axum's
    /// `Router::layer`). Routes added later are not wrapped. Of several layers the last one
    /// added runs first (is the outermost).
    pub fn layer<L: Layer>(mut self, layer: L) -> Self {
        for entry in &mut self.routes {
            entry.methods = std::mem::take(&mut entry.methods).apply(&layer, true);
        }
        self.fallback = layer.layer(self.fallback);
        if let Some(limit) = layer.body_limit() {
            self.body_limit = max_limit(self.body_limit, Some(limit));
        }
        self
    }

    /// Puts `layer` around the handlers of every route added so far, not around the `405`s
    /// or the fallback: it runs only when a route matched (axum's `route_layer`).
    pub fn route_layer<L: Layer>(mut self, layer: L) -> Self {
        for entry in &mut self.routes {
            if !entry.is_fallback {
                entry.methods = std::mem::take(&mut entry.methods).apply(&layer, false);
            }
        }
        if let Some(limit) = layer.body_limit() {
            self.body_limit = max_limit(self.body_limit, Some(limit));
        }
        self
    }

    /// Gives the handlers their state: the result needs none, so it can be served (or nested
    /// in a router with another state).
    pub fn with_state<S2: Send + Sync + 'static>(self, state: S) -> Router<S2> {
        let state = Arc::new(state);
        let fallback = self.fallback.with_state(&state);
        Router {
            routes: self
                .routes
                .into_iter()
                .map(|e| RouteEntry {
                    pattern: e.pattern,
                    is_fallback: e.is_fallback,
                    methods: e.methods.with_state(&state),
                })
                .collect(),
            by_pattern: self.by_pattern,
            matcher: self.matcher,
            statics: self.statics,
            fallback,
            custom_fallback: self.custom_fallback,
            body_limit: self.body_limit,
        }
    }

    /// Answers `req` given the state.
    #[inline]
    pub(crate) fn call_with_state(&self, req: Request, state: &S) -> Response {
        let path = req.uri().path();
        // (A nested router's fallback is a catch-all pattern, never a static path.)
        if let Some(i) = self.statics.get(path) {
            let entry = &self.routes[i];
            let mut route = RouteMatch::without_params(&entry.pattern);
            return entry.methods.call(req, &mut route, state);
        }
        let found = self.matcher.at(path);
        match found {
            Ok(m) => {
                let entry = &self.routes[*m.value];
                let mut route = if entry.is_fallback {
                    RouteMatch::none()
                } else {
                    RouteMatch::new(&entry.pattern, m.params)
                };
                entry.methods.call(req, &mut route, state)
            }
            Err(_) => {
                let mut route = RouteMatch::none();
                self.fallback.call(req, &mut route, state)
            }
        }
    }

    /// The largest request body a route's extractors accept (see `DefaultBodyLimit`):
    /// `None` when no layer set one (the default, 2 MiB, applies), `Some(None)` when one
    /// disabled the limit.
    pub fn body_limit(&self) -> Option<Option<usize>> {
        self.body_limit
    }
}

#[track_caller]
fn check_prefix(prefix: &str) {
    assert!(
        prefix.starts_with('/'),
        "Nesting paths must start with a `/`: `{prefix}` does not"
    );
    assert!(
        prefix.len() > 1 && !prefix.ends_with('/'),
        "Nesting paths must not be `/` or end with a `/`: `{prefix}`"
    );
    assert!(
        !prefix.contains("{*"),
        "Nesting paths cannot have a catch-all: `{prefix}`"
    );
}

fn max_limit(a: Option<Option<usize>>, b: Option<Option<usize>>) -> Option<Option<usize>> {
    match (a, b) {
        (Some(None), _) | (_, Some(None)) => Some(None),
        (Some(Some(x)), Some(Some(y))) => Some(Some(x.max(y))),
        (x, None) => x,
        (None, y) => y,
    }
}

impl<S: Send + Sync + 'static> Default for Router<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Clone for Router<S> {
    fn clone(&self) -> Self {
        Router {
            routes: self.routes.clone(),
            by_pattern: self.by_pattern.clone(),
            matcher: self.matcher.clone(),
            statics: self.statics.clone(),
            fallback: self.fallback.clone(),
            custom_fallback: self.custom_fallback,
            body_limit: self.body_limit,
        }
    }
}

impl<S> fmt::Debug for Router<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field(
                "routes",
                &self.routes.iter().map(|e| &*e.pattern).collect::<Vec<_>>(),
            )
            .field("custom_fallback", &self.custom_fallback)
            .finish()
    }
}

impl Service for Router<()> {
    #[inline]
    fn call(&self, req: Request) -> Response {
        self.call_with_state(req, &())
    }

    fn max_body_bytes(&self) -> Option<u64> {
        match self.body_limit {
            None => None,
            Some(None) => Some(u64::MAX),
            Some(Some(n)) => Some(n as u64),
        }
    }
}
