//! `Vary` and secondary cache keys (RFC 9111 §4.1).
//!
//! A stored response with `Vary` is reusable only for a request whose
//! nominated header fields match those of the request that produced it.
//! Values are compared after normalisation (§4.1 allows it): field lines
//! combined with `, `, surrounding whitespace trimmed, runs of spaces and
//! tabs collapsed to one space. An absent field matches only an absent
//! field; `Vary: *` matches nothing.

use hyper::header::{HeaderMap, HeaderName, VARY};

/// What a response's `Vary` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VarySpec {
    /// No `Vary` (or an empty one): one response fits every request.
    None,
    /// `Vary: *`: no later request matches.
    Star,
    /// The nominated fields, lower-cased, de-duplicated, sorted (so that
    /// `Vary: a, b` and `Vary: B, A` select the same variants).
    Fields(Vec<HeaderName>),
}

impl VarySpec {
    /// Reads every `Vary` line of a response.
    ///
    /// ```
    /// use hyper::HeaderMap;
    /// use tiercache_http::policy::vary::VarySpec;
    /// let mut h = HeaderMap::new();
    /// h.append("vary", "Accept-Encoding, accept-language".parse().unwrap());
    /// h.append("vary", "accept-encoding".parse().unwrap());
    /// let VarySpec::Fields(f) = VarySpec::of(&h) else { panic!() };
    /// assert_eq!(f, ["accept-encoding", "accept-language"]);
    /// ```
    pub fn of(headers: &HeaderMap) -> VarySpec {
        let mut fields = Vec::new();
        for line in headers.get_all(VARY) {
            let Ok(s) = line.to_str() else { continue };
            for token in s.split(',') {
                let t = token.trim();
                if t == "*" {
                    return VarySpec::Star;
                }
                if let Ok(n) = HeaderName::from_bytes(t.as_bytes()) {
                    fields.push(n);
                }
            }
        }
        if fields.is_empty() {
            return VarySpec::None;
        }
        fields.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        fields.dedup();
        VarySpec::Fields(fields)
    }
}

/// The normalised value of a request field: lines joined with `, `,
/// trimmed, whitespace runs collapsed; `None` when absent.
///
/// ```
/// use hyper::HeaderMap;
/// use tiercache_http::policy::vary::normalized_value;
/// let mut h = HeaderMap::new();
/// h.append("accept", " text/html,\t  application/json ".parse().unwrap());
/// h.append("accept", "*/*".parse().unwrap());
/// assert_eq!(normalized_value(&h, "accept").as_deref(), Some(b"text/html, application/json, */*".as_slice()));
/// ```
pub fn normalized_value(headers: &HeaderMap, name: &str) -> Option<Vec<u8>> {
    let mut all = headers.get_all(name).iter().peekable();
    all.peek()?;
    let mut out = Vec::new();
    for (i, v) in all.enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        let mut space = false;
        for &c in v.as_bytes().trim_ascii() {
            if c == b' ' || c == b'\t' {
                space = true;
                continue;
            }
            if space {
                out.push(b' ');
                space = false;
            }
            out.push(c);
        }
    }
    Some(out)
}

/// The secondary key of a request for the nominated `fields`: each field's
/// name and normalised value, an absent field marked distinctly from an
/// empty one. Two requests select the same variant iff their secondary keys
/// are equal.
///
/// ```
/// use hyper::{HeaderMap, header::HeaderName};
/// use tiercache_http::policy::vary::secondary_key;
/// let f = [HeaderName::from_static("accept-language")];
/// let mut a = HeaderMap::new();
/// a.insert("accept-language", "en".parse().unwrap());
/// let mut b = HeaderMap::new();
/// b.insert("accept-language", " en ".parse().unwrap());
/// assert_eq!(secondary_key(&f, &a), secondary_key(&f, &b));
/// assert_ne!(secondary_key(&f, &a), secondary_key(&f, &HeaderMap::new()));
/// ```
pub fn secondary_key(fields: &[HeaderName], request: &HeaderMap) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        out.extend_from_slice(f.as_str().as_bytes());
        match normalized_value(request, f.as_str()) {
            Some(v) => {
                out.push(b'=');
                out.extend_from_slice(&v);
            }
            None => out.push(b'!'),
        }
        out.push(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn h(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.append(*k, HeaderValue::from_static(v));
        }
        m
    }

    #[test]
    fn rfc9111_4_1_vary_star_never_matches() {
        assert_eq!(VarySpec::of(&h(&[("vary", "accept, *")])), VarySpec::Star);
    }

    #[test]
    fn rfc9111_4_1_no_vary_means_one_variant() {
        assert_eq!(VarySpec::of(&h(&[])), VarySpec::None);
        assert_eq!(VarySpec::of(&h(&[("vary", " ")])), VarySpec::None);
    }

    #[test]
    fn rfc9111_4_1_field_names_are_case_insensitive() {
        assert_eq!(
            VarySpec::of(&h(&[("vary", "Accept, FOO")])),
            VarySpec::of(&h(&[("vary", "foo,accept")]))
        );
    }

    #[test]
    fn rfc9111_4_1_absent_field_matches_only_absent() {
        let f = [HeaderName::from_static("x-a")];
        let absent = secondary_key(&f, &h(&[]));
        let empty = secondary_key(&f, &h(&[("x-a", "")]));
        assert_ne!(absent, empty);
        assert_eq!(absent, secondary_key(&f, &h(&[("x-b", "1")])));
    }

    #[test]
    fn rfc9111_4_1_whitespace_and_combined_lines_are_normalised() {
        let f = [HeaderName::from_static("accept-encoding")];
        let one = secondary_key(&f, &h(&[("accept-encoding", "gzip, br")]));
        let two = secondary_key(
            &f,
            &h(&[("accept-encoding", "gzip"), ("accept-encoding", "br")]),
        );
        let spaced = secondary_key(&f, &h(&[("accept-encoding", "  gzip,    br\t")]));
        assert_eq!(one, two);
        assert_eq!(one, spaced);
        assert_ne!(
            one,
            secondary_key(&f, &h(&[("accept-encoding", "br, gzip")]))
        );
    }

    #[test]
    fn rfc9111_4_1_values_differ_means_no_match() {
        let f = [HeaderName::from_static("accept-language")];
        assert_ne!(
            secondary_key(&f, &h(&[("accept-language", "en")])),
            secondary_key(&f, &h(&[("accept-language", "fr")]))
        );
    }
}
