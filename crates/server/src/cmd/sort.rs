//! `SORT` and `SORT_RO`: the elements of a list, set or sorted set,
//! sorted (numerically, or with `ALPHA` as bytes), optionally by the values
//! of other keys (`BY weight_*`, `BY obj_*->field`), limited
//! (`LIMIT offset count`), mapped through other keys (`GET pattern`, `GET
//! #` for the element itself), and replied or stored as a list (`STORE
//! destination`).
//!
//! Semantics follow Redis 7.0's `sort.c`: numeric sorting breaks ties by
//! the elements' bytes; a `BY` key that is missing sorts as 0 (or first,
//! with `ALPHA`); a `BY` pattern without `*` does not sort (lists and
//! sorted sets keep their order, `DESC` reversing it; a set is sorted
//! `ALPHA` anyway when stored, so the result is deterministic); `LIMIT`'s
//! bounds are clamped as Redis clamps them.
//!
//! The keys that patterns name are only known once the source is read
//! (and, for `GET`, once it is sorted), so the command runs in rounds:
//! each round reads the source and every key asked for so far, and either
//! finishes or names the keys it still lacks. With `STORE` a round is one
//! [`Session::modify_many`](tiercache_engine::Session::modify_many) over
//! the source, those keys and the destination, so the whole sort and its
//! write see one state, as Redis's single thread does.

use super::collection::{collection_of, store};
use super::{engine_error_message, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE};
use crate::hash::Hash;
use crate::list::List;
use crate::resp::{parse_i64, reply};
use crate::set::Set;
use crate::zset::ZSet;
use bytes::Bytes;
use std::cmp::Ordering;
use std::collections::HashMap;
use tiercache_engine::{Change, Entry, ValueKind};

/// Redis's reply when a value does not read as a number.
const NOT_A_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// Rounds before giving up on a key space that keeps changing under a
/// sort (each round only adds keys, so two or three is the norm).
const MAX_ROUNDS: usize = 16;

/// The parsed options.
#[derive(Debug, Default)]
struct Options {
    desc: bool,
    alpha: bool,
    /// `LIMIT offset count` as given.
    limit: Option<(i64, i64)>,
    store: Option<Bytes>,
    by: Option<Bytes>,
    /// A `BY` pattern without `*`: keep the source's order.
    dont_sort: bool,
    gets: Vec<Bytes>,
    /// Run by a script: a set's order is made definite, as for `STORE`.
    from_script: bool,
}

/// `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
/// [ALPHA] [STORE destination]`; `SORT_RO` (`read_only`) has no `STORE`.
pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, read_only: bool) -> Flow {
    let opts = match parse(args, read_only) {
        Ok(o) => Options {
            from_script: ctx.client.in_script,
            ..o
        },
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    let source = args.bytes(1);
    let result = match opts.store.clone() {
        None => sort_and_read(ctx, &source, &opts).await,
        Some(dest) => sort_and_store(ctx, &source, dest, &opts).await,
    };
    match result {
        Ok(Sorted::Items(items)) => {
            reply::array(ctx.out, items.len());
            for item in &items {
                ctx.bulk_or_null(item.as_deref());
            }
        }
        Ok(Sorted::Stored(n)) => reply::integer(ctx.out, n as i64),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

fn parse(args: &Args<'_>, read_only: bool) -> Result<Options, String> {
    let mut o = Options::default();
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        if args.is(i, "asc") {
            o.desc = false;
        } else if args.is(i, "desc") {
            o.desc = true;
        } else if args.is(i, "alpha") {
            o.alpha = true;
        } else if args.is(i, "limit") && left >= 2 {
            let (Some(offset), Some(count)) =
                (parse_i64(args.get(i + 1)), parse_i64(args.get(i + 2)))
            else {
                return Err(NOT_AN_INTEGER.to_string());
            };
            o.limit = Some((offset, count));
            i += 2;
        } else if !read_only && args.is(i, "store") && left >= 1 {
            o.store = Some(args.bytes(i + 1));
            i += 1;
        } else if args.is(i, "by") && left >= 1 {
            let pattern = args.bytes(i + 1);
            o.dont_sort = !pattern.contains(&b'*');
            o.by = Some(pattern);
            i += 1;
        } else if args.is(i, "get") && left >= 1 {
            o.gets.push(args.bytes(i + 1));
            i += 1;
        } else {
            return Err(SYNTAX_ERROR.to_string());
        }
        i += 1;
    }
    Ok(o)
}

/// What a finished sort produced.
enum Sorted {
    /// The reply's items (`None`: a `GET` of a missing key).
    Items(Vec<Option<Bytes>>),
    /// `STORE`: the stored list's length.
    Stored(usize),
}

/// The keys read so far by a sort (`None`: absent).
type Found = HashMap<Bytes, Option<Entry>>;

/// A round's outcome: the items, the keys it lacked, or an error reply.
enum Round {
    Done(Vec<Option<Bytes>>),
    Need(Vec<Bytes>),
    Failed(String),
}

async fn sort_and_read(
    ctx: &mut Ctx<'_, '_>,
    source: &Bytes,
    opts: &Options,
) -> Result<Sorted, String> {
    let mut keys = vec![source.clone()];
    for _ in 0..MAX_ROUNDS {
        let entries = ctx
            .session
            .get_many(&keys)
            .await
            .map_err(|e| engine_error_message(&e))?;
        let found: Found = keys.iter().cloned().zip(entries).collect();
        match sort_round(found.get(source).and_then(Option::as_ref), &found, opts) {
            Round::Done(items) => return Ok(Sorted::Items(items)),
            Round::Need(more) => keys.extend(more),
            Round::Failed(msg) => return Err(msg),
        }
    }
    Err(too_many_rounds())
}

async fn sort_and_store(
    ctx: &mut Ctx<'_, '_>,
    source: &Bytes,
    dest: Bytes,
    opts: &Options,
) -> Result<Sorted, String> {
    let max = ctx.server.config.limits.max_bulk_len;
    // The source first, then the pattern keys, the destination last (it
    // may also be the source or a pattern key: the engine locks a key
    // once and keeps its last change).
    let mut keys = vec![source.clone()];
    for _ in 0..MAX_ROUNDS {
        let mut locked = keys.clone();
        locked.push(dest.clone());
        let mut existed = false;
        let round = ctx
            .session
            .modify_many(locked, |entries| {
                let n = entries.len();
                existed = entries[n - 1].is_some();
                let mut changes = vec![Change::Keep; n];
                let found: Found = keys.iter().cloned().zip(entries.iter().cloned()).collect();
                let round = sort_round(entries[0].as_ref(), &found, opts);
                if let Round::Done(items) = &round {
                    let list =
                        List::from_items(items.iter().map(|i| i.clone().unwrap_or_default()));
                    match store(None, &list, max) {
                        // Empty: whatever the destination held is deleted.
                        Ok(Change::Keep) => changes[n - 1] = Change::Delete,
                        Ok(change) => changes[n - 1] = change,
                        Err(msg) => return (changes, Round::Failed(msg)),
                    }
                }
                (changes, round)
            })
            .await
            .map_err(|e| engine_error_message(&e))?;
        match round {
            Round::Done(items) => {
                let stored = !items.is_empty();
                super::collection::notify_stored(
                    ctx,
                    crate::notify::class::LIST,
                    "sortstore",
                    &dest,
                    stored,
                    existed,
                );
                return Ok(Sorted::Stored(items.len()));
            }
            Round::Need(more) => keys.extend(more),
            Round::Failed(msg) => return Err(msg),
        }
    }
    Err(too_many_rounds())
}

fn too_many_rounds() -> String {
    format!("ERR SORT gave up: the keys its patterns name changed {MAX_ROUNDS} times while it ran")
}

/// The elements of the source, in its own order (`None`: absent, an empty
/// list), and whether it is a set.
fn elements(source: Option<&Entry>) -> Result<(Vec<Bytes>, bool), String> {
    let Some(e) = source else {
        return Ok((Vec::new(), false));
    };
    match e.kind {
        ValueKind::List => {
            let list = collection_of::<List>(Some(e))?.unwrap_or_default();
            let items = list
                .to_items()
                .map_err(|c| format!("ERR corrupt list value: {c}"))?;
            Ok((items.into(), false))
        }
        ValueKind::Set => {
            let set = collection_of::<Set>(Some(e))?.unwrap_or_default();
            Ok((set.iter_bytes().collect(), true))
        }
        ValueKind::ZSet => {
            let zset = collection_of::<ZSet>(Some(e))?.unwrap_or_default();
            Ok((zset.iter_bytes().map(|(m, _)| m).collect(), false))
        }
        _ => Err(WRONGTYPE.to_string()),
    }
}

/// What a sort compares an element by.
enum SortKey {
    Score(f64),
    /// `ALPHA` with `BY`: the looked-up value (`None`: missing, first).
    Text(Option<Bytes>),
    /// `ALPHA` without `BY`: the element itself.
    Element,
}

/// One round: sorts with the keys in `found`, or names the keys missing.
fn sort_round(source: Option<&Entry>, found: &Found, opts: &Options) -> Round {
    let (mut elems, is_set) = match elements(source) {
        Ok(e) => e,
        Err(msg) => return Round::Failed(msg),
    };
    let mut by = opts.by.as_ref();
    let mut alpha = opts.alpha;
    let mut dont_sort = opts.dont_sort;
    if dont_sort && is_set && (opts.store.is_some() || opts.from_script) {
        // A set has no order of its own: a stored result (or a script's)
        // must not depend on the encoding's, so it is sorted by the
        // elements' bytes, as Redis does.
        dont_sort = false;
        alpha = true;
        by = None;
    }
    let mut need = Vec::new();
    if dont_sort {
        if opts.desc && !is_set {
            elems.reverse();
        }
    } else {
        let mut keyed = Vec::with_capacity(elems.len());
        let mut bad_number = false;
        for elem in elems {
            let by_value = match by {
                Some(pattern) => lookup(pattern, &elem, found, &mut need),
                None => Some(elem.clone()),
            };
            let key = if alpha {
                if by.is_some() {
                    SortKey::Text(by_value)
                } else {
                    SortKey::Element
                }
            } else {
                match by_value.as_deref().map(score) {
                    Some(Some(s)) => SortKey::Score(s),
                    Some(None) => {
                        bad_number = true;
                        SortKey::Score(0.0)
                    }
                    None => SortKey::Score(0.0),
                }
            };
            keyed.push((elem, key));
        }
        if !need.is_empty() {
            return Round::Need(dedup(need));
        }
        if bad_number {
            return Round::Failed(NOT_A_DOUBLE.to_string());
        }
        keyed.sort_by(|a, b| {
            let cmp = compare(a, b);
            if opts.desc {
                cmp.reverse()
            } else {
                cmp
            }
        });
        elems = keyed.into_iter().map(|(e, _)| e).collect();
    }
    let range = limit_range(opts.limit, elems.len());
    let picked = &elems[range];
    if opts.gets.is_empty() {
        return Round::Done(picked.iter().cloned().map(Some).collect());
    }
    let mut items = Vec::with_capacity(picked.len() * opts.gets.len());
    for elem in picked {
        for pattern in &opts.gets {
            items.push(lookup(pattern, elem, found, &mut need));
        }
    }
    if need.is_empty() {
        Round::Done(items)
    } else {
        Round::Need(dedup(need))
    }
}

fn dedup(mut keys: Vec<Bytes>) -> Vec<Bytes> {
    keys.sort_unstable();
    keys.dedup();
    keys
}

fn compare(a: &(Bytes, SortKey), b: &(Bytes, SortKey)) -> Ordering {
    match (&a.1, &b.1) {
        // Equal scores fall back to the elements, so the result is
        // deterministic.
        (SortKey::Score(x), SortKey::Score(y)) => x
            .partial_cmp(y)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0)),
        (SortKey::Text(x), SortKey::Text(y)) => x.cmp(y),
        _ => a.0.cmp(&b.0),
    }
}

/// The index range `LIMIT offset count` selects of `len` elements, clamped
/// as Redis clamps it (a negative count: to the end).
fn limit_range(limit: Option<(i64, i64)>, len: usize) -> std::ops::Range<usize> {
    let Some((offset, count)) = limit else {
        return 0..len;
    };
    let len = len as i64;
    let start = offset.clamp(0, len);
    let count = count.clamp(-1, len);
    let end = if count < 0 {
        len
    } else {
        (start + count).min(len)
    };
    start as usize..end.max(start) as usize
}

/// `strtod` on the whole value, as Redis reads a sort weight: leading
/// white space is skipped, an empty value is 0, anything left over, an
/// overflow or NaN is an error (`None`).
fn score(raw: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(raw)
        .ok()?
        .trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if text.is_empty() {
        return Some(0.0);
    }
    let v: f64 = text.parse().ok()?;
    let spelled_infinite = text
        .trim_start_matches(['+', '-'])
        .to_ascii_lowercase()
        .starts_with("inf");
    if v.is_nan() || (v.is_infinite() && !spelled_infinite) {
        return None;
    }
    Some(v)
}

/// The value `pattern` names for `elem`: `#` is the element itself; the
/// first `*` is replaced by the element to make a key name, whose string
/// value is meant, or with `key->field` that hash field. A pattern without
/// `*`, a missing key, or one of another type names nothing (`None`). A
/// key not in `found` is added to `need` (and answers `None` for now).
fn lookup(pattern: &Bytes, elem: &Bytes, found: &Found, need: &mut Vec<Bytes>) -> Option<Bytes> {
    if &pattern[..] == b"#" {
        return Some(elem.clone());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let rest = &pattern[star + 1..];
    let (suffix, field) = match rest.windows(2).position(|w| w == b"->") {
        Some(at) if at + 2 < rest.len() => (&rest[..at], Some(&rest[at + 2..])),
        _ => (rest, None),
    };
    let key = [&pattern[..star], &elem[..], suffix].concat();
    let Some(entry) = found.get(&key[..]) else {
        need.push(Bytes::from(key));
        return None;
    };
    let entry = entry.as_ref()?;
    match (field, entry.kind) {
        (None, ValueKind::String) => Some(entry.value.clone()),
        (Some(field), ValueKind::Hash) => {
            let value = Hash::find(&entry.value, field).ok()??;
            Some(entry.value.slice_ref(value))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(items: &[&'static str]) -> Vec<Bytes> {
        items
            .iter()
            .map(|s| Bytes::from_static(s.as_bytes()))
            .collect()
    }

    fn found(pairs: &[(&str, Option<Entry>)]) -> Found {
        pairs
            .iter()
            .map(|(k, e)| (Bytes::copy_from_slice(k.as_bytes()), e.clone()))
            .collect()
    }

    #[test]
    fn limit_is_clamped_as_redis_clamps_it() {
        assert_eq!(limit_range(None, 5), 0..5);
        assert_eq!(limit_range(Some((1, 2)), 5), 1..3);
        assert_eq!(limit_range(Some((-3, 2)), 5), 0..2);
        assert_eq!(limit_range(Some((3, -1)), 5), 3..5);
        assert_eq!(limit_range(Some((3, 100)), 5), 3..5);
        assert_eq!(limit_range(Some((7, 2)), 5), 5..5);
        assert_eq!(limit_range(Some((0, 0)), 5), 0..0);
        assert_eq!(limit_range(Some((i64::MAX, i64::MAX)), 5), 5..5);
        assert_eq!(limit_range(Some((2, 3)), 0), 0..0);
    }

    #[test]
    fn scores_read_as_strtod_reads_them() {
        assert_eq!(score(b"1.5"), Some(1.5));
        assert_eq!(score(b"  -2"), Some(-2.0));
        assert_eq!(score(b""), Some(0.0));
        assert_eq!(score(b"inf"), Some(f64::INFINITY));
        assert_eq!(score(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(score(b"1e400"), None, "overflow");
        assert_eq!(score(b"nan"), None);
        assert_eq!(score(b"1x"), None);
        assert_eq!(score(b"1 "), None);
        assert_eq!(score(b"abc"), None);
    }

    #[test]
    fn patterns_name_keys_hash_fields_and_the_element() {
        let mut hash = Hash::default();
        hash.set(Bytes::from_static(b"w"), Bytes::from_static(b"7"));
        let f = found(&[
            ("weight_a", Some(Entry::new("3"))),
            (
                "obj_a",
                Some(Entry::with_kind(hash.encode(), None, 0, ValueKind::Hash)),
            ),
            ("gone_a", None),
        ]);
        let a = Bytes::from_static(b"a");
        let mut need = Vec::new();
        let pat = |p: &'static str| Bytes::from_static(p.as_bytes());
        assert_eq!(
            lookup(&pat("#"), &a, &f, &mut need).as_deref(),
            Some(&b"a"[..])
        );
        assert_eq!(
            lookup(&pat("weight_*"), &a, &f, &mut need).as_deref(),
            Some(&b"3"[..])
        );
        assert_eq!(
            lookup(&pat("obj_*->w"), &a, &f, &mut need).as_deref(),
            Some(&b"7"[..])
        );
        assert_eq!(
            lookup(&pat("obj_*->x"), &a, &f, &mut need),
            None,
            "no such field"
        );
        assert_eq!(
            lookup(&pat("obj_*"), &a, &f, &mut need),
            None,
            "a hash is not a string"
        );
        assert_eq!(
            lookup(&pat("weight_*->w"), &a, &f, &mut need),
            None,
            "a string is not a hash"
        );
        assert_eq!(lookup(&pat("gone_*"), &a, &f, &mut need), None);
        assert_eq!(lookup(&pat("constant"), &a, &f, &mut need), None);
        // "->" at the very end is part of the key name, not a field.
        assert_eq!(lookup(&pat("weight_*->"), &a, &f, &mut need), None);
        assert!(need.iter().any(|k| &k[..] == b"weight_a->"));
        assert_eq!(lookup(&pat("other_*"), &a, &f, &mut need), None);
        assert_eq!(need.last().map(|k| &k[..]), Some(&b"other_a"[..]));
    }

    #[test]
    fn a_round_names_the_keys_it_lacks_then_sorts_by_them() {
        let list = List::from_items(bytes(&["a", "b", "c"]));
        let source = Entry::with_kind(list.encode(), None, 0, ValueKind::List);
        let opts = Options {
            by: Some(Bytes::from_static(b"w_*")),
            gets: vec![Bytes::from_static(b"#"), Bytes::from_static(b"w_*")],
            ..Options::default()
        };
        let Round::Need(need) = sort_round(Some(&source), &Found::new(), &opts) else {
            panic!("the weights are not read yet");
        };
        assert_eq!(need.len(), 3);
        let f = found(&[
            ("w_a", Some(Entry::new("3"))),
            ("w_b", Some(Entry::new("1"))),
            ("w_c", None),
        ]);
        let Round::Done(items) = sort_round(Some(&source), &f, &opts) else {
            panic!("every key is there");
        };
        let items: Vec<Option<&[u8]>> = items.iter().map(|i| i.as_deref()).collect();
        let want: Vec<Option<&[u8]>> = vec![
            Some(b"c"),
            None,
            Some(b"b"),
            Some(b"1"),
            Some(b"a"),
            Some(b"3"),
        ];
        assert_eq!(items, want, "a missing weight sorts as 0");
    }

    #[test]
    fn numeric_sort_refuses_non_numbers_and_breaks_ties_by_bytes() {
        let list = List::from_items(bytes(&["2", "b", "1"]));
        let source = Entry::with_kind(list.encode(), None, 0, ValueKind::List);
        match sort_round(Some(&source), &Found::new(), &Options::default()) {
            Round::Failed(msg) => assert_eq!(msg, NOT_A_DOUBLE),
            _ => panic!("'b' is not a number"),
        }
        let list = List::from_items(bytes(&["10", "9", "x"]));
        let source = Entry::with_kind(list.encode(), None, 0, ValueKind::List);
        let opts = Options {
            by: Some(Bytes::from_static(b"nosuch_*")),
            ..Options::default()
        };
        let f = found(&[("nosuch_10", None), ("nosuch_9", None), ("nosuch_x", None)]);
        let Round::Done(items) = sort_round(Some(&source), &f, &opts) else {
            panic!("missing weights are 0, not errors");
        };
        let items: Vec<&[u8]> = items.iter().map(|i| i.as_deref().unwrap()).collect();
        assert_eq!(items, vec![&b"10"[..], b"9", b"x"], "all 0: by bytes");
    }

    #[test]
    fn a_stored_unsorted_set_is_sorted_alpha() {
        let set = Set::from_members(bytes(&["c", "a", "b"]));
        let source = Entry::with_kind(set.encode(), None, 0, ValueKind::Set);
        let opts = Options {
            by: Some(Bytes::from_static(b"nosort")),
            dont_sort: true,
            store: Some(Bytes::from_static(b"dest")),
            desc: true,
            ..Options::default()
        };
        let Round::Done(items) = sort_round(Some(&source), &Found::new(), &opts) else {
            panic!("no keys to read");
        };
        let items: Vec<&[u8]> = items.iter().map(|i| i.as_deref().unwrap()).collect();
        assert_eq!(items, vec![&b"c"[..], b"b", b"a"]);
    }
}
