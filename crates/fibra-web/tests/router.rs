//! The router: matching, methods (405 + Allow, HEAD, OPTIONS), nest, merge, mount, fallback,
//! state, and the panics of conflicting routes.

use fibra_web::extract::{MatchedPath, Path, State};
use fibra_web::http::{Method, StatusCode};
use fibra_web::routing::{any, get, post};
use fibra_web::test::TestClient;
use fibra_web::{Request, Response, Router};

fn show(Path(id): Path<u32>) -> String {
    format!("show {id}")
}
fn update(Path(id): Path<u32>, body: String) -> String {
    format!("update {id} {body}")
}
fn remove(Path(id): Path<u32>) -> (StatusCode, String) {
    (StatusCode::ACCEPTED, format!("remove {id}"))
}

fn users() -> Router {
    Router::new().route("/users/{id}", get(show).put(update).delete(remove))
}

#[test]
fn routes_by_path_and_method() {
    let c = TestClient::new(users());
    assert_eq!(c.get("/users/7").send().text(), "show 7");
    assert_eq!(c.put("/users/7").body("x").send().text(), "update 7 x");
    let r = c.delete("/users/7").send();
    assert_eq!(
        (r.status(), r.text().as_str()),
        (StatusCode::ACCEPTED, "remove 7")
    );
    assert_eq!(c.get("/users").send().status(), StatusCode::NOT_FOUND);
    assert_eq!(c.get("/users/7/").send().status(), StatusCode::NOT_FOUND);
}

#[test]
fn other_method_is_405_with_allow() {
    let c = TestClient::new(users());
    let r = c.post("/users/7").send();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.header("allow"), Some("GET,HEAD,PUT,DELETE"));
    assert_eq!(r.text(), "");
}

#[test]
fn head_is_answered_by_get_without_body() {
    let c = TestClient::new(users());
    let r = c.head("/users/3").send();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert!(r.bytes().is_empty());
}

#[test]
fn options_answers_allow_unless_routed() {
    let app = users().route(
        "/cors",
        get(|| "x").options(|| (StatusCode::OK, "custom options")),
    );
    let c = TestClient::new(app);
    let r = c.options("/users/1").send();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(r.header("allow"), Some("GET,HEAD,PUT,DELETE"));
    assert_eq!(c.options("/cors").send().text(), "custom options");
}

#[test]
fn the_same_path_twice_merges_methods() {
    let app: Router = Router::new()
        .route("/x", get(|| "get"))
        .route("/x", post(|| "post"));
    let c = TestClient::new(app);
    assert_eq!(c.get("/x").send().text(), "get");
    assert_eq!(c.post("/x").send().text(), "post");
    assert_eq!(c.put("/x").send().header("allow"), Some("GET,HEAD,POST"));
}

#[test]
fn catch_all_and_static_priority() {
    let app: Router = Router::new()
        .route("/files/{*rest}", get(|Path(rest): Path<String>| rest))
        .route("/files/special", get(|| "special"));
    let c = TestClient::new(app);
    assert_eq!(c.get("/files/a/b/c.txt").send().text(), "a/b/c.txt");
    assert_eq!(c.get("/files/special").send().text(), "special");
}

#[test]
fn nest_strips_the_prefix_and_keeps_the_pattern() {
    let api: Router = Router::new()
        .route("/", get(|| "api root"))
        .route(
            "/users/{id}",
            get(|req: Request| req.uri().path().to_owned()),
        )
        .route("/pattern/{id}", get(|p: MatchedPath| p.as_str().to_owned()));
    let app = Router::new().nest("/api", api);
    let c = TestClient::new(app);
    assert_eq!(c.get("/api").send().text(), "api root");
    assert_eq!(c.get("/api/users/5?x=1").send().text(), "/users/5");
    assert_eq!(c.get("/api/pattern/5").send().text(), "/api/pattern/{id}");
    assert_eq!(c.get("/users/5").send().status(), StatusCode::NOT_FOUND);
}

#[test]
fn nested_fallback_answers_under_its_prefix() {
    let api: Router = Router::new()
        .route("/a", get(|| "a"))
        .fallback(|| (StatusCode::NOT_FOUND, "api fallback"));
    let app = Router::new()
        .nest("/api", api)
        .fallback(|| (StatusCode::NOT_FOUND, "outer fallback"));
    let c = TestClient::new(app);
    assert_eq!(c.get("/api/nope").send().text(), "api fallback");
    assert_eq!(c.get("/nope").send().text(), "outer fallback");
}

#[test]
fn merge_and_fallback() {
    let a: Router = Router::new().route("/a", get(|| "a"));
    let b: Router = Router::new()
        .route("/b", get(|| "b"))
        .fallback(|req: Request| (StatusCode::NOT_FOUND, format!("no {}", req.uri().path())));
    let c = TestClient::new(a.merge(b));
    assert_eq!(c.get("/a").send().text(), "a");
    assert_eq!(c.get("/b").send().text(), "b");
    let r = c.get("/c").send();
    assert_eq!(
        (r.status(), r.text().as_str()),
        (StatusCode::NOT_FOUND, "no /c")
    );
}

#[test]
fn mount_strips_the_prefix_for_any_service() {
    let service = |req: Request| -> Response {
        Response::new(format!("{} {}", req.method(), req.uri()).into())
    };
    let app: Router = Router::new().mount("/svc", service);
    let c = TestClient::new(app);
    assert_eq!(c.get("/svc/a/b?q=1").send().text(), "GET /a/b?q=1");
    assert_eq!(c.post("/svc").send().text(), "POST /");
    assert_eq!(c.get("/svcx").send().status(), StatusCode::NOT_FOUND);
}

#[test]
fn any_takes_every_method() {
    let app: Router = Router::new().route("/any", any(|m: Method| m.to_string()));
    let c = TestClient::new(app);
    assert_eq!(c.delete("/any").send().text(), "DELETE");
    assert_eq!(c.patch("/any").send().text(), "PATCH");
}

#[derive(Clone)]
struct AppState {
    name: &'static str,
}

#[test]
fn state_reaches_handlers_and_nested_routers() {
    let inner: Router<AppState> =
        Router::new().route("/name", get(|State(s): State<AppState>| s.name));
    let app: Router = Router::new()
        .route(
            "/",
            get(|State(s): State<AppState>| format!("hello {}", s.name)),
        )
        .nest("/inner", inner)
        .with_state(AppState { name: "fibra" });
    let c = TestClient::new(app);
    assert_eq!(c.get("/").send().text(), "hello fibra");
    assert_eq!(c.get("/inner/name").send().text(), "fibra");
}

fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let err = std::panic::catch_unwind(f).expect_err("should panic");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn conflicting_routes_panic_naming_both() {
    let msg = panic_message(|| {
        let _: Router = Router::new()
            .route("/users/{id}", get(|| "a"))
            .route("/users/{name}", get(|| "b"));
    });
    assert!(msg.contains("/users/{name}"), "{msg}");
    assert!(msg.contains("/users/{id}"), "{msg}");
}

#[test]
fn a_method_routed_twice_panics() {
    let msg = panic_message(|| {
        let _: Router = Router::new()
            .route("/x", get(|| "a"))
            .route("/x", get(|| "b"));
    });
    assert!(msg.contains("GET"), "{msg}");
}

#[test]
fn unknown_path_is_404() {
    let c = TestClient::new(Router::new().route("/", get(|| "root")));
    let r = c.get("/missing").send();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}
