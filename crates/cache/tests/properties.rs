//! Property tests for `tiercache-cache`: random operation sequences checked
//! against a small model after every step.
//!
//! The cache's eviction choices are not modelled (they depend on the policy's
//! internal state); instead the model tracks what the public contract pins
//! down exactly:
//!
//! - the weight bound and exact weight accounting;
//! - pinned entries, which the policy must never evict;
//! - expiry, exact to the millisecond;
//! - the statistics counters;
//! - the last value written per key (a value read back is never stale, and
//!   a key that has left the cache never comes back without a new write).
//!
//! Each property test enables only its own checks, so one broken invariant
//! does not make every test fail. The model itself is kept in sync with what
//! the cache really holds after each step, so it stays usable even when an
//! unrelated invariant is broken.

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tiercache_cache::{Cache, CacheStats, Insertion, Measure};

// ---------------------------------------------------------------------------
// Values and measure
// ---------------------------------------------------------------------------

/// A cached value: its weight, its absolute expiry, and a unique write id so
/// that two writes of the same key are always distinguishable.
#[derive(Clone, Debug, PartialEq, Eq)]
struct V {
    w: u64,
    at: Option<u64>,
    id: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Meas;

impl Measure<u64, V> for Meas {
    fn weight(&self, _key: &u64, value: &V) -> u64 {
        value.w
    }

    fn expires_at(&self, value: &V) -> Option<u64> {
        value.at
    }
}

type TestCache = Cache<u64, V, Meas>;

/// Not expired at `now` (an entry is expired at `now >= at`).
fn live(v: &V, now: u64) -> bool {
    match v.at {
        None => true,
        Some(t) => t > now,
    }
}

/// Clock value at the start of every run (so `get`, which reads at time 0,
/// never sees an entry as expired: every `at` is at least 1).
const START: u64 = 1_000;

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

/// `ttl` is relative to the model clock: the entry's `expires_at` is
/// `max(1, now + ttl)`, so negative values make entries that are already
/// expired when written.
#[derive(Clone, Debug)]
enum Op {
    /// `get(k)` (the time-0 read).
    Get(u64),
    /// `get_at(k, now)`.
    GetAt(u64),
    /// `peek(k)`.
    Peek(u64),
    Insert {
        key: u64,
        w: u64,
        ttl: Option<i64>,
    },
    InsertPinned {
        key: u64,
        w: u64,
        ttl: Option<i64>,
    },
    InsertIfAbsent {
        key: u64,
        w: u64,
        ttl: Option<i64>,
    },
    /// `unpin_if(k, |v| v.w <= max_w)`.
    Unpin {
        key: u64,
        max_w: u64,
    },
    Remove(u64),
    /// `expire_due(now, limit)`; `None` is `usize::MAX`.
    ExpireDue {
        limit: Option<usize>,
    },
    AdvanceClock(u64),
    /// If `k` is present with `expires_at = Some(t)`: `get_at(k, t - 1)` and
    /// `get_at(k, t)`; with no expiry: `get_at(k, u64::MAX)`.
    ProbeTtl(u64),
    /// `clear()`: everything goes, pinned entries included.
    Clear,
}

#[derive(Clone, Copy, Debug)]
struct Cfg {
    shards: usize,
    capacity: u64,
    /// `expected_entries`: small values make the sketch age often.
    expected: u64,
}

fn key() -> impl Strategy<Value = u64> {
    // Mostly a tiny hot set (overwrites, pins and unpins of the same keys),
    // sometimes the wider space (eviction pressure).
    prop_oneof![3 => 0..8u64, 2 => 0..64u64]
}

fn weight() -> impl Strategy<Value = u64> {
    1..=40u64
}

fn ttl() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        4 => Just(None),
        2 => (-3i64..20).prop_map(Some),
        2 => (0i64..500).prop_map(Some),
        1 => (0i64..100_000).prop_map(Some),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => key().prop_map(Op::Get),
        2 => key().prop_map(Op::GetAt),
        1 => key().prop_map(Op::Peek),
        6 => (key(), weight(), ttl()).prop_map(|(key, w, ttl)| Op::Insert { key, w, ttl }),
        3 => (key(), weight(), ttl()).prop_map(|(key, w, ttl)| Op::InsertPinned { key, w, ttl }),
        2 => (key(), weight(), ttl()).prop_map(|(key, w, ttl)| Op::InsertIfAbsent { key, w, ttl }),
        2 => (key(), 0..=40u64).prop_map(|(key, max_w)| Op::Unpin { key, max_w }),
        1 => key().prop_map(Op::Remove),
        2 => prop_oneof![3 => Just(None), 1 => (0usize..4).prop_map(Some)]
            .prop_map(|limit| Op::ExpireDue { limit }),
        2 => prop_oneof![0..5u64, 0..200u64, 0..5_000u64, 0..200_000u64].prop_map(Op::AdvanceClock),
        1 => key().prop_map(Op::ProbeTtl),
        1 => prop_oneof![5 => key().prop_map(Op::Peek), 1 => Just(Op::Clear)],
    ]
}

fn cfg() -> impl Strategy<Value = Cfg> {
    (
        prop_oneof![Just(1usize), Just(4usize)],
        16..=320u64,
        prop_oneof![Just(64u64), 1..=128u64],
    )
        .prop_map(|(shards, capacity, expected)| Cfg {
            shards,
            capacity,
            expected,
        })
}

fn scenario(max_ops: usize) -> impl Strategy<Value = (Cfg, Vec<Op>)> {
    (cfg(), prop::collection::vec(op(), 1..max_ops))
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

/// Which invariants a run checks.
#[derive(Clone, Copy, Debug, Default)]
struct Checks {
    /// 1. `weight <= capacity`, exact weight and pinned-weight accounting.
    weight: bool,
    /// 2. Pinned entries are never evicted; `is_pinned`/`unpin_if` agree
    ///    with the model.
    pinned: bool,
    /// 2b. `Rejected` exactly when the entry is heavier than a shard or the
    ///     pinned weight leaves no room (the documented reasons only), for
    ///     insertions of absent keys...
    reject_rule: bool,
    /// ...and for overwrites of present keys.
    reject_rule_overwrite: bool,
    /// 3. Expiry exact to the millisecond; `expire_due` removes exactly the
    ///    due entries.
    ttl: bool,
    /// 4. Statistics counters.
    counters: bool,
    /// 5. Values read back are the last written; nothing is resurrected.
    values: bool,
}

type Snapshot = BTreeMap<u64, V>;

struct Harness {
    cache: TestCache,
    cfg: Cfg,
    ck: Checks,
    now: u64,
    next_id: u64,
    /// Keys that may be present, with the last value written. A key is
    /// dropped when it is observed absent: it must not come back unwritten.
    last: BTreeMap<u64, V>,
    /// Keys the test pinned (and has not released, removed, overwritten
    /// unpinned, or seen expire).
    pinned: BTreeSet<u64>,
    hits: u64,
    misses: u64,
    inserts: u64,
    rejected: u64,
    expired: u64,
    step: usize,
}

impl Harness {
    fn new(cfg: Cfg, ck: Checks) -> Self {
        let cache = Cache::<u64, V>::builder(cfg.capacity)
            .shards(cfg.shards)
            .expected_entries(cfg.expected)
            .measure(Meas)
            .build();
        Harness {
            cache,
            cfg,
            ck,
            now: START,
            next_id: 0,
            last: BTreeMap::new(),
            pinned: BTreeSet::new(),
            hits: 0,
            misses: 0,
            inserts: 0,
            rejected: 0,
            expired: 0,
            step: 0,
        }
    }

    fn snapshot(&self) -> Result<Snapshot, TestCaseError> {
        let mut out = Snapshot::new();
        let mut dup = None;
        self.cache.for_each(|k, v| {
            if out.insert(*k, v.clone()).is_some() {
                dup = Some(*k);
            }
        });
        prop_assert!(
            dup.is_none(),
            "step {}: for_each yielded key {:?} twice",
            self.step,
            dup
        );
        Ok(out)
    }

    fn value(&mut self, w: u64, ttl: Option<i64>) -> V {
        self.next_id += 1;
        V {
            w,
            at: ttl.map(|d| (self.now as i64 + d).max(1) as u64),
            id: self.next_id,
        }
    }

    fn lookup(&mut self, found: bool) {
        if found {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
    }

    /// A value read back for `k` must be the last one written.
    fn check_read(&self, what: &str, k: u64, got: &Option<V>) -> Result<(), TestCaseError> {
        if self.ck.values {
            if let Some(v) = got {
                prop_assert_eq!(
                    self.last.get(&k),
                    Some(v),
                    "step {}: {}({}) returned a value that is not the last written for the key",
                    self.step,
                    what,
                    k
                );
            }
        }
        Ok(())
    }

    fn run(&mut self, ops: &[Op]) -> Result<(), TestCaseError> {
        for (i, op) in ops.iter().enumerate() {
            self.step = i;
            self.apply(op)?;
        }
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let before = self.snapshot()?;
        let st0 = self.cache.stats();
        let pw0 = self.cache.pinned_weight();
        let step = self.step;
        // The key an insert/remove targets (it may legitimately disappear).
        let mut target: Option<u64> = None;
        // Whether the target's disappearance may be counted as an eviction
        // (an overwrite that is rejected may or may not be counted).
        let mut target_may_count = false;
        let mut expired_now: Option<usize> = None;
        let mut reported: Vec<u64> = Vec::new();

        match *op {
            Op::Get(k) => {
                let r = self.cache.get(&k);
                self.lookup(r.is_some());
                self.check_read("get", k, &r)?;
                if self.ck.values {
                    // `get` ignores expiry (reads at time 0; every `at` >= 1).
                    prop_assert_eq!(
                        r.as_ref(),
                        before.get(&k),
                        "step {}: get({}) disagrees with for_each",
                        step,
                        k
                    );
                }
            }
            Op::GetAt(k) => {
                let r = self.cache.get_at(&k, self.now);
                self.lookup(r.is_some());
                self.check_read("get_at", k, &r)?;
                if self.ck.ttl {
                    let now = self.now;
                    let want = before.get(&k).filter(|v| live(v, now));
                    prop_assert_eq!(
                        r.as_ref(),
                        want,
                        "step {}: get_at({}, now={}) wrong (entry: {:?})",
                        step,
                        k,
                        now,
                        before.get(&k)
                    );
                }
            }
            Op::Peek(k) => {
                let r = self.cache.peek(&k);
                self.check_read("peek", k, &r)?;
                if self.ck.values {
                    prop_assert_eq!(
                        r.as_ref(),
                        before.get(&k),
                        "step {}: peek({}) disagrees with for_each",
                        step,
                        k
                    );
                }
            }
            Op::ProbeTtl(k) => match before.get(&k).cloned() {
                Some(v) => match v.at {
                    Some(t) => {
                        let a = self.cache.get_at(&k, t - 1);
                        self.lookup(a.is_some());
                        let b = self.cache.get_at(&k, t);
                        self.lookup(b.is_some());
                        self.check_read("get_at", k, &a)?;
                        if self.ck.ttl {
                            prop_assert_eq!(
                                a.as_ref(),
                                Some(&v),
                                "step {}: get_at({}, at-1={}) must return the entry",
                                step,
                                k,
                                t - 1
                            );
                            prop_assert_eq!(
                                b,
                                None,
                                "step {}: get_at({}, at={}) must miss",
                                step,
                                k,
                                t
                            );
                        }
                    }
                    None => {
                        let a = self.cache.get_at(&k, u64::MAX);
                        self.lookup(a.is_some());
                        self.check_read("get_at", k, &a)?;
                        if self.ck.ttl {
                            prop_assert_eq!(
                                a.as_ref(),
                                Some(&v),
                                "step {}: get_at({}, MAX) of an entry without expiry must hit",
                                step,
                                k
                            );
                        }
                    }
                },
                None => {
                    let a = self.cache.get_at(&k, self.now);
                    self.lookup(a.is_some());
                    if self.ck.values {
                        prop_assert_eq!(
                            a,
                            None,
                            "step {}: get_at({}) of an absent key hit",
                            step,
                            k
                        );
                    }
                }
            },
            Op::Insert { key, w, ttl }
            | Op::InsertPinned { key, w, ttl }
            | Op::InsertIfAbsent { key, w, ttl } => {
                let v = self.value(w, ttl);
                let pin = matches!(op, Op::InsertPinned { .. });
                let r = match op {
                    Op::Insert { .. } => self.cache.insert(key, v.clone()),
                    Op::InsertPinned { .. } => {
                        let out = self.cache.insert_pinned(key, v.clone());
                        let (r, displaced) = (out.insertion, out.displaced);
                        if self.ck.values {
                            prop_assert_eq!(
                                out.rejected.as_ref(),
                                (r == Insertion::Rejected).then_some(&v),
                                "step {}: a rejected value is handed back, a stored one is not",
                                step
                            );
                        }
                        if self.ck.pinned {
                            let want = before.get(&key).filter(|_| self.pinned.contains(&key));
                            prop_assert_eq!(
                                displaced.as_ref(),
                                want,
                                "step {}: insert_pinned({}) displaced {:?}, the model says {:?}",
                                step,
                                key,
                                displaced,
                                want
                            );
                        }
                        r
                    }
                    _ => self.cache.insert_if_absent(key, v.clone()),
                };
                let was = before.get(&key);
                let share = self.cache.max_entry_weight();
                // Pinned weight of everything but `key` itself.
                let key_pinned_w = if was.is_some() && self.pinned.contains(&key) {
                    was.map_or(0, |v| v.w)
                } else {
                    0
                };
                let others_pinned = pw0.saturating_sub(key_pinned_w);
                if self.ck.values || self.ck.counters {
                    let present = r == Insertion::Present;
                    let want_present = matches!(op, Op::InsertIfAbsent { .. }) && was.is_some();
                    prop_assert_eq!(
                        present,
                        want_present,
                        "step {}: {:?} returned {:?} but the key was {}",
                        step,
                        op,
                        r,
                        if was.is_some() { "present" } else { "absent" }
                    );
                }
                let rule_applies = if was.is_some() {
                    self.ck.reject_rule_overwrite
                } else {
                    self.ck.reject_rule
                };
                if rule_applies && r != Insertion::Present {
                    if w > share {
                        prop_assert_eq!(
                            r,
                            Insertion::Rejected,
                            "step {}: {:?} heavier than a shard ({}) was not rejected",
                            step,
                            op,
                            share
                        );
                    } else if others_pinned + w <= share {
                        // Even if every pinned byte sat in this key's shard
                        // there would be room: nothing justifies a rejection.
                        prop_assert_eq!(
                            r,
                            Insertion::Stored,
                            "step {}: {:?} rejected although shard share {} - pinned weight of others {} leaves room (overwrite: {})",
                            step,
                            op,
                            share,
                            others_pinned,
                            was.is_some()
                        );
                    } else if self.cfg.shards == 1 {
                        prop_assert_eq!(
                            r,
                            Insertion::Rejected,
                            "step {}: {:?} stored although pinned weight of others {} + {} > capacity {}",
                            step,
                            op,
                            others_pinned,
                            w,
                            share
                        );
                    }
                }
                match r {
                    Insertion::Present => {
                        prop_assert!(
                            !self.ck.values
                                || !matches!(op, Op::Insert { .. } | Op::InsertPinned { .. }),
                            "step {}: Present from a plain insert",
                            step
                        );
                    }
                    Insertion::Stored => {
                        self.inserts += 1;
                        self.last.insert(key, v.clone());
                        if pin {
                            self.pinned.insert(key);
                        } else {
                            self.pinned.remove(&key);
                        }
                        target = Some(key);
                    }
                    Insertion::Rejected => {
                        self.inserts += 1;
                        self.rejected += 1;
                        self.last.remove(&key);
                        self.pinned.remove(&key);
                        target = Some(key);
                        target_may_count = was.is_some();
                    }
                }
                if r != Insertion::Present {
                    let now_there = self.cache.peek(&key);
                    if self.ck.values {
                        match r {
                            Insertion::Stored => prop_assert_eq!(
                                now_there.as_ref(),
                                Some(&v),
                                "step {}: {:?} returned Stored but peek disagrees",
                                step,
                                op
                            ),
                            _ => prop_assert_eq!(
                                now_there,
                                None,
                                "step {}: {:?} returned Rejected but the key is still there",
                                step,
                                op
                            ),
                        }
                    }
                    if self.ck.pinned && r == Insertion::Stored {
                        prop_assert_eq!(
                            self.cache.is_pinned(&key),
                            pin,
                            "step {}: {:?} Stored but is_pinned is wrong",
                            step,
                            op
                        );
                    }
                }
            }
            Op::Unpin { key, max_w } => {
                let r = self.cache.unpin_if(&key, |v| v.w <= max_w);
                let want =
                    self.pinned.contains(&key) && before.get(&key).is_some_and(|v| v.w <= max_w);
                if self.ck.pinned {
                    prop_assert_eq!(
                        r,
                        want,
                        "step {}: unpin_if({}, w <= {}) returned {} (entry {:?}, model pinned {})",
                        step,
                        key,
                        max_w,
                        r,
                        before.get(&key),
                        self.pinned.contains(&key)
                    );
                }
                if r {
                    self.pinned.remove(&key);
                }
            }
            Op::Remove(k) => {
                let r = self.cache.remove(&k);
                self.check_read("remove", k, &r)?;
                if self.ck.values {
                    prop_assert_eq!(
                        r.as_ref(),
                        before.get(&k),
                        "step {}: remove({}) disagrees with for_each",
                        step,
                        k
                    );
                    prop_assert_eq!(
                        self.cache.peek(&k),
                        None,
                        "step {}: key {} still there after remove",
                        step,
                        k
                    );
                }
                self.last.remove(&k);
                self.pinned.remove(&k);
                target = Some(k);
            }
            Op::ExpireDue { limit } => {
                let limit = limit.unwrap_or(usize::MAX);
                let mut keys = Vec::new();
                let n = self.cache.expire_due_into(self.now, limit, &mut keys);
                prop_assert_eq!(n, keys.len(), "step {}: removed vs reported", step);
                reported = keys;
                expired_now = Some(n);
                self.expired += n as u64;
            }
            Op::AdvanceClock(d) => self.now += d,
            Op::Clear => {
                self.cache.clear();
                self.last.clear();
                self.pinned.clear();
                if self.ck.values || self.ck.weight {
                    prop_assert_eq!(
                        self.cache.len(),
                        0,
                        "step {}: entries left after clear",
                        step
                    );
                    prop_assert_eq!(
                        self.cache.weight(),
                        0,
                        "step {}: weight left after clear",
                        step
                    );
                    prop_assert_eq!(
                        self.cache.pinned_weight(),
                        0,
                        "step {}: pinned weight left after clear",
                        step
                    );
                }
            }
        }

        let after = self.snapshot()?;
        let st1 = self.cache.stats();
        let gone: Vec<u64> = before
            .keys()
            .filter(|k| !after.contains_key(k))
            .copied()
            .collect();
        if expired_now.is_some() {
            // The keys expire_due_into reports are exactly the ones it removed.
            reported.sort_unstable();
            let mut gone_sorted = gone.clone();
            gone_sorted.sort_unstable();
            prop_assert_eq!(&reported, &gone_sorted, "step {}: reported keys", step);
        }

        // 3. expire_due removes exactly the due entries.
        if let Some(n) = expired_now {
            let now = self.now;
            if self.ck.ttl {
                for k in &gone {
                    let v = &before[k];
                    prop_assert!(
                        !self.ck.pinned || !self.pinned.contains(k),
                        "step {}: expire_due(now={}) removed pinned entry {} {:?}",
                        step,
                        now,
                        k,
                        v
                    );
                    prop_assert!(
                        v.at.is_some_and(|t| t <= now),
                        "step {}: expire_due(now={}) removed live entry {} {:?}",
                        step,
                        now,
                        k,
                        v
                    );
                }
                for (k, v) in &before {
                    if live(v, now) {
                        prop_assert_eq!(
                            after.get(k),
                            Some(v),
                            "step {}: expire_due(now={}) lost live key {}",
                            step,
                            now,
                            k
                        );
                    }
                }
                prop_assert_eq!(
                    n,
                    gone.len(),
                    "step {}: expire_due returned {} but {} entries left",
                    step,
                    n,
                    gone.len()
                );
                if let Op::ExpireDue { limit: Some(l) } = *op {
                    prop_assert!(
                        n <= l,
                        "step {}: expire_due removed {} > limit {}",
                        step,
                        n,
                        l
                    );
                } else {
                    let stale: Vec<(u64, &V)> = after
                        .iter()
                        .filter(|(k, v)| v.at.is_some_and(|t| t <= now) && !self.pinned.contains(k))
                        .map(|(k, v)| (*k, v))
                        .collect();
                    prop_assert!(
                        stale.is_empty(),
                        "step {}: after expire_due(now={}, MAX) expired entries remain: {:?}",
                        step,
                        now,
                        stale
                    );
                }
            }
            for k in &gone {
                self.pinned.remove(k);
            }
        }

        // 2. Pinned entries are never evicted (and `is_pinned` is exact).
        if self.ck.pinned {
            for k in &self.pinned {
                prop_assert_eq!(
                    after.get(k),
                    self.last.get(k),
                    "step {}: pinned key {} was lost or changed by {:?}",
                    step,
                    k,
                    op
                );
            }
            for k in after.keys() {
                prop_assert_eq!(
                    self.cache.is_pinned(k),
                    self.pinned.contains(k),
                    "step {}: is_pinned({}) disagrees with the model",
                    step,
                    k
                );
            }
        }

        // 4. Counters.
        if self.ck.counters {
            let want = CacheStats {
                hits: self.hits,
                misses: self.misses,
                inserts: self.inserts,
                rejected: self.rejected,
                expired: self.expired,
                evictions: st1.evictions,
            };
            prop_assert_eq!(st1, want, "step {}: stats after {:?}", step, op);
            // Every entry that left without being removed, rejected or
            // expired was evicted and counted as such.
            let evicted = st1.evictions - st0.evictions;
            let others = gone.iter().filter(|k| Some(**k) != target).count() as u64;
            if expired_now.is_some() || matches!(op, Op::Clear) {
                prop_assert_eq!(evicted, 0, "step {}: {:?} counted evictions", step, op);
            } else if target_may_count && gone.contains(&target.unwrap()) {
                prop_assert!(
                    evicted == others || evicted == others + 1,
                    "step {}: {:?}: {} evictions counted, {} other entries left",
                    step,
                    op,
                    evicted,
                    others
                );
            } else {
                prop_assert_eq!(
                    evicted,
                    others,
                    "step {}: {:?}: evictions counted vs. entries that left (gone: {:?})",
                    step,
                    op,
                    gone
                );
            }
        }

        // 5. Nothing comes back without a write; every value is the last one.
        if self.ck.values {
            for (k, v) in &after {
                prop_assert_eq!(
                    self.last.get(k),
                    Some(v),
                    "step {}: after {:?}, key {} holds a stale or resurrected value",
                    step,
                    op,
                    k
                );
            }
        }

        // Keep the model in step with reality.
        self.last.retain(|k, _| after.contains_key(k));
        self.pinned.retain(|k| after.contains_key(k));

        // 1. Weight bound and exact accounting.
        if self.ck.weight {
            let weight = self.cache.weight();
            let cap = self.cache.capacity();
            prop_assert!(
                weight <= cap,
                "step {}: weight {} > capacity {} after {:?}",
                step,
                weight,
                cap,
                op
            );
            prop_assert!(
                weight <= self.cache.max_entry_weight() * self.cfg.shards as u64,
                "step {}: weight above the sum of shard shares",
                step
            );
            let sum: u64 = after.values().map(|v| v.w).sum();
            prop_assert_eq!(
                weight,
                sum,
                "step {}: weight() != sum of entries after {:?}",
                step,
                op
            );
            prop_assert_eq!(
                self.cache.len(),
                after.len(),
                "step {}: len() != for_each count",
                step
            );
            let pw = self.cache.pinned_weight();
            let by_flag: u64 = after
                .iter()
                .filter(|(k, _)| self.cache.is_pinned(*k))
                .map(|(_, v)| v.w)
                .sum();
            prop_assert_eq!(
                pw,
                by_flag,
                "step {}: pinned_weight() != sum over is_pinned entries after {:?}",
                step,
                op
            );
            let by_model: u64 = self.pinned.iter().map(|k| after[k].w).sum();
            prop_assert_eq!(
                pw,
                by_model,
                "step {}: pinned_weight() != sum over keys the test pinned after {:?}",
                step,
                op
            );
        }
        Ok(())
    }
}

fn check(cfg: Cfg, ops: &[Op], ck: Checks) -> Result<(), TestCaseError> {
    Harness::new(cfg, ck).run(ops)
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        // Failures are turned into plain regression tests below instead.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(512))]

    /// 1. `weight() <= capacity()` after every operation, `weight()` is the
    ///    exact sum over `for_each`, and `pinned_weight()` is the exact sum
    ///    over the pinned keys.
    #[test]
    fn byte_bound_and_exact_accounting((cfg, ops) in scenario(200)) {
        check(cfg, &ops, Checks { weight: true, ..Checks::default() })?;
    }

    /// 2. A pinned entry stays, unchanged, until the test removes, overwrites,
    ///    unpins or expires it; `is_pinned` and `unpin_if` agree with the model.
    #[test]
    fn pinned_entries_are_never_evicted((cfg, ops) in scenario(200)) {
        check(cfg, &ops, Checks { pinned: true, ..Checks::default() })?;
    }

    /// 2b. An insertion of an absent key is rejected for the documented
    ///     reasons only: heavier than a shard, or no room left beside pinned
    ///     entries (exact for one shard, a sufficient condition for four).
    #[test]
    fn rejections_only_for_documented_reasons((cfg, ops) in scenario(200)) {
        check(cfg, &ops, Checks { reject_rule: true, ..Checks::default() })?;
    }

    /// 2c. The same rule for overwrites of a present key.
    #[test]

    fn overwrite_rejections_only_for_documented_reasons((cfg, ops) in scenario(200)) {
        check(cfg, &ops, Checks { reject_rule_overwrite: true, ..Checks::default() })?;
    }

    /// 3. Expiry is exact to the millisecond, and `expire_due` removes
    ///    exactly the entries due (never a live one, none left behind).
    #[test]
    fn ttl_exact_to_the_millisecond((cfg, ops) in scenario(200)) {
        check(cfg, &ops, Checks { ttl: true, ..Checks::default() })?;
    }

    /// 4. hits/misses/inserts/rejected/expired match the model exactly, and
    ///    every entry that leaves on its own is counted as an eviction.
    #[test]
    fn counters_match_the_model((cfg, ops) in scenario(200)) {
        check(cfg, &ops, Checks { counters: true, ..Checks::default() })?;
    }

    /// 5. Reads return the last value written, never a stale one, and a key
    ///    that left the cache does not come back without a new write.
    #[test]
    fn values_are_never_wrong((cfg, ops) in scenario(200)) {
        check(cfg, &ops, Checks { values: true, ..Checks::default() })?;
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// 2 (deterministic shape): a shard filled with pinned entries rejects
    /// every further insertion that does not fit, and the bound holds.
    #[test]
    fn full_of_pinned_rejects(
        capacity in 8..=200u64,
        pins in prop::collection::vec(1..=20u64, 1..40),
        extra in prop::collection::vec((100..200u64, 1..=40u64, any::<bool>()), 1..20),
    ) {
        let cache = Cache::<u64, V>::builder(capacity)
            .shards(1)
            .expected_entries(64)
            .measure(Meas)
            .build();
        let mut id = 0;
        let mut pinned = BTreeMap::new();
        for (k, w) in pins.into_iter().enumerate() {
            id += 1;
            let v = V { w, at: None, id };
            match cache.insert_pinned(k as u64, v.clone()).insertion {
                Insertion::Stored => {
                    pinned.insert(k as u64, v);
                }
                r => {
                    prop_assert_eq!(r, Insertion::Rejected);
                    let used: u64 = pinned.values().map(|v| v.w).sum();
                    prop_assert!(used + w > capacity, "pinned insert rejected with room left");
                }
            }
            prop_assert!(cache.weight() <= capacity);
        }
        let used: u64 = pinned.values().map(|v| v.w).sum();
        prop_assert_eq!(cache.pinned_weight(), used);
        for (k, w, pin) in extra {
            id += 1;
            let v = V { w, at: None, id };
            let r = if pin { cache.insert_pinned(k, v.clone()).insertion } else { cache.insert(k, v.clone()) };
            // Any write replaces the pinned entry, pinned or not.
            pinned.remove(&k);
            if r == Insertion::Stored {
                if pin {
                    pinned.insert(k, v);
                }
            } else {
                prop_assert_eq!(r, Insertion::Rejected);
            }
            prop_assert!(cache.weight() <= capacity);
            for (pk, pv) in &pinned {
                prop_assert_eq!(cache.peek(pk), Some(pv.clone()), "pinned key {} lost", pk);
            }
        }
        // Now fill to the brim with pins and check that nothing more fits.
        let room = capacity - cache.pinned_weight();
        if room > 0 {
            id += 1;
            prop_assert_eq!(cache.insert_pinned(1_000, V { w: room, at: None, id }).insertion, Insertion::Stored);
        }
        prop_assert_eq!(cache.pinned_weight(), capacity);
        let unpinned_before = cache.len();
        for w in [1u64, 5, 40] {
            id += 1;
            prop_assert_eq!(cache.insert(2_000 + w, V { w, at: None, id }), Insertion::Rejected);
            id += 1;
            prop_assert_eq!(cache.insert_pinned(3_000 + w, V { w, at: None, id }).insertion, Insertion::Rejected);
            id += 1;
            prop_assert_eq!(cache.insert_if_absent(4_000 + w, V { w, at: None, id }), Insertion::Rejected);
            prop_assert!(cache.weight() <= capacity);
            prop_assert_eq!(cache.len(), unpinned_before);
        }
    }
}

// ---------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------

/// 4 threads x 50k random operations on one cache. Every value written for
/// key `k` by thread `t` is `k * 1000 + t`, so any value read back must
/// decode to its own key and a real thread id.
#[test]
fn concurrent_ops_keep_the_bound_and_the_values() {
    const THREADS: u64 = 4;
    const OPS: usize = 50_000;
    const KEYS: u64 = 2_000;
    let cache: Arc<Cache<u64, u64>> = Arc::new(Cache::<u64, u64>::builder(1000).shards(4).build());
    let valid = |k: u64, v: u64| v / 1000 == k && v % 1000 < THREADS;

    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let cache = Arc::clone(&cache);
            std::thread::spawn(move || {
                let mut x: u64 =
                    0x9E37_79B9_7F4A_7C15 ^ (t + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
                let mut next = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let mut lookups = 0u64;
                for i in 0..OPS {
                    let r = next();
                    // Skewed keys: a hot tenth gets half the traffic.
                    let k = if r & 1 == 0 {
                        (r >> 8) % (KEYS / 10)
                    } else {
                        (r >> 8) % KEYS
                    };
                    let v = k * 1000 + t;
                    match (r >> 40) % 100 {
                        0..=39 => {
                            lookups += 1;
                            if let Some(got) = cache.get(&k) {
                                assert!(valid(k, got), "thread {t}: get({k}) = {got}");
                            }
                        }
                        40..=44 => {
                            if let Some(got) = cache.peek(&k) {
                                assert!(valid(k, got), "thread {t}: peek({k}) = {got}");
                            }
                        }
                        45..=79 => {
                            cache.insert(k, v);
                        }
                        80..=86 => {
                            cache.insert_if_absent(k, v);
                        }
                        87..=89 => {
                            // Pin briefly: pins are released below so they
                            // cannot accumulate and starve the cache.
                            cache.insert_pinned(k, v);
                        }
                        90..=93 => {
                            cache.unpin_if(&k, |_| true);
                        }
                        94..=98 => {
                            if let Some(got) = cache.remove(&k) {
                                assert!(valid(k, got), "thread {t}: remove({k}) = {got}");
                            }
                        }
                        _ => {
                            assert_eq!(cache.expire_due(i as u64, 8), 0);
                        }
                    }
                    if i % 1024 == 0 {
                        assert!(cache.weight() <= cache.capacity());
                    }
                }
                lookups
            })
        })
        .collect();
    let lookups: u64 = handles
        .into_iter()
        .map(|h| h.join().expect("worker panicked"))
        .sum();

    assert!(
        cache.weight() <= cache.capacity(),
        "weight {} > capacity",
        cache.weight()
    );
    let mut n = 0u64;
    let mut pinned_w = 0u64;
    cache.for_each(|k, v| {
        n += 1;
        assert!(valid(*k, *v), "for_each: {k} -> {v}");
    });
    for k in 0..KEYS {
        if let Some(v) = cache.get(&k) {
            assert!(valid(k, v), "get({k}) = {v}");
        }
        if cache.is_pinned(&k) {
            pinned_w += 1;
        }
    }
    assert_eq!(cache.len() as u64, n);
    assert_eq!(cache.weight(), n, "unit weights: weight == entry count");
    assert_eq!(cache.pinned_weight(), pinned_w);
    let st = cache.stats();
    assert_eq!(
        st.hits + st.misses,
        lookups + KEYS,
        "every lookup counted once"
    );
}

// ---------------------------------------------------------------------------
// Regressions: minimised failures of the properties above
// ---------------------------------------------------------------------------

fn one_shard(capacity: u64) -> TestCache {
    Cache::<u64, V>::builder(capacity)
        .shards(1)
        .expected_entries(64)
        .measure(Meas)
        .build()
}

/// An entry whose slab slot changes after it was scheduled (the slab moves
/// its last slot into a removed one) must still be collected by
/// `expire_due`. (Found by `ttl_exact_to_the_millisecond`: the timer record
/// named the old slot and was dropped as stale.)
#[test]
fn expire_due_follows_moved_entries() {
    let cache = one_shard(100);
    let a = V {
        w: 1,
        at: None,
        id: 1,
    };
    let b = V {
        w: 1,
        at: Some(START),
        id: 2,
    };
    assert_eq!(cache.insert(1, a), Insertion::Stored); // slot 0
    assert_eq!(cache.insert(2, b.clone()), Insertion::Stored); // slot 1, timer (1, START)
    assert!(cache.remove(&1).is_some()); // key 2 moves to slot 0
    assert_eq!(cache.get_at(&2, START), None, "expired by the clock");
    let n = cache.expire_due(START, usize::MAX);
    assert_eq!(n, 1, "expire_due must collect key 2");
    assert_eq!(cache.peek(&2), None);
    assert_eq!(cache.weight(), 0);
    assert_eq!(cache.stats().expired, 1);
}

/// Overwriting a key can return `Rejected` (and drop the key) because the
/// new value lost the TinyLFU admission contest, although the shard has
/// unpinned entries: the documented reasons are only "heavier than a shard"
/// and "everything else in its shard is pinned". Shown for a key that was
/// pinned and for one that was not.
#[test]
fn overwrite_rejected_by_policy() {
    let v = |w, id| V { w, at: None, id };
    for pinned_first in [false, true] {
        let cache = one_shard(10);
        assert_eq!(cache.insert(1, v(5, 1)), Insertion::Stored);
        for _ in 0..5 {
            assert_eq!(cache.get(&1), Some(v(5, 1))); // key 1 is popular
        }
        let first = if pinned_first {
            cache.insert_pinned(2, v(1, 2)).insertion
        } else {
            cache.insert(2, v(1, 2))
        };
        assert_eq!(first, Insertion::Stored);
        // Overwrite key 2, unpinned and heavier: 5 + 6 = 11 > 10, so
        // something must go, and key 1 (weight 5, unpinned) could.
        let r = cache.insert(2, v(6, 3));
        assert!(cache.weight() <= cache.capacity());
        assert_eq!(
            r,
            Insertion::Stored,
            "key 2 first written {}: overwrite rejected with {} unpinned weight in the \
             shard (key 1 still present: {}, key 2 present: {})",
            if pinned_first { "pinned" } else { "unpinned" },
            cache.weight() - cache.pinned_weight(),
            cache.peek(&1).is_some(),
            cache.peek(&2).is_some(),
        );
    }
}

/// What an owner of pinned entries (the engine's write-back queue) relies
/// on: a pinned entry outlives its expiry until it is unpinned, and then
/// goes at the next expiry pass; `clear_unpinned` spares it; a pinned
/// entry can be looked at, and removed with its pin reported.
#[test]
fn pinned_entries_wait_for_their_unpin_to_expire() {
    let v = |w, at, id| V { w, at, id };
    let cache = one_shard(100);
    assert_eq!(
        cache.insert_pinned(1, v(1, Some(10), 1)).insertion,
        Insertion::Stored
    );
    assert_eq!(cache.insert(2, v(1, Some(10), 2)), Insertion::Stored);
    assert_eq!(
        cache.expire_due(20, usize::MAX),
        1,
        "only the unpinned entry"
    );
    assert_eq!(cache.get_at(&1, 20), None, "an expired entry is never read");
    assert_eq!(cache.peek_pinned(&1), Some(v(1, Some(10), 1)));
    assert!(cache.unpin_if(&1, |_| true));
    assert_eq!(cache.peek_pinned(&1), None, "no longer pinned");
    assert_eq!(cache.expire_due(21, usize::MAX), 1, "due once unpinned");
    assert_eq!(cache.len(), 0);

    assert_eq!(
        cache.insert_pinned(3, v(1, None, 3)).insertion,
        Insertion::Stored
    );
    assert_eq!(cache.insert(4, v(1, None, 4)), Insertion::Stored);
    let out = cache.insert_pinned(3, v(2, None, 5));
    assert_eq!(
        (out.insertion, out.displaced),
        (Insertion::Stored, Some(v(1, None, 3)))
    );
    assert_eq!(
        cache.insert_pinned(4, v(1, None, 6)).displaced,
        None,
        "4 was not pinned"
    );
    assert!(cache.unpin_if(&4, |_| true));
    cache.clear_unpinned();
    assert_eq!(cache.peek(&4), None);
    assert_eq!(cache.peek(&3), Some(v(2, None, 5)));
    assert_eq!(cache.pinned_weight(), 2);
    assert_eq!(cache.remove_reporting_pin(&3), Some((v(2, None, 5), true)));
    assert_eq!(cache.insert(5, v(1, None, 7)), Insertion::Stored);
    assert_eq!(cache.remove_reporting_pin(&5), Some((v(1, None, 7), false)));
    assert_eq!(
        (cache.len(), cache.weight(), cache.pinned_weight()),
        (0, 0, 0)
    );
}

/// Found by `ttl_exact_to_the_millisecond`: a pinned entry passed over by
/// active expiry, then overwritten unpinned with the same expiry, must go
/// at the next expiry pass.
#[test]
fn an_entry_overwritten_out_of_its_pin_with_the_same_expiry_still_expires() {
    let v = |id| V {
        w: 1,
        at: Some(1000),
        id,
    };
    let cache = one_shard(100);
    assert_eq!(cache.insert_pinned(1, v(1)).insertion, Insertion::Stored);
    assert_eq!(cache.expire_due(1000, usize::MAX), 0, "pinned");
    assert_eq!(cache.insert(1, v(2)), Insertion::Stored);
    assert_eq!(cache.expire_due(1000, usize::MAX), 1);
    assert_eq!(cache.len(), 0);
}

/// `insert_pinned_unless_same` leaves an unchanged clean value clean, and
/// pins anything else.
#[test]
fn a_pinned_insert_of_the_same_clean_value_stays_unpinned() {
    let v = |w, id| V { w, at: None, id };
    let same: fn(&V, &V) -> bool = |a, b| a.w == b.w;
    let cache = one_shard(100);
    assert_eq!(cache.insert(1, v(3, 1)), Insertion::Stored);
    let out = cache.insert_pinned_unless_same(1, v(3, 2), same);
    assert_eq!((out.insertion, out.pinned), (Insertion::Stored, false));
    assert!(!cache.is_pinned(&1));
    assert_eq!(cache.peek(&1), Some(v(3, 2)), "the new value is stored");
    let out = cache.insert_pinned_unless_same(1, v(4, 3), same);
    assert!(out.pinned, "a different value is pinned");
    let out = cache.insert_pinned_unless_same(1, v(4, 4), same);
    assert!(out.pinned, "a pinned value stays pinned");
    assert_eq!(out.displaced, Some(v(4, 3)));
    let out = cache.insert_pinned_unless_same(2, v(4, 5), same);
    assert!(out.pinned, "a new key is pinned");
    assert_eq!(cache.pinned_weight(), 8);
}
