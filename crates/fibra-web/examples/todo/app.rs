//! The todo app: a JSON API (create, list, read, update, delete), an HTML page with a form
//! posting to the same store, all over one in-memory store kept as the router's state.
//!
//! - `GET /`: the list as an HTML page with a form to add one;
//! - `POST /todos` (a urlencoded form, `title=…`): adds one and sends the browser back to `/`
//!   (303);
//! - `GET /api/todos` (`?done=true|false` filters): the list as JSON;
//! - `POST /api/todos` (`{"title": "…"}`): `201` with the new todo and its `Location`;
//! - `GET /api/todos/{id}`, `PATCH /api/todos/{id}` (`{"title"?, "done"?}`),
//!   `DELETE /api/todos/{id}` (`204`): `404` for an id that is not there.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use fibra_files::listing::escape_html;
use fibra_web::extract::{Form, Path, Query, State};
use fibra_web::http::header::LOCATION;
use fibra_web::http::StatusCode;
use fibra_web::response::{Html, IntoResponse, Redirect, Response};
use fibra_web::routing::get;
use fibra_web::{Json, Router};
use serde::{Deserialize, Serialize};

/// One todo.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Todo {
    /// Its id, given by the store.
    pub id: u64,
    /// What to do.
    pub title: String,
    /// Whether it is done.
    pub done: bool,
}

/// The todos, shared by every worker (a handler holds the lock only to copy or change an
/// entry, never across a blocking call).
#[derive(Clone, Default)]
pub struct Store {
    inner: Arc<Mutex<Todos>>,
}

#[derive(Default)]
struct Todos {
    next_id: u64,
    items: BTreeMap<u64, Todo>,
}

impl Store {
    fn with<T>(&self, f: impl FnOnce(&mut Todos) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }
    fn add(&self, title: String) -> Todo {
        self.with(|t| {
            t.next_id += 1;
            let todo = Todo {
                id: t.next_id,
                title,
                done: false,
            };
            t.items.insert(todo.id, todo.clone());
            todo
        })
    }
}

/// The app over `store`.
pub fn router(store: Store) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/todos", fibra_web::routing::post(add_from_form))
        .route("/api/todos", get(list).post(create))
        .route("/api/todos/{id}", get(show).patch(update).delete(remove))
        .with_state(store)
}

#[derive(Deserialize)]
struct Filter {
    done: Option<bool>,
}

fn list(State(store): State<Store>, Query(f): Query<Filter>) -> Json<Vec<Todo>> {
    let todos = store.with(|t| {
        t.items
            .values()
            .filter(|todo| f.done.is_none_or(|d| todo.done == d))
            .cloned()
            .collect()
    });
    Json(todos)
}

#[derive(Deserialize, Serialize)]
pub struct NewTodo {
    /// What to do.
    pub title: String,
}

fn create(State(store): State<Store>, Json(new): Json<NewTodo>) -> Response {
    if new.title.trim().is_empty() {
        return (StatusCode::UNPROCESSABLE_ENTITY, "title must not be empty").into_response();
    }
    let todo = store.add(new.title);
    let location = format!("/api/todos/{}", todo.id);
    (StatusCode::CREATED, [(LOCATION, location)], Json(todo)).into_response()
}

fn show(State(store): State<Store>, Path(id): Path<u64>) -> Result<Json<Todo>, StatusCode> {
    store
        .with(|t| t.items.get(&id).cloned())
        .map(Json)
        .ok_or(StatusCode::NOT_FOUND)
}

#[derive(Deserialize)]
struct Change {
    title: Option<String>,
    done: Option<bool>,
}

fn update(
    State(store): State<Store>,
    Path(id): Path<u64>,
    Json(change): Json<Change>,
) -> Result<Json<Todo>, StatusCode> {
    store.with(|t| {
        let todo = t.items.get_mut(&id).ok_or(StatusCode::NOT_FOUND)?;
        if let Some(title) = change.title {
            todo.title = title;
        }
        if let Some(done) = change.done {
            todo.done = done;
        }
        Ok(Json(todo.clone()))
    })
}

fn remove(State(store): State<Store>, Path(id): Path<u64>) -> StatusCode {
    match store.with(|t| t.items.remove(&id)) {
        Some(_) => StatusCode::NO_CONTENT,
        None => StatusCode::NOT_FOUND,
    }
}

fn add_from_form(State(store): State<Store>, Form(new): Form<NewTodo>) -> Redirect {
    if !new.title.trim().is_empty() {
        store.add(new.title);
    }
    Redirect::to("/")
}

fn page(State(store): State<Store>) -> Html<String> {
    let mut html = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Todos</title></head><body>\
         <h1>Todos</h1><ul>",
    );
    store.with(|t| {
        for todo in t.items.values() {
            let mark = if todo.done { "&#x2713; " } else { "" };
            html.push_str(&format!("<li>{mark}{}</li>", escape_html(&todo.title)));
        }
    });
    html.push_str(
        "</ul><form method=\"post\" action=\"/todos\">\
         <input name=\"title\" placeholder=\"What needs doing?\"><button>Add</button>\
         </form></body></html>",
    );
    Html(html)
}
