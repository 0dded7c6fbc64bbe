//! Trace files: a [`Trace`] is a name and a sequence of `u64` keys.
//!
//! Two on-disk formats are read, either plain or `.xz`-compressed (detected by
//! the file name ending in `.xz`, decompressed in memory with the pure-Rust
//! `lzma-rs`):
//!
//! - [`TraceFormat::Cache2k`]: the format of the cache2k benchmark traces
//!   (`web07`, `web12`, ...), a stream of big-endian `u32` keys with no header.
//! - [`TraceFormat::Arc`]: the text format of the ARC paper's traces
//!   (Megiddo and Modha), one request run per line: `start count ...`, meaning
//!   the keys `start`, `start + 1`, ..., `start + count - 1`. Fields after the
//!   second are ignored; blank lines are skipped.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A named sequence of requested keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// A short label for reports, e.g. `web07` or `zipf-0.99`.
    pub name: String,
    /// The requested keys, in order.
    pub keys: Vec<u64>,
}

impl Trace {
    /// The number of distinct keys in the trace (its footprint).
    pub fn distinct_keys(&self) -> usize {
        let mut seen = std::collections::HashSet::with_capacity(self.keys.len() / 4);
        self.keys.iter().filter(|k| seen.insert(**k)).count()
    }
}

/// The on-disk format of a trace file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// Big-endian `u32` keys, back to back (cache2k's traces).
    Cache2k,
    /// Text lines `start count ...` (the ARC paper's traces).
    Arc,
}

/// The error of parsing a [`TraceFormat`] name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown trace format '{0}' (expected 'cache2k' or 'arc')")]
pub struct UnknownTraceFormat(pub String);

impl FromStr for TraceFormat {
    type Err = UnknownTraceFormat;

    /// Parses `cache2k` or `arc` (exactly, lowercase).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cache2k" => Ok(TraceFormat::Cache2k),
            "arc" => Ok(TraceFormat::Arc),
            other => Err(UnknownTraceFormat(other.to_owned())),
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TraceFormat::Cache2k => "cache2k",
            TraceFormat::Arc => "arc",
        })
    }
}

/// Why a trace could not be loaded. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The trace file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file ends in `.xz` but is not a valid xz stream.
    #[error("{}: xz decompression failed: {message}", path.display())]
    Xz {
        /// The trace file.
        path: PathBuf,
        /// What the decompressor reported.
        message: String,
    },
    /// A cache2k trace whose (decompressed) length is not a multiple of 4.
    #[error(
        "{}: truncated cache2k trace: {len} bytes is not a multiple of 4 (trailing bytes at offset {offset})",
        path.display()
    )]
    Truncated {
        /// The trace file.
        path: PathBuf,
        /// The (decompressed) length in bytes.
        len: usize,
        /// The byte offset of the incomplete trailing key.
        offset: usize,
    },
    /// An ARC trace line that is not `start count ...`.
    #[error("{}:{line}: {message}: '{text}'", path.display())]
    BadLine {
        /// The trace file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The offending line.
        text: String,
        /// What is wrong with it.
        message: String,
    },
}

/// Loads a trace file. The trace is named after the file, without any `.xz`
/// and `.trace` suffixes (`web07.trace.xz` → `web07`).
///
/// ```
/// use tiercache_lab::{load_trace, TraceFormat};
///
/// let dir = std::env::temp_dir().join(format!("lab-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("tiny.arc");
/// std::fs::write(&path, "10 3 0 0\n1 1\n").unwrap();
/// let trace = load_trace(&path, TraceFormat::Arc).unwrap();
/// assert_eq!(trace.name, "tiny.arc");
/// assert_eq!(trace.keys, [10, 11, 12, 1]);
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn load_trace(path: &Path, format: TraceFormat) -> Result<Trace, TraceError> {
    let io = |source| TraceError::Io {
        path: path.to_owned(),
        source,
    };
    let raw = std::fs::read(path).map_err(io)?;
    let compressed = path.extension().is_some_and(|e| e == "xz");
    let bytes = if compressed {
        let mut out = Vec::with_capacity(raw.len() * 4);
        lzma_rs::xz_decompress(&mut raw.as_slice(), &mut out).map_err(|e| TraceError::Xz {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        out
    } else {
        raw
    };
    let keys = match format {
        TraceFormat::Cache2k => parse_cache2k(path, &bytes)?,
        TraceFormat::Arc => parse_arc(path, &bytes)?,
    };
    Ok(Trace {
        name: trace_name(path),
        keys,
    })
}

/// `dir/web07.trace.xz` → `web07`; `dir/P1.lis` → `P1.lis`.
fn trace_name(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let file = file.strip_suffix(".xz").unwrap_or(&file);
    file.strip_suffix(".trace").unwrap_or(file).to_owned()
}

fn parse_cache2k(path: &Path, bytes: &[u8]) -> Result<Vec<u64>, TraceError> {
    if bytes.len() % 4 != 0 {
        return Err(TraceError::Truncated {
            path: path.to_owned(),
            len: bytes.len(),
            offset: bytes.len() / 4 * 4,
        });
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
        .collect())
}

fn parse_arc(path: &Path, bytes: &[u8]) -> Result<Vec<u64>, TraceError> {
    let mut keys = Vec::new();
    // Split bytes and check UTF-8 per line, so an error names the line.
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line_no = index + 1;
        let bad = |message: &str, text: &str| TraceError::BadLine {
            path: path.to_owned(),
            line: line_no,
            text: text.to_owned(),
            message: message.to_owned(),
        };
        let Ok(line) = std::str::from_utf8(line) else {
            return Err(bad("not UTF-8", &String::from_utf8_lossy(line)));
        };
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let mut fields = line.split_ascii_whitespace();
        let (Some(start), Some(count)) = (fields.next(), fields.next()) else {
            return Err(bad("expected 'start count'", line));
        };
        let start: u64 = start
            .parse()
            .map_err(|_| bad("start is not an unsigned integer", line))?;
        let count: u64 = count
            .parse()
            .map_err(|_| bad("count is not an unsigned integer", line))?;
        if start.checked_add(count).is_none() {
            return Err(bad("start + count overflows u64", line));
        }
        keys.extend(start..start + count);
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn xz(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        lzma_rs::xz_compress(&mut &bytes[..], &mut out).unwrap();
        out
    }

    fn be(keys: &[u32]) -> Vec<u8> {
        keys.iter().flat_map(|k| k.to_be_bytes()).collect()
    }

    #[test]
    fn format_names_parse_and_reject_others() {
        assert_eq!(
            "cache2k".parse::<TraceFormat>().unwrap(),
            TraceFormat::Cache2k
        );
        assert_eq!("arc".parse::<TraceFormat>().unwrap(), TraceFormat::Arc);
        let err = "lirs".parse::<TraceFormat>().unwrap_err().to_string();
        assert!(err.contains("'lirs'") && err.contains("cache2k"), "{err}");
    }

    #[test]
    fn cache2k_reads_big_endian_u32_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "t.trace", &be(&[1, 2, 0xdead_beef, 1]));
        let trace = load_trace(&path, TraceFormat::Cache2k).unwrap();
        assert_eq!(trace.name, "t");
        assert_eq!(trace.keys, [1, 2, 0xdead_beef, 1]);
        assert_eq!(trace.distinct_keys(), 3);
    }

    #[test]
    fn cache2k_xz_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<u32> = (0..10_000).map(|i| i % 777).collect();
        let path = write(dir.path(), "web99.trace.xz", &xz(&be(&keys)));
        let trace = load_trace(&path, TraceFormat::Cache2k).unwrap();
        assert_eq!(trace.name, "web99");
        assert_eq!(
            trace.keys,
            keys.iter().map(|k| *k as u64).collect::<Vec<_>>()
        );
    }

    #[test]
    fn cache2k_truncated_names_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = be(&[1, 2]);
        bytes.extend([0, 0]);
        let path = write(dir.path(), "short.trace", &bytes);
        let err = load_trace(&path, TraceFormat::Cache2k)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("short.trace") && err.contains("offset 8"),
            "{err}"
        );
    }

    #[test]
    fn arc_expands_runs_and_ignores_extra_fields() {
        let dir = tempfile::tempdir().unwrap();
        let text = "5 2 0 1\n\n100 1\r\n5 1 extra fields here\n7 0\n";
        let path = write(dir.path(), "x.lis", text.as_bytes());
        let trace = load_trace(&path, TraceFormat::Arc).unwrap();
        assert_eq!(trace.keys, [5, 6, 100, 5]);
    }

    #[test]
    fn arc_xz_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "P1.lis.xz", &xz(b"1 3\n2 2 0 0\n"));
        let trace = load_trace(&path, TraceFormat::Arc).unwrap();
        assert_eq!(trace.name, "P1.lis");
        assert_eq!(trace.keys, [1, 2, 3, 2, 3]);
    }

    #[test]
    fn arc_bad_line_names_file_line_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "bad.lis", b"1 2\n3 x 0\n");
        let err = load_trace(&path, TraceFormat::Arc).unwrap_err().to_string();
        assert!(
            err.contains("bad.lis:2:") && err.contains("'3 x 0'"),
            "{err}"
        );
        let path = write(dir.path(), "one.lis", b"1 2\n\n42\n");
        let err = load_trace(&path, TraceFormat::Arc).unwrap_err().to_string();
        assert!(err.contains("one.lis:3:") && err.contains("'42'"), "{err}");
    }

    #[test]
    fn missing_file_names_the_path() {
        let err = load_trace(Path::new("/nonexistent/nope.trace"), TraceFormat::Cache2k)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/nope.trace"), "{err}");
    }

    #[test]
    fn corrupt_xz_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "junk.trace.xz", b"definitely not xz");
        let err = load_trace(&path, TraceFormat::Cache2k)
            .unwrap_err()
            .to_string();
        assert!(err.contains("junk.trace.xz") && err.contains("xz"), "{err}");
    }
}
