//! A tool's result as the gateway hands it on: the text a model reads, bounded, plus the
//! structured content and the media items, each bounded too. An unbounded result is how a
//! single `cat` of a log fills a model's context (millions of tokens in the wild).

use rmcp::model::{
    CallToolResult, ContentBlock, InputRequest, InputRequiredResult, ResourceContents,
};
use serde_json::Value;
use switchboard_wire::secrets::Secrets;

/// What one call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutput {
    /// The text a model reads: the text items joined by newlines, other items described in
    /// brackets; past `max_result_bytes` its head and tail with `[… N bytes cut …]` between.
    pub text: String,
    /// The tool reported a failure (`isError`), or asked for something the gateway cannot
    /// give (user input, the client's model); `text` says what.
    pub is_error: bool,
    /// `structuredContent`, when the server sent one no bigger than `max_result_bytes`.
    pub structured: Option<Value>,
    /// Images and audio no bigger than `max_result_bytes` (base64), for models that take them.
    pub media: Vec<Media>,
}

/// An image or audio item of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    pub kind: MediaKind,
    pub mime_type: String,
    /// The base64 data as the server sent it.
    pub data: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    Image,
    Audio,
}

impl CallOutput {
    /// A tool error whose text is `text`.
    pub(crate) fn error(text: String) -> Self {
        Self {
            text,
            is_error: true,
            structured: None,
            media: Vec::new(),
        }
    }

    /// The server's result, bounded to `max` bytes of text and `max` bytes per other item,
    /// with the server's `secrets` cut out of its text and structured content (before the
    /// text is cut, so no part of a credential is left at the cut).
    pub(crate) fn from_result(result: CallToolResult, max: usize, secrets: &Secrets) -> Self {
        let mut parts: Vec<String> = Vec::new();
        let mut media = Vec::new();
        for block in result.content {
            match block {
                ContentBlock::Text(text) => parts.push(text.text),
                ContentBlock::Image(image) => push_media(
                    &mut parts,
                    &mut media,
                    MediaKind::Image,
                    image.mime_type,
                    image.data,
                    max,
                ),
                ContentBlock::Audio(audio) => push_media(
                    &mut parts,
                    &mut media,
                    MediaKind::Audio,
                    audio.mime_type,
                    audio.data,
                    max,
                ),
                ContentBlock::Resource(embedded) => match embedded.resource {
                    ResourceContents::TextResourceContents { uri, text, .. } => {
                        parts.push(format!("[resource {uri}]\n{text}"))
                    }
                    ResourceContents::BlobResourceContents {
                        uri,
                        mime_type,
                        blob,
                        ..
                    } => parts.push(format!(
                        "[resource {uri}: {} of {} bytes (base64), not shown]",
                        mime_type.as_deref().unwrap_or("binary data"),
                        blob.len()
                    )),
                    _ => parts.push("[a resource of a kind the gateway does not know]".to_owned()),
                },
                ContentBlock::ResourceLink(link) => {
                    parts.push(format!("[resource link {} ({})]", link.uri, link.name))
                }
                _ => parts.push("[an item of a kind the gateway does not know]".to_owned()),
            }
        }
        let mut structured = result.structured_content.map(|value| secrets.value(value));
        if let Some(value) = &structured {
            let size = value.to_string().len();
            if size > max {
                parts.push(format!(
                    "[structured content of {size} bytes left out: past the {max}-byte bound]"
                ));
                structured = None;
            }
        }
        // A server with structured content and no text (allowed, though a copy is
        // recommended) would leave the model nothing to read.
        if parts.is_empty()
            && let Some(value) = &structured
        {
            parts.push(value.to_string());
        }
        Self {
            text: bound_text(secrets.text(&parts.join("\n")), max),
            is_error: result.is_error.unwrap_or(false),
            structured,
            media,
        }
    }

    /// The tool error for a result that asks the client for something first (MRTR
    /// `input_required`): a gateway has no user to ask nor a model to lend.
    pub(crate) fn input_required(server: &str, result: &InputRequiredResult) -> Self {
        let mut kinds: Vec<&str> = result
            .input_requests
            .iter()
            .flat_map(|requests| requests.values())
            .map(|request| match request {
                InputRequest::Elicitation(_) => "user input (elicitation)",
                InputRequest::CreateMessage(_) => "the client's model (sampling)",
                InputRequest::ListRoots(_) => "the client's roots",
                _ => "more input",
            })
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        let what = if kinds.is_empty() {
            "more input".to_owned()
        } else {
            kinds.join(" and ")
        };
        Self::error(format!(
            "Error: tool server {server} asked for {what}, which the gateway cannot give"
        ))
    }
}

fn push_media(
    parts: &mut Vec<String>,
    media: &mut Vec<Media>,
    kind: MediaKind,
    mime_type: String,
    data: String,
    max: usize,
) {
    let noun = match kind {
        MediaKind::Image => "image",
        MediaKind::Audio => "audio",
    };
    if data.len() > max {
        parts.push(format!(
            "[{noun} {mime_type} of {} bytes (base64) left out: past the {max}-byte bound]",
            data.len()
        ));
    } else {
        parts.push(format!(
            "[{noun} {mime_type}, {} bytes (base64)]",
            data.len()
        ));
        media.push(Media {
            kind,
            mime_type,
            data,
        });
    }
}

/// `text` if it is at most `max` bytes; else its head and tail, cut on character boundaries,
/// around a note saying how much was cut. The note is outside the bound: it is short, and a
/// model must see it.
pub(crate) fn bound_text(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let head_end = floor_char_boundary(&text, max / 2);
    let tail_start = ceil_char_boundary(&text, text.len() - (max - max / 2));
    let cut = tail_start - head_end;
    format!(
        "{}\n[… {cut} bytes cut …]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_within_the_bound_is_kept_whole() {
        assert_eq!(bound_text("hello".into(), 5), "hello");
    }

    #[test]
    fn past_the_bound_the_head_and_tail_are_kept_around_a_note() {
        let text = format!("{}{}{}", "a".repeat(100), "b".repeat(1000), "c".repeat(100));
        let bounded = bound_text(text, 200);
        assert!(bounded.starts_with(&"a".repeat(100)), "{bounded}");
        assert!(bounded.ends_with(&"c".repeat(100)), "{bounded}");
        assert!(bounded.contains("\n[… 1000 bytes cut …]\n"), "{bounded}");
    }

    #[test]
    fn the_cut_falls_on_character_boundaries() {
        // Three bytes a character: a cut at any byte count stays valid UTF-8.
        for max in 1..40 {
            let bounded = bound_text("€".repeat(30), max);
            assert!(bounded.contains("bytes cut"));
        }
    }

    #[test]
    fn an_oversized_image_becomes_a_note() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("look:"),
            ContentBlock::image("A".repeat(1000), "image/png"),
            ContentBlock::image("AAAA", "image/png"),
        ]);
        let output = CallOutput::from_result(result, 200, &Secrets::default());
        assert_eq!(output.media.len(), 1);
        assert!(
            output
                .text
                .contains("image/png of 1000 bytes (base64) left out: past the 200-byte bound"),
            "{}",
            output.text
        );
        assert!(!output.text.contains("AAAA"));
    }
}
