//! [`RouteMatch`]: what the router found for a request — the route's pattern, the raw values
//! of its path parameters, and the body limit the layers around the route set.

use std::sync::Arc;

/// The largest request body the body extractors (`Bytes`, `String`, `Json`, `Form`) read
/// unless a [`DefaultBodyLimit`](crate::extract::DefaultBodyLimit) layer says otherwise:
/// 2 MiB, as axum.
pub const DEFAULT_BODY_LIMIT: usize = 2 * 1024 * 1024;

/// What the router matched: see the module docs. Extractors read it through
/// [`Parts`](crate::extract::Parts).
#[derive(Debug, Clone, Default)]
pub struct RouteMatch<'r> {
    pattern: Option<&'r Arc<str>>,
    /// The parameters' raw (still percent-encoded) values, one after another.
    raw: String,
    /// Each parameter's name and where its value lies in `raw`.
    params: Vec<(&'r str, u32, u32)>,
    /// What a `DefaultBodyLimit` layer set (`None`: the default; `Some(None)`: no limit).
    body_limit: Option<Option<usize>>,
}

impl<'r> RouteMatch<'r> {
    /// A match of `pattern` with the parameters `params` found in the path.
    pub(crate) fn new(pattern: &'r Arc<str>, params: matchit::Params<'r, '_>) -> Self {
        let mut m = RouteMatch::without_params(pattern);
        if !params.is_empty() {
            m.params.reserve_exact(params.len());
            for (key, value) in params.iter() {
                let start = m.raw.len() as u32;
                m.raw.push_str(value);
                m.params.push((key, start, m.raw.len() as u32));
            }
        }
        m
    }

    /// A match of `pattern`, which has no parameters.
    #[inline]
    pub(crate) fn without_params(pattern: &'r Arc<str>) -> Self {
        RouteMatch {
            pattern: Some(pattern),
            ..RouteMatch::default()
        }
    }

    /// No route matched (the fallback answers).
    pub(crate) fn none() -> Self {
        RouteMatch::default()
    }

    /// The pattern of the matched route, e.g. `/users/{id}` (the whole pattern when the route
    /// came from a nested router); `None` when the fallback answers.
    pub fn pattern(&self) -> Option<&Arc<str>> {
        self.pattern
    }

    /// The path parameters, names with their raw (percent-encoded) values, in pattern order.
    /// A catch-all's value has no leading `/`.
    pub fn params(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.params
            .iter()
            .map(|&(k, s, e)| (k, &self.raw[s as usize..e as usize]))
    }

    /// The raw value of the parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// The limit the body extractors apply: [`DEFAULT_BODY_LIMIT`] unless a layer set one;
    /// `None` when a layer disabled it.
    pub fn body_limit(&self) -> Option<usize> {
        self.body_limit.unwrap_or(Some(DEFAULT_BODY_LIMIT))
    }

    /// Sets the body limit (the `DefaultBodyLimit` layer; the innermost layer runs last and
    /// wins).
    pub(crate) fn set_body_limit(&mut self, limit: Option<usize>) {
        self.body_limit = Some(limit);
    }

    /// How many path parameters the route has.
    pub fn param_count(&self) -> usize {
        self.params.len()
    }
}
