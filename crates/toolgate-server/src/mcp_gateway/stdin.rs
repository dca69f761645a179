//! The stdio gateway's input: stdin, read as it is, with the session's `ended` token
//! cancelled the moment it reaches its end (the client closed the pipe or exited), so
//! that a call held for approval ends with its client instead of outliving it.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// `inner`, cancelling `ended` at its end of file or on a read error.
pub(super) struct Input<R> {
    inner: R,
    ended: CancellationToken,
}

impl<R> Input<R> {
    pub fn new(inner: R, ended: CancellationToken) -> Self {
        Self { inner, ended }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Input<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let wanted = buf.remaining() > 0;
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &polled {
            Poll::Ready(Ok(())) if wanted && buf.filled().len() == before => self.ended.cancel(),
            Poll::Ready(Err(_)) => self.ended.cancel(),
            _ => {}
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn the_end_of_input_cancels_the_token() {
        let ended = CancellationToken::new();
        let mut input = Input::new(&b"{}\n"[..], ended.clone());
        let mut buf = [0u8; 2];
        input.read_exact(&mut buf).await.unwrap();
        assert!(!ended.is_cancelled());
        let mut rest = Vec::new();
        input.read_to_end(&mut rest).await.unwrap();
        assert!(ended.is_cancelled());
    }
}
