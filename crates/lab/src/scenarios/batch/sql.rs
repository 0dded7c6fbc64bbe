//! The three databases of the `batch` scenario behind one [`Db`], each able
//! to load the rows table and fetch a key set by every [`Method`].
//!
//! Statements use bind parameters, chunked at the database's limit
//! ([`Db::max_params`]); with the scenario's largest key set (10,000) no
//! chunking happens, but a larger one would run one statement per chunk.
//! The exception is SQLite's `OR` chain, split at 999 terms by its
//! expression-depth limit ([`Db::max_or_terms`]).
//! Statement preparation follows each client's default: rusqlite's
//! `prepare_cached` and mysql_async's per-connection statement cache reuse a
//! statement text, tokio-postgres prepares an unnamed statement per call
//! (the single-row statement is prepared once).

use mysql_async::prelude::Queryable;
use std::fmt::Write as _;

/// The table every database holds.
pub const TABLE: &str = "lab_batch_rows";
/// The temporary table of the temp-table methods.
pub const TMP: &str = "lab_batch_tmp";

/// How a key set is fetched (the seed's cases A–F, plus PostgreSQL's array).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// (A) one `SELECT … WHERE id = ?` per key.
    Single,
    /// (B) `WHERE id = ? OR id = ? …`.
    Or,
    /// (C) `WHERE id IN (?, ?, …)`.
    In,
    /// (D) a temporary table filled by one multi-row INSERT, joined.
    Temp,
    /// (F) the same filled by one INSERT per key inside a transaction.
    TempRows,
    /// PostgreSQL only: `WHERE id = ANY($1)` with one array parameter.
    Any,
}

impl Method {
    /// The methods every database runs.
    pub const COMMON: [Method; 5] = [
        Method::Single,
        Method::Or,
        Method::In,
        Method::Temp,
        Method::TempRows,
    ];

    /// The setup suffix, e.g. `in` in `mariadb/in`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Single => "single",
            Method::Or => "or",
            Method::In => "in",
            Method::Temp => "temp",
            Method::TempRows => "temp-rows",
            Method::Any => "any",
        }
    }
}

/// The payload of row `id`: deterministic, so a fetched row can be checked
/// without keeping the table in memory.
pub fn payload(id: i64) -> String {
    format!(
        "row-{id:08}-{:016x}",
        (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    )
}

/// A connection to one database.
pub enum Db {
    /// A file in a temporary directory.
    Sqlite(rusqlite::Connection),
    /// MariaDB.
    Mariadb(mysql_async::Conn),
    /// PostgreSQL, and its single-row statement.
    Postgres(tokio_postgres::Client, tokio_postgres::Statement),
}

type Rows = Vec<(i64, String)>;

fn placeholders(pg: bool, from: usize, n: usize, sep: &str, each: &str) -> String {
    let mut s = String::with_capacity(n * (each.len() + 8));
    for i in 0..n {
        if i > 0 {
            s.push_str(sep);
        }
        let p = if pg {
            format!("${}", from + i + 1)
        } else {
            "?".into()
        };
        s.push_str(&each.replace('#', &p));
    }
    s
}

impl Db {
    /// Opens SQLite at `path`.
    pub fn sqlite(path: &std::path::Path) -> Result<Db, String> {
        let c = rusqlite::Connection::open(path).map_err(|e| format!("sqlite: {e}"))?;
        Ok(Db::Sqlite(c))
    }

    /// Connects to MariaDB.
    pub async fn mariadb(url: &str) -> Result<Db, String> {
        let opts = mysql_async::Opts::from_url(url).map_err(|e| format!("mariadb: {e}"))?;
        let c = mysql_async::Conn::new(opts)
            .await
            .map_err(|e| format!("mariadb: {e}"))?;
        Ok(Db::Mariadb(c))
    }

    /// Connects to PostgreSQL (the connection task runs on the current
    /// runtime) and creates the table so the single-row statement can be
    /// prepared.
    pub async fn postgres(url: &str) -> Result<Db, String> {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .map_err(|e| format!("postgres: {e}"))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        client
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS {TABLE};
                 CREATE TABLE {TABLE} (id BIGINT PRIMARY KEY, payload VARCHAR(64) NOT NULL)"
            ))
            .await
            .map_err(|e| format!("postgres: {e}"))?;
        let one = client
            .prepare(&format!("SELECT id, payload FROM {TABLE} WHERE id = $1"))
            .await
            .map_err(|e| format!("postgres: {e}"))?;
        Ok(Db::Postgres(client, one))
    }

    /// The database's name as in the setup names.
    pub fn name(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Mariadb(_) => "mariadb",
            Db::Postgres(..) => "postgres",
        }
    }

    /// Bind parameters one statement may carry: SQLite's default
    /// `SQLITE_MAX_VARIABLE_NUMBER` (32,766); MariaDB's and PostgreSQL's
    /// protocols count parameters in 16 bits (65,535).
    pub fn max_params(&self) -> usize {
        match self {
            Db::Sqlite(_) => 32_766,
            Db::Mariadb(_) | Db::Postgres(..) => 65_535,
        }
    }

    /// Terms one `OR` chain may have: SQLite parses `a OR b OR c …` into a
    /// tree as deep as the chain and refuses one deeper than
    /// `SQLITE_MAX_EXPR_DEPTH` (1000), so its chains are split into
    /// statements of 999 terms, as the seed split statements at
    /// `max_allowed_packet`; the others take a chain as long as the
    /// parameter limit.
    pub fn max_or_terms(&self) -> usize {
        match self {
            Db::Sqlite(_) => 999,
            _ => self.max_params(),
        }
    }

    /// The methods this database runs.
    pub fn methods(&self) -> Vec<Method> {
        let mut m = Method::COMMON.to_vec();
        if let Db::Postgres(..) = self {
            m.push(Method::Any);
        }
        m
    }

    /// (Re)creates the table with rows `1..=rows` (`payload(id)` each).
    pub async fn load(&mut self, rows: i64) -> Result<(), String> {
        match self {
            Db::Sqlite(c) => {
                let e = |e: rusqlite::Error| format!("sqlite: {e}");
                c.execute_batch(&format!(
                    "DROP TABLE IF EXISTS {TABLE};
                     CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY, payload TEXT NOT NULL);"
                ))
                .map_err(e)?;
                let tx = c.transaction().map_err(e)?;
                {
                    let mut st = tx
                        .prepare(&format!("INSERT INTO {TABLE} VALUES (?, ?)"))
                        .map_err(e)?;
                    for id in 1..=rows {
                        st.execute(rusqlite::params![id, payload(id)]).map_err(e)?;
                    }
                }
                tx.commit().map_err(e)
            }
            Db::Mariadb(c) => {
                let e = |e: mysql_async::Error| format!("mariadb: {e}");
                c.query_drop(format!(
                    "DROP TABLE IF EXISTS {TABLE};
                     CREATE TABLE {TABLE} (id BIGINT PRIMARY KEY, payload VARCHAR(64) NOT NULL)"
                ))
                .await
                .map_err(e)?;
                let ids: Vec<i64> = (1..=rows).collect();
                for chunk in ids.chunks(10_000) {
                    let sql = format!(
                        "INSERT INTO {TABLE} VALUES {}",
                        placeholders(false, 0, chunk.len(), ",", "(?, ?)")
                    );
                    let params: Vec<mysql_async::Value> = chunk
                        .iter()
                        .flat_map(|&id| [id.into(), payload(id).into()])
                        .collect();
                    c.exec_drop(sql, params).await.map_err(e)?;
                }
                Ok(())
            }
            Db::Postgres(c, _) => {
                // Server-side generation: the same payload formula in SQL,
                // checked row by row on every fetch anyway.
                let ids: Vec<i64> = (1..=rows).collect();
                for chunk in ids.chunks(10_000) {
                    let payloads: Vec<String> = chunk.iter().map(|&id| payload(id)).collect();
                    c.execute(
                        &format!(
                            "INSERT INTO {TABLE} SELECT * FROM UNNEST($1::BIGINT[], $2::VARCHAR[])"
                        ),
                        &[&chunk, &payloads],
                    )
                    .await
                    .map_err(|e| format!("postgres: {e}"))?;
                }
                c.batch_execute(&format!("ANALYZE {TABLE}"))
                    .await
                    .map_err(|e| format!("postgres: {e}"))
            }
        }
    }

    /// Fetches the rows of `ids` by `method`, in whatever order the database
    /// returns them.
    pub async fn fetch(&mut self, method: Method, ids: &[i64]) -> Result<Rows, String> {
        let max = self.max_params();
        match method {
            Method::Single => self.single(ids).await,
            Method::Or | Method::In => {
                let mut out = Vec::with_capacity(ids.len());
                let per = if method == Method::Or {
                    self.max_or_terms()
                } else {
                    max
                };
                for chunk in ids.chunks(per) {
                    let pg = matches!(self, Db::Postgres(..));
                    let cond = if method == Method::Or {
                        placeholders(pg, 0, chunk.len(), " OR ", "id = #")
                    } else {
                        format!("id IN ({})", placeholders(pg, 0, chunk.len(), ", ", "#"))
                    };
                    let sql = format!("SELECT id, payload FROM {TABLE} WHERE {cond}");
                    out.extend(self.select(&sql, chunk).await?);
                }
                Ok(out)
            }
            Method::Temp | Method::TempRows => self.temp(ids, method == Method::TempRows).await,
            Method::Any => match self {
                Db::Postgres(c, _) => {
                    let sql = format!("SELECT id, payload FROM {TABLE} WHERE id = ANY($1)");
                    let rows = c
                        .query(&sql, &[&ids])
                        .await
                        .map_err(|e| format!("postgres: {e}"))?;
                    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
                }
                _ => Err(format!("{}: no array parameters", self.name())),
            },
        }
    }

    async fn single(&mut self, ids: &[i64]) -> Result<Rows, String> {
        let sql = format!("SELECT id, payload FROM {TABLE} WHERE id = ?");
        let mut out = Vec::with_capacity(ids.len());
        match self {
            Db::Sqlite(c) => {
                let mut st = c.prepare_cached(&sql).map_err(|e| format!("sqlite: {e}"))?;
                for &id in ids {
                    let mut rows = st
                        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))
                        .map_err(|e| format!("sqlite: {e}"))?;
                    if let Some(r) = rows.next() {
                        out.push(r.map_err(|e| format!("sqlite: {e}"))?);
                    }
                }
            }
            Db::Mariadb(c) => {
                let st = c.prep(&sql).await.map_err(|e| format!("mariadb: {e}"))?;
                for &id in ids {
                    let row: Option<(i64, String)> = c
                        .exec_first(&st, (id,))
                        .await
                        .map_err(|e| format!("mariadb: {e}"))?;
                    out.extend(row);
                }
            }
            Db::Postgres(c, one) => {
                for &id in ids {
                    let row = c
                        .query_opt(&*one, &[&id])
                        .await
                        .map_err(|e| format!("postgres: {e}"))?;
                    out.extend(row.map(|r| (r.get(0), r.get(1))));
                }
            }
        }
        Ok(out)
    }

    /// One SELECT with `ids` as its parameters.
    async fn select(&mut self, sql: &str, ids: &[i64]) -> Result<Rows, String> {
        match self {
            Db::Sqlite(c) => {
                let mut st = c.prepare_cached(sql).map_err(|e| format!("sqlite: {e}"))?;
                let rows = st
                    .query_map(rusqlite::params_from_iter(ids), |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .map_err(|e| format!("sqlite: {e}"))?;
                rows.collect::<Result<_, _>>()
                    .map_err(|e| format!("sqlite: {e}"))
            }
            Db::Mariadb(c) => c
                .exec(sql, ids.to_vec())
                .await
                .map_err(|e| format!("mariadb: {e}")),
            Db::Postgres(c, _) => {
                let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                    ids.iter().map(|id| id as _).collect();
                let rows = c
                    .query(sql, &params)
                    .await
                    .map_err(|e| format!("postgres: {e}"))?;
                Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
            }
        }
    }

    /// Statements run without parameters or results.
    async fn exec(&mut self, sql: &str) -> Result<(), String> {
        match self {
            Db::Sqlite(c) => c.execute_batch(sql).map_err(|e| format!("sqlite: {e}")),
            Db::Mariadb(c) => c.query_drop(sql).await.map_err(|e| format!("mariadb: {e}")),
            Db::Postgres(c, _) => c
                .batch_execute(sql)
                .await
                .map_err(|e| format!("postgres: {e}")),
        }
    }

    /// One INSERT statement with `ids` as its parameters.
    async fn insert(&mut self, sql: &str, ids: &[i64]) -> Result<(), String> {
        match self {
            Db::Sqlite(c) => {
                let mut st = c.prepare_cached(sql).map_err(|e| format!("sqlite: {e}"))?;
                st.execute(rusqlite::params_from_iter(ids))
                    .map(drop)
                    .map_err(|e| format!("sqlite: {e}"))
            }
            Db::Mariadb(c) => c
                .exec_drop(sql, ids.to_vec())
                .await
                .map_err(|e| format!("mariadb: {e}")),
            Db::Postgres(c, _) => {
                let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                    ids.iter().map(|id| id as _).collect();
                c.execute(sql, &params)
                    .await
                    .map(drop)
                    .map_err(|e| format!("postgres: {e}"))
            }
        }
    }

    /// (D) and (F): create the temporary table, fill it, join, drop it; all
    /// of it is what one request does, so all of it is timed.
    async fn temp(&mut self, ids: &[i64], row_by_row: bool) -> Result<Rows, String> {
        let pg = matches!(self, Db::Postgres(..));
        let (create, drop_sql) = match self {
            Db::Sqlite(_) => (
                format!("CREATE TEMP TABLE {TMP} (id INTEGER NOT NULL)"),
                format!("DROP TABLE temp.{TMP}"),
            ),
            Db::Mariadb(_) => (
                format!("CREATE TEMPORARY TABLE {TMP} (id BIGINT NOT NULL)"),
                format!("DROP TEMPORARY TABLE {TMP}"),
            ),
            Db::Postgres(..) => (
                format!("CREATE TEMP TABLE {TMP} (id BIGINT NOT NULL)"),
                format!("DROP TABLE {TMP}"),
            ),
        };
        self.exec(&create).await?;
        if row_by_row {
            self.exec("BEGIN").await?;
            let one = format!(
                "INSERT INTO {TMP} (id) VALUES ({})",
                if pg { "$1" } else { "?" }
            );
            for &id in ids {
                self.insert(&one, &[id]).await?;
            }
            self.exec("COMMIT").await?;
        } else {
            for chunk in ids.chunks(self.max_params()) {
                let mut sql = format!("INSERT INTO {TMP} (id) VALUES ");
                let _ = write!(sql, "{}", placeholders(pg, 0, chunk.len(), ", ", "(#)"));
                self.insert(&sql, chunk).await?;
            }
        }
        let rows = self
            .select(
                &format!("SELECT d.id, d.payload FROM {TABLE} d JOIN {TMP} t ON t.id = d.id"),
                &[],
            )
            .await?;
        self.exec(&drop_sql).await?;
        Ok(rows)
    }

    /// Removes the table (the servers are shared with other scenarios).
    pub async fn drop_table(&mut self) -> Result<(), String> {
        self.exec(&format!("DROP TABLE IF EXISTS {TABLE}")).await
    }
}
