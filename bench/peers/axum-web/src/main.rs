//! axum 0.8 + tokio peer for `bench/web.sh`: the app of fibra-web's `bench_app` example
//! (`--mode app`) on one current-thread tokio runtime.
//!
//! Routes: `GET /plaintext` ("Hello, World!"), `GET /json` ({"message":"Hello, World!"}),
//! `GET /users/{id}?fields=a,b` (`Path<u32>` + `Query`, JSON `{id, name, fields}`) and
//! `POST /echo` (`Json<Value>` in, the same JSON out). Layers: tower-http's `SetRequestId` +
//! `PropagateRequestId` (`x-request-id`, ids from a counter, as the fibra side) and a
//! `CorsLayer` allowing one origin (`http://localhost`).
//!
//! Args: PORT.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::{Path, Query};
use axum::http::{HeaderValue, Request};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use tower::ServiceBuilder;
use tower_http::cors::CorsLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};

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

async fn user(Path(id): Path<u32>, Query(q): Query<Fields>) -> axum::response::Response {
    use axum::response::IntoResponse;
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

/// Request ids from a counter (the fibra side makes them the same way).
#[derive(Clone, Default)]
struct Counter(Arc<AtomicU64>);

impl MakeRequestId for Counter {
    fn make_request_id<B>(&mut self, _: &Request<B>) -> Option<RequestId> {
        let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        Some(RequestId::new(HeaderValue::from(n)))
    }
}

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    let app = Router::new()
        .route("/plaintext", get(|| async { "Hello, World!" }))
        .route(
            "/json",
            get(|| async {
                Json(Message {
                    message: "Hello, World!",
                })
            }),
        )
        .route("/users/{id}", get(user))
        .route(
            "/echo",
            post(|Json(v): Json<serde_json::Value>| async move { Json(v) }),
        )
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::x_request_id(Counter::default()))
                .layer(PropagateRequestIdLayer::x_request_id())
                .layer(CorsLayer::new().allow_origin(HeaderValue::from_static("http://localhost"))),
        );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind")
            .tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
        axum::serve(listener, app).await.expect("serve");
    });
}
