//! In-process HTTP/1.1 servers for the `pages` and `microcache` scenarios
//! (the CMS app, the slow origin, the memcached-backed app): hyper on the
//! lab's runtime, keep-alive, one task per connection, every connection
//! stopped when the [`AppServer`] is dropped.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// A running server; dropping it stops accepting and closes every
/// connection.
pub struct AppServer {
    /// Where it listens (`127.0.0.1:PORT`).
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for AppServer {
    fn drop(&mut self) {
        // Aborting the accept task drops its JoinSet, which aborts the
        // connection tasks.
        self.task.abort();
    }
}

/// Starts a server on a free port of 127.0.0.1 on `rt`, answering every
/// request with `handler`.
pub fn spawn<F, Fut>(rt: &tokio::runtime::Runtime, handler: F) -> io::Result<AppServer>
where
    F: Fn(Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let handler = Arc::new(handler);
    let task = rt.spawn(async move {
        let mut conns = JoinSet::new();
        loop {
            tokio::select! {
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    let handler = handler.clone();
                    conns.spawn(async move {
                        let service = service_fn(move |req| {
                            let handler = handler.clone();
                            async move { Ok::<_, Infallible>(handler(req).await) }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .keep_alive(true)
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        }
    });
    Ok(AppServer { addr, task })
}

/// A response with `status` and a plain-text `body`.
pub fn text(status: u16, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = hyper::StatusCode::from_u16(status).expect("valid status");
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain"),
    );
    r
}
