//! One certificate, from order to chain (RFC 8555 §7.4): a new order for all the names, a
//! challenge answered for each pending authorization, the order finalized with a CSR of a new
//! key, and the chain downloaded.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::challenges::{Answer, ChallengeKind, Pending};
use crate::client::{retry_after, Client};
use crate::jws::b64url;
use crate::keys;
use crate::problem::{context, problem_error, Problem};
use crate::stop::Stop;
use crate::storage::StoredPair;

/// How long an authorization or an order may stay pending or processing before the
/// attempt is given up (and retried later, with backoff).
const POLL_LIMIT: Duration = Duration::from_secs(120);

/// The wait between polls when the server does not say (`Retry-After`); it doubles up to
/// [`POLL_MAX`].
const POLL_FIRST: Duration = Duration::from_secs(1);

/// The longest wait between two polls, whatever `Retry-After` says.
const POLL_MAX: Duration = Duration::from_secs(30);

/// What an attempt needs: the server, the challenge answers, and the settings.
pub(crate) struct Attempt<'a> {
    pub(crate) client: &'a Client,
    pub(crate) pending: &'a Arc<Pending>,
    /// The challenge kinds to use, in order of preference.
    pub(crate) kinds: &'a [ChallengeKind],
    pub(crate) profile: Option<&'a str>,
    pub(crate) stop: &'a Stop,
}

impl Attempt<'_> {
    /// Orders and downloads a certificate for `names`: the PEM chain and its new key.
    pub(crate) fn obtain(&self, names: &[String]) -> io::Result<StoredPair> {
        let directory = self.client.refresh_directory()?;
        let mut payload = json!({
            "identifiers": names
                .iter()
                .map(|n| json!({ "type": "dns", "value": n }))
                .collect::<Vec<_>>(),
        });
        if let Some(profile) = self.profile {
            payload["profile"] = Value::from(profile);
        }
        let response = self
            .client
            .post_kid(&directory.new_order, Some(&payload), None)
            .map_err(|e| context(e, "creating the order"))?;
        let order_url = response
            .header("location")
            .ok_or_else(|| invalid("the new order has no Location"))?
            .to_owned();
        let mut order = response.json()?;
        log::debug!("order {order_url} for {names:?}");

        for authz in strings(&order["authorizations"]) {
            self.authorize(&authz)?;
        }

        if order["status"] == "pending" {
            order = self.poll(&order_url, "the order")?;
        }
        check_status(&order, "ready", "the order")?;

        let (key_pem, csr) = keys::key_and_csr(names)?;
        let finalize = order["finalize"]
            .as_str()
            .ok_or_else(|| invalid("the order has no finalize URL"))?;
        let response = self
            .client
            .post_kid(finalize, Some(&json!({ "csr": b64url(csr) })), None)
            .map_err(|e| context(e, "finalizing the order"))?;
        order = response.json()?;
        if order["status"] != "valid" {
            order = self.poll(&order_url, "the order")?;
        }
        check_status(&order, "valid", "the order")?;

        let cert_url = order["certificate"]
            .as_str()
            .ok_or_else(|| invalid("the valid order has no certificate URL"))?;
        let chain = self
            .client
            .post_kid(cert_url, None, Some("application/pem-certificate-chain"))
            .map_err(|e| context(e, "downloading the certificate"))?;
        Ok(StoredPair {
            chain_pem: chain.body,
            key_pem: key_pem.into_bytes(),
        })
    }

    /// Has the authorization at `url` validated, unless it is already.
    fn authorize(&self, url: &str) -> io::Result<()> {
        let authz = self
            .client
            .get(url)
            .map_err(|e| context(e, "reading an authorization"))?
            .json()?;
        let name = authz["identifier"]["value"]
            .as_str()
            .unwrap_or("?")
            .to_owned();
        match authz["status"].as_str() {
            Some("valid") => return Ok(()),
            Some("pending") => {}
            other => {
                return Err(invalid(&format!(
                    "the authorization for {name} is {}",
                    other.unwrap_or("without status")
                )))
            }
        }
        let challenges = authz["challenges"].as_array().cloned().unwrap_or_default();
        let chosen = self.kinds.iter().find_map(|kind| {
            challenges
                .iter()
                .find(|c| c["type"] == kind.as_str())
                .map(|c| (*kind, c))
        });
        let Some((kind, challenge)) = chosen else {
            let offered: Vec<&str> = challenges
                .iter()
                .filter_map(|c| c["type"].as_str())
                .collect();
            let ours: Vec<&str> = self.kinds.iter().map(|k| k.as_str()).collect();
            return Err(invalid(&format!(
                "{name}: the server offers {offered:?}, none of the challenges configured ({ours:?})"
            )));
        };
        let (token, challenge_url) = match (challenge["token"].as_str(), challenge["url"].as_str())
        {
            (Some(t), Some(u)) => (t, u),
            _ => {
                return Err(invalid(&format!(
                    "{name}: a challenge without token or url"
                )))
            }
        };
        let key_authorization = self.client.key().key_authorization(token);
        let _answer: Answer = match kind {
            ChallengeKind::Http01 => self.pending.answer_http01(token, key_authorization),
            ChallengeKind::TlsAlpn01 => self
                .pending
                .answer_tls_alpn01(&name, keys::alpn_challenge(&name, &key_authorization)?),
        };
        log::info!("{name}: answering the {} challenge", kind.as_str());
        let step = format_args!("validating {name} ({})", kind.as_str()).to_string();
        self.client
            .post_kid(challenge_url, Some(&json!({})), None)
            .map_err(|e| context(e, &step))?;
        let authz = self.poll(url, &step)?;
        if authz["status"] == "valid" {
            return Ok(());
        }
        // The chosen challenge's error says why (§7.1.4); else the authorization's status.
        let error = elements(&authz["challenges"])
            .find(|c| c["type"] == kind.as_str() && c.get("error").is_some())
            .map(|c| c["error"].clone());
        match error {
            Some(doc) => Err(context(
                problem_error(Problem::from_json(&doc, None), None),
                step,
            )),
            None => Err(invalid(&format!(
                "{step}: the authorization is {}",
                authz["status"].as_str().unwrap_or("without status")
            ))),
        }
    }

    /// Reads the resource at `url` until it is no longer `pending` or `processing`,
    /// waiting as its `Retry-After` asks, within [`POLL_LIMIT`].
    fn poll(&self, url: &str, what: &str) -> io::Result<Value> {
        let deadline = Instant::now() + POLL_LIMIT;
        let mut wait = POLL_FIRST;
        loop {
            let response = self.client.get(url).map_err(|e| context(e, what))?;
            let doc = response.json()?;
            let status = doc["status"].as_str().unwrap_or("");
            if status != "pending" && status != "processing" {
                return Ok(doc);
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{what}: still {status} after {} s", POLL_LIMIT.as_secs()),
                ));
            }
            let asked = retry_after(&response).unwrap_or(wait);
            self.stop
                .sleep(asked.clamp(Duration::from_millis(200), POLL_MAX))?;
            wait = (wait * 2).min(POLL_MAX);
        }
    }
}

/// An error unless `doc`'s status is `want`: the resource's own problem document if it has
/// one (an invalid order's `error`).
fn check_status(doc: &Value, want: &str, what: &str) -> io::Result<()> {
    if doc["status"] == want {
        return Ok(());
    }
    let status = doc["status"].as_str().unwrap_or("without status");
    match doc.get("error") {
        Some(error) if error.is_object() => Err(context(
            problem_error(Problem::from_json(error, None), None),
            format_args!("{what} is {status}"),
        )),
        _ => Err(invalid(&format!("{what} is {status}, not {want}"))),
    }
}

/// The strings of a JSON array (none if it is not one).
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The elements of a JSON array (none if it is not one).
fn elements(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}
