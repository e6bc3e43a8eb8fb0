//! [`PrivateCookieJar`]: cookies encrypted with the application's [`Key`] (AES-256-GCM), so
//! the client can neither read nor forge nor alter them.

use std::convert::Infallible;
use std::fmt;
use std::marker::PhantomData;

use cookie::PrivateJar;
use fibra_http::http::HeaderMap;
use fibra_http::Response;

use super::{cookies_from_request, set_cookies, Cookie, Key};
use crate::extract::{FromRef, FromRequestParts, Parts};
use crate::response::{IntoResponse, IntoResponseParts};

/// The request's cookies that decrypt (and authenticate) with the [`Key`] taken from the
/// router's state (`K: FromRef<S> + Into<Key>`; `K` lets a library keep a key of its own);
/// the others are not in the jar. Cookies added are encrypted (the value is sent as base64
/// of nonce, ciphertext and tag; the name stays readable and is authenticated with it). Used
/// as [`SignedCookieJar`](super::SignedCookieJar) is: see the [module docs](super).
pub struct PrivateCookieJar<K = Key> {
    jar: cookie::CookieJar,
    key: Key,
    _marker: PhantomData<K>,
}

impl<S, K> FromRequestParts<S> for PrivateCookieJar<K>
where
    K: FromRef<S> + Into<Key>,
{
    type Rejection = Infallible;
    fn from_request_parts(parts: &mut Parts<'_>, state: &S) -> Result<Self, Self::Rejection> {
        let key = K::from_ref(state).into();
        let PrivateCookieJar { jar, key, .. } =
            PrivateCookieJar::from_headers(parts.headers(), key);
        Ok(PrivateCookieJar {
            jar,
            key,
            _marker: PhantomData,
        })
    }
}

impl PrivateCookieJar {
    /// A jar of the cookies in `headers`' `Cookie` fields that decrypt with `key` (for a
    /// middleware, where there is no extractor).
    pub fn from_headers(headers: &HeaderMap, key: Key) -> Self {
        let mut jar = cookie::CookieJar::new();
        let mut private = jar.private_mut(&key);
        for cookie in cookies_from_request(headers) {
            if let Some(cookie) = private.decrypt(cookie) {
                private.add_original(cookie);
            }
        }
        PrivateCookieJar {
            jar,
            key,
            _marker: PhantomData,
        }
    }

    /// An empty jar encrypting with `key`.
    pub fn new(key: Key) -> Self {
        PrivateCookieJar {
            jar: cookie::CookieJar::default(),
            key,
            _marker: PhantomData,
        }
    }
}

impl<K> PrivateCookieJar<K> {
    /// The cookie named `name`, decrypted.
    pub fn get(&self, name: &str) -> Option<Cookie<'static>> {
        self.private().get(name)
    }

    /// The jar without `cookie` (found by name): if the request carried it, the response
    /// removes it from the client (an empty, expired cookie with `cookie`'s path and domain,
    /// which must be those it was set with).
    #[must_use]
    pub fn remove(mut self, cookie: impl Into<Cookie<'static>>) -> Self {
        self.private_mut().remove(cookie);
        self
    }

    /// The jar with `cookie`, encrypted (replacing one of the same name): the response sets
    /// it.
    #[must_use]
    #[allow(clippy::should_implement_trait)]
    pub fn add(mut self, cookie: impl Into<Cookie<'static>>) -> Self {
        self.private_mut().add(cookie);
        self
    }

    /// `cookie` with its plain value if it decrypts (and authenticates) with this jar's key.
    pub fn decrypt(&self, cookie: Cookie<'static>) -> Option<Cookie<'static>> {
        self.private().decrypt(cookie)
    }

    /// The cookies in the jar, decrypted.
    pub fn iter(&self) -> impl Iterator<Item = Cookie<'static>> + '_ {
        self.jar.iter().filter_map(|c| self.get(c.name()))
    }

    fn private(&self) -> PrivateJar<&cookie::CookieJar> {
        self.jar.private(&self.key)
    }

    fn private_mut(&mut self) -> PrivateJar<&mut cookie::CookieJar> {
        self.jar.private_mut(&self.key)
    }
}

impl<K> IntoResponseParts for PrivateCookieJar<K> {
    type Error = Infallible;
    fn into_response_parts(self, res: &mut Response) -> Result<(), Self::Error> {
        set_cookies(&self.jar, res.headers_mut());
        Ok(())
    }
}

impl<K> IntoResponse for PrivateCookieJar<K> {
    fn into_response(self) -> Response {
        (self, ()).into_response()
    }
}

impl<K> Clone for PrivateCookieJar<K> {
    fn clone(&self) -> Self {
        PrivateCookieJar {
            jar: self.jar.clone(),
            key: self.key.clone(),
            _marker: PhantomData,
        }
    }
}

impl<K> fmt::Debug for PrivateCookieJar<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateCookieJar")
            .field("jar", &self.jar)
            .field("key", &"REDACTED")
            .finish()
    }
}
