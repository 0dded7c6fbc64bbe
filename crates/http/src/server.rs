//! The proxy's listener: HTTP/1.1 with keep-alive, one task per
//! connection, a bound on request heads, and a graceful stop.

use crate::proxy::HttpCache;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// How long a client may take to send a request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long in-flight requests get to finish after shutdown begins.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `cache` on `listener` until `shutdown` completes, then stops
/// accepting, lets in-flight requests finish (up to [`DRAIN_TIMEOUT`]) and
/// closes idle keep-alive connections.
///
/// ```no_run
/// # async fn run(cache: std::sync::Arc<tiercache_http::HttpCache>) -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8380").await?;
/// tiercache_http::serve(listener, cache, async {
///     let _ = tokio::signal::ctrl_c().await;
/// })
/// .await
/// # }
/// ```
pub async fn serve(
    listener: TcpListener,
    cache: Arc<HttpCache>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, upstream = %cache.config().upstream, "HTTP cache listening");
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, remote)) => {
                    let _ = stream.set_nodelay(true);
                    let cache = cache.clone();
                    let mut stop = stop_rx.clone();
                    // hyper refuses buffers under 8 KiB.
                    let max_buf = cache.config().max_header_bytes.max(8192);
                    tasks.spawn(async move {
                        let service = service_fn(move |req| {
                            let cache = cache.clone();
                            async move { Ok::<_, Infallible>(cache.handle(req, Some(remote)).await) }
                        });
                        let mut http = hyper::server::conn::http1::Builder::new();
                        http.timer(TokioTimer::new())
                            .header_read_timeout(HEADER_TIMEOUT)
                            .keep_alive(true)
                            .max_buf_size(max_buf);
                        let conn = http.serve_connection(TokioIo::new(stream), service);
                        tokio::pin!(conn);
                        tokio::select! {
                            r = conn.as_mut() => {
                                if let Err(e) = r {
                                    tracing::debug!(error = %e, "client connection ended with an error");
                                }
                            }
                            _ = async { let _ = stop.wait_for(|s| *s).await; } => {
                                conn.as_mut().graceful_shutdown();
                                let _ = conn.await;
                            }
                        }
                    });
                }
                Err(e) => {
                    tracing::error!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.shutdown().await;
    Ok(())
}
