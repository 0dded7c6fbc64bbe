//! The [`Store`] contract as one test every backend runs: `check_store`.
//!
//! Each backend's integration test opens an empty store (a fresh table,
//! database or server) and calls [`check_store`] with what the backend can
//! do ([`Capabilities`]). A failure names the step, so a backend that breaks
//! the contract (order of `get_many`, binary keys, flags, value kinds, expiry, batching
//! past a parameter limit, ...) says where.
//!
//! ```
//! use tiercache_engine::testing::{conformance, MemoryStore};
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let store = MemoryStore::new("m");
//! conformance::check_store(&store, conformance::Capabilities::FULL).await;
//! # });
//! ```

use crate::entry::{now_ms, Entry, ValueKind};
use crate::store::{Mutation, Store};
use bytes::Bytes;
use std::ops::Bound;
use std::time::Duration;

/// What a backend can do beyond the core get/set/delete/apply contract.
#[derive(Clone, Copy, Debug)]
pub struct Capabilities {
    /// `count`, `scan_keys` and `key_stats` are exact (SQL, Redis, files).
    /// memcached cannot list its keys.
    pub lists_keys: bool,
    /// `clear` removes everything.
    pub clears: bool,
    /// Largest batch to exercise (parameter-limit chunking).
    pub big_batch: usize,
}

impl Capabilities {
    /// Everything, with a 5,000-key batch.
    pub const FULL: Capabilities = Capabilities {
        lists_keys: true,
        clears: true,
        big_batch: 5_000,
    };
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

async fn get(store: &dyn Store, keys: &[Bytes], step: &str) -> Vec<Option<Entry>> {
    let got = store
        .get_many(keys)
        .await
        .unwrap_or_else(|e| panic!("{step}: get_many failed: {e}"));
    assert_eq!(got.len(), keys.len(), "{step}: one answer per key");
    got
}

/// Runs the whole contract against `store`, which must start empty.
/// Takes a few seconds (it waits for a real expiry).
pub async fn check_store(store: &dyn Store, caps: Capabilities) {
    let name = store.name().to_string();
    assert!(!name.is_empty(), "a store has a name");

    // 1. Missing keys, including the empty key.
    let got = get(store, &[b("nope"), Bytes::new()], "empty store").await;
    assert!(got.iter().all(Option::is_none), "empty store: {got:?}");

    // 2. Binary keys and values, flags and exact millisecond expiry.
    let later = now_ms() + 3_600_000 + 7; // an odd millisecond on purpose
    let binary_key = Bytes::from_static(b"\x00bin\xff\r\n key");
    let entries = vec![
        (b("a"), Entry::new("1")),
        (
            binary_key.clone(),
            Entry::new(Bytes::from_static(b"\x00\xff\r\n")),
        ),
        (b("empty"), Entry::new(Bytes::new())),
        (
            b("flagged"),
            Entry::with_flags("f", Some(later), 0xdead_beef),
        ),
        (b("max-flags"), Entry::with_flags("m", None, u32::MAX)),
    ];
    store.set_many(&entries).await.expect("set_many");
    let keys = [
        b("flagged"),
        b("missing"),
        b("a"),
        binary_key.clone(),
        b("a"),
        b("empty"),
        b("max-flags"),
    ];
    let got = get(store, &keys, "round trip").await;
    let want = [
        Some(&entries[3].1),
        None,
        Some(&entries[0].1),
        Some(&entries[1].1),
        Some(&entries[0].1),
        Some(&entries[2].1),
        Some(&entries[4].1),
    ];
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            g.as_ref(),
            w,
            "round trip: answer {i} for key {:?}",
            keys[i]
        );
    }

    // 3. Upsert replaces value, flags and expiry.
    store
        .set_many(&[(b("flagged"), Entry::new("g"))])
        .await
        .expect("upsert");
    let got = get(store, &[b("flagged")], "upsert").await;
    assert_eq!(
        got[0],
        Some(Entry::new("g")),
        "upsert drops old expiry/flags"
    );

    // 4. Expired entries are never returned; short expiries take effect.
    let now = now_ms();
    store
        .set_many(&[
            (
                b("past"),
                Entry::with_expiry("x", Some(now.saturating_sub(1_000))),
            ),
            (b("soon"), Entry::with_expiry("y", Some(now + 1_200))),
        ])
        .await
        .expect("set expiring");
    let got = get(store, &[b("past"), b("soon")], "expiry").await;
    assert!(got[0].is_none(), "an already-expired entry is not returned");
    assert_eq!(got[1].as_ref().map(|e| &e.value[..]), Some(&b"y"[..]));
    tokio::time::sleep(Duration::from_millis(1_400)).await;
    let got = get(store, &[b("soon")], "expiry").await;
    assert!(got[0].is_none(), "an entry past its expiry is not returned");

    // 5. Deletes, absent keys included.
    store
        .delete_many(&[b("a"), b("never-there")])
        .await
        .expect("delete_many");
    let got = get(store, &[b("a"), b("empty")], "delete").await;
    assert!(got[0].is_none() && got[1].is_some(), "delete: {got:?}");

    // 6. apply: sets and deletes in one batch.
    store
        .apply(&[
            Mutation::Set(b("p1"), Entry::new("v1")),
            Mutation::Delete(b("empty")),
            Mutation::Set(b("p2"), Entry::with_flags("v2", None, 7)),
            Mutation::Delete(b("absent")),
        ])
        .await
        .expect("apply");
    let got = get(store, &[b("p1"), b("empty"), b("p2")], "apply").await;
    assert_eq!(got[0], Some(Entry::new("v1")));
    assert!(got[1].is_none());
    assert_eq!(got[2], Some(Entry::with_flags("v2", None, 7)));

    // 6b. Value kinds: a hash-kind entry comes back a hash (with its flags
    // and expiry), whether set alone or in `apply`; overwriting it with a
    // string makes it a string again. Values are binary on purpose.
    let hash = |v: &'static [u8], at, flags| {
        Entry::with_kind(Bytes::from_static(v), at, flags, ValueKind::Hash)
    };
    let kinds = vec![
        (b("kind:h"), hash(b"\x00\x02f\xffv\r\n", None, 0)),
        (b("kind:hf"), hash(b"", Some(later), u32::MAX)),
        (b("kind:s"), Entry::new("plain")),
    ];
    store.set_many(&kinds).await.expect("set kinds");
    store
        .apply(&[Mutation::Set(b("kind:ha"), hash(b"TCE\x01", None, 3))])
        .await
        .expect("apply kinds");
    let keys = [b("kind:h"), b("kind:hf"), b("kind:s"), b("kind:ha")];
    let got = get(store, &keys, "kinds").await;
    assert_eq!(got[0].as_ref(), Some(&kinds[0].1), "kinds: hash");
    assert_eq!(got[1].as_ref(), Some(&kinds[1].1), "kinds: flagged hash");
    assert_eq!(got[2].as_ref(), Some(&kinds[2].1), "kinds: string");
    assert_eq!(got[3], Some(hash(b"TCE\x01", None, 3)), "kinds: apply");
    store
        .set_many(&[(b("kind:h"), Entry::new("now a string"))])
        .await
        .expect("overwrite kind");
    let got = get(store, &[b("kind:h")], "kinds").await;
    assert_eq!(got[0], Some(Entry::new("now a string")), "kinds: overwrite");
    store.delete_many(&keys).await.expect("delete kinds");
    let got = get(store, &keys, "kinds").await;
    assert!(got.iter().all(Option::is_none), "kinds: deleted {got:?}");

    // 7. A batch larger than any parameter limit, in order.
    let n = caps.big_batch;
    let big: Vec<(Bytes, Entry)> = (0..n)
        .map(|i| {
            (
                Bytes::from(format!("big:{i:06}")),
                Entry::new(format!("{i}")),
            )
        })
        .collect();
    store.set_many(&big).await.expect("big set_many");
    let mut keys: Vec<Bytes> = big.iter().rev().map(|(k, _)| k.clone()).collect();
    keys.push(b("big:missing"));
    let got = get(store, &keys, "big batch").await;
    for (i, g) in got[..n].iter().enumerate() {
        let want = format!("{}", n - 1 - i);
        assert_eq!(
            g.as_ref().map(|e| &e.value[..]),
            Some(want.as_bytes()),
            "big batch: answer {i}"
        );
    }
    assert!(got[n].is_none());

    // 8. Listing: count, scan by prefix and range, key stats.
    if caps.lists_keys {
        let live = store.count().await.expect("count");
        // binary key, max-flags, flagged, p1, p2, big:*
        assert_eq!(live, 5 + n as u64, "count of live keys");
        let page = store
            .scan_keys(Bound::Unbounded, b"big:", 3, now_ms())
            .await
            .expect("scan_keys");
        assert_eq!(
            page,
            vec![b("big:000000"), b("big:000001"), b("big:000002")]
        );
        let page = store
            .scan_keys(Bound::Excluded(b"big:000001"), b"big:00000", 100, now_ms())
            .await
            .expect("scan_keys from");
        let want: Vec<Bytes> = (2..10.min(n))
            .map(|i| Bytes::from(format!("big:{i:06}")))
            .collect();
        assert_eq!(page, want, "scan after a cursor keeps prefix and order");
        let expiring = Entry::with_expiry("e", Some(now_ms() + 100_000));
        store
            .set_many(&[(b("ttl"), expiring)])
            .await
            .expect("set ttl");
        let stats = store.key_stats(now_ms()).await.expect("key_stats");
        assert_eq!(stats.keys, 6 + n as u64);
        assert_eq!(stats.expires, 1);
        assert!(
            (90_000..=100_000).contains(&stats.avg_ttl_ms),
            "avg ttl {}",
            stats.avg_ttl_ms
        );
    }

    // 9. Concurrent writers and readers on distinct keys.
    let tasks: Vec<_> = (0..8)
        .map(|t| async move {
            for i in 0..50 {
                let k = Bytes::from(format!("conc:{t}:{i}"));
                store
                    .set_many(&[(k.clone(), Entry::new(format!("{t}-{i}")))])
                    .await
                    .expect("concurrent set");
                let got = store.get_many(&[k]).await.expect("concurrent get");
                assert_eq!(
                    got[0].as_ref().map(|e| e.value.clone()),
                    Some(Bytes::from(format!("{t}-{i}")))
                );
            }
        })
        .collect();
    futures_join_all(tasks).await;

    // 10. clear.
    if caps.clears {
        store.clear().await.expect("clear");
        let got = get(store, &[b("p1"), b("big:000000"), b("conc:0:0")], "clear").await;
        assert!(got.iter().all(Option::is_none), "clear: {got:?}");
        if caps.lists_keys {
            assert_eq!(store.count().await.expect("count"), 0);
        }
    }
}

/// Polls every future to completion on the current task (keeps this
/// module free of a `futures` dependency).
async fn futures_join_all<F: std::future::Future<Output = ()>>(futures: Vec<F>) {
    let mut set: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    std::future::poll_fn(|cx| {
        set.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if set.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}
