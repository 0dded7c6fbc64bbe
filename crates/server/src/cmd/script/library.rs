//! Function libraries (Redis 7's `FUNCTION`): what the server knows of
//! them (each library's code and its functions' descriptions and flags),
//! the `#!lua name=...` line, and the functions file that keeps them
//! across restarts.
//!
//! The compiled functions live in the Lua VM (`function_vm.rs`); only the
//! VM thread changes a [`Registry`], under its lock, so what commands read
//! here matches what the VM runs.

use bytes::Bytes;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Script flags as Redis 7.0 lists them (`scripts_flags_def`), with their
/// bits here.
pub const FLAGS: &[(&str, u8)] = &[
    ("no-writes", 1),
    ("allow-oom", 2),
    ("allow-stale", 4),
    ("no-cluster", 8),
    ("allow-cross-slot-keys", 16),
];
/// `no-writes`.
pub const NO_WRITES: u8 = 1;

/// Redis's error for a bad library or function name.
pub const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// A registered function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionInfo {
    /// `description=` of the table form, if given.
    pub description: Option<Bytes>,
    /// [`FLAGS`] bits.
    pub flags: u8,
}

/// A loaded library.
#[derive(Clone, Debug, Default)]
pub struct Library {
    /// Its code, `#!lua` line included (what `FUNCTION LIST WITHCODE`
    /// shows and `FUNCTION DUMP` writes).
    pub code: Bytes,
    /// Its functions by name.
    pub functions: BTreeMap<String, FunctionInfo>,
}

/// Every library, and which library each function is in.
#[derive(Debug, Default)]
pub struct Registry {
    /// Libraries by name (listed in name order).
    pub libraries: BTreeMap<String, Library>,
    /// Function name, in lower case (`FCALL` finds a function whatever
    /// the case, as Redis's dictionary does), to library name.
    pub by_function: HashMap<String, String>,
}

impl Registry {
    /// The function `name` (any case): its name as registered and info.
    pub fn function(&self, name: &str) -> Option<(&str, &FunctionInfo)> {
        let lib = self.by_function.get(&name.to_ascii_lowercase())?;
        self.libraries
            .get(lib)?
            .functions
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(n, info)| (n.as_str(), info))
    }

    /// The library of the function `name` (any case).
    pub fn library_of(&self, name: &str) -> Option<&str> {
        self.by_function
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// Adds `lib` as `name` (its functions must be free).
    pub fn link(&mut self, name: String, lib: Library) {
        for f in lib.functions.keys() {
            self.by_function
                .insert(f.to_ascii_lowercase(), name.clone());
        }
        self.libraries.insert(name, lib);
    }

    /// Removes the library `name`, if there.
    pub fn unlink(&mut self, name: &str) -> Option<Library> {
        let lib = self.libraries.remove(name)?;
        for f in lib.functions.keys() {
            self.by_function.remove(&f.to_ascii_lowercase());
        }
        Some(lib)
    }

    /// Libraries and functions (`FUNCTION STATS`).
    pub fn counts(&self) -> (usize, usize) {
        (self.libraries.len(), self.by_function.len())
    }

    /// `FUNCTION DUMP`'s payload of every library.
    pub fn dump(&self) -> Vec<u8> {
        crate::rdb::dump_functions(self.libraries.values().map(|l| &l.code[..]))
    }
}

/// The server's libraries and where they are kept.
#[derive(Debug, Default)]
pub struct Functions {
    registry: Mutex<Registry>,
    file: Mutex<Option<PathBuf>>,
}

impl Functions {
    /// The registry, locked.
    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps the libraries in `path` from now on.
    pub fn set_file(&self, path: PathBuf) {
        *self.file.lock().unwrap_or_else(|e| e.into_inner()) = Some(path);
    }

    /// Writes the libraries to the functions file, if there is one.
    pub fn save(&self, registry: &Registry) -> Result<(), String> {
        let file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        match file.as_deref() {
            Some(path) => save_file(path, &registry.dump())
                .map_err(|e| format!("cannot write {}: {e}", path.display())),
            None => Ok(()),
        }
    }
}

/// Writes `bytes` to `path` so that a crash leaves the old file or the
/// new one, never a mix: a temporary file beside it, synced, renamed over
/// it, the directory synced.
pub fn save_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = dir.join(tmp_name);
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// The library codes in the functions file at `path` (none without a
/// file); the error says which file and why.
pub fn read_file(path: &Path) -> Result<Vec<Bytes>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(format!(
                "cannot read the functions file {}: {e}",
                path.display()
            ))
        }
    };
    crate::rdb::restore_functions(&bytes).map_err(|e| {
        format!(
            "the functions file {} is corrupt ({e}); move it away to start without its libraries",
            path.display()
        )
    })
}

/// A library's `#!<engine> name=<name>` line.
#[derive(Debug, PartialEq, Eq)]
pub struct Meta {
    /// The library's name.
    pub name: String,
    /// Where the code after the line starts (its line feed, kept so line
    /// numbers stay).
    pub body: usize,
}

/// Reads the first line of a library's code (`functionExtractLibMetaData`)
/// and checks its name and engine; errors in Redis's words, without code.
pub fn metadata(code: &[u8]) -> Result<Meta, String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    // Split as Redis splits it (`sdssplitargs`: quotes, escapes).
    let parts = crate::resp::parse::split_args(&code[..end])
        .filter(|p| !p.is_empty())
        .ok_or("Invalid library metadata")?;
    let parts: Vec<String> = parts
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let engine = parts[0].get(2..).unwrap_or_default();
    let mut name: Option<String> = None;
    for part in &parts[1..] {
        match part.get(..5) {
            Some(p) if p.eq_ignore_ascii_case("name=") => {
                if name.is_some() {
                    return Err(
                        "Invalid metadata value, name argument was given multiple times".into(),
                    );
                }
                name = Some(part[5..].to_string());
            }
            _ => return Err(format!("Invalid metadata value given: {part}")),
        }
    }
    let Some(name) = name else {
        return Err("Library name was not given".into());
    };
    if !valid_name(name.as_bytes()) {
        return Err(BAD_NAME.into());
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("Engine '{engine}' not found"));
    }
    Ok(Meta { name, body: end })
}

/// Letters, digits and `_`, at least one (`functionsVerifyName`).
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_reads_as_redis() {
        assert_eq!(
            metadata(b"#!lua name=lib1\nreturn"),
            Ok(Meta {
                name: "lib1".into(),
                body: 15
            })
        );
        assert_eq!(
            metadata(b"return 1"),
            Err("Missing library metadata".into())
        );
        assert_eq!(
            metadata(b"#!lua name=x"),
            Err("Invalid library metadata".into())
        );
        assert_eq!(
            metadata(b"#!lua\n"),
            Err("Library name was not given".into())
        );
        assert_eq!(
            metadata(b"#!lua name=a name=b\n"),
            Err("Invalid metadata value, name argument was given multiple times".into())
        );
        assert_eq!(
            metadata(b"#!lua foo=bar\n"),
            Err("Invalid metadata value given: foo=bar".into())
        );
        assert_eq!(metadata(b"#!lua name=a-b\n"), Err(BAD_NAME.into()));
        assert_eq!(
            metadata(b"#!lua name=\"quoted\"\n").map(|m| m.name),
            Ok("quoted".into())
        );
        assert_eq!(
            metadata(b"#!lua name=\"open\n"),
            Err("Invalid library metadata".into())
        );
        assert_eq!(
            metadata(b"#!js name=a\n"),
            Err("Engine 'js' not found".into())
        );
    }

    #[test]
    fn file_round_trips_and_reports_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("functions.rdb");
        assert!(read_file(&path).unwrap().is_empty());
        let code: &[u8] = b"#!lua name=a\nredis.register_function('f', function() return 1 end)";
        save_file(&path, &crate::rdb::dump_functions([code])).unwrap();
        assert_eq!(read_file(&path).unwrap(), vec![Bytes::from(code)]);
        std::fs::write(&path, b"garbage that is long enough").unwrap();
        let err = read_file(&path).unwrap_err();
        assert!(err.contains("is corrupt"), "{err}");
    }
}
