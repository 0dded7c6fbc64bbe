//! [`ConfigError`] and the machinery that turns byte offsets into
//! `file:line:column: field.path: message`.

use std::fmt;
use std::ops::Range;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// Any configuration problem: unreadable file, TOML syntax error, unknown key,
/// wrong type, bad value, unknown store name, store cycle, ...
///
/// `Display` renders `FILE:LINE:COLUMN: FIELD: MESSAGE`, e.g.
/// `tiercache.toml:12:11: store.shared.primary: unknown store 'redsi' (known: main, shared)`.
/// Line and column are 1-based; they are omitted when unknown (e.g. the file
/// could not be read), and so is the field when the error is not about one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    file: String,
    line: Option<usize>,
    column: Option<usize>,
    field: String,
    message: String,
}

impl ConfigError {
    /// An error without a location in the file.
    pub(crate) fn new(file: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_owned(),
            line: None,
            column: None,
            field: field.into(),
            message: message.into(),
        }
    }

    /// An error located at byte offset `offset` of `text` (if any).
    pub(crate) fn at(
        file: &str,
        text: &str,
        offset: Option<usize>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        let mut e = Self::new(file, field, message);
        if let Some(off) = offset {
            let (line, col) = line_col(text, off);
            e.line = Some(line);
            e.column = Some(col);
        }
        e
    }

    /// The file name given to [`crate::parse`] or the path given to [`crate::load`].
    pub fn file(&self) -> &str {
        &self.file
    }

    /// 1-based line of the fault, when known.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// 1-based column (in characters) of the fault, when known.
    pub fn column(&self) -> Option<usize> {
        self.column
    }

    /// Dotted path of the field at fault (`store.shared.primary`,
    /// `namespace."session:".tiers[0]`), empty when not about one field.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong, without the location.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// 1-based (line, column) of byte offset `off` in `text`.
pub(crate) fn line_col(text: &str, off: usize) -> (usize, usize) {
    let mut off = off.min(text.len());
    while !text.is_char_boundary(off) {
        off -= 1;
    }
    let before = &text[..off];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..off].chars().count() + 1)
}

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// Renders a path: bare keys joined by `.`, other keys quoted, indexes as `[i]`.
pub(crate) fn render_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                let bare = !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if bare {
                    out.push_str(k);
                } else {
                    out.push_str(&format!("{k:?}"));
                }
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

const SPANNED_NAME: &str = "$__serde_spanned_private_Spanned";
const START_FIELD: &str = "$__serde_spanned_private_start";
const END_FIELD: &str = "$__serde_spanned_private_end";
const VALUE_FIELD: &str = "$__serde_spanned_private_value";
const SPANNED_FIELDS: &[&str] = &[START_FIELD, END_FIELD, VALUE_FIELD];

/// The shape of a TOML document with the byte span of every value toml knows
/// one for (implicit tables have none). Used only to report errors.
#[derive(Debug, Default)]
struct Node {
    span: Option<Range<usize>>,
    kind: Kind,
}

#[derive(Debug, Default)]
enum Kind {
    #[default]
    Leaf,
    Table(Vec<(String, Node)>),
    Array(Vec<Node>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Ask for toml's span handshake; values without a span come back plain.
        d.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, NodeVisitor)
    }
}

/// The value inside a span handshake: deserialized without asking again.
struct Inner(Node);

impl<'de> Deserialize<'de> for Inner {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor).map(Inner)
    }
}

struct NodeVisitor;

macro_rules! leaf {
    ($($f:ident: $t:ty),*) => {$(
        fn $f<E: de::Error>(self, _: $t) -> Result<Node, E> { Ok(Node::default()) }
    )*};
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }
    leaf!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(n) = a.next_element::<Node>()? {
            items.push(n);
        }
        Ok(Node {
            span: None,
            kind: Kind::Array(items),
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        let mut start = None;
        let mut end = None;
        while let Some(k) = a.next_key::<String>()? {
            match k.as_str() {
                START_FIELD => start = Some(a.next_value::<usize>()?),
                END_FIELD => end = Some(a.next_value::<usize>()?),
                VALUE_FIELD => {
                    let mut n = a.next_value::<Inner>()?.0;
                    if let (Some(s), Some(e)) = (start, end) {
                        n.span = Some(s..e);
                    }
                    return Ok(n);
                }
                _ => {
                    let v = a.next_value::<Node>()?;
                    entries.push((k, v));
                }
            }
        }
        Ok(Node {
            span: None,
            kind: Kind::Table(entries),
        })
    }
}

/// Finds field paths for byte offsets and spans for field paths in one document.
pub(crate) struct Locator<'a> {
    text: &'a str,
    root: Option<Node>,
}

impl<'a> Locator<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let root = toml::from_str::<Node>(text).ok();
        Locator { text, root }
    }

    /// The path of the innermost value whose span contains `off`; failing
    /// that (the offset is on a key), the first value after it on its line.
    pub(crate) fn path_at(&self, off: usize) -> String {
        let Some(root) = &self.root else {
            return String::new();
        };
        // A: the innermost value containing the offset.
        let mut inner: Option<(usize, Vec<Seg>)> = None;
        let mut path = Vec::new();
        walk(root, &mut path, &mut |n, p| {
            if let Some(s) = &n.span {
                if s.start <= off && off < s.end.max(s.start + 1) && !p.is_empty() {
                    let better = match &inner {
                        None => true,
                        Some((_, bp)) => p.len() >= bp.len(),
                    };
                    if better {
                        inner = Some((s.start, p.to_vec()));
                    }
                }
            }
        });
        if let Some((start, p)) = &inner {
            if *start == off {
                return render_path(p);
            }
        }
        // B: the offset is on a key: the first value after it on its line.
        let line_end = self.text[off.min(self.text.len())..]
            .find('\n')
            .map_or(self.text.len(), |i| off + i);
        let mut next: Option<(usize, Vec<Seg>)> = None;
        walk(root, &mut path, &mut |n, p| {
            if let Some(s) = &n.span {
                if s.start > off && s.start <= line_end && !p.is_empty() {
                    let better = match &next {
                        None => true,
                        Some((bs, _)) => s.start < *bs,
                    };
                    if better {
                        next = Some((s.start, p.to_vec()));
                    }
                }
            }
        });
        let best = match (inner, next) {
            (Some(a), Some(b)) if b.1.len() > a.1.len() && b.1.starts_with(&a.1) => Some(b),
            (Some(a), _) => Some(a),
            (None, b) => b,
        };
        best.map(|(_, p)| render_path(&p)).unwrap_or_default()
    }

    /// Start offset of the value at `path`, or of its nearest located ancestor.
    pub(crate) fn offset_of(&self, path: &[Seg]) -> Option<usize> {
        let mut node = self.root.as_ref()?;
        let mut found = node.span.as_ref().map(|s| s.start);
        for seg in path {
            let next = match (seg, &node.kind) {
                (Seg::Key(k), Kind::Table(entries)) => {
                    entries.iter().find(|(ek, _)| ek == k).map(|(_, n)| n)
                }
                (Seg::Index(i), Kind::Array(items)) => items.get(*i),
                _ => None,
            };
            match next {
                Some(n) => {
                    node = n;
                    if let Some(s) = &n.span {
                        found = Some(s.start);
                    }
                }
                None => break,
            }
        }
        found
    }
}

fn walk(node: &Node, path: &mut Vec<Seg>, f: &mut dyn FnMut(&Node, &[Seg])) {
    f(node, path);
    match &node.kind {
        Kind::Leaf => {}
        Kind::Table(entries) => {
            for (k, n) in entries {
                path.push(Seg::Key(k.clone()));
                walk(n, path, f);
                path.pop();
            }
        }
        Kind::Array(items) => {
            for (i, n) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                walk(n, path, f);
                path.pop();
            }
        }
    }
}

/// Converts toml's deserialization error into a [`ConfigError`].
pub(crate) fn from_toml(file: &str, text: &str, err: &toml::de::Error) -> ConfigError {
    let message = err
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let off = err.span().map(|s| s.start);
    let field = off
        .map(|o| Locator::new(text).path_at(o))
        .unwrap_or_default();
    ConfigError::at(file, text, off, field, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let t = "a = 1\nbé = 2\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 6), (2, 1));
        assert_eq!(line_col(t, 10), (2, 4));
    }

    #[test]
    fn locator_finds_paths_and_offsets() {
        let t = "[server]\nx = { y = [1, {z = 2}] }\n[namespace.\"s:\"]\nq = 1\n";
        let loc = Locator::new(t);
        let z = t.find("2}").unwrap();
        assert_eq!(loc.path_at(z), "server.x.y[1].z");
        let q = t.find("q =").unwrap();
        assert_eq!(loc.path_at(q), "namespace.\"s:\".q");
        let p = [
            Seg::Key("namespace".into()),
            Seg::Key("s:".into()),
            Seg::Key("q".into()),
        ];
        assert_eq!(loc.offset_of(&p), Some(q + 4));
    }
}
