//! Redis's glob matching (`stringmatchlen` in `util.c`), for `KEYS`,
//! `SCAN ... MATCH` and `CONFIG GET`: `*`, `?`, `[abc]`, `[^abc]`, `[a-z]`
//! and `\` escapes, with Redis's quirks kept (a `[` class left open runs
//! to the end of the pattern, `[a-]` is a range up to `]`, byte ranges
//! compare as signed `char`s, and more than 1000 nested `*` never match).

/// True when `s` matches `pattern`; `nocase` folds ASCII case.
///
/// ```
/// use tiercache_server::glob::glob_match;
/// assert!(glob_match(b"user:*", b"user:42", false));
/// assert!(glob_match(b"h[^e]llo", b"hallo", false));
/// assert!(!glob_match(b"h[^e]llo", b"hello", false));
/// assert!(glob_match(b"a\\*b", b"a*b", false));
/// ```
pub fn glob_match(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    matches(pattern, s, nocase, &mut skip_longer, 0)
}

/// The bytes every match of `pattern` starts with (up to the first
/// special character): lets `KEYS user:*` read only the `user:` key range.
pub fn literal_prefix(pattern: &[u8]) -> &[u8] {
    let end = pattern
        .iter()
        .position(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'))
        .unwrap_or(pattern.len());
    &pattern[..end]
}

fn lower(b: u8, nocase: bool) -> u8 {
    if nocase {
        b.to_ascii_lowercase()
    } else {
        b
    }
}

fn matches(p: &[u8], s: &[u8], nocase: bool, skip_longer: &mut bool, nesting: u32) -> bool {
    if nesting > 1000 {
        return false;
    }
    let (mut pi, mut si) = (0usize, 0usize);
    while pi < p.len() && si < s.len() {
        match p[pi] {
            b'*' => {
                while pi + 1 < p.len() && p[pi + 1] == b'*' {
                    pi += 1;
                }
                if pi + 1 == p.len() {
                    return true;
                }
                while si < s.len() {
                    if matches(&p[pi + 1..], &s[si..], nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    si += 1;
                }
                *skip_longer = true;
                return false;
            }
            b'?' => si += 1,
            b'[' => {
                pi += 1;
                let not = p.get(pi) == Some(&b'^');
                if not {
                    pi += 1;
                }
                let c = s[si];
                let mut matched = false;
                loop {
                    if pi >= p.len() {
                        // Unterminated class: step back so the outer
                        // advance lands on the end of the pattern.
                        pi -= 1;
                        break;
                    } else if p[pi] == b'\\' && p.len() - pi >= 2 {
                        pi += 1;
                        if p[pi] == c {
                            matched = true;
                        }
                    } else if p[pi] == b']' {
                        break;
                    } else if p.len() - pi >= 3 && p[pi + 1] == b'-' {
                        // C `char` is signed: bytes >= 0x80 sort first.
                        let signed = |b: u8| lower(b, nocase) as i8 as i32;
                        let (mut start, mut end) = (signed(p[pi]), signed(p[pi + 2]));
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        let ch = signed(c);
                        pi += 2;
                        if ch >= start && ch <= end {
                            matched = true;
                        }
                    } else if lower(p[pi], nocase) == lower(c, nocase) {
                        matched = true;
                    }
                    pi += 1;
                }
                if matched == not {
                    return false;
                }
                si += 1;
            }
            b => {
                let b = if b == b'\\' && p.len() - pi >= 2 {
                    pi += 1;
                    p[pi]
                } else {
                    b
                };
                if lower(b, nocase) != lower(s[si], nocase) {
                    return false;
                }
                si += 1;
            }
        }
        pi += 1;
        if si == s.len() {
            while pi < p.len() && p[pi] == b'*' {
                pi += 1;
            }
            break;
        }
    }
    pi == p.len() && si == s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_glob_cases() {
        let yes =
            |p: &str, s: &str| assert!(glob_match(p.as_bytes(), s.as_bytes(), false), "{p} ~ {s}");
        let no = |p: &str, s: &str| {
            assert!(!glob_match(p.as_bytes(), s.as_bytes(), false), "{p} !~ {s}")
        };
        no("*", ""); // KEYS * special-cases "all keys", the matcher does not
        yes("*", "anything");
        yes("a*", "a");
        yes("a*b*c", "aXXbYYc");
        no("a*b*c", "aXXbYY");
        yes("h?llo", "hello");
        no("h?llo", "hllo");
        yes("h[ae]llo", "hallo");
        no("h[ae]llo", "hillo");
        yes("h[^e]llo", "hallo");
        no("h[^e]llo", "hello");
        yes("h[a-b]llo", "hbllo");
        yes("h[b-a]llo", "hallo"); // reversed range
        no("h[a-b]llo", "hcllo");
        yes("a[a-]", "a]"); // Redis: `-` before `]` still makes a range
        yes("a\\*", "a*");
        no("a\\*", "ab");
        yes("[\\]]", "]");
        yes("a[bc", "ab"); // unterminated class runs to the end
        no("", "a");
        yes("", "");
        yes("**a", "ba");
        no("a", "");
        yes("a**", "a");
        assert!(glob_match(b"MAXMEM?RY", b"maxmemory", true));
        assert!(glob_match(b"[A-Z]", b"q", true));
        let long = "a*".repeat(1100) + "b";
        assert!(!glob_match(long.as_bytes(), &[b'a'; 1200], false));
    }

    #[test]
    fn prefixes() {
        assert_eq!(literal_prefix(b"user:*"), b"user:");
        assert_eq!(literal_prefix(b"a?c"), b"a");
        assert_eq!(literal_prefix(b"plain"), b"plain");
        assert_eq!(literal_prefix(b"\\*x"), b"");
    }
}
