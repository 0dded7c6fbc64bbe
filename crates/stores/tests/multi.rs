//! `MultiStore` under failure: `all` reports a down child and never leaves
//! it silently behind; `any` keeps serving; children converge.

use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::conformance::{check_store, Capabilities};
use tiercache_engine::testing::{FlakyStore, MemoryStore};
use tiercache_engine::{Entry, Mutation, Store};
use tiercache_stores::{ChildState, FileStore, MultiStore, ReportSuccess, SqliteStore};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

type Flaky = Arc<FlakyStore<MemoryStore>>;

fn children(n: usize) -> Vec<Flaky> {
    (0..n)
        .map(|i| {
            Arc::new(FlakyStore::new(Arc::new(MemoryStore::new(&format!(
                "both.stores[{i}]"
            )))))
        })
        .collect()
}

fn multi(kids: &[Flaky], report: ReportSuccess) -> MultiStore {
    MultiStore::new(
        "both",
        kids.iter().map(|k| k.clone() as Arc<dyn Store>).collect(),
        report,
    )
}

async fn wait_until_healthy(m: &MultiStore) {
    for _ in 0..200 {
        if m.status().iter().all(|s| s.state == ChildState::Healthy) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("children did not catch up: {:?}", m.status());
}

#[tokio::test]
async fn conformance_all_and_any() {
    for report in [ReportSuccess::All, ReportSuccess::Any] {
        let kids = children(2);
        check_store(&multi(&kids, report), Capabilities::FULL).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let mixed = MultiStore::new(
        "mixed",
        vec![
            Arc::new(SqliteStore::open("mixed.stores[0]", &dir.path().join("a.db"), "kv").unwrap()),
            Arc::new(
                FileStore::open(
                    "mixed.stores[1]",
                    &dir.path().join("log"),
                    Default::default(),
                )
                .unwrap(),
            ),
        ],
        ReportSuccess::All,
    );
    check_store(&mixed, Capabilities::FULL).await;
}

#[tokio::test]
async fn all_reports_a_down_child_and_converges_after_it_returns() {
    let kids = children(2);
    let m = multi(&kids, ReportSuccess::All);
    m.set_many(&[(b("a"), Entry::new("1")), (b("b"), Entry::new("1"))])
        .await
        .unwrap();

    kids[1].set_down(true);
    let err = m
        .apply(&[
            Mutation::Set(b("a"), Entry::new("2")),
            Mutation::Delete(b("b")),
        ])
        .await
        .unwrap_err();
    assert_eq!(err.store, "both");
    assert!(err.message.contains("write reached 1 of 2 stores"), "{err}");
    assert!(err.message.contains("stores[1] 'both.stores[1]'"), "{err}");
    assert!(err.message.contains("simulated outage"), "{err}");
    // Later writes to the lagging child queue behind the missed one (even
    // once it is reachable again, until the backlog is replayed) and keep
    // failing under `all`.
    let err = m
        .set_many(&[(b("a"), Entry::new("3")), (b("c"), Entry::new("3"))])
        .await
        .unwrap_err();
    assert!(err.message.contains("stores[1]"), "{err}");
    m.delete_many(&[b("c")]).await.unwrap_err();
    assert_eq!(
        m.status()[1].state,
        ChildState::CatchingUp { queued: 5 },
        "{:?}",
        m.status()
    );
    assert!(m.status()[1].last_error.is_some());
    assert_eq!(m.status()[0].state, ChildState::Healthy);
    // Reads are served by the up-to-date child, never the lagging one.
    let got = m.get_many(&[b("a"), b("b"), b("c")]).await.unwrap();
    assert_eq!(got, vec![Some(Entry::new("3")), None, None]);
    assert_ne!(kids[0].inner().snapshot(), kids[1].inner().snapshot());

    kids[1].set_down(false);
    wait_until_healthy(&m).await; // the background task replays the backlog
    assert_eq!(kids[0].inner().snapshot(), kids[1].inner().snapshot());
    assert_eq!(kids[1].inner().len(), 1);
    m.set_many(&[(b("d"), Entry::new("4"))]).await.unwrap();
    assert_eq!(kids[0].inner().snapshot(), kids[1].inner().snapshot());
}

#[tokio::test]
async fn any_keeps_serving_with_a_child_down_and_it_catches_up() {
    let kids = children(3);
    let m = multi(&kids, ReportSuccess::Any);
    kids[0].set_down(true);
    for i in 0..100 {
        let k = Bytes::from(format!("k{}", i % 10));
        if i % 7 == 3 {
            m.delete_many(&[k]).await.unwrap();
        } else {
            m.set_many(&[(k, Entry::new(format!("{i}")))])
                .await
                .unwrap();
        }
        // Reads fall through the down child.
        let got = m.get_many(&[b("k1")]).await.unwrap();
        assert_eq!(got[0], kids[1].inner().snapshot().get(&b"k1"[..]).cloned());
    }
    assert_eq!(m.count().await.unwrap(), kids[1].inner().len() as u64);
    assert!(matches!(m.status()[0].state, ChildState::CatchingUp { .. }));
    m.clear().await.unwrap();
    m.set_many(&[(b("after"), Entry::new("clear"))])
        .await
        .unwrap();
    assert_eq!(
        m.status()[0].state,
        ChildState::CatchingUp { queued: 2 },
        "a clear voids what was queued before it"
    );
    kids[0]
        .inner()
        .set_many(&[(b("stale"), Entry::new("x"))])
        .await
        .unwrap();

    kids[0].set_down(false);
    m.catch_up().await;
    assert_eq!(m.status()[0].state, ChildState::Healthy);
    for k in &kids {
        assert_eq!(k.inner().snapshot(), kids[1].inner().snapshot());
    }
    assert_eq!(kids[0].inner().len(), 1, "the queued clear removed 'stale'");
}

#[tokio::test]
async fn any_fails_only_when_every_child_fails() {
    let kids = children(2);
    let m = multi(&kids, ReportSuccess::Any);
    kids[0].set_down(true);
    kids[1].set_down(true);
    let err = m.set_many(&[(b("a"), Entry::new("1"))]).await.unwrap_err();
    assert!(err.message.contains("write reached 0 of 2"), "{err}");
    let err = m.get_many(&[b("a")]).await.unwrap_err();
    assert!(err.message.contains("no store could answer"), "{err}");
    // The failed write is not lost in one child and kept in the other: both
    // get it once they are back, so they agree.
    kids[0].set_down(false);
    kids[1].set_down(false);
    m.catch_up().await;
    assert_eq!(kids[0].inner().snapshot(), kids[1].inner().snapshot());
    assert_eq!(
        m.get_many(&[b("a")]).await.unwrap(),
        vec![Some(Entry::new("1"))]
    );
}

#[tokio::test]
async fn a_child_past_its_backlog_bound_is_reported_diverged() {
    let kids = children(2);
    let m = MultiStore::with_max_backlog(
        "both",
        kids.iter().map(|k| k.clone() as Arc<dyn Store>).collect(),
        ReportSuccess::Any,
        10,
    );
    kids[1].set_down(true);
    for i in 0..12 {
        m.set_many(&[(Bytes::from(format!("k{i}")), Entry::new("v"))])
            .await
            .unwrap();
    }
    assert_eq!(m.status()[1].state, ChildState::Diverged);
    kids[1].set_down(false);
    m.catch_up().await;
    assert_eq!(
        m.status()[1].state,
        ChildState::Diverged,
        "never silently healthy again"
    );
    let all = MultiStore::with_max_backlog(
        "strict",
        kids.iter().map(|k| k.clone() as Arc<dyn Store>).collect(),
        ReportSuccess::All,
        0,
    );
    kids[1].set_down(true);
    all.set_many(&[(b("x"), Entry::new("1"))])
        .await
        .unwrap_err();
    kids[1].set_down(false);
    let err = all
        .set_many(&[(b("y"), Entry::new("1"))])
        .await
        .unwrap_err();
    assert!(err.message.contains("diverged"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_and_an_outage_leave_children_identical() {
    let kids = children(2);
    let m = Arc::new(multi(&kids, ReportSuccess::Any));
    let flapper = {
        let kid = kids[1].clone();
        tokio::spawn(async move {
            for i in 0..20 {
                kid.set_down(i % 2 == 0);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            kid.set_down(false);
        })
    };
    let writers: Vec<_> = (0..8)
        .map(|t| {
            let m = m.clone();
            tokio::spawn(async move {
                for i in 0..200 {
                    let k = Bytes::from(format!("k{}", (i * 7 + t) % 13));
                    let r = if (i + t) % 5 == 0 {
                        m.delete_many(&[k]).await
                    } else {
                        m.set_many(&[(k, Entry::new(format!("{t}-{i}")))]).await
                    };
                    r.unwrap(); // `any`: child 0 is always up
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    flapper.await.unwrap();
    m.catch_up().await;
    wait_until_healthy(&m).await;
    assert_eq!(kids[0].inner().snapshot(), kids[1].inner().snapshot());
}
