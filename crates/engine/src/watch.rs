//! Key watches: optimistic concurrency for a front end's transactions
//! (Redis `WATCH` … `EXEC`). A [`Watch`] learns whether any key it watches
//! was written, deleted, flushed or has expired since it began watching
//! it. It does not say what changed and it locks nothing: the front end
//! checks it just before running its transaction, and runs nothing if it
//! was touched.
//!
//! Every engine write reports the keys it changes to the [`Registry`]
//! (`Core::write_stamped_one`, `Core::write_stamped`, and
//! `Session::flush_all` for every key). With nothing watched that report is
//! one atomic load, so a server whose clients never `WATCH` pays nothing
//! more per write.
//!
//! A watch made with [`Engine::waiter`](crate::Engine::waiter) also wakes
//! a task: what a front end's blocking commands (Redis `BLPOP`) wait on.
//! Waiters on a key are woken one at a time, in the order they began
//! waiting: a write wakes the first; a waiter that stops waiting (served,
//! timed out, gone) wakes the next. So an element pushed for several
//! waiters goes to the one that waited longest, as Redis serves them.
//!
//! Not here: transactions themselves (queueing, `EXEC`'s isolation from
//! other clients), which belong to the protocol server.

use crate::entry::now_ms;
use bytes::Bytes;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// Who watches which key, shared by the engine's write paths and every
/// [`Watch`].
#[derive(Default)]
pub(crate) struct Registry {
    /// Number of (key, watch) pairs registered: zero lets writes skip the
    /// map's lock.
    watched: AtomicUsize,
    map: Mutex<HashMap<Bytes, SmallVec<[Watcher; 1]>, ahash::RandomState>>,
}

struct Watcher {
    state: Arc<WatchState>,
    /// The key was live when the watch began: a `FLUSHALL` changes it. (A
    /// key absent then, or already expired, is not changed by a flush.)
    live: bool,
}

#[derive(Default)]
struct WatchState {
    touched: AtomicBool,
    /// Woken on each change (a waiter's; `None` for a plain watch).
    wake: Option<Arc<Notify>>,
}

impl WatchState {
    fn touch(&self) {
        self.touched.store(true, Ordering::Release);
        if let Some(wake) = &self.wake {
            // A permit is kept if the task is not waiting yet: a change
            // between its look at the key and its wait is never lost.
            wake.notify_one();
        }
    }
}

impl Registry {
    /// A write changed `key`.
    #[inline]
    pub(crate) fn touch(&self, key: &[u8]) {
        if self.any() {
            self.touch_watched(key);
        }
    }

    /// True when some key is watched (else a write need not report).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.watched.load(Ordering::Acquire) != 0
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn touch_watched(&self, key: &[u8]) {
        if let Some(watchers) = self.map.lock().get(key) {
            let mut first_waiter = true;
            for w in watchers {
                if w.state.wake.is_none() {
                    w.state.touch();
                } else if first_waiter {
                    w.state.touch();
                    first_waiter = false;
                }
            }
        }
    }

    /// Wakes the first waiter on `key` (the one that began waiting first).
    fn wake_first_waiter(&self, key: &[u8]) {
        if let Some(watchers) = self.map.lock().get(key) {
            if let Some(w) = watchers.iter().find(|w| w.state.wake.is_some()) {
                w.state.touch();
            }
        }
    }

    /// Every key was removed (`FLUSHALL`): touches the watches of keys
    /// that were live when watched, and wakes every waiter (a blocked
    /// command looks again, and may answer that its key went away).
    pub(crate) fn touch_all_live(&self) {
        if !self.any() {
            return;
        }
        for watchers in self.map.lock().values() {
            for w in watchers.iter().filter(|w| w.live || w.state.wake.is_some()) {
                w.state.touch();
            }
        }
    }

    fn register(&self, key: Bytes, state: &Arc<WatchState>) {
        let mut map = self.map.lock();
        map.entry(key).or_default().push(Watcher {
            state: state.clone(),
            live: false,
        });
        self.watched.fetch_add(1, Ordering::Release);
    }

    fn mark_live(&self, key: &[u8], state: &Arc<WatchState>) {
        if let Some(watchers) = self.map.lock().get_mut(key) {
            for w in watchers.iter_mut() {
                if Arc::ptr_eq(&w.state, state) {
                    w.live = true;
                }
            }
        }
    }

    fn unregister(&self, key: &[u8], state: &Arc<WatchState>) {
        let mut map = self.map.lock();
        let Some(watchers) = map.get_mut(key) else {
            return;
        };
        let before = watchers.len();
        watchers.retain(|w| !Arc::ptr_eq(&w.state, state));
        let removed = before - watchers.len();
        if watchers.is_empty() {
            map.remove(key);
        }
        self.watched.fetch_sub(removed, Ordering::Release);
    }
}

/// One client's watched keys (see the module docs). Made by
/// [`Engine::watch`](crate::Engine::watch), filled by
/// [`Session::watch_key`](crate::Session::watch_key); unregisters its keys
/// when cleared or dropped.
///
/// ```
/// # use tiercache_engine::Engine;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// # let dir = tempfile::tempdir().unwrap();
/// let engine = Engine::builder(dir.path()).build().await.unwrap();
/// let mut watch = engine.watch();
/// let mut s = engine.session();
/// s.watch_key(&mut watch, b"balance").await.unwrap();
/// assert!(!watch.is_touched());
/// s.set("balance".into(), "10".into(), Default::default()).await.unwrap();
/// assert!(watch.is_touched()); // a transaction would not run now
/// watch.clear();
/// assert!(!watch.is_touched());
/// # s.commit().await.unwrap();
/// # engine.shutdown().await.unwrap();
/// # });
/// ```
pub struct Watch {
    registry: Arc<Registry>,
    state: Arc<WatchState>,
    /// Each watched key, with when it expires if it was live when watched
    /// (it changes then). A map: `WATCH` may name up to a request's worth
    /// of keys, and a list searched per key was quadratic in them.
    keys: HashMap<Bytes, Option<u64>, ahash::RandomState>,
}

impl Watch {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Watch {
            registry,
            state: Arc::default(),
            keys: HashMap::default(),
        }
    }

    pub(crate) fn waking(registry: Arc<Registry>, wake: Arc<Notify>) -> Self {
        Watch {
            registry,
            state: Arc::new(WatchState {
                touched: AtomicBool::new(false),
                wake: Some(wake),
            }),
            keys: HashMap::default(),
        }
    }

    /// Starts watching `key` for writes only, as a waiter does (no read of
    /// it: a later expiry does not count; a `FLUSHALL` wakes a waiter).
    pub fn listen(&mut self, key: &[u8]) {
        self.add(key);
    }

    /// True when a watched key changed since it was watched: written,
    /// deleted, flushed, or expired.
    pub fn is_touched(&self) -> bool {
        if self.state.touched.load(Ordering::Acquire) {
            return true;
        }
        let now = now_ms();
        self.keys.values().any(|t| t.is_some_and(|t| t <= now))
    }

    /// True when no key is watched.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Stops watching every key and forgets any change seen (`UNWATCH`).
    /// A waiter hands each of its keys to the next waiter in line.
    pub fn clear(&mut self) {
        let waiter = self.state.wake.is_some();
        for (key, _) in self.keys.drain() {
            self.registry.unregister(&key, &self.state);
            if waiter {
                self.registry.wake_first_waiter(&key);
            }
        }
        self.state.touched.store(false, Ordering::Release);
    }

    /// Starts watching `key`. Returns false when it was watched already.
    pub(crate) fn add(&mut self, key: &[u8]) -> bool {
        if self.keys.contains_key(key) {
            return false;
        }
        let key = Bytes::copy_from_slice(key);
        // Registered before the caller reads the key: a write between the
        // two is seen (as a change), never missed.
        self.registry.register(key.clone(), &self.state);
        self.keys.insert(key, None);
        true
    }

    /// What the key held when watched: live, and until when.
    pub(crate) fn set_live(&mut self, key: &[u8], expires_at: Option<u64>) {
        self.registry.mark_live(key, &self.state);
        if let Some(t) = self.keys.get_mut(key) {
            *t = expires_at;
        }
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("keys", &self.keys.len())
            .field("touched", &self.state.touched.load(Ordering::Relaxed))
            .finish()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(reg: &Arc<Registry>, keys: &[&[u8]]) -> Watch {
        let mut w = Watch::new(reg.clone());
        for k in keys {
            w.add(k);
        }
        w
    }

    #[test]
    fn a_write_touches_only_the_watches_of_its_key() {
        let reg = Arc::new(Registry::default());
        let a = watch(&reg, &[b"x", b"y"]);
        let b = watch(&reg, &[b"z"]);
        reg.touch(b"y");
        assert!(a.is_touched());
        assert!(!b.is_touched());
        reg.touch(b"unwatched");
        assert!(!b.is_touched());
    }

    #[test]
    fn clearing_and_dropping_unregister_every_key() {
        let reg = Arc::new(Registry::default());
        let mut a = watch(&reg, &[b"x", b"y", b"x"]);
        let b = watch(&reg, &[b"x"]);
        assert_eq!(reg.watched.load(Ordering::Relaxed), 3);
        a.clear();
        assert!(a.is_empty());
        assert_eq!(reg.watched.load(Ordering::Relaxed), 1);
        reg.touch(b"x");
        assert!(!a.is_touched(), "a cleared watch sees no change");
        assert!(b.is_touched());
        drop(b);
        assert_eq!(reg.watched.load(Ordering::Relaxed), 0);
        assert!(reg.map.lock().is_empty());
    }

    #[test]
    fn many_keys_and_repeats_are_watched_once_each() {
        let reg = Arc::new(Registry::default());
        let keys: Vec<Vec<u8>> = (0..50_000u32)
            .map(|i| format!("k{}", i % 40_000).into_bytes())
            .collect();
        let mut w = Watch::new(reg.clone());
        let added = keys.iter().filter(|k| w.add(k)).count();
        assert_eq!(added, 40_000);
        assert_eq!(reg.watched.load(Ordering::Relaxed), 40_000);
        reg.touch(b"k39999");
        assert!(w.is_touched());
        drop(w);
        assert_eq!(reg.watched.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_flush_touches_only_keys_live_when_watched() {
        let reg = Arc::new(Registry::default());
        let mut live = watch(&reg, &[b"x"]);
        live.set_live(b"x", None);
        let absent = watch(&reg, &[b"x"]);
        reg.touch_all_live();
        assert!(live.is_touched());
        assert!(!absent.is_touched());
    }

    #[tokio::test]
    async fn a_flush_wakes_every_waiter() {
        let reg = Arc::new(Registry::default());
        let wake = Arc::new(Notify::new());
        let mut w = Watch::waking(reg.clone(), wake.clone());
        w.listen(b"q");
        reg.touch_all_live();
        tokio::time::timeout(std::time::Duration::from_secs(5), wake.notified())
            .await
            .expect("a FLUSHALL wakes a blocked client");
    }

    #[tokio::test]
    async fn a_waiter_is_woken_by_a_write_even_before_it_waits() {
        let reg = Arc::new(Registry::default());
        let wake = Arc::new(Notify::new());
        let mut w = Watch::waking(reg.clone(), wake.clone());
        w.listen(b"q");
        reg.touch(b"other");
        // The write comes before the wait: its permit is kept.
        reg.touch(b"q");
        tokio::time::timeout(std::time::Duration::from_secs(5), wake.notified())
            .await
            .expect("woken");
        assert!(w.is_touched());
        // Nothing more: no second wake.
        let again =
            tokio::time::timeout(std::time::Duration::from_millis(50), wake.notified()).await;
        assert!(again.is_err());
        drop(w);
        reg.touch(b"q");
        assert_eq!(reg.watched.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn waiters_are_woken_one_at_a_time_in_the_order_they_came() {
        let reg = Arc::new(Registry::default());
        let plain = watch(&reg, &[b"q"]);
        let wakes: Vec<Arc<Notify>> = (0..3).map(|_| Arc::new(Notify::new())).collect();
        let mut waiters: Vec<Watch> = wakes
            .iter()
            .map(|n| {
                let mut w = Watch::waking(reg.clone(), n.clone());
                w.listen(b"q");
                w
            })
            .collect();
        let woken = |i: usize| {
            let n = wakes[i].clone();
            async move {
                tokio::time::timeout(std::time::Duration::from_millis(50), n.notified())
                    .await
                    .is_ok()
            }
        };
        reg.touch(b"q");
        assert!(plain.is_touched(), "a plain watch sees every write");
        assert!(woken(0).await, "the first waiter is woken");
        assert!(!woken(1).await, "the second is not, yet");
        // The first stops waiting: the next in line is woken.
        waiters.remove(0);
        assert!(woken(1).await, "the second is woken when the first leaves");
        assert!(!woken(2).await);
    }

    #[test]
    fn a_live_key_that_expires_counts_as_changed() {
        let reg = Arc::new(Registry::default());
        let mut w = watch(&reg, &[b"x", b"y"]);
        w.set_live(b"y", Some(now_ms() + 60_000));
        assert!(!w.is_touched());
        w.set_live(b"x", Some(now_ms() - 1));
        assert!(w.is_touched());
    }
}
