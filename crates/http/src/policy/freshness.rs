//! Freshness (RFC 9111 §4.2): how long a response stays fresh, how old a
//! stored response is, and whether a stored response may answer a request.
//!
//! Times are Unix seconds unless a name says `_ms`. Everything here is pure
//! arithmetic over header values and clocks passed in.

use super::cache_control::{
    delta_seconds, RequestDirectives, ResponseDirectives, DELTA_SECONDS_MAX,
};
use hyper::header::{HeaderMap, AGE, EXPIRES, LAST_MODIFIED};
use hyper::StatusCode;
use std::time::UNIX_EPOCH;

/// Heuristic freshness never exceeds a day, whatever `Last-Modified` says
/// (RFC 9111 §4.2.2 leaves the bound to the cache; a day is the point past
/// which RFC 7234 demanded a warning).
pub const HEURISTIC_CAP_SECS: u64 = 86_400;

/// Parses an HTTP-date (IMF-fixdate, RFC 850 or asctime, RFC 9110 §5.6.7)
/// into Unix seconds; `None` when invalid.
///
/// ```
/// use tiercache_http::policy::freshness::parse_http_date;
/// assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:01:40 GMT"), Some(100));
/// assert_eq!(parse_http_date("Thursday, 01-Jan-70 00:01:40 GMT"), Some(100));
/// assert_eq!(parse_http_date("Thu Jan  1 00:01:40 1970"), Some(100));
/// assert_eq!(parse_http_date("0"), None);
/// ```
pub fn parse_http_date(s: &str) -> Option<u64> {
    let t = httpdate::parse_http_date(s.trim()).ok()?;
    t.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// Formats Unix seconds as an IMF-fixdate.
pub fn fmt_http_date(secs: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// The value of a singleton date header: `None` when absent, invalid or
/// repeated with different values.
pub fn header_date(headers: &HeaderMap, name: &hyper::header::HeaderName) -> Option<u64> {
    let mut all = headers.get_all(name).iter();
    let first = all.next()?;
    if all.any(|v| v != first) {
        return None;
    }
    parse_http_date(first.to_str().ok()?)
}

/// The `Age` header's value (RFC 9111 §5.1): the first member of the list;
/// an invalid value is ignored (0).
pub fn age_value(headers: &HeaderMap) -> u64 {
    headers
        .get(AGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| delta_seconds(s.split(',').next().unwrap_or("").trim()))
        .unwrap_or(0)
}

/// Status codes heuristically cacheable by default (RFC 9110 §15.1).
pub fn heuristically_cacheable(status: StatusCode) -> bool {
    matches!(
        status.as_u16(),
        200 | 203 | 204 | 206 | 300 | 301 | 308 | 404 | 405 | 410 | 414 | 501
    )
}

/// Where a freshness lifetime came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreshnessSource {
    /// `s-maxage` (§4.2.1, first for a shared cache).
    SMaxage,
    /// `max-age`.
    MaxAge,
    /// `Expires` minus `Date`.
    Expires,
    /// 10% of `Date` minus `Last-Modified` (§4.2.2).
    Heuristic,
}

/// The freshness lifetime of a response in a shared cache (RFC 9111
/// §4.2.1), in seconds, or `None` when it carries no freshness information
/// and no heuristic applies.
///
/// - `s-maxage`, else `max-age`, else `Expires` − `Date`. An invalid or
///   repeated-and-conflicting `Expires` (or an invalid `Date` beside it) is
///   a lifetime of 0: stale.
/// - Heuristic (§4.2.2) only without explicit expiration, only for a status
///   code cacheable by default or a `public` response, and only with a
///   `Last-Modified` to reason from: 10% of its age, at most
///   [`HEURISTIC_CAP_SECS`].
///
/// `date` is the response's `Date` (the receipt time when it has none,
/// RFC 9110 §6.6.1).
pub fn freshness_lifetime(
    status: StatusCode,
    headers: &HeaderMap,
    cc: &ResponseDirectives,
    date: u64,
) -> Option<(u64, FreshnessSource)> {
    if let Some(s) = cc.s_maxage {
        return Some((s, FreshnessSource::SMaxage));
    }
    if let Some(m) = cc.max_age {
        return Some((m, FreshnessSource::MaxAge));
    }
    if headers.contains_key(EXPIRES) {
        let lifetime = header_date(headers, &EXPIRES)
            .map(|e| e.saturating_sub(date).min(DELTA_SECONDS_MAX))
            .unwrap_or(0);
        return Some((lifetime, FreshnessSource::Expires));
    }
    if !(heuristically_cacheable(status) || cc.public) {
        return None;
    }
    let lm = header_date(headers, &LAST_MODIFIED)?;
    Some((
        (date.saturating_sub(lm) / 10).min(HEURISTIC_CAP_SECS),
        FreshnessSource::Heuristic,
    ))
}

/// The clocks a stored response needs for its age (RFC 9111 §4.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgeClock {
    /// `corrected_initial_age`, seconds: how old the response was when
    /// received.
    pub corrected_initial_age: u64,
    /// When the response was received, Unix milliseconds.
    pub response_time_ms: u64,
}

impl AgeClock {
    /// `corrected_initial_age` per §4.2.3:
    ///
    /// ```text
    /// apparent_age = max(0, response_time - date_value)
    /// response_delay = response_time - request_time
    /// corrected_age_value = age_value + response_delay
    /// corrected_initial_age = max(apparent_age, corrected_age_value)
    /// ```
    ///
    /// ```
    /// use tiercache_http::policy::freshness::AgeClock;
    /// // Sent at t=1000 s with Age 30, request at 1001.5 s, response at 1002 s.
    /// let c = AgeClock::new(1_000, 30, 1_001_500, 1_002_000);
    /// assert_eq!(c.corrected_initial_age, 30); // 30 + 0.5 s, floored
    /// assert_eq!(c.current_age(1_012_000), 40);
    /// ```
    pub fn new(
        date_value: u64,
        age_value: u64,
        request_time_ms: u64,
        response_time_ms: u64,
    ) -> Self {
        let response_secs = response_time_ms / 1000;
        let apparent_age = response_secs.saturating_sub(date_value);
        let response_delay_ms = response_time_ms.saturating_sub(request_time_ms);
        let corrected_age_value = age_value.saturating_add(response_delay_ms / 1000);
        AgeClock {
            corrected_initial_age: apparent_age.max(corrected_age_value),
            response_time_ms,
        }
    }

    /// `current_age = corrected_initial_age + resident_time`, seconds.
    pub fn current_age(&self, now_ms: u64) -> u64 {
        self.corrected_initial_age
            .saturating_add(now_ms.saturating_sub(self.response_time_ms) / 1000)
    }
}

/// Whether a stored response may answer a request, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Fresh and acceptable to the request: serve it (§4.2).
    Fresh,
    /// Stale, but the client accepts it (`max-stale`, §5.2.1.2): serve it.
    StaleAccepted,
    /// Stale within `stale-while-revalidate` (RFC 5861 §3): serve it and
    /// revalidate in the background.
    StaleWhileRevalidate,
    /// Must be validated with the origin first (§4.3).
    Validate,
}

/// Decides [`Verdict`] for a stored response of freshness `lifetime` and
/// current `age` (seconds) against a request's directives.
///
/// ```
/// use tiercache_http::policy::{freshness::{evaluate, Verdict}, RequestDirectives, ResponseDirectives};
/// let resp = ResponseDirectives { max_age: Some(60), ..Default::default() };
/// let req = RequestDirectives::default();
/// assert_eq!(evaluate(60, 10, &resp, &req), Verdict::Fresh);
/// assert_eq!(evaluate(60, 60, &resp, &req), Verdict::Validate);
/// ```
pub fn evaluate(
    lifetime: u64,
    age: u64,
    resp: &ResponseDirectives,
    req: &RequestDirectives,
) -> Verdict {
    if resp.always_revalidate() || req.no_cache {
        return Verdict::Validate;
    }
    if req.max_age.is_some_and(|m| age > m) {
        return Verdict::Validate;
    }
    if let Some(min) = req.min_fresh {
        if lifetime.saturating_sub(age) < min {
            return Verdict::Validate;
        }
    }
    if lifetime > age {
        return Verdict::Fresh;
    }
    let staleness = age - lifetime;
    if resp.forbids_stale() {
        return Verdict::Validate;
    }
    match req.max_stale {
        Some(None) => return Verdict::StaleAccepted,
        Some(Some(n)) if staleness <= n => return Verdict::StaleAccepted,
        _ => {}
    }
    if resp.stale_while_revalidate.is_some_and(|w| staleness <= w) {
        return Verdict::StaleWhileRevalidate;
    }
    Verdict::Validate
}

/// Whether a stored response may be served stale because the origin
/// failed (RFC 5861 §4, from the response's or the request's
/// `stale-if-error`, or the request's `max-stale`). Never when a directive
/// forbids stale use (`must-revalidate`, `proxy-revalidate`, `s-maxage`,
/// `no-cache`: RFC 9111 §4.2.4).
pub fn stale_if_error_allowed(
    lifetime: u64,
    age: u64,
    resp: &ResponseDirectives,
    req: &RequestDirectives,
) -> bool {
    if resp.forbids_stale() || resp.always_revalidate() {
        return false;
    }
    let staleness = age.saturating_sub(lifetime);
    let window = |w: Option<u64>| w.is_some_and(|w| staleness <= w);
    window(resp.stale_if_error)
        || window(req.stale_if_error)
        || match req.max_stale {
            Some(None) => true,
            Some(Some(n)) => staleness <= n,
            None => false,
        }
}

/// How long after it stops being fresh a stored response can still be
/// used without the origin (the larger stale window), seconds.
pub fn stale_window(resp: &ResponseDirectives) -> u64 {
    if resp.forbids_stale() {
        return 0;
    }
    resp.stale_while_revalidate
        .unwrap_or(0)
        .max(resp.stale_if_error.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::{HeaderValue, CACHE_CONTROL};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn lifetime(status: u16, pairs: &[(&'static str, &'static str)], date: u64) -> Option<u64> {
        let h = headers(pairs);
        let cc = ResponseDirectives::parse(&h);
        freshness_lifetime(StatusCode::from_u16(status).unwrap(), &h, &cc, date).map(|x| x.0)
    }

    const D0: &str = "Thu, 01 Jan 1970 00:16:40 GMT"; // 1000 s
    const D1: &str = "Thu, 01 Jan 1970 00:18:20 GMT"; // 1100 s

    #[test]
    fn rfc9111_4_2_1_s_maxage_beats_max_age_beats_expires() {
        assert_eq!(
            lifetime(
                200,
                &[("cache-control", "max-age=5, s-maxage=7"), ("expires", D1)],
                1000
            ),
            Some(7)
        );
        assert_eq!(
            lifetime(
                200,
                &[("cache-control", "max-age=5"), ("expires", D1)],
                1000
            ),
            Some(5)
        );
        assert_eq!(lifetime(200, &[("expires", D1)], 1000), Some(100));
    }

    #[test]
    fn rfc9111_5_3_invalid_expires_means_already_expired() {
        assert_eq!(lifetime(200, &[("expires", "0")], 1000), Some(0));
        assert_eq!(lifetime(200, &[("expires", "next tuesday")], 1000), Some(0));
        assert_eq!(
            lifetime(200, &[("expires", D0), ("expires", D1)], 900),
            Some(0)
        );
    }

    #[test]
    fn rfc9111_4_2_1_expires_in_the_past_is_stale() {
        assert_eq!(lifetime(200, &[("expires", D0)], 1100), Some(0));
    }

    #[test]
    fn rfc9111_4_2_2_heuristic_needs_last_modified_and_a_cacheable_status() {
        // 1000 s between Last-Modified and Date: 10% = 100 s.
        assert_eq!(lifetime(200, &[("last-modified", D0)], 2000), Some(100));
        assert_eq!(lifetime(404, &[("last-modified", D0)], 2000), Some(100));
        // Not cacheable by default (RFC 9110 §15.1) without `public`.
        assert_eq!(lifetime(201, &[("last-modified", D0)], 2000), None);
        assert_eq!(
            lifetime(
                201,
                &[("last-modified", D0), ("cache-control", "public")],
                2000
            ),
            Some(100)
        );
        // Without any freshness information or Last-Modified: none.
        assert_eq!(lifetime(200, &[], 2000), None);
        // Capped.
        assert_eq!(
            lifetime(200, &[("last-modified", D0)], 100_000_000),
            Some(HEURISTIC_CAP_SECS)
        );
    }

    #[test]
    fn rfc9111_4_2_3_age_calculation() {
        // Date 1000 s, received at 1010 s (apparent age 10), Age: 3, 2 s
        // response delay: corrected age value 5; the larger wins.
        let c = AgeClock::new(1000, 3, 1_008_000, 1_010_000);
        assert_eq!(c.corrected_initial_age, 10);
        // Age header larger than the apparent age.
        let c = AgeClock::new(1000, 50, 1_008_000, 1_010_000);
        assert_eq!(c.corrected_initial_age, 52);
        // A Date in the future (clock skew) is not a negative age.
        let c = AgeClock::new(5000, 0, 1_010_000, 1_010_000);
        assert_eq!(c.corrected_initial_age, 0);
        assert_eq!(c.current_age(1_017_999), 7);
    }

    #[test]
    fn rfc9111_5_1_age_uses_first_member_and_ignores_invalid() {
        assert_eq!(age_value(&headers(&[("age", "30, 40")])), 30);
        assert_eq!(age_value(&headers(&[("age", "abc")])), 0);
        assert_eq!(age_value(&headers(&[("age", "-5")])), 0);
        assert_eq!(age_value(&headers(&[])), 0);
    }

    fn resp(cc: &'static str) -> ResponseDirectives {
        ResponseDirectives::parse(&headers(&[("cache-control", cc)]))
    }

    fn req(cc: &'static str) -> RequestDirectives {
        let mut h = HeaderMap::new();
        h.insert(CACHE_CONTROL, HeaderValue::from_static(cc));
        RequestDirectives::parse(&h)
    }

    #[test]
    fn rfc9111_4_2_fresh_while_lifetime_exceeds_age() {
        assert_eq!(
            evaluate(10, 9, &resp("max-age=10"), &req("")),
            Verdict::Fresh
        );
        assert_eq!(
            evaluate(10, 10, &resp("max-age=10"), &req("")),
            Verdict::Validate
        );
    }

    #[test]
    fn rfc9111_5_2_2_4_response_no_cache_always_validates() {
        assert_eq!(
            evaluate(100, 0, &resp("max-age=100, no-cache"), &req("")),
            Verdict::Validate
        );
    }

    #[test]
    fn rfc9111_5_2_1_4_request_no_cache_validates() {
        assert_eq!(
            evaluate(100, 0, &resp("max-age=100"), &req("no-cache")),
            Verdict::Validate
        );
    }

    #[test]
    fn rfc9111_5_2_1_1_request_max_age() {
        assert_eq!(
            evaluate(100, 20, &resp("max-age=100"), &req("max-age=10")),
            Verdict::Validate
        );
        assert_eq!(
            evaluate(100, 5, &resp("max-age=100"), &req("max-age=10")),
            Verdict::Fresh
        );
        assert_eq!(
            evaluate(100, 0, &resp("max-age=100"), &req("max-age=0")),
            Verdict::Fresh
        );
    }

    #[test]
    fn rfc9111_5_2_1_3_request_min_fresh() {
        assert_eq!(
            evaluate(100, 95, &resp("max-age=100"), &req("min-fresh=10")),
            Verdict::Validate
        );
        assert_eq!(
            evaluate(100, 80, &resp("max-age=100"), &req("min-fresh=10")),
            Verdict::Fresh
        );
    }

    #[test]
    fn rfc9111_5_2_1_2_request_max_stale() {
        assert_eq!(
            evaluate(10, 15, &resp("max-age=10"), &req("max-stale=10")),
            Verdict::StaleAccepted
        );
        assert_eq!(
            evaluate(10, 25, &resp("max-age=10"), &req("max-stale=10")),
            Verdict::Validate
        );
        assert_eq!(
            evaluate(10, 9999, &resp("max-age=10"), &req("max-stale")),
            Verdict::StaleAccepted
        );
    }

    #[test]
    fn rfc9111_5_2_2_2_must_revalidate_beats_max_stale() {
        for cc in [
            "max-age=10, must-revalidate",
            "max-age=10, proxy-revalidate",
            "s-maxage=10",
        ] {
            assert_eq!(
                evaluate(10, 15, &resp(cc), &req("max-stale")),
                Verdict::Validate,
                "{cc}"
            );
            assert!(!stale_if_error_allowed(10, 15, &resp(cc), &req("")), "{cc}");
        }
    }

    #[test]
    fn rfc5861_3_stale_while_revalidate_window() {
        let r = resp("max-age=10, stale-while-revalidate=20");
        assert_eq!(
            evaluate(10, 25, &r, &req("")),
            Verdict::StaleWhileRevalidate
        );
        assert_eq!(evaluate(10, 31, &r, &req("")), Verdict::Validate);
    }

    #[test]
    fn rfc5861_4_stale_if_error_window() {
        let r = resp("max-age=10, stale-if-error=20");
        assert!(stale_if_error_allowed(10, 25, &r, &req("")));
        assert!(!stale_if_error_allowed(10, 31, &r, &req("")));
        // From the request.
        assert!(stale_if_error_allowed(
            10,
            25,
            &resp("max-age=10"),
            &req("stale-if-error=60")
        ));
        assert!(!stale_if_error_allowed(
            10,
            25,
            &resp("max-age=10"),
            &req("")
        ));
    }

    #[test]
    fn stale_window_is_the_larger_rfc5861_window() {
        assert_eq!(
            stale_window(&resp(
                "max-age=1, stale-while-revalidate=5, stale-if-error=9"
            )),
            9
        );
        assert_eq!(
            stale_window(&resp("max-age=1, must-revalidate, stale-if-error=9")),
            0
        );
    }
}
