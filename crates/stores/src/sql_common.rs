//! What the networked SQL stores ([`crate::PostgresStore`],
//! [`crate::MysqlStore`]) share: how a key is stored, table-name checks,
//! batch de-duplication and the byte-order key listing.
//!
//! # Stored keys
//!
//! Both servers limit the size of a primary-key entry (PostgreSQL's B-tree
//! about 2.7 KB, InnoDB 3072 bytes, less with small pages), while a key may
//! be up to 64 KiB. The primary key column therefore holds the *stored key*:
//!
//! - the key itself when it has at most [`HEAD_LEN`] bytes (nearly every
//!   key: the table stays readable with `psql` or `mariadb`);
//! - otherwise its first [`HEAD_LEN`] bytes followed by the SHA-256 of the
//!   whole key, with the whole key in the `long_key` column.
//!
//! Lookups are exact (a SHA-256 collision aside). The stored keys sort like
//! the keys, except among long keys that share their first [`HEAD_LEN`]
//! bytes (a *tie group*, adjacent in the index): the key listing re-sorts
//! those by their real key, so listings stay in byte order.

use bytes::Bytes;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::HashSet;
use std::future::Future;
use std::ops::Bound;
use std::time::Duration;
use tiercache_engine::store::in_scan_range;
use tiercache_engine::{Entry, Mutation};

/// How a networked SQL store connects: pool size and operation timeout.
///
/// ```
/// use std::time::Duration;
/// use tiercache_stores::SqlOptions;
/// let opts = SqlOptions { pool_size: 4, timeout: Some(Duration::from_secs(2)) };
/// assert_eq!(opts.effective_timeout(), Duration::from_secs(2));
/// assert_eq!(SqlOptions::default().effective_timeout(), SqlOptions::DEFAULT_TIMEOUT);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqlOptions {
    /// Most connections open at once (at least 1).
    pub pool_size: usize,
    /// How long one store operation may take, waiting for a connection
    /// included, before it fails with an error; `None` is
    /// [`SqlOptions::DEFAULT_TIMEOUT`]. Operations never wait forever.
    pub timeout: Option<Duration>,
}

impl SqlOptions {
    /// The timeout when none is configured.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// The timeout in force.
    pub fn effective_timeout(&self) -> Duration {
        self.timeout.unwrap_or(Self::DEFAULT_TIMEOUT)
    }

    pub(crate) fn pool_size(&self) -> usize {
        self.pool_size.max(1)
    }
}

impl Default for SqlOptions {
    /// 8 connections (SPEC's default `pool_size`), the default timeout.
    fn default() -> Self {
        SqlOptions {
            pool_size: 8,
            timeout: None,
        }
    }
}

/// Keys longer than this are stored as their head plus a SHA-256 (see the
/// module docs). 1024 bytes fits both servers' index limits, InnoDB's with
/// 8 KiB pages included.
pub const HEAD_LEN: usize = 1024;

/// Length of a long key's stored form.
pub(crate) const STORED_LONG_LEN: usize = HEAD_LEN + 32;

/// The stored (primary-key) form of `key`.
pub(crate) fn stored_key(key: &[u8]) -> Cow<'_, [u8]> {
    if key.len() <= HEAD_LEN {
        Cow::Borrowed(key)
    } else {
        let mut stored = Vec::with_capacity(STORED_LONG_LEN);
        stored.extend_from_slice(&key[..HEAD_LEN]);
        stored.extend_from_slice(&Sha256::digest(key));
        Cow::Owned(stored)
    }
}

/// The `long_key` column for `key`: the whole key when it is long.
pub(crate) fn long_key_column(key: &[u8]) -> Option<&[u8]> {
    (key.len() > HEAD_LEN).then_some(key)
}

/// The real key of a row from its stored key and `long_key` column.
pub(crate) fn real_key(stored: Vec<u8>, long_key: Option<Vec<u8>>) -> Vec<u8> {
    long_key.unwrap_or(stored)
}

/// The smallest byte string greater than every string that starts with
/// `prefix`; `None` when there is none (the prefix is all `0xff`).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Checks that `table` is a plain identifier (so it can be spliced into
/// SQL) and not one of tiercache's own tables.
pub(crate) fn validate_table(table: &str, max_len: usize) -> Result<(), String> {
    let mut chars = table.chars();
    let first_ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "invalid table name {table:?}: use ASCII letters, digits and '_', not starting with a digit"
        ));
    }
    if table.len() > max_len {
        return Err(format!(
            "invalid table name {table:?}: longer than {max_len} characters"
        ));
    }
    if table.eq_ignore_ascii_case(META_TABLE) {
        return Err(format!("invalid table name {table:?}: reserved name"));
    }
    Ok(())
}

/// The table holding the schema version (shared by every store in a database).
pub(crate) const META_TABLE: &str = "tiercache_meta";

/// Keeps the last occurrence of each key, so a batch means the same as
/// applying its items one after another; the result is in key order.
///
/// Key order because every SQL store upserts into a B-tree on the key: a
/// write-back flush hands over keys in hash order, and rows in random order
/// each land on a different leaf page. Sorted, a 10,000-row flush into a
/// 100,000-key SQLite table ran 2.4× (3-byte values) to 3× (100-byte)
/// faster (`cargo bench -p tiercache-stores --bench sqlite_flush`). Sorting
/// also replaces the hash map the deduplication needed.
///
/// The sort orders a compact array of 8-byte words, each taken from its
/// key just after the prefix all the batch's keys share, and reads the
/// keys themselves only to break ties. Comparing the keys directly (a
/// stable sort of references) chased two pointers into the heap per
/// comparison: in a durable server under unpipelined SETs that sort was
/// 14% of the SQLite writer thread's instructions (callgrind).
pub(crate) fn last_wins<'a, T>(items: &'a [T], key: impl Fn(&'a T) -> &'a Bytes) -> Vec<&'a T> {
    let shared = common_prefix_len(items.iter().map(&key));
    let mut order: Vec<(u64, usize)> = items
        .iter()
        .enumerate()
        .map(|(i, item)| (word_after(key(item), shared), i))
        .collect();
    // Equal keys end up in input order (the index breaks the tie), so a
    // run's last is the newest.
    order.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| key(&items[a.1]).cmp(key(&items[b.1])))
            .then(a.1.cmp(&b.1))
    });
    let mut kept: Vec<(u64, &'a T)> = Vec::with_capacity(order.len());
    for (word, i) in order {
        let item = &items[i];
        match kept.last_mut() {
            Some(last) if last.0 == word && key(last.1) == key(item) => last.1 = item,
            _ => kept.push((word, item)),
        }
    }
    kept.into_iter().map(|(_, item)| item).collect()
}

/// The length of the prefix every key shares (0 for no keys).
fn common_prefix_len<'a>(mut keys: impl Iterator<Item = &'a Bytes>) -> usize {
    let Some(first) = keys.next() else {
        return 0;
    };
    let mut len = first.len();
    for k in keys {
        len = first[..len]
            .iter()
            .zip(k.iter())
            .take_while(|(a, b)| a == b)
            .count();
        if len == 0 {
            break;
        }
    }
    len
}

/// The 8 bytes of `key` from `at`, zero-padded, big-endian: ordering these
/// words orders keys that share their first `at` bytes, except that keys
/// equal in these bytes (or differing only by trailing zeros here) tie.
fn word_after(key: &[u8], at: usize) -> u64 {
    let rest = &key[at.min(key.len())..];
    let mut word = [0u8; 8];
    let n = rest.len().min(8);
    word[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(word)
}

/// A `set_many` batch as the rows to upsert: the last entry of each key.
pub(crate) fn last_sets(entries: &[(Bytes, Entry)]) -> Vec<(&Bytes, &Entry)> {
    last_wins(entries, |(k, _)| k)
        .into_iter()
        .map(|(k, e)| (k, e))
        .collect()
}

/// An `apply` batch as upserts and deletes, each key's last mutation only
/// (so the two statements can run in either order).
pub(crate) fn split_batch(batch: &[Mutation]) -> (Vec<(&Bytes, &Entry)>, Vec<&Bytes>) {
    let mut sets = Vec::new();
    let mut deletes = Vec::new();
    for m in last_wins(batch, Mutation::key) {
        match m {
            Mutation::Set(k, e) => sets.push((k, e)),
            Mutation::Delete(k) => deletes.push(k),
        }
    }
    (sets, deletes)
}

/// The distinct keys of `keys`, first occurrence first.
pub(crate) fn unique(keys: &[Bytes]) -> Vec<&Bytes> {
    let mut seen = HashSet::with_capacity(keys.len());
    keys.iter().filter(|k| seen.insert(*k)).collect()
}

/// Expiries are signed 64-bit in both servers; beyond `i64::MAX` ms is
/// "never" in practice.
pub(crate) fn expiry_to_sql(t: Option<u64>) -> Option<i64> {
    t.map(|t| i64::try_from(t).unwrap_or(i64::MAX))
}

pub(crate) fn expiry_from_sql(t: Option<i64>) -> Option<u64> {
    t.map(|t| u64::try_from(t).unwrap_or(0))
}

/// One row of a key listing: its stored key and its real key.
pub(crate) struct ScanRow {
    pub stored: Vec<u8>,
    pub key: Vec<u8>,
}

/// A page request to the server: live rows with stored key after `lower`
/// and before `upper` (exclusive), in stored-key order, at most `limit`.
pub(crate) struct ScanPage {
    pub lower: Bound<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
    pub limit: usize,
}

/// The larger of two lower bounds.
fn max_lower(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    use Bound::*;
    let value = |x: &Bound<Vec<u8>>| match x {
        Unbounded => None,
        Included(v) | Excluded(v) => Some(v.clone()),
    };
    match (value(&a), value(&b)) {
        (None, _) => b,
        (_, None) => a,
        (Some(va), Some(vb)) if va > vb => a,
        (Some(va), Some(vb)) if vb > va => b,
        // Equal values: exclusive is the tighter bound.
        _ if matches!(a, Excluded(_)) => a,
        _ => b,
    }
}

fn min_upper(a: Option<Vec<u8>>, b: Option<Vec<u8>>) -> Option<Vec<u8>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// [`tiercache_engine::Store::scan_keys`] over stored keys: translates the
/// start bound and prefix into a stored-key range, asks `fetch` for pages,
/// completes and re-sorts tie groups, and filters with the real keys.
pub(crate) async fn scan_stored<E, F, Fut>(
    start: Bound<&[u8]>,
    prefix: &[u8],
    limit: usize,
    mut fetch: F,
) -> Result<Vec<Bytes>, E>
where
    F: FnMut(ScanPage) -> Fut,
    Fut: Future<Output = Result<Vec<ScanRow>, E>>,
{
    if limit == 0 {
        return Ok(Vec::new());
    }
    // For a bound or prefix of at most HEAD_LEN bytes, comparing stored keys
    // is exact; a longer one is cut to its head (covering its tie group)
    // and the real keys are filtered below.
    let mut lower = match start {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(s) if s.len() <= HEAD_LEN => Bound::Included(s.to_vec()),
        Bound::Excluded(s) if s.len() <= HEAD_LEN => Bound::Excluded(s.to_vec()),
        Bound::Included(s) | Bound::Excluded(s) => Bound::Included(s[..HEAD_LEN].to_vec()),
    };
    let mut upper = None;
    if !prefix.is_empty() {
        let head = &prefix[..prefix.len().min(HEAD_LEN)];
        lower = max_lower(lower, Bound::Included(head.to_vec()));
        upper = prefix_end(head);
    }

    let mut out: Vec<Bytes> = Vec::new();
    loop {
        let want = limit - out.len();
        let mut rows = fetch(ScanPage {
            lower: lower.clone(),
            upper: upper.clone(),
            limit: want,
        })
        .await?;
        let full = rows.len() >= want;
        let Some(last) = rows.last() else { break };
        if full && last.stored.len() == STORED_LONG_LEN {
            // The page may end inside a tie group: fetch the rest of it.
            let head = &last.stored[..HEAD_LEN];
            let rest = fetch(ScanPage {
                lower: Bound::Excluded(last.stored.clone()),
                upper: min_upper(upper.clone(), prefix_end(head)),
                limit: usize::MAX,
            })
            .await?;
            rows.extend(rest);
        }
        lower = Bound::Excluded(rows.last().expect("non-empty").stored.clone());
        sort_tie_groups(&mut rows);
        out.extend(
            rows.into_iter()
                .filter(|r| in_scan_range(&r.key, start, prefix))
                .map(|r| Bytes::from(r.key)),
        );
        if !full || out.len() >= limit {
            break;
        }
    }
    out.truncate(limit);
    Ok(out)
}

/// Sorts each run of long rows with the same head by real key.
fn sort_tie_groups(rows: &mut [ScanRow]) {
    let head =
        |r: &ScanRow| (r.stored.len() == STORED_LONG_LEN).then(|| r.stored[..HEAD_LEN].to_vec());
    let mut i = 0;
    while i < rows.len() {
        let Some(h) = head(&rows[i]) else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < rows.len() && head(&rows[j]).as_ref() == Some(&h) {
            j += 1;
        }
        rows[i..j].sort_by(|a, b| a.key.cmp(&b.key));
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn split_batch_keeps_each_keys_last_mutation() {
        let k = |s: &'static str| Bytes::from_static(s.as_bytes());
        let batch = vec![
            Mutation::Set(k("a"), Entry::new("1")),
            Mutation::Delete(k("b")),
            Mutation::Delete(k("a")),
            Mutation::Set(k("b"), Entry::new("2")),
        ];
        let (sets, deletes) = split_batch(&batch);
        assert_eq!(sets, vec![(&k("b"), &Entry::new("2"))]);
        assert_eq!(deletes, vec![&k("a")]);
    }

    #[test]
    fn short_keys_are_stored_as_is() {
        assert_eq!(&*stored_key(b"abc"), b"abc");
        let k = vec![7u8; HEAD_LEN];
        assert_eq!(&*stored_key(&k), &k[..]);
        assert!(long_key_column(&k).is_none());
    }

    #[test]
    fn long_keys_are_head_plus_hash() {
        let mut a = vec![1u8; HEAD_LEN + 10];
        let s = stored_key(&a).into_owned();
        assert_eq!(s.len(), STORED_LONG_LEN);
        assert_eq!(&s[..HEAD_LEN], &a[..HEAD_LEN]);
        a[HEAD_LEN + 5] = 2;
        assert_ne!(stored_key(&a).into_owned(), s, "the tail matters");
        assert_eq!(long_key_column(&a), Some(&a[..]));
    }

    #[test]
    fn prefix_ranges() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
    }

    #[test]
    fn table_names_are_validated() {
        for ok in ["kv", "_t", "Cache_2"] {
            assert!(validate_table(ok, 63).is_ok(), "{ok}");
        }
        let long = "t".repeat(64);
        for bad in [
            "",
            "1kv",
            "kv;drop",
            "k v",
            "k\"v",
            "k`v",
            "tiercache_meta",
            "é",
            long.as_str(),
        ] {
            assert!(validate_table(bad, 63).is_err(), "{bad}");
        }
    }

    #[test]
    fn last_wins_keeps_each_keys_last_occurrence_in_key_order() {
        let k = |s: &'static str| Bytes::from_static(s.as_bytes());
        let items = vec![
            (k("b"), 1),
            (k("a"), 2),
            (k("b"), 3),
            (k("c"), 4),
            (k("a"), 5),
            (k("b"), 6),
        ];
        let kept: Vec<_> = last_wins(&items, |(k, _)| k)
            .into_iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        assert_eq!(kept, vec![(k("a"), 5), (k("b"), 6), (k("c"), 4)]);
    }

    fn last_wins_of(items: &[(Bytes, u32)]) -> Vec<(Bytes, u32)> {
        last_wins(items, |(k, _)| k).into_iter().cloned().collect()
    }

    /// The items applied one after another to a sorted map.
    fn applied_in_order(items: &[(Bytes, u32)]) -> Vec<(Bytes, u32)> {
        let mut model = std::collections::BTreeMap::new();
        for (k, v) in items {
            model.insert(k.clone(), *v);
        }
        model.into_iter().collect()
    }

    proptest::proptest! {
        /// Same result as applying the items one after another to a map,
        /// for keys with a long shared prefix, keys that are prefixes of
        /// others, and keys that differ only after their first 8 bytes or
        /// by trailing zeros (where the sort's words tie).
        #[test]
        fn last_wins_orders_and_deduplicates_like_a_sorted_map(
            shared in proptest::collection::vec(0u8..3, 0..12),
            items in proptest::collection::vec(
                (proptest::collection::vec(0u8..3, 0..12), proptest::num::u32::ANY),
                0..200,
            )
        ) {
            let items: Vec<(Bytes, u32)> = items
                .into_iter()
                .map(|(tail, v)| (Bytes::from([&shared[..], &tail[..]].concat()), v))
                .collect();
            proptest::prop_assert_eq!(last_wins_of(&items), applied_in_order(&items));
        }

        /// Same result as applying the items one after another to a map.
        #[test]
        fn last_wins_matches_sequential_application(
            items in proptest::collection::vec((0u8..20, proptest::num::u32::ANY), 0..200)
        ) {
            let items: Vec<(Bytes, u32)> =
                items.into_iter().map(|(k, v)| (Bytes::from(vec![k]), v)).collect();
            proptest::prop_assert_eq!(last_wins_of(&items), applied_in_order(&items));
        }
    }

    #[test]
    fn lower_bounds_combine() {
        use Bound::*;
        let v = |s: &str| s.as_bytes().to_vec();
        assert_eq!(max_lower(Unbounded, Included(v("a"))), Included(v("a")));
        assert_eq!(
            max_lower(Excluded(v("b")), Included(v("a"))),
            Excluded(v("b"))
        );
        assert_eq!(
            max_lower(Included(v("a")), Excluded(v("a"))),
            Excluded(v("a"))
        );
    }

    /// A table in memory, answering pages the way the SQL servers do.
    fn fake_fetch(
        table: &BTreeMap<Vec<u8>, Vec<u8>>,
        page: ScanPage,
    ) -> std::future::Ready<Result<Vec<ScanRow>, ()>> {
        let rows = table
            .range((page.lower, Bound::Unbounded))
            .take_while(|(s, _)| page.upper.as_ref().is_none_or(|u| *s < u))
            .take(page.limit)
            .map(|(s, k)| ScanRow {
                stored: s.clone(),
                key: k.clone(),
            })
            .collect();
        std::future::ready(Ok(rows))
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn listing_pages_through_tie_groups_in_byte_order() {
        // Short keys around long keys that share a head, pages of every size.
        let head = vec![b'h'; HEAD_LEN];
        let mut keys: Vec<Vec<u8>> =
            vec![b"a".to_vec(), b"h".to_vec(), head.clone(), b"z".to_vec()];
        for tail in 0..20u8 {
            let mut k = head.clone();
            k.extend_from_slice(&[tail, 1, 2]);
            keys.push(k);
        }
        let mut other = vec![b'h'; HEAD_LEN - 1];
        other.extend_from_slice(b"i and more to make it long");
        other.resize(HEAD_LEN + 40, b'x');
        keys.push(other);
        let table: BTreeMap<Vec<u8>, Vec<u8>> = keys
            .iter()
            .map(|k| (stored_key(k).into_owned(), k.clone()))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();

        for prefix in [&b""[..], b"h", &head[..], &sorted[10][..HEAD_LEN + 1]] {
            let want: Vec<Vec<u8>> = sorted
                .iter()
                .filter(|k| k.starts_with(prefix))
                .cloned()
                .collect();
            for page in 1..=want.len() + 1 {
                let mut got: Vec<Vec<u8>> = Vec::new();
                let mut start: Option<Vec<u8>> = None;
                loop {
                    let bound = match &start {
                        None => Bound::Unbounded,
                        Some(s) => Bound::Excluded(&s[..]),
                    };
                    let keys =
                        block_on(scan_stored(bound, prefix, page, |p| fake_fetch(&table, p)))
                            .unwrap();
                    got.extend(keys.iter().map(|k| k.to_vec()));
                    if keys.len() < page {
                        break;
                    }
                    start = Some(keys.last().unwrap().to_vec());
                }
                assert_eq!(
                    got,
                    want,
                    "prefix of {} bytes, pages of {page}",
                    prefix.len()
                );
            }
        }
    }
}
