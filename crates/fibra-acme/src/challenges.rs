//! The challenges in progress, which the server answers while the CA validates them: an
//! http-01 token's key authorization, a tls-alpn-01 name's challenge certificate.
//!
//! An order's thread adds an entry just before it tells the CA to validate, and the
//! [`Answer`] it holds removes the entry when that challenge is over, so a server only ever
//! answers for a challenge that is pending.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rustls::sign::CertifiedKey;

/// The kinds of challenge this crate answers (RFC 8555 §8.3, RFC 8737).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChallengeKind {
    /// `tls-alpn-01`: the CA connects to port 443 offering ALPN `acme-tls/1` and checks a
    /// special self-signed certificate (see [`crate::AcmeResolver`]).
    TlsAlpn01,
    /// `http-01`: the CA fetches `http://<name>/.well-known/acme-challenge/<token>` on port
    /// 80 (see [`crate::Acme::http01`]).
    Http01,
}

impl ChallengeKind {
    /// The challenge `type` in ACME's JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ChallengeKind::TlsAlpn01 => "tls-alpn-01",
            ChallengeKind::Http01 => "http-01",
        }
    }
}

/// The answers of the pending challenges.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// http-01: token → key authorization.
    http: Mutex<HashMap<String, String>>,
    /// tls-alpn-01: lowercase name → challenge certificate.
    alpn: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl Pending {
    /// The key authorization for an http-01 `token`, while pending.
    pub(crate) fn http01(&self, token: &str) -> Option<String> {
        self.http.lock().unwrap().get(token).cloned()
    }

    /// The challenge certificate for `name`, while its tls-alpn-01 challenge is pending.
    pub(crate) fn tls_alpn01(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        self.alpn.lock().unwrap().get(&name).cloned()
    }

    /// Answers http-01 `token` with `key_authorization` until the returned guard drops.
    pub(crate) fn answer_http01(
        self: &Arc<Self>,
        token: &str,
        key_authorization: String,
    ) -> Answer {
        self.http
            .lock()
            .unwrap()
            .insert(token.to_owned(), key_authorization);
        Answer {
            pending: self.clone(),
            entry: Entry::Http(token.to_owned()),
        }
    }

    /// Answers tls-alpn-01 for `name` with `cert` until the returned guard drops.
    pub(crate) fn answer_tls_alpn01(
        self: &Arc<Self>,
        name: &str,
        cert: Arc<CertifiedKey>,
    ) -> Answer {
        let name = name.to_ascii_lowercase();
        self.alpn.lock().unwrap().insert(name.clone(), cert.clone());
        Answer {
            pending: self.clone(),
            entry: Entry::Alpn(name, cert),
        }
    }
}

/// One pending challenge's entry; dropping it stops the answers.
#[derive(Debug)]
pub(crate) struct Answer {
    pending: Arc<Pending>,
    entry: Entry,
}

#[derive(Debug)]
enum Entry {
    Http(String),
    /// The name and the certificate put there, so that a later order's certificate for
    /// the same name (another managed set) is not removed with it.
    Alpn(String, Arc<CertifiedKey>),
}

impl Drop for Answer {
    fn drop(&mut self) {
        match &self.entry {
            Entry::Http(token) => {
                self.pending.http.lock().unwrap().remove(token);
            }
            Entry::Alpn(name, cert) => {
                let mut alpn = self.pending.alpn.lock().unwrap();
                if alpn.get(name).is_some_and(|c| Arc::ptr_eq(c, cert)) {
                    alpn.remove(name);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_last_as_long_as_their_guard() {
        let pending = Arc::new(Pending::default());
        let guard = pending.answer_http01("tok", "tok.thumb".into());
        assert_eq!(pending.http01("tok").as_deref(), Some("tok.thumb"));
        assert_eq!(pending.http01("other"), None);
        drop(guard);
        assert_eq!(pending.http01("tok"), None);

        let first = crate::keys::alpn_challenge("a.example.com", "x.y").unwrap();
        let second = crate::keys::alpn_challenge("a.example.com", "z.w").unwrap();
        let g1 = pending.answer_tls_alpn01("A.example.com", first);
        assert!(pending.tls_alpn01("a.EXAMPLE.com.").is_some());
        let g2 = pending.answer_tls_alpn01("a.example.com", second.clone());
        drop(g1);
        let now = pending.tls_alpn01("a.example.com").unwrap();
        assert!(Arc::ptr_eq(&now, &second));
        drop(g2);
        assert!(pending.tls_alpn01("a.example.com").is_none());
    }
}
