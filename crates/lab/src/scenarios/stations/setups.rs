//! The six ways of answering a liveboard's lookups, each behind
//! [`Backend::lookup`]: the scan (baseline), SQLite and MariaDB tables, Redis
//! and memcached keys, and tiercache's memory tier in front of SQLite.
//!
//! Every backend is opened by [`Backend::open`] (part of the cold, `single`
//! measurement: a fresh process would do the same) over data loaded
//! beforehand by the `load_*` functions (not measured, like iRail's build
//! script or cron job).

use super::data::{canonical_id, lookup_key, normalize_into, Lookup, Station};
use bytes::Bytes;
use mysql_async::prelude::Queryable;
use rusqlite::OptionalExtension;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tiercache_engine::{Engine, Entry, Store, StoreError};
use tiercache_stores::{MemcachedStore, RedisStore};

/// The SQL both databases run per lookup: one query through the names table,
/// or one by primary key.
const BY_NAME: &str = "SELECT s.id, s.name, s.country, s.lon, s.lat, s.alternatives \
     FROM station_names n JOIN stations s ON s.id = n.station_id WHERE n.norm = ?";
const BY_ID: &str = "SELECT id, name, country, lon, lat, alternatives FROM stations WHERE id = ?";

/// Where a setup's data lives.
pub enum Source {
    /// The CSV file.
    Csv(PathBuf),
    /// An SQLite file made by [`load_sqlite`].
    Sqlite(PathBuf),
    /// A MariaDB url whose database [`load_mysql`] filled.
    Mysql(String),
    /// A Redis url filled by [`load_kv`].
    Redis(String),
    /// A memcached `host:port` filled by [`load_kv`].
    Memcached(String),
    /// tiercache's engine over the SQLite file (its loader's source).
    Tiercache {
        /// The SQLite file.
        db: PathBuf,
        /// A directory for the engine (it writes no journal: memory only).
        dir: PathBuf,
    },
}

/// An opened setup.
pub enum Backend {
    /// The parsed stations, scanned per lookup.
    Csv(Vec<Station>),
    /// A connection with both statements prepared (cached).
    Sqlite(rusqlite::Connection),
    /// One MariaDB connection.
    Mysql(mysql_async::Conn),
    /// A store used with one `get_many` of one key per lookup.
    Kv(Arc<dyn Store>),
    /// The engine, and the SQLite connection its loader queries on a miss.
    Tiercache(Engine, Arc<Mutex<rusqlite::Connection>>),
}

/// Reusable buffers so normalising a query allocates only its key.
#[derive(Default)]
pub struct Scratch {
    norm: String,
    word: String,
    cand: String,
    cand_word: String,
}

fn sqlite_open(path: &Path) -> Result<rusqlite::Connection, String> {
    rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| format!("sqlite {}: {e}", path.display()))
}

fn sqlite_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Station> {
    let alts: String = row.get(5)?;
    Ok(Station {
        id: row.get(0)?,
        name: row.get(1)?,
        country: row.get(2)?,
        lon: row.get(3)?,
        lat: row.get(4)?,
        alternatives: split_alternatives(&alts),
    })
}

fn split_alternatives(alts: &str) -> Vec<String> {
    if alts.is_empty() {
        Vec::new()
    } else {
        alts.split('\t').map(str::to_string).collect()
    }
}

/// One SQLite query for `key` (`id:...` or `name:...`).
fn sqlite_query(conn: &rusqlite::Connection, key: &str) -> Result<Option<Station>, String> {
    let (sql, arg) = match key.split_once(':') {
        Some(("id", id)) => (BY_ID, id),
        Some(("name", n)) => (BY_NAME, n),
        _ => return Err(format!("bad lookup key {key:?}")),
    };
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(|e| format!("sqlite: {e}"))?;
    stmt.query_row([arg], sqlite_row)
        .optional()
        .map_err(|e| format!("sqlite: {e}"))
}

impl Backend {
    /// Opens the setup: parses the file, connects, or builds the engine.
    pub async fn open(source: &Source) -> Result<Backend, String> {
        Ok(match source {
            Source::Csv(path) => Backend::Csv(super::data::load_stations(path)?),
            Source::Sqlite(path) => Backend::Sqlite(sqlite_open(path)?),
            Source::Mysql(url) => {
                let opts = mysql_async::Opts::from_url(url).map_err(|e| format!("mysql: {e}"))?;
                let conn = mysql_async::Conn::new(opts)
                    .await
                    .map_err(|e| format!("mysql: {e}"))?;
                Backend::Mysql(conn)
            }
            Source::Redis(url) => Backend::Kv(Arc::new(
                RedisStore::open("stations-redis", url, 1, None).map_err(|e| e.to_string())?,
            )),
            Source::Memcached(addr) => Backend::Kv(Arc::new(
                MemcachedStore::open("stations-memcached", std::slice::from_ref(addr), None)
                    .map_err(|e| e.to_string())?,
            )),
            Source::Tiercache { db, dir } => {
                let engine = Engine::builder(dir)
                    .memory_bytes(16 << 20)
                    .build()
                    .await
                    .map_err(|e| format!("tiercache: {e}"))?;
                Backend::Tiercache(engine, Arc::new(Mutex::new(sqlite_open(db)?)))
            }
        })
    }

    /// Answers one lookup: the station, or `None` when nothing matches.
    pub async fn lookup(
        &mut self,
        lookup: Lookup,
        scratch: &mut Scratch,
    ) -> Result<Option<Station>, String> {
        if let Backend::Csv(stations) = self {
            return Ok(scan(stations, lookup, scratch).cloned());
        }
        let Some(key) = lookup_key(lookup, &mut scratch.norm, &mut scratch.word) else {
            return Ok(None);
        };
        match self {
            Backend::Csv(_) => unreachable!("answered above"),
            Backend::Sqlite(conn) => sqlite_query(conn, &key),
            Backend::Mysql(conn) => {
                let (sql, arg) = match key.split_once(':') {
                    Some(("id", id)) => (BY_ID, id),
                    Some((_, n)) => (BY_NAME, n),
                    None => return Err(format!("bad lookup key {key:?}")),
                };
                // mysql_async caches the prepared statement per connection.
                let row: Option<(String, String, String, String, String, String)> = conn
                    .exec_first(sql, (arg,))
                    .await
                    .map_err(|e| format!("mysql: {e}"))?;
                Ok(row.map(|(id, name, country, lon, lat, alts)| Station {
                    id,
                    name,
                    country,
                    lon,
                    lat,
                    alternatives: split_alternatives(&alts),
                }))
            }
            Backend::Kv(store) => {
                let got = store
                    .get_many(&[Bytes::from(key)])
                    .await
                    .map_err(|e| e.to_string())?;
                match got.into_iter().next().flatten() {
                    Some(e) => Station::decode(&e.value).map(Some),
                    None => Ok(None),
                }
            }
            Backend::Tiercache(engine, conn) => {
                let conn = conn.clone();
                let k = key.clone();
                let entry = engine
                    .get_or_load(key.as_bytes(), || async move {
                        let conn = conn.lock().expect("sqlite connection lock");
                        match sqlite_query(&conn, &k) {
                            Ok(found) => Ok(found.map(|s| Entry::new(s.encode()))),
                            Err(e) => Err(StoreError::new("stations-sqlite", e).into()),
                        }
                    })
                    .await
                    .map_err(|e| format!("tiercache: {e}"))?;
                match entry {
                    Some(e) => Station::decode(&e.value).map(Some),
                    None => Ok(None),
                }
            }
        }
    }

    /// Releases what the setup holds (the engine's background tasks).
    pub async fn close(self) -> Result<(), String> {
        match self {
            Backend::Tiercache(engine, _) => engine
                .shutdown()
                .await
                .map_err(|e| format!("tiercache: {e}")),
            Backend::Mysql(conn) => conn.disconnect().await.map_err(|e| format!("mysql: {e}")),
            _ => Ok(()),
        }
    }
}

/// The original approach: every lookup walks the whole list, normalising each
/// station's names on the way (as iRail's loop did), first exact match wins.
pub fn scan<'a>(stations: &'a [Station], lookup: Lookup, s: &mut Scratch) -> Option<&'a Station> {
    match lookup {
        Lookup::Id(q) => {
            let id = canonical_id(q)?;
            stations.iter().find(|st| st.id == id)
        }
        Lookup::Name(q) => {
            normalize_into(q, &mut s.norm, &mut s.word);
            if s.norm.is_empty() {
                return None;
            }
            stations.iter().find(|st| {
                st.names().any(|n| {
                    normalize_into(n, &mut s.cand, &mut s.cand_word);
                    s.cand == s.norm
                })
            })
        }
    }
}

/// Writes the SQLite database of the seed's option 1: `stations` by id and
/// `station_names` (normalised name → id, primary key so indexed).
pub fn load_sqlite(path: &Path, stations: &[Station]) -> Result<(), String> {
    let err = |e: rusqlite::Error| format!("sqlite {}: {e}", path.display());
    let mut conn = rusqlite::Connection::open(path).map_err(err)?;
    conn.execute_batch(
        "CREATE TABLE stations (id TEXT PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL,
             lon TEXT NOT NULL, lat TEXT NOT NULL, alternatives TEXT NOT NULL);
         CREATE TABLE station_names (norm TEXT PRIMARY KEY, station_id TEXT NOT NULL);",
    )
    .map_err(err)?;
    let tx = conn.transaction().map_err(err)?;
    {
        let mut st = tx
            .prepare("INSERT INTO stations VALUES (?, ?, ?, ?, ?, ?)")
            .map_err(err)?;
        for s in stations {
            st.execute(rusqlite::params![
                s.id,
                s.name,
                s.country,
                s.lon,
                s.lat,
                s.alternatives.join("\t")
            ])
            .map_err(err)?;
        }
        let mut nm = tx
            .prepare("INSERT INTO station_names VALUES (?, ?)")
            .map_err(err)?;
        for (key, i) in super::data::index_keys(stations) {
            if let Some(norm) = key.strip_prefix("name:") {
                nm.execute([norm, stations[i].id.as_str()]).map_err(err)?;
            }
        }
    }
    tx.commit().map_err(err)
}

/// The same two tables on MariaDB (binary collation: the names are already
/// normalised, the database must not fold them differently).
pub async fn load_mysql(url: &str, stations: &[Station]) -> Result<(), String> {
    let e = |e: mysql_async::Error| format!("mysql: {e}");
    let opts = mysql_async::Opts::from_url(url).map_err(|e| format!("mysql: {e}"))?;
    let mut conn = mysql_async::Conn::new(opts).await.map_err(e)?;
    conn.query_drop(
        "DROP TABLE IF EXISTS station_names, stations;
         CREATE TABLE stations (id CHAR(9) PRIMARY KEY, name VARCHAR(200) NOT NULL,
             country VARCHAR(8) NOT NULL, lon VARCHAR(32) NOT NULL, lat VARCHAR(32) NOT NULL,
             alternatives VARCHAR(1000) NOT NULL) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
         CREATE TABLE station_names (norm VARCHAR(200) PRIMARY KEY, station_id CHAR(9) NOT NULL)
             CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;",
    )
    .await
    .map_err(e)?;
    // Multi-row inserts in chunks: 6 placeholders a row, well under 65,535.
    for chunk in stations.chunks(500) {
        let sql = format!(
            "INSERT INTO stations VALUES {}",
            vec!["(?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ")
        );
        let params: Vec<mysql_async::Value> = chunk
            .iter()
            .flat_map(|s| {
                [
                    s.id.clone(),
                    s.name.clone(),
                    s.country.clone(),
                    s.lon.clone(),
                    s.lat.clone(),
                    s.alternatives.join("\t"),
                ]
            })
            .map(mysql_async::Value::from)
            .collect();
        conn.exec_drop(sql, params).await.map_err(e)?;
    }
    let names: Vec<(String, String)> = super::data::index_keys(stations)
        .into_iter()
        .filter_map(|(k, i)| {
            k.strip_prefix("name:")
                .map(|n| (n.to_string(), stations[i].id.clone()))
        })
        .collect();
    for chunk in names.chunks(1000) {
        let sql = format!(
            "INSERT INTO station_names VALUES {}",
            vec!["(?, ?)"; chunk.len()].join(", ")
        );
        let params: Vec<mysql_async::Value> = chunk
            .iter()
            .flat_map(|(n, id)| [n.clone(), id.clone()])
            .map(mysql_async::Value::from)
            .collect();
        conn.exec_drop(sql, params).await.map_err(e)?;
    }
    conn.disconnect().await.map_err(e)
}

/// Fills a key/value store with every key of [`index_keys`](super::data::index_keys),
/// each holding the station's record.
pub async fn load_kv(store: &dyn Store, stations: &[Station]) -> Result<(), String> {
    let entries: Vec<(Bytes, Entry)> = super::data::index_keys(stations)
        .into_iter()
        .map(|(k, i)| (Bytes::from(k), Entry::new(stations[i].encode())))
        .collect();
    for chunk in entries.chunks(500) {
        store.set_many(chunk).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}
