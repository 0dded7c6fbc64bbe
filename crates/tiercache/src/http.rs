//! From `[http_cache]` to the HTTP cache's [`ProxyConfig`].

use hyper::header::HeaderName;
use tiercache_config::HttpCacheConfig;
use tiercache_http::{ProxyConfig, Rule};

/// Builds the proxy's settings from `[http_cache]`; `upstream` (the
/// `--upstream` flag) overrides the file's.
///
/// ```
/// let config = tiercache::config::parse(r#"
///     [http_cache]
///     upstream = "http://127.0.0.1:8080"
///     default_ttl = "1s"
///     [[http_cache.rule]]
///     prefix = "/api/"
///     ttl = "5s"
/// "#, "t.toml").unwrap();
/// let p = tiercache::proxy_config(&config.http_cache, None).unwrap();
/// assert_eq!(p.upstream, "http://127.0.0.1:8080/");
/// assert_eq!(p.rules[0].ttl, Some(std::time::Duration::from_secs(5)));
/// assert!(tiercache::proxy_config(&Default::default(), None).is_err());
/// ```
pub fn proxy_config(http: &HttpCacheConfig, upstream: Option<&str>) -> Result<ProxyConfig, String> {
    let upstream = upstream
        .or(http.upstream.as_deref())
        .ok_or("no upstream: pass --upstream http://host:port or set [http_cache] upstream")?;
    let uri: hyper::Uri = upstream
        .parse()
        .map_err(|e| format!("invalid upstream {upstream:?}: {e}"))?;
    let names = |v: &[String]| -> Result<Vec<HeaderName>, String> {
        v.iter()
            .map(|n| {
                HeaderName::from_bytes(n.as_bytes())
                    .map_err(|_| format!("invalid header field name {n:?}"))
            })
            .collect()
    };
    let mut c = ProxyConfig::new(uri);
    c.default_ttl = http.default_ttl();
    c.max_object_size = http.max_object_size;
    c.coalesce_timeout = http.coalesce_timeout;
    c.upstream_timeout = http.upstream_timeout;
    c.stale_retention = http.stale_retention;
    c.key_headers = names(&http.key_headers)?;
    c.purge_token = http.purge_token.clone();
    c.admin_prefix = http.admin_prefix.clone();
    c.key_prefix = crate::HTTP_NAMESPACE.to_owned();
    c.max_header_bytes = http.max_header_bytes as usize;
    c.rules = http
        .rules
        .iter()
        .map(|r| {
            Ok(Rule {
                prefix: r.prefix.clone(),
                ttl: r.ttl,
                default_ttl: r.default_ttl,
                bypass: r.bypass,
                bypass_headers: names(&r.bypass_headers)?,
                bypass_cookies: r.bypass_cookies.clone(),
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(c)
}
