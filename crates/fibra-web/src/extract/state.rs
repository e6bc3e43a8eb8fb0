//! [`State`]: the router's state ([`Router::with_state`](crate::Router::with_state)), or a
//! part of it ([`FromRef`]).

use super::{FromRequestParts, Parts};

/// The router's state, or a part of it: `State<T>` where `T: FromRef<S>` (every `Clone`
/// state is one of itself). Cloned per request, so keep shared data in an `Arc` (a pool, a
/// cache) as with axum.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use fibra_web::extract::State;
/// use fibra_web::routing::post;
/// use fibra_web::Router;
///
/// #[derive(Clone, Default)]
/// struct AppState { hits: Arc<AtomicU64> }
///
/// let app: Router = Router::new()
///     .route("/hit", post(|State(s): State<AppState>| s.hits.fetch_add(1, Ordering::Relaxed).to_string()))
///     .with_state(AppState::default());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct State<S>(pub S);

impl<S> std::ops::Deref for State<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.0
    }
}

/// How a part of the state is taken from the whole (as axum's `FromRef`).
pub trait FromRef<T> {
    /// The part of `input`.
    fn from_ref(input: &T) -> Self;
}

impl<T: Clone> FromRef<T> for T {
    fn from_ref(input: &T) -> Self {
        input.clone()
    }
}

impl<S, T: FromRef<S>> FromRequestParts<S> for State<T> {
    type Rejection = std::convert::Infallible;
    #[inline]
    fn from_request_parts(_parts: &mut Parts<'_>, state: &S) -> Result<Self, Self::Rejection> {
        Ok(State(T::from_ref(state)))
    }
}
