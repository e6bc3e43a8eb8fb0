//! [`BasicAuth`]: HTTP Basic authentication (RFC 7617) against a list of users with bcrypt or
//! Argon2 password hashes, with the verified headers cached so that a logged-in client pays
//! for one bcrypt run, not one per request.
//!
//! The hot path — a header seen and verified before — hashes the `Authorization` value with a
//! keyed SipHash-2-4 (128 bits, a random key per [`BasicAuth`]) and finds the tag in a
//! lock-free table ([`CredentialCache`]). The password takes part in the tag, so a wrong
//! password never rides on a cached success. Everything else (parsing the header, looking up
//! the user, running the hash function on a helper thread) is the slow path.
//!
//! Refusals after a hash run are cached too, for [`REFUSED_FOR`], in a table of their own (so
//! that a flood of wrong passwords cannot push verified users out): a client that repeats the
//! same wrong header — a misconfigured script, a browser retrying — costs one hash run, not
//! one per request. A guesser that changes the password each time is not slowed by this;
//! a [`RateLimit`](super::RateLimit) on the route is the answer to that.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use fibra_http::{Response, ResponseBody};
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, StatusCode};
use siphasher::sip128::{Hash128, SipHasher24};

use super::credential_cache::CredentialCache;
use super::htpasswd::{self, HtpasswdError};
use super::stored_hash::StoredHash;

/// Verified headers kept per [`BasicAuth`].
pub const VERIFIED_ENTRIES: usize = 1024;
/// Refused headers kept per [`BasicAuth`].
pub const REFUSED_ENTRIES: usize = 256;
/// How long a refused header is answered 401 without running the hash function again.
pub const REFUSED_FOR: Duration = Duration::from_secs(60);
/// A longer `Authorization` value is refused unread (a real one is well under 1 KiB).
const MAX_HEADER_BYTES: usize = 4096;

/// Standard base64 that takes the value with or without its `=` padding.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A route's Basic authentication: a realm and its users. Shared by all worker threads
/// (`Sync`); a config reload builds a new one, which starts with empty caches.
///
/// ```
/// use fibra_site::access::BasicAuth;
/// use http::{header::AUTHORIZATION, HeaderMap, HeaderValue};
///
/// let hash = bcrypt::hash("opensesame", 4).unwrap();
/// let auth = BasicAuth::new("staff", vec![("ali".into(), hash)]).unwrap();
///
/// let mut headers = HeaderMap::new();
/// // base64("ali:opensesame")
/// headers.insert(AUTHORIZATION, HeaderValue::from_static("Basic YWxpOm9wZW5zZXNhbWU="));
/// assert!(auth.check(&headers).is_ok());
///
/// let refused = auth.check(&HeaderMap::new()).unwrap_err();
/// assert_eq!(refused.status(), 401);
/// assert_eq!(
///     refused.headers()["www-authenticate"],
///     r#"Basic realm="staff", charset="UTF-8""#
/// );
/// ```
pub struct BasicAuth {
    realm: String,
    /// `Basic realm="…", charset="UTF-8"`, built once.
    challenge: HeaderValue,
    users: HashMap<Vec<u8>, StoredHash>,
    /// The first user's hash, run for unknown users so that a refusal takes as long whether
    /// or not the user exists.
    decoy: StoredHash,
    /// Keyed with random bits, so tags cannot be predicted or aimed at one cache set.
    tagger: SipHasher24,
    verified: CredentialCache,
    refused: CredentialCache,
    /// The zero of the refused table's clock.
    born: Instant,
}

impl BasicAuth {
    /// Users as `(name, hash)` pairs, each hash a bcrypt (`$2a$`, `$2b$`, `$2y$`) or Argon2
    /// (`$argon2id$`, `$argon2i$`, `$argon2d$`) string. Fails, naming the user, on a name
    /// that is empty, holds `:` or is given twice, on a hash in another format, and on an
    /// empty list; and on a realm with control characters.
    pub fn new(realm: &str, users: Vec<(String, String)>) -> Result<BasicAuth, String> {
        let mut parsed = Vec::with_capacity(users.len());
        for (user, hash) in users {
            if user.is_empty() {
                return Err("a user with an empty name".into());
            }
            if user.contains(':') {
                return Err(format!("user {user:?}: a user name cannot hold `:`"));
            }
            let hash = StoredHash::parse(&hash).map_err(|e| format!("user {user:?}: {e}"))?;
            parsed.push((user, hash));
        }
        BasicAuth::build(realm, parsed)
    }

    /// The users of the htpasswd file at `path` (`user:hash` lines; see
    /// [`HtpasswdError`] for what is refused). Errors name the file and, for a bad line, the
    /// line and column.
    pub fn from_htpasswd(realm: &str, path: impl AsRef<Path>) -> Result<BasicAuth, HtpasswdError> {
        let path = path.as_ref();
        let users = htpasswd::read(path)?
            .into_iter()
            .map(|entry| (entry.user, entry.hash))
            .collect();
        BasicAuth::build(realm, users).map_err(|e| HtpasswdError::whole_file(path, e))
    }

    fn build(realm: &str, users: Vec<(String, StoredHash)>) -> Result<BasicAuth, String> {
        let challenge = challenge(realm)?;
        let decoy = match users.first() {
            Some((_, hash)) => hash.clone(),
            None => return Err("no users".into()),
        };
        let mut by_name = HashMap::with_capacity(users.len());
        for (user, hash) in users {
            if by_name.insert(user.clone().into_bytes(), hash).is_some() {
                return Err(format!("user {user:?} is given twice"));
            }
        }
        // std seeds each `RandomState` from the OS's random source; two of them, each hashing
        // once, give 128 key bits nobody outside this process knows.
        let key0 = RandomState::new().hash_one(1u64);
        let key1 = RandomState::new().hash_one(Instant::now());
        Ok(BasicAuth {
            realm: realm.to_string(),
            challenge,
            users: by_name,
            decoy,
            tagger: SipHasher24::new_with_keys(key0, key1),
            verified: CredentialCache::new(VERIFIED_ENTRIES),
            refused: CredentialCache::new(REFUSED_ENTRIES),
            born: Instant::now(),
        })
    }

    /// The realm named in the challenge.
    pub fn realm(&self) -> &str {
        &self.realm
    }

    /// Lets the request on when its `Authorization: Basic …` names a user and the right
    /// password; else the 401 of [`unauthorized`](Self::unauthorized).
    ///
    /// A header not seen before runs the user's hash function (tens of milliseconds for
    /// bcrypt at cost 10) through [`fibra::task::spawn_blocking`], so the worker's other
    /// fibers go on meanwhile; outside a fiber it runs on the calling thread.
    // The refusal is the response the route sends as it is; boxing it would only add an
    // allocation to every 401.
    #[allow(clippy::result_large_err)]
    #[inline]
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Response> {
        let Some(value) = headers.get(AUTHORIZATION) else {
            return Err(self.unauthorized());
        };
        let value = value.as_bytes();
        if value.len() > MAX_HEADER_BYTES {
            return Err(self.unauthorized());
        }
        let tag = self.tagger.hash(value);
        if self.verified.contains(tag, 0) {
            return Ok(());
        }
        self.verify(value, tag)
    }

    /// The slow path of [`check`](Self::check): a header not verified before.
    #[allow(clippy::result_large_err)]
    #[cold]
    fn verify(&self, value: &[u8], tag: Hash128) -> Result<(), Response> {
        if self.refused.contains(tag, self.clock()) {
            return Err(self.unauthorized());
        }
        let Some((user, password)) = parse_basic(value) else {
            return Err(self.unauthorized());
        };
        let (hash, known) = match self.users.get(user.as_slice()) {
            Some(hash) => (hash.clone(), true),
            None => (self.decoy.clone(), false),
        };
        let matched = fibra::task::spawn_blocking(move || hash.verify(&password));
        if matched && known {
            self.verified.insert(tag, 0, u64::MAX);
            return Ok(());
        }
        let now = self.clock();
        let until = now.saturating_add(REFUSED_FOR.as_nanos() as u64);
        self.refused.insert(tag, now, until);
        Err(self.unauthorized())
    }

    /// Nanoseconds since this `BasicAuth` was built.
    fn clock(&self) -> u64 {
        self.born.elapsed().as_nanos() as u64
    }

    /// `401 Unauthorized` with this realm's `WWW-Authenticate` challenge and a short text.
    pub fn unauthorized(&self) -> Response {
        let body = ResponseBody::from("401 Unauthorized: this needs a user name and password\n")
            .with_content_type(HeaderValue::from_static("text/plain; charset=utf-8"));
        let mut response = Response::new(body);
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        response
            .headers_mut()
            .insert(WWW_AUTHENTICATE, self.challenge.clone());
        response
    }
}

impl fmt::Debug for BasicAuth {
    /// The realm and the number of users; never the hashes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BasicAuth")
            .field("realm", &self.realm)
            .field("users", &self.users.len())
            .finish_non_exhaustive()
    }
}

/// `Basic realm="…", charset="UTF-8"`, with `"` and `\` escaped as RFC 9110 quoted-strings
/// need.
fn challenge(realm: &str) -> Result<HeaderValue, String> {
    if realm.chars().any(char::is_control) {
        return Err(format!("realm {realm:?}: holds a control character"));
    }
    let mut value = String::with_capacity(realm.len() + 32);
    value.push_str("Basic realm=\"");
    for c in realm.chars() {
        if c == '"' || c == '\\' {
            value.push('\\');
        }
        value.push(c);
    }
    value.push_str("\", charset=\"UTF-8\"");
    HeaderValue::from_bytes(value.as_bytes()).map_err(|e| format!("realm {realm:?}: {e}"))
}

/// The user and password of `Basic BASE64(user:password)`; the scheme's case does not
/// matter. `None` for anything else.
fn parse_basic(value: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let space = value.iter().position(|&b| b == b' ')?;
    let (scheme, rest) = value.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"basic") {
        return None;
    }
    let token = rest.trim_ascii();
    let mut decoded = BASE64.decode(token).ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    let password = decoded.split_off(colon + 1);
    decoded.truncate(colon);
    Some((decoded, password))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::stored_hash::tests::{argon2_hash, bcrypt_hash};

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    fn basic(user_pass: &str) -> HeaderMap {
        headers(&format!(
            "Basic {}",
            base64::prelude::BASE64_STANDARD.encode(user_pass)
        ))
    }

    fn auth() -> BasicAuth {
        BasicAuth::new(
            "Staff \"only\"",
            vec![
                ("ali".into(), bcrypt_hash("opensesame")),
                ("bea".into(), argon2_hash("hunter2")),
            ],
        )
        .unwrap()
    }

    fn assert_refused(r: Result<(), Response>) {
        let r = r.unwrap_err();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            r.headers()[WWW_AUTHENTICATE],
            r#"Basic realm="Staff \"only\"", charset="UTF-8""#
        );
        assert!(!r.body().as_bytes().unwrap().is_empty());
    }

    #[test]
    fn bcrypt_and_argon2_users_get_in() {
        let auth = auth();
        assert!(auth.check(&basic("ali:opensesame")).is_ok());
        assert!(auth.check(&basic("bea:hunter2")).is_ok());
    }

    #[test]
    fn wrong_passwords_and_unknown_users_are_refused() {
        let auth = auth();
        assert_refused(auth.check(&basic("ali:opensesamE")));
        assert_refused(auth.check(&basic("bea:hunter3")));
        assert_refused(auth.check(&basic("ali:hunter2")));
        assert_refused(auth.check(&basic("bea:opensesame")));
        // Unknown user, even with the decoy's password.
        assert_refused(auth.check(&basic("eve:opensesame")));
        assert_refused(auth.check(&basic("ali:")));
    }

    #[test]
    fn malformed_headers_are_refused() {
        let auth = auth();
        assert_refused(auth.check(&HeaderMap::new()));
        for bad in [
            "Basic",
            "Basic ",
            "Basic !!!notbase64",
            "Bearer YWxpOm9wZW5zZXNhbWU=",
            "Digest username=\"ali\"",
            // base64("ali opensesame"): no colon.
            "Basic YWxpIG9wZW5zZXNhbWU=",
        ] {
            assert_refused(auth.check(&headers(bad)));
        }
        let long = format!("Basic {}", "A".repeat(MAX_HEADER_BYTES));
        assert_refused(auth.check(&headers(&long)));
    }

    #[test]
    fn scheme_case_and_padding_do_not_matter() {
        let auth = auth();
        assert!(auth.check(&headers("basic YWxpOm9wZW5zZXNhbWU=")).is_ok());
        assert!(auth.check(&headers("BASIC   YWxpOm9wZW5zZXNhbWU")).is_ok());
    }

    #[test]
    fn a_cached_success_does_not_let_a_wrong_password_in() {
        let auth = auth();
        let good = basic("ali:opensesame");
        assert!(auth.check(&good).is_ok());
        let tag = auth.tagger.hash(good[AUTHORIZATION].as_bytes());
        assert!(auth.verified.contains(tag, 0));
        // A hit: the same answer, now from the table.
        assert!(auth.check(&good).is_ok());
        assert_refused(auth.check(&basic("ali:opensesam")));
        assert_refused(auth.check(&basic("ali:opensesame ")));
        assert!(auth.check(&good).is_ok());
    }

    #[test]
    fn the_cache_answers_without_the_hash_function() {
        let auth = auth();
        let good = basic("bea:hunter2");
        let tag = auth.tagger.hash(good[AUTHORIZATION].as_bytes());
        // Planted: proves a hit does not re-verify.
        let planted = basic("bea:not-the-password");
        let planted_tag = auth.tagger.hash(planted[AUTHORIZATION].as_bytes());
        auth.verified.insert(planted_tag, 0, u64::MAX);
        assert!(auth.check(&planted).is_ok());
        auth.verified.clear();
        assert_refused(auth.check(&planted));
        assert!(!auth.verified.contains(tag, 0));
    }

    #[test]
    fn refusals_are_cached_apart_and_never_as_success() {
        let auth = auth();
        let wrong = basic("ali:wrong");
        let tag = auth.tagger.hash(wrong[AUTHORIZATION].as_bytes());
        assert_refused(auth.check(&wrong));
        assert!(auth.refused.contains(tag, auth.clock()));
        assert!(!auth.verified.contains(tag, 0));
        assert_refused(auth.check(&wrong));
        // The right password is another header: not blocked by the refusal.
        assert!(auth.check(&basic("ali:opensesame")).is_ok());
    }

    #[test]
    fn a_new_basic_auth_starts_with_empty_caches_and_new_keys() {
        let a = auth();
        let b = auth();
        let good = basic("ali:opensesame");
        assert!(a.check(&good).is_ok());
        let value = good[AUTHORIZATION].as_bytes();
        assert!(!b.verified.contains(b.tagger.hash(value), 0));
        assert_ne!(a.tagger.hash(value), b.tagger.hash(value));
    }

    #[test]
    fn checks_from_a_fiber() {
        let auth = std::sync::Arc::new(auth());
        let ok = fibra::run(move || {
            auth.check(&basic("ali:opensesame")).is_ok() && auth.check(&basic("ali:nope")).is_err()
        });
        assert!(ok);
    }

    #[test]
    fn bad_users_and_realms_are_named() {
        let hash = bcrypt_hash("x");
        let e = BasicAuth::new("r", vec![]).unwrap_err();
        assert!(e.contains("no users"), "{e}");
        let e = BasicAuth::new("r", vec![(String::new(), hash.clone())]).unwrap_err();
        assert!(e.contains("empty name"), "{e}");
        let e = BasicAuth::new("r", vec![("a:b".into(), hash.clone())]).unwrap_err();
        assert!(e.contains("\"a:b\""), "{e}");
        let e = BasicAuth::new("r", vec![("joe".into(), "{SHA}abc=".into())]).unwrap_err();
        assert!(e.contains("\"joe\"") && e.contains("{SHA}"), "{e}");
        let twice = vec![("joe".into(), hash.clone()), ("joe".into(), hash.clone())];
        let e = BasicAuth::new("r", twice).unwrap_err();
        assert!(e.contains("twice"), "{e}");
        let e = BasicAuth::new("a\nb", vec![("joe".into(), hash)]).unwrap_err();
        assert!(e.contains("control"), "{e}");
    }

    #[test]
    fn loads_an_htpasswd_file() {
        let path = std::env::temp_dir().join(format!("fibra-basic-auth-{}", std::process::id()));
        std::fs::write(&path, format!("ali:{}\n", bcrypt_hash("opensesame"))).unwrap();
        let auth = BasicAuth::from_htpasswd("files", &path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(auth.realm(), "files");
        assert!(auth.check(&basic("ali:opensesame")).is_ok());
        assert_refused_realm(auth.check(&basic("ali:x")), "files");
        assert_eq!(
            format!("{auth:?}"),
            r#"BasicAuth { realm: "files", users: 1, .. }"#
        );
    }

    fn assert_refused_realm(r: Result<(), Response>, realm: &str) {
        let r = r.unwrap_err();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        let expected = format!("Basic realm=\"{realm}\", charset=\"UTF-8\"");
        assert_eq!(r.headers()[WWW_AUTHENTICATE], expected.as_str());
    }
}
