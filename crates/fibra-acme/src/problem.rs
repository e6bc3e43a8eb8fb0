//! ACME problem documents (RFC 8555 §6.7, RFC 7807): what the server says went wrong, carried
//! inside the `io::Error`s of this crate so that [`crate::Status`] can show them.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::time::Duration;

use serde_json::Value;

/// The `type` of the problem a request with a stale or unknown nonce gets; the request is
/// sent once more with the fresh nonce that came with it (§6.5).
pub(crate) const BAD_NONCE: &str = "urn:ietf:params:acme:error:badNonce";

/// The `type` for a `kid` the server does not know (its accounts were lost, as a restarted
/// Pebble's are): the key registers again.
pub(crate) const ACCOUNT_DOES_NOT_EXIST: &str = "urn:ietf:params:acme:error:accountDoesNotExist";

/// An ACME problem document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The `type` URI, e.g. `urn:ietf:params:acme:error:connection`.
    pub kind: String,
    /// The human-readable `detail`.
    pub detail: String,
    /// The HTTP status of the response that carried it; `None` for one found inside a
    /// resource (a failed challenge's `error`).
    pub status: Option<u16>,
    /// The `value` of the identifier a subproblem is about (§6.7.1).
    pub identifier: Option<String>,
    /// Problems about single identifiers of the request.
    pub subproblems: Vec<Problem>,
}

impl Problem {
    /// The problem described by the JSON `doc`, received with `status`. Missing fields are
    /// empty (a server that sends a bare error status still gets reported).
    pub(crate) fn from_json(doc: &Value, status: Option<u16>) -> Problem {
        let text = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let subproblems = doc
            .get("subproblems")
            .and_then(Value::as_array)
            .map(|subs| subs.iter().map(|s| Problem::from_json(s, None)).collect())
            .unwrap_or_default();
        Problem {
            kind: text("type"),
            detail: text("detail"),
            status,
            identifier: doc
                .get("identifier")
                .and_then(|i| i.get("value"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            subproblems,
        }
    }

    /// The problem of an error response: its JSON body, or for a body that is not one,
    /// a problem with no type and the start of the body as its detail.
    pub(crate) fn from_body(body: &[u8], status: u16) -> Problem {
        match serde_json::from_slice::<Value>(body) {
            Ok(doc) if doc.is_object() => Problem::from_json(&doc, Some(status)),
            _ => {
                let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
                Problem {
                    kind: String::new(),
                    detail: format!("HTTP {status}: {}", text.trim()),
                    status: Some(status),
                    identifier: None,
                    subproblems: Vec::new(),
                }
            }
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(id) = &self.identifier {
            write!(f, "{id}: ")?;
        }
        match (self.kind.is_empty(), self.detail.is_empty()) {
            (false, false) => write!(f, "{}: {}", self.kind, self.detail)?,
            (false, true) => f.write_str(&self.kind)?,
            (true, _) => f.write_str(&self.detail)?,
        }
        for sub in &self.subproblems {
            write!(f, "; {sub}")?;
        }
        Ok(())
    }
}

/// The error payload of a failure the server explained: what was being done, its problem
/// document, and the `Retry-After` it asked for.
#[derive(Debug)]
pub(crate) struct ProblemError {
    pub(crate) context: String,
    pub(crate) problem: Problem,
    pub(crate) retry_after: Option<Duration>,
}

impl fmt::Display for ProblemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.context.is_empty() {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "{}: {}", self.context, self.problem)
        }
    }
}

impl StdError for ProblemError {}

/// An `io::Error` carrying `problem`.
pub(crate) fn problem_error(problem: Problem, retry_after: Option<Duration>) -> io::Error {
    io::Error::other(ProblemError {
        context: String::new(),
        problem,
        retry_after,
    })
}

/// The problem an error carries, if any.
pub(crate) fn problem_of(e: &io::Error) -> Option<&ProblemError> {
    e.get_ref()?.downcast_ref::<ProblemError>()
}

/// `e` with `what` (the step that failed) in front of its message, keeping its kind and
/// any problem document.
pub(crate) fn context(e: io::Error, what: impl fmt::Display) -> io::Error {
    if problem_of(&e).is_some() {
        let kind = e.kind();
        let mut inner = e
            .into_inner()
            .and_then(|b| b.downcast::<ProblemError>().ok())
            .expect("checked above");
        inner.context = if inner.context.is_empty() {
            what.to_string()
        } else {
            format!("{what}: {}", inner.context)
        };
        return io::Error::new(kind, *inner);
    }
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn problems_read_and_print_with_their_type_and_detail() {
        let doc = json!({
            "type": "urn:ietf:params:acme:error:rejectedIdentifier",
            "detail": "Some identifiers were rejected",
            "subproblems": [{
                "type": "urn:ietf:params:acme:error:malformed",
                "detail": "Invalid underscore in DNS name",
                "identifier": { "type": "dns", "value": "_example.org" }
            }]
        });
        let p = Problem::from_body(doc.to_string().as_bytes(), 400);
        assert_eq!(p.kind, "urn:ietf:params:acme:error:rejectedIdentifier");
        assert_eq!(p.status, Some(400));
        assert_eq!(p.subproblems[0].identifier.as_deref(), Some("_example.org"));
        assert_eq!(
            p.to_string(),
            "urn:ietf:params:acme:error:rejectedIdentifier: Some identifiers were rejected; \
             _example.org: urn:ietf:params:acme:error:malformed: Invalid underscore in DNS name"
        );
        let html = Problem::from_body(b"<html>Bad Gateway</html>", 502);
        assert_eq!(html.to_string(), "HTTP 502: <html>Bad Gateway</html>");
    }

    #[test]
    fn context_keeps_the_problem() {
        let p = Problem::from_json(
            &json!({ "type": "urn:ietf:params:acme:error:connection", "detail": "refused" }),
            None,
        );
        let e = problem_error(p.clone(), Some(Duration::from_secs(3)));
        let e = context(context(e, "validating a.example"), "ordering");
        assert_eq!(
            e.to_string(),
            "ordering: validating a.example: urn:ietf:params:acme:error:connection: refused"
        );
        let inner = problem_of(&e).unwrap();
        assert_eq!(inner.problem, p);
        assert_eq!(inner.retry_after, Some(Duration::from_secs(3)));

        let plain = context(io::Error::from(io::ErrorKind::TimedOut), "fetching");
        assert_eq!(plain.kind(), io::ErrorKind::TimedOut);
        assert!(problem_of(&plain).is_none());
    }
}
