//! Accepting connections: bind, cap the number of clients, spawn a
//! [`RespConnection`] (or a [`McConnection`] for the memcached protocol) per
//! client, and shut down cleanly. Both protocols share this loop, so the
//! client cap and the shutdown path cover them alike.

use crate::config::ServerConfig;
use crate::connection::RespConnection;
use crate::memcache::McConnection;
use crate::shutdown::{Shutdown, ShutdownSignal};
use crate::state::ServerState;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::Engine;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Where a server listens: `127.0.0.1:6380` or `unix:/run/tiercache.sock`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP address (port 0 picks a free port).
    Tcp(SocketAddr),
    /// A unix socket path.
    Unix(PathBuf),
}

impl FromStr for ListenAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("unix socket address needs a path: unix:/path/to.sock".to_string());
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        s.parse()
            .map(ListenAddr::Tcp)
            .map_err(|_| format!("invalid listen address '{s}' (expected host:port with a numeric IP, or unix:/path)"))
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(a) => write!(f, "{a}"),
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// A bound TCP or unix socket listener.
#[derive(Debug)]
pub enum Listener {
    /// TCP.
    Tcp(TcpListener),
    /// A unix socket, with its path (removed when the server stops).
    Unix(UnixListener, PathBuf),
}

impl Listener {
    /// Binds `addr`. A stale unix socket file left by a previous run is
    /// replaced, as Redis does; any other file at that path is an error.
    pub async fn bind(addr: &ListenAddr) -> io::Result<Listener> {
        match addr {
            ListenAddr::Tcp(a) => Ok(Listener::Tcp(TcpListener::bind(a).await?)),
            ListenAddr::Unix(path) => {
                use std::os::unix::fs::FileTypeExt;
                if let Ok(meta) = std::fs::symlink_metadata(path) {
                    if meta.file_type().is_socket() {
                        std::fs::remove_file(path)?;
                    }
                }
                Ok(Listener::Unix(UnixListener::bind(path)?, path.clone()))
            }
        }
    }

    /// The address actually bound (the real port when bound to port 0).
    pub fn local_addr(&self) -> io::Result<ListenAddr> {
        match self {
            Listener::Tcp(l) => l.local_addr().map(ListenAddr::Tcp),
            Listener::Unix(_, path) => Ok(ListenAddr::Unix(path.clone())),
        }
    }

    pub(crate) async fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Tcp(l) => {
                let (s, _) = l.accept().await?;
                // Replies are already batched per read; Nagle would only add latency.
                s.set_nodelay(true)?;
                Ok(Stream::Tcp(s))
            }
            Listener::Unix(l, _) => Ok(Stream::Unix(l.accept().await?.0)),
        }
    }
}

/// An accepted connection.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// The protocol a listener speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Resp,
    Memcache,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Resp => "RESP",
            Protocol::Memcache => "memcache",
        }
    }
}

/// Serves memcached-protocol clients on `listener`, exactly as [`serve`]
/// serves RESP clients: same client cap (`max_clients`; over it a client
/// gets memcached's `ERROR Too many open connections` and is closed), same
/// shutdown sequence. Run both on one engine to serve both protocols over
/// the same data.
pub async fn serve_memcache(
    listener: Listener,
    engine: Arc<Engine>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    serve_protocol(listener, engine, config, shutdown, Protocol::Memcache).await
}

/// Serves RESP clients on `listener` until `shutdown` completes, then
/// stops accepting, lets every connection finish the batch it is running
/// (connections notice shutdown only between batches), waits for all
/// connection tasks to end and returns. The engine is not shut down: the
/// caller does that afterwards, so write-back data is flushed once no
/// client can write any more.
pub async fn serve(
    listener: Listener,
    engine: Arc<Engine>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    serve_protocol(listener, engine, config, shutdown, Protocol::Resp).await
}

async fn serve_protocol(
    listener: Listener,
    engine: Arc<Engine>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
    protocol: Protocol,
) -> io::Result<()> {
    let port = match listener.local_addr()? {
        ListenAddr::Tcp(a) => a.port(),
        ListenAddr::Unix(_) => 0,
    };
    let limit = match &config.shared_client_slots {
        Some(slots) => slots.clone(),
        None => Arc::new(Semaphore::new(
            config.max_clients.min(Semaphore::MAX_PERMITS),
        )),
    };
    let functions_file = config.functions_file.clone();
    let server = Arc::new(ServerState::new(config, port));
    // The RESP server keeps the libraries; the memcached one has none.
    if let (Some(path), Protocol::Resp) = (functions_file, protocol) {
        server
            .scripts
            .open_functions(path)
            .await
            .map_err(io::Error::other)?;
    }
    if let Protocol::Resp = protocol {
        let listener: Arc<dyn tiercache_engine::ExpiryListener> = server.clone();
        engine.add_expiry_listener(Arc::downgrade(&listener));
    }
    let stop = ShutdownSignal::new();
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    tracing::info!(addr = %listener.local_addr()?, protocol = protocol.name(), "server listening");
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            // Reap finished connections so the set does not grow forever.
            Some(res) = tasks.join_next(), if !tasks.is_empty() => log_join(res),
            accepted = listener.accept() => match accepted {
                Ok(stream) => {
                    let permit = limit.clone().try_acquire_owned().ok();
                    let (engine, server, shutdown) = (engine.clone(), server.clone(), stop.subscribe());
                    tasks.spawn(async move {
                        match stream {
                            Stream::Tcp(s) => {
                                let addrs = tcp_addrs(&s);
                                handle(s, addrs, permit, engine, server, shutdown, protocol).await
                            }
                            Stream::Unix(s) => {
                                let addrs = unix_addrs(&s);
                                handle(s, addrs, permit, engine, server, shutdown, protocol).await
                            }
                        }
                    });
                }
                Err(e) => {
                    // Usually out of file descriptors: back off instead of spinning.
                    tracing::error!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    // Stop accepting first, so clients arriving now are refused, not stranded.
    let unix_path = match &listener {
        Listener::Unix(_, path) => Some(path.clone()),
        Listener::Tcp(_) => None,
    };
    drop(listener);
    tracing::info!(
        connections = tasks.len(),
        protocol = protocol.name(),
        "server shutting down"
    );
    stop.signal();
    let drain = async {
        while let Some(res) = tasks.join_next().await {
            log_join(res);
        }
    };
    if tokio::time::timeout(server.config.shutdown_grace, drain)
        .await
        .is_err()
    {
        tracing::warn!(
            connections = tasks.len(),
            "connections still busy after the shutdown grace period; closing them"
        );
        tasks.shutdown().await;
    }
    if let Some(path) = unix_path {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

fn log_join(res: Result<(), tokio::task::JoinError>) {
    if let Err(e) = res {
        tracing::error!(error = %e, "connection task failed");
    }
}

/// Decrements the connected-clients count however the task ends.
struct Connected(Arc<ServerState>);

impl Drop for Connected {
    fn drop(&mut self) {
        self.0.connected.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Peer and local address of a TCP connection, as `CLIENT LIST` shows them.
fn tcp_addrs(s: &TcpStream) -> (String, String) {
    let show = |a: io::Result<SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
    (show(s.peer_addr()), show(s.local_addr()))
}

/// Redis shows a unix socket client as `path:0`.
fn unix_addrs(s: &UnixStream) -> (String, String) {
    let path = s
        .local_addr()
        .ok()
        .and_then(|a| a.as_pathname().map(|p| p.display().to_string()))
        .unwrap_or_default();
    (format!("{path}:0"), format!("{path}:0"))
}

async fn handle<S: AsyncRead + AsyncWrite + Unpin + Send>(
    mut stream: S,
    (addr, laddr): (String, String),
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    engine: Arc<Engine>,
    server: Arc<ServerState>,
    mut shutdown: Shutdown,
    protocol: Protocol,
) {
    let Some(_permit) = permit else {
        let refusal: &[u8] = match protocol {
            Protocol::Resp => b"-ERR max number of clients reached\r\n",
            Protocol::Memcache => {
                server.memcache.rejected_connections.incr();
                b"ERROR Too many open connections\r\n"
            }
        };
        let _ = stream.write_all(refusal).await;
        let _ = stream.shutdown().await;
        return;
    };
    server.connected.fetch_add(1, Ordering::Relaxed);
    let _connected = Connected(server.clone());
    let result = match protocol {
        Protocol::Resp => {
            RespConnection::with_addrs(stream, engine, server, addr, laddr)
                .run(&mut shutdown)
                .await
        }
        Protocol::Memcache => {
            server.memcache.total_connections.incr();
            McConnection::new(stream, engine, server)
                .run(&mut shutdown)
                .await
        }
    };
    if let Err(e) = result {
        // Resets and broken pipes are the client's business, not an error of ours.
        tracing::debug!(error = %e, "connection ended with an I/O error");
    }
}
