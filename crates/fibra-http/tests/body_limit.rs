//! `Body::limit`: a handler lowers the most bytes its request's body may have; a body
//! declared longer, or one that grows past it as it arrives (chunked over HTTP/1.1, DATA over
//! HTTP/2), is answered with 413 by the server, and a body within it is read whole.

mod h2_util;
mod util;

use std::io::Read;
use std::time::Duration;

use fibra_http::{Request, Response, Settings};

fn limited(mut req: Request) -> Response {
    req.body_mut().limit(10);
    let mut body = Vec::new();
    match req.body_mut().read_to_end(&mut body) {
        Ok(n) => Response::new(format!("read {n}").into()),
        Err(e) => Response::new(format!("failed: {e}").into()),
    }
}

#[test]
fn a_lowered_limit_answers_413_over_http1_and_http2() {
    let server = util::start(Settings::default(), limited);
    let addr = server.addr;
    let post = |head: &str, body: &str| {
        util::send_and_read_to_close(
            addr,
            format!("POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{head}\r\n{body}")
                .as_bytes(),
        )
    };
    let ok = post("Content-Length: 5\r\n", "01234");
    assert!(
        ok.starts_with("HTTP/1.1 200") && ok.ends_with("read 5"),
        "{ok}"
    );
    let long = post("Content-Length: 11\r\n", "0123456789a");
    assert!(long.starts_with("HTTP/1.1 413"), "{long}");
    let chunked_ok = post("Transfer-Encoding: chunked\r\n", "5\r\n01234\r\n0\r\n\r\n");
    assert!(chunked_ok.ends_with("read 5"), "{chunked_ok}");
    let chunked_long = post(
        "Transfer-Encoding: chunked\r\n",
        "6\r\n012345\r\n6\r\n6789ab\r\n0\r\n\r\n",
    );
    assert!(chunked_long.starts_with("HTTP/1.1 413"), "{chunked_long}");

    let rt = h2_util::runtime();
    rt.block_on(async {
        let mut client = h2_util::client(addr).await;
        let (status, _, body) = h2_util::exchange(
            &mut client,
            http::Method::POST,
            "/",
            Some(bytes::Bytes::from_static(b"0123456789abcdef")),
        )
        .await;
        assert_eq!(status.as_u16(), 413, "{:?}", String::from_utf8_lossy(&body));
        let (status, _, body) = h2_util::exchange(
            &mut client,
            http::Method::POST,
            "/",
            Some(bytes::Bytes::from_static(b"01234")),
        )
        .await;
        assert_eq!((status.as_u16(), &body[..]), (200, &b"read 5"[..]));
    });
    drop(rt);
    server.shutdown(Duration::from_secs(5));
}
