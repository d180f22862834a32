//! The HTTP/1.1 upgrade to HTTP/2 over cleartext (`Upgrade: h2c`, RFC 7540 §3.2), which
//! `curl --http2` and some clients use on `http://` URLs. hyper and h2 serve HTTP/2 but
//! cannot take over an upgraded connection, whose first request arrived as HTTP/1.1 and is
//! answered on stream 1. So the gateway answers `101 Switching Protocols`, reads the
//! client's connection preface, and hands the HTTP/2 server that preface followed by the
//! upgrading request re-encoded as a HEADERS frame on stream 1: to the server it is an
//! ordinary first request, answered on stream 1 as the client expects.
//!
//! Only requests without a body are upgraded (a body would have to be replayed as DATA
//! frames within flow-control windows the client never saw); others are answered over
//! HTTP/1.1, as the RFC allows a server to do with any upgrade request.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::http::{HeaderMap, Request, header};
use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// What every HTTP/2 client sends first.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// HTTP/2's frame header length, and the largest frame every server accepts.
const FRAME_HEADER: usize = 9;
const MAX_FRAME: usize = 16_384;
const SETTINGS: u8 = 0x4;
const HEADERS: u8 = 0x1;
const END_STREAM_AND_HEADERS: u8 = 0x1 | 0x4;
/// Headers of HTTP/1.1 connection management, which HTTP/2 forbids.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "upgrade",
    "http2-settings",
    "host",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
];

/// Whether `request` asks to upgrade to h2c and can be: HTTP/1.1, `Upgrade: h2c`,
/// `Connection: Upgrade, HTTP2-Settings`, and no body.
pub fn wants_upgrade<B: http_body::Body>(request: &Request<B>) -> bool {
    let headers = request.headers();
    request.version() == axum::http::Version::HTTP_11
        && has_token(headers, header::UPGRADE, "h2c")
        && has_token(headers, header::CONNECTION, "upgrade")
        && headers.contains_key("http2-settings")
        && request.body().size_hint().exact() == Some(0)
}

fn has_token(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|item| item.trim().eq_ignore_ascii_case(token))
}

/// The upgrading request as the HEADERS frame that opens stream 1; `None` when its header
/// block does not fit one frame (then it is answered over HTTP/1.1).
pub fn stream_one<B>(request: &Request<B>) -> Option<Bytes> {
    let authority = request
        .headers()
        .get(header::HOST)
        .map(|host| host.as_bytes().to_vec())
        .or_else(|| {
            request
                .uri()
                .authority()
                .map(|a| a.as_str().as_bytes().to_vec())
        })
        .unwrap_or_default();
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |path| path.as_str());
    let mut block = BytesMut::new();
    literal(&mut block, b":method", request.method().as_str().as_bytes());
    literal(&mut block, b":scheme", b"http");
    literal(&mut block, b":authority", &authority);
    literal(&mut block, b":path", path.as_bytes());
    for (name, value) in request.headers() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            literal(&mut block, name.as_str().as_bytes(), value.as_bytes());
        }
    }
    if block.len() > MAX_FRAME {
        return None;
    }
    let mut frame = BytesMut::with_capacity(FRAME_HEADER + block.len());
    let length = u32::try_from(block.len()).ok()?;
    frame.put_slice(&length.to_be_bytes()[1..]);
    frame.put_u8(HEADERS);
    frame.put_u8(END_STREAM_AND_HEADERS);
    frame.put_u32(1);
    frame.put_slice(&block);
    Some(frame.freeze())
}

/// One header as an HPACK "literal header field without indexing, new name": nothing is
/// added to the decoder's dynamic table, so the client's own encoding is unaffected.
fn literal(block: &mut BytesMut, name: &[u8], value: &[u8]) {
    block.put_u8(0x00);
    string(block, name);
    string(block, value);
}

/// An HPACK string literal without Huffman coding: its length as a 7-bit-prefix integer.
fn string(block: &mut BytesMut, text: &[u8]) {
    let mut length = text.len();
    if length < 0x7f {
        block.put_u8(length as u8);
    } else {
        block.put_u8(0x7f);
        length -= 0x7f;
        while length >= 0x80 {
            block.put_u8((length % 0x80) as u8 | 0x80);
            length /= 0x80;
        }
        block.put_u8(length as u8);
    }
    block.put_slice(text);
}

/// Reads the client's preface and first SETTINGS frame from the upgraded connection and
/// returns the connection as the HTTP/2 server must see it: that preface, then `stream_one`,
/// then whatever the client sends next.
pub async fn replay<I: AsyncRead + AsyncWrite + Unpin>(
    mut io: I,
    stream_one: Bytes,
) -> std::io::Result<Replayed<I>> {
    let mut start = vec![0u8; PREFACE.len() + FRAME_HEADER];
    io.read_exact(&mut start).await?;
    let header = &start[PREFACE.len()..];
    if &start[..PREFACE.len()] != PREFACE || header[3] != SETTINGS {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the upgraded connection did not start with the HTTP/2 preface and SETTINGS",
        ));
    }
    let length =
        usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
    if length > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the client's first SETTINGS frame is larger than a frame may be",
        ));
    }
    let mut settings = vec![0u8; length];
    io.read_exact(&mut settings).await?;
    let mut prefix = BytesMut::from(&start[..]);
    prefix.put_slice(&settings);
    prefix.put_slice(&stream_one);
    Ok(Replayed {
        prefix: prefix.freeze(),
        io,
    })
}

/// A connection whose first bytes are replayed from memory.
#[derive(Debug)]
pub struct Replayed<I> {
    prefix: Bytes,
    io: I,
}

impl<I: AsyncRead + Unpin> AsyncRead for Replayed<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if !this.prefix.is_empty() {
            let count = this.prefix.len().min(buffer.remaining());
            buffer.put_slice(&this.prefix.split_to(count));
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(context, buffer)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Replayed<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(context, bytes)
    }

    fn poll_flush(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(context)
    }

    fn poll_shutdown(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_strings_use_the_multi_byte_length() {
        let mut block = BytesMut::new();
        string(&mut block, &[b'a'; 1337]);
        // 1337 = 127 + 1210; 1210 = 0x3a + 0x80 * 9.
        assert_eq!(&block[..3], &[0x7f, 0xba, 0x09]);
        assert_eq!(block.len(), 3 + 1337);
    }

    #[test]
    fn the_upgrade_needs_every_header_and_no_body() {
        let request = |body: &'static str| {
            Request::get("/healthz")
                .header("host", "x")
                .header("connection", "Upgrade, HTTP2-Settings")
                .header("upgrade", "h2c")
                .header("http2-settings", "AAMAAABkAARAAAAAAAIAAAAA")
                .body(http_body_util::Full::new(Bytes::from(body)))
                .unwrap()
        };
        assert!(wants_upgrade(&request("")));
        assert!(!wants_upgrade(&request("{}")));
        let mut plain = request("");
        plain.headers_mut().remove("http2-settings");
        assert!(!wants_upgrade(&plain));
        let frame = stream_one(&request("")).unwrap();
        assert_eq!(frame[3], HEADERS);
        assert_eq!(&frame[5..9], &[0, 0, 0, 1]);
        assert!(!frame.windows(7).any(|window| window == b"upgrade"));
    }
}
