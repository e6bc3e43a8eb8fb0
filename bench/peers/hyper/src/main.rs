//! hyper 1.x peer for the fibra benchmark harness: GET /plaintext -> "Hello, World!",
//! HTTP/1.1 keep-alive and pipelining, one current-thread tokio runtime. Arg: port.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{header, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

async fn handle(req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let resp = if req.uri().path() == "/plaintext" {
        Response::builder()
            .header(header::CONTENT_TYPE, "text/plain")
            .header(header::SERVER, "hyper")
            .body(Full::new(Bytes::from_static(b"Hello, World!")))
    } else {
        Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Full::new(Bytes::new()))
    };
    Ok(resp.expect("static response"))
}

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let listener = TcpListener::bind(addr).await.expect("bind");
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(s) => s,
                Err(_) => continue,
            };
            let _ = stream.set_nodelay(true);
            tokio::task::spawn(async move {
                let _ = http1::Builder::new()
                    .pipeline_flush(true)
                    .serve_connection(TokioIo::new(stream), service_fn(handle))
                    .await;
            });
        }
    });
}
