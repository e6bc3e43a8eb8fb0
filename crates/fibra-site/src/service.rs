//! [`SiteService`]: one server's requests to their site and route. Per request: the served
//! configuration (the worker's snapshot, [`Live::snapshot`]), the address's group, the site
//! by `Host` (421 when TLS's SNI chose another), the route by the decoded path, then the
//! route.

use std::borrow::Cow;
use std::sync::Arc;

use fibra_http::http::{header, HeaderValue, StatusCode};
use fibra_http::tls::ChooseConfig;
use fibra_http::{Request, Response, Service};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::action::{set_path, status_response};
use crate::live::Live;
use crate::normalize::normalize;
use crate::sites::{Group, Mode, Site, Sites};

/// Where ACME's http-01 challenges are asked for.
pub const ACME_CHALLENGE_PREFIX: &str = "/.well-known/acme-challenge/";

/// The service of one server: its acceptors' addresses as slots of [`Live`].
pub struct SiteService {
    live: Arc<Live>,
    /// Slot of each acceptor (index: `Request::listener`).
    slots: Box<[usize]>,

    /// Count responses per site (metrics on).
    count: bool,
    /// Per acceptor: the `Alt-Svc` value of its address's HTTP/3 endpoint, if one runs
    /// (added to the answers of `http3 = true` sites).
    alt_svc: Box<[Option<HeaderValue>]>,
}

impl SiteService {
    /// The service for a server whose acceptor `i` listens on the address of slot
    /// `slots[i]`.
    pub fn new(live: Arc<Live>, slots: Vec<usize>) -> SiteService {
        SiteService {
            live,
            slots: slots.into_boxed_slice(),
            count: false,
            alt_svc: Box::default(),
        }
    }

    /// The `Alt-Svc` value of each acceptor's address (index: `Request::listener`; `None`
    /// where no HTTP/3 endpoint runs). Answers of sites with `http3 = true` carry it.
    pub fn alt_svc(mut self, values: Vec<Option<HeaderValue>>) -> SiteService {
        self.alt_svc = values.into_boxed_slice();
        self
    }

    /// Counts each site's responses by status class ([`crate::sites::SiteCounters`]).
    pub fn counting(mut self, count: bool) -> SiteService {
        self.count = count;
        self
    }

    fn answer(&self, sites: &Sites, req: Request) -> Response {
        let listener = req.listener();
        let slot = self.slots.get(listener).copied().unwrap_or(usize::MAX);
        let Some(group) = sites.group(slot) else {
            return status_response(StatusCode::NOT_FOUND);
        };
        if !group.tls {
            if let Some(r) = acme_challenge(sites, &req) {
                return r;
            }
        }
        let host = request_host(&req);
        let Some(i) = group.hosts.lookup(host) else {
            return status_response(StatusCode::NOT_FOUND);
        };
        if group.tls && misdirected(group, i, &req) {
            return status_response(StatusCode::MISDIRECTED_REQUEST);
        }
        let site = &group.sites[i];
        if site.http3 {
            return self.answer_advertised(site, listener, req);
        }
        if !self.count {
            // Straight back: the response is not held here to be counted.
            return answer_site(site, req);
        }
        let resp = answer_site(site, req);
        site.counters.count(resp.status().as_u16());
        resp
    }

    /// The answer of an `http3 = true` site, with the address's `Alt-Svc` (out of line: the
    /// other sites' path stays as it was).
    #[inline(never)]
    fn answer_advertised(&self, site: &Site, listener: usize, req: Request) -> Response {
        let mut resp = answer_site(site, req);
        if let Some(v) = self.alt_svc.get(listener).and_then(Option::as_ref) {
            if !resp.headers().contains_key(header::ALT_SVC) {
                resp.headers_mut().insert(header::ALT_SVC, v.clone());
            }
        }
        if self.count {
            site.counters.count(resp.status().as_u16());
        }
        resp
    }
}

/// `site`'s answer to `req`.
#[inline(always)]
fn answer_site(site: &Site, req: Request) -> Response {
    match site.mode {
        Mode::Serve => serve(site, req),
        // The host is looked up again only here (sites that redirect serve nothing else).
        Mode::RedirectHttps { port } => redirect_https(&req, request_host(&req), port),
    }
}

/// The answer to ACME's http-01 challenge request, while its challenge is pending (on every
/// plain-HTTP address: the CA asks on port 80 whatever the site's addresses).
fn acme_challenge(sites: &Sites, req: &Request) -> Option<Response> {
    let acme = sites.acme.as_ref()?;
    let token = req.uri().path().strip_prefix(ACME_CHALLENGE_PREFIX)?;
    let body = acme.http01(token)?;
    let mut r = Response::new(
        fibra_http::ResponseBody::from(body)
            .with_content_type(HeaderValue::from_static("application/octet-stream")),
    );
    *r.status_mut() = StatusCode::OK;
    Some(r)
}

/// The host the request names (HTTP/2's `:authority` arrives as `Host`), as sent: the host
/// table compares bytes, and a name that is not ASCII names no site.
#[inline]
fn request_host(req: &Request) -> Option<&[u8]> {
    if let Some(a) = req.uri().authority() {
        return Some(a.as_str().as_bytes());
    }
    // The fields in order rather than the map's hash: nearly every client sends `Host`
    // first. (A second `Host` is refused by the parser, so the first is the one.)
    req.headers()
        .iter()
        .find(|(name, _)| *name == header::HOST)
        .map(|(_, v)| v.as_bytes())
}

/// Whether the site the `Host` names (`i`) is not the one TLS's SNI chose.
fn misdirected(group: &Group, i: usize, req: &Request) -> bool {
    match req.server_name() {
        Some(sni) => group.hosts.lookup(Some(sni.as_bytes())) != Some(i),
        None => false,
    }
}

fn serve(site: &Site, mut req: Request) -> Response {
    let raw = req.uri().path();
    let path = match normalize(raw) {
        Ok(p) => p,
        Err(_) => return status_response(StatusCode::BAD_REQUEST),
    };
    let Some(i) = site.table.lookup(&path) else {
        return status_response(StatusCode::NOT_FOUND);
    };
    if let Cow::Owned(decoded) = path {
        // The action sees the path the route matched (encoded again), not the raw one.
        let query = req.uri().query().map(str::to_owned);
        if set_path(&mut req, &encode_path(&decoded), query.as_deref()).is_err() {
            return status_response(StatusCode::BAD_REQUEST);
        }
    }
    site.routes[i].handle(req)
}

/// `decoded` with what a path may not hold literally percent-encoded.
fn encode_path(decoded: &str) -> String {
    let mut out = String::with_capacity(decoded.len());
    for &b in decoded.as_bytes() {
        let plain = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b);
        if plain {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The HTTPS URL of `req` on `port`: 301 for GET and HEAD, 308 for the others (the method and
/// body are kept); 400 without a host.
fn redirect_https(req: &Request, host: Option<&[u8]>, port: u16) -> Response {
    let host = host.map(crate::hosts::strip_port);
    let Some(host) = host.and_then(|h| std::str::from_utf8(h).ok()) else {
        return status_response(StatusCode::BAD_REQUEST);
    };
    let target = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
    let location = match port {
        443 => format!("https://{host}{target}"),
        p => format!("https://{host}:{p}{target}"),
    };
    let status = if req.is_get_or_head() {
        StatusCode::MOVED_PERMANENTLY
    } else {
        StatusCode::PERMANENT_REDIRECT
    };
    let mut r = status_response(status);
    match HeaderValue::try_from(location) {
        Ok(v) => {
            r.headers_mut().insert(header::LOCATION, v);
            r
        }
        Err(_) => status_response(StatusCode::BAD_REQUEST),
    }
}

impl Service for SiteService {
    fn call(&self, req: Request) -> Response {
        let sites = self.live.snapshot();
        self.answer(&sites, req)
    }

    /// No limit of the server's: each route sets its own (`max_body`, with
    /// `Body::limit`), and a route without one streams its body to its upstream (the
    /// other actions read no body).
    fn max_body_bytes(&self) -> Option<u64> {
        Some(u64::MAX)
    }
}

/// The certificates of the address in `slot` for QUIC handshakes: what [`choose_tls`]'s
/// configuration for the same ClientHello presents. (quinn-proto takes one rustls
/// configuration, so the choice is made per certificate rather than per configuration.)
pub fn quic_certs(live: Arc<Live>, slot: usize) -> Arc<dyn ResolvesServerCert> {
    Arc::new(QuicCerts(choose_tls(live, slot)))
}

/// [`quic_certs`]' resolver.
struct QuicCerts(Arc<ChooseConfig>);

impl std::fmt::Debug for QuicCerts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuicCerts")
    }
}

impl ResolvesServerCert for QuicCerts {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let config = (self.0)(&hello)?;
        config.cert_resolver.resolve(hello)
    }
}

/// The TLS configuration chooser of the address in `slot`: the site its SNI names (else the
/// default) gives the configuration; no site: the handshake is refused (`unrecognized_name`).
/// A ClientHello offering `acme-tls/1` (ACME's tls-alpn-01 validation) gets the challenge
/// configuration when the site file has ACME sites.
pub fn choose_tls(live: Arc<Live>, slot: usize) -> Arc<ChooseConfig> {
    Arc::new(move |hello: &rustls::server::ClientHello<'_>| {
        let sites = live.load();
        if let Some(challenge) = &sites.acme_tls {
            if fibra_acme::offers_acme_tls(hello) {
                return Some(challenge.clone());
            }
        }
        let group = sites.group(slot)?;
        let i = group.hosts.lookup(hello.server_name().map(str::as_bytes))?;
        let choose = group.sites[i].tls.as_ref()?;
        choose(hello)
    })
}

/// The access-log sink of a server: each entry goes to the log of the site that answered it
/// (by the acceptor's address and the entry's host), if that site has one.
pub struct SiteLogs {
    live: Arc<Live>,
    slots: Box<[usize]>,
}

impl SiteLogs {
    /// The sink for a server whose acceptor `i` listens on slot `slots[i]`.
    pub fn new(live: Arc<Live>, slots: Vec<usize>) -> SiteLogs {
        SiteLogs {
            live,
            slots: slots.into_boxed_slice(),
        }
    }
}

impl fibra_http::AccessLogSink for SiteLogs {
    fn log(&self, entry: &fibra_http::access_log::LogEntry<'_>) {
        let sites = self.live.snapshot();
        let Some(&slot) = self.slots.get(entry.listener) else {
            return;
        };
        let Some(group) = sites.group(slot) else {
            return;
        };
        if let Some(i) = group.hosts.lookup(entry.host) {
            if let Some(log) = &group.sites[i].log {
                log.log(entry);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_paths_are_encoded_again_where_needed() {
        assert_eq!(encode_path("/admin/x"), "/admin/x");
        assert_eq!(encode_path("/a b/é"), "/a%20b/%C3%A9");
        assert_eq!(encode_path("/q?#%"), "/q%3F%23%25");
    }
}
