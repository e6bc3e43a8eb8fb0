//! axum 0.8 + tokio-postgres peer for `bench/techempower.sh`: the six TechEmpower test types
//! (`/json`, `/db`, `/queries`, `/fortunes`, `/updates`, `/plaintext`) on one current-thread
//! tokio runtime, the same SQL and the same number of database connections as fibra's
//! `techempower` example. tokio-postgres pipelines the queries of concurrent requests (and the
//! N queries of one `/queries` request) on each connection.
//!
//! Args: PORT DATABASE_URL [CONNECTIONS (default 4)].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures_util::future::try_join_all;
use serde::{Deserialize, Serialize};
use tokio_postgres::{Client, NoTls, Statement};

const WORLD_ROWS: i32 = 10_000;

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

#[derive(Serialize, Clone, Copy)]
struct World {
    id: i32,
    #[serde(rename = "randomNumber")]
    random_number: i32,
}

#[derive(Deserialize)]
struct Params {
    queries: Option<String>,
}

/// One database connection and its prepared statements.
struct Conn {
    client: Client,
    world: Statement,
    fortune: Statement,
    update: Statement,
}

/// The connections, taken round-robin.
struct Db {
    conns: Vec<Conn>,
    next: AtomicUsize,
}

type Shared = State<Arc<Db>>;

impl Db {
    fn conn(&self) -> &Conn {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        &self.conns[i % self.conns.len()]
    }
}

fn queries_param(p: &Params) -> usize {
    p.queries
        .as_deref()
        .and_then(|q| q.parse::<i64>().ok())
        .unwrap_or(1)
        .clamp(1, 500) as usize
}

fn random_id() -> i32 {
    fastrand::i32(1..=WORLD_ROWS)
}

fn server_error(e: tokio_postgres::Error) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response()
}

async fn fetch_world(conn: &Conn, id: i32) -> Result<World, tokio_postgres::Error> {
    let row = conn.client.query_one(&conn.world, &[&id]).await?;
    Ok(World {
        id: row.get(0),
        random_number: row.get(1),
    })
}

async fn plaintext() -> Response {
    let mut r = "Hello, World!".into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

async fn json() -> Json<Message> {
    Json(Message {
        message: "Hello, World!",
    })
}

async fn single_query(State(db): Shared) -> Response {
    match fetch_world(db.conn(), random_id()).await {
        Ok(w) => Json(w).into_response(),
        Err(e) => server_error(e),
    }
}

async fn queries(State(db): Shared, Query(p): Query<Params>) -> Response {
    let n = queries_param(&p);
    let conn = db.conn();
    match try_join_all((0..n).map(|_| fetch_world(conn, random_id()))).await {
        Ok(worlds) => Json(worlds).into_response(),
        Err(e) => server_error(e),
    }
}

async fn fortunes(State(db): Shared) -> Response {
    let conn = db.conn();
    let rows = match conn.client.query(&conn.fortune, &[]).await {
        Ok(rows) => rows,
        Err(e) => return server_error(e),
    };
    let mut fortunes: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    fortunes.push((0, "Additional fortune added at request time.".to_string()));
    fortunes.sort_by(|a, b| a.1.cmp(&b.1));
    let mut html = String::with_capacity(2048);
    html.push_str("<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>");
    for (id, message) in &fortunes {
        html.push_str("<tr><td>");
        html.push_str(&id.to_string());
        html.push_str("</td><td>");
        escape_html(message, &mut html);
        html.push_str("</td></tr>");
    }
    html.push_str("</table></body></html>");
    Html(html).into_response()
}

fn escape_html(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
}

async fn updates(State(db): Shared, Query(p): Query<Params>) -> Response {
    let n = queries_param(&p);
    let conn = db.conn();
    let mut worlds =
        match try_join_all((0..n).map(|_| fetch_world(conn, random_id()))).await {
            Ok(w) => w,
            Err(e) => return server_error(e),
        };
    for w in &mut worlds {
        w.random_number = random_id();
    }
    // One statement for all rows, ids in order so concurrent updates lock rows in one order.
    let mut sorted = worlds.clone();
    sorted.sort_by_key(|w| w.id);
    sorted.dedup_by_key(|w| w.id);
    let ids: Vec<i32> = sorted.iter().map(|w| w.id).collect();
    let numbers: Vec<i32> = sorted.iter().map(|w| w.random_number).collect();
    if let Err(e) = conn.client.execute(&conn.update, &[&ids, &numbers]).await {
        return server_error(e);
    }
    // An id drawn twice shows the number written for it.
    for w in &mut worlds {
        if let Ok(i) = ids.binary_search(&w.id) {
            w.random_number = numbers[i];
        }
    }
    Json(worlds).into_response()
}

async fn connect(url: &str) -> Conn {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("connect to PostgreSQL");
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("connection error: {e}");
        }
    });
    let world = client
        .prepare("SELECT id, randomnumber FROM world WHERE id = $1")
        .await
        .expect("prepare");
    let fortune = client
        .prepare("SELECT id, message FROM fortune")
        .await
        .expect("prepare");
    let update = client
        .prepare(
            "UPDATE world SET randomnumber = new.r FROM \
             (SELECT unnest($1::int[]) AS id, unnest($2::int[]) AS r) AS new \
             WHERE world.id = new.id",
        )
        .await
        .expect("prepare");
    Conn {
        client,
        world,
        fortune,
        update,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(8080);
    let url = args.next().expect("usage: PORT DATABASE_URL [CONNECTIONS]");
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(4);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let mut conns = Vec::with_capacity(n);
        for _ in 0..n {
            conns.push(connect(&url).await);
        }
        let db = Arc::new(Db {
            conns,
            next: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/plaintext", get(plaintext))
            .route("/json", get(json))
            .route("/db", get(single_query))
            .route("/queries", get(queries))
            .route("/fortunes", get(fortunes))
            .route("/updates", get(updates))
            .layer(axum::middleware::map_response(server_header))
            .with_state(db);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind");
        axum::serve(listener, app).await.expect("serve");
    });
}

async fn server_header(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::SERVER, HeaderValue::from_static("axum"));
    r
}
