//! Log output from firmware, decoded in-process: defmt frames when the ELF carries a defmt table (its
//! `.defmt` section), text otherwise. `ember qemu` feeds it QEMU's semihosting stdout, `ember flash` the
//! RTT up channel, so a board and an emulator print the same lines.

use anyhow::{Context, Result};
use defmt_decoder::{DecodeError, StreamDecoder, Table};

/// The defmt table of `elf`, or `None` when the firmware does not log with defmt.
pub fn table(elf: &[u8]) -> Result<Option<Table>> {
    Table::parse(elf).context("the ELF's defmt table does not parse (was it built with defmt 1?)")
}

/// Turns a byte stream into log lines, calling `line` for each complete one.
pub enum LogStream<'t> {
    /// defmt frames, decoded with the firmware's table.
    Defmt {
        decoder: Box<dyn StreamDecoder + Send + Sync + 't>,
        /// Frames that did not decode (the stream resynchronizes after each).
        malformed: usize,
    },
    /// Plain text, split at newlines.
    Text { pending: Vec<u8> },
}

impl<'t> LogStream<'t> {
    /// A decoder for `table`'s frames, or a text splitter without one.
    pub fn new(table: Option<&'t Table>) -> Self {
        match table {
            Some(t) => LogStream::Defmt {
                decoder: t.new_stream_decoder(),
                malformed: 0,
            },
            None => LogStream::Text {
                pending: Vec::new(),
            },
        }
    }

    /// Feeds `bytes`; calls `line` for every log line they complete.
    pub fn feed(&mut self, bytes: &[u8], line: &mut dyn FnMut(String)) {
        match self {
            LogStream::Defmt { decoder, malformed } => {
                decoder.received(bytes);
                loop {
                    match decoder.decode() {
                        Ok(frame) => {
                            let level = frame
                                .level()
                                .map(|l| format!("{:<5} ", l.as_str().to_uppercase()))
                                .unwrap_or_default();
                            line(format!("{level}{}", frame.display_message()));
                        }
                        Err(DecodeError::UnexpectedEof) => break,
                        Err(DecodeError::Malformed) => *malformed += 1,
                    }
                }
            }
            LogStream::Text { pending } => {
                pending.extend_from_slice(bytes);
                while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                    let text: Vec<u8> = pending.drain(..=end).collect();
                    line(String::from_utf8_lossy(&text[..end]).trim_end().to_string());
                }
            }
        }
    }

    /// The end of the stream: a last unterminated text line is emitted. Returns the number of defmt
    /// frames that did not decode.
    pub fn finish(&mut self, line: &mut dyn FnMut(String)) -> usize {
        match self {
            LogStream::Defmt { malformed, .. } => *malformed,
            LogStream::Text { pending } => {
                if !pending.is_empty() {
                    line(String::from_utf8_lossy(pending).trim_end().to_string());
                    pending.clear();
                }
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_split_into_lines_across_chunks() {
        let mut s = LogStream::new(None);
        let mut lines = Vec::new();
        s.feed(b"model ops=12\nacc", &mut |l| lines.push(l));
        s.feed(b"uracy 352/360\r\npartial", &mut |l| lines.push(l));
        assert_eq!(s.finish(&mut |l| lines.push(l)), 0);
        assert_eq!(lines, ["model ops=12", "accuracy 352/360", "partial"]);
    }
}
