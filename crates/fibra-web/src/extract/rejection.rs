//! Why an extractor refused a request: one type per extractor, each answering with its status
//! and a plain-text message (axum 0.8's texts).

use std::fmt;

use fibra_http::http::StatusCode;
use fibra_http::Response;

use crate::response::IntoResponse;

macro_rules! rejection {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            status: StatusCode,
            message: String,
        }

        impl $name {
            pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
                $name { status, message: message.into() }
            }
            /// The status the rejection answers with.
            pub fn status(&self) -> StatusCode {
                self.status
            }
            /// The text of the answer's body.
            pub fn body_text(&self) -> &str {
                &self.message
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.message)
            }
        }

        impl std::error::Error for $name {}

        impl IntoResponse for $name {
            fn into_response(self) -> Response {
                (self.status, self.message).into_response()
            }
        }
    )*};
}

rejection! {
    /// [`Path`](super::Path): a parameter that does not parse (400, naming the parameter and
    /// its value), or a handler whose `Path` type does not fit its route (500).
    PathRejection;
    /// [`Query`](super::Query): a query string that does not deserialize (400).
    QueryRejection;
    /// [`Json`](crate::Json): no JSON `Content-Type` (415), a syntax error (400), a value of
    /// the wrong shape (422), a body over the limit (413).
    JsonRejection;
    /// [`Form`](crate::Form): no urlencoded `Content-Type` (415), a query that does not
    /// deserialize (400), a body that does not (422), a body over the limit (413).
    FormRejection;
    /// `Bytes`, `Vec<u8>`: a body over the limit (413) or one that could not be read (400).
    BytesRejection;
    /// `String`: as [`BytesRejection`], or a body that is not UTF-8 (400).
    StringRejection;
    /// [`Extension`](crate::Extension): no extension of the type (500).
    ExtensionRejection;
    /// [`MatchedPath`](super::MatchedPath): no route matched (a fallback; 500).
    MatchedPathRejection;
    /// [`ConnectInfo`](super::ConnectInfo): the peer's address is not known (500).
    ConnectInfoRejection;
}

impl From<BytesRejection> for StringRejection {
    fn from(r: BytesRejection) -> Self {
        StringRejection::new(r.status, r.message)
    }
}

impl From<BytesRejection> for JsonRejection {
    fn from(r: BytesRejection) -> Self {
        JsonRejection::new(r.status, r.message)
    }
}

impl From<BytesRejection> for FormRejection {
    fn from(r: BytesRejection) -> Self {
        FormRejection::new(r.status, r.message)
    }
}
