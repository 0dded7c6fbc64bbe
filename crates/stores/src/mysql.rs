//! [`MysqlStore`]: a table in a MySQL or MariaDB database, over
//! `mysql_async`'s connection pool.
//!
//! Schema (created by the store on its first connection):
//!
//! ```sql
//! CREATE TABLE tiercache_meta (name VARCHAR(64) PRIMARY KEY, value BIGINT NOT NULL);
//! CREATE TABLE kv (`key` VARBINARY(1056) NOT NULL PRIMARY KEY, long_key MEDIUMBLOB,
//!     value LONGBLOB NOT NULL, expires_at BIGINT, flags BIGINT UNSIGNED NOT NULL DEFAULT 0,
//!     KEY kv_expires_at (expires_at)) ENGINE=InnoDB;
//! ```
//!
//! Same meaning as SQLite's table: `expires_at` is absolute Unix
//! milliseconds (NULL never expires), expired rows are never returned and
//! stay until [`Store::purge_expired`], `flags` holds the entry's 32-bit
//! client flags and, above them, its value kind (`flags | kind << 32`, see
//! [`ValueKind::pack_flags`]; strings store what older builds stored).
//! Binary columns compare bytewise, so `ORDER BY key` is byte order.
//!
//! Schema versions: 1 had `flags INT UNSIGNED`, too narrow for the kind; 2
//! widens it to `BIGINT UNSIGNED`. Opening a version-1 database migrates it
//! in place (`ALTER TABLE ... MODIFY flags`, per table, since several stores
//! may share a database) and records version 2, so older builds refuse it
//! rather than read a hash as a string.
//!
//! Long keys: InnoDB limits an index entry to 3072 bytes (less with small
//! pages), while a key may be up to 64 KiB. `key` holds the key itself up to
//! 1024 bytes, and for longer keys their first 1024 bytes and SHA-256, with
//! the whole key in `long_key` (see [`crate::sql_common`]). Every key
//! works, lookups stay primary-key lookups, and listings stay in byte order.
//!
//! Batches: reads are chunked `WHERE key IN (...)` of at most [`KEY_CHUNK`]
//! keys; writes are multi-row `INSERT ... ON DUPLICATE KEY UPDATE` of at most
//! [`ROW_CHUNK`] rows (or about 8 MiB of values) and chunked `DELETE ... IN`,
//! all in one transaction per call. A short chunk is padded (by repeating a
//! key) to the next power of two, so each connection prepares at most a
//! dozen statement shapes per operation. The server's
//! `max_allowed_packet` must exceed the largest value stored.
//!
//! Connections: the pool connects lazily, so a store can be built while the
//! server is down. A connection that breaks (server restarted) is dropped
//! and the operation retried once on a fresh one; a table that has
//! disappeared is created again and the operation retried once. Every
//! operation has a deadline ([`SqlOptions::timeout`]): past it, the
//! operation fails and its connection is closed; sessions also set
//! `lock_wait_timeout` and `innodb_lock_wait_timeout` to it (rounded up to
//! whole seconds), so the server stops waiting on locks too. Up to
//! `pool_size` idle connections are kept (a minute unused closes them), and
//! they are not reset when handed back, so their prepared statements last.

use crate::sql_common::{
    expiry_from_sql, expiry_to_sql, last_sets, long_key_column, real_key, scan_stored, split_batch,
    stored_key, unique, validate_table, ScanPage, ScanRow, SqlOptions, META_TABLE,
};
use async_trait::async_trait;
use bytes::Bytes;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Params, Pool, PoolConstraints, TxOpts, Value};
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::{now_ms, Entry, KeyStats, Mutation, Store, StoreError, ValueKind};
use tokio::time::{timeout_at, Instant};

/// The schema version this build writes and understands (in
/// `tiercache_meta`, name `mysql_schema_version`).
pub const SCHEMA_VERSION: i64 = 2;

/// Keys per `IN (...)` chunk (reads and deletes).
pub const KEY_CHUNK: usize = 1_024;

/// Rows per multi-row upsert (five parameters each).
pub const ROW_CHUNK: usize = 256;

/// A statement is also cut when its values pass this many bytes, to stay
/// under `max_allowed_packet` (16 MiB by default in MariaDB, 64 MiB in MySQL).
const CHUNK_BYTES: usize = 8 << 20;

/// MySQL identifiers have at most 64 characters; the index name adds 11.
const MAX_TABLE_LEN: usize = 52;

/// How long an idle connection stays open (unless the URL says otherwise).
const IDLE_TTL: Duration = Duration::from_secs(60);

/// Per-connection prepared statements kept: every padded shape of every
/// operation fits.
const STMT_CACHE: usize = 64;

/// A [`Store`] backed by one table of a MySQL or MariaDB database.
///
/// Cheap to clone; clones share the pool.
///
/// ```no_run
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use tiercache_engine::{Entry, Store};
/// use tiercache_stores::{MysqlStore, SqlOptions};
/// let store = MysqlStore::new(
///     "main",
///     "mysql://tiercache:secret@127.0.0.1:3306/cache",
///     "kv",
///     SqlOptions::default(),
/// )
/// .unwrap(); // nothing connects yet
/// store.set_many(&[("k".into(), Entry::new("v"))]).await.unwrap();
/// let got = store.get_many(&["k".into(), "absent".into()]).await.unwrap();
/// assert_eq!(got[0].as_ref().unwrap().value, "v");
/// assert!(got[1].is_none());
/// # });
/// ```
#[derive(Clone)]
pub struct MysqlStore {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    /// `host:port/db`, for errors (never the password).
    target: String,
    table: String,
    pool: Pool,
    timeout: Duration,
    /// Set once a connection has created (or checked) the schema; cleared
    /// when the table turns out to be missing.
    schema_ready: AtomicBool,
}

fn quote(ident: &str) -> String {
    format!("`{ident}`")
}

/// The padded size of a chunk of `n` items: the next power of two, capped.
fn padded(n: usize, cap: usize) -> usize {
    n.next_power_of_two().min(cap)
}

fn placeholders(n: usize, per_row: usize) -> String {
    let row = if per_row == 1 {
        "?".to_string()
    } else {
        format!("({})", vec!["?"; per_row].join(","))
    };
    vec![row.as_str(); n].join(",")
}

fn select_sql(table: &str, n: usize) -> String {
    format!(
        "SELECT `key`, long_key, value, expires_at, flags FROM {} \
         WHERE `key` IN ({}) AND (expires_at IS NULL OR expires_at > ?)",
        quote(table),
        placeholders(n, 1)
    )
}

fn upsert_sql(table: &str, rows: usize) -> String {
    // `VALUES(col)` rather than a row alias: MariaDB knows only the former
    // (MySQL 8 deprecates it but still runs it).
    format!(
        "INSERT INTO {} (`key`, long_key, value, expires_at, flags) VALUES {} \
         ON DUPLICATE KEY UPDATE long_key = VALUES(long_key), value = VALUES(value), \
         expires_at = VALUES(expires_at), flags = VALUES(flags)",
        quote(table),
        placeholders(rows, 5)
    )
}

fn delete_sql(table: &str, n: usize) -> String {
    format!(
        "DELETE FROM {} WHERE `key` IN ({})",
        quote(table),
        placeholders(n, 1)
    )
}

fn scan_sql(table: &str, page: &ScanPage) -> String {
    let mut sql = format!(
        "SELECT `key`, long_key FROM {} WHERE (expires_at IS NULL OR expires_at > ?)",
        quote(table)
    );
    match page.lower {
        Bound::Unbounded => {}
        Bound::Included(_) => sql.push_str(" AND `key` >= ?"),
        Bound::Excluded(_) => sql.push_str(" AND `key` > ?"),
    }
    if page.upper.is_some() {
        sql.push_str(" AND `key` < ?");
    }
    sql.push_str(" ORDER BY `key` LIMIT ?");
    sql
}

/// What went wrong in one attempt, before it becomes a [`StoreError`].
enum Failure {
    My(mysql_async::Error),
    Timeout(Duration),
    Schema(String),
}

impl From<mysql_async::Error> for Failure {
    fn from(e: mysql_async::Error) -> Self {
        Failure::My(e)
    }
}

impl Failure {
    /// Worth one more attempt: the connection broke (the server restarted),
    /// or the table is gone (error 1146; the schema is created again first).
    fn is_retryable(&self) -> bool {
        self.is_broken_connection()
            || matches!(self, Failure::My(mysql_async::Error::Server(s)) if s.code == 1146)
    }

    /// A connection that broke under the operation.
    fn is_broken_connection(&self) -> bool {
        matches!(
            self,
            Failure::My(mysql_async::Error::Io(_))
                | Failure::My(mysql_async::Error::Driver(
                    mysql_async::DriverError::ConnectionClosed
                ))
        )
    }
}

/// Names the class of a MySQL error first, then the server's words.
fn describe_my(e: &mysql_async::Error) -> String {
    use mysql_async::{Error, IoError};
    match e {
        Error::Server(s) => {
            let what = match s.code {
                1045 | 1698 => "authentication failed",
                1044 | 1142 | 1227 => "permission denied",
                1049 => "no such database",
                1040 | 1203 => "too many connections",
                1205 | 3572 => "timed out waiting for a lock",
                1969 | 3024 => "timed out on the server",
                1153 | 1301 => "packet too large (raise the server's max_allowed_packet)",
                1062 | 1216 | 1217 | 1451 | 1452 | 1048 | 3819 | 4025 => "constraint violation",
                1053 | 1927 | 4031 => "the server is shutting down or closed the connection",
                _ => "server error",
            };
            format!(
                "{what}: {} (error {}, SQLSTATE {})",
                s.message, s.code, s.state
            )
        }
        Error::Io(IoError::Io(io)) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                format!("connection refused (is the server up?): {io}")
            }
            std::io::ErrorKind::TimedOut => format!("connecting timed out: {io}"),
            std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::BrokenPipe => {
                format!("connection closed (the server went away or restarted): {io}")
            }
            _ => format!("I/O error: {io}"),
        },
        Error::Driver(mysql_async::DriverError::ConnectionClosed) => {
            "connection closed (the server went away or restarted)".to_string()
        }
        other => other.to_string(),
    }
}

/// Runs `$body` (which uses `$conn: &mut Conn`) under the store's deadline:
/// gets a connection (creating the schema on first use), retries once when
/// the connection broke, closes the connection on a timeout, and maps every
/// failure to a [`StoreError`] naming `$op`.
macro_rules! with_conn {
    ($self:ident, $op:literal, |$conn:ident| $body:expr) => {{
        let inner: &Inner = &$self.inner;
        let deadline = Instant::now() + inner.timeout;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome: Result<_, Failure> = match inner.conn(deadline).await {
                Err(f) => Err(f),
                Ok(object) => {
                    // Not every operation needs it mutable.
                    #[allow(unused_mut)]
                    let mut $conn = object;
                    let result = timeout_at(deadline, async { $body }).await;
                    match result {
                        Ok(Ok(v)) => Ok(v),
                        Ok(Err(e)) => {
                            let f = Failure::from(e);
                            inner.note_failure(&f);
                            Err(f)
                        }
                        Err(_) => {
                            close(&inner.name, $conn);
                            Err(Failure::Timeout(inner.timeout))
                        }
                    }
                }
            };
            match outcome {
                Ok(v) => break Ok(v),
                Err(f) if attempt == 1 && f.is_retryable() && Instant::now() < deadline => {
                    tracing::debug!(store = %inner.name, op = $op, "retrying once on a fresh connection or schema");
                }
                Err(f) => break Err(inner.error($op, &f)),
            }
        }
    }};
}

/// Closes a connection whose state is unknown (a statement may still be
/// running) instead of handing it back to the pool. In the background,
/// bounded: a hung server must not hold the caller.
fn close(store: &str, conn: Conn) {
    let store = store.to_string();
    tokio::spawn(async move {
        let closed = tokio::time::timeout(Duration::from_secs(5), conn.disconnect()).await;
        if !matches!(closed, Ok(Ok(()))) {
            tracing::debug!(%store, "closing a timed-out connection did not finish cleanly");
        }
    });
}

impl MysqlStore {
    /// A store for `table` in the database at `url`
    /// (`mysql://user:password@host:port/db`, with `mysql_async`'s URL
    /// parameters). Nothing connects yet: the first operation does, and
    /// creates the schema. Fails only on a bad URL or table name. `name` is
    /// the store's configured name, used in errors.
    pub fn new(
        name: &str,
        url: &str,
        table: &str,
        options: SqlOptions,
    ) -> Result<MysqlStore, StoreError> {
        validate_table(table, MAX_TABLE_LEN).map_err(|e| StoreError::new(name, e))?;
        let opts = Opts::from_url(url)
            .map_err(|e| StoreError::new(name, format!("mysql: invalid url: {e}")))?;
        let target = format!(
            "{}:{}/{}",
            opts.ip_or_hostname(),
            opts.tcp_port(),
            opts.db_name().unwrap_or("")
        );
        let timeout = options.effective_timeout();
        let lock_secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
        let lock_secs = lock_secs.max(1);
        let constraints = PoolConstraints::new(0, options.pool_size())
            .expect("0 <= pool size, which is at least 1");
        let mut setup = opts.setup().to_vec();
        setup.push(format!(
            "SET SESSION lock_wait_timeout = {lock_secs}, innodb_lock_wait_timeout = {lock_secs}"
        ));
        // No reset when a connection goes back to the pool: a reset drops
        // the connection's prepared statements (a re-prepare, one more round
        // trip, on every call) and its session settings, and this store
        // leaves no session state behind (transactions end in commit or
        // rollback, and mysql_async cleans up an interrupted one).
        let mut pool_opts = opts
            .pool_opts()
            .clone()
            .with_constraints(constraints)
            .with_reset_connection(false);
        // With no idle TTL, mysql_async keeps only `min` (0) idle
        // connections: every call would connect anew. Keep up to
        // `pool_size` idle ones, closed after a minute unused.
        if pool_opts.inactive_connection_ttl().is_zero() {
            pool_opts = pool_opts.with_inactive_connection_ttl(IDLE_TTL);
        }
        let builder = OptsBuilder::from_opts(opts)
            .pool_opts(pool_opts)
            .stmt_cache_size(STMT_CACHE)
            .setup(setup);
        Ok(MysqlStore {
            inner: Arc::new(Inner {
                name: name.to_string(),
                target,
                table: table.to_string(),
                pool: Pool::new(builder),
                timeout,
                schema_ready: AtomicBool::new(false),
            }),
        })
    }

    /// The table holding the entries.
    pub fn table(&self) -> &str {
        &self.inner.table
    }
}

impl std::fmt::Debug for MysqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MysqlStore")
            .field("name", &self.inner.name)
            .field("target", &self.inner.target)
            .field("table", &self.inner.table)
            .finish()
    }
}

impl Inner {
    fn error(&self, op: &str, failure: &Failure) -> StoreError {
        let cause = match failure {
            Failure::My(e) => describe_my(e),
            Failure::Timeout(t) => format!("timed out after {t:?}"),
            Failure::Schema(msg) => msg.clone(),
        };
        StoreError::new(
            &self.name,
            format!("mysql {} table {} ({op}): {cause}", self.target, self.table),
        )
    }

    /// Notes what a failure says about the schema.
    fn note_failure(&self, failure: &Failure) {
        if let Failure::My(mysql_async::Error::Server(s)) = failure {
            if s.code == 1146 {
                self.schema_ready.store(false, Ordering::Release);
            }
        }
    }

    /// A pooled connection, the schema created on first use.
    async fn conn(&self, deadline: Instant) -> Result<Conn, Failure> {
        let mut conn = match timeout_at(deadline, self.pool.get_conn()).await {
            Err(_) => return Err(Failure::Timeout(self.timeout)),
            Ok(r) => r?,
        };
        if !self.schema_ready.load(Ordering::Acquire) {
            match timeout_at(deadline, init_schema(&mut conn, &self.table)).await {
                Err(_) => {
                    close(&self.name, conn);
                    return Err(Failure::Timeout(self.timeout));
                }
                Ok(Err(f)) => return Err(f),
                Ok(Ok(())) => self.schema_ready.store(true, Ordering::Release),
            }
        }
        Ok(conn)
    }
}

/// Creates the meta table, checks or records the version, creates the
/// entry table. DDL commits implicitly in MySQL, so each step is safe to
/// race: `IF NOT EXISTS`, and `INSERT IGNORE` of the version.
async fn init_schema(conn: &mut Conn, table: &str) -> Result<(), Failure> {
    conn.query_drop(format!(
        "CREATE TABLE IF NOT EXISTS {META_TABLE} \
         (name VARCHAR(64) NOT NULL PRIMARY KEY, value BIGINT NOT NULL) ENGINE=InnoDB"
    ))
    .await?;
    conn.exec_drop(
        format!("INSERT IGNORE INTO {META_TABLE} (name, value) VALUES ('mysql_schema_version', ?)"),
        (SCHEMA_VERSION,),
    )
    .await?;
    let version: Option<i64> = conn
        .query_first(format!(
            "SELECT value FROM {META_TABLE} WHERE name = 'mysql_schema_version'"
        ))
        .await?;
    match version {
        None => {}
        Some(v) if v == SCHEMA_VERSION => {}
        // Version 1's flags column is 32 bits; each table is widened below.
        Some(1) => {
            conn.exec_drop(
                format!(
                    "UPDATE {META_TABLE} SET value = ? \
                     WHERE name = 'mysql_schema_version' AND value = 1"
                ),
                (SCHEMA_VERSION,),
            )
            .await?;
        }
        Some(v) => {
            return Err(Failure::Schema(format!(
                "schema version {v} is not supported (this build understands version \
                 {SCHEMA_VERSION}); was it written by a newer tiercache?"
            )));
        }
    }
    let index = quote(&format!("{table}_expires_at"));
    conn.query_drop(format!(
        "CREATE TABLE IF NOT EXISTS {} (`key` VARBINARY({}) NOT NULL PRIMARY KEY, \
         long_key MEDIUMBLOB NULL, value LONGBLOB NOT NULL, expires_at BIGINT NULL, \
         flags BIGINT UNSIGNED NOT NULL DEFAULT 0, KEY {index} (expires_at)) \
         ENGINE=InnoDB ROW_FORMAT=DYNAMIC",
        quote(table),
        crate::sql_common::STORED_LONG_LEN,
    ))
    .await?;
    // A table created by a version-1 build: widen flags (values are kept).
    let flags_type: Option<String> = conn
        .exec_first(
            "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = ? AND COLUMN_NAME = 'flags'",
            (table,),
        )
        .await?;
    if flags_type.is_some_and(|t| !t.eq_ignore_ascii_case("bigint")) {
        conn.query_drop(format!(
            "ALTER TABLE {} MODIFY flags BIGINT UNSIGNED NOT NULL DEFAULT 0",
            quote(table)
        ))
        .await?;
        tracing::info!(table, "migrated mysql table: widened the flags column");
    }
    Ok(())
}

/// One row of an upsert as parameters.
fn row_values(key: &Bytes, entry: &Entry) -> [Value; 5] {
    [
        Value::Bytes(stored_key(key).into_owned()),
        long_key_column(key).map_or(Value::NULL, |k| Value::Bytes(k.to_vec())),
        Value::Bytes(entry.value.to_vec()),
        expiry_to_sql(entry.expires_at).map_or(Value::NULL, Value::Int),
        Value::UInt(entry.kind.pack_flags(entry.flags)),
    ]
}

/// Writes `sets` then `deletes` in one transaction.
async fn write(
    conn: &mut Conn,
    table: &str,
    sets: &[(&Bytes, &Entry)],
    deletes: &[&Bytes],
) -> Result<(), mysql_async::Error> {
    let mut tx = conn.start_transaction(TxOpts::default()).await?;
    let mut start = 0;
    while start < sets.len() {
        let mut end = start;
        let mut bytes = 0;
        while end < sets.len() && end - start < ROW_CHUNK && (end == start || bytes < CHUNK_BYTES) {
            bytes += sets[end].1.value.len() + sets[end].0.len();
            end += 1;
        }
        let chunk = &sets[start..end];
        // Padding repeats the last row: the same upsert twice is harmless.
        let rows = padded(chunk.len(), ROW_CHUNK);
        let mut params = Vec::with_capacity(rows * 5);
        for i in 0..rows {
            let (k, e) = chunk[i.min(chunk.len() - 1)];
            params.extend(row_values(k, e));
        }
        tx.exec_drop(upsert_sql(table, rows), Params::Positional(params))
            .await?;
        start = end;
    }
    for chunk in deletes.chunks(KEY_CHUNK) {
        let n = padded(chunk.len(), KEY_CHUNK);
        let params: Vec<Value> = (0..n)
            .map(|i| Value::Bytes(stored_key(chunk[i.min(chunk.len() - 1)]).into_owned()))
            .collect();
        tx.exec_drop(delete_sql(table, n), Params::Positional(params))
            .await?;
    }
    tx.commit().await
}

type FoundRow = (Vec<u8>, Option<Vec<u8>>, Vec<u8>, Option<i64>, u64);

async fn get_many_on(
    conn: &mut Conn,
    table: &str,
    keys: &[Bytes],
) -> Result<Vec<Option<Entry>>, mysql_async::Error> {
    let unique = unique(keys);
    // One clock reading for the whole call, so one answer is self-consistent.
    let now = expiry_to_sql(Some(now_ms())).unwrap_or(i64::MAX);
    let mut found: HashMap<Vec<u8>, Entry> = HashMap::with_capacity(unique.len());
    for chunk in unique.chunks(KEY_CHUNK) {
        let n = padded(chunk.len(), KEY_CHUNK);
        let mut params: Vec<Value> = (0..n)
            .map(|i| Value::Bytes(stored_key(chunk[i.min(chunk.len() - 1)]).into_owned()))
            .collect();
        params.push(Value::Int(now));
        let rows: Vec<FoundRow> = conn
            .exec(select_sql(table, n), Params::Positional(params))
            .await?;
        for (stored, long_key, value, expires_at, packed) in rows {
            let (flags, kind) = ValueKind::unpack_flags(packed).ok_or_else(|| {
                mysql_async::Error::Other(format!("flags {packed}: unknown value kind").into())
            })?;
            found.insert(
                real_key(stored, long_key),
                Entry::with_kind(value, expiry_from_sql(expires_at), flags, kind),
            );
        }
    }
    Ok(keys.iter().map(|k| found.get(&k[..]).cloned()).collect())
}

#[async_trait]
impl Store for MysqlStore {
    fn name(&self) -> &str {
        &self.inner.name
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        with_conn!(self, "get_many", |conn| get_many_on(
            &mut conn,
            &self.inner.table,
            keys
        )
        .await)
    }

    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let sets = last_sets(entries);
        with_conn!(self, "set_many", |conn| write(
            &mut conn,
            &self.inner.table,
            &sets,
            &[]
        )
        .await)
    }

    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        if keys.is_empty() {
            return Ok(());
        }
        let deletes = unique(keys);
        with_conn!(self, "delete_many", |conn| write(
            &mut conn,
            &self.inner.table,
            &[],
            &deletes
        )
        .await)
    }

    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let (sets, deletes) = split_batch(batch);
        with_conn!(self, "apply", |conn| write(
            &mut conn,
            &self.inner.table,
            &sets,
            &deletes
        )
        .await)
    }

    async fn count(&self) -> Result<u64, StoreError> {
        let now = expiry_to_sql(Some(now_ms())).unwrap_or(i64::MAX);
        let sql = format!(
            "SELECT count(*) FROM {} WHERE expires_at IS NULL OR expires_at > ?",
            quote(&self.inner.table)
        );
        with_conn!(self, "count", |conn| conn
            .exec_first::<u64, _, _>(&sql, (now,))
            .await
            .map(|n| n.unwrap_or(0)))
    }

    async fn clear(&self) -> Result<(), StoreError> {
        let sql = format!("DELETE FROM {}", quote(&self.inner.table));
        with_conn!(self, "clear", |conn| conn.query_drop(&sql).await)
    }

    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        let now = expiry_to_sql(Some(now_ms)).unwrap_or(i64::MAX);
        with_conn!(self, "scan_keys", |conn| {
            // Each page borrows the connection in turn; a lock lends it
            // to the page futures `scan_stored` creates.
            let conn = tokio::sync::Mutex::new(&mut conn);
            scan_stored(start, prefix, limit, |page| {
                let conn = &conn;
                let table = &self.inner.table;
                async move {
                    let mut conn = conn.lock().await;
                    let sql = scan_sql(table, &page);
                    let mut params = vec![Value::Int(now)];
                    match page.lower {
                        Bound::Unbounded => {}
                        Bound::Included(v) | Bound::Excluded(v) => params.push(Value::Bytes(v)),
                    }
                    if let Some(v) = page.upper {
                        params.push(Value::Bytes(v));
                    }
                    params.push(Value::UInt(u64::try_from(page.limit).unwrap_or(u64::MAX)));
                    let rows: Vec<(Vec<u8>, Option<Vec<u8>>)> =
                        conn.exec(sql, Params::Positional(params)).await?;
                    Ok::<_, mysql_async::Error>(
                        rows.into_iter()
                            .map(|(stored, long_key)| ScanRow {
                                key: real_key(stored.clone(), long_key),
                                stored,
                            })
                            .collect(),
                    )
                }
            })
            .await
        })
    }

    async fn key_stats(&self, now_ms: u64) -> Result<KeyStats, StoreError> {
        let now = expiry_to_sql(Some(now_ms)).unwrap_or(i64::MAX);
        // CAST: avg() of a BIGINT is DECIMAL.
        let sql = format!(
            "SELECT count(*), count(expires_at), CAST(COALESCE(avg(expires_at - ?), 0) AS DOUBLE) \
             FROM {} WHERE expires_at IS NULL OR expires_at > ?",
            quote(&self.inner.table)
        );
        with_conn!(self, "key_stats", |conn| conn
            .exec_first::<(u64, u64, f64), _, _>(&sql, (now, now))
            .await
            .map(|row| {
                let (keys, expires, avg) = row.unwrap_or((0, 0, 0.0));
                KeyStats {
                    keys,
                    expires,
                    avg_ttl_ms: avg.max(0.0) as u64,
                }
            }))
    }

    async fn purge_expired(&self, now_ms: u64) -> Result<u64, StoreError> {
        let now = expiry_to_sql(Some(now_ms)).unwrap_or(i64::MAX);
        let sql = format!(
            "DELETE FROM {} WHERE expires_at IS NOT NULL AND expires_at <= ?",
            quote(&self.inner.table)
        );
        with_conn!(self, "purge_expired", |conn| async {
            conn.exec_drop(&sql, (now,)).await?;
            Ok::<_, mysql_async::Error>(conn.affected_rows())
        }
        .await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_pad_to_powers_of_two() {
        assert_eq!(padded(1, KEY_CHUNK), 1);
        assert_eq!(padded(3, KEY_CHUNK), 4);
        assert_eq!(padded(1000, KEY_CHUNK), 1024);
        assert_eq!(padded(200, ROW_CHUNK), 256);
    }

    #[test]
    fn sql_shapes() {
        assert!(select_sql("kv", 2).contains("WHERE `key` IN (?,?) AND"));
        assert!(upsert_sql("kv", 2).contains("VALUES (?,?,?,?,?),(?,?,?,?,?) ON DUPLICATE KEY"));
        let page = ScanPage {
            lower: Bound::Included(b"a".to_vec()),
            upper: Some(b"b".to_vec()),
            limit: 3,
        };
        assert!(
            scan_sql("kv", &page).ends_with("AND `key` >= ? AND `key` < ? ORDER BY `key` LIMIT ?")
        );
    }

    #[tokio::test]
    async fn bad_urls_and_tables_are_refused_without_connecting() {
        let opts = SqlOptions::default();
        let e = MysqlStore::new("s", "mysql://u@h/db", "kv`x", opts).unwrap_err();
        assert!(e.to_string().contains("invalid table name"), "{e}");
        let e = MysqlStore::new("s", "postgres://u:secret@h/db", "kv", opts).unwrap_err();
        assert!(e.to_string().contains("invalid url"), "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
        // A store for a server that is not there builds fine (lazy pool).
        MysqlStore::new("s", "mysql://u@127.0.0.1:1/db", "kv", opts).unwrap();
    }
}
