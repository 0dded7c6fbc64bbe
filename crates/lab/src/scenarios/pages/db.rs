//! The CMS's content: the page rows (deterministic titles and bodies), the
//! page template, and the database they live in (MariaDB as in seed 004,
//! SQLite when MariaDB is not installed).

use crate::scenarios::http_load::filler;
use bytes::Bytes;
use mysql_async::prelude::Queryable;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Every rendered page is this long: seed 004's `/about` (6,662 bytes).
pub const PAGE_BYTES: usize = 6662;

/// The table the pages live in (prefixed: the lab's database is shared by
/// scenarios).
const TABLE: &str = "lab_pages";

/// One row of the pages table.
#[derive(Clone, Debug)]
pub struct PageRow {
    /// Primary key, 1-based; `/page/{id}`.
    pub id: u32,
    /// Title.
    pub title: String,
    /// Body text, sized so that the rendered page is [`PAGE_BYTES`] long.
    pub body: String,
}

/// The page as the app serves it: a small HTML template around the row,
/// with the id in a `data-page` attribute.
pub fn render(id: u32, title: &str, body: &str) -> String {
    let mut s = String::with_capacity(PAGE_BYTES);
    s.push_str("<!DOCTYPE html>\n<html lang=\"ja\"><head><meta charset=\"utf-8\"><title>");
    s.push_str(title);
    s.push_str(" | Sashimi</title></head>\n<body><article data-page=\"");
    s.push_str(&id.to_string());
    s.push_str("\"><h1>");
    s.push_str(title);
    s.push_str("</h1>\n<p>");
    s.push_str(body);
    s.push_str("</p></article></body></html>\n");
    s
}

/// `n` pages with deterministic content, each rendering to [`PAGE_BYTES`].
pub fn make_pages(n: u32) -> Vec<PageRow> {
    (1..=n)
        .map(|id| {
            let words = filler(u64::from(id), 3, b"abcdefghijklmnopqrstuvwxyz");
            let title = format!("Post {id}: notes on {words} caching");
            let overhead = render(id, &title, "").len();
            let body = filler(
                0x5eed_0000 + u64::from(id),
                PAGE_BYTES - overhead,
                b"abcdefghijklmnopqrstuvwxyz      .,",
            );
            PageRow { id, title, body }
        })
        .collect()
}

/// A row as the caches keep it: `title\nbody` (titles have no newline).
pub fn encode(title: &str, body: &str) -> Bytes {
    let mut v = Vec::with_capacity(title.len() + 1 + body.len());
    v.extend_from_slice(title.as_bytes());
    v.push(b'\n');
    v.extend_from_slice(body.as_bytes());
    Bytes::from(v)
}

/// The inverse of [`encode`].
pub fn decode(raw: &[u8]) -> Result<(&str, &str), String> {
    let text = std::str::from_utf8(raw).map_err(|_| "cached row is not UTF-8".to_string())?;
    text.split_once('\n')
        .ok_or_else(|| "cached row has no title separator".to_string())
}

/// The pages database, counting the queries it answers.
pub struct Db {
    kind: Kind,
    queries: AtomicU64,
}

enum Kind {
    Mysql(mysql_async::Pool),
    /// A few connections, used in turn; a query holds one for a few µs.
    Sqlite {
        conns: Vec<Mutex<rusqlite::Connection>>,
        next: AtomicUsize,
    },
}

impl Db {
    /// MariaDB at `url` (a pool of up to `max_conns` connections), with the
    /// pages table created and filled with `pages`.
    pub async fn mysql(url: &str, pages: &[PageRow], max_conns: usize) -> Result<Db, String> {
        let opts = mysql_async::Opts::from_url(url).map_err(|e| format!("mariadb url: {e}"))?;
        let constraints = mysql_async::PoolConstraints::new(1, max_conns.max(1)).expect("1 ≤ max");
        let opts = mysql_async::OptsBuilder::from_opts(opts)
            .pool_opts(mysql_async::PoolOpts::default().with_constraints(constraints));
        let pool = mysql_async::Pool::new(opts);
        let fail = |what: &str, e: mysql_async::Error| format!("mariadb: {what}: {e}");
        let mut conn = pool.get_conn().await.map_err(|e| fail("connect", e))?;
        conn.query_drop(format!(
            "DROP TABLE IF EXISTS {TABLE}; CREATE TABLE {TABLE} (id INT PRIMARY KEY, \
             title VARCHAR(200) NOT NULL, body TEXT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
        ))
        .await
        .map_err(|e| fail("create table", e))?;
        let mut tx = conn
            .start_transaction(Default::default())
            .await
            .map_err(|e| fail("begin", e))?;
        tx.exec_batch(
            format!("INSERT INTO {TABLE} (id, title, body) VALUES (?, ?, ?)"),
            pages.iter().map(|p| (p.id, &p.title, &p.body)),
        )
        .await
        .map_err(|e| fail("insert", e))?;
        tx.commit().await.map_err(|e| fail("commit", e))?;
        drop(conn);
        Ok(Db {
            kind: Kind::Mysql(pool),
            queries: AtomicU64::new(0),
        })
    }

    /// SQLite at `path` (created), filled with `pages`, with `conns`
    /// connections.
    pub fn sqlite(path: &Path, pages: &[PageRow], conns: usize) -> Result<Db, String> {
        let fail =
            |what: &str, e: rusqlite::Error| format!("sqlite {}: {what}: {e}", path.display());
        let mut first = rusqlite::Connection::open(path).map_err(|e| fail("open", e))?;
        first
            .execute_batch(&format!(
                "PRAGMA journal_mode=WAL; DROP TABLE IF EXISTS {TABLE}; \
                 CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL);"
            ))
            .map_err(|e| fail("create table", e))?;
        let tx = first.transaction().map_err(|e| fail("begin", e))?;
        {
            let mut insert = tx
                .prepare(&format!(
                    "INSERT INTO {TABLE} (id, title, body) VALUES (?1, ?2, ?3)"
                ))
                .map_err(|e| fail("prepare", e))?;
            for p in pages {
                insert
                    .execute(rusqlite::params![p.id, p.title, p.body])
                    .map_err(|e| fail("insert", e))?;
            }
        }
        tx.commit().map_err(|e| fail("commit", e))?;
        let mut all = vec![Mutex::new(first)];
        for _ in 1..conns.max(1) {
            all.push(Mutex::new(
                rusqlite::Connection::open(path).map_err(|e| fail("open", e))?,
            ));
        }
        Ok(Db {
            kind: Kind::Sqlite {
                conns: all,
                next: AtomicUsize::new(0),
            },
            queries: AtomicU64::new(0),
        })
    }

    /// `mariadb` or `sqlite`.
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Mysql(_) => "mariadb",
            Kind::Sqlite { .. } => "sqlite",
        }
    }

    /// Queries answered so far.
    pub fn queries(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }

    /// The row of page `id`: `SELECT title, body FROM lab_pages WHERE id = ?`.
    pub async fn fetch(&self, id: u32) -> Result<Option<(String, String)>, String> {
        self.queries.fetch_add(1, Ordering::Relaxed);
        match &self.kind {
            Kind::Mysql(pool) => {
                let mut conn = pool
                    .get_conn()
                    .await
                    .map_err(|e| format!("mariadb: connect: {e}"))?;
                conn.exec_first(
                    format!("SELECT title, body FROM {TABLE} WHERE id = ?"),
                    (id,),
                )
                .await
                .map_err(|e| format!("mariadb: select: {e}"))
            }
            Kind::Sqlite { conns, next } => {
                let i = next.fetch_add(1, Ordering::Relaxed) % conns.len();
                let conn = conns[i].lock().unwrap_or_else(|p| p.into_inner());
                let mut stmt = conn
                    .prepare_cached(&format!("SELECT title, body FROM {TABLE} WHERE id = ?1"))
                    .map_err(|e| format!("sqlite: prepare: {e}"))?;
                let mut rows = stmt
                    .query([id])
                    .map_err(|e| format!("sqlite: select: {e}"))?;
                match rows.next().map_err(|e| format!("sqlite: select: {e}"))? {
                    Some(row) => Ok(Some((
                        row.get(0).map_err(|e| format!("sqlite: title: {e}"))?,
                        row.get(1).map_err(|e| format!("sqlite: body: {e}"))?,
                    ))),
                    None => Ok(None),
                }
            }
        }
    }

    /// Drops the table and closes the pool.
    pub async fn close(self) {
        match self.kind {
            Kind::Mysql(pool) => {
                if let Ok(mut conn) = pool.get_conn().await {
                    let _ = conn
                        .query_drop(format!("DROP TABLE IF EXISTS {TABLE}"))
                        .await;
                }
                let _ = pool.disconnect().await;
            }
            Kind::Sqlite { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_renders_to_the_seeds_size_and_round_trips_through_the_cache_encoding() {
        let pages = make_pages(50);
        for p in &pages {
            let html = render(p.id, &p.title, &p.body);
            assert_eq!(html.len(), PAGE_BYTES, "page {}", p.id);
            assert!(html.contains(&format!("data-page=\"{}\"", p.id)));
            let raw = encode(&p.title, &p.body);
            assert_eq!(decode(&raw).unwrap(), (p.title.as_str(), p.body.as_str()));
        }
        // Distinct pages have distinct bodies, so a wrong page is caught.
        assert_ne!(pages[0].body, pages[1].body);
        assert_eq!(make_pages(3)[2].body, pages[2].body, "deterministic");
    }
}
