//! The write-back journal: what makes a write-back acknowledgement durable.
//!
//! A journal is a directory of segments `journal-<id>.log`, each a series
//! of checksummed records (their format: `record.rs`).
//!
//! Appends are copied into the active segment, a file allocated ahead of
//! them and mapped into memory (`segment.rs`): once an append returns, a
//! `kill -9` of the process loses nothing, the bytes being in the kernel's
//! page cache, and no system call was made. [`commit`] then has nothing to
//! do under [`FsyncPolicy::EverySec`] and [`FsyncPolicy::No`]; under
//! [`FsyncPolicy::Always`] it runs `fdatasync`, once for every append
//! before it (group commit). If the segment cannot grow (disk full),
//! appends are held back in memory, unacknowledged, and each commit
//! retries them and reports the error.
//!
//! The bytes after the last record of a segment are zeros until the
//! segment is trimmed (after sealing, or when the journal closes): replay
//! reads a zero tail as the end. A segment file therefore ends in zeros
//! only if the process died before its trim. `LOCK` in the directory keeps a second process out. Builds before
//! 2026-11-24 take a zero tail for a torn record: in the last segment they
//! cut it off, as they should; in an earlier one (a crash between a
//! rotation and its trim) they refuse to start, so downgrade only after a
//! clean shutdown.
//!
//! The flusher [`rotate`]s before taking its snapshot of dirty keys and
//! deletes sealed segments only after the stores have the data
//! ([`remove_sealed_through`]); a failed flush leaves them in place.
//!
//! At open, every segment is replayed in order. A torn record at the tail of
//! the last segment (a crash mid-append) is truncated away with a warning;
//! a bad record anywhere else is corruption and refuses to open, naming the
//! file and offset, as Redis does for a damaged AOF.
//!
//! [`commit`]: WriteBackJournal::commit
//! [`rotate`]: WriteBackJournal::rotate
//! [`remove_sealed_through`]: WriteBackJournal::remove_sealed_through

use crate::entry::Entry;
use crate::error::{EngineError, Result};
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

mod checksum;
mod record;
mod segment;

pub use record::Record;
use record::{decode, encode, encode_into, layout, OP_CLEAR, OP_DELETE, OP_PATCH, OP_SET};
use segment::{ActiveSegment, Sealed};

/// When journal appends reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FsyncPolicy {
    /// `fdatasync` before every acknowledgement: survives power loss.
    Always,
    /// `write(2)` before acknowledging, `fdatasync` once a second: survives a
    /// process crash; a power loss may lose the last second.
    #[default]
    EverySec,
    /// `write(2)` before acknowledging; the OS decides when to sync.
    No,
}

impl std::str::FromStr for FsyncPolicy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "always" => Ok(FsyncPolicy::Always),
            "everysec" => Ok(FsyncPolicy::EverySec),
            "no" => Ok(FsyncPolicy::No),
            other => Err(format!(
                "unknown fsync policy '{other}' (expected always, everysec or no)"
            )),
        }
    }
}

/// What a rotation leaves due on the sealed segment (see
/// [`WriteBackJournal::rotate_unsynced`]): its trim and unmapping, and under
/// `everysec` its `fdatasync`.
#[must_use = "the sealed segment must be trimmed (and synced)"]
pub struct SealedSync {
    sealed: Sealed,
    /// The sequence number a sync covers; `None` when the policy wants no
    /// sync here (`no`), or had it done inside the rotation (`always`).
    sync_through: Option<u64>,
}

impl SealedSync {
    /// Trims the sealed segment and syncs it if due; returns the sequence
    /// number the sync covers, for [`WriteBackJournal::mark_synced`].
    /// Blocks on the disk.
    pub fn run(self) -> Result<Option<u64>> {
        let path = self.sealed.path().to_path_buf();
        let file = self.sealed.trim().map_err(|e| io_err(&path, e))?;
        if let Some(seq) = self.sync_through {
            file.sync_data().map_err(|e| io_err(&path, e))?;
            return Ok(Some(seq));
        }
        Ok(None)
    }
}

/// The deletion of sealed segments (see
/// [`WriteBackJournal::sealed_removal`]).
#[must_use = "the segments are deleted only by `run`"]
pub struct SealedRemoval {
    dir: PathBuf,
    sealed: u64,
    active: u64,
}

impl SealedRemoval {
    /// Deletes every segment with id ≤ the sealed one, never the active one.
    pub fn run(self) -> Result<()> {
        for id in list_segments(&self.dir)? {
            if id <= self.sealed && id < self.active {
                let path = segment_path(&self.dir, id);
                fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
            }
        }
        Ok(())
    }
}

struct Inner {
    /// Where appends go.
    segment: ActiveSegment,
    /// Records that did not fit the segment because it could not grow
    /// (disk full), in order; every later append joins them until a commit
    /// moves them into the segment. Normally empty.
    overflow: Vec<u8>,
    /// Sequence number of the last record appended.
    last_seq: u64,
    /// Every record up to this sequence number is in the kernel (in the
    /// segment's pages).
    written_seq: u64,
    /// Every record up to this sequence number has been fsynced.
    synced_seq: u64,
    /// Keys with a whole value in the active segment, recorded by patched
    /// writes: a patch of one of them is journaled as a patch (see
    /// `crate::patch`). Emptied when the segment changes and by a clear.
    full_images: HashSet<Bytes, ahash::RandomState>,
}

/// The write-back journal of one namespace. See the module documentation.
pub struct WriteBackJournal {
    dir: PathBuf,
    policy: FsyncPolicy,
    inner: Mutex<Inner>,
    /// Mirrors `Inner::written_seq` (or `synced_seq` under `Always`) so
    /// [`WriteBackJournal::commit`] can return without locking when done.
    durable_seq: AtomicU64,
    /// Held while the journal is open: keeps other processes out of the
    /// directory (see [`lock_dir`]).
    _lock: File,
}

/// What [`WriteBackJournal::open`] found on disk.
pub struct Replay {
    /// Records after the last `Clear`, in order.
    pub records: Vec<Record>,
    /// A `Clear` was journaled: the stores must be cleared before the records apply.
    pub clear_stores: bool,
    /// A torn tail was truncated (a crash happened mid-append).
    pub truncated_tail: bool,
}

fn io_err(path: &Path, source: std::io::Error) -> EngineError {
    EngineError::Journal {
        path: path.display().to_string(),
        source,
    }
}

fn segment_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("journal-{id:016}.log"))
}

fn list_segments(dir: &Path) -> Result<Vec<u64>> {
    let mut ids = Vec::new();
    for ent in fs::read_dir(dir).map_err(|e| io_err(dir, e))? {
        let ent = ent.map_err(|e| io_err(dir, e))?;
        let name = ent.file_name();
        let name = name.to_string_lossy();
        if let Some(id) = name
            .strip_prefix("journal-")
            .and_then(|s| s.strip_suffix(".log"))
        {
            if let Ok(id) = id.parse::<u64>() {
                ids.push(id);
            }
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

impl WriteBackJournal {
    /// Opens (creating) the journal in `dir`, replays it, and starts a fresh
    /// segment for new appends. Replayed segments stay on disk until a
    /// flush covering them succeeds. Fails if another process has the
    /// directory open.
    pub fn open(dir: &Path, policy: FsyncPolicy) -> Result<(WriteBackJournal, Replay)> {
        fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        let lock = lock_dir(dir)?;
        let ids = list_segments(dir)?;
        let mut replay = Replay {
            records: Vec::new(),
            clear_stores: false,
            truncated_tail: false,
        };
        let mut last_seq = 0;
        for (i, &id) in ids.iter().enumerate() {
            let path = segment_path(dir, id);
            let mut data = Vec::new();
            File::open(&path)
                .and_then(|mut f| f.read_to_end(&mut data))
                .map_err(|e| io_err(&path, e))?;
            let mut pos = 0;
            loop {
                match decode(&data[pos..]) {
                    Ok(Some((record, used))) => {
                        pos += used;
                        last_seq = last_seq.max(record.seq());
                        if let Record::Clear { .. } = record {
                            replay.records.clear();
                            replay.clear_stores = true;
                        } else {
                            replay.records.push(record);
                        }
                    }
                    Ok(None) if pos == data.len() => break,
                    _ if data[pos..].iter().all(|&b| b == 0) => {
                        // Allocated ahead of the appends and never written:
                        // the segment's end (it was not sealed, or not
                        // trimmed yet).
                        truncate(&path, pos)?;
                        break;
                    }
                    outcome => {
                        let is_last = i + 1 == ids.len();
                        let why = match outcome {
                            Err(why) => why,
                            _ => "truncated record",
                        };
                        if !is_last {
                            return Err(io_err(
                                &path,
                                std::io::Error::new(
                                    std::io::ErrorKind::InvalidData,
                                    format!("corrupt write-back journal at byte {pos}: {why}; refusing to start (move the file aside to discard its writes)"),
                                ),
                            ));
                        }
                        tracing::warn!(file = %path.display(), offset = pos, why, "truncating torn tail of write-back journal (crash during append)");
                        truncate(&path, pos)?;
                        replay.truncated_tail = true;
                        break;
                    }
                }
            }
        }
        let id = ids.last().map_or(1, |id| id + 1);
        let path = segment_path(dir, id);
        let segment = ActiveSegment::create(id, path.clone(), segment::MIN_CAPACITY)
            .map_err(|e| io_err(&path, e))?;
        sync_dir(dir)?;
        let inner = Inner {
            segment,
            overflow: Vec::new(),
            last_seq,
            written_seq: last_seq,
            synced_seq: last_seq,
            full_images: HashSet::default(),
        };
        let journal = WriteBackJournal {
            dir: dir.to_path_buf(),
            policy,
            inner: Mutex::new(inner),
            durable_seq: AtomicU64::new(last_seq),
            _lock: lock,
        };
        Ok((journal, replay))
    }

    /// The journal directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The fsync policy.
    pub fn policy(&self) -> FsyncPolicy {
        self.policy
    }

    /// Appends `key = entry`; returns its sequence number. Durable per the
    /// policy once [`WriteBackJournal::commit`] covers it (under `everysec`
    /// and `no`, normally at once: see [`WriteBackJournal::is_durable`]).
    pub fn append_set(&self, key: &[u8], entry: &Entry) -> u64 {
        self.append(OP_SET, key, Some(entry))
    }

    /// Appends a delete of `key`; returns its sequence number.
    pub fn append_delete(&self, key: &[u8]) -> u64 {
        self.append(OP_DELETE, key, None)
    }

    /// Appends a clear-everything marker; returns its sequence number.
    pub fn append_clear(&self) -> u64 {
        self.append(OP_CLEAR, b"", None)
    }

    /// [`Self::append_clear`], running `then(seq)` under the journal lock:
    /// no append can come between the clear and what the caller does.
    pub fn append_clear_with<T>(&self, then: impl FnOnce(u64) -> T) -> T {
        self.append_op(OP_CLEAR, b"", None, then)
    }

    /// Appends under the journal lock and runs `then(seq)` before releasing
    /// it, so that callers can keep their own structures in journal order.
    pub fn append_with<T>(
        &self,
        key: &[u8],
        entry: Option<&Entry>,
        then: impl FnOnce(u64) -> T,
    ) -> T {
        let op = if entry.is_some() { OP_SET } else { OP_DELETE };
        self.append_op(op, key, entry, then)
    }

    fn append(&self, op: u8, key: &[u8], entry: Option<&Entry>) -> u64 {
        self.append_op(op, key, entry, |seq| seq)
    }

    fn append_op<T>(
        &self,
        op: u8,
        key: &[u8],
        entry: Option<&Entry>,
        then: impl FnOnce(u64) -> T,
    ) -> T {
        let mut inner = self.inner.lock();
        if op == OP_CLEAR {
            inner.full_images.clear();
        }
        let seq = inner.push(op, key, entry);
        self.publish_durable(&inner);
        then(seq)
    }

    /// [`Self::append_ops_with`] for one operation, handed back by value:
    /// the single-key write path, without a batch to allocate.
    pub fn append_one_with<T>(
        &self,
        key: Bytes,
        entry: Option<Entry>,
        then: impl FnOnce(u64, Bytes, Option<Entry>) -> T,
    ) -> T {
        let op = if entry.is_some() { OP_SET } else { OP_DELETE };
        let mut inner = self.inner.lock();
        let seq = inner.push(op, &key, entry.as_ref());
        self.publish_durable(&inner);
        then(seq, key, entry)
    }

    /// [`Self::append_one_with`] of `key = entry`, journaled as `patch`
    /// (which makes `entry`'s value of the key's value before) when the
    /// active segment already holds a whole value of `key`; as `entry`
    /// otherwise, after which later patches of `key` in this segment can be
    /// journaled as patches. See `crate::patch`.
    pub fn append_patch_one_with<T>(
        &self,
        key: Bytes,
        entry: Entry,
        patch: Bytes,
        then: impl FnOnce(u64, Bytes, Option<Entry>) -> T,
    ) -> T {
        let mut inner = self.inner.lock();
        let seq = if inner.full_images.contains(&key) {
            let patch = Entry::with_kind(patch, entry.expires_at, entry.flags, entry.kind);
            inner.push(OP_PATCH, &key, Some(&patch))
        } else {
            let seq = inner.push(OP_SET, &key, Some(&entry));
            inner.full_images.insert(key.clone());
            seq
        };
        self.publish_durable(&inner);
        then(seq, key, Some(entry))
    }

    /// [`Self::append_ops_with`] where an operation may carry a patch
    /// (`patches[i]`, for a set): each is journaled as
    /// [`Self::append_patch_one_with`] journals one.
    #[allow(clippy::type_complexity)]
    pub fn append_patched_ops_with<T>(
        &self,
        ops: Vec<(Bytes, Option<Entry>)>,
        patches: Vec<Option<Bytes>>,
        then: impl FnOnce(u64, Vec<(Bytes, Option<Entry>)>) -> T,
    ) -> Option<T> {
        let mut inner = self.inner.lock();
        let first = inner.last_seq + 1;
        for ((key, entry), patch) in ops.iter().zip(patches) {
            match (entry, patch) {
                (Some(e), Some(patch)) if inner.full_images.contains(key) => {
                    let patch = Entry::with_kind(patch, e.expires_at, e.flags, e.kind);
                    inner.push(OP_PATCH, key, Some(&patch));
                }
                (Some(e), Some(_)) => {
                    inner.push(OP_SET, key, Some(e));
                    inner.full_images.insert(key.clone());
                }
                (Some(e), None) => {
                    inner.push(OP_SET, key, Some(e));
                }
                (None, _) => {
                    inner.push(OP_DELETE, key, None);
                }
            }
        }
        if inner.last_seq < first {
            return None;
        }
        self.publish_durable(&inner);
        Some(then(first, ops))
    }

    /// Appends a set (`Some`) or delete (`None`) per operation under one
    /// lock acquisition, with consecutive sequence numbers, then hands the
    /// operations to `then(first_seq, ops)` before releasing it (see
    /// [`Self::append_with`]). `then` is not run for an empty batch.
    #[allow(clippy::type_complexity)]
    pub fn append_ops_with<T>(
        &self,
        ops: Vec<(Bytes, Option<Entry>)>,
        then: impl FnOnce(u64, Vec<(Bytes, Option<Entry>)>) -> T,
    ) -> Option<T> {
        let mut inner = self.inner.lock();
        let first = inner.last_seq + 1;
        for (key, entry) in &ops {
            let op = if entry.is_some() { OP_SET } else { OP_DELETE };
            inner.push(op, key, entry.as_ref());
        }
        if inner.last_seq < first {
            return None;
        }
        self.publish_durable(&inner);
        Some(then(first, ops))
    }

    /// Whether every record up to `seq` is already durable per the policy.
    /// Under `everysec` and `no` an append is durable when it returns (it
    /// is in the kernel), unless the disk was full: then only after a
    /// [`WriteBackJournal::commit`] that succeeds.
    pub fn is_durable(&self, seq: u64) -> bool {
        self.durable_seq.load(Ordering::Acquire) >= seq
    }

    /// Makes every record up to `seq` durable per the policy: moves records
    /// held back by a full disk into the segment, and under `always`
    /// fsyncs.
    pub fn commit(&self, seq: u64) -> Result<()> {
        if self.durable_seq.load(Ordering::Acquire) >= seq {
            return Ok(());
        }
        let mut inner = self.inner.lock();
        inner.drain_overflow()?;
        if self.policy == FsyncPolicy::Always && inner.synced_seq < seq {
            let segment = &inner.segment;
            segment
                .file()
                .sync_data()
                .map_err(|e| io_err(segment.path(), e))?;
            inner.synced_seq = inner.written_seq;
        }
        self.publish_durable(&inner);
        Ok(())
    }

    /// Fsyncs everything appended so far (the `everysec` tick, and
    /// shutdown).
    pub fn sync(&self) -> Result<()> {
        // fdatasync runs on a duplicate handle *outside* the lock: appends
        // (and so every write-back acknowledgement) never wait for the disk
        // under `everysec`, as with Redis's background AOF fsync.
        let (file, path, target) = {
            let mut inner = self.inner.lock();
            inner.drain_overflow()?;
            self.publish_durable(&inner);
            if inner.synced_seq >= inner.written_seq {
                return Ok(());
            }
            let segment = &inner.segment;
            let path = segment.path().to_path_buf();
            let file = segment.file().try_clone().map_err(|e| io_err(&path, e))?;
            (file, path, inner.written_seq)
        };
        file.sync_data().map_err(|e| io_err(&path, e))?;
        let mut inner = self.inner.lock();
        inner.synced_seq = inner.synced_seq.max(target);
        self.publish_durable(&inner);
        Ok(())
    }

    fn publish_durable(&self, inner: &Inner) {
        let durable = if self.policy == FsyncPolicy::Always {
            inner.synced_seq
        } else {
            inner.written_seq
        };
        self.durable_seq.store(durable, Ordering::Release);
    }

    /// Seals the current segment (and syncs it unless the policy is `no`)
    /// and starts a new one. Returns the sealed segment's id: once the
    /// stores hold everything appended so far,
    /// [`WriteBackJournal::remove_sealed_through`] may delete it.
    ///
    /// `then` runs under the journal lock, after sealing: no append can slip
    /// between the seal and what the caller does (take its snapshot). The
    /// sealed segment is synced after the lock is released, on the calling
    /// thread: async callers use [`WriteBackJournal::rotate_unsynced`].
    pub fn rotate<T>(&self, then: impl FnOnce() -> T) -> Result<(u64, T)> {
        let (sealed, out, sync) = self.rotate_unsynced(then)?;
        if let Some(seq) = sync.run()? {
            self.mark_synced(seq);
        }
        Ok((sealed, out))
    }

    /// [`WriteBackJournal::rotate`], leaving the sealed segment's trim,
    /// unmapping and (under `everysec`) `fdatasync` to the caller: run it
    /// where a wait for the disk blocks no connection, then report a sync
    /// with [`WriteBackJournal::mark_synced`]. Under `always` the segment
    /// is synced before any commit can see it, inside.
    pub fn rotate_unsynced<T>(&self, then: impl FnOnce() -> T) -> Result<(u64, T, SealedSync)> {
        let mut inner = self.inner.lock();
        inner.drain_overflow()?;
        let sealed_id = inner.segment.id();
        let next = sealed_id + 1;
        let path = segment_path(&self.dir, next);
        let fresh = ActiveSegment::create(next, path.clone(), inner.segment.next_capacity())
            .map_err(|e| io_err(&path, e))?;
        let sealed = std::mem::replace(&mut inner.segment, fresh).seal();
        // A patch in the new segment must follow a whole value in it.
        inner.full_images.clear();
        let sealed_seq = inner.written_seq;
        if self.policy == FsyncPolicy::Always && inner.synced_seq < sealed_seq {
            // Under `always` a commit may not see its record as synced
            // before the sealed file is: sync it before anyone can look.
            sealed
                .file()
                .sync_data()
                .map_err(|e| io_err(sealed.path(), e))?;
            inner.synced_seq = sealed_seq;
        }
        let out = then();
        let sync = SealedSync {
            sealed,
            sync_through: (self.policy == FsyncPolicy::EverySec).then_some(sealed_seq),
        };
        Ok((sealed_id, out, sync))
    }

    /// Records that every record up to `seq` is on disk (a
    /// [`SealedSync::run`] returned it).
    pub fn mark_synced(&self, seq: u64) {
        let mut inner = self.inner.lock();
        inner.synced_seq = inner.synced_seq.max(seq);
    }

    /// Deletes every segment with id ≤ `sealed` (never the active one).
    pub fn remove_sealed_through(&self, sealed: u64) -> Result<()> {
        self.sealed_removal(sealed).run()
    }

    /// [`WriteBackJournal::remove_sealed_through`] as a value, to run where
    /// a wait for the file system blocks no connection (deleting a segment
    /// of a few hundred KB took 1.8 ms).
    pub fn sealed_removal(&self, sealed: u64) -> SealedRemoval {
        SealedRemoval {
            dir: self.dir.clone(),
            sealed,
            active: self.inner.lock().segment.id(),
        }
    }

    /// Bytes of journal records on disk (for metrics and tests): the
    /// sealed segments' sizes and the active segment's records, not the
    /// space allocated ahead of them.
    pub fn disk_bytes(&self) -> u64 {
        let (active, active_len) = {
            let inner = self.inner.lock();
            (inner.segment.id(), inner.segment.len() as u64)
        };
        list_segments(&self.dir)
            .unwrap_or_default()
            .into_iter()
            .filter(|&id| id != active)
            .filter_map(|id| fs::metadata(segment_path(&self.dir, id)).ok())
            .map(|m| m.len())
            .sum::<u64>()
            + active_len
    }
}

impl Inner {
    /// Appends one record; returns its sequence number.
    fn push(&mut self, op: u8, key: &[u8], entry: Option<&Entry>) -> u64 {
        self.last_seq += 1;
        let seq = self.last_seq;
        if self.overflow.is_empty() {
            let (wire_op, n) = layout(op, key, entry);
            // An error (the segment could not grow) holds the record back
            // in `overflow`; the commit that acknowledges it reports it.
            if let Ok(dst) = self.segment.append(n) {
                encode_into(dst, wire_op, seq, key, entry);
                self.written_seq = seq;
                return seq;
            }
        }
        encode(&mut self.overflow, op, seq, key, entry);
        seq
    }

    /// Moves records held back by a full disk into the segment.
    fn drain_overflow(&mut self) -> Result<()> {
        if self.overflow.is_empty() {
            return Ok(());
        }
        match self.segment.append(self.overflow.len()) {
            Ok(dst) => dst.copy_from_slice(&self.overflow),
            Err(e) => return Err(io_err(self.segment.path(), e)),
        }
        self.overflow.clear();
        self.written_seq = self.last_seq;
        Ok(())
    }
}

/// Takes an exclusive lock on `dir/LOCK` for as long as the returned file
/// is open, or fails naming the directory. Two servers appending to one
/// journal would interleave their records, and one replaying would trim
/// the other's mapped segment from under it.
#[cfg(unix)]
fn lock_dir(dir: &Path) -> Result<File> {
    use std::os::fd::AsRawFd;
    let path = dir.join("LOCK");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| io_err(&path, e))?;
    // A POSIX record lock (what SQLite uses): released when the process
    // ends, however it ends, and owned by the process, so that a crash
    // simulated in a test (a journal leaked, then reopened) is no conflict.
    // SAFETY: `flock` is plain data, zeroed is a valid value; `fcntl` reads
    // it through a valid pointer.
    let rc = unsafe {
        let mut lock: libc::flock = std::mem::zeroed();
        lock.l_type = libc::F_WRLCK as _;
        lock.l_whence = libc::SEEK_SET as _;
        libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock)
    };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        return Err(io_err(
            &path,
            std::io::Error::new(
                err.kind(),
                format!("the write-back journal is in use by another process ({err}); one server per data directory"),
            ),
        ));
    }
    Ok(file)
}

#[cfg(not(unix))]
fn lock_dir(dir: &Path) -> Result<File> {
    let path = dir.join("LOCK");
    File::create(&path).map_err(|e| io_err(&path, e))
}

/// Cuts `path` to `len` bytes, durably.
fn truncate(path: &Path, len: usize) -> Result<()> {
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| {
            f.set_len(len as u64)?;
            f.sync_all()
        })
        .map_err(|e| io_err(path, e))
}

fn sync_dir(dir: &Path) -> Result<()> {
    // Makes the new segment's directory entry durable.
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(dir, e))
}

#[cfg(test)]
mod tests;
