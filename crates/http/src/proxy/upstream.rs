//! Talking to the origin: forwarding requests (streamed both ways) and
//! fetching responses for the cache (buffered, checked, stored).

use super::body::ProxyBody;
use super::cached::Cached;
use super::flight::FlightOutcome;
use super::respond::{self, Outcome};
use super::HttpCache;
use crate::key;
use crate::metrics::inc;
use crate::policy::freshness::header_date;
use crate::policy::invalidate;
use crate::policy::storable::{self, headers_to_store, strip_hop_by_hop, Extensions, NotStorable};
use crate::policy::validate::{
    conditional_headers, has_validator, merge_not_modified, not_modified_applies,
};
use crate::policy::{RequestDirectives, ResponseDirectives};
use crate::stored::{encode_variants, Record, StoredResponse};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH, DATE, IF_MATCH, IF_MODIFIED_SINCE,
    IF_NONE_MATCH, IF_RANGE, IF_UNMODIFIED_SINCE, VIA,
};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode, Uri};
use std::net::SocketAddr;
use std::sync::Arc;
use tiercache_engine::{now_ms, Entry};

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// A request to send upstream, without its body.
pub(super) struct UpstreamRequest {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
}

/// What a fetch for the cache produced.
pub(super) enum Fetched {
    /// A response that may be shared (stored, or revalidated by a 304).
    Shared {
        cached: Arc<Cached>,
        revalidated: bool,
        fwd: &'static str,
    },
    /// A response for the requester only, already stamped, body streaming.
    Own(Response<ProxyBody>),
    /// The origin failed (see [`FlightOutcome::Failed`]).
    Failed {
        status: StatusCode,
        response: Option<Arc<Cached>>,
        fwd: &'static str,
    },
}

impl Fetched {
    pub(super) fn outcome_for_waiters(&self) -> FlightOutcome {
        match self {
            Fetched::Shared {
                cached,
                revalidated,
                ..
            } => FlightOutcome::Shared {
                cached: cached.clone(),
                revalidated: *revalidated,
            },
            Fetched::Own(_) => FlightOutcome::NotShared,
            Fetched::Failed {
                status, response, ..
            } => FlightOutcome::Failed {
                status: *status,
                response: response.clone(),
            },
        }
    }
}

/// Why buffering a body stopped.
enum BufferError {
    /// Over the limit: what was read, and the rest of the stream.
    TooLarge(Bytes, Incoming),
    /// The origin failed mid-body.
    Upstream,
    /// The deadline passed.
    Timeout,
}

/// Reads a whole body of at most `limit` bytes.
async fn buffer_body(mut body: Incoming, limit: u64) -> Result<Bytes, BufferError> {
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| BufferError::Upstream)?;
        if let Ok(data) = frame.into_data() {
            if (buf.len() + data.len()) as u64 > limit {
                buf.extend_from_slice(&data);
                return Err(BufferError::TooLarge(buf.freeze(), body));
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

fn remove_conditionals(h: &mut HeaderMap) {
    for n in [
        IF_NONE_MATCH,
        IF_MODIFIED_SINCE,
        IF_MATCH,
        IF_UNMODIFIED_SINCE,
        IF_RANGE,
    ] {
        h.remove(n);
    }
}

impl HttpCache {
    fn upstream_uri(&self, parts: &Parts) -> Uri {
        let pq = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        Uri::builder()
            .scheme("http")
            .authority(self.upstream_authority.clone())
            .path_and_query(pq)
            .build()
            .unwrap_or_else(|_| self.config.upstream.clone())
    }

    /// The header section sent upstream: hop-by-hop fields removed, `Via`
    /// and `X-Forwarded-For` added.
    fn upstream_headers(&self, h: &HeaderMap, remote: Option<SocketAddr>) -> HeaderMap {
        let mut h = h.clone();
        strip_hop_by_hop(&mut h);
        h.append(VIA, respond::VIA_VALUE);
        if let Some(addr) = remote {
            if let Ok(v) = HeaderValue::try_from(addr.ip().to_string()) {
                h.append(X_FORWARDED_FOR, v);
            }
        }
        h
    }

    /// The GET sent upstream to fill the cache (also for HEAD requests:
    /// the stored GET response answers both). The client's own
    /// conditionals are dropped: the cache needs a full response to store,
    /// and evaluates them itself (RFC 9111 §4.3.2).
    pub(super) fn upstream_get(
        &self,
        parts: &Parts,
        remote: Option<SocketAddr>,
    ) -> UpstreamRequest {
        let mut headers = self.upstream_headers(&parts.headers, remote);
        remove_conditionals(&mut headers);
        UpstreamRequest {
            method: Method::GET,
            uri: self.upstream_uri(parts),
            headers,
        }
    }

    /// Sends `req` upstream with the upstream timeout on the response head.
    async fn send(
        &self,
        up: UpstreamRequest,
        body: ProxyBody,
    ) -> Result<Response<Incoming>, StatusCode> {
        let mut req = Request::new(body);
        *req.method_mut() = up.method;
        *req.uri_mut() = up.uri;
        *req.headers_mut() = up.headers;
        match tokio::time::timeout(self.config.upstream_timeout, self.client.request(req)).await {
            Err(_) => {
                inc(&self.metrics.upstream_errors);
                Err(StatusCode::GATEWAY_TIMEOUT)
            }
            Ok(Err(e)) => {
                inc(&self.metrics.upstream_errors);
                tracing::debug!(error = %e, "upstream request failed");
                Err(StatusCode::BAD_GATEWAY)
            }
            Ok(Ok(r)) => Ok(r),
        }
    }

    /// Forwards a request that does not use the cache, streaming both
    /// bodies; invalidates after unsafe methods (RFC 9111 §4.4).
    pub(super) async fn forward(
        self: &Arc<Self>,
        req: Request<ProxyBody>,
        remote: Option<SocketAddr>,
        host: &str,
        fwd: &'static str,
        detail: Option<&'static str>,
    ) -> Response<ProxyBody> {
        inc(&self.metrics.bypass);
        let (parts, body) = req.into_parts();
        let outcome = Outcome::Bypass { fwd, detail };
        let up = UpstreamRequest {
            method: parts.method.clone(),
            uri: self.upstream_uri(&parts),
            headers: self.upstream_headers(&parts.headers, remote),
        };
        let resp = match self.send(up, body).await {
            Ok(r) => r,
            Err(status) => {
                return respond::error(
                    status,
                    "the origin could not be reached or did not answer in time",
                    &outcome,
                )
            }
        };
        let (mut rp, rbody) = resp.into_parts();
        strip_hop_by_hop(&mut rp.headers);
        let pq = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        for path in invalidate::targets(&parts.method, rp.status, &rp.headers, host, pq) {
            let prefix = key::uri_prefix(&self.config.key_prefix, host, &path);
            match self.delete_prefix(&prefix).await {
                Ok(n) => {
                    self.metrics
                        .invalidated
                        .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                }
                Err(e) => {
                    inc(&self.metrics.cache_errors);
                    tracing::warn!(error = %e, path, "invalidation failed");
                }
            }
        }
        respond::stamp(&mut rp.headers, &outcome, None);
        Response::from_parts(rp, ProxyBody::stream(rbody))
    }

    /// Fetches `up` for the cache: conditionally when `stored` has
    /// validators; stores what may be stored.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn fetch(
        self: &Arc<Self>,
        key: &Bytes,
        mut up: UpstreamRequest,
        request: &HeaderMap,
        path: &str,
        stored: Option<Arc<Cached>>,
        store_ok: bool,
        fwd: &'static str,
        retried: bool,
    ) -> Fetched {
        let had_stored = stored.is_some();
        let validating = stored.filter(|s| has_validator(&s.stored.headers));
        if let Some(s) = &validating {
            up.headers.extend(conditional_headers(&s.stored.headers));
        }
        let request_time = now_ms();
        let retry_uri = (up.uri.clone(), up.headers.clone());
        let resp = match self.send(up, ProxyBody::Empty).await {
            Ok(r) => r,
            Err(status) => {
                return Fetched::Failed {
                    status,
                    response: None,
                    fwd,
                }
            }
        };
        let response_time = now_ms();
        let (mut rp, body) = resp.into_parts();
        strip_hop_by_hop(&mut rp.headers);
        if !rp.headers.contains_key(DATE) {
            // RFC 9110 §6.6.1: a recipient with a clock caching a response
            // without Date records when it was received.
            if let Ok(v) = HeaderValue::try_from(crate::policy::freshness::fmt_http_date(
                response_time / 1000,
            )) {
                rp.headers.insert(DATE, v);
            }
        }
        if rp.status == StatusCode::NOT_MODIFIED {
            if let Some(s) = &validating {
                if not_modified_applies(&s.stored.headers, &rp.headers) {
                    drop(body);
                    let mut merged = s.stored.clone();
                    merge_not_modified(&mut merged.headers, &rp.headers);
                    merged.request_time_ms = request_time;
                    merged.response_time_ms = response_time;
                    inc(&self.metrics.revalidated);
                    let cached = self.store(key, merged, request, path).await;
                    return Fetched::Shared {
                        cached,
                        revalidated: true,
                        fwd,
                    };
                }
            }
            if !retried {
                // A 304 that does not match what we hold (RFC 9111 §4.3.4):
                // ask again without conditions.
                let mut headers = retry_uri.1;
                remove_conditionals(&mut headers);
                let up = UpstreamRequest {
                    method: Method::GET,
                    uri: retry_uri.0,
                    headers,
                };
                return Box::pin(self.fetch(key, up, request, path, None, store_ok, fwd, true))
                    .await;
            }
        }
        let server_error = matches!(rp.status.as_u16(), 500 | 502 | 503 | 504);
        let cc = ResponseDirectives::parse(&rp.headers);
        let mut not_storable = None;
        if !store_ok {
            not_storable = Some(NotStorable::RequestNoStore);
        }
        if not_storable.is_none() {
            let probe = StoredResponse {
                status: rp.status,
                headers: rp.headers.clone(),
                body: Bytes::new(),
                request_time_ms: request_time,
                response_time_ms: response_time,
                variant: Bytes::new(),
            };
            let date = header_date(&rp.headers, &DATE).unwrap_or(response_time / 1000);
            let has_lifetime =
                super::cached::lifetime(&probe, &cc, date, &self.config, path).is_some();
            let rule = self.config.rule_for(path);
            let ext = Extensions {
                configured_ttl: self.config.default_ttl.is_some()
                    || rule.is_some_and(|r| r.ttl.is_some() || r.default_ttl.is_some()),
            };
            not_storable = storable::check(
                &Method::GET,
                request,
                &RequestDirectives::parse(request),
                rp.status,
                &rp.headers,
                &cc,
                has_lifetime,
                ext,
            )
            .err();
        }
        let declared_len = rp
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if not_storable.is_none() && declared_len.is_some_and(|l| l > self.config.max_object_size) {
            not_storable = Some(NotStorable::TooLarge);
        }
        if server_error && had_stored {
            // Keep the error for the requester, but let stale-if-error
            // decide first; never store it over the stale copy.
            return match buffer_body(body, self.config.max_object_size).await {
                Ok(b) => {
                    let r = StoredResponse {
                        status: rp.status,
                        headers: rp.headers,
                        body: b,
                        request_time_ms: request_time,
                        response_time_ms: response_time,
                        variant: Bytes::new(),
                    };
                    Fetched::Failed {
                        status: StatusCode::BAD_GATEWAY,
                        response: Some(Arc::new(Cached::new(r, &self.config, path))),
                        fwd,
                    }
                }
                Err(_) => {
                    inc(&self.metrics.upstream_errors);
                    Fetched::Failed {
                        status: StatusCode::BAD_GATEWAY,
                        response: None,
                        fwd,
                    }
                }
            };
        }
        if let Some(reason) = not_storable {
            let o = Outcome::Miss {
                fwd,
                fwd_status: rp.status.as_u16(),
                stored: false,
                collapsed: false,
                detail: Some(reason.as_str()),
            };
            respond::stamp(&mut rp.headers, &o, None);
            return Fetched::Own(Response::from_parts(rp, ProxyBody::stream(body)));
        }
        let deadline = self.config.upstream_timeout;
        let buffered =
            match tokio::time::timeout(deadline, buffer_body(body, self.config.max_object_size))
                .await
            {
                Ok(r) => r,
                Err(_) => Err(BufferError::Timeout),
            };
        match buffered {
            Ok(b) => {
                let cc_headers = headers_to_store(&rp.headers, &cc);
                let r = StoredResponse {
                    status: rp.status,
                    headers: cc_headers,
                    body: b,
                    request_time_ms: request_time,
                    response_time_ms: response_time,
                    variant: Bytes::new(),
                };
                let cached = self.store(key, r, request, path).await;
                Fetched::Shared {
                    cached,
                    revalidated: false,
                    fwd,
                }
            }
            Err(BufferError::TooLarge(head, rest)) => {
                let o = Outcome::Miss {
                    fwd,
                    fwd_status: rp.status.as_u16(),
                    stored: false,
                    collapsed: false,
                    detail: Some(NotStorable::TooLarge.as_str()),
                };
                respond::stamp(&mut rp.headers, &o, None);
                Fetched::Own(Response::from_parts(
                    rp,
                    ProxyBody::Stream {
                        head: Some(head),
                        rest,
                    },
                ))
            }
            Err(BufferError::Upstream) => {
                inc(&self.metrics.upstream_errors);
                Fetched::Failed {
                    status: StatusCode::BAD_GATEWAY,
                    response: None,
                    fwd,
                }
            }
            Err(BufferError::Timeout) => {
                inc(&self.metrics.upstream_errors);
                Fetched::Failed {
                    status: StatusCode::GATEWAY_TIMEOUT,
                    response: None,
                    fwd,
                }
            }
        }
    }

    /// Writes a response to the engine (with its variant list when it has
    /// `Vary`) and returns it decoded from the very buffer the engine holds.
    async fn store(
        &self,
        key: &Bytes,
        mut response: StoredResponse,
        request: &HeaderMap,
        path: &str,
    ) -> Arc<Cached> {
        let probe = Cached::new(response.clone(), &self.config, path);
        let record_key = if probe.vary.is_empty() {
            key.clone()
        } else {
            let (vkey, secondary) = key::variant(key, &probe.vary, request);
            response.variant = secondary;
            vkey
        };
        let record = response.encode();
        let cached = match Record::decode(&record) {
            Ok(Record::Response(r)) => Arc::new(Cached::new(r, &self.config, path)),
            _ => Arc::new(probe),
        };
        let Some(until) = cached.keep_until_ms(&self.config) else {
            return cached; // stale on arrival and useless later: not stored
        };
        let mut s = self.engine.session();
        let mut result = Ok(());
        if !cached.vary.is_empty() {
            let marker = Entry::with_expiry(
                encode_variants(&cached.vary),
                Some(until.saturating_add(3_600_000)),
            );
            result = s.set_entry(key.clone(), marker).await;
        }
        if result.is_ok() {
            result = s
                .set_entry(
                    record_key.clone(),
                    Entry::with_expiry(record.clone(), Some(until)),
                )
                .await;
        }
        if result.is_ok() {
            result = s.commit().await;
        }
        match result {
            Ok(()) => {
                inc(&self.metrics.stored);
                self.decoded.insert(
                    record_key,
                    record,
                    super::cached::Decoded::Response(cached.clone()),
                );
            }
            Err(e) => {
                inc(&self.metrics.cache_errors);
                tracing::warn!(error = %e, "storing an HTTP response failed");
            }
        }
        cached
    }
}
