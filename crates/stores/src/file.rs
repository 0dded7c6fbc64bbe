//! [`FileStore`]: Scribe's file store — an append-only, rotated log of
//! mutations that can also answer reads.
//!
//! # On disk
//!
//! A directory of *segments* named `{base_filename}{stamp}_{id:05}`, where
//! `stamp` is empty (`rotate_period = "never"`), `-YYYY-MM-DD` (`daily`) or
//! `-YYYY-MM-DD-HH` (`hourly`), in UTC, and `id` grows by one with every new
//! segment (it orders the log; it may outgrow five digits). The symlink
//! `{base_filename}_current` points at the segment being written.
//!
//! Each segment is a series of records `[len: u32 LE][crc32: u32 LE][payload]`
//! (CRC-32 of the payload), the payload being one of
//!
//! - set: `[1][flags: u32 LE][has_expiry: u8][expires_at: u64 LE][key_len: u32 LE][key][value]`
//! - set of a value that is not a string ([`ValueKind`], e.g. a Redis hash):
//!   `[4][flags: u32 LE][kind: u8][has_expiry: u8][expires_at: u64 LE][key_len: u32 LE][key][value]`.
//!   Strings keep op 1, so files written before kinds read unchanged; an
//!   older build meeting op 4 refuses the file as corrupt rather than read a
//!   hash as a string.
//! - delete: `[2][key]`
//! - clear: `[3]` — everything before it is void.
//!
//! A new segment starts when the period's stamp changes, or when a write
//! would take a non-empty segment past `max_size` (a single batch larger
//! than `max_size` gets a segment of its own).
//!
//! # Durability
//!
//! Every write call (`apply`, `set_many`, `delete_many`) appends its records
//! with one `write(2)` and then `fdatasync`s before returning: an
//! acknowledged write survives a crash and a power loss. New segments are
//! made durable by an fsync of the directory.
//!
//! # Reading and reopening
//!
//! An in-memory index maps each key to the place of its latest record (or to
//! a tombstone); it is rebuilt at open by reading every segment in order, so
//! opening takes time proportional to the log. A record cut short at the
//! tail of the last segment (a crash mid-append) fails its length or CRC
//! check and is truncated away with a warning; a bad record anywhere else is
//! corruption and refuses to open, naming the file and offset. Values stay on
//! disk and are read with `pread`.
//!
//! [`Store::clear`] (and [`ReplayLog::discard`]) starts a new segment whose
//! first record is a clear, syncs it, then deletes the older segments; a
//! crash in between leaves segments that the clear voids, deleted at the
//! next open.
//!
//! The log is never compacted: a long-lived file store grows with every
//! write (like Scribe's). Used as a buffer's secondary it is emptied after
//! each replay.

mod naming;
mod record;

use crate::replay::{LogPosition, Logged, ReplayLog};
use async_trait::async_trait;
use bytes::Bytes;
use naming::{parse_segment_name, stamp};
use parking_lot::{Mutex, RwLock};
use record::{decode, encode, encode_clear, read_record, Record, HEADER};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Write};
use std::ops::Bound;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tiercache_engine::{now_ms, Entry, KeyStats, Mutation, Store, StoreError, ValueKind};

/// Unix milliseconds; injectable so tests can move time across a rotation.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// How often a [`FileStore`] starts a new segment regardless of size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RotatePeriod {
    /// Every hour (UTC).
    Hourly,
    /// Every day (UTC).
    Daily,
    /// Only by `max_size`.
    #[default]
    Never,
}

/// How a [`FileStore`] names and rotates its segments.
#[derive(Clone)]
pub struct FileStoreOptions {
    /// Segment name prefix (Scribe's `base_filename`).
    pub base_filename: String,
    /// Time-based rotation.
    pub rotate_period: RotatePeriod,
    /// Size-based rotation, bytes; `None` = no limit.
    pub max_size: Option<u64>,
    /// The wall clock used for rotation stamps.
    pub clock: Clock,
}

impl Default for FileStoreOptions {
    fn default() -> Self {
        FileStoreOptions {
            base_filename: "tiercache".to_owned(),
            rotate_period: RotatePeriod::Never,
            max_size: None,
            clock: Arc::new(now_ms),
        }
    }
}

/// An append-only mutation log in a directory, readable as a [`Store`] and
/// replayable as a [`ReplayLog`].
///
/// ```
/// use tiercache_engine::{Entry, Mutation, Store};
/// use tiercache_stores::{FileStore, FileStoreOptions, LogPosition, ReplayLog};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let store = FileStore::open("spool", dir.path(), FileStoreOptions::default()).unwrap();
/// store
///     .apply(&[Mutation::Set("a".into(), Entry::new("1")), Mutation::Delete("b".into())])
///     .await
///     .unwrap();
/// assert_eq!(store.get_many(&["a".into()]).await.unwrap()[0], Some(Entry::new("1")));
/// // The log hands its mutations back in order, deletes included.
/// let (log, _end) = store.read_from(LogPosition::START, 100).await.unwrap();
/// assert_eq!(log[1], Mutation::Delete("b".into()));
/// // Reopening rebuilds the index from the segments.
/// drop(store);
/// let store = FileStore::open("spool", dir.path(), FileStoreOptions::default()).unwrap();
/// assert_eq!(store.count().await.unwrap(), 1);
/// # });
/// ```
#[derive(Clone)]
pub struct FileStore {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    dir: PathBuf,
    opts: FileStoreOptions,
    /// Held for a whole append (write, fsync, index update): appends are
    /// serialised, so index order is log order.
    writer: Mutex<Writer>,
    index: RwLock<Index>,
    logged: AtomicU64,
}

struct Writer {
    current: Option<Open>,
    next_id: u64,
}

/// The segment being appended to.
struct Open {
    id: u64,
    stamp: String,
    file: File,
    size: u64,
}

#[derive(Default)]
struct Index {
    keys: BTreeMap<Bytes, Slot>,
    /// Every live segment: a read handle and its committed length.
    segments: BTreeMap<u64, (Arc<File>, u64)>,
    /// Where the log begins (just after the latest clear).
    start: LogPosition,
}

#[derive(Clone, Copy)]
enum Slot {
    Set {
        segment: u64,
        value_at: u64,
        value_len: u32,
        expires_at: Option<u64>,
        flags: u32,
        kind: ValueKind,
    },
    Deleted,
}

impl FileStore {
    /// Opens (creating it if needed) the log in `dir`, rebuilding the index
    /// from its segments. Blocking: call it before serving, or from
    /// `spawn_blocking`.
    pub fn open(name: &str, dir: &Path, opts: FileStoreOptions) -> Result<FileStore, StoreError> {
        let err = |what: &str, p: &Path, e: std::io::Error| {
            StoreError::new(name, format!("{what} {}: {e}", p.display()))
        };
        fs::create_dir_all(dir).map_err(|e| err("cannot create", dir, e))?;
        let mut ids: Vec<(u64, String)> = fs::read_dir(dir)
            .map_err(|e| err("cannot list", dir, e))?
            .filter_map(|d| d.ok())
            .filter(|d| d.file_type().map(|t| t.is_file()).unwrap_or(false))
            .filter_map(|d| parse_segment_name(&opts.base_filename, d.file_name().to_str()?))
            .collect();
        ids.sort();

        let mut index = Index::default();
        let mut logged = 0u64;
        let mut void_before = None;
        let last = ids.last().map(|(id, _)| *id);
        for (id, stamp) in &ids {
            let path = dir.join(format!("{}{stamp}_{id:05}", opts.base_filename));
            let file = File::open(&path).map_err(|e| err("cannot open", &path, e))?;
            let mut reader = BufReader::with_capacity(1 << 20, &file);
            let mut offset = 0u64;
            loop {
                match read_record(&mut reader) {
                    Ok(None) => break,
                    Ok(Some((payload, len))) => {
                        match decode(&payload) {
                            Some(Record::Set {
                                key,
                                entry,
                                value_at,
                            }) => {
                                index.keys.insert(
                                    key,
                                    Slot::Set {
                                        segment: *id,
                                        value_at: offset + HEADER + value_at,
                                        value_len: entry.value.len() as u32,
                                        expires_at: entry.expires_at,
                                        flags: entry.flags,
                                        kind: entry.kind,
                                    },
                                );
                                logged += 1;
                            }
                            Some(Record::Delete(key)) => {
                                index.keys.insert(key, Slot::Deleted);
                                logged += 1;
                            }
                            Some(Record::Clear) => {
                                index.keys.clear();
                                logged = 0;
                                void_before = Some(*id);
                                index.start = LogPosition {
                                    segment: *id,
                                    offset: offset + len,
                                };
                            }
                            None => {
                                return Err(StoreError::new(
                                    name,
                                    format!(
                                        "corrupt record at {}:{offset}: unknown operation",
                                        path.display()
                                    ),
                                ))
                            }
                        }
                        offset += len;
                    }
                    Err(()) if Some(*id) == last => {
                        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
                        tracing::warn!(
                            store = name,
                            file = %path.display(),
                            offset,
                            dropped = size.saturating_sub(offset),
                            "truncating a torn record at the end of the log (crash mid-append)"
                        );
                        let f = OpenOptions::new()
                            .write(true)
                            .open(&path)
                            .map_err(|e| err("cannot open", &path, e))?;
                        f.set_len(offset)
                            .and_then(|_| f.sync_all())
                            .map_err(|e| err("cannot truncate", &path, e))?;
                        break;
                    }
                    Err(()) => {
                        return Err(StoreError::new(
                            name,
                            format!(
                                "corrupt record at {}:{offset} (not the last segment, so not a torn append)",
                                path.display()
                            ),
                        ))
                    }
                }
            }
            drop(reader);
            index.segments.insert(*id, (Arc::new(file), offset));
        }
        // Segments before the latest clear are void: finish deleting them.
        if let Some(v) = void_before {
            for (id, stamp) in ids.iter().filter(|(id, _)| *id < v) {
                let path = dir.join(format!("{}{stamp}_{id:05}", opts.base_filename));
                let _ = fs::remove_file(&path);
                index.segments.remove(id);
            }
        }
        // Keep appending to the last segment; `append` rotates if its stamp
        // or size says so.
        let current = match ids.last() {
            Some((id, stamp)) => {
                let path = dir.join(format!("{}{stamp}_{id:05}", opts.base_filename));
                let file = OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(|e| err("cannot open", &path, e))?;
                Some(Open {
                    id: *id,
                    stamp: stamp.clone(),
                    file,
                    size: index.segments[id].1,
                })
            }
            None => None,
        };
        let next_id = ids.last().map_or(1, |(id, _)| id + 1);
        Ok(FileStore {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                dir: dir.to_owned(),
                opts,
                writer: Mutex::new(Writer { current, next_id }),
                index: RwLock::new(index),
                logged: AtomicU64::new(logged),
            }),
        })
    }

    /// The directory of the segments.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Paths of the live segments, oldest first.
    pub fn segments(&self) -> Vec<PathBuf> {
        let _w = self.inner.writer.lock();
        let ids: Vec<u64> = self.inner.index.read().segments.keys().copied().collect();
        let mut names: BTreeMap<u64, PathBuf> = BTreeMap::new();
        if let Ok(rd) = fs::read_dir(&self.inner.dir) {
            for d in rd.flatten() {
                if let Some((id, _)) = d
                    .file_name()
                    .to_str()
                    .and_then(|n| parse_segment_name(&self.inner.opts.base_filename, n))
                {
                    if ids.contains(&id) {
                        names.insert(id, d.path());
                    }
                }
            }
        }
        names.into_values().collect()
    }

    /// The path of the `{base_filename}_current` symlink.
    pub fn current_link(&self) -> PathBuf {
        self.inner
            .dir
            .join(format!("{}_current", self.inner.opts.base_filename))
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|e| StoreError::new(&self.inner.name, format!("file task failed: {e}")))?
    }

    async fn append(&self, batch: Vec<Mutation>) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.blocking(move |inner| inner.append(&batch)).await
    }
}

impl Inner {
    fn io_err(&self, what: &str, path: &Path, e: std::io::Error) -> StoreError {
        StoreError::new(&self.name, format!("{what} {}: {e}", path.display()))
    }

    fn segment_path(&self, id: u64, stamp: &str) -> PathBuf {
        self.dir
            .join(format!("{}{stamp}_{id:05}", self.opts.base_filename))
    }

    /// Starts segment `next_id` (durably, with the symlink pointing at it).
    fn rotate(&self, w: &mut Writer, stamp: String) -> Result<(), StoreError> {
        let id = w.next_id;
        let path = self.segment_path(id, &stamp);
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| self.io_err("cannot create", &path, e))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| self.io_err("cannot sync directory", &self.dir, e))?;
        let reader = File::open(&path).map_err(|e| self.io_err("cannot open", &path, e))?;
        self.index
            .write()
            .segments
            .insert(id, (Arc::new(reader), 0));
        // Point the symlink at it: a new link renamed over the old one.
        let link = self
            .dir
            .join(format!("{}_current", self.opts.base_filename));
        let tmp = self
            .dir
            .join(format!(".{}_current.tmp", self.opts.base_filename));
        let _ = fs::remove_file(&tmp);
        let target = path.file_name().expect("segment file name");
        std::os::unix::fs::symlink(target, &tmp)
            .and_then(|_| fs::rename(&tmp, &link))
            .map_err(|e| self.io_err("cannot update symlink", &link, e))?;
        w.current = Some(Open {
            id,
            stamp,
            file,
            size: 0,
        });
        w.next_id = id + 1;
        Ok(())
    }

    /// Writes `buf` at the end of the current segment (rotating first when
    /// the period or size says so) and syncs it; returns the segment id and
    /// the offset the bytes start at.
    fn write(&self, w: &mut Writer, buf: &[u8]) -> Result<(u64, u64), StoreError> {
        let stamp = stamp(self.opts.rotate_period, (self.opts.clock)());
        let rotate = match &w.current {
            None => true,
            Some(cur) => {
                cur.stamp != stamp
                    || self
                        .opts
                        .max_size
                        .is_some_and(|max| cur.size > 0 && cur.size + buf.len() as u64 > max)
            }
        };
        if rotate {
            self.rotate(w, stamp)?;
        }
        let cur = w.current.as_mut().expect("a current segment");
        let at = cur.size;
        let path = self.segment_path(cur.id, &cur.stamp);
        if let Err(e) = cur.file.write_all(buf).and_then(|_| cur.file.sync_data()) {
            // Take a partial append back so the segment stays a clean series
            // of records; if even that fails, never append to it again.
            if cur
                .file
                .set_len(at)
                .and_then(|_| cur.file.sync_data())
                .is_err()
            {
                w.current = None;
            }
            return Err(self.io_err("cannot append to", &path, e));
        }
        cur.size += buf.len() as u64;
        Ok((cur.id, at))
    }

    fn append(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        let mut buf = Vec::with_capacity(
            batch
                .iter()
                .map(|m| match m {
                    Mutation::Set(k, e) => 26 + k.len() + e.value.len(),
                    Mutation::Delete(k) => 9 + k.len(),
                })
                .sum(),
        );
        let mut value_at = Vec::with_capacity(batch.len());
        for m in batch {
            let rec_start = buf.len() as u64;
            value_at.push(rec_start + encode(&mut buf, m));
        }
        let mut w = self.writer.lock();
        let (segment, at) = self.write(&mut w, &buf)?;
        let mut index = self.index.write();
        if let Some(s) = index.segments.get_mut(&segment) {
            s.1 = at + buf.len() as u64;
        }
        for (m, rel) in batch.iter().zip(value_at) {
            let slot = match m {
                Mutation::Set(_, e) => Slot::Set {
                    segment,
                    value_at: at + rel,
                    value_len: e.value.len() as u32,
                    expires_at: e.expires_at,
                    flags: e.flags,
                    kind: e.kind,
                },
                Mutation::Delete(_) => Slot::Deleted,
            };
            // A key new to the index is copied: the write's key may share
            // its allocation with the value (`copy_key_value`), which the
            // index must not keep alive.
            match index.keys.get_mut(&m.key()[..]) {
                Some(old) => *old = slot,
                None => {
                    index.keys.insert(Bytes::copy_from_slice(m.key()), slot);
                }
            }
        }
        self.logged.fetch_add(batch.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Empties the log durably (see the module docs).
    fn clear(&self) -> Result<(), StoreError> {
        let mut w = self.writer.lock();
        let stamp = stamp(self.opts.rotate_period, (self.opts.clock)());
        self.rotate(&mut w, stamp)?;
        let mut buf = Vec::new();
        encode_clear(&mut buf);
        let (segment, at) = self.write(&mut w, &buf)?;
        let old: Vec<u64> = {
            let mut index = self.index.write();
            index.keys.clear();
            index.start = LogPosition {
                segment,
                offset: at + buf.len() as u64,
            };
            let end = index.start.offset;
            if let Some(s) = index.segments.get_mut(&segment) {
                s.1 = end;
            }
            let old: Vec<u64> = index.segments.range(..segment).map(|(id, _)| *id).collect();
            for id in &old {
                index.segments.remove(id);
            }
            old
        };
        self.logged.store(0, Ordering::Relaxed);
        drop(w);
        // Void already; removing them only frees the disk.
        if let Ok(rd) = fs::read_dir(&self.dir) {
            for d in rd.flatten() {
                let name = d.file_name();
                let Some((id, _)) = name
                    .to_str()
                    .and_then(|n| parse_segment_name(&self.opts.base_filename, n))
                else {
                    continue;
                };
                if old.contains(&id) {
                    if let Err(e) = fs::remove_file(d.path()) {
                        tracing::warn!(store = %self.name, file = %d.path().display(), "cannot remove a cleared segment: {e}");
                    }
                }
            }
        }
        Ok(())
    }

    /// Reads the records from `from` (see [`ReplayLog::read_from`]).
    fn read_from(
        &self,
        from: LogPosition,
        max: usize,
    ) -> Result<(Vec<Mutation>, LogPosition), StoreError> {
        let (start, segments): (LogPosition, Vec<(u64, Arc<File>, u64)>) = {
            let index = self.index.read();
            (
                index.start,
                index
                    .segments
                    .iter()
                    .map(|(id, (f, len))| (*id, f.clone(), *len))
                    .collect(),
            )
        };
        let mut pos = from.max(start);
        let mut out = Vec::new();
        for (id, file, len) in segments {
            if id < pos.segment {
                continue;
            }
            if id > pos.segment {
                pos = LogPosition {
                    segment: id,
                    offset: 0,
                };
            }
            while pos.offset < len && out.len() < max {
                let mut header = [0u8; HEADER as usize];
                let bad = |what: &str| {
                    StoreError::new(
                        &self.name,
                        format!("{what} in segment {id} at offset {}", pos.offset),
                    )
                };
                file.read_exact_at(&mut header, pos.offset)
                    .map_err(|e| bad(&format!("cannot read ({e})")))?;
                let rlen = u32::from_le_bytes(header[..4].try_into().unwrap()) as u64;
                let mut payload = vec![0; rlen as usize];
                file.read_exact_at(&mut payload, pos.offset + HEADER)
                    .map_err(|e| bad(&format!("cannot read ({e})")))?;
                match decode(&payload) {
                    Some(Record::Set { key, entry, .. }) => out.push(Mutation::Set(key, entry)),
                    Some(Record::Delete(key)) => out.push(Mutation::Delete(key)),
                    Some(Record::Clear) => {}
                    None => return Err(bad("corrupt record")),
                }
                pos.offset += HEADER + rlen;
            }
            if out.len() >= max {
                break;
            }
        }
        Ok((out, pos))
    }
}

/// Where to read one live value from.
type ValueRef = (Arc<File>, u64, u32, Option<u64>, u32, ValueKind);

#[async_trait]
impl Store for FileStore {
    fn name(&self) -> &str {
        &self.inner.name
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        let now = now_ms();
        let refs: Vec<Option<ValueRef>> = {
            let index = self.inner.index.read();
            keys.iter()
                .map(|k| match index.keys.get(k) {
                    Some(&Slot::Set {
                        segment,
                        value_at,
                        value_len,
                        expires_at,
                        flags,
                        kind,
                    }) if !matches!(expires_at, Some(t) if t <= now) => {
                        let file = index.segments.get(&segment)?.0.clone();
                        Some((file, value_at, value_len, expires_at, flags, kind))
                    }
                    _ => None,
                })
                .collect()
        };
        if refs.iter().all(Option::is_none) {
            return Ok(vec![None; keys.len()]);
        }
        self.blocking(move |inner| {
            refs.into_iter()
                .map(|r| {
                    let Some((file, at, len, expires_at, flags, kind)) = r else {
                        return Ok(None);
                    };
                    let mut value = vec![0; len as usize];
                    file.read_exact_at(&mut value, at).map_err(|e| {
                        StoreError::new(&inner.name, format!("cannot read a value: {e}"))
                    })?;
                    Ok(Some(Entry::with_kind(value, expires_at, flags, kind)))
                })
                .collect()
        })
        .await
    }

    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        self.append(Mutation::sets(entries)).await
    }

    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        self.append(Mutation::deletes(keys)).await
    }

    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        self.append(batch.to_vec()).await
    }

    async fn count(&self) -> Result<u64, StoreError> {
        Ok(self.key_stats(now_ms()).await?.keys)
    }

    async fn clear(&self) -> Result<(), StoreError> {
        self.blocking(|inner| inner.clear()).await
    }

    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        let index = self.inner.index.read();
        let lower: Bound<&[u8]> = match start {
            Bound::Unbounded => Bound::Included(prefix),
            Bound::Included(s) => Bound::Included(s.max(prefix)),
            Bound::Excluded(s) if s < prefix => Bound::Included(prefix),
            b => b,
        };
        Ok(index
            .keys
            .range::<[u8], _>((lower, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(_, s)| live(s, now))
            .map(|(k, _)| k.clone())
            .take(limit)
            .collect())
    }

    async fn key_stats(&self, now: u64) -> Result<KeyStats, StoreError> {
        let index = self.inner.index.read();
        let mut stats = KeyStats::default();
        let mut ttl_sum = 0u128;
        for slot in index.keys.values().filter(|s| live(s, now)) {
            stats.keys += 1;
            if let Slot::Set {
                expires_at: Some(t),
                ..
            } = slot
            {
                stats.expires += 1;
                ttl_sum += (t - now) as u128;
            }
        }
        if stats.expires > 0 {
            stats.avg_ttl_ms = (ttl_sum / stats.expires as u128) as u64;
        }
        Ok(stats)
    }
}

fn live(slot: &Slot, now: u64) -> bool {
    matches!(slot, Slot::Set { expires_at, .. } if !expires_at.is_some_and(|t| t <= now))
}

#[async_trait]
impl ReplayLog for FileStore {
    async fn lookup(&self, keys: &[Bytes]) -> Result<Vec<Logged>, StoreError> {
        // A set's value is read like any value, expired ones too: they still
        // hide older values below.
        let looks: Vec<Result<ValueRef, Logged>> = {
            let index = self.inner.index.read();
            keys.iter()
                .map(|k| match index.keys.get(k) {
                    None => Err(Logged::NotLogged),
                    Some(Slot::Deleted) => Err(Logged::Deleted),
                    Some(&Slot::Set {
                        segment,
                        value_at,
                        value_len,
                        expires_at,
                        flags,
                        kind,
                    }) => match index.segments.get(&segment) {
                        Some((file, _)) => {
                            Ok((file.clone(), value_at, value_len, expires_at, flags, kind))
                        }
                        None => Err(Logged::NotLogged),
                    },
                })
                .collect()
        };
        if looks.iter().all(Result::is_err) {
            return Ok(looks.into_iter().map(|l| l.unwrap_err()).collect());
        }
        self.blocking(move |inner| {
            looks
                .into_iter()
                .map(|l| match l {
                    Err(logged) => Ok(logged),
                    Ok((file, at, len, expires_at, flags, kind)) => {
                        let mut value = vec![0; len as usize];
                        file.read_exact_at(&mut value, at).map_err(|e| {
                            StoreError::new(&inner.name, format!("cannot read a value: {e}"))
                        })?;
                        Ok(Logged::Set(Entry::with_kind(
                            value, expires_at, flags, kind,
                        )))
                    }
                })
                .collect()
        })
        .await
    }

    async fn read_from(
        &self,
        from: LogPosition,
        max_records: usize,
    ) -> Result<(Vec<Mutation>, LogPosition), StoreError> {
        self.blocking(move |inner| inner.read_from(from, max_records))
            .await
    }

    fn logged(&self) -> u64 {
        self.inner.logged.load(Ordering::Relaxed)
    }

    async fn discard(&self) -> Result<(), StoreError> {
        self.clear().await
    }
}
