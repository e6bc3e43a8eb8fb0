//! The `todo` example through the test client: the JSON API's whole life of a todo, the form
//! and the page, and its answers to bad input.

#[path = "../examples/todo/app.rs"]
#[allow(dead_code)]
mod app;

use app::{router, NewTodo, Store, Todo};
use fibra_web::http::StatusCode;
use fibra_web::test::TestClient;

#[test]
fn a_todo_from_creation_to_deletion() {
    let c = TestClient::new(router(Store::default()));
    let r = c
        .post("/api/todos")
        .json(&NewTodo {
            title: "milk".into(),
        })
        .send();
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(r.header("location"), Some("/api/todos/1"));
    let todo: Todo = r.json();
    assert_eq!(
        (todo.id, todo.title.as_str(), todo.done),
        (1, "milk", false)
    );

    let r = c
        .patch("/api/todos/1")
        .json(&serde_json::json!({"done": true}))
        .send();
    assert!(r.json::<Todo>().done);
    assert_eq!(
        c.get("/api/todos?done=true")
            .send()
            .json::<Vec<Todo>>()
            .len(),
        1
    );
    assert_eq!(
        c.get("/api/todos?done=false")
            .send()
            .json::<Vec<Todo>>()
            .len(),
        0
    );
    assert_eq!(
        c.delete("/api/todos/1").send().status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(c.get("/api/todos/1").send().status(), StatusCode::NOT_FOUND);
    assert_eq!(
        c.delete("/api/todos/1").send().status(),
        StatusCode::NOT_FOUND
    );
}

#[test]
fn the_form_adds_and_the_page_shows_escaped() {
    let c = TestClient::new(router(Store::default()));
    let r = c
        .post("/todos")
        .form(&[("title", "<b>bread</b> & butter")])
        .send();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.header("location"), Some("/"));
    let page = c.get("/").send();
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        page.text()
            .contains("<li>&lt;b&gt;bread&lt;/b&gt; &amp; butter</li>"),
        "{}",
        page.text()
    );
}

#[test]
fn bad_input() {
    let c = TestClient::new(router(Store::default()));
    assert_eq!(
        c.get("/api/todos/x").send().status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        c.post("/api/todos")
            .body(r#"{"title":"a"}"#)
            .send()
            .status(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert_eq!(
        c.post("/api/todos")
            .json(&serde_json::json!({"name": 1}))
            .send()
            .status(),
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        c.post("/api/todos")
            .json(&NewTodo { title: " ".into() })
            .send()
            .status(),
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let r = c.put("/api/todos/1").send();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.header("allow"), Some("GET,HEAD,PATCH,DELETE"));
    assert_eq!(
        c.get("/api/todos?done=maybe").send().status(),
        StatusCode::BAD_REQUEST
    );
}
