//! State shared by all connections of one server, and per connection.

use crate::config::ServerConfig;
use crate::resp::Proto;
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Server-wide state: settings, the client registry, `SCAN` cursors and
/// counters for `INFO`.
#[derive(Debug)]
pub struct ServerState {
    /// The settings the server was started with.
    pub config: ServerConfig,
    /// When the server started, for `uptime_in_seconds`.
    pub started: Instant,
    /// The TCP port listened on (0 for a unix socket).
    pub port: u16,
    /// Connections open now.
    pub connected: AtomicU64,
    /// Connections accepted since start.
    pub connections_received: AtomicU64,
    /// Commands run since start.
    pub commands: AtomicU64,
    /// Calls, time and errors per command (`INFO commandstats`).
    pub command_stats: crate::cmdstats::CommandStats,
    /// Clients waiting in a blocking command (`BLPOP`...) now.
    pub blocked_clients: AtomicU64,
    /// The memcached front end's counters (`stats`); unused by RESP.
    pub memcache: crate::memcache::McStats,
    /// The `requirepass` in force (`CONFIG SET requirepass` changes it).
    requirepass: RwLock<Option<Vec<u8>>>,
    /// Idle client timeout in milliseconds (`CONFIG SET timeout`), 0 = never.
    idle_timeout_ms: AtomicU64,
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    /// Open `SCAN` cursors.
    pub scans: ScanCursors,
    /// `OBJECT ENCODING` answers that the value alone does not tell.
    pub encodings: EncodingHints,
    /// `CONFIG SET` values of encoding thresholds, by canonical name:
    /// accepted and reported back; they change what `OBJECT ENCODING`
    /// answers, nothing else.
    tunables: Mutex<BTreeMap<&'static str, i64>>,
    /// Error replies sent, by error code (`INFO errorstats`).
    errors: Mutex<BTreeMap<String, u64>>,
    next_client_id: AtomicU64,
    /// `SAVE`/`BGSAVE` bookkeeping (`LASTSAVE`, `INFO persistence`).
    pub saves: Arc<crate::cmd::save::Saves>,
    /// Every pub/sub subscription.
    pub pubsub: crate::pubsub::PubSub,
    /// The connections in `MONITOR` mode.
    pub monitors: crate::monitor::Monitors,
    /// The keyspace notification classes enabled.
    pub keyspace_events: crate::notify::KeyspaceEvents,
    /// `SLOWLOG`.
    pub slowlog: crate::slowlog::SlowLog,
    /// The Lua script cache and VM (`EVAL`, `SCRIPT`).
    pub scripts: crate::cmd::script::Scripts,
    /// The replicas fed the replication stream (`SYNC`, `PSYNC`).
    pub replicas: Arc<crate::replication::Replicas>,
}

/// The most error codes `INFO errorstats` tracks (Redis's
/// `ERROR_STATS_NUMBER`); replies with a new code beyond it still count in
/// the total.
const ERROR_CODES_MAX: usize = 128;

impl ServerState {
    /// Counts an error reply (`-CODE message`) under its code, as Redis's
    /// `afterErrorReply`: the word before the first space within 32 bytes,
    /// `ERR` when there is none.
    #[cold]
    pub fn count_error(&self, reply: &[u8]) {
        let head = &reply[..reply.len().min(32)];
        let code = match head.iter().position(|&b| b == b' ') {
            Some(space) if space > 1 => &head[1..space],
            _ => b"ERR",
        };
        let code = String::from_utf8_lossy(code);
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        let total = errors.entry(String::new()).or_insert(0);
        *total += 1;
        if let Some(n) = errors.get_mut(code.as_ref()) {
            *n += 1;
        } else if errors.len() <= ERROR_CODES_MAX {
            errors.insert(code.into_owned(), 1);
        }
    }

    /// Error replies sent: the total, and the count per code in code order.
    pub fn error_counts(&self) -> (u64, Vec<(String, u64)>) {
        let errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        let total = errors.get("").copied().unwrap_or(0);
        let codes = errors
            .iter()
            .filter(|(code, _)| !code.is_empty())
            .map(|(code, n)| (code.clone(), *n))
            .collect();
        (total, codes)
    }

    /// Forgets the error counts (`CONFIG RESETSTAT`).
    pub fn reset_error_counts(&self) {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// A connection read a batch: tells the busy poller, if any.
    #[inline]
    pub fn note_activity(&self) {
        if let Some(poll) = &self.config.busy_poll {
            poll.note_activity();
        }
    }

    /// Fresh state for a server on `port`.
    pub fn new(config: ServerConfig, port: u16) -> Self {
        let replicas = config.replicas.clone().unwrap_or_default();
        ServerState {
            requirepass: RwLock::new(config.requirepass.clone().map(String::into_bytes)),
            idle_timeout_ms: AtomicU64::new(config.idle_timeout.as_millis() as u64),
            config,
            started: Instant::now(),
            port,
            connected: AtomicU64::new(0),
            connections_received: AtomicU64::new(0),
            commands: AtomicU64::new(0),
            command_stats: crate::cmdstats::CommandStats::new(crate::cmd::COMMANDS.len()),
            blocked_clients: AtomicU64::new(0),
            memcache: Default::default(),
            clients: Mutex::new(BTreeMap::new()),
            scans: ScanCursors::default(),
            encodings: EncodingHints::default(),
            tunables: Mutex::new(BTreeMap::new()),
            errors: Mutex::new(BTreeMap::new()),
            next_client_id: AtomicU64::new(1),
            saves: Default::default(),
            pubsub: Default::default(),
            monitors: Default::default(),
            keyspace_events: Default::default(),
            slowlog: Default::default(),
            scripts: Default::default(),
            replicas,
        }
    }

    /// Raises keyspace event `event` of `class` on `key` (Redis's
    /// `notifyKeyspaceEvent`): one atomic load while notifications are off.
    #[inline]
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        self.keyspace_events.notify(&self.pubsub, class, event, key);
    }

    /// A unique id for a new connection (`CLIENT ID`).
    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }

    /// True when clients must `AUTH` before anything else.
    pub fn auth_required(&self) -> bool {
        self.requirepass
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// The current `requirepass` (empty when unset), for `CONFIG GET`.
    pub fn requirepass(&self) -> Vec<u8> {
        self.requirepass
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_default()
    }

    /// Sets or (with an empty password) clears `requirepass`. Connections
    /// already authenticated stay so, as in Redis.
    pub fn set_requirepass(&self, pass: &[u8]) {
        *self.requirepass.write().unwrap_or_else(|e| e.into_inner()) =
            (!pass.is_empty()).then(|| pass.to_vec());
    }

    /// Checks a password for user `default` in constant time (for a given
    /// length). Without `requirepass` any password is accepted, as Redis's
    /// `nopass` default user does.
    pub fn check_password(&self, pass: &[u8]) -> bool {
        match &*self.requirepass.read().unwrap_or_else(|e| e.into_inner()) {
            None => true,
            Some(expected) => constant_time_eq(expected, pass),
        }
    }

    /// The value of encoding threshold `name` (`CONFIG GET`), `default`
    /// until `CONFIG SET` changed it.
    pub fn tunable(&self, name: &'static str, default: i64) -> i64 {
        *self
            .tunables
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .unwrap_or(&default)
    }

    /// `repl-ping-replica-period`, in seconds.
    pub fn replica_ping_period(&self) -> u64 {
        self.tunable("repl-ping-replica-period", 10).max(1) as u64
    }

    /// Records a new value for encoding threshold `name` (`CONFIG SET`).
    pub fn set_tunable(&self, name: &'static str, value: i64) {
        // Read by every write: kept where one atomic load reaches them.
        match name {
            "min-replicas-to-write" => self.replicas.set_min_to_write(value as u32),
            "min-replicas-max-lag" => self.replicas.set_max_lag(value as u32),
            _ => {}
        }
        self.tunables
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name, value);
    }

    /// How long a connection may idle; zero means forever.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms.load(Ordering::Relaxed))
    }

    /// How long a half-received request may wait for more bytes.
    pub fn partial_request_timeout(&self) -> Duration {
        self.config.partial_request_timeout
    }

    /// Changes the idle timeout (`CONFIG SET timeout`); zero means never.
    pub fn set_idle_timeout(&self, timeout: Duration) {
        self.idle_timeout_ms
            .store(timeout.as_millis() as u64, Ordering::Relaxed);
    }

    /// Adds a connection to the registry (`CLIENT LIST`).
    pub fn register(&self, info: Arc<ClientInfo>) {
        self.connections_received.fetch_add(1, Ordering::Relaxed);
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(info.id, info);
    }

    /// Removes a connection from the registry.
    pub fn unregister(&self, id: u64) {
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }

    /// Every registered connection, by id.
    pub fn clients(&self) -> Vec<Arc<ClientInfo>> {
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= std::hint::black_box((x ^ y) as u64);
    }
    diff == 0
}

/// One connection as `CLIENT LIST` / `CLIENT INFO` show it; shared between
/// the connection and the server's registry.
#[derive(Debug)]
pub struct ClientInfo {
    /// `CLIENT ID`.
    pub id: u64,
    /// Peer address (`ip:port`, or the socket path for unix sockets).
    pub addr: String,
    /// Local address.
    pub laddr: String,
    /// When the connection was accepted.
    pub created: Instant,
    /// Milliseconds after `created` of the last command batch.
    pub last_active_ms: AtomicU64,
    /// The protocol version the client chose (2 or 3).
    pub resp: AtomicU64,
    /// `CLIENT NO-EVICT` (accepted; connections are never evicted here).
    pub no_evict: AtomicBool,
    /// Commands queued since `MULTI`, -1 outside a transaction (`multi=`).
    pub multi: AtomicI64,
    /// The last command run, as its position in the command table plus
    /// one (0: none yet), for `CLIENT LIST`'s `cmd=`.
    last_command: AtomicU32,
    /// Name (`CLIENT SETNAME`), library name and version (`CLIENT SETINFO`).
    pub names: Mutex<ClientNames>,
    /// While the connection waits in a blocking command: what wakes it
    /// (`CLIENT UNBLOCK` uses it; `flags=b`).
    pub blocked_wake: Mutex<Option<Arc<tokio::sync::Notify>>>,
    /// Why `CLIENT UNBLOCK` woke it: 0 not, [`UNBLOCK_TIMEOUT`] or
    /// [`UNBLOCK_ERROR`].
    pub unblock: AtomicU8,
    /// Pub/sub subscriptions: channels, patterns, shard channels
    /// (`sub=`, `psub=`, `ssub=`; any makes `flags=P`).
    pub subscriptions: [AtomicU32; 3],
    /// Closes the connection (`CLIENT KILL`); set when it starts serving.
    pub killer: std::sync::OnceLock<crate::shutdown::Killer>,
    /// In `MONITOR` mode (`flags=O`).
    pub monitoring: AtomicBool,
    /// Request bytes received and not yet run (`qbuf=`).
    pub qbuf: AtomicU64,
}

/// `CLIENT UNBLOCK id TIMEOUT`: the command answers as if timed out.
pub const UNBLOCK_TIMEOUT: u8 = 1;
/// `CLIENT UNBLOCK id ERROR`: the command answers `-UNBLOCKED`.
pub const UNBLOCK_ERROR: u8 = 2;

/// The names a client gives itself.
#[derive(Debug, Default, Clone)]
pub struct ClientNames {
    /// `CLIENT SETNAME` / `HELLO ... SETNAME`.
    pub name: Option<Vec<u8>>,
    /// `CLIENT SETINFO LIB-NAME`.
    pub lib_name: Option<Vec<u8>>,
    /// `CLIENT SETINFO LIB-VER`.
    pub lib_ver: Option<Vec<u8>>,
}

impl ClientInfo {
    /// A fresh client record.
    pub fn new(id: u64, addr: String, laddr: String) -> Self {
        ClientInfo {
            id,
            addr,
            laddr,
            created: Instant::now(),
            last_active_ms: AtomicU64::new(0),
            resp: AtomicU64::new(2),
            no_evict: AtomicBool::new(false),
            multi: AtomicI64::new(-1),
            last_command: AtomicU32::new(0),
            names: Mutex::new(ClientNames::default()),
            blocked_wake: Mutex::new(None),
            unblock: AtomicU8::new(0),
            subscriptions: Default::default(),
            killer: Default::default(),
            monitoring: AtomicBool::new(false),
            qbuf: AtomicU64::new(0),
        }
    }

    /// Asks the connection, if it waits in a blocking command, to stop
    /// waiting for `reason` (`CLIENT UNBLOCK`); true when it was waiting.
    pub fn unblock(&self, reason: u8) -> bool {
        let wake = self.blocked_wake.lock().unwrap_or_else(|e| e.into_inner());
        match &*wake {
            Some(w) => {
                self.unblock.store(reason, Ordering::Release);
                w.notify_one();
                true
            }
            None => false,
        }
    }

    /// Records the last command run (its position in the command table).
    pub fn set_last_command(&self, index: usize) {
        self.last_command.store(index as u32 + 1, Ordering::Relaxed);
    }

    /// The name of the last command run, `NULL` before any (as Redis).
    pub fn last_command(&self) -> &'static str {
        match self.last_command.load(Ordering::Relaxed) {
            0 => "NULL",
            n => crate::cmd::COMMANDS
                .get(n as usize - 1)
                .map_or("NULL", |spec| spec.name),
        }
    }

    /// A copy of the names.
    pub fn names(&self) -> ClientNames {
        self.names.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Updates the names.
    pub fn with_names<T>(&self, f: impl FnOnce(&mut ClientNames) -> T) -> T {
        f(&mut self.names.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// True while the connection is subscribed to anything (`flags=P`,
    /// `CLIENT LIST TYPE pubsub`).
    pub fn is_subscriber(&self) -> bool {
        self.subscriptions
            .iter()
            .any(|n| n.load(Ordering::Relaxed) > 0)
    }

    /// `flags=`: in Redis's order, the ones that apply here.
    fn flags(&self) -> String {
        let mut f = String::new();
        if self.monitoring.load(Ordering::Relaxed) {
            f.push('O');
        }
        if self.is_subscriber() {
            f.push('P');
        }
        if self.multi.load(Ordering::Relaxed) >= 0 {
            f.push('x');
        }
        if self
            .blocked_wake
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
        {
            f.push('b');
        }
        if self.no_evict.load(Ordering::Relaxed) {
            f.push('e');
        }
        if f.is_empty() {
            f.push('N');
        }
        f
    }

    /// One `CLIENT LIST` line (with its trailing newline), in Redis 7's
    /// field order. Fields that have no meaning here (buffers, memory) are
    /// reported as zero.
    pub fn line(&self, cmd: &str) -> String {
        let names = self.names();
        let text = |b: &Option<Vec<u8>>| {
            b.as_deref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let age = self.created.elapsed();
        let idle = age
            .as_millis()
            .saturating_sub(self.last_active_ms.load(Ordering::Relaxed) as u128)
            / 1000;
        format!(
            "id={} addr={} laddr={} fd=0 name={} age={} idle={} flags={} db=0 sub={} psub={} ssub={} multi={} qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}\n",
            self.id,
            self.addr,
            self.laddr,
            text(&names.name),
            age.as_secs(),
            idle,
            self.flags(),
            self.subscriptions[0].load(Ordering::Relaxed),
            self.subscriptions[1].load(Ordering::Relaxed),
            self.subscriptions[2].load(Ordering::Relaxed),
            self.multi.load(Ordering::Relaxed),
            self.qbuf.load(Ordering::Relaxed),
            cmd,
            self.resp.load(Ordering::Relaxed),
            text(&names.lib_name),
            text(&names.lib_ver),
        )
    }
}

/// One connection's own state.
#[derive(Debug)]
pub struct ClientState {
    /// `CLIENT ID`.
    pub id: u64,
    /// The reply protocol (`HELLO`).
    pub proto: Proto,
    /// False until `AUTH` succeeds when a password is required.
    pub authenticated: bool,
    /// What `CLIENT LIST` shows of this connection.
    pub info: Arc<ClientInfo>,
    /// This connection's place at the engine's
    /// [`Gate`](tiercache_engine::Gate).
    pub seat: tiercache_engine::GateSeat,
    /// The transaction being queued, between `MULTI` and `EXEC`.
    pub tx: Option<Box<crate::cmd::multi::Transaction>>,
    /// The keys `WATCH`ed for the next `EXEC`.
    pub watch: Option<tiercache_engine::Watch>,
    /// The blocking command (`BLPOP`...) this connection waits in.
    pub blocked: Option<Box<crate::cmd::blocking::Blocked>>,
    /// True while `EXEC` runs its commands (blocking commands do not block).
    pub in_exec: bool,
    /// True while a Lua script runs its commands (`EVAL`).
    pub in_script: bool,
    /// `CLIENT REPLY`: which replies this client gets.
    pub replies: ReplyMode,
    /// The running batch's calls, for `INFO commandstats`.
    pub tally: crate::cmdstats::CallTally,
    /// Pub/sub subscriptions, while there are any.
    pub pubsub: Option<Box<crate::pubsub::Subscriptions>>,
    /// Where pub/sub messages and `MONITOR` lines for this connection
    /// wait, while it subscribes or monitors.
    pub mailbox: Option<Arc<crate::pubsub::Mailbox>>,
    /// Set by a command whose reply is a push (subscribe confirmations):
    /// it is sent even when `CLIENT REPLY` turned replies off.
    pub pushed: bool,
    /// What the last one-key collection write did to its key (for the
    /// keyspace events that follow it).
    pub last_change: crate::cmd::collection::LastChange,
    /// While a write command runs with `new` events on: its keys that did
    /// not exist before it ran. The first event on one of them is preceded
    /// by `new` (Redis raises it when the key is added, before the
    /// command's own event).
    pub absent_keys: std::cell::RefCell<Vec<Bytes>>,
    /// Set when `run_command` ran a command without timing it for the slow
    /// log (a `fast` one at a coarse threshold): the connection then logs a
    /// batch of that one command by the batch's time. Refused, queued and
    /// timed commands leave it unset.
    pub untimed: bool,
    /// Set by the command running now when it changed something (see
    /// `cmd::propagate`).
    pub dirty: std::cell::Cell<bool>,
    /// What the command running now propagates to replicas.
    pub propagation: crate::cmd::propagate::Pending,
    /// The port this connection said it listens on as a replica
    /// (`REPLCONF listening-port`).
    pub replica_port: u16,
    /// This connection is an attached replica (`SYNC`/`PSYNC`).
    pub replica: bool,
}

impl ClientState {
    /// State for a new connection to `server`.
    pub fn new(server: &ServerState, addr: String, laddr: String) -> Self {
        let id = server.next_client_id();
        ClientState {
            id,
            proto: Proto::Resp2,
            authenticated: !server.auth_required(),
            info: Arc::new(ClientInfo::new(id, addr, laddr)),
            seat: tiercache_engine::GateSeat::new(id),
            tx: None,
            watch: None,
            blocked: None,
            in_exec: false,
            in_script: false,
            replies: ReplyMode::On,
            tally: Default::default(),
            pubsub: None,
            mailbox: None,
            pushed: false,
            last_change: Default::default(),
            absent_keys: Default::default(),
            untimed: false,
            dirty: Default::default(),
            propagation: Default::default(),
            replica_port: 0,
            replica: false,
        }
    }

    /// A command failed to queue: the transaction, if any, will not run.
    pub fn flag_transaction(&mut self) {
        if let Some(tx) = &mut self.tx {
            tx.abort();
        }
    }

    /// Ends any transaction and watch (`DISCARD`, `EXEC`, `RESET`).
    pub fn end_transaction(&mut self) {
        self.tx = None;
        self.info.multi.store(-1, Ordering::Relaxed);
        if let Some(w) = &mut self.watch {
            w.clear();
        }
    }

    /// True in Redis's RESP2 subscriber context, where only the
    /// (un)subscribe commands, `PING`, `QUIT` and `RESET` run.
    pub fn in_subscriber_context(&self) -> bool {
        self.pubsub.is_some() && self.proto == Proto::Resp2
    }

    /// This connection's mailbox, made on first use.
    pub fn mailbox(&mut self) -> Arc<crate::pubsub::Mailbox> {
        self.mailbox
            .get_or_insert_with(|| {
                Arc::new(crate::pubsub::Mailbox::new(crate::pubsub::MAILBOX_LIMIT))
            })
            .clone()
    }

    /// Drops the mailbox once nothing posts to it (no subscription, not
    /// monitoring), after moving what it holds into `out`.
    pub fn release_mailbox(&mut self, out: &mut bytes::BytesMut) {
        if self.pubsub.is_some() || self.info.monitoring.load(Ordering::Relaxed) || self.replica {
            return;
        }
        if let Some(mailbox) = self.mailbox.take() {
            let _ = mailbox.drain_into(out, self.proto);
        }
    }

    /// Switches the reply protocol.
    pub fn set_proto(&mut self, proto: Proto) {
        self.proto = proto;
        self.info
            .resp
            .store(proto.version() as u64, Ordering::Relaxed);
    }
}

/// Most `SCAN` cursors kept open at once; the oldest is forgotten first.
const MAX_CURSORS: usize = 16 << 10;
/// Most key bytes held by open cursors.
const MAX_CURSOR_BYTES: usize = 16 << 20;

/// Open `SCAN` cursors: a cursor number stands for the last key a page
/// returned, so the next page resumes right after it. Shared by all
/// connections (a client's pool may continue a scan on another
/// connection); bounded in count and bytes, oldest forgotten first.
#[derive(Debug, Default)]
pub struct ScanCursors {
    inner: Mutex<Cursors>,
}

#[derive(Debug, Default)]
struct Cursors {
    by_id: HashMap<u64, Bytes>,
    order: VecDeque<u64>,
    bytes: usize,
    next: u64,
}

impl ScanCursors {
    /// A new cursor number standing for "after `key`".
    pub fn open(&self, key: Bytes) -> u64 {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        // Cursor numbers never repeat within a run and are never 0.
        c.next += 1;
        let id = c.next;
        c.bytes += key.len();
        c.by_id.insert(id, key);
        c.order.push_back(id);
        while c.order.len() > MAX_CURSORS || c.bytes > MAX_CURSOR_BYTES {
            let Some(old) = c.order.pop_front() else {
                break;
            };
            if let Some(k) = c.by_id.remove(&old) {
                c.bytes -= k.len();
            }
        }
        id
    }

    /// The key a cursor stands for; `None` when unknown or forgotten. A
    /// cursor stays valid (a client may retry a page) until it ages out.
    pub fn get(&self, id: u64) -> Option<Bytes> {
        let c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        c.by_id.get(&id).cloned()
    }
}

/// Most keys with an encoding hint; past it the hints start over.
const MAX_HINTS: usize = 64 << 10;

/// The encoding Redis would report for values whose history matters:
/// a string modified in place (`APPEND` to an existing key, `SETRANGE`) is
/// `raw` however short, and an `INCRBYFLOAT` result is never `int`.
/// A hint holds a fingerprint of the value it was given for, so any later
/// write of another value makes it void without the write path (`SET`)
/// doing anything. Bounded: past `MAX_HINTS` keys it is cleared, and
/// `OBJECT ENCODING` falls back to what the value alone says.
#[derive(Debug, Default)]
pub struct EncodingHints {
    inner: Mutex<HashMap<Bytes, (u64, &'static str)>>,
}

impl EncodingHints {
    /// Records that `key`, while it holds the value of fingerprint `fp`
    /// ([`fingerprint`]), has `encoding`.
    pub fn note(&self, key: &[u8], fp: u64, encoding: &'static str) {
        let mut m = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= MAX_HINTS {
            m.clear();
        }
        m.insert(Bytes::copy_from_slice(key), (fp, encoding));
    }

    /// The hinted encoding of `key` if it still holds the hinted value.
    pub fn get(&self, key: &[u8], value: &[u8]) -> Option<&'static str> {
        if value.len() > EMBSTR_MAX {
            return None;
        }
        let m = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let &(fp, encoding) = m.get(key)?;
        (fp == fingerprint(value)).then_some(encoding)
    }
}

/// The longest string Redis encodes `embstr`; longer ones are `raw`.
pub const EMBSTR_MAX: usize = 44;

/// The fingerprint an encoding hint of `value` needs, `None` when it
/// needs no hint: a string longer than [`EMBSTR_MAX`] is `raw` by its
/// length alone, and hashing it would cost a pass over its bytes on every
/// write (`SETBIT` on a big bitmap, `APPEND` to a log).
pub fn hint_fingerprint(value: &[u8]) -> Option<u64> {
    (value.len() <= EMBSTR_MAX).then(|| fingerprint(value))
}

/// A 64-bit fingerprint of a value (SipHash, length included).
pub fn fingerprint(value: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// `CLIENT REPLY ON|OFF|SKIP`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    /// Every reply is sent.
    On,
    /// No reply is sent (`OFF`), until `CLIENT REPLY ON`.
    Off,
    /// The next command's reply is dropped, then `On`.
    Skip,
    /// Set by `CLIENT REPLY SKIP` itself: its own reply is dropped, then
    /// `Skip`.
    SkipThis,
}

/// Keys the engine's active or lazy expiry removed become `expired`
/// events, and `DEL`s for replicas.
impl tiercache_engine::ExpiryListener for ServerState {
    fn wants_expired(&self) -> bool {
        self.keyspace_events.wants(crate::notify::class::EXPIRED) || self.replicas.any()
    }

    fn expired(&self, keys: &[Bytes]) {
        self.replicas.note_expired(keys);
        for key in keys {
            self.notify(crate::notify::class::EXPIRED, "expired", key);
        }
    }
}
