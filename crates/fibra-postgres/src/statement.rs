//! [`Statement`]: SQL with its parameter types, prepared on each connection the first time it
//! runs there.

use postgres_types::Type;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A statement to prepare: its SQL and the types of its parameters (`$1`, `$2`, …).
///
/// Make it once (a `static` with `LazyLock`, or at start) and use it from any fiber: each
/// pooled connection prepares it the first time it runs there, in the same round trip as the
/// query, and runs it by name afterwards. Parameters are sent and columns received in binary.
///
/// ```
/// use fibra_postgres::{Statement, Type};
/// let world = Statement::new("SELECT id, randomnumber FROM world WHERE id = $1", &[Type::INT4]);
/// assert_eq!(world.params(), &[Type::INT4]);
/// ```
#[derive(Debug, Clone)]
pub struct Statement(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    id: u64,
    name: String,
    sql: String,
    params: Vec<Type>,
}

impl Statement {
    /// A statement with its parameter types, given in order.
    pub fn new(sql: &str, params: &[Type]) -> Statement {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        Statement(Arc::new(Inner {
            id,
            name: format!("fibra{id}"),
            sql: sql.to_string(),
            params: params.to_vec(),
        }))
    }

    /// The SQL.
    pub fn sql(&self) -> &str {
        &self.0.sql
    }

    /// The parameter types.
    pub fn params(&self) -> &[Type] {
        &self.0.params
    }

    /// A number unique in this process, the key of the connections' tables.
    pub(crate) fn id(&self) -> u64 {
        self.0.id
    }

    /// The name it is prepared under on the server.
    pub(crate) fn name(&self) -> &str {
        &self.0.name
    }
}
