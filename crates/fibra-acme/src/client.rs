//! The ACME server's resources (RFC 8555 §7): the directory, nonces, the account, and signed
//! requests with their retries.
//!
//! Every POST carries a fresh nonce (§6.5): the `Replay-Nonce` of an earlier response, or one
//! from `newNonce`. A `badNonce` answer brings a new nonce with it, and the request is sent
//! once more with it. The account registers on its first request (`newAccount` with the
//! contact and `termsOfServiceAgreed`, signed with the key's JWK); its URL then signs every
//! other request (`kid`) and is stored beside the key, so a restart reuses the account.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::{json, Value};

use crate::http::{Request, Response, Transport};
use crate::jws::{AccountKey, Signer};
use crate::problem::{
    context, problem_error, problem_of, Problem, ACCOUNT_DOES_NOT_EXIST, BAD_NONCE,
};
use crate::retry::parse_retry_after;
use crate::storage::Storage;

/// The directory's URLs this crate uses (§7.1.1).
#[derive(Debug, Clone)]
pub(crate) struct Directory {
    pub(crate) new_nonce: String,
    pub(crate) new_account: String,
    pub(crate) new_order: String,
}

/// A client of one ACME server, for one account key.
pub(crate) struct Client {
    transport: Box<dyn Transport>,
    directory_url: String,
    contact: Vec<String>,
    key: AccountKey,
    /// Where the account URL is saved (none in unit tests).
    storage: Option<Arc<Storage>>,
    directory: Mutex<Option<Directory>>,
    /// Unused nonces from earlier responses, the newest last.
    nonces: Mutex<Vec<String>>,
    /// The account URL, once registered. Locked while registering, so that concurrent
    /// orders register once.
    account: Mutex<Option<String>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("directory_url", &self.directory_url)
            .field("account", &self.account.lock().unwrap())
            .finish_non_exhaustive()
    }
}

/// `Content-Type` of every signed request.
const JOSE: (&str, &str) = ("Content-Type", "application/jose+json");

impl Client {
    /// A client of the server at `directory_url`, signing with `key`, which has registered
    /// as `account` if known.
    pub(crate) fn new(
        transport: Box<dyn Transport>,
        directory_url: &str,
        contact: Vec<String>,
        key: AccountKey,
        account: Option<String>,
        storage: Option<Arc<Storage>>,
    ) -> Client {
        Client {
            transport,
            directory_url: directory_url.to_owned(),
            contact,
            key,
            storage,
            directory: Mutex::new(None),
            nonces: Mutex::new(Vec::new()),
            account: Mutex::new(account),
        }
    }

    /// The account key.
    pub(crate) fn key(&self) -> &AccountKey {
        &self.key
    }

    fn send(&self, req: &Request<'_>) -> io::Result<Response> {
        let response = self
            .transport
            .send(req)
            .map_err(|e| context(e, format_args!("{} {}", req.method, req.url)))?;
        if let Some(nonce) = response.header("replay-nonce") {
            let mut nonces = self.nonces.lock().unwrap();
            nonces.push(nonce.to_owned());
            // A few are plenty; old ones may have expired anyway.
            if nonces.len() > 8 {
                nonces.remove(0);
            }
        }
        Ok(response)
    }

    /// Fetches the directory again (at the start of each order, so a change of the server's
    /// URLs is noticed).
    pub(crate) fn refresh_directory(&self) -> io::Result<Directory> {
        let req = Request {
            method: "GET",
            url: &self.directory_url,
            headers: &[],
            body: &[],
        };
        let response = self.send(&req)?;
        if response.status != 200 {
            let problem = Problem::from_body(&response.body, response.status);
            return Err(context(
                problem_error(problem, retry_after(&response)),
                format_args!("GET {}", self.directory_url),
            ));
        }
        let doc = response.json()?;
        let url = |k: &str| {
            doc.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}: the directory has no {k:?}", self.directory_url),
                    )
                })
        };
        let directory = Directory {
            new_nonce: url("newNonce")?,
            new_account: url("newAccount")?,
            new_order: url("newOrder")?,
        };
        *self.directory.lock().unwrap() = Some(directory.clone());
        Ok(directory)
    }

    /// The directory, fetched if it has not been.
    pub(crate) fn directory(&self) -> io::Result<Directory> {
        let known = self.directory.lock().unwrap().clone();
        match known {
            Some(d) => Ok(d),
            None => self.refresh_directory(),
        }
    }

    /// A nonce: an unused one from an earlier response, or a new one from `newNonce`.
    fn nonce(&self) -> io::Result<String> {
        if let Some(nonce) = self.nonces.lock().unwrap().pop() {
            return Ok(nonce);
        }
        let url = self.directory()?.new_nonce;
        let req = Request {
            method: "HEAD",
            url: &url,
            headers: &[],
            body: &[],
        };
        let response = self.send(&req)?;
        self.nonces.lock().unwrap().pop().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("HEAD {url}: no Replay-Nonce (HTTP {})", response.status),
            )
        })
    }

    /// A signed POST of `payload` (`None`: POST-as-GET) to `url`; an error status becomes an
    /// error carrying the problem document. Sent once more on `badNonce`.
    fn post(
        &self,
        url: &str,
        signer: Signer<'_>,
        payload: Option<&Value>,
        accept: Option<&str>,
    ) -> io::Result<Response> {
        let mut retried = false;
        loop {
            let body = self.key.sign(url, &self.nonce()?, signer, payload)?;
            let body = body.to_string();
            let mut headers = vec![JOSE];
            if let Some(accept) = accept {
                headers.push(("Accept", accept));
            }
            let req = Request {
                method: "POST",
                url,
                headers: &headers,
                body: body.as_bytes(),
            };
            let response = self.send(&req)?;
            if response.status < 400 {
                return Ok(response);
            }
            let problem = Problem::from_body(&response.body, response.status);
            if problem.kind == BAD_NONCE && !retried {
                log::debug!("POST {url}: bad nonce, sending again with a fresh one");
                retried = true;
                continue;
            }
            return Err(context(
                problem_error(problem, retry_after(&response)),
                format_args!("POST {url}"),
            ));
        }
    }

    /// The account URL, registering the key first if it has no account.
    pub(crate) fn account(&self) -> io::Result<String> {
        let mut account = self.account.lock().unwrap();
        if let Some(url) = &*account {
            return Ok(url.clone());
        }
        let directory = self.directory()?;
        let mut payload = json!({ "termsOfServiceAgreed": true });
        if !self.contact.is_empty() {
            payload["contact"] = json!(self.contact);
        }
        let response = self
            .post(&directory.new_account, Signer::Jwk, Some(&payload), None)
            .map_err(|e| context(e, "registering the account"))?;
        let url = response
            .header("location")
            .map(str::to_owned)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "registering the account: no Location in the answer",
                )
            })?;
        log::info!("ACME account {url} ({})", self.directory_url);
        if let Some(storage) = &self.storage {
            storage.save_account_url(Some(&url))?;
        }
        *account = Some(url.clone());
        Ok(url)
    }

    /// Forgets the account URL (the server no longer knows it).
    fn forget_account(&self) {
        *self.account.lock().unwrap() = None;
        if let Some(storage) = &self.storage {
            if let Err(e) = storage.save_account_url(None) {
                log::warn!("forgetting the ACME account: {e}");
            }
        }
    }

    /// A POST signed by the account (`kid`). If the server says the account does not exist
    /// the key registers again and the request is sent once more.
    pub(crate) fn post_kid(
        &self,
        url: &str,
        payload: Option<&Value>,
        accept: Option<&str>,
    ) -> io::Result<Response> {
        let kid = self.account()?;
        match self.post(url, Signer::Kid(&kid), payload, accept) {
            Err(e) if problem_of(&e).is_some_and(|p| p.problem.kind == ACCOUNT_DOES_NOT_EXIST) => {
                log::warn!("ACME account {kid} is unknown to the server; registering again");
                self.forget_account();
                let kid = self.account()?;
                self.post(url, Signer::Kid(&kid), payload, accept)
            }
            other => other,
        }
    }

    /// POST-as-GET of `url` (§6.3): reads a resource.
    pub(crate) fn get(&self, url: &str) -> io::Result<Response> {
        self.post_kid(url, None, None)
    }
}

/// The delay a response's `Retry-After` asks for.
pub(crate) fn retry_after(response: &Response) -> Option<std::time::Duration> {
    parse_retry_after(response.header("retry-after")?, SystemTime::now())
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
