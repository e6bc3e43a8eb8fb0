//! Every extractor's success and rejection, through the in-process test client.

use std::collections::HashMap;
use std::net::SocketAddr;

use bytes::Bytes;
use fibra_web::extract::rejection::{JsonRejection, PathRejection};
use fibra_web::extract::{
    ConnectInfo, DefaultBodyLimit, Extension, Form, MatchedPath, Path, Query, State,
};
use fibra_web::http::{HeaderMap, Method, StatusCode, Uri};
use fibra_web::routing::{get, post};
use fibra_web::test::TestClient;
use fibra_web::{Json, Request, Router};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct UserPost {
    user: String,
    post: u64,
}

#[test]
fn path_one_value_tuple_struct_and_map() {
    let app: Router = Router::new()
        .route("/one/{id}", get(|Path(id): Path<u32>| id.to_string()))
        .route(
            "/two/{a}/{b}",
            get(|Path((a, b)): Path<(String, i64)>| format!("{a}|{b}")),
        )
        .route(
            "/users/{user}/posts/{post}",
            get(|Path(p): Path<UserPost>| format!("{}#{}", p.user, p.post)),
        )
        .route(
            "/map/{x}/{y}",
            get(|Path(m): Path<HashMap<String, String>>| format!("{}{}", m["x"], m["y"])),
        );
    let c = TestClient::new(app);
    assert_eq!(c.get("/one/42").send().text(), "42");
    assert_eq!(
        c.get("/two/hello%20world/-3").send().text(),
        "hello world|-3"
    );
    assert_eq!(c.get("/users/ann/posts/9").send().text(), "ann#9");
    assert_eq!(c.get("/map/p/q").send().text(), "pq");
}

#[test]
fn path_that_does_not_parse_is_400_naming_the_parameter() {
    let app: Router = Router::new()
        .route("/one/{id}", get(|Path(id): Path<u32>| id.to_string()))
        .route(
            "/users/{user}/posts/{post}",
            get(|Path(p): Path<UserPost>| p.user),
        );
    let c = TestClient::new(app);
    let r = c.get("/one/abc").send();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        r.text(),
        "Invalid URL: Cannot parse `id` with value `abc` to a `u32`"
    );
    let r = c.get("/users/ann/posts/x1").send();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.text().contains("`post`"), "{}", r.text());
    let r = c.get("/one/%FF").send();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(r.text(), "Invalid URL: Invalid UTF-8 in `id`");
}

#[test]
fn path_type_that_does_not_fit_the_route_is_500() {
    let app: Router = Router::new()
        .route("/two/{a}/{b}", get(|Path(a): Path<u32>| a.to_string()))
        .route("/none", get(|Path(a): Path<u32>| a.to_string()));
    let c = TestClient::new(app);
    let r = c.get("/two/1/2").send();
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(r.text().contains("Expected 1 but got 2"), "{}", r.text());
    // A static route has no parameters: the struct of zero values does not fit one `u32`.
    assert_eq!(
        c.get("/none").send().status(),
        StatusCode::INTERNAL_SERVER_ERROR
    );
}

#[derive(Deserialize)]
struct Page {
    n: u32,
    size: Option<u32>,
}

#[test]
fn query_success_missing_and_malformed() {
    let app: Router = Router::new()
        .route(
            "/list",
            get(|Query(p): Query<Page>| format!("{} {:?}", p.n, p.size)),
        )
        .route(
            "/opt",
            get(|q: Option<Query<Page>>| q.map_or("none".to_owned(), |q| q.n.to_string())),
        );
    let c = TestClient::new(app);
    assert_eq!(c.get("/list?n=3&size=10").send().text(), "3 Some(10)");
    assert_eq!(c.get("/list?n=3").send().text(), "3 None");
    let r = c.get("/list").send();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        r.text(),
        "Failed to deserialize query string: missing field `n`"
    );
    let r = c.get("/list?n=x").send();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.text().starts_with("Failed to deserialize query string: "));
    assert_eq!(c.get("/opt?n=x").send().text(), "none");
    assert_eq!(c.get("/opt?n=5").send().text(), "5");
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Todo {
    title: String,
    done: bool,
}

fn json_app() -> Router {
    Router::new().route(
        "/todos",
        post(|Json(t): Json<Todo>| Json(Todo { done: !t.done, ..t })),
    )
}

#[test]
fn json_in_and_out() {
    let c = TestClient::new(json_app());
    let r = c
        .post("/todos")
        .json(&Todo {
            title: "a".into(),
            done: false,
        })
        .send();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.json::<Todo>(),
        Todo {
            title: "a".into(),
            done: true
        }
    );
    // `application/*+json` is JSON too.
    let r = c
        .post("/todos")
        .header("content-type", "application/vnd.api+json; charset=utf-8")
        .body(r#"{"title":"b","done":true}"#)
        .send();
    assert_eq!(r.status(), StatusCode::OK);
}

#[test]
fn json_rejections_415_400_422_413() {
    let c = TestClient::new(json_app());
    let r = c.post("/todos").body(r#"{"title":"a","done":true}"#).send();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        r.text(),
        "Expected request with `Content-Type: application/json`"
    );
    let r = c
        .post("/todos")
        .header("content-type", "text/plain")
        .body("{}")
        .send();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let r = c
        .post("/todos")
        .header("content-type", "application/json")
        .body(r#"{"title": "a", "#)
        .send();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r
        .text()
        .starts_with("Failed to parse the request body as JSON: "));

    let r = c
        .post("/todos")
        .header("content-type", "application/json")
        .body(r#"{"title": 5, "done": true}"#)
        .send();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.text()
            .contains("invalid type: integer `5`, expected a string"),
        "{}",
        r.text()
    );

    let big = format!(
        r#"{{"title":"{}","done":true}}"#,
        "x".repeat(2 * 1024 * 1024)
    );
    let r = c
        .post("/todos")
        .header("content-type", "application/json")
        .body(big)
        .send();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        r.text(),
        "Failed to buffer the request body: length limit exceeded"
    );
}

#[test]
fn body_limit_is_settable_per_router_and_innermost_wins() {
    let app: Router = Router::new()
        .route("/small", post(|b: Bytes| b.len().to_string()))
        .layer(DefaultBodyLimit::max(10))
        .route("/big", post(|b: Bytes| b.len().to_string()))
        .layer(DefaultBodyLimit::max(4 * 1024 * 1024));
    assert_eq!(app.body_limit(), Some(Some(4 * 1024 * 1024)));
    let c = TestClient::new(app);
    assert_eq!(c.post("/small").body("0123456789").send().text(), "10");
    assert_eq!(
        c.post("/small").body("0123456789a").send().status(),
        StatusCode::PAYLOAD_TOO_LARGE
    );
    let three_mib = vec![b'x'; 3 * 1024 * 1024];
    assert_eq!(
        c.post("/big").body(three_mib).send().text(),
        (3 * 1024 * 1024).to_string()
    );
}

#[derive(Deserialize, Serialize)]
struct Login {
    user: String,
    age: u8,
}

#[test]
fn form_from_body_and_query_with_rejections() {
    let app: Router = Router::new().route(
        "/login",
        get(|Form(f): Form<Login>| format!("get {} {}", f.user, f.age))
            .post(|Form(f): Form<Login>| format!("post {} {}", f.user, f.age)),
    );
    let c = TestClient::new(app);
    let login = Login {
        user: "ann".into(),
        age: 30,
    };
    assert_eq!(c.post("/login").form(&login).send().text(), "post ann 30");
    assert_eq!(c.get("/login?user=bo&age=7").send().text(), "get bo 7");

    let r = c.get("/login?user=bo&age=old").send();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.text().starts_with("Failed to deserialize form: "));

    let r = c.post("/login").body("user=ann&age=30").send();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        r.text(),
        "Form requests must have `Content-Type: application/x-www-form-urlencoded`"
    );

    let r = c
        .post("/login")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("user=ann&age=300")
        .send();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.text().starts_with("Failed to deserialize form body: "));
}

#[derive(Clone)]
struct Config {
    greeting: &'static str,
}

#[derive(Clone)]
struct AppState {
    config: Config,
    counter: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

impl fibra_web::extract::FromRef<AppState> for Config {
    fn from_ref(s: &AppState) -> Config {
        s.config.clone()
    }
}

#[test]
fn state_and_a_part_of_it() {
    let app: Router = Router::new()
        .route(
            "/hello",
            get(|State(c): State<Config>| c.greeting.to_owned()),
        )
        .route(
            "/count",
            post(|State(s): State<AppState>| {
                (s.counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1).to_string()
            }),
        )
        .with_state(AppState {
            config: Config { greeting: "hi" },
            counter: Default::default(),
        });
    let c = TestClient::new(app);
    assert_eq!(c.get("/hello").send().text(), "hi");
    assert_eq!(c.post("/count").send().text(), "1");
    assert_eq!(c.post("/count").send().text(), "2");
}

#[derive(Clone)]
struct Db(&'static str);

#[test]
fn extension_present_and_missing() {
    let with: Router = Router::new()
        .route("/", get(|Extension(db): Extension<Db>| db.0))
        .layer(Extension(Db("pg")));
    assert_eq!(TestClient::new(with).get("/").send().text(), "pg");

    let without: Router = Router::new().route("/", get(|Extension(db): Extension<Db>| db.0));
    let r = TestClient::new(without).get("/").send();
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        r.text().starts_with("Missing request extension"),
        "{}",
        r.text()
    );
}

#[test]
fn head_extractors_method_uri_headers_version() {
    let app: Router = Router::new().route(
        "/h",
        post(|m: Method, u: Uri, h: HeaderMap| format!("{m} {u} {}", h["x-a"].to_str().unwrap())),
    );
    let c = TestClient::new(app);
    assert_eq!(
        c.post("/h?q=1").header("x-a", "b").send().text(),
        "POST /h?q=1 b"
    );
}

#[test]
fn connect_info_and_matched_path() {
    let app: Router = Router::new()
        .route(
            "/peer",
            get(|ConnectInfo(a): ConnectInfo<SocketAddr>| a.to_string()),
        )
        .route("/users/{id}", get(|p: MatchedPath| p.as_str().to_owned()))
        .fallback(|p: Option<MatchedPath>| format!("fallback {}", p.is_some()));
    let c = TestClient::new(app).peer_addr("10.1.2.3:5555".parse().unwrap());
    assert_eq!(c.get("/peer").send().text(), "10.1.2.3:5555");
    assert_eq!(c.get("/users/7").send().text(), "/users/{id}");
    assert_eq!(c.get("/nope").send().text(), "fallback false");
}

#[test]
fn body_as_bytes_string_and_request() {
    let app: Router = Router::new()
        .route("/bytes", post(|b: Bytes| b.len().to_string()))
        .route("/string", post(|s: String| s.to_uppercase()))
        .route(
            "/request",
            post(|h: HeaderMap, mut req: Request| {
                let body = req.body_mut().read_to_vec(100).unwrap();
                format!("{} {}", h.len(), body.len())
            }),
        );
    let c = TestClient::new(app);
    assert_eq!(c.post("/bytes").body(vec![0u8; 5]).send().text(), "5");
    assert_eq!(c.post("/string").body("abc").send().text(), "ABC");
    let r = c.post("/string").body(vec![0xff, 0xfe]).send();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r
        .text()
        .starts_with("Request body didn't contain valid UTF-8"));
    assert_eq!(c.post("/request").body("xyz").send().text(), "1 3");
}

#[test]
fn result_of_an_extractor_gives_the_rejection_to_the_handler() {
    let app: Router = Router::new()
        .route(
            "/n/{id}",
            get(|p: Result<Path<u8>, PathRejection>| match p {
                Ok(Path(n)) => format!("ok {n}"),
                Err(e) => format!("handled {}", e.status().as_u16()),
            }),
        )
        .route(
            "/j",
            post(|j: Result<Json<Todo>, JsonRejection>| match j {
                Ok(Json(t)) => t.title,
                Err(e) => format!("handled {}", e.status().as_u16()),
            }),
        );
    let c = TestClient::new(app);
    assert_eq!(c.get("/n/7").send().text(), "ok 7");
    assert_eq!(c.get("/n/700").send().text(), "handled 400");
    assert_eq!(c.post("/j").body("{}").send().text(), "handled 415");
}

#[test]
fn a_panicking_handler_answers_500_and_the_next_request_goes_on() {
    let app: Router = Router::new()
        .route("/boom", get(|| -> &'static str { panic!("boom") }))
        .route("/ok", get(|| "ok"));
    let c = TestClient::new(app);
    assert_eq!(
        c.get("/boom").send().status(),
        StatusCode::INTERNAL_SERVER_ERROR
    );
    assert_eq!(c.get("/ok").send().text(), "ok");
}

#[test]
fn sixteen_extractors() {
    #[allow(clippy::too_many_arguments)]
    fn many(
        _: Method,
        _: Uri,
        _: HeaderMap,
        _: Method,
        _: Uri,
        _: HeaderMap,
        _: Method,
        _: Uri,
        _: HeaderMap,
        _: Method,
        _: Uri,
        _: HeaderMap,
        _: Method,
        _: Uri,
        _: HeaderMap,
        body: String,
    ) -> String {
        body
    }
    let app: Router = Router::new().route("/", post(many));
    assert_eq!(
        TestClient::new(app).post("/").body("16").send().text(),
        "16"
    );
}
