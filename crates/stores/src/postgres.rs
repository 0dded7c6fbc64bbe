//! [`PostgresStore`]: a table in a PostgreSQL database, over a pool of
//! `tokio-postgres` connections (`deadpool-postgres`).
//!
//! Schema (created by the store on its first connection):
//!
//! ```sql
//! CREATE TABLE tiercache_meta (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
//! CREATE TABLE kv (key BYTEA PRIMARY KEY, long_key BYTEA, value BYTEA NOT NULL,
//!     expires_at BIGINT, flags BIGINT NOT NULL DEFAULT 0);
//! CREATE INDEX kv_expires_at ON kv (expires_at) WHERE expires_at IS NOT NULL;
//! ```
//!
//! Same meaning as SQLite's table: `expires_at` is absolute Unix
//! milliseconds (NULL never expires), expired rows are never returned and
//! stay until [`Store::purge_expired`], `flags` holds the entry's 32-bit
//! client flags and, above them, its value kind (`flags | kind << 32`, see
//! [`ValueKind::pack_flags`]; strings store what older builds stored). `key` is the key itself, or for keys over 1024 bytes its
//! head and SHA-256 with the whole key in `long_key` (PostgreSQL's B-tree
//! refuses entries over about 2.7 KB; see [`crate::sql_common`]).
//!
//! Batches: reads are one `WHERE key = ANY($1)` round trip whatever the
//! number of keys; writes are multi-row `INSERT ... ON CONFLICT (key) DO
//! UPDATE` statements (at most [`ROW_CHUNK`] rows or about 16 MiB each,
//! well under the protocol's 65,535 parameters) plus `DELETE ... = ANY`,
//! all in one transaction per call.
//!
//! Connections: the pool connects lazily, so a store can be built while the
//! server is down; the first connection that works creates the schema. A
//! connection that breaks (server restarted) is dropped and the operation
//! retried once on a fresh one; a table that has disappeared is created
//! again and the operation retried once. Every operation has a deadline
//! ([`SqlOptions::timeout`]): past it, the operation fails and its
//! connection is closed; the server also cancels statements that run longer
//! (`statement_timeout`).

use crate::sql_common::{
    expiry_from_sql, expiry_to_sql, last_sets, long_key_column, real_key, scan_stored, split_batch,
    stored_key, unique, validate_table, ScanRow, SqlOptions, META_TABLE,
};
use async_trait::async_trait;
use bytes::Bytes;
use deadpool_postgres::{ClientWrapper, Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::{now_ms, Entry, KeyStats, Mutation, Store, StoreError, ValueKind};
use tokio::time::{timeout_at, Instant};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::NoTls;

mod failure;
mod sql;

use failure::{describe_pg, describe_pool, Failure};
use sql::{quote, upsert_sql, Sql};

/// The schema version this build writes and understands (in
/// `tiercache_meta`, name `pg_schema_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// Rows per multi-row upsert (five parameters each).
pub const ROW_CHUNK: usize = 1_000;

/// A statement is also cut when its values pass this many bytes, so a batch
/// of large values does not become one huge message.
const CHUNK_BYTES: usize = 16 << 20;

/// Serialises schema creation across processes (`pg_advisory_xact_lock`):
/// `CREATE TABLE IF NOT EXISTS` is not safe to race in PostgreSQL.
const SCHEMA_LOCK: i64 = 0x7469_6572_6361_6368; // "tiercach"

/// PostgreSQL identifiers have at most 63 bytes; the index name adds 11.
const MAX_TABLE_LEN: usize = 52;

/// A [`Store`] backed by one table of a PostgreSQL database.
///
/// Cheap to clone; clones share the pool.
///
/// ```no_run
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use tiercache_engine::{Entry, Store};
/// use tiercache_stores::{PostgresStore, SqlOptions};
/// let store = PostgresStore::new(
///     "main",
///     "postgres://tiercache:secret@127.0.0.1:5432/cache",
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
pub struct PostgresStore {
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
    /// when the table turns out to be missing, so it is created again.
    schema_ready: AtomicBool,
    sql: Sql,
}

/// Keeps the URL's own `options` and adds the server-side statement timeout.
fn with_statement_timeout(config: &mut tokio_postgres::Config, timeout: Duration) {
    let ms = timeout.as_millis().max(1);
    let mut options = config.get_options().unwrap_or_default().to_string();
    if !options.is_empty() {
        options.push(' ');
    }
    options.push_str(&format!("-c statement_timeout={ms}"));
    config.options(&options);
}

fn target_of(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("{host}:{port}/{db}")
}

/// Runs `$body` (which uses `$client: &mut Object`) under the store's
/// deadline: gets a connection (creating the schema on first use), retries
/// once when the connection broke, closes the connection on a timeout, and
/// maps every failure to a [`StoreError`] naming `$op`.
macro_rules! with_client {
    ($self:ident, $op:literal, |$client:ident| $body:expr) => {{
        let inner: &Inner = &$self.inner;
        let deadline = Instant::now() + inner.timeout;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome: Result<_, Failure> = match inner.client(deadline).await {
                Err(f) => Err(f),
                Ok(object) => {
                    // Only the writes need it mutable.
                    #[allow(unused_mut)]
                    let mut $client = object;
                    let result = timeout_at(deadline, async { $body }).await;
                    match result {
                        Ok(Ok(v)) => Ok(v),
                        Ok(Err(e)) => {
                            let f = Failure::from(e);
                            inner.note_failure(&f);
                            if f.is_broken_connection() {
                                drop(Object::take($client));
                            }
                            Err(f)
                        }
                        Err(_) => {
                            // The connection's state is unknown (a statement
                            // may still be running): close it.
                            drop(Object::take($client));
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

impl PostgresStore {
    /// A store for `table` in the database at `url`
    /// (`postgres://user:password@host:port/db`, or any `tokio-postgres`
    /// connection string). Nothing connects yet: the first operation does,
    /// and creates the schema. Fails only on a bad URL or table name.
    /// `name` is the store's configured name, used in errors.
    pub fn new(
        name: &str,
        url: &str,
        table: &str,
        options: SqlOptions,
    ) -> Result<PostgresStore, StoreError> {
        validate_table(table, MAX_TABLE_LEN).map_err(|e| StoreError::new(name, e))?;
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            // The parser's message never repeats the URL (which may hold a password).
            StoreError::new(name, format!("postgres: invalid url: {e}"))
        })?;
        let timeout = options.effective_timeout();
        config.connect_timeout(timeout);
        if config.get_application_name().is_none() {
            config.application_name("tiercache");
        }
        with_statement_timeout(&mut config, timeout);
        let target = target_of(&config);
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size())
            .build()
            .map_err(|e| StoreError::new(name, format!("postgres {target}: {e}")))?;
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                name: name.to_string(),
                target,
                table: table.to_string(),
                pool,
                timeout,
                schema_ready: AtomicBool::new(false),
                sql: Sql::new(table),
            }),
        })
    }

    /// The table holding the entries.
    pub fn table(&self) -> &str {
        &self.inner.table
    }

    /// Connections open now (idle or in use).
    pub fn connections(&self) -> usize {
        self.inner.pool.status().size
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("name", &self.inner.name)
            .field("target", &self.inner.target)
            .field("table", &self.inner.table)
            .finish()
    }
}

impl Inner {
    fn error(&self, op: &str, failure: &Failure) -> StoreError {
        let cause = match failure {
            Failure::Pg(e) => describe_pg(e),
            Failure::Pool(e) => describe_pool(e),
            Failure::Timeout(t) => format!("timed out after {t:?}"),
            Failure::Schema(msg) => msg.clone(),
        };
        StoreError::new(
            &self.name,
            format!(
                "postgres {} table {} ({op}): {cause}",
                self.target, self.table
            ),
        )
    }

    /// Notes what a failure says about the schema.
    fn note_failure(&self, failure: &Failure) {
        if let Failure::Pg(e) = failure {
            if e.code() == Some(&SqlState::UNDEFINED_TABLE) {
                self.schema_ready.store(false, Ordering::Release);
            }
        }
    }

    /// A pooled connection, the schema created on first use.
    async fn client(&self, deadline: Instant) -> Result<Object, Failure> {
        let mut client = match timeout_at(deadline, self.pool.get()).await {
            Err(_) => return Err(Failure::Timeout(self.timeout)),
            Ok(Err(e)) => return Err(Failure::Pool(e)),
            Ok(Ok(c)) => c,
        };
        if !self.schema_ready.load(Ordering::Acquire) {
            match timeout_at(deadline, init_schema(&mut client, &self.table)).await {
                Err(_) => {
                    drop(Object::take(client));
                    return Err(Failure::Timeout(self.timeout));
                }
                Ok(Err(f)) => return Err(f),
                Ok(Ok(())) => self.schema_ready.store(true, Ordering::Release),
            }
        }
        Ok(client)
    }
}

/// Creates the meta table, checks or records the version, creates the
/// entry table and its index, all in one transaction under an advisory lock.
async fn init_schema(client: &mut ClientWrapper, table: &str) -> Result<(), Failure> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .await?;
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {META_TABLE} (name TEXT PRIMARY KEY, value BIGINT NOT NULL)"
    ))
    .await?;
    let row = tx
        .query_opt(
            &format!("SELECT value FROM {META_TABLE} WHERE name = 'pg_schema_version'"),
            &[],
        )
        .await?;
    match row.map(|r| r.get::<_, i64>(0)) {
        None => {
            tx.execute(
                &format!("INSERT INTO {META_TABLE} (name, value) VALUES ('pg_schema_version', $1)"),
                &[&SCHEMA_VERSION],
            )
            .await?;
        }
        Some(v) if v == SCHEMA_VERSION => {}
        Some(v) => {
            return Err(Failure::Schema(format!(
                "schema version {v} is not supported (this build understands version \
                 {SCHEMA_VERSION}); was it written by a newer tiercache?"
            )))
        }
    }
    let t = quote(table);
    let index = quote(&format!("{table}_expires_at"));
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {t} (key BYTEA PRIMARY KEY, long_key BYTEA, \
         value BYTEA NOT NULL, expires_at BIGINT, flags BIGINT NOT NULL DEFAULT 0); \
         CREATE INDEX IF NOT EXISTS {index} ON {t} (expires_at) WHERE expires_at IS NOT NULL"
    ))
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The `flags` column: client flags in the low 32 bits, the value kind above
/// ([`ValueKind::pack_flags`]). Decoding fails on an unknown kind, so a row
/// written by a newer build is an error, not a string.
struct PackedFlags(u32, ValueKind);

impl<'a> tokio_postgres::types::FromSql<'a> for PackedFlags {
    fn from_sql(
        ty: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let packed = i64::from_sql(ty, raw)?;
        let (flags, kind) = u64::try_from(packed)
            .ok()
            .and_then(ValueKind::unpack_flags)
            .ok_or_else(|| format!("flags {packed}: unknown value kind"))?;
        Ok(PackedFlags(flags, kind))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        <i64 as tokio_postgres::types::FromSql>::accepts(ty)
    }
}

/// One row of an upsert, as parameters.
struct RowParams<'a> {
    stored: Cow<'a, [u8]>,
    long_key: Option<&'a [u8]>,
    value: &'a [u8],
    expires_at: Option<i64>,
    flags: i64,
}

impl<'a> RowParams<'a> {
    fn new(key: &'a Bytes, entry: &'a Entry) -> Self {
        RowParams {
            stored: stored_key(key),
            long_key: long_key_column(key),
            value: &entry.value,
            expires_at: expiry_to_sql(entry.expires_at),
            flags: entry.kind.pack_flags(entry.flags) as i64,
        }
    }
}

/// Writes `sets` then `deletes` in one transaction.
async fn write(
    client: &mut ClientWrapper,
    sql: &Sql,
    table: &str,
    sets: &[(&Bytes, &Entry)],
    deletes: &[&Bytes],
) -> Result<(), tokio_postgres::Error> {
    let rows: Vec<RowParams<'_>> = sets.iter().map(|(k, e)| RowParams::new(k, e)).collect();
    let tx = client.transaction().await?;
    let mut start = 0;
    while start < rows.len() {
        // Up to ROW_CHUNK rows, fewer when the values are large.
        let mut end = start;
        let mut bytes = 0;
        while end < rows.len() && end - start < ROW_CHUNK && (end == start || bytes < CHUNK_BYTES) {
            bytes += rows[end].value.len() + rows[end].stored.len();
            end += 1;
        }
        let chunk = &rows[start..end];
        let stored: Vec<&[u8]> = chunk.iter().map(|r| &*r.stored).collect();
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(chunk.len() * 5);
        for (r, s) in chunk.iter().zip(&stored) {
            params.push(s);
            params.push(&r.long_key);
            params.push(&r.value);
            params.push(&r.expires_at);
            params.push(&r.flags);
        }
        if chunk.len() == ROW_CHUNK {
            let stmt = tx.prepare_cached(&sql.upsert_full).await?;
            tx.execute(&stmt, &params).await?;
        } else {
            tx.execute(&upsert_sql(table, chunk.len()), &params).await?;
        }
        start = end;
    }
    if !deletes.is_empty() {
        let stored: Vec<Cow<'_, [u8]>> = deletes.iter().map(|k| stored_key(k)).collect();
        let stored: Vec<&[u8]> = stored.iter().map(|s| &**s).collect();
        let stmt = tx.prepare_cached(&sql.delete).await?;
        tx.execute(&stmt, &[&stored]).await?;
    }
    tx.commit().await
}

async fn get_many_on(
    client: &ClientWrapper,
    sql: &Sql,
    keys: &[Bytes],
) -> Result<Vec<Option<Entry>>, tokio_postgres::Error> {
    let unique = unique(keys);
    let stored: Vec<Cow<'_, [u8]>> = unique.iter().map(|k| stored_key(k)).collect();
    let params: Vec<&[u8]> = stored.iter().map(|s| &**s).collect();
    // One clock reading for the whole call, so one answer is self-consistent.
    let now = expiry_to_sql(Some(now_ms())).unwrap_or(i64::MAX);
    let stmt = client.prepare_cached(&sql.select).await?;
    let rows = client.query(&stmt, &[&now, &params]).await?;
    let mut found: HashMap<Vec<u8>, Entry> = HashMap::with_capacity(rows.len());
    for row in rows {
        let stored: Vec<u8> = row.try_get(0)?;
        let long_key: Option<Vec<u8>> = row.try_get(1)?;
        let value: Vec<u8> = row.try_get(2)?;
        let expires_at: Option<i64> = row.try_get(3)?;
        let PackedFlags(flags, kind) = row.try_get(4)?;
        let key = real_key(stored, long_key);
        found.insert(
            key,
            Entry::with_kind(value, expiry_from_sql(expires_at), flags, kind),
        );
    }
    Ok(keys.iter().map(|k| found.get(&k[..]).cloned()).collect())
}

#[async_trait]
impl Store for PostgresStore {
    fn name(&self) -> &str {
        &self.inner.name
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        with_client!(self, "get_many", |client| get_many_on(
            &client,
            &self.inner.sql,
            keys
        )
        .await)
    }

    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let sets = last_sets(entries);
        with_client!(self, "set_many", |client| write(
            &mut client,
            &self.inner.sql,
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
        with_client!(self, "delete_many", |client| write(
            &mut client,
            &self.inner.sql,
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
        with_client!(self, "apply", |client| write(
            &mut client,
            &self.inner.sql,
            &self.inner.table,
            &sets,
            &deletes
        )
        .await)
    }

    async fn count(&self) -> Result<u64, StoreError> {
        let now = expiry_to_sql(Some(now_ms())).unwrap_or(i64::MAX);
        with_client!(self, "count", |client| async {
            let stmt = client.prepare_cached(&self.inner.sql.count).await?;
            let n: i64 = client.query_one(&stmt, &[&now]).await?.try_get(0)?;
            Ok::<_, tokio_postgres::Error>(u64::try_from(n).unwrap_or(0))
        }
        .await)
    }

    async fn clear(&self) -> Result<(), StoreError> {
        with_client!(self, "clear", |client| client
            .execute(&self.inner.sql.clear, &[])
            .await
            .map(drop))
    }

    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        let now = expiry_to_sql(Some(now_ms)).unwrap_or(i64::MAX);
        with_client!(self, "scan_keys", |client| scan_stored(
            start,
            prefix,
            limit,
            |page| {
                let client = &client;
                let table = &self.inner.table;
                async move {
                    let sql = Sql::scan(table, &page);
                    let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
                    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&now];
                    let lower = match &page.lower {
                        Bound::Unbounded => None,
                        Bound::Included(v) | Bound::Excluded(v) => Some(v),
                    };
                    if let Some(v) = &lower {
                        params.push(v);
                    }
                    if let Some(v) = &page.upper {
                        params.push(v);
                    }
                    params.push(&limit);
                    let stmt = client.prepare_cached(&sql).await?;
                    let rows = client.query(&stmt, &params).await?;
                    rows.into_iter()
                        .map(|row| {
                            let stored: Vec<u8> = row.try_get(0)?;
                            let long_key: Option<Vec<u8>> = row.try_get(1)?;
                            Ok(ScanRow {
                                key: real_key(stored.clone(), long_key),
                                stored,
                            })
                        })
                        .collect::<Result<Vec<_>, tokio_postgres::Error>>()
                }
            }
        )
        .await)
    }

    async fn key_stats(&self, now_ms: u64) -> Result<KeyStats, StoreError> {
        let now = expiry_to_sql(Some(now_ms)).unwrap_or(i64::MAX);
        with_client!(self, "key_stats", |client| async {
            let stmt = client.prepare_cached(&self.inner.sql.key_stats).await?;
            let row = client.query_one(&stmt, &[&now]).await?;
            let keys: i64 = row.try_get(0)?;
            let expires: i64 = row.try_get(1)?;
            let avg: f64 = row.try_get(2)?;
            Ok::<_, tokio_postgres::Error>(KeyStats {
                keys: u64::try_from(keys).unwrap_or(0),
                expires: u64::try_from(expires).unwrap_or(0),
                avg_ttl_ms: avg.max(0.0) as u64,
            })
        }
        .await)
    }

    async fn purge_expired(&self, now_ms: u64) -> Result<u64, StoreError> {
        let now = expiry_to_sql(Some(now_ms)).unwrap_or(i64::MAX);
        with_client!(self, "purge_expired", |client| async {
            let stmt = client.prepare_cached(&self.inner.sql.purge).await?;
            client.execute(&stmt, &[&now]).await
        }
        .await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql_common::ScanPage;

    #[test]
    fn upsert_numbers_parameters_by_row() {
        let sql = upsert_sql("kv", 2);
        assert!(sql.contains("VALUES ($1,$2,$3,$4,$5),($6,$7,$8,$9,$10) ON CONFLICT"));
    }

    #[test]
    fn scan_sql_shapes() {
        let page = ScanPage {
            lower: Bound::Excluded(b"a".to_vec()),
            upper: Some(b"b".to_vec()),
            limit: 10,
        };
        assert!(Sql::scan("kv", &page).ends_with("AND key > $2 AND key < $3 ORDER BY key LIMIT $4"));
        let page = ScanPage {
            lower: Bound::Unbounded,
            upper: None,
            limit: 10,
        };
        assert!(Sql::scan("kv", &page).ends_with("> $1) ORDER BY key LIMIT $2"));
    }

    #[test]
    fn bad_urls_and_tables_are_refused_without_connecting() {
        let opts = SqlOptions::default();
        let e = PostgresStore::new("s", "postgres://u@h/db", "kv;drop", opts).unwrap_err();
        assert!(e.to_string().contains("invalid table name"), "{e}");
        let e =
            PostgresStore::new("s", "postgres://u:secret@h:notaport/db", "kv", opts).unwrap_err();
        assert!(e.to_string().contains("invalid url"), "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
        // A store for a server that is not there builds fine (lazy pool).
        let s = PostgresStore::new("s", "postgres://u@127.0.0.1:1/db", "kv", opts).unwrap();
        assert_eq!(s.connections(), 0);
    }

    #[test]
    fn statement_timeout_is_added_to_url_options() {
        let mut c: tokio_postgres::Config = "postgres://u@h/db?options=-c%20search_path%3Dx"
            .parse()
            .unwrap();
        with_statement_timeout(&mut c, Duration::from_millis(1500));
        assert_eq!(
            c.get_options(),
            Some("-c search_path=x -c statement_timeout=1500")
        );
        assert_eq!(target_of(&c), "h:5432/db");
    }
}
