//! Trailer fields both ways, on HTTP/1.1 (a chunked body's trailer section) and HTTP/2 (a
//! trailing HEADERS frame): the handler reads the request's with `Body::trailers` once the
//! body has ended, and sends its own with `BodyWriter::set_trailers` on a streamed body
//! (on HTTP/1.1 with Title-Case names, like the head's).

mod h2_util;
mod util;

use std::io::Write;

use bytes::Bytes;
use fibra_http::{Request, Response, ResponseBody, Settings};
use http::{HeaderMap, HeaderValue, Method};

/// Echoes the body, and as trailers the request's trailer fields, the body's length, and a
/// `Content-Length` (not allowed in trailers: left out).
fn app(mut req: Request) -> Response {
    let before_end = req.body_mut().trailers();
    assert!(before_end.is_none() || req.method() == Method::GET);
    let body = req.body_mut().read_to_vec(1 << 20).unwrap();
    let mut trailers = req.body_mut().trailers().unwrap_or_default();
    assert!(
        req.body_mut().trailers().is_none(),
        "taken by the first call"
    );
    trailers.insert("x-body-len", HeaderValue::from(body.len()));
    trailers.insert("content-length", HeaderValue::from_static("999"));
    Response::new(ResponseBody::stream(move |w| {
        w.write_all(&body)?;
        w.set_trailers(trailers);
        Ok(())
    }))
}

/// Reads one chunked response, head to the end of its trailer section.
fn read_chunked_response(s: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut dump = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&dump);
        if let Some((_, tail)) = text.split_once("\r\n0\r\n") {
            if tail.ends_with("\r\n\r\n") || tail == "\r\n" {
                return text.into_owned();
            }
        }
        let n = s.read(&mut buf).expect("the response");
        assert!(n > 0, "closed early: {text}");
        dump.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn http1_trailers_both_ways() {
    let srv = util::start(Settings::default(), app);
    let mut s = util::connect(srv.addr);
    s.write_all(
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\nhello\r\n0\r\nX-Checksum: abc\r\nX-Checksum: def\r\n\r\n",
    )
    .unwrap();
    let dump = read_chunked_response(&mut s);
    assert!(dump.contains("Transfer-Encoding: chunked"), "{dump}");
    let (_, tail) = dump.split_once("\r\n0\r\n").expect("the last chunk");
    assert_eq!(
        tail, "X-Checksum: abc\r\nX-Checksum: def\r\nX-Body-Len: 5\r\n\r\n",
        "{dump}"
    );
    // No trailer section: none for the handler, still the body's length for the client.
    s.write_all(
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    )
    .unwrap();
    let dump = read_chunked_response(&mut s);
    assert!(dump.ends_with("\r\n0\r\nX-Body-Len: 2\r\n\r\n"), "{dump}");
}

#[test]
fn http2_trailers_both_ways() {
    let srv = util::start(Settings::default(), app);
    let rt = h2_util::runtime();
    rt.block_on(async {
        let send = h2_util::client(srv.addr).await;
        let mut send = send.ready().await.unwrap();
        let req = http::Request::builder()
            .method(Method::POST)
            .uri("http://localhost/")
            .body(())
            .unwrap();
        let (resp, mut stream) = send.send_request(req, false).unwrap();
        stream
            .send_data(Bytes::from_static(b"hello"), false)
            .unwrap();
        let mut trailers = HeaderMap::new();
        trailers.insert("x-checksum", HeaderValue::from_static("abc"));
        stream.send_trailers(trailers).unwrap();
        let resp = tokio::time::timeout(h2_util::CLIENT_TIMEOUT, resp)
            .await
            .expect("response in time")
            .unwrap();
        let mut body = resp.into_body();
        let mut got = Vec::new();
        while let Some(chunk) = body.data().await {
            got.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(got, b"hello");
        let t = body.trailers().await.unwrap().expect("trailers");
        assert_eq!(t["x-checksum"], "abc");
        assert_eq!(t["x-body-len"], "5");
        assert!(t.get("content-length").is_none());
    });
}
