//! Setup shared by the engine's integration tests.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::{Engine, NamespaceConfig, Store, WriteMode};

/// An engine whose one namespace writes back to `store` and flushes only
/// when asked (`Engine::flush`, shutdown): the write-back queue holds
/// what a test wrote until it says so.
pub async fn flushing_on_demand(dir: &Path, store: Arc<dyn Store>) -> Engine {
    Engine::builder(dir)
        .namespace(
            NamespaceConfig::new("default", WriteMode::Back)
                .store(store)
                .flush(Duration::from_secs(3600), 1_000_000),
        )
        .build()
        .await
        .unwrap()
}
