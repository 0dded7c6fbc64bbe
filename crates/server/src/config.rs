//! The server's settings.

use crate::busy_poll::BusyPoll;
use crate::resp::Limits;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// How a RESP server behaves (SPEC defaults).
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Request and key size limits.
    pub limits: Limits,
    /// Most connections served at once; over it a client gets
    /// `-ERR max number of clients reached` and is closed.
    pub max_clients: usize,
    /// Close a connection idle this long; zero means never
    /// (`CONFIG SET timeout` changes it at run time).
    pub idle_timeout: Duration,
    /// Close a connection whose half-received request gets no further
    /// bytes for this long (slowloris), whatever the idle timeout; default
    /// 30 s.
    pub partial_request_timeout: Duration,
    /// When set, clients must `AUTH` with this password (user `default`)
    /// before any other command but `HELLO ... AUTH`, `QUIT` and `RESET`.
    pub requirepass: Option<String>,
    /// On shutdown, how long connections get to finish their batch and
    /// send its replies (a client that stops reading could otherwise hold
    /// shutdown forever). Their writes are committed either way.
    pub shutdown_grace: Duration,
    /// Client slots shared with other listeners: when set, `max_clients`
    /// is ignored and a connection takes one of these permits, so one cap
    /// covers every protocol (give the RESP and memcached listeners clones
    /// of one `Semaphore::new(max_clients)`). `None`: a cap of
    /// `max_clients` for this listener alone.
    pub shared_client_slots: Option<Arc<Semaphore>>,
    /// The replicas fed the writes of this listener's connections (see
    /// `crate::replication`): give the RESP and memcached listeners clones
    /// of one, so that replicas attached over RESP get the memcached
    /// writes too. `None`: this listener's own.
    pub replicas: Option<Arc<crate::replication::Replicas>>,
    /// When set, every batch a connection reads is reported to this
    /// [`BusyPoll`], which keeps the thread polling for its window instead
    /// of sleeping between requests (give every listener a clone of one).
    pub busy_poll: Option<Arc<BusyPoll>>,
    /// Notified by a client's `SHUTDOWN`: the process that embeds the
    /// server stops it (as on SIGTERM) when told. `None`: `SHUTDOWN` is
    /// refused with an error.
    pub shutdown_request: Option<Arc<tokio::sync::Notify>>,
    /// Who may run `DEBUG` (Redis's `enable-debug-command`).
    pub debug_command: DebugCommand,
    /// Where `FUNCTION` libraries are kept across restarts (read at
    /// start, rewritten at every change); `None`: in memory only.
    pub functions_file: Option<std::path::PathBuf>,
}

/// Who may run `DEBUG`: Redis 7's `enable-debug-command`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DebugCommand {
    /// No one (the default).
    #[default]
    No,
    /// Clients on a loopback address or the unix socket.
    Local,
    /// Every client.
    Yes,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            limits: Limits::default(),
            max_clients: 10_000,
            idle_timeout: Duration::ZERO,
            partial_request_timeout: crate::read::PARTIAL_REQUEST_TIMEOUT,
            requirepass: None,
            shutdown_grace: Duration::from_secs(30),
            shared_client_slots: None,
            replicas: None,
            busy_poll: None,
            shutdown_request: None,
            debug_command: DebugCommand::No,
            functions_file: None,
        }
    }
}
