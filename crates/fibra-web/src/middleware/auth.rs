//! [`RequireAuthorization`]: a layer that lets a request through only with credentials its
//! check accepts — HTTP Basic, a Bearer token, or a check of your own — and answers `401`
//! otherwise. A verified user's name goes into the request's extensions as
//! [`AuthenticatedUser`], for handlers to take with `Extension<AuthenticatedUser>`.
//!
//! ```
//! use fibra_web::middleware::auth::{AuthenticatedUser, RequireAuthorization};
//! use fibra_web::routing::get;
//! use fibra_web::test::TestClient;
//! use fibra_web::{Extension, Router};
//!
//! fn whoami(Extension(AuthenticatedUser(name)): Extension<AuthenticatedUser>) -> String {
//!     format!("hello {name}")
//! }
//!
//! let app: Router = Router::new()
//!     .route("/me", get(whoami))
//!     // `route_layer`: a wrong method stays `405`, an unknown path `404`.
//!     .route_layer(RequireAuthorization::basic(|user, pass| {
//!         user == "ada" && pass == "lovelace"
//!     }));
//!
//! let client = TestClient::new(app);
//! let res = client.get("/me").send();
//! assert_eq!(res.status(), 401);
//! let challenge = r#"Basic realm="restricted", charset="UTF-8""#;
//! assert_eq!(res.header("www-authenticate"), Some(challenge));
//! // "ada:lovelace" in base64.
//! let res = client.get("/me").header("authorization", "Basic YWRhOmxvdmVsYWNl").send();
//! assert_eq!(res.text(), "hello ada");
//! ```
//!
//! The checks return a [`Verdict`]: `true`/`false`, or `Some(name)`/`None` to name the user
//! (a Basic check returning `true` names the user it was given; a Bearer check returning
//! `true` names nobody, so return `Some(name)` when handlers need one). They run on the
//! request's fiber and may block (a database lookup). Compare secrets in constant time in
//! them if timing matters to you; the layer only parses.
//!
//! Answers: a missing, malformed (not `Basic`/`Bearer`, bad base64, not UTF-8, no `:`) or
//! rejected credential gets `401` with an empty body and `WWW-Authenticate`: `Basic
//! realm="…", charset="UTF-8"` (RFC 7617), or `Bearer realm="…"`, with `error="invalid_token"`
//! when a token was given and refused (RFC 6750 §3.1). The realm is `restricted` unless
//! [`RequireAuthorization::realm`] says otherwise. Put the layer with `route_layer`: with
//! `layer` it also guards the `404`/`405` answers, turning them into `401`s.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use fibra_http::http::header::{self, HeaderValue};
use fibra_http::http::StatusCode;
use fibra_http::{Request, Response};

use super::Layer;
use crate::endpoint::Endpoint;
use crate::response::IntoResponse;

/// The name of the user a [`RequireAuthorization`] check accepted, in the request's
/// extensions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AuthenticatedUser(pub String);

/// What a credential check returns: see the module docs.
pub trait Verdict {
    /// `Err(())` when refused, else the user's name if known (`given`: the name the
    /// credentials carried, a Basic user's).
    #[allow(clippy::result_unit_err)]
    fn into_identity(self, given: Option<&str>) -> Result<Option<String>, ()>;
}

impl Verdict for bool {
    fn into_identity(self, given: Option<&str>) -> Result<Option<String>, ()> {
        if self {
            Ok(given.map(str::to_owned))
        } else {
            Err(())
        }
    }
}

impl Verdict for Option<String> {
    fn into_identity(self, _given: Option<&str>) -> Result<Option<String>, ()> {
        self.map(Some).ok_or(())
    }
}

/// A request's check, given the realm: `Some(answer)` refuses it.
type Check = Arc<dyn Fn(&mut Request, &str) -> Option<Response> + Send + Sync>;

/// The layer: see the module docs.
#[derive(Clone)]
pub struct RequireAuthorization {
    check: Check,
    realm: String,
}

impl fmt::Debug for RequireAuthorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequireAuthorization")
            .field("realm", &self.realm)
            .finish_non_exhaustive()
    }
}

/// `Authorization`'s credentials if its scheme is `scheme` (case-insensitively).
fn credentials<'r>(req: &'r Request, scheme: &str) -> Option<&'r str> {
    let v = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (s, rest) = v.split_once(' ')?;
    s.eq_ignore_ascii_case(scheme).then(|| rest.trim())
}

/// `realm` as a quoted string.
fn quoted(realm: &str) -> String {
    let mut q = String::with_capacity(realm.len() + 2);
    q.push('"');
    for c in realm.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

/// `401` with `WWW-Authenticate: challenge`.
fn unauthorized(challenge: String) -> Response {
    let mut res = StatusCode::UNAUTHORIZED.into_response();
    let value = HeaderValue::try_from(challenge)
        .unwrap_or_else(|_| HeaderValue::from_static("Basic realm=\"restricted\""));
    res.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    res
}

/// A Basic credential's user and password, if well formed.
fn decode_basic(encoded: &str) -> Option<(String, String)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, pass) = text.split_once(':')?;
    Some((user.to_owned(), pass.to_owned()))
}

impl RequireAuthorization {
    /// HTTP Basic: `verify(user, password)` decides.
    pub fn basic<V: Verdict>(verify: impl Fn(&str, &str) -> V + Send + Sync + 'static) -> Self {
        Self::with_check(move |req, realm| {
            let identity = credentials(req, "Basic")
                .and_then(decode_basic)
                .ok_or(())
                .and_then(|(user, pass)| verify(&user, &pass).into_identity(Some(&user)));
            match identity {
                Ok(name) => admit(req, name),
                Err(()) => Some(unauthorized(format!(
                    "Basic realm={}, charset=\"UTF-8\"",
                    quoted(realm)
                ))),
            }
        })
    }

    /// A Bearer token (RFC 6750): `verify(token)` decides.
    pub fn bearer<V: Verdict>(verify: impl Fn(&str) -> V + Send + Sync + 'static) -> Self {
        Self::with_check(move |req, realm| {
            let Some(token) = credentials(req, "Bearer").filter(|t| !t.is_empty()) else {
                return Some(unauthorized(format!("Bearer realm={}", quoted(realm))));
            };
            match verify(token).into_identity(None) {
                Ok(name) => admit(req, name),
                Err(()) => Some(unauthorized(format!(
                    "Bearer realm={}, error=\"invalid_token\"",
                    quoted(realm)
                ))),
            }
        })
    }

    /// A check of your own: `Ok(())` lets the request through (the check may put what it
    /// found into its extensions), `Err(e)` answers with `e` (a status, a tuple, any
    /// [`IntoResponse`]).
    pub fn custom<E: IntoResponse>(
        check: impl Fn(&mut Request) -> Result<(), E> + Send + Sync + 'static,
    ) -> Self {
        Self::with_check(move |req, _realm| check(req).err().map(E::into_response))
    }

    fn with_check(
        check: impl Fn(&mut Request, &str) -> Option<Response> + Send + Sync + 'static,
    ) -> Self {
        RequireAuthorization {
            check: Arc::new(check),
            realm: "restricted".to_owned(),
        }
    }

    /// The realm named in the challenge (default `restricted`).
    pub fn realm(mut self, realm: impl Into<String>) -> Self {
        self.realm = realm.into();
        self
    }
}

/// Lets `req` through as `name` (if known): no refusal.
fn admit(req: &mut Request, name: Option<String>) -> Option<Response> {
    if let Some(name) = name {
        req.extensions_mut().insert(AuthenticatedUser(name));
    }
    None
}

impl Layer for RequireAuthorization {
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S> {
        let check = self.check.clone();
        let realm: Arc<str> = Arc::from(self.realm.as_str());
        Endpoint::new(move |mut req, route, state| match check(&mut req, &realm) {
            None => inner.call(req, route, state),
            Some(refusal) => refusal,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_and_realms() {
        assert_eq!(
            decode_basic("YWRhOmxvdmVsYWNl"),
            Some(("ada".into(), "lovelace".into()))
        );
        // "ada:pass:with:colons"
        assert_eq!(
            decode_basic("YWRhOnBhc3M6d2l0aDpjb2xvbnM="),
            Some(("ada".into(), "pass:with:colons".into()))
        );
        assert_eq!(decode_basic("not base64!"), None);
        assert_eq!(decode_basic("YWRh"), None, "no colon");
        assert_eq!(quoted(r#"a "b" \c"#), r#""a \"b\" \\c""#);
    }
}
