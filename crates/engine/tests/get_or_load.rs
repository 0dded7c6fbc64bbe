//! `Engine::get_or_load` under concurrency: however many callers miss a key
//! at once, the loader runs once per key, and every caller gets its value.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tiercache_engine::testing::{FlakyStore, MemoryStore};
use tiercache_engine::{Engine, Entry, NamespaceConfig, WriteMode};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_misses_run_the_loader_once_per_key() {
    for mode in [WriteMode::Back, WriteMode::Through] {
        let dir = tempfile::tempdir().unwrap();
        // A slow system of record: in `through` mode the loaded value takes
        // 5 ms to be written, and callers keep arriving during the write.
        let sor = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new("sor"))));
        sor.set_write_delay(Duration::from_millis(5));
        let engine = Arc::new(
            Engine::builder(dir.path())
                .namespace(NamespaceConfig::new("default", mode).store(sor.clone()))
                .build()
                .await
                .unwrap(),
        );
        let loads: Arc<Mutex<HashMap<u32, u32>>> = Arc::default();
        let mut tasks = Vec::new();
        for key in 0..50u32 {
            for caller in 0..8u32 {
                let engine = engine.clone();
                let loads = loads.clone();
                tasks.push(tokio::spawn(async move {
                    // Callers arrive spread over the loader's run and the write after it.
                    tokio::time::sleep(Duration::from_micros(1_000 * caller as u64)).await;
                    let name = format!("k{key}");
                    let got = engine
                        .get_or_load(name.as_bytes(), || async {
                            *loads.lock().unwrap().entry(key).or_default() += 1;
                            tokio::time::sleep(Duration::from_millis(2)).await;
                            Ok(Some(Entry::new(format!("v{key}"))))
                        })
                        .await
                        .unwrap();
                    assert_eq!(got.unwrap().value, format!("v{key}"));
                }));
            }
        }
        for t in tasks {
            t.await.unwrap();
        }
        {
            let loads = loads.lock().unwrap();
            let repeated: Vec<_> = loads.iter().filter(|(_, &n)| n != 1).collect();
            assert_eq!(loads.len(), 50, "{mode:?}");
            assert!(
                repeated.is_empty(),
                "{mode:?}: keys loaded more than once: {repeated:?}"
            );
        }
        engine.shutdown().await.unwrap();
    }
}
