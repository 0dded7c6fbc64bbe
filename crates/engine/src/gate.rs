//! The gate every request batch of a front end passes, so that a
//! transaction (Redis `EXEC`) can run with no other client's request in
//! between, as in Redis.
//!
//! A batch *enters* the gate before its first command and *leaves* it
//! after its last, before its commit (isolation is about what commands
//! see, not about durability). A transaction leaves, takes the gate
//! *exclusively* (no batch inside, none let in), runs, and enters again.
//! The gate belongs to the engine so that every front end serving it (the
//! RESP and memcached listeners) passes the same one.
//!
//! Entering and leaving must cost next to nothing: every batch of every
//! protocol does it. So the count of batches inside is split into
//! cache-line-sized slots, one per connection (by id): a connection
//! increments its own slot, and two cores serving two connections do not
//! pass a cache line back and forth, as one shared counter would make
//! them do for every batch. Entering is one atomic add and one load of the
//! (read-mostly) exclusive flag. The exclusive side pays instead: it scans
//! the slots until all are zero.
//!
//! Not here: what a transaction is (the RESP server's `cmd::multi`). A
//! library user who never takes the gate exclusively need not enter it.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use tokio::sync::{Mutex, MutexGuard, Notify};

/// Slots of the shared count. Connections beyond this many share slots
/// (correct, only slower when on different cores).
const SLOTS: usize = 64;

/// One slot, alone on its cache line.
#[repr(align(64))]
#[derive(Default)]
struct Slot(AtomicU32);

/// See the module docs.
pub struct Gate {
    /// A fixed size, indexed modulo `SLOTS`: no bounds check per batch.
    slots: Box<[Slot; SLOTS]>,
    /// Set while an exclusive holder waits for the slots to drain or runs.
    exclusive: AtomicBool,
    /// One exclusive holder at a time.
    exclusive_lock: Mutex<()>,
    /// A batch left while `exclusive` was set.
    drained: Notify,
    /// The exclusive holder left.
    released: Notify,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("exclusive", &self.exclusive.load(SeqCst))
            .finish_non_exhaustive()
    }
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            slots: Box::new(std::array::from_fn(|_| Slot::default())),
            exclusive: AtomicBool::new(false),
            exclusive_lock: Mutex::new(()),
            drained: Notify::new(),
            released: Notify::new(),
        }
    }
}

/// A connection's place at the gate: its slot, and whether it is inside.
#[derive(Debug, Default)]
pub struct GateSeat {
    /// Any number: the slot is this modulo `SLOTS`.
    slot: usize,
    inside: bool,
}

impl GateSeat {
    /// The seat of connection `id`.
    pub fn new(id: u64) -> Self {
        GateSeat {
            slot: id as usize,
            inside: false,
        }
    }

    /// True between [`Gate::enter`] and [`Gate::leave`].
    pub fn is_inside(&self) -> bool {
        self.inside
    }
}

impl Gate {
    /// Enters the gate unless an exclusive holder is inside or waiting;
    /// then [`Gate::enter_after_exclusive`] must be awaited instead. Not a
    /// future: an `async fn` here was a poll of its own, out of line, for
    /// every request batch (about 50 instructions, callgrind).
    ///
    /// ```
    /// # use tiercache_engine::{Gate, GateSeat};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let gate = Gate::default();
    /// let mut seat = GateSeat::new(1);
    /// if !gate.try_enter(&mut seat) {
    ///     gate.enter_after_exclusive(&mut seat).await;
    /// }
    /// assert!(seat.is_inside());
    /// // ... run the batch's commands ...
    /// gate.leave(&mut seat);
    /// # });
    /// ```
    #[inline]
    pub fn try_enter(&self, seat: &mut GateSeat) -> bool {
        debug_assert!(!seat.inside);
        let slot = &self.slots[seat.slot % SLOTS].0;
        // SeqCst on both sides: either the exclusive holder sees this
        // increment, or this load sees its flag (both may: then this side
        // backs off).
        slot.fetch_add(1, SeqCst);
        if self.exclusive.load(SeqCst) {
            slot.fetch_sub(1, SeqCst);
            self.drained.notify_one();
            return false;
        }
        seat.inside = true;
        true
    }

    /// Enters the gate, waiting while an exclusive holder is inside.
    pub async fn enter(&self, seat: &mut GateSeat) {
        if !self.try_enter(seat) {
            self.enter_after_exclusive(seat).await;
        }
    }

    /// Enters the gate once the exclusive holder has left (after
    /// [`Gate::try_enter`] failed).
    #[cold]
    #[inline(never)]
    pub async fn enter_after_exclusive(&self, seat: &mut GateSeat) {
        let count = &self.slots[seat.slot % SLOTS].0;
        loop {
            // Created before the flag is read again: a release after that
            // read wakes it.
            let released = self.released.notified();
            if self.exclusive.load(SeqCst) {
                released.await;
            }
            count.fetch_add(1, SeqCst);
            if !self.exclusive.load(SeqCst) {
                seat.inside = true;
                return;
            }
            count.fetch_sub(1, SeqCst);
            self.drained.notify_one();
        }
    }

    /// Leaves the gate (no-op when not inside).
    #[inline]
    pub fn leave(&self, seat: &mut GateSeat) {
        if !std::mem::take(&mut seat.inside) {
            return;
        }
        self.slots[seat.slot % SLOTS].0.fetch_sub(1, SeqCst);
        if self.exclusive.load(SeqCst) {
            self.drained.notify_one();
        }
    }

    /// Takes the gate exclusively: waits for every batch inside to leave,
    /// and lets none in until the returned guard is dropped. The caller
    /// must not be inside (it would wait for itself).
    pub async fn exclusive(&self) -> ExclusivePass<'_> {
        let lock = self.exclusive_lock.lock().await;
        self.exclusive.store(true, SeqCst);
        let pass = ExclusivePass {
            gate: self,
            _lock: lock,
        };
        loop {
            let drained = self.drained.notified();
            if self.slots.iter().all(|s| s.0.load(SeqCst) == 0) {
                return pass;
            }
            drained.await;
        }
    }
}

/// Held while a transaction runs alone; lets the others in when dropped
/// (also when the transaction's future is dropped half-way).
pub struct ExclusivePass<'a> {
    gate: &'a Gate,
    _lock: MutexGuard<'a, ()>,
}

impl Drop for ExclusivePass<'_> {
    fn drop(&mut self) {
        self.gate.exclusive.store(false, SeqCst);
        self.gate.released.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn exclusive_waits_for_every_batch_inside_to_leave() {
        let gate = Arc::new(Gate::default());
        let mut a = GateSeat::new(1);
        let mut b = GateSeat::new(65); // the same slot as `a`
        gate.enter(&mut a).await;
        gate.enter(&mut b).await;
        let g = gate.clone();
        let excl = tokio::spawn(async move {
            let _pass = g.exclusive().await;
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!excl.is_finished(), "two batches are inside");
        gate.leave(&mut a);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!excl.is_finished(), "one batch is still inside");
        gate.leave(&mut b);
        tokio::time::timeout(Duration::from_secs(5), excl)
            .await
            .expect("the exclusive side gets in once both left")
            .unwrap();
    }

    #[tokio::test]
    async fn no_batch_enters_while_the_gate_is_held_exclusively() {
        let gate = Arc::new(Gate::default());
        let pass = gate.exclusive().await;
        let g = gate.clone();
        let batch = tokio::spawn(async move {
            let mut seat = GateSeat::new(7);
            g.enter(&mut seat).await;
            assert!(seat.is_inside());
            g.leave(&mut seat);
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !batch.is_finished(),
            "a batch entered during an exclusive hold"
        );
        drop(pass);
        tokio::time::timeout(Duration::from_secs(5), batch)
            .await
            .expect("the batch enters once the holder left")
            .unwrap();
        // And the gate is free again.
        drop(
            tokio::time::timeout(Duration::from_secs(5), gate.exclusive())
                .await
                .unwrap(),
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn exclusive_holders_never_overlap_batches() {
        // Batches and exclusive holders on four threads: while an
        // exclusive pass is held, no batch may be inside.
        let gate = Arc::new(Gate::default());
        let inside = Arc::new(AtomicU32::new(0));
        let alone = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for id in 0..8u64 {
            let (gate, inside, alone) = (gate.clone(), inside.clone(), alone.clone());
            tasks.push(tokio::spawn(async move {
                let mut seat = GateSeat::new(id);
                for round in 0..2000 {
                    if id % 4 == 0 && round % 10 == 0 {
                        let _pass = gate.exclusive().await;
                        alone.store(true, SeqCst);
                        assert_eq!(inside.load(SeqCst), 0, "a batch is inside");
                        tokio::task::yield_now().await;
                        assert_eq!(inside.load(SeqCst), 0, "a batch got in");
                        alone.store(false, SeqCst);
                    } else {
                        gate.enter(&mut seat).await;
                        inside.fetch_add(1, SeqCst);
                        assert!(!alone.load(SeqCst), "inside during an exclusive hold");
                        tokio::task::yield_now().await;
                        inside.fetch_sub(1, SeqCst);
                        gate.leave(&mut seat);
                    }
                }
            }));
        }
        for t in tasks {
            tokio::time::timeout(Duration::from_secs(60), t)
                .await
                .expect("no deadlock")
                .unwrap();
        }
    }
}
