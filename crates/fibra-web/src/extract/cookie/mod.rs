//! Cookies, as axum-extra's `extract::cookie`: [`CookieJar`] (plain), [`SignedCookieJar`]
//! (signed: readable by the client, not forgeable) and [`PrivateCookieJar`] (encrypted:
//! neither readable nor forgeable), over the [`cookie`](https://docs.rs/cookie/0.18) crate,
//! whose [`Cookie`], [`Key`], [`SameSite`] and [`Expiration`] are re-exported here.
//!
//! A jar is an extractor: it holds the request's cookies (every `Cookie` field; pairs that
//! do not parse are skipped, never rejected). Its `add` and `remove` return the changed jar,
//! and a handler returns the jar (alone or in a response tuple) for the changes to reach the
//! client: only the changes are sent, one `Set-Cookie` field per cookie. A signed or private
//! jar takes its [`Key`] from the router's state through [`FromRef`](super::FromRef); a
//! cookie that fails verification (a forged, tampered or foreign one) is not in the jar.
//!
//! Logging in and out with a signed cookie:
//!
//! ```
//! use fibra_web::extract::cookie::{Cookie, Key, SameSite, SignedCookieJar};
//! use fibra_web::extract::FromRef;
//! use fibra_web::http::StatusCode;
//! use fibra_web::response::Redirect;
//! use fibra_web::routing::{get, post};
//! use fibra_web::{Form, Router};
//!
//! #[derive(Clone)]
//! struct AppState { key: Key }
//!
//! // What the signed jar signs and verifies with.
//! impl FromRef<AppState> for Key {
//!     fn from_ref(state: &AppState) -> Key {
//!         state.key.clone()
//!     }
//! }
//!
//! #[derive(serde::Deserialize)]
//! struct Login { user: String, password: String }
//!
//! fn login(jar: SignedCookieJar, Form(f): Form<Login>) -> Result<(SignedCookieJar, Redirect), StatusCode> {
//!     if f.password != "open sesame" {
//!         return Err(StatusCode::UNAUTHORIZED);
//!     }
//!     let cookie = Cookie::build(("user", f.user)).path("/").http_only(true).same_site(SameSite::Lax);
//!     Ok((jar.add(cookie), Redirect::to("/me")))
//! }
//!
//! fn me(jar: SignedCookieJar) -> Result<String, StatusCode> {
//!     let user = jar.get("user").ok_or(StatusCode::UNAUTHORIZED)?;
//!     Ok(format!("hello, {}", user.value()))
//! }
//!
//! fn logout(jar: SignedCookieJar) -> (SignedCookieJar, Redirect) {
//!     // The path (and domain) must be those the cookie was set with.
//!     (jar.remove(Cookie::build("user").path("/")), Redirect::to("/"))
//! }
//!
//! let app: Router = Router::new()
//!     .route("/login", post(login))
//!     .route("/me", get(me))
//!     .route("/logout", post(logout))
//!     .with_state(AppState { key: Key::generate() });
//! ```
//!
//! As with axum-extra, `remove` sends a removal cookie (empty, expired) only for a cookie the
//! request carried; removing one the jar never had sends nothing.

mod private;
mod signed;

pub use cookie::{Cookie, Expiration, Key, SameSite};
pub use private::PrivateCookieJar;
pub use signed::SignedCookieJar;

use std::convert::Infallible;

use fibra_http::http::header::{HeaderValue, COOKIE, SET_COOKIE};
use fibra_http::http::HeaderMap;
use fibra_http::Response;

use super::{FromRequestParts, Parts};
use crate::response::{IntoResponse, IntoResponseParts};

/// The request's cookies, as an extractor; returned from a handler, the cookies added to it
/// and removed from it, as `Set-Cookie` fields (see the [module docs](self)). Values are
/// percent-decoded on the way in and percent-encoded on the way out.
///
/// ```
/// use fibra_web::extract::cookie::{Cookie, CookieJar};
///
/// fn visit(jar: CookieJar) -> (CookieJar, String) {
///     let visits: u32 = jar.get("visits").and_then(|c| c.value().parse().ok()).unwrap_or(0);
///     (jar.add(Cookie::new("visits", (visits + 1).to_string())), format!("visit {}", visits + 1))
/// }
/// ```
#[derive(Debug, Default, Clone)]
pub struct CookieJar {
    jar: cookie::CookieJar,
}

impl<S> FromRequestParts<S> for CookieJar {
    type Rejection = Infallible;
    fn from_request_parts(parts: &mut Parts<'_>, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(CookieJar::from_headers(parts.headers()))
    }
}

impl CookieJar {
    /// A jar of the cookies in `headers`' `Cookie` fields (for a middleware, where there is
    /// no extractor).
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let mut jar = cookie::CookieJar::new();
        for cookie in cookies_from_request(headers) {
            jar.add_original(cookie);
        }
        CookieJar { jar }
    }

    /// An empty jar.
    pub fn new() -> Self {
        CookieJar::default()
    }

    /// The cookie named `name`: one the request carried, or one added since.
    pub fn get(&self, name: &str) -> Option<&Cookie<'static>> {
        self.jar.get(name)
    }

    /// The jar without `cookie` (found by name): if the request carried it, the response
    /// removes it from the client (an empty, expired cookie with `cookie`'s path and domain,
    /// which must be those it was set with).
    #[must_use]
    pub fn remove(mut self, cookie: impl Into<Cookie<'static>>) -> Self {
        self.jar.remove(cookie);
        self
    }

    /// The jar with `cookie` (replacing one of the same name): the response sets it.
    #[must_use]
    #[allow(clippy::should_implement_trait)]
    pub fn add(mut self, cookie: impl Into<Cookie<'static>>) -> Self {
        self.jar.add(cookie);
        self
    }

    /// The cookies in the jar: the request's and the added ones, less the removed ones.
    pub fn iter(&self) -> impl Iterator<Item = &Cookie<'static>> {
        self.jar.iter()
    }
}

impl IntoResponseParts for CookieJar {
    type Error = Infallible;
    fn into_response_parts(self, res: &mut Response) -> Result<(), Self::Error> {
        set_cookies(&self.jar, res.headers_mut());
        Ok(())
    }
}

impl IntoResponse for CookieJar {
    fn into_response(self) -> Response {
        (self, ()).into_response()
    }
}

/// The cookies of every `Cookie` field of `headers` (HTTP/2 may split one into several),
/// percent-decoded; a field that is not text, or a pair that does not parse, is skipped.
fn cookies_from_request(headers: &HeaderMap) -> impl Iterator<Item = Cookie<'static>> + '_ {
    headers
        .get_all(COOKIE)
        .into_iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| Cookie::parse_encoded(pair.to_owned()).ok())
}

/// Appends a `Set-Cookie` field for each cookie of `jar`'s delta (added or removed): one
/// field per cookie, as `Set-Cookie` cannot be folded into one.
fn set_cookies(jar: &cookie::CookieJar, headers: &mut HeaderMap) {
    for cookie in jar.delta() {
        match HeaderValue::from_str(&cookie.encoded().to_string()) {
            Ok(value) => {
                headers.append(SET_COOKIE, value);
            }
            Err(_) => log::warn!(
                "fibra-web: cookie {:?} is not a valid Set-Cookie value; not sent",
                cookie.name()
            ),
        }
    }
}
