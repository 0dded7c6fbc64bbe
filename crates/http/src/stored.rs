//! The byte encoding of what the proxy keeps in the engine.
//!
//! Two kinds of record live under the `http:` key prefix:
//!
//! - a **response** (`TCHR`): status, the request and response times (for
//!   the age calculation, RFC 9111 §4.2.3), the secondary key of the
//!   request that produced it (§4.1), the stored header section and the
//!   body, last, so that decoding hands out the body as a zero-copy slice
//!   of the stored buffer;
//! - a **variant list** (`TCHV`), stored at a primary key whose response
//!   has `Vary`: the nominated header fields, which give the secondary key
//!   under which the matching response is stored.
//!
//! All integers are big-endian. A record that does not decode (another
//! version, or foreign bytes under the prefix) is treated as absent.

use bytes::{BufMut, Bytes, BytesMut};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::StatusCode;

const RESPONSE_MAGIC: &[u8; 4] = b"TCHR";
const VARIANTS_MAGIC: &[u8; 4] = b"TCHV";
const VERSION: u8 = 1;

/// A response as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredResponse {
    /// The status code.
    pub status: StatusCode,
    /// The stored header section (hop-by-hop fields already removed).
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
    /// When the request that produced it was sent, Unix ms.
    pub request_time_ms: u64,
    /// When the response was received, Unix ms.
    pub response_time_ms: u64,
    /// The secondary key of the request that produced it (empty without `Vary`).
    pub variant: Bytes,
}

/// A decoded record.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// A stored response.
    Response(StoredResponse),
    /// The `Vary` fields of the responses stored for this primary key.
    Variants(Vec<HeaderName>),
}

/// Why bytes did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError(&'static str);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "undecodable stored HTTP record: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

impl StoredResponse {
    /// Encodes the response.
    ///
    /// ```
    /// use tiercache_http::stored::{Record, StoredResponse};
    /// let mut headers = hyper::HeaderMap::new();
    /// headers.insert("content-type", "text/plain".parse().unwrap());
    /// let r = StoredResponse {
    ///     status: hyper::StatusCode::OK,
    ///     headers,
    ///     body: bytes::Bytes::from_static(b"hello"),
    ///     request_time_ms: 1,
    ///     response_time_ms: 2,
    ///     variant: bytes::Bytes::new(),
    /// };
    /// let bytes = r.encode();
    /// assert_eq!(Record::decode(&bytes).unwrap(), Record::Response(r));
    /// ```
    pub fn encode(&self) -> Bytes {
        let header_bytes: usize = self
            .headers
            .iter()
            .map(|(k, v)| 6 + k.as_str().len() + v.len())
            .sum();
        let mut b = BytesMut::with_capacity(
            4 + 1 + 2 + 16 + 4 + self.variant.len() + 4 + header_bytes + 8 + self.body.len(),
        );
        b.put_slice(RESPONSE_MAGIC);
        b.put_u8(VERSION);
        b.put_u16(self.status.as_u16());
        b.put_u64(self.request_time_ms);
        b.put_u64(self.response_time_ms);
        b.put_u32(self.variant.len() as u32);
        b.put_slice(&self.variant);
        b.put_u32(self.headers.len() as u32);
        for (k, v) in &self.headers {
            b.put_u16(k.as_str().len() as u16);
            b.put_slice(k.as_str().as_bytes());
            b.put_u32(v.len() as u32);
            b.put_slice(v.as_bytes());
        }
        b.put_u64(self.body.len() as u64);
        b.put_slice(&self.body);
        b.freeze()
    }
}

/// Encodes a variant list.
pub fn encode_variants(fields: &[HeaderName]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_slice(VARIANTS_MAGIC);
    b.put_u8(VERSION);
    b.put_u16(fields.len() as u16);
    for f in fields {
        b.put_u16(f.as_str().len() as u16);
        b.put_slice(f.as_str().as_bytes());
    }
    b.freeze()
}

struct Reader<'a> {
    buf: &'a Bytes,
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or(DecodeError("truncated"))?;
        let s = &self.buf[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn slice(&mut self, n: usize) -> Result<Bytes, DecodeError> {
        let start = self.at;
        self.take(n)?;
        Ok(self.buf.slice(start..self.at))
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().unwrap()))
    }
}

impl Record {
    /// Decodes a record; the body of a response shares `bytes`' buffer.
    pub fn decode(bytes: &Bytes) -> Result<Record, DecodeError> {
        let mut r = Reader { buf: bytes, at: 0 };
        let magic: [u8; 4] = r.take(4)?.try_into().unwrap();
        if r.take(1)?[0] != VERSION {
            return Err(DecodeError("unknown version"));
        }
        match &magic {
            RESPONSE_MAGIC => {
                let status = StatusCode::from_u16(r.u16()?).map_err(|_| DecodeError("status"))?;
                let request_time_ms = r.u64()?;
                let response_time_ms = r.u64()?;
                let vlen = r.u32()? as usize;
                let variant = r.slice(vlen)?;
                let n = r.u32()? as usize;
                let mut headers = HeaderMap::with_capacity(n.min(256));
                for _ in 0..n {
                    let klen = r.u16()? as usize;
                    let name = HeaderName::from_bytes(r.take(klen)?)
                        .map_err(|_| DecodeError("header name"))?;
                    let vlen = r.u32()? as usize;
                    let value = HeaderValue::from_maybe_shared(r.slice(vlen)?)
                        .map_err(|_| DecodeError("header value"))?;
                    headers.append(name, value);
                }
                let blen = r.u64()? as usize;
                let body = r.slice(blen)?;
                Ok(Record::Response(StoredResponse {
                    status,
                    headers,
                    body,
                    request_time_ms,
                    response_time_ms,
                    variant,
                }))
            }
            VARIANTS_MAGIC => {
                let n = r.u16()? as usize;
                let mut fields = Vec::with_capacity(n);
                for _ in 0..n {
                    let len = r.u16()? as usize;
                    fields.push(
                        HeaderName::from_bytes(r.take(len)?)
                            .map_err(|_| DecodeError("vary field"))?,
                    );
                }
                Ok(Record::Variants(fields))
            }
            _ => Err(DecodeError("bad magic")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StoredResponse {
        let mut headers = HeaderMap::new();
        headers.append("set-cookie", HeaderValue::from_static("a=1"));
        headers.append("set-cookie", HeaderValue::from_static("b=2"));
        headers.insert("etag", HeaderValue::from_static("\"x\""));
        StoredResponse {
            status: StatusCode::NOT_FOUND,
            headers,
            body: Bytes::from(vec![7u8; 100_000]),
            request_time_ms: 1_700_000_000_000,
            response_time_ms: 1_700_000_000_123,
            variant: Bytes::from_static(b"accept=x\0"),
        }
    }

    #[test]
    fn response_round_trips_with_repeated_fields_and_a_zero_copy_body() {
        let r = sample();
        let bytes = r.encode();
        let Record::Response(d) = Record::decode(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!(d, r);
        let range = bytes.as_ptr() as usize..bytes.as_ptr() as usize + bytes.len();
        assert!(
            range.contains(&(d.body.as_ptr() as usize)),
            "body is a slice of the record"
        );
    }

    #[test]
    fn variants_round_trip() {
        let f = vec![
            HeaderName::from_static("accept"),
            HeaderName::from_static("x-y"),
        ];
        assert_eq!(
            Record::decode(&encode_variants(&f)).unwrap(),
            Record::Variants(f)
        );
    }

    #[test]
    fn every_truncation_and_foreign_bytes_fail_cleanly() {
        let bytes = sample().encode();
        for n in 0..bytes.len() {
            assert!(Record::decode(&bytes.slice(..n)).is_err(), "prefix {n}");
        }
        assert!(Record::decode(&Bytes::from_static(b"hello world")).is_err());
    }
}
