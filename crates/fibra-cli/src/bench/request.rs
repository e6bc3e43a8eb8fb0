//! Renders the one request `fibra bench` sends, once, before the run.
//!
//! Every connection writes the same bytes, so the request (repeated `--pipeline`
//! times for one write) is built here and shared read-only by all fibers.

use super::target::Target;

/// What goes into the request.
#[derive(Debug, Clone)]
pub struct RequestSpec<'a> {
    /// Method token, e.g. `GET`.
    pub method: &'a str,
    /// Target URL.
    pub target: &'a Target,
    /// Extra headers as `(name, value)`, in command-line order.
    pub headers: &'a [(String, String)],
    /// Request body, if any (sent with a `Content-Length`).
    pub body: Option<&'a [u8]>,
    /// Speak HTTP/1.0 instead of HTTP/1.1.
    pub http10: bool,
    /// Ask the server to keep the connection open.
    pub keep_alive: bool,
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// Renders one complete request. User headers override the defaults of the
/// same name (`Host`, `User-Agent`, `Connection`, `Content-Length`).
pub fn render(spec: &RequestSpec<'_>) -> Vec<u8> {
    let version = if spec.http10 { "HTTP/1.0" } else { "HTTP/1.1" };
    let mut head = format!("{} {} {}\r\n", spec.method, spec.target.path, version);
    if !has_header(spec.headers, "host") {
        head.push_str(&format!("Host: {}\r\n", spec.target.authority));
    }
    if !has_header(spec.headers, "user-agent") {
        head.push_str(concat!(
            "User-Agent: fibra-bench/",
            env!("CARGO_PKG_VERSION"),
            "\r\n"
        ));
    }
    if !has_header(spec.headers, "connection") {
        // HTTP/1.1 is persistent by default and HTTP/1.0 is not.
        match (spec.http10, spec.keep_alive) {
            (false, false) => head.push_str("Connection: close\r\n"),
            (true, true) => head.push_str("Connection: keep-alive\r\n"),
            _ => {}
        }
    }
    if let Some(body) = spec.body {
        if !has_header(spec.headers, "content-length") {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
    }
    for (name, value) in spec.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    if let Some(body) = spec.body {
        bytes.extend_from_slice(body);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target::parse("http://127.0.0.1:8080/x?y").unwrap()
    }

    #[test]
    fn http11_keep_alive_get() {
        let t = target();
        let spec = RequestSpec {
            method: "GET",
            target: &t,
            headers: &[],
            body: None,
            http10: false,
            keep_alive: true,
        };
        let req = String::from_utf8(render(&spec)).unwrap();
        assert!(req.starts_with("GET /x?y HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
        assert!(!req.contains("Connection"));
        assert!(req.ends_with("\r\n\r\n"));
    }

    #[test]
    fn connection_header_follows_version_and_keep_alive() {
        let t = target();
        let mut spec = RequestSpec {
            method: "GET",
            target: &t,
            headers: &[],
            body: None,
            http10: false,
            keep_alive: false,
        };
        assert!(String::from_utf8(render(&spec))
            .unwrap()
            .contains("Connection: close\r\n"));
        spec.http10 = true;
        let req = String::from_utf8(render(&spec)).unwrap();
        assert!(req.starts_with("GET /x?y HTTP/1.0\r\n"));
        assert!(!req.contains("Connection"));
        spec.keep_alive = true;
        assert!(String::from_utf8(render(&spec))
            .unwrap()
            .contains("Connection: keep-alive\r\n"));
    }

    #[test]
    fn user_headers_override_and_body_gets_length() {
        let t = target();
        let headers = vec![
            ("host".to_string(), "example".to_string()),
            ("X-A".to_string(), "1".to_string()),
        ];
        let spec = RequestSpec {
            method: "POST",
            target: &t,
            headers: &headers,
            body: Some(b"hello"),
            http10: false,
            keep_alive: true,
        };
        let req = String::from_utf8(render(&spec)).unwrap();
        assert!(!req.contains("Host: 127"));
        assert!(req.contains("host: example\r\n"));
        assert!(req.contains("X-A: 1\r\n"));
        assert!(req.contains("Content-Length: 5\r\n"));
        assert!(req.ends_with("\r\n\r\nhello"));
    }
}
