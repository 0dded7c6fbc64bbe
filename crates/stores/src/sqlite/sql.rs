//! The SQL an SQLite store runs: statement text built once per table and
//! chunk size, value conversions, and the schema (created, checked and
//! migrated at open).

use super::{META_TABLE, SCHEMA_VERSION};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use std::path::Path;
use tiercache_engine::now_ms;

/// SQL text built once at open, for the table and the full chunk sizes.
pub(super) struct Sql {
    pub(super) select_full: String,
    pub(super) upsert_full: String,
    pub(super) delete_full: String,
    pub(super) count: String,
    pub(super) clear: String,
    pub(super) purge: String,
}

impl Sql {
    pub(super) fn new(table: &str, key_chunk: usize, row_chunk: usize) -> Sql {
        let t = quote(table);
        Sql {
            select_full: select_sql(table, key_chunk),
            upsert_full: upsert_sql(table, row_chunk),
            delete_full: delete_sql(table, key_chunk),
            count: format!("SELECT count(*) FROM {t} WHERE expires_at IS NULL OR expires_at > ?1"),
            clear: format!("DELETE FROM {t}"),
            purge: format!("DELETE FROM {t} WHERE expires_at IS NOT NULL AND expires_at <= ?1"),
        }
    }
}

pub(super) fn quote(ident: &str) -> String {
    // Names are validated to identifier characters; quoting still keeps SQL
    // keywords (a table called `order`) working.
    format!("\"{ident}\"")
}

pub(super) fn placeholders(n: usize, per_row: usize) -> String {
    let row = if per_row == 1 {
        "?".to_string()
    } else {
        format!("({})", vec!["?"; per_row].join(","))
    };
    vec![row.as_str(); n].join(",")
}

pub(super) fn select_sql(table: &str, n: usize) -> String {
    format!(
        "SELECT key, value, expires_at, flags FROM {} WHERE key IN ({})",
        quote(table),
        placeholders(n, 1)
    )
}

pub(super) fn upsert_sql(table: &str, rows: usize) -> String {
    format!(
        "INSERT INTO {}(key, value, expires_at, flags) VALUES {} \
         ON CONFLICT(key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, \
         flags = excluded.flags",
        quote(table),
        placeholders(rows, 4)
    )
}

pub(super) fn delete_sql(table: &str, n: usize) -> String {
    format!(
        "DELETE FROM {} WHERE key IN ({})",
        quote(table),
        placeholders(n, 1)
    )
}

/// The smallest byte string greater than every string that starts with
/// `prefix`; `None` when there is none (the prefix is all `0xff`).
pub(super) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// SQLite integers are signed; expiries beyond `i64::MAX` ms are "never" in practice.
pub(super) fn expiry_to_sql(t: Option<u64>) -> Option<i64> {
    t.map(|t| i64::try_from(t).unwrap_or(i64::MAX))
}

pub(super) fn expiry_from_sql(t: Option<i64>) -> Option<u64> {
    t.map(|t| u64::try_from(t).unwrap_or(0))
}

pub(super) fn now_sql() -> i64 {
    expiry_to_sql(Some(now_ms())).unwrap_or(i64::MAX)
}

/// Checks that `table` is a plain identifier, so it can be spliced into SQL.
pub(super) fn validate_table(table: &str) -> Result<(), String> {
    let mut chars = table.chars();
    let first_ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "invalid table name {table:?}: use ASCII letters, digits and '_', not starting with a digit"
        ));
    }
    if table.len() > 64 {
        return Err(format!(
            "invalid table name {table:?}: longer than 64 characters"
        ));
    }
    if table.to_ascii_lowercase().starts_with("sqlite_") || table.eq_ignore_ascii_case(META_TABLE) {
        return Err(format!("invalid table name {table:?}: reserved name"));
    }
    Ok(())
}

pub(super) enum SchemaError {
    Sql(rusqlite::Error),
    Version(String),
}

impl From<rusqlite::Error> for SchemaError {
    fn from(e: rusqlite::Error) -> Self {
        SchemaError::Sql(e)
    }
}

/// Creates the meta table, checks or records the version, creates the entry table.
pub(super) fn init_schema(
    conn: &mut Connection,
    path: &Path,
    table: &str,
) -> Result<(), SchemaError> {
    // IMMEDIATE: two processes opening a fresh file must not both record a version.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        &format!("CREATE TABLE IF NOT EXISTS {META_TABLE} (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL)"),
        [],
    )?;
    let version: Option<i64> = tx
        .query_row(
            &format!("SELECT value FROM {META_TABLE} WHERE name = 'schema_version'"),
            [],
            |r| r.get(0),
        )
        .optional()?;
    match version {
        None => {
            tx.execute(
                &format!("INSERT INTO {META_TABLE} (name, value) VALUES ('schema_version', ?1)"),
                [SCHEMA_VERSION],
            )?;
        }
        Some(v) if v == SCHEMA_VERSION => {}
        // Version 1 lacks the flags column; it is added per table below.
        Some(1) => {
            tx.execute(
                &format!("UPDATE {META_TABLE} SET value = ?1 WHERE name = 'schema_version'"),
                [SCHEMA_VERSION],
            )?;
        }
        Some(v) => {
            return Err(SchemaError::Version(format!(
                "sqlite {}: schema version {v} is not supported (this build understands version {SCHEMA_VERSION}); \
                 was it written by a newer tiercache?",
                path.display()
            )));
        }
    }
    let t = quote(table);
    let index = quote(&format!("{table}_expires_at"));
    tx.execute(
        &format!(
            "CREATE TABLE IF NOT EXISTS {t} \
             (key BLOB PRIMARY KEY NOT NULL, value BLOB NOT NULL, expires_at INTEGER, \
              flags INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID"
        ),
        [],
    )?;
    // A table created by a version-1 build: add the column (existing rows get flags 0).
    let has_flags = tx
        .prepare(&format!(
            "SELECT 1 FROM pragma_table_info('{table}') WHERE name = 'flags'"
        ))?
        .exists([])?;
    if !has_flags {
        tx.execute(
            &format!("ALTER TABLE {t} ADD COLUMN flags INTEGER NOT NULL DEFAULT 0"),
            [],
        )?;
        tracing::info!(path = %path.display(), table, "migrated sqlite table: added the flags column");
    }
    // Partial: most entries never expire, and purge only looks at those that do.
    tx.execute(
        &format!(
            "CREATE INDEX IF NOT EXISTS {index} ON {t} (expires_at) WHERE expires_at IS NOT NULL"
        ),
        [],
    )?;
    tx.commit()?;
    Ok(())
}
