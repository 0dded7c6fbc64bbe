//! Combining sorted sets: `ZUNION`, `ZINTER`, `ZDIFF`, their `STORE`
//! forms, and `ZINTERCARD`, with Redis 7.0's parser
//! (`zunionInterDiffGenericCommand`): `numkeys`, then `WEIGHTS`,
//! `AGGREGATE SUM|MIN|MAX` (not for `ZDIFF`), `WITHSCORES` (not for the
//! `STORE` forms), `LIMIT` (`ZINTERCARD` only). A plain set counts as a
//! sorted set whose scores are all 1. Every key's type is checked before
//! the options.

use super::{parse_score, reply_members};
use crate::cmd::collection::{self, collection_of, store};
use crate::cmd::{
    engine_error_message, parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR, WRONGTYPE,
};
use crate::notify::class;
use crate::resp::reply;
use crate::set::Set;
use crate::zset::ZSet;
use bytes::Bytes;
use std::collections::HashMap;
use tiercache_engine::{Change, Entry, ValueKind};

/// Which operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `ZUNION`: members of any input.
    Union,
    /// `ZINTER`: members of every input.
    Inter,
    /// `ZDIFF`: members of the first input in no other.
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// What the command asked, once parsed.
struct Request {
    keys: Vec<Bytes>,
    /// The options, or their error: reported only after the keys' types
    /// were checked, as Redis does.
    options: Result<Options, String>,
}

struct Options {
    weights: Vec<f64>,
    aggregate: Aggregate,
    with_scores: bool,
    limit: u64,
}

/// Which form: `store` (a destination at argument 1), or `card`
/// (`ZINTERCARD`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Reply,
    Store,
    Card,
}

fn parse(args: &Args<'_>, op: Op, form: Form, name: &str) -> Result<Request, String> {
    let at = if form == Form::Store { 2 } else { 1 };
    let numkeys = parse_i64(args.get(at)).ok_or(NOT_AN_INTEGER)?;
    if numkeys < 1 {
        return Err(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        ));
    }
    if numkeys as u64 > (args.len() - at - 1) as u64 {
        return Err(SYNTAX_ERROR.into());
    }
    let n = numkeys as usize;
    let keys: Vec<Bytes> = (at + 1..at + 1 + n).map(|i| args.bytes(i)).collect();
    Ok(Request {
        keys,
        options: parse_options(args, at + 1 + n, n, op, form),
    })
}

fn parse_options(
    args: &Args<'_>,
    from: usize,
    n: usize,
    op: Op,
    form: Form,
) -> Result<Options, String> {
    let mut r = Options {
        weights: vec![1.0; n],
        aggregate: Aggregate::Sum,
        with_scores: false,
        limit: 0,
    };
    let mut j = from;
    while j < args.len() {
        let remaining = args.len() - j;
        let combining = op != Op::Diff && form != Form::Card;
        if combining && remaining > n && args.is(j, "weights") {
            for w in r.weights.iter_mut() {
                j += 1;
                *w = parse_score(args.get(j)).ok_or("ERR weight value is not a float")?;
            }
            j += 1;
        } else if combining && remaining >= 2 && args.is(j, "aggregate") {
            r.aggregate = match () {
                _ if args.is(j + 1, "sum") => Aggregate::Sum,
                _ if args.is(j + 1, "min") => Aggregate::Min,
                _ if args.is(j + 1, "max") => Aggregate::Max,
                _ => return Err(SYNTAX_ERROR.into()),
            };
            j += 2;
        } else if form == Form::Reply && args.is(j, "withscores") {
            r.with_scores = true;
            j += 1;
        } else if form == Form::Card && remaining >= 2 && args.is(j, "limit") {
            r.limit = parse_i64(args.get(j + 1))
                .filter(|&l| l >= 0)
                .ok_or("ERR LIMIT can't be negative")? as u64;
            j += 2;
        } else {
            return Err(SYNTAX_ERROR.into());
        }
    }
    Ok(r)
}

/// An input's members and scores.
type Members = Vec<(Bytes, f64)>;

/// An input as members and scores: a sorted set, a set (scores 1), or
/// nothing; another type is `WRONGTYPE`.
fn input(entry: Option<&Entry>) -> Result<Option<Members>, String> {
    match entry {
        Some(e) if e.kind == ValueKind::Set => {
            Ok(collection_of::<Set>(Some(e))?.map(|s| s.iter_bytes().map(|m| (m, 1.0)).collect()))
        }
        Some(e) if e.kind == ValueKind::ZSet => {
            Ok(collection_of::<ZSet>(Some(e))?.map(|z| z.iter_bytes().collect()))
        }
        Some(_) => Err(WRONGTYPE.into()),
        None => Ok(None),
    }
}

/// Redis's `zunionInterAggregate`: a sum of `inf` and `-inf` is 0.
fn aggregate(how: Aggregate, acc: f64, v: f64) -> f64 {
    match how {
        Aggregate::Sum => {
            let s = acc + v;
            if s.is_nan() {
                0.0
            } else {
                s
            }
        }
        Aggregate::Min => acc.min(v),
        Aggregate::Max => acc.max(v),
    }
}

/// A weighted score; `0 × inf` is 0, as in Redis.
fn weighted(w: f64, s: f64) -> f64 {
    let v = w * s;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

/// The result of `op` over the inputs found at the request's keys (and
/// the options, which need not be re-read by the caller).
fn compute<'r>(
    op: Op,
    r: &'r Request,
    found: &[Option<Entry>],
) -> Result<(ZSet, &'r Options), String> {
    let mut inputs = Vec::with_capacity(found.len());
    for e in found {
        inputs.push(input(e.as_ref())?);
    }
    let r = r.options.as_ref().map_err(Clone::clone)?;
    // Redis combines the inputs smallest first (the sum's rounding
    // depends on the order); ZDIFF keeps its first input first.
    let mut inputs: Vec<(Option<Members>, f64)> =
        inputs.into_iter().zip(r.weights.iter().copied()).collect();
    if op != Op::Diff {
        inputs.sort_by_key(|(i, _)| i.as_ref().map_or(0, Vec::len));
    }
    let mut out = ZSet::default();
    let pairs: Vec<(Bytes, f64)> = match op {
        Op::Union => {
            let mut acc: HashMap<Bytes, f64> = HashMap::new();
            for (input, w) in &inputs {
                let w = *w;
                for (m, s) in input.iter().flatten() {
                    let v = weighted(w, *s);
                    acc.entry(m.clone())
                        .and_modify(|a| *a = aggregate(r.aggregate, *a, v))
                        .or_insert(v);
                }
            }
            acc.into_iter().collect()
        }
        Op::Inter => {
            if inputs.iter().any(|(i, _)| i.is_none()) {
                Vec::new()
            } else {
                let inputs: Vec<(&Vec<(Bytes, f64)>, f64)> = inputs
                    .iter()
                    .map(|(i, w)| (i.as_ref().expect("checked"), *w))
                    .collect();
                let indexes: Vec<HashMap<&[u8], f64>> = inputs
                    .iter()
                    .map(|(i, _)| i.iter().map(|(m, s)| (&m[..], *s)).collect())
                    .collect();
                let (first, w0) = inputs[0];
                first
                    .iter()
                    .filter_map(|(m, s)| {
                        let mut acc = weighted(w0, *s);
                        for (k, (_, w)) in inputs.iter().enumerate().skip(1) {
                            acc =
                                aggregate(r.aggregate, acc, weighted(*w, *indexes[k].get(&m[..])?));
                        }
                        Some((m.clone(), acc))
                    })
                    .collect()
            }
        }
        Op::Diff => match &inputs[0].0 {
            None => Vec::new(),
            Some(first) => {
                let rest: std::collections::HashSet<&[u8]> = inputs[1..]
                    .iter()
                    .filter_map(|(i, _)| i.as_ref())
                    .flat_map(|i| i.iter().map(|(m, _)| &m[..]))
                    .collect();
                first
                    .iter()
                    .filter(|(m, _)| !rest.contains(&m[..]))
                    .cloned()
                    .collect()
            }
        },
    };
    out.update_many(pairs, |_, s| Some(s));
    Ok((out, r))
}

/// `ZUNION`/`ZINTER`/`ZDIFF numkeys key [key ...] [options] [WITHSCORES]`.
pub async fn zcombine(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, op: Op, name: &str) -> Flow {
    let r = match parse(args, op, Form::Reply, name) {
        Ok(r) => r,
        Err(msg) => return error(ctx, &msg),
    };
    let found = match ctx.session.get_many(&r.keys).await {
        Ok(f) => f,
        Err(e) => return error(ctx, &engine_error_message(&e)),
    };
    match compute(op, &r, &found) {
        Ok((z, o)) => reply_members(ctx, z.iter(), o.with_scores),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `ZUNIONSTORE`/`ZINTERSTORE`/`ZDIFFSTORE destination numkeys key [key
/// ...] [options]`: the result's size; the destination is replaced
/// (deleted when the result is empty) under every key's lock.
pub async fn zcombine_store(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, op: Op, name: &str) -> Flow {
    let r = match parse(args, op, Form::Store, name) {
        Ok(r) => r,
        Err(msg) => return error(ctx, &msg),
    };
    let mut keys = r.keys.clone();
    keys.push(args.bytes(1));
    let max = ctx.server.config.limits.max_bulk_len;
    let done = ctx
        .session
        .modify_many(keys, |found| {
            let n = found.len();
            let mut changes = vec![Change::Keep; n];
            let z = match compute(op, &r, &found[..n - 1]) {
                Ok((z, _)) => z,
                Err(msg) => return (changes, Err(msg)),
            };
            match store(None, &z, max) {
                Ok(Change::Keep) => changes[n - 1] = Change::Delete,
                Ok(change) => changes[n - 1] = change,
                Err(msg) => return (changes, Err(msg)),
            }
            (changes, Ok((z.len(), found[n - 1].is_some())))
        })
        .await;
    match done {
        Ok(Ok((n, existed))) => {
            let dst = args.get(1);
            collection::notify_stored(ctx, class::ZSET, name, dst, n > 0, existed);
            reply::integer(ctx.out, n as i64)
        }
        Ok(Err(msg)) => ctx.error(&msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]`.
pub async fn zintercard(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let r = match parse(args, Op::Inter, Form::Card, "zintercard") {
        Ok(r) => r,
        Err(msg) => return error(ctx, &msg),
    };
    let found = match ctx.session.get_many(&r.keys).await {
        Ok(f) => f,
        Err(e) => return error(ctx, &engine_error_message(&e)),
    };
    match compute(Op::Inter, &r, &found) {
        Ok((z, o)) => {
            let n = z.len() as u64;
            reply::integer(ctx.out, if o.limit > 0 { n.min(o.limit) } else { n } as i64)
        }
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

fn error(ctx: &mut Ctx<'_, '_>, msg: &str) -> Flow {
    ctx.error(msg);
    Flow::Continue
}
