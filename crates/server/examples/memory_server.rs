//! A RESP server over a pure in-memory engine, for trying clients against:
//! `cargo run -p tiercache-server --example memory_server -- 127.0.0.1:6390`
//! then `redis-cli -p 6390`. Stops on Ctrl-C.

use std::sync::Arc;
use tiercache_engine::{Engine, NamespaceConfig, WriteMode};
use tiercache_server::{serve, ListenAddr, Listener, ServerConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: ListenAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:6390".into())
        .parse()?;
    let dir = tempfile::tempdir()?;
    let engine = Arc::new(
        Engine::builder(dir.path())
            .namespace(NamespaceConfig::new("default", WriteMode::Back))
            .build()
            .await?,
    );
    let listener = Listener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener, engine.clone(), ServerConfig::default(), async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    engine.shutdown().await?;
    Ok(())
}
