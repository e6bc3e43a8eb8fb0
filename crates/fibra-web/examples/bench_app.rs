//! The benchmark app of `bench/web.sh`: one binary, three apps, chosen with `--mode`.
//!
//! - `match`: `GET /plaintext` and `GET /json` in a hand-written `match` on the path, as
//!   `fibra hello`'s handler (the baseline of the router's overhead);
//! - `router`: the same two routes, answering the same bytes, through a [`Router`] holding 50
//!   more routes (static ones and ones with parameters), so that the difference is what routing
//!   costs;
//! - `app`: the app `bench/peers/axum-web` serves with axum 0.8, written the idiomatic way:
//!   `GET /plaintext`, `GET /json`, `GET /users/{id}?fields=a,b` (`Path` + `Query`, JSON out)
//!   and `POST /echo` (`Json<Value>` in and out), under the built-in request-id and CORS
//!   layers (`RequestIdLayer`, `CorsLayer` allowing one origin: what tower-http's
//!   `SetRequestId` + `PropagateRequestId` and `CorsLayer` do for the axum peer);
//! - `app-fromfn`: the same app with those two middlewares written as `from_fn` functions;
//! - `app-bare`: the same app without the two middlewares (what they cost is the difference).
//!
//! Run: `cargo run --release -p fibra-web --example bench_app -- --mode app --workers 1
//! --port 8080` (the port last: `bench/cachesim.sh` reads it from there). Stops on SIGINT or
//! SIGTERM (the default action).

use std::sync::atomic::{AtomicU64, Ordering};

use fibra_web::extract::{Path, Query};
use fibra_web::http::header::{self, HeaderName, HeaderValue};
use fibra_web::http::{Method, StatusCode};
use fibra_web::middleware::{from_fn, CorsLayer, Next, RequestIdLayer};
use fibra_web::routing::{get, post};
use fibra_web::{Json, Request, Response, ResponseBody, Router, Server};
use serde::{Deserialize, Serialize};

const PLAINTEXT: &[u8] = b"Hello, World!";
const JSON: &[u8] = br#"{"message":"Hello, World!"}"#;
const TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain");
const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

/// The origin the CORS middleware allows (the one `bench/web.sh` sends).
const ALLOWED_ORIGIN: HeaderValue = HeaderValue::from_static("http://localhost");
/// tower-http's default `Vary` of a `CorsLayer`.
const CORS_VARY: HeaderValue = HeaderValue::from_static(
    "origin, access-control-request-method, access-control-request-headers",
);
const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

// ---- match and router: the same two answers -------------------------------------------------

/// `GET /plaintext` as `fibra hello` answers it.
fn plaintext() -> Response {
    Response::new(ResponseBody::from(PLAINTEXT).with_content_type(TEXT_PLAIN))
}

/// `GET /json` as `fibra hello` answers it.
fn json() -> Response {
    Response::new(ResponseBody::from(JSON).with_content_type(APPLICATION_JSON))
}

fn status(code: StatusCode) -> Response {
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = code;
    r
}

/// The hand-written app: `fibra hello`'s `match` for these two routes (405 for other methods,
/// else 404).
fn match_handler(req: Request) -> Response {
    let get = req.is_get_or_head();
    match req.uri().path() {
        "/plaintext" if get => plaintext(),
        "/json" if get => json(),
        "/plaintext" | "/json" => {
            let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET,HEAD"));
            r
        }
        _ => status(StatusCode::NOT_FOUND),
    }
}

/// Routes of the `router` app besides `/plaintext` and `/json`: 25 static paths and 25 with
/// parameters (two catch-alls among them), sharing prefixes as an API's do.
const EXTRA_STATIC: [&str; 5] = [
    "/about",
    "/health",
    "/api/v1/items",
    "/api/v1/users",
    "/api/v1/orders",
];
const EXTRA_PARAMS: [&str; 25] = [
    "/api/v1/items/{id}",
    "/api/v1/items/{id}/reviews",
    "/api/v1/items/{id}/reviews/{review}",
    "/api/v1/items/{id}/images/{image}",
    "/api/v1/users/{id}",
    "/api/v1/users/{id}/orders",
    "/api/v1/users/{id}/orders/{order}",
    "/api/v1/users/{id}/settings",
    "/api/v1/orders/{id}",
    "/api/v1/orders/{id}/lines/{line}",
    "/api/v2/items/{id}",
    "/api/v2/users/{id}",
    "/blog/{year}/{slug}",
    "/archive/{year}/{month}",
    "/tags/{tag}",
    "/tags/{tag}/items",
    "/search/{query}",
    "/docs/{*path}",
    "/assets/{*file}",
    "/teams/{team}/members/{member}",
    "/teams/{team}/projects",
    "/projects/{id}/issues/{issue}",
    "/projects/{id}/issues/{issue}/comments",
    "/orgs/{org}/repos/{repo}",
    "/orgs/{org}/repos/{repo}/pulls/{pull}",
];

/// `/plaintext` and `/json` through a router with 50 more routes.
fn router_app() -> Router {
    let mut app = Router::new()
        .route("/plaintext", get(plaintext))
        .route("/json", get(json));
    for n in 0..20 {
        app = app.route(&format!("/static{n}"), get(|| "static"));
    }
    for path in EXTRA_STATIC {
        app = app.route(path, get(|| "static"));
    }
    for path in EXTRA_PARAMS {
        app = app.route(path, get(|| "param").post(|| "posted"));
    }
    app
}

// ---- app: what bench/peers/axum-web serves ----------------------------------------------------

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

#[derive(Deserialize)]
struct Fields {
    fields: Option<String>,
}

#[derive(Serialize)]
struct User<'a> {
    id: u32,
    name: String,
    fields: Vec<&'a str>,
}

fn user(Path(id): Path<u32>, Query(q): Query<Fields>) -> Response {
    use fibra_web::response::IntoResponse;
    let fields = q
        .fields
        .as_deref()
        .map_or(Vec::new(), |f| f.split(',').collect());
    Json(User {
        id,
        name: format!("user {id}"),
        fields,
    })
    .into_response()
}

/// The request's id, as tower-http's `SetRequestId` leaves it in the extensions.
#[derive(Clone, Debug)]
#[allow(dead_code)]
struct RequestId(HeaderValue);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// tower-http's `SetRequestId` + `PropagateRequestId` (`x-request-id`), with a counter making
/// the ids: keeps the client's id or makes one (into the request's headers and extensions), and
/// puts it on the response unless the handler set one.
fn request_id(mut req: Request, next: Next) -> Response {
    let id = match req.headers().get(&X_REQUEST_ID) {
        Some(id) => id.clone(),
        None => {
            let id = HeaderValue::from(NEXT_ID.fetch_add(1, Ordering::Relaxed));
            req.headers_mut().insert(X_REQUEST_ID, id.clone());
            id
        }
    };
    req.extensions_mut().insert(RequestId(id.clone()));
    let mut res = next.run(req);
    if !res.headers().contains_key(&X_REQUEST_ID) {
        res.headers_mut().insert(X_REQUEST_ID, id);
    }
    res
}

/// tower-http's `CorsLayer::new().allow_origin(ALLOWED_ORIGIN)`: `Vary` on every answer,
/// `Access-Control-Allow-Origin` for the allowed origin, preflights answered here.
fn cors(req: Request, next: Next) -> Response {
    let allowed = req.headers().get(header::ORIGIN) == Some(&ALLOWED_ORIGIN);
    let mut res = if req.method() == Method::OPTIONS {
        Response::new(ResponseBody::empty())
    } else {
        next.run(req)
    };
    let headers = res.headers_mut();
    headers.append(header::VARY, CORS_VARY);
    if allowed {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, ALLOWED_ORIGIN);
    }
    res
}

/// The app of `bench/peers/axum-web`, with the built-in layers.
fn app() -> Router {
    app_bare()
        .layer(CorsLayer::new().allow_origin(ALLOWED_ORIGIN))
        .layer(RequestIdLayer::new())
}

/// The same app with the two middlewares as `from_fn` functions.
fn app_fromfn() -> Router {
    app_bare().layer(from_fn(cors)).layer(from_fn(request_id))
}

/// The app's routes without middleware.
fn app_bare() -> Router {
    Router::new()
        .route("/plaintext", get(|| "Hello, World!"))
        .route(
            "/json",
            get(|| {
                Json(Message {
                    message: "Hello, World!",
                })
            }),
        )
        .route("/users/{id}", get(user))
        .route("/echo", post(|Json(v): Json<serde_json::Value>| Json(v)))
}

// ---- main -------------------------------------------------------------------------------------

fn usage() -> ! {
    eprintln!(
        "usage: bench_app [--mode match|router|app|app-fromfn|app-bare] [--workers N] [--port P]"
    );
    std::process::exit(2)
}

fn main() -> std::io::Result<()> {
    let (mut mode, mut workers, mut port) = (String::from("app"), 1usize, 8080u16);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--mode" => mode = value,
            "--workers" => workers = value.parse().unwrap_or_else(|_| usage()),
            "--port" => port = value.parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    let server = Server::bind(("127.0.0.1", port)).workers(workers);
    eprintln!("bench_app --mode {mode}: http://127.0.0.1:{port}");
    match mode.as_str() {
        "match" => server.run(match_handler),
        "router" => server.run(router_app()),
        "app" => server.run(app()),
        "app-fromfn" => server.run(app_fromfn()),
        "app-bare" => server.run(app_bare()),
        _ => usage(),
    }
}
