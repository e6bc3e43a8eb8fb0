//! [`SignedCookieJar`]: cookies signed with the application's [`Key`] (HMAC-SHA256), so the
//! client can read them but not forge or alter them.

use std::convert::Infallible;
use std::fmt;
use std::marker::PhantomData;

use cookie::SignedJar;
use fibra_http::http::HeaderMap;
use fibra_http::Response;

use super::{cookies_from_request, set_cookies, Cookie, Key};
use crate::extract::{FromRef, FromRequestParts, Parts};
use crate::response::{IntoResponse, IntoResponseParts};

/// The request's cookies whose signature verifies with the [`Key`] taken from the router's
/// state (`K: FromRef<S> + Into<Key>`; `K` lets a library keep a key of its own); the others
/// are not in the jar. Cookies added are signed (the value is sent readable, prefixed with
/// its signature); see the [module docs](super) for an example.
pub struct SignedCookieJar<K = Key> {
    jar: cookie::CookieJar,
    key: Key,
    _marker: PhantomData<K>,
}

impl<S, K> FromRequestParts<S> for SignedCookieJar<K>
where
    K: FromRef<S> + Into<Key>,
{
    type Rejection = Infallible;
    fn from_request_parts(parts: &mut Parts<'_>, state: &S) -> Result<Self, Self::Rejection> {
        let key = K::from_ref(state).into();
        let SignedCookieJar { jar, key, .. } = SignedCookieJar::from_headers(parts.headers(), key);
        Ok(SignedCookieJar {
            jar,
            key,
            _marker: PhantomData,
        })
    }
}

impl SignedCookieJar {
    /// A jar of the cookies in `headers`' `Cookie` fields that verify with `key` (for a
    /// middleware, where there is no extractor).
    pub fn from_headers(headers: &HeaderMap, key: Key) -> Self {
        let mut jar = cookie::CookieJar::new();
        let mut signed = jar.signed_mut(&key);
        for cookie in cookies_from_request(headers) {
            if let Some(cookie) = signed.verify(cookie) {
                signed.add_original(cookie);
            }
        }
        SignedCookieJar {
            jar,
            key,
            _marker: PhantomData,
        }
    }

    /// An empty jar signing with `key`.
    pub fn new(key: Key) -> Self {
        SignedCookieJar {
            jar: cookie::CookieJar::default(),
            key,
            _marker: PhantomData,
        }
    }
}

impl<K> SignedCookieJar<K> {
    /// The cookie named `name`, verified, with its plain value.
    pub fn get(&self, name: &str) -> Option<Cookie<'static>> {
        self.signed().get(name)
    }

    /// The jar without `cookie` (found by name): if the request carried it, the response
    /// removes it from the client (an empty, expired cookie with `cookie`'s path and domain,
    /// which must be those it was set with).
    #[must_use]
    pub fn remove(mut self, cookie: impl Into<Cookie<'static>>) -> Self {
        self.signed_mut().remove(cookie);
        self
    }

    /// The jar with `cookie`, signed (replacing one of the same name): the response sets it.
    #[must_use]
    #[allow(clippy::should_implement_trait)]
    pub fn add(mut self, cookie: impl Into<Cookie<'static>>) -> Self {
        self.signed_mut().add(cookie);
        self
    }

    /// `cookie` with its plain value if its signature verifies with this jar's key.
    pub fn verify(&self, cookie: Cookie<'static>) -> Option<Cookie<'static>> {
        self.signed().verify(cookie)
    }

    /// The cookies in the jar that verify, with their plain values.
    pub fn iter(&self) -> impl Iterator<Item = Cookie<'static>> + '_ {
        self.jar.iter().filter_map(|c| self.get(c.name()))
    }

    fn signed(&self) -> SignedJar<&cookie::CookieJar> {
        self.jar.signed(&self.key)
    }

    fn signed_mut(&mut self) -> SignedJar<&mut cookie::CookieJar> {
        self.jar.signed_mut(&self.key)
    }
}

impl<K> IntoResponseParts for SignedCookieJar<K> {
    type Error = Infallible;
    fn into_response_parts(self, res: &mut Response) -> Result<(), Self::Error> {
        set_cookies(&self.jar, res.headers_mut());
        Ok(())
    }
}

impl<K> IntoResponse for SignedCookieJar<K> {
    fn into_response(self) -> Response {
        (self, ()).into_response()
    }
}

impl<K> Clone for SignedCookieJar<K> {
    fn clone(&self) -> Self {
        SignedCookieJar {
            jar: self.jar.clone(),
            key: self.key.clone(),
            _marker: PhantomData,
        }
    }
}

impl<K> fmt::Debug for SignedCookieJar<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignedCookieJar")
            .field("jar", &self.jar)
            .field("key", &"REDACTED")
            .finish()
    }
}
