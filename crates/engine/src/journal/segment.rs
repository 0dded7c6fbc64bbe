//! The active journal segment: a file allocated ahead of the appends and
//! mapped into memory (`MAP_SHARED`), so that an append is a copy into the
//! kernel's page cache and no system call.
//!
//! Why: the copied bytes belong to the kernel as soon as the copy ends, so
//! a `kill -9` of the process cannot lose them, exactly as after
//! `write(2)`, and `fdatasync` on the file writes them out as it would
//! written ones (on Linux, where a store through a shared mapping dirties
//! the page cache page itself; POSIX alone would ask for `msync`). Before, appends went to a buffer that a group commit
//! wrote with one `write(2)`: every connection yielded once per batch so
//! that others could join the write, and that second poll of each task
//! cost about 600 instructions per unpipelined SET on the request thread
//! (callgrind, `scripts/mc-callgrind.sh set 1`: 6,048 with the group
//! commit, 5,432 with no commit at all; BENCHMARKS.md, session 25).
//!
//! The file is allocated (`posix_fallocate` on Linux) before the mapping
//! covers it: a store through a mapping into a hole the file system cannot
//! fill (disk full) raises `SIGBUS`, where allocating first gets an error
//! that the journal reports like a failed `write(2)`. Elsewhere the file is
//! only extended, and a full disk would raise `SIGBUS`.
//!
//! Not this module's concern: the record format (`record.rs`) and replay
//! (`journal.rs`).
//! The bytes after the last record are zeros, which replay reads as the
//! end; a segment sealed or closed is truncated to its records.

use memmap2::{MmapMut, MmapOptions};
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Smallest allocation of a new segment.
pub(super) const MIN_CAPACITY: usize = 1 << 20;
/// Largest allocation a new segment starts with (it grows past it if the
/// appends need it).
const MAX_START_CAPACITY: usize = 64 << 20;
/// Growth is in whole multiples of this (a page size multiple).
const GRANULE: usize = 64 << 10;

/// The segment being appended to. See the module documentation.
pub(super) struct ActiveSegment {
    id: u64,
    path: PathBuf,
    file: File,
    map: MmapMut,
    /// Bytes of records from the start of the file; the rest is zeros.
    len: usize,
    /// Cut to `len` already (appends are over).
    trimmed: bool,
    /// Tests: growing past this many bytes fails as a full disk would.
    #[cfg(test)]
    pub(super) growth_limit: Option<usize>,
}

/// A segment no longer appended to; [`Sealed::trim`] cuts it to its
/// records and unmaps it.
pub(super) struct Sealed(ActiveSegment);

impl Sealed {
    pub(super) fn path(&self) -> &Path {
        &self.0.path
    }

    pub(super) fn file(&self) -> &File {
        &self.0.file
    }

    /// Truncates the file to its records, giving the allocated tail back
    /// to the file system, and unmaps it (tearing down a mapping of tens of
    /// megabytes takes a while: done here, where the caller chose to
    /// wait). Returns the file, for a sync.
    pub(super) fn trim(self) -> io::Result<File> {
        let mut segment = self.0;
        segment.trim()?;
        segment.file.try_clone()
    }
}

impl ActiveSegment {
    /// Creates segment `id` at `path`, allocated and mapped for `capacity`
    /// bytes (rounded up to a granule, at least [`MIN_CAPACITY`]).
    pub(super) fn create(id: u64, path: PathBuf, capacity: usize) -> io::Result<ActiveSegment> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        let capacity = round_up(capacity.clamp(MIN_CAPACITY, MAX_START_CAPACITY));
        let allocated = allocate(&file, 0, capacity);
        #[cfg(test)]
        let allocated = match tests::FAIL_ALLOCATION.with(|fail| fail.replace(false)) {
            true => Err(io::Error::other("No space left on device (test)")),
            false => allocated,
        };
        let map = allocated.and_then(|()| map(&file, capacity));
        let map = match map {
            Ok(map) => map,
            Err(e) => {
                // Not left behind: the next rotation creates this same id.
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        Ok(ActiveSegment {
            id,
            path,
            file,
            map,
            len: 0,
            trimmed: false,
            #[cfg(test)]
            growth_limit: None,
        })
    }

    pub(super) fn id(&self) -> u64 {
        self.id
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn file(&self) -> &File {
        &self.file
    }

    /// Bytes of records written so far.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The next `n` bytes of the file, for the caller to fill entirely
    /// (they count as written on return). Grows the file when they do not
    /// fit; an error leaves the segment as it was.
    pub(super) fn append(&mut self, n: usize) -> io::Result<&mut [u8]> {
        let end = self.len + n;
        if end > self.map.len() {
            self.grow(end)?;
        }
        let start = self.len;
        self.len = end;
        Ok(&mut self.map[start..end])
    }

    /// Allocates and maps at least `needed` bytes (at least double).
    fn grow(&mut self, needed: usize) -> io::Result<()> {
        let old = self.map.len();
        let capacity = round_up(needed.max(old * 2));
        #[cfg(test)]
        if self.growth_limit.is_some_and(|limit| capacity > limit) {
            return Err(io::Error::other("No space left on device (test)"));
        }
        allocate(&self.file, old, capacity - old)?;
        remap(&mut self.map, &self.file, capacity)
    }

    /// Ends appends to this segment, for the caller to [`Sealed::trim`] (on a
    /// thread that may wait for the file system).
    pub(super) fn seal(self) -> Sealed {
        Sealed(self)
    }

    fn trim(&mut self) -> io::Result<()> {
        if !self.trimmed {
            // Truncating under the live mapping is sound: its pages past
            // the new end are never touched again, only unmapped.
            self.file.set_len(self.len as u64)?;
            self.trimmed = true;
        }
        Ok(())
    }

    /// A good starting capacity for the segment after this one: room for
    /// what this one took.
    pub(super) fn next_capacity(&self) -> usize {
        self.len.next_power_of_two()
    }
}

impl Drop for ActiveSegment {
    /// A segment dropped (the journal closed, or a sealed one trimmed)
    /// keeps only its records. A process that dies instead leaves the
    /// zeros, which replay reads as the end.
    fn drop(&mut self) {
        if let Err(e) = self.trim() {
            tracing::warn!(file = %self.path.display(), error = %e, "could not trim a journal segment");
        }
    }
}

fn round_up(n: usize) -> usize {
    n.div_ceil(GRANULE) * GRANULE
}

fn map(file: &File, len: usize) -> io::Result<MmapMut> {
    // SAFETY: the mapping is sound while no other code changes the file's
    // length or bytes underneath it. The journal owns its directory (one
    // server per data directory, which the server's lock file enforces);
    // this process only truncates a segment after `seal` unmapped it.
    unsafe { MmapOptions::new().len(len).map_mut(file) }
}

/// Extends `map` over the first `len` bytes of `file` (allocated already).
#[cfg(target_os = "linux")]
fn remap(map: &mut MmapMut, _file: &File, len: usize) -> io::Result<()> {
    // mremap moves the page tables: tearing down the old mapping and
    // faulting in a new one took 0.2-0.5 ms per doubling, on the request
    // thread (strace, 4-8 MiB segments).
    // SAFETY: as in `map`; the file is at least `len` bytes long.
    unsafe { map.remap(len, memmap2::RemapOptions::new().may_move(true)) }
}

#[cfg(not(target_os = "linux"))]
fn remap(map: &mut MmapMut, file: &File, len: usize) -> io::Result<()> {
    // The old mapping's stores are in the page cache already; the new one
    // sees them.
    *map = self::map(file, len)?;
    Ok(())
}

#[cfg(target_os = "linux")]
fn allocate(file: &File, offset: usize, len: usize) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // posix_fallocate returns the error number rather than setting errno.
    // SAFETY: a plain system call on a file descriptor we own.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), offset as i64, len as i64) } {
        0 => Ok(()),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

#[cfg(not(target_os = "linux"))]
fn allocate(file: &File, offset: usize, len: usize) -> io::Result<()> {
    file.set_len((offset + len) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_reach_the_file_without_a_write_and_growth_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        let mut seg = ActiveSegment::create(7, path.clone(), 0).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), MIN_CAPACITY as u64);
        seg.append(3).unwrap().copy_from_slice(b"abc");
        // Past the first allocation: the segment grows and the earlier
        // bytes stay where they were.
        let big = vec![b'x'; MIN_CAPACITY];
        seg.append(big.len()).unwrap().copy_from_slice(&big);
        assert_eq!(seg.len(), 3 + MIN_CAPACITY);
        // Read through the file, not the mapping: what another process (or
        // this one after a crash) would see.
        let on_disk = std::fs::read(&path).unwrap();
        assert!(on_disk.len() >= 3 + MIN_CAPACITY);
        assert_eq!(&on_disk[..3], b"abc");
        assert!(on_disk[3..3 + MIN_CAPACITY].iter().all(|&b| b == b'x'));
        assert!(on_disk[3 + MIN_CAPACITY..].iter().all(|&b| b == 0));
        assert_eq!(seg.next_capacity(), (3 + MIN_CAPACITY).next_power_of_two());
        seg.seal().trim().unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            (3 + MIN_CAPACITY) as u64
        );
    }

    thread_local! {
        /// Makes the next `create` on this thread fail to allocate, as on a
        /// full disk.
        pub(super) static FAIL_ALLOCATION: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    #[test]
    fn a_segment_that_cannot_be_allocated_leaves_no_file_to_block_a_retry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        FAIL_ALLOCATION.with(|fail| fail.set(true));
        assert!(ActiveSegment::create(1, path.clone(), 0).is_err());
        assert!(!path.exists(), "no file left behind");
        // The retry (the next rotation) creates the same id.
        ActiveSegment::create(1, path.clone(), 0).unwrap();
    }

    #[test]
    fn an_existing_file_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        std::fs::write(&path, b"records").unwrap();
        let err = ActiveSegment::create(1, path.clone(), 0).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"records");
    }
}
