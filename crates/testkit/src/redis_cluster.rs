//! A 3-master Redis Cluster on free ports.

use crate::process::{free_port, require_tool, wait_for_port};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Three `redis-server --cluster-enabled yes` children (no replicas, no
/// persistence) joined with `redis-cli --cluster create`, each in its own
/// temporary directory; killed on drop.
pub struct RedisCluster {
    nodes: Vec<Node>,
    cli: PathBuf,
}

struct Node {
    port: u16,
    child: Option<Child>,
    _dir: tempfile::TempDir,
}

impl RedisCluster {
    /// Starts the three masters, creates the cluster and waits until every
    /// node reports `cluster_state:ok`; `None` when `redis-server` or
    /// `redis-cli` is missing (see the crate docs).
    pub fn start() -> Option<RedisCluster> {
        let server = require_tool("redis-server", "redis-server")?;
        let cli = require_tool("redis-cli", "redis-tools")?;
        let mut nodes = Vec::new();
        for _ in 0..3 {
            // The cluster bus listens on port + 10000: pick ports whose bus
            // port is free too.
            let port = loop {
                let p = free_port();
                if p < 55_000 && std::net::TcpListener::bind(("127.0.0.1", p + 10_000)).is_ok() {
                    break p;
                }
            };
            let dir = tempfile::tempdir().expect("temp dir");
            let d = dir.path().to_str().expect("utf-8 temp path");
            let child = Command::new(&server)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-config-file", &format!("{d}/nodes.conf")])
                .args(["--cluster-node-timeout", "2000"])
                .args(["--save", "", "--appendonly", "no", "--dir", d])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            nodes.push(Node {
                port,
                child: Some(child),
                _dir: dir,
            });
        }
        let cluster = RedisCluster { nodes, cli };
        for addr in cluster.addrs() {
            assert!(
                wait_for_port(addr, Duration::from_secs(10)),
                "redis-server did not start on {addr}"
            );
        }
        let out = Command::new(&cluster.cli)
            .arg("--cluster")
            .arg("create")
            .args(cluster.addrs().iter().map(|a| a.to_string()))
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("run redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.wait_ok(Duration::from_secs(30));
        Some(cluster)
    }

    fn wait_ok(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        for node in &self.nodes {
            loop {
                let info = self.cli(node.port, &["CLUSTER", "INFO"]);
                if info.contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "cluster node {} not ok: {info}",
                    node.port
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Runs `redis-cli -p port args...` and returns its standard output.
    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        let out = Command::new(&self.cli)
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The masters' addresses.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.nodes
            .iter()
            .map(|n| SocketAddr::from(([127, 0, 0, 1], n.port)))
            .collect()
    }

    /// The masters' ports.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// `["127.0.0.1:P1", ...]`, as a `cluster = [...]` store setting.
    pub fn nodes(&self) -> Vec<String> {
        self.addrs().iter().map(|a| a.to_string()).collect()
    }

    /// Moves hash slot `slot` (and its keys, which must be text without
    /// spaces) from the master on `from` to the master on `to`, the way
    /// `redis-cli --cluster reshard` does: `SETSLOT IMPORTING/MIGRATING`,
    /// `MIGRATE`, then `SETSLOT NODE` on every master. Clients with an old
    /// slot map then get `MOVED` replies.
    pub fn move_slot(&self, slot: u16, from: u16, to: u16) {
        let id = |port| self.cli(port, &["CLUSTER", "MYID"]).trim().to_string();
        let (from_id, to_id) = (id(from), id(to));
        let slot = slot.to_string();
        self.cli(to, &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id]);
        self.cli(from, &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]);
        loop {
            let keys = self.cli(from, &["CLUSTER", "GETKEYSINSLOT", &slot, "1000"]);
            let keys: Vec<&str> = keys.split_whitespace().collect();
            if keys.is_empty() {
                break;
            }
            let to_port = to.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &to_port, "", "0", "5000", "KEYS"];
            args.extend(keys);
            let out = self.cli(from, &args);
            assert!(out.contains("OK"), "MIGRATE failed: {out}");
        }
        for port in self.ports() {
            self.cli(port, &["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
        }
    }

    /// Number of keys held by the master on `port` (`DBSIZE`).
    pub fn dbsize(&self, port: u16) -> u64 {
        self.cli(port, &["DBSIZE"]).trim().parse().unwrap_or(0)
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}
