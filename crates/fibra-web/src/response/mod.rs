//! Responses: anything a handler returns implements [`IntoResponse`] — text, bytes,
//! [`Json`](crate::Json), [`Html`], a [`StatusCode`], a [`Redirect`], tuples adding a status
//! and header fields, `Result`s of these — and [`Sse`] streams events from a fiber of its
//! own.
//!
//! ```
//! use fibra_web::http::StatusCode;
//! use fibra_web::response::{Html, IntoResponse, Redirect};
//!
//! fn created() -> impl IntoResponse {
//!     (StatusCode::CREATED, [("location", "/todos/7")], "created")
//! }
//! fn page() -> Html<&'static str> {
//!     Html("<h1>hello</h1>")
//! }
//! fn moved() -> Redirect {
//!     Redirect::permanent("/new")
//! }
//! ```

mod html;
mod into_response;
mod redirect;
pub mod sse;

pub use html::Html;
pub use into_response::{HeaderPartError, IntoResponse, IntoResponseParts};
pub use redirect::Redirect;
pub use sse::Sse;

pub use fibra_http::http::StatusCode;
pub use fibra_http::{Response, ResponseBody};
