//! `NetworkStore` against a tiercache server started in-process (RESP on
//! 127.0.0.1, a memory store below it).

use bytes::Bytes;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tiercache_engine::testing::conformance::{check_store, Capabilities};
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{now_ms, Engine, Entry, NamespaceConfig, Store, WriteMode};
use tiercache_server::{serve, ListenAddr, Listener, ServerConfig};
use tiercache_stores::NetworkStore;
use tokio::sync::oneshot;

/// A tiercache server on a free port (or `port`), stopped on drop.
struct Upstream {
    port: u16,
    store: Arc<MemoryStore>,
    stop: Option<oneshot::Sender<()>>,
    handle: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Upstream {
    async fn start(port: u16) -> Upstream {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::new("upstream"));
        let engine = Arc::new(
            Engine::builder(dir.path())
                .memory_bytes(64 << 20)
                .namespace(NamespaceConfig::new("default", WriteMode::Through).store(store.clone()))
                .build()
                .await
                .unwrap(),
        );
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        let listener = Listener::bind(&ListenAddr::Tcp(addr)).await.unwrap();
        let ListenAddr::Tcp(addr) = listener.local_addr().unwrap() else {
            panic!("not tcp")
        };
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(async move {
            let _ = serve(listener, engine.clone(), ServerConfig::default(), async {
                let _ = rx.await;
            })
            .await;
            let _ = engine.shutdown().await;
        });
        Upstream {
            port: addr.port(),
            store,
            stop: Some(tx),
            handle,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), &mut self.handle)
            .await
            .expect("server stops")
            .unwrap();
    }
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_against_tiercache() {
    let up = Upstream::start(0).await;
    let store = NetworkStore::open("net", &up.url(), None).unwrap();
    check_store(&store, Capabilities::FULL).await;
    up.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_reach_the_other_servers_store() {
    let up = Upstream::start(0).await;
    let store = NetworkStore::open("net", &up.url(), None).unwrap();
    let at = now_ms() + 60_000;
    store
        .set_many(&[
            (b("plain"), Entry::with_expiry("v", Some(at))),
            (b("flagged"), Entry::with_flags("w", None, 5)),
        ])
        .await
        .unwrap();
    // Written through to the upstream's own store: the value as is, the
    // exact expiry; flags in the envelope.
    let got = up
        .store
        .get_many(&[b("plain"), b("flagged")])
        .await
        .unwrap();
    assert_eq!(got[0], Some(Entry::with_expiry("v", Some(at))));
    assert_eq!(
        got[1].as_ref().map(|e| e.value.to_vec()),
        Some(vec![0xFF, b't', b'c', 1, 0, 0, 0, 5, b'w'])
    );
    let got = store.get_many(&[b("flagged"), b("plain")]).await.unwrap();
    assert_eq!(got[0], Some(Entry::with_flags("w", None, 5)));
    assert_eq!(got[1], Some(Entry::with_expiry("v", Some(at))));
    up.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_and_recovery() {
    let up = Upstream::start(0).await;
    let port = up.port;
    let timeout = Duration::from_millis(500);
    let store = NetworkStore::open("net", &up.url(), Some(timeout)).unwrap();
    store.set_many(&[(b("k"), Entry::new("1"))]).await.unwrap();
    up.stop().await;
    let t = Instant::now();
    let err = store.get_many(&[b("k")]).await.unwrap_err();
    assert!(t.elapsed() < timeout * 2, "took {:?}", t.elapsed());
    assert_eq!(err.store, "net");
    assert!(err.message.contains("tiercache"), "{err}");
    let up = Upstream::start(port).await;
    for i in 0..6 {
        let v = format!("{i}");
        store
            .set_many(&[(b("k"), Entry::new(v.clone()))])
            .await
            .unwrap();
        assert_eq!(
            store.get_many(&[b("k")]).await.unwrap()[0],
            Some(Entry::new(v))
        );
    }
    up.stop().await;
}
