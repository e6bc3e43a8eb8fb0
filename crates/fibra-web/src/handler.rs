//! [`Handler`]: a plain `fn` or closure taking up to 16 extractors and returning anything
//! that is [`IntoResponse`], run on the request's fiber (it may block).
//!
//! Every argument but the last implements
//! [`crate::extract::FromRequestParts`] (reads the head); the last implements
//! [`crate::extract::FromRequest`] and may take the body. A handler
//! whose arguments do not fit (two bodies, a type that is no extractor) does not implement
//! `Handler`, and `get(handler)` does not compile:
//!
//! ```compile_fail
//! use fibra_web::routing::post;
//! use fibra_web::Router;
//!
//! fn two_bodies(a: String, b: String) -> String {
//!     a + &b
//! }
//! let app: Router = Router::new().route("/", post(two_bodies));
//! ```

use fibra_http::Response;

use crate::extract::{FromRequest, FromRequestParts, Parts};
use crate::response::IntoResponse;

/// A function that answers a request from extractors: see the module docs. `T` is the
/// argument list (with the last argument's marker), `S` the router's state.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler",
    note = "a handler takes up to 16 extractors — every argument but the last must implement \
            `FromRequestParts` (only the last may read the body: `String`, `Bytes`, `Json`, \
            `Form`, `Request`) — and returns `impl IntoResponse`"
)]
pub trait Handler<T, S>: Send + Sync + Sized + 'static {
    /// Extracts the arguments from `req`, calls the function and turns its value into a
    /// response; a rejected extractor answers instead.
    fn call(&self, req: Parts<'_>, state: &S) -> Response;
}

impl<F, R, S> Handler<((),), S> for F
where
    F: Fn() -> R + Send + Sync + 'static,
    R: IntoResponse,
{
    #[inline]
    fn call(&self, _req: Parts<'_>, _state: &S) -> Response {
        self().into_response()
    }
}

macro_rules! handler {
    ([$($ty:ident),*], $last:ident) => {
        #[allow(non_snake_case, unused_mut)]
        impl<F, R, S, M, $($ty,)* $last> Handler<(M, $($ty,)* $last,), S> for F
        where
            F: Fn($($ty,)* $last) -> R + Send + Sync + 'static,
            R: IntoResponse,
            $($ty: FromRequestParts<S>,)*
            $last: FromRequest<S, M>,
        {
            #[inline]
            fn call(&self, mut req: Parts<'_>, state: &S) -> Response {
                $(
                    let $ty = match $ty::from_request_parts(&mut req, state) {
                        Ok(v) => v,
                        Err(rejection) => return rejection.into_response(),
                    };
                )*
                let $last = match $last::from_request(req, state) {
                    Ok(v) => v,
                    Err(rejection) => return rejection.into_response(),
                };
                self($($ty,)* $last).into_response()
            }
        }
    };
}

handler!([], T1);
handler!([T1], T2);
handler!([T1, T2], T3);
handler!([T1, T2, T3], T4);
handler!([T1, T2, T3, T4], T5);
handler!([T1, T2, T3, T4, T5], T6);
handler!([T1, T2, T3, T4, T5, T6], T7);
handler!([T1, T2, T3, T4, T5, T6, T7], T8);
handler!([T1, T2, T3, T4, T5, T6, T7, T8], T9);
handler!([T1, T2, T3, T4, T5, T6, T7, T8, T9], T10);
handler!([T1, T2, T3, T4, T5, T6, T7, T8, T9, T10], T11);
handler!([T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11], T12);
handler!([T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12], T13);
handler!(
    [T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13],
    T14
);
handler!(
    [T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14],
    T15
);
handler!(
    [T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15],
    T16
);
