//! [`Parts`]: what extractors read — the request and what the router matched for it.

use std::ops::{Deref, DerefMut};

use fibra_http::Request;

use crate::route_match::RouteMatch;

/// The request on its way to a handler, with the router's [`RouteMatch`]. Extractors that
/// read the head ([`FromRequestParts`](super::FromRequestParts)) get it by `&mut`; the last
/// argument's extractor ([`FromRequest`](super::FromRequest)) may take it whole, body and all.
///
/// It dereferences to the [`Request`], so the head reads as in a plain handler:
/// `parts.headers()`, `parts.uri()`, `parts.extensions_mut()`. An extractor of the head must
/// not read the body (only the last argument may take it).
pub struct Parts<'a> {
    request: Request,
    route: &'a RouteMatch<'a>,
}

impl<'a> Parts<'a> {
    /// `request`, as routed by `route`.
    pub fn new(request: Request, route: &'a RouteMatch<'a>) -> Self {
        Parts { request, route }
    }
    /// What the router matched.
    pub fn route(&self) -> &RouteMatch<'a> {
        self.route
    }
    /// The request, body included.
    pub fn into_request(self) -> Request {
        self.request
    }
}

impl Deref for Parts<'_> {
    type Target = Request;
    fn deref(&self) -> &Request {
        &self.request
    }
}

impl DerefMut for Parts<'_> {
    fn deref_mut(&mut self) -> &mut Request {
        &mut self.request
    }
}

impl std::fmt::Debug for Parts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parts")
            .field("request", &self.request)
            .field("route", &self.route)
            .finish()
    }
}
