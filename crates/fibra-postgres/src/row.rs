//! [`Row`]: one row of a result, its columns decoded on demand from the binary format.

use crate::error::{Error, ErrorKind};
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::DataRowBody;
use postgres_types::{FromSql, Type};
use std::sync::Arc;

/// A row: the server's bytes for it and the statement's column types.
pub struct Row {
    columns: Arc<[Type]>,
    body: DataRowBody,
}

impl std::fmt::Debug for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Row")
            .field("columns", &self.columns)
            .finish()
    }
}

impl Row {
    pub(crate) fn new(columns: Arc<[Type]>, body: DataRowBody) -> Row {
        Row { columns, body }
    }

    /// The number of columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// Whether the row has no column.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The column types.
    pub fn columns(&self) -> &[Type] {
        &self.columns
    }

    /// Column `idx` as a `T`: an [`ErrorKind::Conversion`] error if there is no such column,
    /// its type is not one `T` reads, or the value does not decode (a NULL into a non-`Option`).
    pub fn try_get<'a, T: FromSql<'a>>(&'a self, idx: usize) -> Result<T, Error> {
        let conv = |m: String| Error::new(ErrorKind::Conversion, m);
        let ty = self
            .columns
            .get(idx)
            .ok_or_else(|| conv(format!("no column {idx} (the row has {})", self.len())))?;
        if !T::accepts(ty) {
            return Err(conv(format!(
                "column {idx} is {ty}, which {} does not read",
                std::any::type_name::<T>()
            )));
        }
        let range = self
            .body
            .ranges()
            .nth(idx)
            .map_err(|e| conv(format!("column {idx}: {e}")))?
            .ok_or_else(|| conv(format!("column {idx} missing from the row")))?;
        let raw = range.map(|r| &self.body.buffer()[r]);
        T::from_sql_nullable(ty, raw).map_err(|e| conv(format!("column {idx}: {e}")))
    }

    /// Column `idx` as a `T`.
    ///
    /// # Panics
    /// Where [`Row::try_get`] returns an error.
    pub fn get<'a, T: FromSql<'a>>(&'a self, idx: usize) -> T {
        match self.try_get(idx) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}
