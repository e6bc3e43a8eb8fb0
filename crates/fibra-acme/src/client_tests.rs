//! The client's protocol handling against a scripted server: nonces, badNonce, registration
//! and the account URL.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use super::*;

/// A request as the scripted server saw it: method, URL, and the JWS's protected header and
/// payload, decoded.
#[derive(Debug)]
struct Seen {
    method: String,
    url: String,
    header: Value,
    payload: Option<Value>,
}

/// Answers requests with the responses it was given, in order, and records them.
#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Response>>,
    seen: Mutex<Vec<Seen>>,
}

impl Transport for Arc<Script> {
    fn send(&self, req: &Request<'_>) -> io::Result<Response> {
        let (header, payload) = if req.body.is_empty() {
            (Value::Null, None)
        } else {
            let jws: Value = serde_json::from_slice(req.body).unwrap();
            let decode = |k: &str| URL_SAFE_NO_PAD.decode(jws[k].as_str().unwrap()).unwrap();
            let payload = decode("payload");
            let payload = (!payload.is_empty()).then(|| serde_json::from_slice(&payload).unwrap());
            (
                serde_json::from_slice(&decode("protected")).unwrap(),
                payload,
            )
        };
        self.seen.lock().unwrap().push(Seen {
            method: req.method.to_owned(),
            url: req.url.to_owned(),
            header,
            payload,
        });
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .ok_or_else(|| io::Error::other("script exhausted"))
    }
}

fn answer(status: u16, headers: &[(&str, &str)], body: Value) -> Response {
    Response {
        status,
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        },
    }
}

fn directory() -> Response {
    answer(
        200,
        &[],
        json!({
            "newNonce": "https://ca/nonce",
            "newAccount": "https://ca/acct",
            "newOrder": "https://ca/order",
        }),
    )
}

fn client(script: &Arc<Script>, account: Option<&str>) -> Client {
    Client::new(
        Box::new(script.clone()),
        "https://ca/dir",
        vec!["mailto:admin@example.com".into()],
        AccountKey::generate().unwrap(),
        account.map(str::to_owned),
        None,
    )
}

fn problem(kind: &str) -> Value {
    json!({ "type": kind, "detail": "for the test" })
}

#[test]
fn registers_then_signs_with_kid_and_reuses_nonces() {
    let script = Arc::new(Script::default());
    script.answers.lock().unwrap().extend([
        directory(),
        answer(200, &[("Replay-Nonce", "n1")], Value::Null),
        answer(
            201,
            &[("Replay-Nonce", "n2"), ("Location", "https://ca/acct/7")],
            json!({ "status": "valid" }),
        ),
        answer(
            200,
            &[("Replay-Nonce", "n3")],
            json!({ "status": "pending" }),
        ),
    ]);
    let client = client(&script, None);
    let order = client.get("https://ca/order/1").unwrap();
    assert_eq!(order.json().unwrap()["status"], "pending");

    let seen = script.seen.lock().unwrap();
    let steps: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.url.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            ("GET", "https://ca/dir"),
            ("HEAD", "https://ca/nonce"),
            ("POST", "https://ca/acct"),
            ("POST", "https://ca/order/1"),
        ]
    );
    // newAccount: the JWK, the first nonce, the contact and the terms.
    let account = &seen[2];
    assert_eq!(account.header["nonce"], "n1");
    assert_eq!(account.header["url"], "https://ca/acct");
    assert_eq!(account.header["jwk"], client.key().jwk());
    assert_eq!(
        account.payload,
        Some(json!({ "termsOfServiceAgreed": true, "contact": ["mailto:admin@example.com"] }))
    );
    // Then the account URL as kid, the nonce of the last response, and POST-as-GET.
    let get = &seen[3];
    assert_eq!(get.header["kid"], "https://ca/acct/7");
    assert_eq!(get.header["nonce"], "n2");
    assert!(get.header.get("jwk").is_none());
    assert_eq!(get.payload, None);
}

#[test]
fn a_bad_nonce_is_retried_once_with_the_fresh_nonce() {
    let script = Arc::new(Script::default());
    script.answers.lock().unwrap().extend([
        directory(),
        answer(200, &[("Replay-Nonce", "n1")], Value::Null),
        answer(
            400,
            &[("Replay-Nonce", "n2")],
            problem("urn:ietf:params:acme:error:badNonce"),
        ),
        answer(200, &[("Replay-Nonce", "n3")], json!({})),
        // Twice in a row: the second one is the caller's error.
        answer(
            400,
            &[("Replay-Nonce", "n4")],
            problem("urn:ietf:params:acme:error:badNonce"),
        ),
        answer(
            400,
            &[("Replay-Nonce", "n5"), ("Retry-After", "7")],
            problem("urn:ietf:params:acme:error:badNonce"),
        ),
    ]);
    let client = client(&script, Some("https://ca/acct/1"));
    client.get("https://ca/authz/1").unwrap();
    {
        let seen = script.seen.lock().unwrap();
        assert_eq!(seen[2].header["nonce"], "n1");
        assert_eq!(seen[3].header["nonce"], "n2");
    }
    let err = client.get("https://ca/authz/1").unwrap_err();
    let inner = problem_of(&err).unwrap();
    assert_eq!(inner.problem.kind, "urn:ietf:params:acme:error:badNonce");
    assert_eq!(inner.retry_after, Some(std::time::Duration::from_secs(7)));
    assert_eq!(
        err.to_string(),
        "POST https://ca/authz/1: urn:ietf:params:acme:error:badNonce: for the test"
    );
    assert_eq!(script.seen.lock().unwrap().len(), 6);
}

#[test]
fn an_unknown_account_registers_again() {
    let script = Arc::new(Script::default());
    script.answers.lock().unwrap().extend([
        directory(),
        answer(200, &[("Replay-Nonce", "n1")], Value::Null),
        answer(
            400,
            &[("Replay-Nonce", "n2")],
            problem("urn:ietf:params:acme:error:accountDoesNotExist"),
        ),
        answer(
            201,
            &[("Replay-Nonce", "n3"), ("Location", "https://ca/acct/new")],
            json!({}),
        ),
        answer(200, &[("Replay-Nonce", "n4")], json!({})),
    ]);
    let client = client(&script, Some("https://ca/acct/lost"));
    client.get("https://ca/order/9").unwrap();
    let seen = script.seen.lock().unwrap();
    assert_eq!(seen[2].header["kid"], "https://ca/acct/lost");
    assert_eq!(seen[3].url, "https://ca/acct");
    assert_eq!(seen[4].header["kid"], "https://ca/acct/new");
    assert_eq!(client.account().unwrap(), "https://ca/acct/new");
}

#[test]
fn an_unreachable_directory_is_an_error_naming_it() {
    let script = Arc::new(Script::default());
    let client = client(&script, None);
    let err = client.get("https://ca/order/1").unwrap_err();
    assert_eq!(err.to_string(), "GET https://ca/dir: script exhausted");
}
