//! A server started in-process on 127.0.0.1:0 and a minimal RESP client.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{Engine, NamespaceConfig, WriteMode};
use tiercache_server::{serve, ListenAddr, Listener, ServerConfig};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestServer {
    pub addr: SocketAddr,
    pub engine: Arc<Engine>,
    pub store: Arc<MemoryStore>,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<std::io::Result<()>>>,
    _dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(ServerConfig::default()).await
    }

    pub async fn start_with(config: ServerConfig) -> TestServer {
        Self::start_with_namespace(config, |store| {
            NamespaceConfig::new("default", WriteMode::Back).store(store)
        })
        .await
    }

    /// A server whose one namespace `namespace` makes, given the
    /// [`MemoryStore`] that `TestServer::store` will hold.
    pub async fn start_with_namespace(
        config: ServerConfig,
        namespace: impl FnOnce(Arc<MemoryStore>) -> NamespaceConfig,
    ) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::new("main"));
        let engine = Arc::new(
            Engine::builder(dir.path())
                .memory_bytes(16 << 20)
                .patcher(Arc::new(tiercache_server::CollectionPatcher))
                .namespace(namespace(store.clone()))
                .build()
                .await
                .unwrap(),
        );
        let listener = Listener::bind(&ListenAddr::Tcp("127.0.0.1:0".parse().unwrap()))
            .await
            .unwrap();
        let ListenAddr::Tcp(addr) = listener.local_addr().unwrap() else {
            panic!("not tcp")
        };
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(serve(listener, engine.clone(), config, async {
            let _ = rx.await;
        }));
        TestServer {
            addr,
            engine,
            store,
            stop: Some(tx),
            handle: Some(handle),
            _dir: dir,
        }
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.addr).await
    }

    /// Signals shutdown and waits (bounded) for `serve` to return.
    pub async fn shutdown(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let handle = self.handle.take().unwrap();
        tokio::time::timeout(Duration::from_secs(10), handle)
            .await
            .expect("serve did not return after shutdown")
            .unwrap()
            .unwrap();
        self.engine.shutdown().await.unwrap();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
    /// RESP3 `_`.
    Null,
    /// RESP3 `,` (kept as text).
    Double(String),
    /// RESP3 `#`.
    Bool(bool),
    /// RESP3 `%`.
    Map(Vec<(Reply, Reply)>),
    /// RESP3 `~`.
    Set(Vec<Reply>),
    /// RESP3 `=`: format and text.
    Verbatim(String, Vec<u8>),
    /// RESP3 `>`: pub/sub messages and confirmations.
    Push(Vec<Reply>),
}

impl Reply {
    pub fn bulk(s: &str) -> Reply {
        Reply::Bulk(Some(s.as_bytes().to_vec()))
    }
    pub fn ok() -> Reply {
        Reply::Simple("OK".into())
    }
    pub fn is_error_starting(&self, prefix: &str) -> bool {
        matches!(self, Reply::Error(e) if e.starts_with(prefix))
    }
    pub fn text(&self) -> String {
        match self {
            Reply::Bulk(Some(b)) | Reply::Verbatim(_, b) => String::from_utf8_lossy(b).into_owned(),
            Reply::Simple(s) | Reply::Error(s) => s.clone(),
            other => panic!("no text in {other:?}"),
        }
    }
}

pub struct Client {
    reader: BufReader<tokio::net::tcp::OwnedReadHalf>,
    writer: tokio::net::tcp::OwnedWriteHalf,
}

/// Encodes a command as a RESP multibulk.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        v.extend_from_slice(a);
        v.extend_from_slice(b"\r\n");
    }
    v
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        let (r, w) = TcpStream::connect(addr).await.unwrap().into_split();
        Client {
            reader: BufReader::new(r),
            writer: w,
        }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
    }

    pub async fn cmd(&mut self, args: &[&str]) -> Reply {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send_raw(&encode(&args)).await;
        self.read().await
    }

    pub async fn read(&mut self) -> Reply {
        tokio::time::timeout(Duration::from_secs(10), self.read_inner())
            .await
            .expect("reply timed out")
            .expect("connection closed")
    }

    /// The next reply, or `None` when the connection closed.
    pub async fn try_read(&mut self) -> Option<Reply> {
        tokio::time::timeout(Duration::from_secs(10), self.read_inner())
            .await
            .expect("reply timed out")
    }

    /// True when the server closed the connection (EOF within the timeout).
    pub async fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(
            tokio::time::timeout(Duration::from_secs(5), self.reader.read(&mut b)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }

    async fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        if self.reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        assert!(line.ends_with("\r\n"), "bad line {line:?}");
        line.truncate(line.len() - 2);
        Some(line)
    }

    fn read_inner(
        &mut self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<Reply>> + Send + '_>> {
        Box::pin(async move {
            let line = self.line().await?;
            let (kind, rest) = line.split_at(1);
            Some(match kind {
                "+" => Reply::Simple(rest.to_string()),
                "-" => Reply::Error(rest.to_string()),
                ":" => Reply::Int(rest.parse().unwrap()),
                "$" => {
                    let n: i64 = rest.parse().unwrap();
                    if n < 0 {
                        Reply::Bulk(None)
                    } else {
                        let mut buf = vec![0u8; n as usize + 2];
                        self.reader.read_exact(&mut buf).await.ok()?;
                        buf.truncate(n as usize);
                        Reply::Bulk(Some(buf))
                    }
                }
                ">" => {
                    let n: usize = rest.parse().unwrap();
                    let mut items = Vec::new();
                    for _ in 0..n {
                        items.push(self.read_inner().await?);
                    }
                    Reply::Push(items)
                }
                "*" => {
                    let n: i64 = rest.parse().unwrap();
                    if n < 0 {
                        Reply::Array(None)
                    } else {
                        let mut items = Vec::new();
                        for _ in 0..n {
                            items.push(self.read_inner().await?);
                        }
                        Reply::Array(Some(items))
                    }
                }
                "_" => Reply::Null,
                "," => Reply::Double(rest.to_string()),
                "#" => Reply::Bool(rest == "t"),
                "%" | "~" => {
                    let n: usize = rest.parse().unwrap();
                    let per = if kind == "%" { 2 } else { 1 };
                    let mut items = Vec::new();
                    for _ in 0..n * per {
                        items.push(self.read_inner().await?);
                    }
                    if kind == "~" {
                        Reply::Set(items)
                    } else {
                        let mut pairs = Vec::new();
                        let mut it = items.into_iter();
                        while let (Some(k), Some(v)) = (it.next(), it.next()) {
                            pairs.push((k, v));
                        }
                        Reply::Map(pairs)
                    }
                }
                "=" => {
                    let n: usize = rest.parse().unwrap();
                    let mut buf = vec![0u8; n + 2];
                    self.reader.read_exact(&mut buf).await.ok()?;
                    buf.truncate(n);
                    let text = buf.split_off(4.min(n));
                    Reply::Verbatim(
                        String::from_utf8_lossy(&buf)
                            .trim_end_matches(':')
                            .to_string(),
                        text,
                    )
                }
                other => panic!("unexpected reply type {other:?}"),
            })
        })
    }
}

/// A request as RESP bytes (`encode` of text arguments).
pub fn send(args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    encode(&args)
}

/// `INFO clients`' `blocked_clients`.
pub async fn blocked_clients(c: &mut Client) -> u64 {
    let info = c.cmd(&["INFO", "clients"]).await.text();
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("blocked_clients in INFO")
}

/// Waits until `n` clients are blocked (so a write sent next comes after
/// the blocking request was run).
pub async fn until_blocked(c: &mut Client, n: u64) {
    for _ in 0..500 {
        if blocked_clients(c).await == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never {n} blocked clients");
}
