//! Setup shared by the engine's integration tests.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::{Engine, EngineBuilder, NamespaceConfig, Store, WriteMode};

/// An engine whose one namespace writes back to `store` and flushes only
/// when asked (`Engine::flush`, shutdown): the write-back queue holds
/// what a test wrote until it says so.
#[allow(dead_code)] // each test file uses some of these helpers
pub async fn flushing_on_demand(dir: &Path, store: Arc<dyn Store>) -> Engine {
    on_demand_in_chunks(dir, store, 1_000_000)
        .build()
        .await
        .unwrap()
}

/// The builder of [`flushing_on_demand`]'s engine, with flushes that store
/// `flush_batch` keys per chunk, for a test to add its own settings to.
#[allow(dead_code)]
pub fn on_demand_in_chunks(dir: &Path, store: Arc<dyn Store>, flush_batch: usize) -> EngineBuilder {
    Engine::builder(dir).namespace(
        NamespaceConfig::new("default", WriteMode::Back)
            .store(store)
            .flush(Duration::from_secs(3600), flush_batch),
    )
}
