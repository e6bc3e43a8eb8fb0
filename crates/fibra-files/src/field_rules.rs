//! [`FieldRules`]: header fields to set, add or remove on every response of a file server
//! (a site's `headers` rules: HSTS, CSP, `X-Frame-Options`…). They are rendered into the
//! cached heads of files once, so the hot path pays nothing for them; the other replies get
//! them as they are built.

use http::header::{HeaderName, HeaderValue};
use http::HeaderMap;

/// Fields to set (replacing), add (beside others of the name) and remove.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldRules {
    /// Set: replace any field of the name.
    pub set: Vec<(HeaderName, HeaderValue)>,
    /// Add: append beside any field of the name.
    pub add: Vec<(HeaderName, HeaderValue)>,
    /// Remove every field of the name.
    pub remove: Vec<HeaderName>,
}

impl FieldRules {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.add.is_empty() && self.remove.is_empty()
    }

    /// Applies the rules to `headers`: removals, then sets, then additions.
    pub fn apply(&self, headers: &mut HeaderMap) {
        for name in &self.remove {
            headers.remove(name);
        }
        for (name, value) in &self.set {
            headers.insert(name.clone(), value.clone());
        }
        for (name, value) in &self.add {
            headers.append(name.clone(), value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_then_set_then_add() {
        let mut h = HeaderMap::new();
        h.insert("etag", HeaderValue::from_static("\"x\""));
        h.insert("x-a", HeaderValue::from_static("old"));
        let rules = FieldRules {
            set: vec![(
                HeaderName::from_static("x-a"),
                HeaderValue::from_static("new"),
            )],
            add: vec![(
                HeaderName::from_static("x-a"),
                HeaderValue::from_static("more"),
            )],
            remove: vec![HeaderName::from_static("etag")],
        };
        rules.apply(&mut h);
        assert!(h.get("etag").is_none());
        let all: Vec<_> = h.get_all("x-a").iter().collect();
        assert_eq!(all, ["new", "more"]);
    }
}
