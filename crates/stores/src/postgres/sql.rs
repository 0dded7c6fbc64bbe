//! The SQL text of a [`PostgresStore`](super::PostgresStore), built once
//! per table.

use super::ROW_CHUNK;
use crate::sql_common::ScanPage;
use std::ops::Bound;

/// SQL text built once, for the table.
pub(super) struct Sql {
    pub(super) select: String,
    pub(super) upsert_full: String,
    pub(super) delete: String,
    pub(super) count: String,
    pub(super) clear: String,
    pub(super) purge: String,
    pub(super) key_stats: String,
}

pub(super) fn quote(ident: &str) -> String {
    format!("\"{ident}\"")
}

pub(super) fn upsert_sql(table: &str, rows: usize) -> String {
    let mut values = String::with_capacity(rows * 32);
    for r in 0..rows {
        let p = 5 * r;
        if r > 0 {
            values.push(',');
        }
        values.push_str(&format!(
            "(${},${},${},${},${})",
            p + 1,
            p + 2,
            p + 3,
            p + 4,
            p + 5
        ));
    }
    format!(
        "INSERT INTO {} (key, long_key, value, expires_at, flags) VALUES {values} \
         ON CONFLICT (key) DO UPDATE SET long_key = EXCLUDED.long_key, value = EXCLUDED.value, \
         expires_at = EXCLUDED.expires_at, flags = EXCLUDED.flags",
        quote(table)
    )
}

impl Sql {
    pub(super) fn new(table: &str) -> Sql {
        let t = quote(table);
        let live = "(expires_at IS NULL OR expires_at > $1)";
        Sql {
            select: format!(
                "SELECT key, long_key, value, expires_at, flags FROM {t} \
                 WHERE key = ANY($2) AND {live}"
            ),
            upsert_full: upsert_sql(table, ROW_CHUNK),
            delete: format!("DELETE FROM {t} WHERE key = ANY($1)"),
            count: format!("SELECT count(*) FROM {t} WHERE {live}"),
            clear: format!("DELETE FROM {t}"),
            purge: format!("DELETE FROM {t} WHERE expires_at IS NOT NULL AND expires_at <= $1"),
            key_stats: format!(
                "SELECT count(*), count(expires_at), COALESCE(avg(expires_at - $1), 0)::float8 \
                 FROM {t} WHERE {live}"
            ),
        }
    }

    /// A page of [`scan_stored`]: `$1` now, then the bounds, then the limit.
    pub(super) fn scan(table: &str, page: &ScanPage) -> String {
        let mut sql = format!(
            "SELECT key, long_key FROM {} WHERE (expires_at IS NULL OR expires_at > $1)",
            quote(table)
        );
        let mut n = 1;
        match page.lower {
            Bound::Unbounded => {}
            Bound::Included(_) => {
                n += 1;
                sql.push_str(&format!(" AND key >= ${n}"));
            }
            Bound::Excluded(_) => {
                n += 1;
                sql.push_str(&format!(" AND key > ${n}"));
            }
        }
        if page.upper.is_some() {
            n += 1;
            sql.push_str(&format!(" AND key < ${n}"));
        }
        sql.push_str(&format!(" ORDER BY key LIMIT ${}", n + 1));
        sql
    }
}
