//! The script cache: every script body run by `EVAL` or loaded by
//! `SCRIPT LOAD`, by the lowercase hex SHA1 of its bytes, server-wide,
//! until `SCRIPT FLUSH` (as Redis keeps them, never evicted).

use sha1::{Digest, Sha1};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The lowercase hex SHA1 of `bytes` (Redis's `sha1hex`).
pub fn sha1hex(bytes: &[u8]) -> String {
    let digest = Sha1::digest(bytes);
    let mut s = String::with_capacity(40);
    for b in digest {
        s.push(char::from_digit((b >> 4) as u32, 16).unwrap_or('0'));
        s.push(char::from_digit((b & 15) as u32, 16).unwrap_or('0'));
    }
    s
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
