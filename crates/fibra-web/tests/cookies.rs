//! Cookie jars: reading the `Cookie` fields (malformed ones too), the `Set-Cookie` delta (one
//! field per cookie, in process and on the wire), signed and private round trips, and forged
//! or tampered cookies, which the jars do not see.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use fibra_web::extract::cookie::{Cookie, CookieJar, Key, PrivateCookieJar, SignedCookieJar};
use fibra_web::extract::FromRef;
use fibra_web::http::header::{HeaderValue, SET_COOKIE};
use fibra_web::http::StatusCode;
use fibra_web::routing::get;
use fibra_web::test::{TestClient, TestResponse, TestServer};
use fibra_web::Router;

/// The `Set-Cookie` fields of `res`, in order.
fn set_cookies(res: &TestResponse) -> Vec<String> {
    res.headers()
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().expect("a text Set-Cookie").to_owned())
        .collect()
}

/// The `name=value` of a `Set-Cookie` field: what a client sends back.
fn pair(set_cookie: &str) -> &str {
    set_cookie.split(';').next().unwrap()
}

/// Every cookie of the jar, as `name=value` lines sorted by name.
fn list(jar: CookieJar) -> String {
    let mut pairs: Vec<String> = jar
        .iter()
        .map(|c| format!("{}={}", c.name(), c.value()))
        .collect();
    pairs.sort();
    pairs.join("\n")
}

fn plain_app() -> Router {
    Router::new()
        .route("/list", get(list))
        .route(
            "/theme",
            get(|jar: CookieJar| match jar.get("theme") {
                Some(c) => c.value().to_owned(),
                None => "none".to_owned(),
            }),
        )
        .route(
            "/set",
            get(|jar: CookieJar| jar.add(Cookie::build(("theme", "dark blue")).path("/"))),
        )
        .route(
            "/unset",
            get(|jar: CookieJar| jar.remove(Cookie::build("theme").path("/"))),
        )
        .route("/keep", get(|jar: CookieJar| (jar, "unchanged")))
        .route(
            "/two",
            get(|jar: CookieJar| {
                (
                    jar.add(Cookie::new("a", "1")).add(Cookie::new("b", "2")),
                    "two",
                )
            }),
        )
}

#[test]
fn reads_every_cookie_field() {
    let c = TestClient::new(plain_app());
    let r = c
        .get("/list")
        .header("cookie", "a=1; b=two%20words")
        .header("cookie", "c=3")
        .send();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.text(), "a=1\nb=two words\nc=3");
    assert_eq!(c.get("/theme").send().text(), "none");
    assert_eq!(
        c.get("/theme")
            .header("cookie", "theme=light")
            .send()
            .text(),
        "light"
    );
}

#[test]
fn add_sets_and_remove_expires() {
    let c = TestClient::new(plain_app());

    let r = c.get("/set").send();
    assert_eq!(r.text(), "");
    assert_eq!(set_cookies(&r), ["theme=dark%20blue; Path=/"]);

    let r = c.get("/unset").header("cookie", "theme=dark").send();
    let removal = set_cookies(&r);
    assert_eq!(removal.len(), 1, "{removal:?}");
    assert!(removal[0].starts_with("theme=; "), "{removal:?}");
    assert!(removal[0].contains("Path=/"), "{removal:?}");
    assert!(removal[0].contains("Max-Age=0"), "{removal:?}");
    assert!(removal[0].contains("Expires="), "{removal:?}");

    // Only the changes are sent: nothing for a jar returned as it came, nor for removing a
    // cookie the request did not carry.
    let r = c.get("/keep").header("cookie", "theme=dark").send();
    assert_eq!(r.text(), "unchanged");
    assert!(set_cookies(&r).is_empty());
    assert!(set_cookies(&c.get("/unset").send()).is_empty());
}

#[test]
fn two_cookies_are_two_set_cookie_fields() {
    let c = TestClient::new(plain_app());
    let r = c.get("/two").send();
    assert_eq!(r.text(), "two");
    let mut fields = set_cookies(&r);
    fields.sort();
    assert_eq!(fields, ["a=1", "b=2"]);
}

#[test]
fn two_cookies_are_two_set_cookie_lines_on_the_wire() {
    let server = TestServer::spawn(plain_app()).expect("serve");
    let mut s = TcpStream::connect(server.addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"GET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the response");
    let raw = String::from_utf8_lossy(&raw);
    let head = raw.split("\r\n\r\n").next().unwrap();
    let mut lines: Vec<String> = head
        .lines()
        .filter(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .map(|l| l.split_once(':').unwrap().1.trim().to_owned())
        .collect();
    lines.sort();
    assert_eq!(lines, ["a=1", "b=2"], "{raw}");
}

#[test]
fn a_malformed_cookie_header_does_not_fail_the_request() {
    let c = TestClient::new(plain_app());
    let r = c
        .get("/list")
        .header("cookie", "=nameless; novalue; ;; ok=1;x=%E2%28%A1")
        .header("cookie", HeaderValue::from_bytes(b"bin=\xff\xfe").unwrap())
        .send();
    assert_eq!(r.status(), StatusCode::OK);
    // The pairs that parse are kept; a value that is not UTF-8 once decoded, a field that is
    // not text, a pair without a name or a `=`, are skipped.
    assert_eq!(r.text(), "ok=1");
}

#[derive(Clone)]
struct AppState {
    key: Key,
    session_key: SessionKey,
}

impl FromRef<AppState> for Key {
    fn from_ref(state: &AppState) -> Key {
        state.key.clone()
    }
}

/// A key of its own for the private jar, as a library would keep one (`PrivateCookieJar<K>`).
#[derive(Clone)]
struct SessionKey(Key);

impl FromRef<AppState> for SessionKey {
    fn from_ref(state: &AppState) -> SessionKey {
        state.session_key.clone()
    }
}

impl From<SessionKey> for Key {
    fn from(k: SessionKey) -> Key {
        k.0
    }
}

fn secure_app() -> Router {
    Router::new()
        .route(
            "/signed/login",
            get(|jar: SignedCookieJar| (jar.add(Cookie::new("user", "alice")), "welcome")),
        )
        .route(
            "/signed/me",
            get(|jar: SignedCookieJar| match jar.get("user") {
                Some(c) => (StatusCode::OK, c.value().to_owned()),
                None => (
                    StatusCode::UNAUTHORIZED,
                    format!("{} cookies", jar.iter().count()),
                ),
            }),
        )
        .route(
            "/signed/logout",
            get(|jar: SignedCookieJar| jar.remove(Cookie::from("user"))),
        )
        .route(
            "/private/login",
            get(|jar: PrivateCookieJar<SessionKey>| {
                jar.add(Cookie::new("session", "token-0123456789"))
            }),
        )
        .route(
            "/private/me",
            get(
                |jar: PrivateCookieJar<SessionKey>| match jar.get("session") {
                    Some(c) => (StatusCode::OK, c.value().to_owned()),
                    None => (StatusCode::UNAUTHORIZED, "no session".to_owned()),
                },
            ),
        )
        .with_state(AppState {
            key: Key::generate(),
            session_key: SessionKey(Key::generate()),
        })
}

#[test]
fn a_signed_cookie_round_trips_and_a_tampered_one_is_ignored() {
    let c = TestClient::new(secure_app());
    let r = c.get("/signed/login").send();
    assert_eq!(r.text(), "welcome");
    let fields = set_cookies(&r);
    assert_eq!(fields.len(), 1, "{fields:?}");
    let sent = pair(&fields[0]).to_owned();
    // Signed, not hidden: the value is readable after its signature.
    assert!(
        sent.starts_with("user=") && sent.ends_with("alice"),
        "{sent}"
    );

    let r = c.get("/signed/me").header("cookie", &sent).send();
    assert_eq!((r.status(), r.text().as_str()), (StatusCode::OK, "alice"));

    let tampered = sent.replace("alice", "admin");
    let r = c.get("/signed/me").header("cookie", &tampered).send();
    assert_eq!(
        (r.status(), r.text().as_str()),
        (StatusCode::UNAUTHORIZED, "0 cookies")
    );
    // An unsigned cookie of the same name is not in the jar either.
    let r = c.get("/signed/me").header("cookie", "user=alice").send();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // Nor is one signed with another key (the private jar's).
    let private = set_cookies(&c.get("/private/login").send());
    let foreign = pair(&private[0]).replacen("session=", "user=", 1);
    let r = c.get("/signed/me").header("cookie", &foreign).send();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[test]
fn a_private_cookie_round_trips_without_showing_its_value() {
    let c = TestClient::new(secure_app());
    let fields = set_cookies(&c.get("/private/login").send());
    assert_eq!(fields.len(), 1, "{fields:?}");
    assert!(fields[0].starts_with("session="), "{fields:?}");
    assert!(!fields[0].contains("token"), "plaintext sent: {fields:?}");
    let sent = pair(&fields[0]).to_owned();

    let r = c.get("/private/me").header("cookie", &sent).send();
    assert_eq!(
        (r.status(), r.text().as_str()),
        (StatusCode::OK, "token-0123456789")
    );

    // One character of the ciphertext changed (in the middle of the base64, where every bit
    // is data): the cookie does not authenticate.
    let mut tampered = sent.into_bytes();
    let at = "session=".len() + 20;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let r = c.get("/private/me").header("cookie", &tampered).send();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = c
        .get("/private/me")
        .header("cookie", "session=token-0123456789")
        .send();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[test]
fn removing_a_signed_cookie_expires_it() {
    let c = TestClient::new(secure_app());
    let login = set_cookies(&c.get("/signed/login").send());
    let sent = pair(&login[0]).to_owned();

    let fields = set_cookies(&c.get("/signed/logout").header("cookie", &sent).send());
    assert_eq!(fields.len(), 1, "{fields:?}");
    assert!(fields[0].starts_with("user=; "), "{fields:?}");
    assert!(fields[0].contains("Max-Age=0"), "{fields:?}");

    // A forged cookie is not in the jar, so there is nothing to remove.
    let r = c
        .get("/signed/logout")
        .header("cookie", "user=alice")
        .send();
    assert!(set_cookies(&r).is_empty());
}
