//! `Cache-Control` parsing (RFC 9111 §5.2) for requests and responses.
//!
//! The grammar is `#cache-directive`, each directive `token [ "=" ( token /
//! quoted-string ) ]`, names case-insensitive, spread over any number of
//! field lines. Parsing never fails: what cannot be understood is ignored
//! (§5.2.3), except that an argument-taking freshness directive with an
//! invalid argument makes the response stale (§4.2.1: "caches are
//! encouraged to consider responses that have invalid freshness information
//! … to be stale").

use hyper::header::{HeaderMap, CACHE_CONTROL, PRAGMA};

/// The largest delta-seconds a cache must represent (RFC 9111 §1.2.2):
/// bigger values and overflows are taken as 2^31.
pub const DELTA_SECONDS_MAX: u64 = 2_147_483_648;

/// One directive as written: lower-cased name, unquoted argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    /// Lower-cased directive name.
    pub name: String,
    /// The argument, unquoted (backslash escapes resolved), if any.
    pub value: Option<String>,
}

/// Splits every `Cache-Control` line of `headers` into directives, in order.
///
/// ```
/// use hyper::header::{HeaderMap, HeaderValue, CACHE_CONTROL};
/// use tiercache_http::policy::cache_control::directives;
/// let mut h = HeaderMap::new();
/// h.append(CACHE_CONTROL, HeaderValue::from_static("Max-Age=60, private=\"set-cookie, x-a\""));
/// h.append(CACHE_CONTROL, HeaderValue::from_static("no-transform"));
/// let d = directives(&h);
/// assert_eq!(d.len(), 3);
/// assert_eq!((d[0].name.as_str(), d[0].value.as_deref()), ("max-age", Some("60")));
/// assert_eq!(d[1].value.as_deref(), Some("set-cookie, x-a"));
/// ```
pub fn directives(headers: &HeaderMap) -> Vec<Directive> {
    let mut out = Vec::new();
    for line in headers.get_all(CACHE_CONTROL) {
        // Non-ASCII bytes cannot be part of a directive we understand.
        let Ok(text) = std::str::from_utf8(line.as_bytes()) else {
            continue;
        };
        parse_line(text, &mut out);
    }
    out
}

fn parse_line(text: &str, out: &mut Vec<Directive>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // skip separators
        while i < b.len() && (b[i] == b',' || b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i] != b'=' && b[i] != b',' {
            i += 1;
        }
        let name = text[start..i].trim().to_ascii_lowercase();
        let mut value = None;
        if i < b.len() && b[i] == b'=' {
            i += 1;
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            if i < b.len() && b[i] == b'"' {
                i += 1;
                let mut v = String::new();
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    // Safe: we only split on ASCII bytes.
                    let ch_len = utf8_len(b[i]);
                    v.push_str(&text[i..i + ch_len]);
                    i += ch_len;
                }
                i += 1; // closing quote (or end)
                while i < b.len() && b[i] != b',' {
                    i += 1;
                }
                value = Some(v);
            } else {
                let vs = i;
                while i < b.len() && b[i] != b',' {
                    i += 1;
                }
                value = Some(text[vs..i].trim().to_owned());
            }
        }
        if !name.is_empty() {
            out.push(Directive { name, value });
        }
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// Parses delta-seconds (§1.2.2): digits only. Overflow saturates at
/// [`DELTA_SECONDS_MAX`]; anything else is `None` (invalid).
pub fn delta_seconds(v: &str) -> Option<u64> {
    if v.is_empty() || !v.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(v.parse::<u64>().unwrap_or(u64::MAX).min(DELTA_SECONDS_MAX))
}

/// Splits a qualified directive's field-name list (`private="a, b"`).
fn field_list(v: &Option<String>) -> Vec<String> {
    v.as_deref()
        .map(|s| {
            s.split(',')
                .map(|f| f.trim().to_ascii_lowercase())
                .filter(|f| !f.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// A freshness argument: the first occurrence wins (§4.2.1); an invalid one
/// is `Some(0)`, i.e. stale.
fn first_seconds(slot: &mut Option<u64>, v: &Option<String>) {
    if slot.is_none() {
        *slot = Some(v.as_deref().and_then(delta_seconds).unwrap_or(0));
    }
}

/// The response directives a shared cache acts on (RFC 9111 §5.2.2, RFC 5861).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseDirectives {
    /// `max-age` (§5.2.2.1); invalid = 0.
    pub max_age: Option<u64>,
    /// `s-maxage` (§5.2.2.10); invalid = 0. Also implies `proxy-revalidate`.
    pub s_maxage: Option<u64>,
    /// `no-store` (§5.2.2.5).
    pub no_store: bool,
    /// `no-cache` (§5.2.2.4), qualified or not.
    pub no_cache: bool,
    /// The fields of a qualified `no-cache="…"` (empty when unqualified).
    pub no_cache_fields: Vec<String>,
    /// `private` (§5.2.2.7), qualified or not.
    pub private: bool,
    /// The fields of a qualified `private="…"` (empty when unqualified).
    pub private_fields: Vec<String>,
    /// `public` (§5.2.2.9).
    pub public: bool,
    /// `must-revalidate` (§5.2.2.2).
    pub must_revalidate: bool,
    /// `proxy-revalidate` (§5.2.2.8).
    pub proxy_revalidate: bool,
    /// `must-understand` (§5.2.2.3).
    pub must_understand: bool,
    /// `no-transform` (§5.2.2.6): this cache never transforms anyway.
    pub no_transform: bool,
    /// `stale-while-revalidate` (RFC 5861 §3), seconds.
    pub stale_while_revalidate: Option<u64>,
    /// `stale-if-error` (RFC 5861 §4), seconds.
    pub stale_if_error: Option<u64>,
}

impl ResponseDirectives {
    /// Parses the response's `Cache-Control` lines.
    ///
    /// ```
    /// use hyper::header::{HeaderMap, HeaderValue, CACHE_CONTROL};
    /// use tiercache_http::policy::ResponseDirectives;
    /// let mut h = HeaderMap::new();
    /// h.insert(CACHE_CONTROL, HeaderValue::from_static("public, max-age=60, s-maxage=abc"));
    /// let d = ResponseDirectives::parse(&h);
    /// assert!(d.public);
    /// assert_eq!(d.max_age, Some(60));
    /// assert_eq!(d.s_maxage, Some(0), "invalid freshness information means stale");
    /// ```
    pub fn parse(headers: &HeaderMap) -> Self {
        let mut d = ResponseDirectives::default();
        for Directive { name, value } in directives(headers) {
            match name.as_str() {
                "max-age" => first_seconds(&mut d.max_age, &value),
                "s-maxage" => first_seconds(&mut d.s_maxage, &value),
                "no-store" => d.no_store = true,
                "no-cache" => {
                    d.no_cache = true;
                    d.no_cache_fields.extend(field_list(&value));
                }
                "private" => {
                    d.private = true;
                    d.private_fields.extend(field_list(&value));
                }
                "public" => d.public = true,
                "must-revalidate" => d.must_revalidate = true,
                "proxy-revalidate" => d.proxy_revalidate = true,
                "must-understand" => d.must_understand = true,
                "no-transform" => d.no_transform = true,
                "stale-while-revalidate" if d.stale_while_revalidate.is_none() => {
                    d.stale_while_revalidate = value.as_deref().and_then(delta_seconds);
                }
                "stale-if-error" if d.stale_if_error.is_none() => {
                    d.stale_if_error = value.as_deref().and_then(delta_seconds);
                }
                _ => {}
            }
        }
        d
    }

    /// True when a stale copy must not be served without revalidation in a
    /// shared cache: `must-revalidate`, `proxy-revalidate`, or `s-maxage`
    /// (which implies `proxy-revalidate`, §5.2.2.10).
    pub fn forbids_stale(&self) -> bool {
        self.must_revalidate || self.proxy_revalidate || self.s_maxage.is_some()
    }

    /// True when every use of a stored copy needs revalidation: an
    /// unqualified `no-cache`. A qualified `no-cache="f"` is treated the
    /// same way — always permitted, since revalidating is never wrong, and
    /// simpler than serving the response without `f`.
    pub fn always_revalidate(&self) -> bool {
        self.no_cache
    }
}

/// The request directives a cache acts on (RFC 9111 §5.2.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestDirectives {
    /// `max-age=N` (§5.2.1.1): accept a response no older than N seconds.
    pub max_age: Option<u64>,
    /// `max-stale[=N]` (§5.2.1.2): `Some(None)` accepts any staleness.
    pub max_stale: Option<Option<u64>>,
    /// `min-fresh=N` (§5.2.1.3): fresh for at least N more seconds.
    pub min_fresh: Option<u64>,
    /// `no-cache` (§5.2.1.4), or `Pragma: no-cache` without `Cache-Control`
    /// (§5.4).
    pub no_cache: bool,
    /// `no-store` (§5.2.1.5): do not store the response.
    pub no_store: bool,
    /// `only-if-cached` (§5.2.1.7): answer from the cache or 504.
    pub only_if_cached: bool,
    /// `stale-if-error=N` in a request (RFC 5861 §4).
    pub stale_if_error: Option<u64>,
}

impl RequestDirectives {
    /// Parses the request's `Cache-Control` (and `Pragma`) lines.
    ///
    /// ```
    /// use hyper::header::{HeaderMap, HeaderValue, CACHE_CONTROL, PRAGMA};
    /// use tiercache_http::policy::RequestDirectives;
    /// let mut h = HeaderMap::new();
    /// h.insert(CACHE_CONTROL, HeaderValue::from_static("max-stale, min-fresh=5"));
    /// let d = RequestDirectives::parse(&h);
    /// assert_eq!(d.max_stale, Some(None));
    /// assert_eq!(d.min_fresh, Some(5));
    /// let mut p = HeaderMap::new();
    /// p.insert(PRAGMA, HeaderValue::from_static("no-cache"));
    /// assert!(RequestDirectives::parse(&p).no_cache);
    /// ```
    pub fn parse(headers: &HeaderMap) -> Self {
        let mut d = RequestDirectives::default();
        let list = directives(headers);
        for Directive { name, value } in &list {
            let secs = || value.as_deref().and_then(delta_seconds);
            match name.as_str() {
                // An invalid request max-age/min-fresh is ignored: the
                // request's constraint is unknown, the response's own
                // freshness still applies.
                "max-age" if d.max_age.is_none() => d.max_age = secs(),
                "min-fresh" if d.min_fresh.is_none() => d.min_fresh = secs(),
                "max-stale" if d.max_stale.is_none() => {
                    d.max_stale = match value {
                        None => Some(None),
                        Some(_) => secs().map(Some),
                    }
                }
                "no-cache" => d.no_cache = true,
                "no-store" => d.no_store = true,
                "only-if-cached" => d.only_if_cached = true,
                "stale-if-error" if d.stale_if_error.is_none() => d.stale_if_error = secs(),
                _ => {}
            }
        }
        if list.is_empty() && !headers.contains_key(CACHE_CONTROL) {
            let pragma_no_cache = headers.get_all(PRAGMA).iter().any(|v| {
                v.to_str()
                    .map(|s| {
                        s.split(',')
                            .any(|p| p.trim().eq_ignore_ascii_case("no-cache"))
                    })
                    .unwrap_or(false)
            });
            d.no_cache = pragma_no_cache;
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn cc(lines: &[&'static str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for l in lines {
            h.append(CACHE_CONTROL, HeaderValue::from_static(l));
        }
        h
    }

    #[test]
    fn rfc9111_5_2_directive_names_are_case_insensitive_and_lines_combine() {
        let d = ResponseDirectives::parse(&cc(&["MAX-AGE=10", "No-Store"]));
        assert_eq!(d.max_age, Some(10));
        assert!(d.no_store);
    }

    #[test]
    fn rfc9111_4_2_1_first_occurrence_of_a_duplicate_directive_wins() {
        let d = ResponseDirectives::parse(&cc(&["max-age=10, max-age=3600"]));
        assert_eq!(d.max_age, Some(10));
    }

    #[test]
    fn rfc9111_4_2_1_invalid_max_age_is_stale() {
        for v in [
            "max-age=abc",
            "max-age=-1",
            "max-age=",
            "max-age=1.5",
            "max-age",
        ] {
            let h = {
                let mut h = HeaderMap::new();
                h.insert(CACHE_CONTROL, HeaderValue::from_str(v).unwrap());
                h
            };
            assert_eq!(ResponseDirectives::parse(&h).max_age, Some(0), "{v}");
        }
    }

    #[test]
    fn rfc9111_1_2_2_delta_seconds_overflow_saturates_at_2_pow_31() {
        let d = ResponseDirectives::parse(&cc(&["max-age=99999999999999999999999"]));
        assert_eq!(d.max_age, Some(DELTA_SECONDS_MAX));
    }

    #[test]
    fn rfc9111_5_2_quoted_arguments_are_accepted() {
        let d = ResponseDirectives::parse(&cc(&["max-age=\"60\", private=\"Set-Cookie\""]));
        assert_eq!(d.max_age, Some(60));
        assert!(d.private);
        assert_eq!(d.private_fields, vec!["set-cookie"]);
    }

    #[test]
    fn rfc9111_5_2_2_10_s_maxage_implies_proxy_revalidate() {
        assert!(ResponseDirectives::parse(&cc(&["s-maxage=5"])).forbids_stale());
        assert!(ResponseDirectives::parse(&cc(&["must-revalidate"])).forbids_stale());
        assert!(ResponseDirectives::parse(&cc(&["proxy-revalidate"])).forbids_stale());
        assert!(!ResponseDirectives::parse(&cc(&["max-age=5"])).forbids_stale());
    }

    #[test]
    fn rfc9111_5_2_3_unknown_directives_are_ignored() {
        let d = ResponseDirectives::parse(&cc(&["foo=\"a,b\", max-age=7, bar"]));
        assert_eq!(d.max_age, Some(7));
    }

    #[test]
    fn rfc5861_stale_directives() {
        let d = ResponseDirectives::parse(&cc(&[
            "max-age=1, stale-while-revalidate=30, stale-if-error=600",
        ]));
        assert_eq!(d.stale_while_revalidate, Some(30));
        assert_eq!(d.stale_if_error, Some(600));
    }

    #[test]
    fn rfc9111_5_2_1_request_directives() {
        let d = RequestDirectives::parse(&cc(&[
            "max-age=0, max-stale=10, min-fresh=3, no-cache, no-store, only-if-cached",
        ]));
        assert_eq!(d.max_age, Some(0));
        assert_eq!(d.max_stale, Some(Some(10)));
        assert_eq!(d.min_fresh, Some(3));
        assert!(d.no_cache && d.no_store && d.only_if_cached);
    }

    #[test]
    fn rfc9111_5_4_pragma_no_cache_only_without_cache_control() {
        let mut h = HeaderMap::new();
        h.insert(PRAGMA, HeaderValue::from_static("no-cache"));
        assert!(RequestDirectives::parse(&h).no_cache);
        h.insert(CACHE_CONTROL, HeaderValue::from_static("max-age=5"));
        assert!(!RequestDirectives::parse(&h).no_cache);
    }
}
