//! The script cache: every script body run by `EVAL` or loaded by
//! `SCRIPT LOAD`, by the lowercase hex SHA1 of its bytes, server-wide,
//! until `SCRIPT FLUSH` (as Redis keeps them, never evicted).

use sha1::{Digest, Sha1};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The lowercase hex SHA1 of `bytes` (Redis's `sha1hex`).
pub fn sha1hex(bytes: &[u8]) -> String {
    crate::digest::hex(&Sha1::digest(bytes))
}

/// What a script's `#!lua` line declares (Redis 7's shebang).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shebang {
    /// Bytes of the line before its line feed (skipped when compiling,
    /// the line feed kept so line numbers stay).
    pub len: usize,
    /// `flags=no-writes`: the script may not write.
    pub no_writes: bool,
}

/// Script flags Redis 7.0 knows.
const FLAGS: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// Reads a body's `#!lua [flags=a,b]` line: `None` without one (Redis's
/// compatibility mode), the error in Redis's words for a bad one.
pub fn shebang(body: &[u8]) -> Result<Option<Shebang>, String> {
    if !body.starts_with(b"#!") {
        return Ok(None);
    }
    let Some(len) = body.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(&body[..len]);
    let mut parts = line.split_ascii_whitespace();
    match parts.next() {
        None => return Err("ERR Invalid engine in script shebang".into()),
        Some("#!lua") => {}
        Some(other) => return Err(format!("ERR Unexpected engine in script shebang: {other}")),
    }
    let mut found = Shebang {
        len,
        no_writes: false,
    };
    for part in parts {
        let Some(flags) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        for flag in flags.split(',').filter(|f| !f.is_empty()) {
            if !FLAGS.contains(&flag) {
                return Err(format!("ERR Unexpected flag in script shebang: {flag}"));
            }
            found.no_writes |= flag == "no-writes";
        }
    }
    Ok(Some(found))
}

/// Script bodies by SHA1.
#[derive(Debug, Default)]
pub struct ScriptCache {
    bodies: Mutex<HashMap<String, Arc<[u8]>>>,
}

impl ScriptCache {
    fn bodies(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<[u8]>>> {
        self.bodies.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The body whose SHA1 is `sha` (lowercase hex), if cached.
    pub fn get(&self, sha: &str) -> Option<Arc<[u8]>> {
        self.bodies().get(sha).cloned()
    }

    /// True when a body with SHA1 `sha` (as given: Redis compares the
    /// `SCRIPT EXISTS` argument as it is) is cached.
    pub fn contains(&self, sha: &[u8]) -> bool {
        std::str::from_utf8(sha).is_ok_and(|s| self.bodies().contains_key(s))
    }

    /// Caches `body` under `sha`.
    pub fn insert(&self, sha: String, body: Arc<[u8]>) {
        self.bodies().entry(sha).or_insert(body);
    }

    /// Forgets every script (`SCRIPT FLUSH`).
    pub fn clear(&self) {
        self.bodies().clear();
    }

    /// Scripts cached and the bytes of their bodies (`INFO memory`).
    pub fn stats(&self) -> (usize, usize) {
        let bodies = self.bodies();
        (bodies.len(), bodies.values().map(|b| b.len() + 40).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1hex_is_redis_s() {
        assert_eq!(sha1hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        // redis-cli SCRIPT LOAD "return 1"
        assert_eq!(
            sha1hex(b"return 1"),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
    }

    #[test]
    fn shebang_lines_read_as_redis_reads_them() {
        assert_eq!(shebang(b"return 1"), Ok(None));
        assert_eq!(
            shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1"),
            Ok(Some(Shebang {
                len: 31,
                no_writes: true
            }))
        );
        assert_eq!(
            shebang(b"#!lua\nreturn 1"),
            Ok(Some(Shebang {
                len: 5,
                no_writes: false
            }))
        );
        assert_eq!(shebang(b"#!lua"), Err("ERR Invalid script shebang".into()));
        assert_eq!(
            shebang(b"#!python\n"),
            Err("ERR Unexpected engine in script shebang: #!python".into())
        );
        assert_eq!(
            shebang(b"#!lua badger=data\n"),
            Err("ERR Unknown lua shebang option: badger=data".into())
        );
        assert_eq!(
            shebang(b"#!lua flags=no-writes,bad\n"),
            Err("ERR Unexpected flag in script shebang: bad".into())
        );
    }

    #[test]
    fn cache_keeps_and_flushes() {
        let c = ScriptCache::default();
        let sha = sha1hex(b"return 1");
        assert!(!c.contains(sha.as_bytes()));
        c.insert(sha.clone(), Arc::from(&b"return 1"[..]));
        assert!(c.contains(sha.as_bytes()));
        assert!(!c.contains(sha.to_uppercase().as_bytes()));
        assert_eq!(c.get(&sha).as_deref(), Some(&b"return 1"[..]));
        c.clear();
        assert!(c.get(&sha).is_none());
    }
}
