//! The site file: TOML read into a checked [`Config`] (see `docs/CONFIG.md`), every error
//! reported at once with `file:line:column` and its key path; and the file equivalent to a
//! configuration ([`print`]).

mod check;
mod model;
mod print;
mod reader;
mod route_schema;
mod schema;
mod values;

use std::path::Path;

pub use model::*;
pub use print::print;
pub use reader::{format_duration, parse_bytes, parse_duration, ConfigError, ConfigErrors, Pos};

use toml::de::DeTable;

/// Reads and checks the site file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            at: Pos {
                file: path.to_path_buf(),
                line: 0,
                col: 0,
            },
            key: String::new(),
            message: format!("cannot read the site file: {e}"),
        }])
    })?;
    parse(path, &text)
}

/// Reads and checks `text`, the site file at `path` (for messages and relative paths).
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigErrors> {
    let mut r = reader::Reader::new(path, text);
    let (doc, syntax) = DeTable::parse_recoverable(text);
    for e in &syntax {
        let span = e.span().unwrap_or(0..0);
        r.error(span, "", format!("TOML syntax: {}", e.message().trim()));
    }
    if !syntax.is_empty() {
        return Err(ConfigErrors(r.into_errors()));
    }
    let config = schema::read(&mut r, doc.get_ref());
    let mut errors = r.into_errors();
    // The checks across sites too, on what could be read: one round of fixing for both.
    errors.extend(check::check(&config));
    errors.sort_by_key(|e| (e.at.line, e.at.col));
    match errors.is_empty() {
        true => Ok(config),
        false => Err(ConfigErrors(errors)),
    }
}

#[cfg(test)]
mod tests;
