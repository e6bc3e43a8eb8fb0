//! The built-in middleware through the test client: request ids, CORS, compression, panics
//! caught inside the stack, authorization; and how `layer` and `route_layer` nest.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use fibra_web::extract::Path;
use fibra_web::http::header::{self, HeaderValue};
use fibra_web::http::{Method, StatusCode};
use fibra_web::middleware::auth::{AuthenticatedUser, RequireAuthorization};
use fibra_web::middleware::catch_panic::CatchPanicLayer;
use fibra_web::middleware::compression::CompressionLayer;
use fibra_web::middleware::cors::{AllowHeaders, AllowOrigin, Any, CorsLayer};
use fibra_web::middleware::request_id::{RequestId, RequestIdLayer};
use fibra_web::middleware::{from_fn, Next};
use fibra_web::response::Html;
use fibra_web::routing::{get, post};
use fibra_web::test::{TestClient, TestResponse};
use fibra_web::{Extension, Json, Request, Response, ResponseBody, Router};

const ORIGIN: &str = "https://app.example";

fn panic_message(f: impl FnOnce()) -> String {
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("panics");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Every `access-control-*` field of a response.
fn cors_fields(r: &TestResponse) -> Vec<String> {
    r.headers()
        .keys()
        .map(|k| k.as_str().to_owned())
        .filter(|k| k.starts_with("access-control-"))
        .collect()
}

// ---- request ids ----

fn echo_id(id: RequestId, req: Request) -> String {
    let header = req.headers()["x-request-id"].to_str().unwrap().to_owned();
    format!("{id} {header}")
}

fn id_app() -> Router {
    Router::new()
        .route("/id", get(echo_id).post(|Json(v): Json<u32>| v.to_string()))
        .layer(RequestIdLayer::new())
}

#[test]
fn request_id_keeps_a_usable_incoming_id() {
    let c = TestClient::new(id_app());
    let r = c.get("/id").header("x-request-id", "trace-42:a").send();
    assert_eq!(r.header("x-request-id"), Some("trace-42:a"));
    assert_eq!(r.text(), "trace-42:a trace-42:a");
}

#[test]
fn request_id_makes_unique_ids_and_replaces_unusable_ones() {
    let c = TestClient::new(id_app());
    let a = c.get("/id").send();
    let b = c.get("/id").send();
    let (ida, idb) = (
        a.header("x-request-id").unwrap(),
        b.header("x-request-id").unwrap(),
    );
    assert_ne!(ida, idb);
    // The handler's extractor saw the id the client got back, also in the request's header.
    assert_eq!(a.text(), format!("{ida} {ida}"));
    for id in [ida, idb] {
        // A 16-digit prefix, `-`, and at least 8 digits of count.
        assert!((25..=33).contains(&id.len()), "{id}");
        assert_eq!(id.as_bytes()[16], b'-', "{id}");
        assert!(
            id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'),
            "{id}"
        );
    }
    let long = "x".repeat(200);
    for bad in ["has space", long.as_str()] {
        let r = c.get("/id").header("x-request-id", bad).send();
        let id = r.header("x-request-id").unwrap();
        assert_ne!(id, bad);
        assert_eq!(r.text(), format!("{id} {id}"));
    }
}

#[test]
fn request_id_is_on_404_405_and_rejections() {
    let c = TestClient::new(id_app());
    let r = c.get("/nowhere").send();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.header("x-request-id").is_some());
    let r = c.delete("/id").header("x-request-id", "del-1").send();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.header("x-request-id"), Some("del-1"));
    let r = c.post("/id").body("7").send();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(r.header("x-request-id").is_some());
}

#[test]
fn request_id_leaves_a_handlers_own_header() {
    let app: Router = Router::new()
        .route("/", get(|| ([("x-request-id", "mine")], "x")))
        .layer(RequestIdLayer::new());
    let r = TestClient::new(app).get("/").send();
    assert_eq!(r.header("x-request-id"), Some("mine"));
}

// ---- CORS ----

fn cors_app(cors: CorsLayer, calls: Arc<AtomicUsize>) -> Router {
    let counted = move || {
        calls.fetch_add(1, Ordering::SeqCst);
        "data"
    };
    Router::new()
        .route("/api", get(counted.clone()).options(counted))
        .layer(cors)
}

fn strict_cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin([
            HeaderValue::from_static(ORIGIN),
            HeaderValue::from_static("https://other.example"),
        ])
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION])
        .expose_headers([header::ETAG])
        .allow_credentials(true)
        .max_age(Duration::from_secs(600))
}

#[test]
fn cors_preflight_is_answered_without_the_handler() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = TestClient::new(cors_app(strict_cors(), calls.clone()));
    let r = c
        .options("/api")
        .header("origin", ORIGIN)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(r.header("access-control-allow-origin"), Some(ORIGIN));
    assert_eq!(r.header("access-control-allow-methods"), Some("GET,POST"));
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("content-type,authorization")
    );
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    assert_eq!(r.header("access-control-max-age"), Some("600"));
    assert!(r.header("vary").unwrap().contains("origin"));
    assert_eq!(r.header("access-control-expose-headers"), None);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // A plain OPTIONS (no request method) is not a preflight: the handler answers.
    let r = c.options("/api").header("origin", ORIGIN).send();
    assert_eq!(r.text(), "data");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn cors_actual_request_gets_origin_vary_credentials_and_exposed() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = TestClient::new(cors_app(strict_cors(), calls));
    let r = c
        .get("/api")
        .header("origin", "https://other.example")
        .send();
    assert_eq!(r.text(), "data");
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://other.example")
    );
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    assert_eq!(r.header("access-control-expose-headers"), Some("etag"));
    assert_eq!(r.header("vary"), Some("origin"));
}

#[test]
fn cors_disallowed_origin_gets_no_cors_fields() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = TestClient::new(cors_app(strict_cors(), calls.clone()));
    let r = c
        .get("/api")
        .header("origin", "https://evil.example")
        .send();
    assert_eq!(r.text(), "data");
    assert!(cors_fields(&r).is_empty(), "{:?}", r.headers());
    assert_eq!(r.header("vary"), Some("origin"));
    let r = c
        .options("/api")
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "GET")
        .send();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert!(cors_fields(&r).is_empty(), "{:?}", r.headers());
    // No `Origin`: no CORS fields either.
    let r = c.get("/api").send();
    assert!(cors_fields(&r).is_empty(), "{:?}", r.headers());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn cors_any_origin_is_a_star_without_vary() {
    let c = TestClient::new(cors_app(
        CorsLayer::permissive(),
        Arc::new(AtomicUsize::new(0)),
    ));
    let r = c.get("/api").header("origin", ORIGIN).send();
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(r.header("access-control-expose-headers"), Some("*"));
    assert_eq!(r.header("vary"), None);
    let r = c
        .options("/api")
        .header("origin", ORIGIN)
        .header("access-control-request-method", "DELETE")
        .send();
    assert_eq!(r.header("access-control-allow-methods"), Some("*"));
    assert_eq!(r.header("access-control-allow-headers"), Some("*"));
}

#[test]
fn cors_predicate_and_mirrors() {
    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(|o, _req| {
            o.as_bytes().ends_with(b".example")
        }))
        .allow_methods(fibra_web::middleware::cors::AllowMethods::mirror_request())
        .allow_headers(AllowHeaders::mirror_request())
        .allow_credentials(true);
    let c = TestClient::new(cors_app(cors, Arc::new(AtomicUsize::new(0))));
    let r = c
        .options("/api")
        .header("origin", "https://x.example")
        .header("access-control-request-method", "PUT")
        .header("access-control-request-headers", "x-custom")
        .send();
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://x.example")
    );
    assert_eq!(r.header("access-control-allow-methods"), Some("PUT"));
    assert_eq!(r.header("access-control-allow-headers"), Some("x-custom"));
    let r = c.get("/api").header("origin", "https://x.other").send();
    assert!(cors_fields(&r).is_empty());
}

#[test]
fn cors_credentials_with_a_wildcard_panics_when_layered() {
    let msg = panic_message(|| {
        let _: Router = Router::new()
            .route("/", get(|| "x"))
            .layer(CorsLayer::new().allow_origin(Any).allow_credentials(true));
    });
    assert!(msg.contains("Access-Control-Allow-Origin: *"), "{msg}");
    let msg = panic_message(|| {
        let _: Router = Router::new().route("/", get(|| "x")).layer(
            CorsLayer::new()
                .allow_origin(AllowOrigin::mirror_request())
                .allow_headers(Any)
                .allow_credentials(true),
        );
    });
    assert!(msg.contains("Access-Control-Allow-Headers: *"), "{msg}");
}

// ---- compression ----

fn text_of(len: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < len {
        s.push_str(&format!("line {i} of a compressible page\n"));
        i += 1;
    }
    s.truncate(len);
    s
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn unbrotli(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(b, 4096)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn compress_app(layer: CompressionLayer) -> Router {
    let page = text_of(5000);
    let big = text_of(300_000);
    let small = text_of(500);
    let p = page.clone();
    Router::new()
        .route("/page", get(move || Html(p.clone())))
        .route("/big", get(move || big.clone()))
        .route("/small", get(move || small.clone()))
        .route(
            "/png",
            get(|| ([(header::CONTENT_TYPE, "image/png")], vec![7u8; 5000])),
        )
        .route(
            "/sse",
            get(|| ([(header::CONTENT_TYPE, "text/event-stream")], text_of(5000))),
        )
        .route(
            "/encoded",
            get(|| ([(header::CONTENT_ENCODING, "gzip")], text_of(5000))),
        )
        .route(
            "/varied",
            get(|| ([(header::VARY, "Accept-Encoding")], text_of(5000))),
        )
        .route(
            "/partial",
            get(|| (StatusCode::PARTIAL_CONTENT, text_of(5000))),
        )
        .route(
            "/tagged",
            get(|| {
                (
                    [
                        (header::ETAG, "\"v1\""),
                        (header::ACCEPT_RANGES, "bytes"),
                        (header::CONTENT_LENGTH, "5000"),
                    ],
                    text_of(5000),
                )
            }),
        )
        .route(
            "/stream",
            get(|| {
                let body = ResponseBody::stream(|w| w.write_all(text_of(5000).as_bytes()))
                    .with_content_type(HeaderValue::from_static("text/plain"));
                Response::new(body)
            }),
        )
        .layer(layer)
}

#[test]
fn compression_gzip_and_brotli_round_trip() {
    let c = TestClient::new(compress_app(CompressionLayer::new()));
    let page = text_of(5000);
    let r = c.get("/page").header("accept-encoding", "gzip").send();
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("vary"), Some("accept-encoding"));
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(r.bytes().len() < page.len());
    assert_eq!(gunzip(r.bytes()), page.as_bytes());
    let r = c.get("/page").header("accept-encoding", "br").send();
    assert_eq!(r.header("content-encoding"), Some("br"));
    assert_eq!(unbrotli(r.bytes()), page.as_bytes());
    // Past the offload size: compressed on the blocking pool, same bytes back.
    let r = c.get("/big").header("accept-encoding", "gzip").send();
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(gunzip(r.bytes()), text_of(300_000).as_bytes());
}

#[test]
fn compression_follows_q_values_and_prefers_br_on_ties() {
    let c = TestClient::new(compress_app(CompressionLayer::new()));
    let coding = |ae: &str| {
        let r = c.get("/page").header("accept-encoding", ae).send();
        r.header("content-encoding").map(str::to_owned)
    };
    assert_eq!(coding("gzip, deflate, br").as_deref(), Some("br"));
    assert_eq!(coding("br;q=0.5, gzip;q=0.9").as_deref(), Some("gzip"));
    assert_eq!(coding("br;q=0, *").as_deref(), Some("gzip"));
    assert_eq!(coding("identity").as_deref(), None);
    let c = TestClient::new(compress_app(CompressionLayer::new().no_br()));
    let r = c.get("/page").header("accept-encoding", "br, gzip").send();
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(gunzip(r.bytes()), text_of(5000).as_bytes());
}

#[test]
fn compression_adjusts_length_ranges_and_etag() {
    let c = TestClient::new(compress_app(CompressionLayer::new()));
    let r = c.get("/tagged").header("accept-encoding", "gzip").send();
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("etag"), Some("W/\"v1\""));
    assert_eq!(r.header("accept-ranges"), None);
    assert_eq!(r.header("content-length"), None);
    // A `Vary` naming the coding already is not given it twice.
    let r = c.get("/varied").header("accept-encoding", "gzip").send();
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let vary: Vec<_> = r.headers().get_all("vary").iter().collect();
    assert_eq!(vary, ["Accept-Encoding"]);
    // Not compressed: all three as they were.
    let r = c.get("/tagged").send();
    assert_eq!(r.header("etag"), Some("\"v1\""));
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    assert_eq!(r.header("vary"), Some("accept-encoding"));
}

#[test]
fn compression_leaves_alone_what_it_must() {
    let c = TestClient::new(compress_app(CompressionLayer::new()));
    let plain = |r: &TestResponse| r.header("content-encoding").is_none();
    let get = |path: &str| c.get(path).header("accept-encoding", "gzip, br").send();
    // Too small, not compressible, server-sent events, 206, streamed.
    for path in ["/small", "/png", "/sse", "/partial", "/stream"] {
        let r = get(path);
        assert!(plain(&r), "{path}: {:?}", r.headers());
        assert_eq!(r.header("vary"), None, "{path}");
    }
    assert_eq!(get("/stream").text(), text_of(5000));
    // Already encoded: untouched.
    let r = get("/encoded");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.text(), text_of(5000));
    // A range request and HEAD: identity (but the response still varies).
    let r = c
        .get("/page")
        .header("accept-encoding", "gzip")
        .header("range", "bytes=0-10")
        .send();
    assert!(plain(&r));
    assert_eq!(r.text(), text_of(5000));
    let r = c.head("/page").header("accept-encoding", "gzip").send();
    assert!(plain(&r));
    assert_eq!(r.header("vary"), Some("accept-encoding"));
    // No Accept-Encoding: identity, with Vary.
    let r = c.get("/page").send();
    assert!(plain(&r));
    assert_eq!(r.header("vary"), Some("accept-encoding"));
    // A lower minimum size makes the small body compressible.
    let c = TestClient::new(compress_app(CompressionLayer::new().min_size(100)));
    let r = c.get("/small").header("accept-encoding", "gzip").send();
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(gunzip(r.bytes()), text_of(500).as_bytes());
}

// ---- panics ----

/// Log records, kept for the panic test (one logger per test binary).
fn logged() -> &'static Mutex<Vec<String>> {
    struct Keep;
    static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());
    impl log::Log for Keep {
        fn enabled(&self, _: &log::Metadata<'_>) -> bool {
            true
        }
        fn log(&self, record: &log::Record<'_>) {
            if record.level() == log::Level::Error {
                LINES.lock().unwrap().push(record.args().to_string());
            }
        }
        fn flush(&self) {}
    }
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| {
        static KEEP: Keep = Keep;
        log::set_logger(&KEEP).expect("the only logger");
        log::set_max_level(log::LevelFilter::Error);
    });
    &LINES
}

fn boom(Path(id): Path<u32>) -> String {
    panic!("boom for user {id}")
}

#[test]
fn catch_panic_inside_request_id_and_cors_keeps_their_fields() {
    let lines = logged();
    let app: Router = Router::new()
        .route("/users/{id}", get(boom))
        .route("/ok", get(|| "fine"))
        .layer(CatchPanicLayer::new())
        .layer(RequestIdLayer::new())
        .layer(CorsLayer::new().allow_origin(HeaderValue::from_static(ORIGIN)));
    let c = TestClient::new(app);
    let r = c.get("/users/9").header("origin", ORIGIN).send();
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(r.text(), "Internal Server Error");
    assert!(r.header("x-request-id").is_some());
    assert_eq!(r.header("access-control-allow-origin"), Some(ORIGIN));
    let lines = lines.lock().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("GET /users/{id}") && l.contains("boom for user 9")),
        "{lines:?}"
    );
    drop(lines);
    assert_eq!(c.get("/ok").send().text(), "fine");
}

#[test]
fn without_catch_panic_the_client_reports_500_and_goes_on() {
    let app: Router = Router::new()
        .route("/users/{id}", get(boom))
        .route("/ok", get(|| "fine"))
        .layer(RequestIdLayer::new());
    let c = TestClient::new(app);
    let r = c.get("/users/1").send();
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    // The panic went past the request id layer: nothing added it.
    assert_eq!(r.header("x-request-id"), None);
    let r = c.get("/ok").send();
    assert_eq!((r.status(), r.text().as_str()), (StatusCode::OK, "fine"));
}

// ---- authorization ----

fn whoami(user: Option<Extension<AuthenticatedUser>>) -> String {
    match user {
        Some(Extension(AuthenticatedUser(name))) => format!("hello {name}"),
        None => "hello nobody".to_owned(),
    }
}

#[test]
fn basic_auth() {
    let app: Router = Router::new().route("/me", get(whoami)).route_layer(
        RequireAuthorization::basic(|u, p| u == "ada" && p == "pa:ss").realm("the \"app\""),
    );
    let c = TestClient::new(app);
    let challenge = r#"Basic realm="the \"app\"", charset="UTF-8""#;
    for auth in [
        None,
        Some("Basic YWRhOndyb25n"),  // ada:wrong
        Some("Basic !!!"),           // not base64
        Some("Bearer YWRhOnBhOnNz"), // other scheme
        Some("Basic YWRh"),          // no colon
    ] {
        let mut req = c.get("/me");
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let r = req.send();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{auth:?}");
        assert_eq!(r.header("www-authenticate"), Some(challenge), "{auth:?}");
        assert!(r.bytes().is_empty());
    }
    // ada:pa:ss, scheme in lower case.
    let r = c
        .get("/me")
        .header("authorization", "basic YWRhOnBhOnNz")
        .send();
    assert_eq!(
        (r.status(), r.text().as_str()),
        (StatusCode::OK, "hello ada")
    );
}

#[test]
fn bearer_auth() {
    let app: Router =
        Router::new()
            .route("/me", get(whoami))
            .route_layer(RequireAuthorization::bearer(|token| {
                (token == "t0k3n").then(|| "svc".to_owned())
            }));
    let c = TestClient::new(app);
    let r = c.get("/me").send();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        r.header("www-authenticate"),
        Some(r#"Bearer realm="restricted""#)
    );
    let r = c.get("/me").header("authorization", "Bearer nope").send();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        r.header("www-authenticate"),
        Some(r#"Bearer realm="restricted", error="invalid_token""#)
    );
    let r = c.get("/me").header("authorization", "Bearer t0k3n").send();
    assert_eq!(r.text(), "hello svc");
    // A bearer check answering `true` lets the request through without naming anyone.
    let app: Router = Router::new()
        .route("/me", get(whoami))
        .route_layer(RequireAuthorization::bearer(|t| t == "ok"));
    let r = TestClient::new(app)
        .get("/me")
        .header("authorization", "Bearer ok")
        .send();
    assert_eq!(r.text(), "hello nobody");
}

#[test]
fn custom_auth() {
    let app: Router =
        Router::new()
            .route("/me", get(whoami))
            .route_layer(RequireAuthorization::custom(|req| {
                match req.headers().get("x-api-key") {
                    Some(k) if k == "secret" => {
                        req.extensions_mut()
                            .insert(AuthenticatedUser("key holder".into()));
                        Ok(())
                    }
                    _ => Err((StatusCode::FORBIDDEN, "no key")),
                }
            }));
    let c = TestClient::new(app);
    let r = c.get("/me").send();
    assert_eq!(
        (r.status(), r.text().as_str()),
        (StatusCode::FORBIDDEN, "no key")
    );
    let r = c.get("/me").header("x-api-key", "secret").send();
    assert_eq!(r.text(), "hello key holder");
}

#[test]
fn auth_as_route_layer_keeps_405_and_404_as_layer_does_not() {
    let auth = || RequireAuthorization::basic(|_, _| false);
    let routes = || Router::new().route("/me", get(whoami));
    let c = TestClient::new(routes().route_layer(auth()));
    assert_eq!(
        c.post("/me").send().status(),
        StatusCode::METHOD_NOT_ALLOWED
    );
    assert_eq!(c.get("/nope").send().status(), StatusCode::NOT_FOUND);
    assert_eq!(c.get("/me").send().status(), StatusCode::UNAUTHORIZED);
    let c = TestClient::new(routes().layer(auth()));
    assert_eq!(c.post("/me").send().status(), StatusCode::UNAUTHORIZED);
    assert_eq!(c.get("/nope").send().status(), StatusCode::UNAUTHORIZED);
}

// ---- layer order ----

/// A layer adding `name` to the request's `x-trace` on the way in and to the response's
/// `x-order` on the way out.
fn tracer(name: &'static str) -> impl Fn(Request, Next<'_>) -> Response + Send + Sync {
    move |mut req: Request, next: Next<'_>| {
        let trace = match req.headers().get("x-trace") {
            Some(t) => format!("{},{name}", t.to_str().unwrap()),
            None => name.to_owned(),
        };
        req.headers_mut()
            .insert("x-trace", HeaderValue::try_from(trace).unwrap());
        let mut res = next.run(req);
        res.headers_mut()
            .append("x-order", HeaderValue::from_static(name));
        res
    }
}

fn trace(req: Request) -> String {
    req.headers()
        .get("x-trace")
        .map_or("", |v| v.to_str().unwrap())
        .to_owned()
}

#[test]
fn the_last_layer_added_is_the_outermost() {
    let app: Router = Router::new()
        .route("/", get(trace))
        .layer(from_fn(tracer("inner")))
        .layer(from_fn(tracer("outer")));
    let r = TestClient::new(app).get("/").send();
    assert_eq!(r.text(), "outer,inner");
    let order: Vec<_> = r.headers().get_all("x-order").iter().collect();
    assert_eq!(order, ["inner", "outer"]);
}

#[test]
fn layer_wraps_fallback_and_405_route_layer_does_not() {
    let app: Router = Router::new()
        .route("/r", post(trace))
        .route_layer(from_fn(tracer("route")))
        .layer(from_fn(tracer("all")));
    let c = TestClient::new(app);
    let r = c.post("/r").send();
    assert_eq!(r.text(), "all,route");
    for r in [c.get("/r").send(), c.get("/missing").send()] {
        assert!(matches!(r.status().as_u16(), 404 | 405));
        let order: Vec<_> = r.headers().get_all("x-order").iter().collect();
        assert_eq!(order, ["all"], "{}", r.status());
    }
}
