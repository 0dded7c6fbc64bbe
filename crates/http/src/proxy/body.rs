//! [`ProxyBody`]: the one body type the proxy sends, to clients and to the
//! origin. An enum rather than a boxed trait object so a hit costs no
//! allocation: a stored body is handed to hyper as the cached `Bytes`.

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A response or request body.
#[derive(Debug)]
pub enum ProxyBody {
    /// No body.
    Empty,
    /// A whole body in memory (a stored response); `None` once sent.
    Full(Option<Bytes>),
    /// Bytes already read (`head`), then the rest of a streaming body.
    Stream {
        /// Read before we decided not to store the response.
        head: Option<Bytes>,
        /// The remainder, straight from the peer.
        rest: Incoming,
    },
}

impl ProxyBody {
    /// A body of these bytes (empty bytes = [`ProxyBody::Empty`]).
    pub fn full(b: Bytes) -> Self {
        if b.is_empty() {
            ProxyBody::Empty
        } else {
            ProxyBody::Full(Some(b))
        }
    }

    /// A streaming body.
    pub fn stream(rest: Incoming) -> Self {
        ProxyBody::Stream { head: None, rest }
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            ProxyBody::Empty => Poll::Ready(None),
            ProxyBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            ProxyBody::Stream { head, rest } => {
                if let Some(h) = head.take() {
                    return Poll::Ready(Some(Ok(Frame::data(h))));
                }
                Pin::new(rest).poll_frame(cx)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ProxyBody::Empty => true,
            ProxyBody::Full(b) => b.is_none(),
            ProxyBody::Stream { head, rest } => head.is_none() && rest.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ProxyBody::Empty => SizeHint::with_exact(0),
            ProxyBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            ProxyBody::Stream { head, rest } => {
                let extra = head.as_ref().map_or(0, |h| h.len() as u64);
                let h = rest.size_hint();
                let mut out = SizeHint::new();
                out.set_lower(h.lower() + extra);
                if let Some(u) = h.upper() {
                    out.set_upper(u + extra);
                }
                out
            }
        }
    }
}
