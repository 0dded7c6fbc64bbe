//! What went wrong in one attempt at a PostgreSQL operation, and its
//! wording in the `StoreError` users see (server errors with their SQL
//! state, I/O causes, pool timeouts).

use std::time::Duration;
use tokio_postgres::error::SqlState;

/// What went wrong in one attempt, before it becomes a [`StoreError`].
pub(super) enum Failure {
    Pg(tokio_postgres::Error),
    Pool(deadpool_postgres::PoolError),
    Timeout(Duration),
    Schema(String),
}

impl Failure {
    /// Worth one more attempt: the connection broke (the server restarted),
    /// or the table is gone (dropped, or a server restored without it; the
    /// schema is created again first).
    pub(super) fn is_retryable(&self) -> bool {
        self.is_broken_connection()
            || matches!(self, Failure::Pg(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE))
    }

    /// A connection that broke under the operation (the server restarted
    /// or went away): it is not handed back to the pool.
    pub(super) fn is_broken_connection(&self) -> bool {
        match self {
            Failure::Pg(e) => e.is_closed() || io_error(e).is_some(),
            _ => false,
        }
    }
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Self {
        Failure::Pg(e)
    }
}

fn io_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        cur = err.source();
    }
    None
}

/// Names the class of a PostgreSQL error first, then the server's words.
pub(super) fn describe_pg(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let what = if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            "authentication failed"
        } else if *code == SqlState::QUERY_CANCELED {
            "timed out on the server (statement_timeout)"
        } else if code.code().starts_with("23") {
            "constraint violation"
        } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
            "permission denied"
        } else if *code == SqlState::UNDEFINED_DATABASE {
            "no such database"
        } else if *code == SqlState::TOO_MANY_CONNECTIONS {
            "too many connections"
        } else if code.code().starts_with("57P") {
            "the server is shutting down or restarting"
        } else {
            "server error"
        };
        return format!("{what}: {} (SQLSTATE {})", db.message(), code.code());
    }
    if let Some(io) = io_error(e) {
        return match io.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                format!("connection refused (is the server up?): {io}")
            }
            std::io::ErrorKind::TimedOut => format!("connecting timed out: {io}"),
            _ => format!("I/O error: {io}"),
        };
    }
    if e.is_closed() {
        return "connection closed (the server went away or restarted)".to_string();
    }
    let mut msg = e.to_string();
    let mut cur = std::error::Error::source(e);
    while let Some(s) = cur {
        msg.push_str(&format!(": {s}"));
        cur = s.source();
    }
    msg
}

pub(super) fn describe_pool(e: &deadpool_postgres::PoolError) -> String {
    use deadpool_postgres::PoolError;
    match e {
        PoolError::Backend(e) => describe_pg(e),
        PoolError::Timeout(_) => "timed out waiting for a connection".to_string(),
        PoolError::Closed => "the connection pool is closed".to_string(),
        other => other.to_string(),
    }
}
