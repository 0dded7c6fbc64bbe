//! nginx `proxy_cache` in front of the origin (seed 002's winner), run from
//! a generated configuration in a temporary directory: the settings of
//! `scripts/bench-proxy.sh` (one process, keep-alive to the origin,
//! `proxy_cache_lock`, stale copies served while one request updates).

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tiercache_testkit::{free_port, wait_for_port};

/// A running nginx, killed and reaped on drop, its files removed.
pub struct Nginx {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    // Dropped after the child: nginx's cache and logs live here.
    dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The configuration: `master_process off` makes nginx one process, so
/// killing the child stops everything (no orphaned workers); `user root`
/// only when running as root, where nginx otherwise switches to `nobody`,
/// who cannot write the cache directory.
fn config(dir: &Path, port: u16, origin: SocketAddr, as_root: bool) -> String {
    let d = dir.display();
    let user = if as_root { "user root;\n" } else { "" };
    format!(
        r#"{user}daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  client_body_temp_path {d}/tmp/body;
  proxy_temp_path {d}/tmp/proxy;
  fastcgi_temp_path {d}/tmp/fastcgi;
  uwsgi_temp_path {d}/tmp/uwsgi;
  scgi_temp_path {d}/tmp/scgi;
  proxy_cache_path {d}/cache levels=1:2 keys_zone=micro:10m max_size=1g inactive=60m use_temp_path=off;
  upstream origin {{ server {origin}; keepalive 16; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache micro;
      proxy_cache_lock on;
      proxy_cache_use_stale updating;
      proxy_cache_background_update on;
      add_header X-Cache $upstream_cache_status;
    }}
  }}
}}
"#
    )
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

impl Nginx {
    /// Starts `bin` proxying to `origin` on a free port and waits until it
    /// accepts connections.
    pub fn start(bin: &Path, origin: SocketAddr) -> Result<Nginx, String> {
        let dir = tempfile::Builder::new()
            .prefix("tiercache-lab-nginx")
            .tempdir()
            .map_err(|e| format!("nginx: temp dir: {e}"))?;
        for sub in ["tmp", "cache"] {
            std::fs::create_dir_all(dir.path().join(sub))
                .map_err(|e| format!("nginx: {sub} dir: {e}"))?;
        }
        let port = free_port();
        let conf = dir.path().join("nginx.conf");
        std::fs::write(&conf, config(dir.path(), port, origin, is_root()))
            .map_err(|e| format!("nginx: writing {}: {e}", conf.display()))?;
        let child = Command::new(bin)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf)
            // The error log before the configuration is read (not the
            // system's /var/log/nginx).
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("nginx: spawn {}: {e}", bin.display()))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut nginx = Nginx { child, addr, dir };
        if !wait_for_port(addr, Duration::from_secs(10)) {
            let exited = nginx.child.try_wait().ok().flatten();
            let log =
                std::fs::read_to_string(nginx.dir.path().join("error.log")).unwrap_or_default();
            return Err(format!(
                "nginx did not start listening on {addr} ({}): {}",
                exited.map_or("still running".to_string(), |s| s.to_string()),
                log.trim()
            ));
        }
        Ok(nginx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_keeps_everything_in_the_directory_and_caches_with_a_lock() {
        let origin: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let c = config(Path::new("/tmp/x"), 8080, origin, true);
        assert!(c.starts_with("user root;"));
        assert!(!config(Path::new("/tmp/x"), 8080, origin, false).contains("user "));
        for needle in [
            "master_process off;",
            "pid /tmp/x/nginx.pid;",
            "proxy_cache_path /tmp/x/cache ",
            "listen 127.0.0.1:8080;",
            "server 127.0.0.1:9;",
            "proxy_cache_lock on;",
        ] {
            assert!(c.contains(needle), "{needle} missing from\n{c}");
        }
    }
}
