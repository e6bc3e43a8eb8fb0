//! [`CompressionLayer`]: brotli or gzip for responses held in memory, chosen by the request's
//! `Accept-Encoding`, with the file server's encoders
//! ([`fibra_files::compress::compress_bytes`]).
//!
//! ```
//! use fibra_web::middleware::compression::CompressionLayer;
//! use fibra_web::routing::get;
//! use fibra_web::test::TestClient;
//! use fibra_web::Router;
//!
//! let page = "<p>hello</p>".repeat(200);
//! let app: Router = Router::new()
//!     .route("/", get(move || fibra_web::response::Html(page.clone())))
//!     .layer(CompressionLayer::new());
//! let client = TestClient::new(app);
//! let res = client.get("/").header("accept-encoding", "gzip, br").send();
//! assert_eq!(res.header("content-encoding"), Some("br"));
//! assert_eq!(res.header("vary"), Some("accept-encoding"));
//! ```
//!
//! The coding: the one with the highest q-value among `br` and `gzip` (`x-gzip`), `*` standing
//! for those not named, `q=0` refusing; brotli when they tie. A response is compressed when
//! all of these hold:
//!
//! - its body is in memory (bytes, a string, JSON: what handlers return), of at least
//!   [`CompressionLayer::min_size`] bytes (default [`DEFAULT_MIN_SIZE`]). Streamed bodies,
//!   file ranges (sent with `sendfile`; the file server compresses its own) and upgrades are
//!   left as they are;
//! - its type compresses ([`fibra_files::compress::compressible`]: text, JSON, JavaScript,
//!   XML, SVG, …) and is not `text/event-stream` (server-sent events must not be buffered);
//! - it has no `Content-Encoding` or `Content-Range`, no `Cache-Control: no-transform`, and
//!   its status is not `1xx`, `204`, `206` or `304`;
//! - the request is not `HEAD` and has no `Range`, and accepts a coding.
//!
//! Such a response (save for the request conditions) gets `accept-encoding` added to its
//! `Vary` (unless it names it already), whether or not this client got it compressed; a
//! compressed one gets `Content-Encoding`, loses `Content-Length` and `Accept-Ranges` (they
//! describe the identity bytes), and a strong `ETag` becomes weak (`"x"` → `W/"x"`, as nginx
//! does: the compressed bytes are not the ones the tag names). A body that does not get
//! smaller is sent as it was. Bodies of [`OFFLOAD_BYTES`] or more are compressed on fibra's
//! blocking pool, so the worker's other fibers go on meanwhile.

use bytes::Bytes;
use fibra_files::compress::{compress_bytes, compressible};
use fibra_files::meta::Encoding;
use fibra_http::http::header::{self, HeaderValue};
use fibra_http::http::{Method, StatusCode};
use fibra_http::{Response, ResponseBody};

use super::Layer;
use crate::endpoint::Endpoint;

/// The default [`CompressionLayer::min_size`]: 860 bytes (below about a packet's worth, the
/// coding's header and the `Vary` cost more than they save).
pub const DEFAULT_MIN_SIZE: usize = 860;

/// Bodies at least this long are compressed on the blocking pool: 64 KiB.
pub const OFFLOAD_BYTES: usize = 64 * 1024;

/// The compression layer: see the module docs.
#[derive(Debug, Clone)]
pub struct CompressionLayer {
    min_size: usize,
    gzip_level: Option<u32>,
    brotli_quality: Option<u32>,
}

impl Default for CompressionLayer {
    fn default() -> Self {
        CompressionLayer {
            min_size: DEFAULT_MIN_SIZE,
            gzip_level: Some(6),
            brotli_quality: Some(4),
        }
    }
}

impl CompressionLayer {
    /// A layer making brotli (quality 4, tower-http's default: higher ones cost many times
    /// more per response) and gzip (level 6) for bodies of [`DEFAULT_MIN_SIZE`] bytes or more.
    pub fn new() -> Self {
        CompressionLayer::default()
    }
    /// Compresses only bodies of at least `bytes` bytes.
    pub fn min_size(mut self, bytes: usize) -> Self {
        self.min_size = bytes;
        self
    }
    /// gzip's level, 1 (fastest) to 9 (smallest).
    pub fn gzip_level(mut self, level: u32) -> Self {
        self.gzip_level = Some(level.clamp(1, 9));
        self
    }
    /// brotli's quality, 0 (fastest) to 11 (smallest).
    pub fn brotli_quality(mut self, quality: u32) -> Self {
        self.brotli_quality = Some(quality.min(11));
        self
    }
    /// Never makes gzip.
    pub fn no_gzip(mut self) -> Self {
        self.gzip_level = None;
        self
    }
    /// Never makes brotli.
    pub fn no_br(mut self) -> Self {
        self.brotli_quality = None;
        self
    }

    /// The coding and level for a request with this `Accept-Encoding`, if any.
    fn choose(&self, accept: Option<&HeaderValue>) -> Option<(Encoding, u32)> {
        let (br_q, gz_q) = accepted_q(accept?.as_bytes());
        let br = self.brotli_quality.filter(|_| br_q > 0);
        let gz = self.gzip_level.filter(|_| gz_q > 0);
        match (br, gz) {
            (Some(b), Some(_)) if br_q >= gz_q => Some((Encoding::Brotli, b)),
            (_, Some(g)) => Some((Encoding::Gzip, g)),
            (Some(b), None) => Some((Encoding::Brotli, b)),
            (None, None) => None,
        }
    }

    /// Whether `res` is one this layer compresses for a client that accepts it.
    fn eligible(&self, res: &Response) -> bool {
        let status = res.status();
        if status.is_informational()
            || matches!(
                status,
                StatusCode::NO_CONTENT | StatusCode::PARTIAL_CONTENT | StatusCode::NOT_MODIFIED
            )
        {
            return false;
        }
        let h = res.headers();
        if h.contains_key(header::CONTENT_ENCODING) || h.contains_key(header::CONTENT_RANGE) {
            return false;
        }
        let no_transform = h.get_all(header::CACHE_CONTROL).iter().any(|v| {
            v.as_bytes()
                .split(|&b| b == b',')
                .any(|d| d.trim_ascii().eq_ignore_ascii_case(b"no-transform"))
        });
        if no_transform {
            return false;
        }
        let Some(ct) = h.get(header::CONTENT_TYPE).or(res.body().content_type()) else {
            return false;
        };
        let is_sse = ct
            .as_bytes()
            .split(|&b| b == b';')
            .next()
            .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"text/event-stream"));
        if is_sse || !compressible(ct.as_bytes()) {
            return false;
        }
        res.body()
            .as_bytes()
            .is_some_and(|b| b.len() >= self.min_size)
    }
}

/// The q-values (in thousandths) of brotli and gzip in an `Accept-Encoding` value, `*`
/// standing for the one not named; 0 when not accepted. An item with a malformed q-value
/// is ignored.
fn accepted_q(value: &[u8]) -> (u16, u16) {
    let (mut br, mut gz, mut star) = (None, None, None);
    for item in value.split(|&b| b == b',') {
        let mut parts = item.split(|&b| b == b';');
        let coding = parts.next().unwrap_or_default().trim_ascii();
        let mut q = Some(1000);
        for p in parts {
            let p = p.trim_ascii();
            if p.len() >= 2 && p[..2].eq_ignore_ascii_case(b"q=") {
                q = parse_q(p[2..].trim_ascii());
            }
        }
        let Some(q) = q else { continue };
        if coding.eq_ignore_ascii_case(b"br") {
            br = Some(q);
        } else if coding.eq_ignore_ascii_case(b"gzip") || coding.eq_ignore_ascii_case(b"x-gzip") {
            gz = Some(q);
        } else if coding == b"*" {
            star = Some(q);
        }
    }
    (br.or(star).unwrap_or(0), gz.or(star).unwrap_or(0))
}

/// A qvalue (RFC 9110 §12.4.2: `0`, `1`, up to three decimals) in thousandths.
fn parse_q(q: &[u8]) -> Option<u16> {
    let (int, frac) = match q.iter().position(|&b| b == b'.') {
        Some(i) => (&q[..i], &q[i + 1..]),
        None => (q, &b""[..]),
    };
    if int.len() != 1 || frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v = match int[0] {
        b'0' => 0u16,
        b'1' => 1000,
        _ => return None,
    };
    for (i, d) in frac.iter().enumerate() {
        v += u16::from(d - b'0') * [100, 10, 1][i];
    }
    (v <= 1000).then_some(v)
}

/// `data` compressed, on the blocking pool when it is long.
fn compress(data: &[u8], encoding: Encoding, level: u32) -> Option<Vec<u8>> {
    if data.len() < OFFLOAD_BYTES {
        return compress_bytes(data, encoding, level);
    }
    let data = Bytes::copy_from_slice(data);
    fibra::task::spawn_blocking(move || compress_bytes(&data, encoding, level))
}

/// `res` with its body in `encoding`, if that is smaller.
fn encode(mut res: Response, encoding: Encoding, level: u32) -> Response {
    let Some(data) = res.body().as_bytes() else {
        return res;
    };
    let Some(out) = compress(data, encoding, level).filter(|o| o.len() < data.len()) else {
        return res;
    };
    let mut body = ResponseBody::from(out);
    if let Some(ct) = res.body().content_type() {
        body = body.with_content_type(ct.clone());
    }
    *res.body_mut() = body;
    let h = res.headers_mut();
    h.remove(header::CONTENT_LENGTH);
    h.remove(header::ACCEPT_RANGES);
    let coding = encoding.header().expect("a coding other than identity");
    h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
    if let Some(etag) = h.get(header::ETAG) {
        if etag.as_bytes().starts_with(b"\"") {
            let mut weak = b"W/".to_vec();
            weak.extend_from_slice(etag.as_bytes());
            if let Ok(v) = HeaderValue::from_bytes(&weak) {
                h.insert(header::ETAG, v);
            }
        }
    }
    res
}

impl Layer for CompressionLayer {
    fn layer<S: 'static>(&self, inner: Endpoint<S>) -> Endpoint<S> {
        let cfg = self.clone();
        Endpoint::new(move |req, route, state| {
            let skip = req.method() == Method::HEAD || req.headers().contains_key(header::RANGE);
            let choice = cfg.choose(req.headers().get(header::ACCEPT_ENCODING));
            let mut res = inner.call(req, route, state);
            if !cfg.eligible(&res) {
                return res;
            }
            let h = res.headers_mut();
            let varies = h.get_all(header::VARY).iter().any(|v| {
                v.as_bytes().split(|&b| b == b',').any(|f| {
                    let f = f.trim_ascii();
                    f == b"*" || f.eq_ignore_ascii_case(b"accept-encoding")
                })
            });
            if !varies {
                h.append(header::VARY, HeaderValue::from_static("accept-encoding"));
            }
            match choice {
                Some((encoding, level)) if !skip => encode(res, encoding, level),
                _ => res,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_values() {
        assert_eq!(parse_q(b"1"), Some(1000));
        assert_eq!(parse_q(b"1.000"), Some(1000));
        assert_eq!(parse_q(b"0.5"), Some(500));
        assert_eq!(parse_q(b"0.25"), Some(250));
        assert_eq!(parse_q(b"0"), Some(0));
        for bad in [&b"1.5"[..], b"2", b"0.1234", b"", b"x", b".5"] {
            assert_eq!(parse_q(bad), None, "{bad:?}");
        }
        assert_eq!(accepted_q(b"gzip, br"), (1000, 1000));
        assert_eq!(accepted_q(b"gzip;q=1.0, br;q=0.8"), (800, 1000));
        assert_eq!(accepted_q(b"*;q=0.3, gzip;q=0"), (300, 0));
        assert_eq!(accepted_q(b"identity"), (0, 0));
        assert_eq!(accepted_q(b"BR ; Q=0.9, x-gzip"), (900, 1000));
    }

    #[test]
    fn choice_prefers_br_on_ties_and_follows_q() {
        let c = CompressionLayer::new();
        let pick = |v: &'static str| c.choose(Some(&HeaderValue::from_static(v))).map(|x| x.0);
        assert_eq!(pick("gzip, br"), Some(Encoding::Brotli));
        assert_eq!(pick("gzip, br;q=0.5"), Some(Encoding::Gzip));
        assert_eq!(pick("gzip;q=0.1, br;q=0"), Some(Encoding::Gzip));
        assert_eq!(pick("deflate"), None);
        assert_eq!(c.choose(None), None);
        let gz_only = CompressionLayer::new().no_br();
        let v = HeaderValue::from_static("br, gzip;q=0.1");
        assert_eq!(gz_only.choose(Some(&v)).map(|x| x.0), Some(Encoding::Gzip));
    }
}
