//! The TechEmpower Framework Benchmarks' six test types as a fibra-web router, following
//! the published requirements:
//!
//! - `/plaintext`: `Hello, World!` as `text/plain`;
//! - `/json`: `{"message":"Hello, World!"}`, serialized for each request;
//! - `/db`: one random `World` row (id 1..=10000) as `{"id":N,"randomNumber":N}`;
//! - `/queries?queries=N`: N rows, one query each (pipelined on one connection: one round
//!   trip), as a JSON array; N below 1 or not a number is 1, above 500 is 500;
//! - `/fortunes`: every `Fortune` row plus one added at request time, sorted by message, in
//!   an HTML table with the messages escaped;
//! - `/updates?queries=N`: as `/queries`, then each row gets a new random number, written
//!   back in one statement (rows locked in id order, so concurrent updates cannot deadlock).
//!
//! A database that cannot be reached, or does not answer in time, is a `503`; any other
//! database error a `500`. `Date` comes from fibra-http, and `Server` too once
//! `Server::server_header(Some(SERVER_NAME.into()))` is set. The pool is the router's state.

use fibra_postgres::{Client, Error, Pending, Pool, Statement, Type};
use fibra_web::extract::{Query, State};
use fibra_web::http::HeaderValue;
use fibra_web::http::StatusCode;
use fibra_web::response::{Html, IntoResponse, Response};
use fibra_web::routing::get;
use fibra_web::{Json, ResponseBody, Router};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::LazyLock;

/// Rows in `World`.
pub const WORLD_ROWS: i32 = 10_000;
/// The message TFB's fortunes test adds at request time.
pub const EXTRA_FORTUNE: &str = "Additional fortune added at request time.";

static WORLD: LazyLock<Statement> = LazyLock::new(|| {
    Statement::new(
        "SELECT id, randomnumber FROM world WHERE id = $1",
        &[Type::INT4],
    )
});
static FORTUNES: LazyLock<Statement> =
    LazyLock::new(|| Statement::new("SELECT id, message FROM fortune", &[]));
static UPDATE: LazyLock<Statement> = LazyLock::new(|| {
    Statement::new(
        "UPDATE world SET randomnumber = new.r FROM \
         (SELECT unnest($1::int[]) AS id, unnest($2::int[]) AS r) AS new \
         WHERE world.id = new.id",
        &[Type::INT4_ARRAY, Type::INT4_ARRAY],
    )
});

const TEXT_PLAIN: HeaderValue = HeaderValue::from_static("text/plain");

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

/// A `World` row as TFB's JSON spells it.
#[derive(Serialize, Clone, Copy, Debug)]
pub struct World {
    /// The row's id.
    pub id: i32,
    /// Its random number.
    #[serde(rename = "randomNumber")]
    pub random_number: i32,
}

/// The `Server` header TFB requires (`fibra_http::Server::server_header`).
pub const SERVER_NAME: &str = "fibra";

/// The app, sharing `pool` between the requests of all workers.
pub fn router(pool: Pool) -> Router {
    Router::new()
        // TFB's `text/plain`, without the `charset` a `&str` response gets.
        .route(
            "/plaintext",
            get(|| ResponseBody::from("Hello, World!").with_content_type(TEXT_PLAIN)),
        )
        .route(
            "/json",
            get(|| {
                Json(Message {
                    message: "Hello, World!",
                })
            }),
        )
        .route("/db", get(db))
        .route("/queries", get(queries))
        .route("/fortunes", get(fortunes))
        .route("/updates", get(updates))
        .with_state(pool)
}

/// A database failure, as its response.
struct DbError(Error);

impl From<Error> for DbError {
    fn from(e: Error) -> Self {
        DbError(e)
    }
}

impl IntoResponse for DbError {
    fn into_response(self) -> Response {
        if self.0.is_unavailable() {
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n").into_response()
        } else {
            (StatusCode::INTERNAL_SERVER_ERROR, "database error\n").into_response()
        }
    }
}

/// The `queries` parameter, as sent.
#[derive(Deserialize)]
struct Queries {
    queries: Option<String>,
}

impl Queries {
    /// The count TFB asks for (see [`queries_param`]).
    fn count(q: Option<Query<Queries>>) -> usize {
        clamp_queries(q.and_then(|Query(q)| q.queries).as_deref())
    }
}

fn db(State(pool): State<Pool>) -> Result<Json<World>, DbError> {
    Ok(Json(single(&pool.get()?)?))
}

fn queries(
    State(pool): State<Pool>,
    q: Option<Query<Queries>>,
) -> Result<Json<Vec<World>>, DbError> {
    Ok(Json(many(&pool.get()?, Queries::count(q))?))
}

fn updates(
    State(pool): State<Pool>,
    q: Option<Query<Queries>>,
) -> Result<Json<Vec<World>>, DbError> {
    Ok(Json(update(&pool.get()?, Queries::count(q))?))
}

/// `queries` from a query string, clamped to 1..=500; missing or not a number is 1: what the
/// handlers' extractor gives, for the tests.
#[cfg(test)]
pub fn queries_param(query: Option<&str>) -> usize {
    let q = Query::<Queries>::try_from_uri(&format!("/?{}", query.unwrap_or("")).parse().unwrap());
    Queries::count(q.ok())
}

/// A `queries` value clamped to 1..=500; missing or not a number is 1.
fn clamp_queries(value: Option<&str>) -> usize {
    value
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(1)
        .clamp(1, 500) as usize
}

fn random_id() -> i32 {
    fastrand::i32(1..=WORLD_ROWS)
}

fn world(row: &fibra_postgres::Row) -> Result<World, Error> {
    Ok(World {
        id: row.try_get(0)?,
        random_number: row.try_get(1)?,
    })
}

fn single(c: &Client) -> Result<World, Error> {
    world(&c.query_one(&WORLD, &[&random_id()])?)
}

/// `n` random rows, one query each, all in flight at once.
fn many(c: &Client, n: usize) -> Result<Vec<World>, Error> {
    let ids: Vec<i32> = (0..n).map(|_| random_id()).collect();
    let pending = ids
        .iter()
        .map(|id| c.send(&WORLD, &[id]))
        .collect::<Result<Vec<_>, _>>()?;
    Pending::wait_all(&pending);
    pending.into_iter().map(|p| world(&p.one()?)).collect()
}

fn update(c: &Client, n: usize) -> Result<Vec<World>, Error> {
    let mut worlds = many(c, n)?;
    for w in &mut worlds {
        w.random_number = random_id();
    }
    let mut sorted = worlds.clone();
    sorted.sort_by_key(|w| w.id);
    sorted.dedup_by_key(|w| w.id);
    let ids: Vec<i32> = sorted.iter().map(|w| w.id).collect();
    let numbers: Vec<i32> = sorted.iter().map(|w| w.random_number).collect();
    c.execute(&UPDATE, &[&ids, &numbers])?;
    // An id drawn twice shows the number written for it.
    for w in &mut worlds {
        if let Ok(i) = ids.binary_search(&w.id) {
            w.random_number = numbers[i];
        }
    }
    Ok(worlds)
}

fn fortunes(State(pool): State<Pool>) -> Result<Html<Vec<u8>>, DbError> {
    let c = pool.get()?;
    let rows = c.query(&FORTUNES, &[])?;
    let mut list: Vec<(i32, &str)> = Vec::with_capacity(rows.len() + 1);
    for r in &rows {
        list.push((r.try_get(0)?, r.try_get(1)?));
    }
    list.push((0, EXTRA_FORTUNE));
    list.sort_unstable_by(|a, b| a.1.cmp(b.1));
    let mut html = Vec::with_capacity(1200);
    html.extend_from_slice(
        b"<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>\
          <tr><th>id</th><th>message</th></tr>",
    );
    for (id, message) in list {
        html.extend_from_slice(b"<tr><td>");
        write!(html, "{id}").expect("writing to a Vec");
        html.extend_from_slice(b"</td><td>");
        escape_html(message, &mut html);
        html.extend_from_slice(b"</td></tr>");
    }
    html.extend_from_slice(b"</table></body></html>");
    Ok(Html(html))
}

/// Appends `s` with `< > & " '` escaped.
pub fn escape_html(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'&' => b"&amp;",
            b'"' => b"&quot;",
            b'\'' => b"&#x27;",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}
