//! Test harness: a counting origin, a proxy over a real engine (memory +
//! SQLite), and a one-request-per-connection client.
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{HeaderMap, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::{Engine, NamespaceConfig, WriteMode};
use tiercache_http::{HttpCache, ProxyConfig};
use tokio::net::{TcpListener, TcpStream};

/// What the origin answers.
#[derive(Clone, Default)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    pub delay: Duration,
    /// Never answer.
    pub hang: bool,
}

impl Reply {
    pub fn ok(body: &str) -> Reply {
        Reply {
            status: 200,
            body: Bytes::from(body.to_owned()),
            ..Default::default()
        }
    }
    pub fn status(mut self, s: u16) -> Reply {
        self.status = s;
        self
    }
    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.into(), v.into()));
        self
    }
    pub fn delay(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }
}

/// One request the origin saw.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: HeaderMap,
}

type Handler = Arc<dyn Fn(&Seen, usize) -> Reply + Send + Sync>;

/// A counting origin.
pub struct Origin {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    handler: Arc<Mutex<Handler>>,
    task: tokio::task::JoinHandle<()>,
}

impl Origin {
    /// `handler(request, n)` where n counts requests to that method+path so far (1-based).
    pub async fn start(handler: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let handler: Arc<Mutex<Handler>> = Arc::new(Mutex::new(Arc::new(handler)));
        let (s2, h2) = (seen.clone(), handler.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (seen, handler) = (s2.clone(), h2.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |req: Request<Incoming>| {
                        let (seen, handler) = (seen.clone(), handler.clone());
                        async move {
                            let s = Seen {
                                method: req.method().to_string(),
                                path: req.uri().path_and_query().unwrap().to_string(),
                                headers: req.headers().clone(),
                            };
                            let _ = req.into_body().collect().await;
                            let n = {
                                let mut v = seen.lock();
                                v.push(s.clone());
                                v.iter()
                                    .filter(|x| x.method == s.method && x.path == s.path)
                                    .count()
                            };
                            let h = handler.lock().clone();
                            let reply = h(&s, n);
                            if reply.hang {
                                tokio::time::sleep(Duration::from_secs(3600)).await;
                            }
                            if !reply.delay.is_zero() {
                                tokio::time::sleep(reply.delay).await;
                            }
                            let mut r = Response::new(Full::new(reply.body));
                            *r.status_mut() = StatusCode::from_u16(reply.status).unwrap();
                            for (k, v) in reply.headers {
                                r.headers_mut().append(
                                    hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                                    v.parse().unwrap(),
                                );
                            }
                            Ok::<_, Infallible>(r)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Origin {
            addr,
            seen,
            handler,
            task,
        }
    }

    pub fn set(&self, handler: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) {
        *self.handler.lock() = Arc::new(handler);
    }

    /// Requests seen for `path` (any method).
    pub fn count(&self, path: &str) -> usize {
        self.seen.lock().iter().filter(|s| s.path == path).count()
    }

    pub fn last(&self, path: &str) -> Seen {
        self.seen
            .lock()
            .iter()
            .rev()
            .find(|s| s.path == path)
            .cloned()
            .unwrap()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn stop(&self) {
        self.task.abort();
    }
}

/// A running proxy over memory + SQLite in `dir`.
pub struct Proxy {
    pub addr: SocketAddr,
    pub cache: Arc<HttpCache>,
    pub engine: Arc<Engine>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

pub async fn open_engine(dir: &Path) -> Arc<Engine> {
    let sqlite = tiercache_stores::SqliteStore::open("main", &dir.join("cache.db"), "kv").unwrap();
    Arc::new(
        Engine::builder(dir)
            .memory_bytes(256 << 20)
            .namespace(NamespaceConfig::new("default", WriteMode::Back).store(Arc::new(sqlite)))
            .build()
            .await
            .unwrap(),
    )
}

impl Proxy {
    pub async fn start(upstream: &str, dir: &Path, tweak: impl FnOnce(&mut ProxyConfig)) -> Proxy {
        let engine = open_engine(dir).await;
        let mut config = ProxyConfig::new(upstream.parse().unwrap());
        config.purge_token = Some("sekret".into());
        tweak(&mut config);
        let cache = HttpCache::new(engine.clone(), config).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(tiercache_http::serve(listener, cache.clone(), async move {
            let _ = rx.await;
        }));
        Proxy {
            addr,
            cache,
            engine,
            stop: Some(tx),
            task,
        }
    }

    /// Stops the listener and shuts the engine down (flushing to SQLite).
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        (&mut self.task).await.unwrap().unwrap();
        self.engine.shutdown().await.unwrap();
    }

    pub async fn get(&self, path: &str) -> Resp {
        request(self.addr, "GET", path, &[]).await
    }

    pub async fn req(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> Resp {
        request(self.addr, method, path, headers).await
    }

    /// Waits until no fetch is in flight (background refreshes done).
    pub async fn idle(&self) {
        for _ in 0..500 {
            if self.cache.flights_in_progress() == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("fetches still in flight");
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn h(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }
    pub fn x_cache(&self) -> &str {
        self.h("x-cache")
    }
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }
}

/// One request on a fresh connection.
pub async fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Resp {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "test.local");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = send
        .send_request(req.body(Empty::<Bytes>::new()).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Resp {
        status,
        headers,
        body,
    }
}

/// A raw HTTP/1.1 exchange: writes `raw`, reads until the peer closes or
/// `timeout`; returns what was read.
pub async fn raw(addr: SocketAddr, raw: &[u8], timeout: Duration) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(raw).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(timeout, s.read_to_end(&mut out)).await;
    out
}
