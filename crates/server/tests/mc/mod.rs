//! An in-process server speaking both protocols over one engine, and a raw
//! memcached text client.
//!
//! The client reads replies up to a marker: every script is sent followed
//! by `mn\r\n`, whose `MN\r\n` reply comes after all the others, so a
//! transcript is complete without timing guesses.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{Engine, NamespaceConfig, WriteMode};
use tiercache_server::{serve, serve_memcache, ListenAddr, Listener, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub struct McServer {
    pub mc_addr: SocketAddr,
    pub resp_addr: SocketAddr,
    pub engine: Arc<Engine>,
    pub store: Arc<MemoryStore>,
    stop: watch::Sender<bool>,
    handles: Vec<JoinHandle<std::io::Result<()>>>,
    _dir: tempfile::TempDir,
}

async fn bind() -> (Listener, SocketAddr) {
    let listener = Listener::bind(&ListenAddr::Tcp("127.0.0.1:0".parse().unwrap()))
        .await
        .unwrap();
    let ListenAddr::Tcp(addr) = listener.local_addr().unwrap() else {
        panic!("not tcp")
    };
    (listener, addr)
}

impl McServer {
    pub async fn start() -> McServer {
        Self::start_with(ServerConfig::default()).await
    }

    pub async fn start_with(config: ServerConfig) -> McServer {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::new("main"));
        let engine = Arc::new(
            Engine::builder(dir.path())
                .memory_bytes(16 << 20)
                .namespace(NamespaceConfig::new("default", WriteMode::Back).store(store.clone()))
                .build()
                .await
                .unwrap(),
        );
        let (stop, rx) = watch::channel(false);
        let (mc, mc_addr) = bind().await;
        let (resp, resp_addr) = bind().await;
        let stopped = |mut rx: watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let handles = vec![
            tokio::spawn(serve_memcache(
                mc,
                engine.clone(),
                config.clone(),
                stopped(rx.clone()),
            )),
            tokio::spawn(serve(resp, engine.clone(), config, stopped(rx))),
        ];
        McServer {
            mc_addr,
            resp_addr,
            engine,
            store,
            stop,
            handles,
            _dir: dir,
        }
    }

    pub async fn client(&self) -> McClient {
        McClient::connect(self.mc_addr).await
    }

    /// Signals shutdown, waits (bounded) for both listeners, shuts the engine down.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for h in self.handles {
            tokio::time::timeout(Duration::from_secs(10), h)
                .await
                .expect("serve did not return after shutdown")
                .unwrap()
                .unwrap();
        }
        self.engine.shutdown().await.unwrap();
    }
}

pub struct McClient {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl McClient {
    pub async fn connect(addr: SocketAddr) -> McClient {
        McClient {
            stream: TcpStream::connect(addr).await.unwrap(),
            buf: Vec::new(),
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Sends `script` then `mn\r\n`; returns every reply before `MN\r\n`.
    pub async fn run(&mut self, script: &[u8]) -> Vec<u8> {
        let mut bytes = script.to_vec();
        bytes.extend_from_slice(b"mn\r\n");
        self.send(&bytes).await;
        self.read_until_marker().await
    }

    /// [`run`](Self::run) on a text script: `\n` becomes `\r\n`.
    pub async fn script(&mut self, text: &str) -> String {
        let out = self.run(text.replace('\n', "\r\n").as_bytes()).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    pub async fn read_until_marker(&mut self) -> Vec<u8> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(pos) = find(&self.buf, b"MN\r\n") {
                // A marker must start a reply line.
                if pos == 0 || self.buf[pos - 1] == b'\n' {
                    let out = self.buf[..pos].to_vec();
                    self.buf.drain(..pos + 4);
                    return out;
                }
            }
            let mut chunk = vec![0u8; 64 << 10];
            let n = tokio::time::timeout_at(deadline, self.stream.read(&mut chunk))
                .await
                .unwrap_or_else(|_| {
                    panic!("no MN marker; got {:?}", String::from_utf8_lossy(&self.buf))
                })
                .unwrap();
            assert!(
                n > 0,
                "connection closed before the marker; got {:?}",
                String::from_utf8_lossy(&self.buf)
            );
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Reads one reply line (with its `\r\n`).
    pub async fn read_line(&mut self) -> String {
        loop {
            if let Some(pos) = find(&self.buf, b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..pos + 2).collect();
                return String::from_utf8_lossy(&line).into_owned();
            }
            let mut chunk = vec![0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut chunk))
                .await
                .expect("no reply line")
                .unwrap();
            assert!(n > 0, "connection closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Reads until the server closes the connection.
    pub async fn read_to_eof(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        tokio::time::timeout(Duration::from_secs(10), self.stream.read_to_end(&mut out))
            .await
            .expect("the server did not close the connection")
            .unwrap();
        out
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Minimal RESP call: returns the raw reply bytes of one command.
pub async fn resp_call(addr: SocketAddr, args: &[&[u8]]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut req = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        req.extend_from_slice(a);
        req.extend_from_slice(b"\r\n");
    }
    s.write_all(&req).await.unwrap();
    let mut out = vec![0u8; 1 << 16];
    let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut out))
        .await
        .unwrap()
        .unwrap();
    out.truncate(n);
    out
}
