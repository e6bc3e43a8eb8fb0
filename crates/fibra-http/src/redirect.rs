//! [`redirect_to_https`]: the handler of a plain HTTP listener that sends clients to HTTPS.
//! An application handler, not part of TLS: the plain server it runs on has none.

use http::header::{HeaderValue, CONNECTION, HOST, LOCATION};
use http::{Method, StatusCode};

use crate::request::Request;
use crate::response::{Response, ResponseBody};

/// A handler answering every request with a redirect to the same URL over HTTPS on port
/// `https_port`: `https://HOST[:PORT]/path?query`, where HOST is the request's host (the
/// authority of an absolute-form target, else the `Host` header) without its port, and
/// `:PORT` appears unless `https_port` is 443.
///
/// GET and HEAD get `301 Moved Permanently` (what sites usually send, and what every client
/// follows); other methods get `308 Permanent Redirect`, which tells the client to repeat the
/// same method and body (a 301 lets it turn a POST into a GET). A request without a host (an
/// HTTP/1.0 request without `Host`) gets `400 Bad Request`.
///
/// ```no_run
/// use fibra_http::redirect::redirect_to_https;
/// use fibra_http::Server;
///
/// // Plain HTTP on port 80 sends everyone to the HTTPS server on 443.
/// let redirect = Server::bind("0.0.0.0:80").serve(redirect_to_https(443))?;
/// # redirect.shutdown(std::time::Duration::from_secs(1));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn redirect_to_https(https_port: u16) -> impl Fn(Request) -> Response + Send + Sync + Clone {
    move |req: Request| redirect(&req, https_port)
}

fn status(code: StatusCode) -> Response {
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = code;
    r
}

fn redirect(req: &Request, https_port: u16) -> Response {
    let host = match req.uri().authority() {
        Some(a) => Some(a.as_str()),
        None => req.headers().get(HOST).and_then(|h| h.to_str().ok()),
    };
    let Some(host) = host.and_then(host_without_port) else {
        let mut r = status(StatusCode::BAD_REQUEST);
        r.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        return r;
    };
    let path = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
    let path = if path.starts_with('/') { path } else { "/" }; // `OPTIONS *`
    let location = match https_port {
        443 => format!("https://{host}{path}"),
        port => format!("https://{host}:{port}{path}"),
    };
    let Ok(location) = HeaderValue::try_from(location) else {
        return status(StatusCode::BAD_REQUEST);
    };
    let get = req.method() == Method::GET || req.method() == Method::HEAD;
    let mut r = status(if get {
        StatusCode::MOVED_PERMANENTLY
    } else {
        StatusCode::PERMANENT_REDIRECT
    });
    r.headers_mut().insert(LOCATION, location);
    r
}

/// `host[:port]` without the port (an IPv6 literal keeps its brackets), or `None` if empty or
/// holding anything but a host name or address (the parser checked `Host` already; this also
/// covers an absolute-form authority).
fn host_without_port(authority: &str) -> Option<&str> {
    let authority = authority.rsplit('@').next()?;
    let host = if authority.starts_with('[') {
        &authority[..=authority.find(']')?]
    } else {
        authority.split(':').next()?
    };
    let ok = |b: u8| b.is_ascii_alphanumeric() || b"-._[]:".contains(&b);
    (!host.is_empty() && host.bytes().all(ok)).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::host_without_port;

    #[test]
    fn hosts_lose_their_port() {
        assert_eq!(host_without_port("example.com"), Some("example.com"));
        assert_eq!(host_without_port("example.com:8080"), Some("example.com"));
        assert_eq!(host_without_port("[::1]:8080"), Some("[::1]"));
        assert_eq!(host_without_port("[::1]"), Some("[::1]"));
        assert_eq!(host_without_port(""), None);
        assert_eq!(host_without_port(":80"), None);
        assert_eq!(host_without_port("a b"), None);
    }
}
