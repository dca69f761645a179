//! The stdio gateway's output: stdout, where a reader that went away (a broken pipe)
//! ends the session quietly instead of an error logged for every message after it.

use std::io::ErrorKind;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use tokio_util::sync::CancellationToken;

/// Stdout that fires `closed` (and drops what is written after) once its reader is gone.
pub(super) struct Output {
    inner: tokio::io::Stdout,
    closed: CancellationToken,
}

impl Output {
    pub(super) fn new(closed: CancellationToken) -> Self {
        Self {
            inner: tokio::io::stdout(),
            closed,
        }
    }

    fn gone<T>(&self, r: Poll<std::io::Result<T>>, written: T) -> Poll<std::io::Result<T>> {
        match r {
            Poll::Ready(Err(e)) if e.kind() == ErrorKind::BrokenPipe => {
                self.closed.cancel();
                Poll::Ready(Ok(written))
            }
            other => other,
        }
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.closed.is_cancelled() {
            return Poll::Ready(Ok(buf.len()));
        }
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.gone(r, buf.len())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.closed.is_cancelled() {
            return Poll::Ready(Ok(()));
        }
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.gone(r, ())
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.closed.is_cancelled() {
            return Poll::Ready(Ok(()));
        }
        let r = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.gone(r, ())
    }
}
