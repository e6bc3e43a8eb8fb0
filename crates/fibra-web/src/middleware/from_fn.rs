//! [`from_fn`] and [`from_fn_with_state`]: layers made of plain functions, and [`Next`], the
//! rest of the chain they call.

use std::fmt;
use std::sync::Arc;

use fibra_http::{Request, Response};

use super::Layer;
use crate::endpoint::Endpoint;
use crate::extract::State;
use crate::response::IntoResponse;

/// The rest of the chain: the inner layers and the handler. [`Next::run`] calls it; a
/// middleware that answers by itself drops it.
pub struct Next<'a> {
    inner: &'a mut dyn FnMut(Request) -> Response,
}

impl<'a> Next<'a> {
    /// A chain that goes on with `inner`.
    pub fn new(inner: &'a mut dyn FnMut(Request) -> Response) -> Self {
        Next { inner }
    }
    /// Runs the rest of the chain on `req`.
    #[inline]
    pub fn run(self, req: Request) -> Response {
        (self.inner)(req)
    }
}

impl fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Next")
    }
}

/// A layer made of `f`: see [`from_fn`].
pub struct FromFn<F>(Arc<F>);

impl<F> Clone for FromFn<F> {
    fn clone(&self) -> Self {
        FromFn(self.0.clone())
    }
}

impl<F> fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FromFn")
    }
}

/// A layer calling `f(req, next)` for each request: `f` may change the request, answer by
/// itself, or call `next.run(req)` and change the response.
pub fn from_fn<F, R>(f: F) -> FromFn<F>
where
    F: for<'a> Fn(Request, Next<'a>) -> R + Send + Sync + 'static,
    R: IntoResponse,
{
    FromFn(Arc::new(f))
}

impl<F, R> Layer for FromFn<F>
where
    F: for<'a> Fn(Request, Next<'a>) -> R + Send + Sync + 'static,
    R: IntoResponse,
{
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S> {
        let f = self.0.clone();
        Endpoint::new(move |req, route, state| {
            let mut rest = |req: Request| inner.call(req, route, state);
            f(req, Next::new(&mut rest)).into_response()
        })
    }
}

/// A layer made of `f` and a state: see [`from_fn_with_state`].
pub struct FromFnWithState<F, T> {
    f: Arc<F>,
    state: T,
}

impl<F, T: Clone> Clone for FromFnWithState<F, T> {
    fn clone(&self) -> Self {
        FromFnWithState {
            f: self.f.clone(),
            state: self.state.clone(),
        }
    }
}

impl<F, T> fmt::Debug for FromFnWithState<F, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FromFnWithState")
    }
}

/// As [`from_fn`], with a state given to `f` as its first argument (`State(s): State<T>`).
pub fn from_fn_with_state<F, T, R>(state: T, f: F) -> FromFnWithState<F, T>
where
    F: for<'a> Fn(State<T>, Request, Next<'a>) -> R + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
    R: IntoResponse,
{
    FromFnWithState {
        f: Arc::new(f),
        state,
    }
}

impl<F, T, R> Layer for FromFnWithState<F, T>
where
    F: for<'a> Fn(State<T>, Request, Next<'a>) -> R + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
    R: IntoResponse,
{
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S> {
        let f = self.f.clone();
        let state = self.state.clone();
        Endpoint::new(move |req, route, s| {
            let mut rest = |req: Request| inner.call(req, route, s);
            f(State(state.clone()), req, Next::new(&mut rest)).into_response()
        })
    }
}
