//! The byte cursor under the interpreter: every read checks the bytes present first, so a
//! declared length past the end is an error before anything is allocated.

use crate::error::{Error, ErrorKind, Result};

/// A position in the pickle bytes.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// A pickle error (what is wrong, at which byte of the pickle).
pub(crate) fn bad(msg: impl Into<String>, at: usize) -> Error {
    Error::new(ErrorKind::Pickle(msg.into())).at_byte(at as u64)
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    /// The offset of the next byte.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The next byte, not taken; `None` at the end.
    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Moves back to `pos`, an offset this cursor has been at.
    pub(crate) fn seek(&mut self, pos: usize) {
        debug_assert!(pos <= self.bytes.len());
        self.pos = pos.min(self.bytes.len());
    }

    /// The next `n` bytes, checked against the bytes present before anything is taken.
    pub(crate) fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(Error::eof(what, n, left).at_byte(self.pos as u64));
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.bytes[start..self.pos])
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A length-prefixed run: the length (1, 4 or 8 bytes), then that many bytes.
    pub(crate) fn counted(&mut self, width: u8, what: &'static str) -> Result<&'a [u8]> {
        let n = match width {
            1 => self.u8(what)? as u64,
            4 => self.u32(what)? as u64,
            _ => self.u64(what)?,
        };
        self.take(n, what)
    }

    /// A protocol-0 text argument: the bytes up to the next `\n` (not included).
    pub(crate) fn line(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let rest = &self.bytes[self.pos..];
        match rest.iter().position(|&b| b == b'\n') {
            Some(i) => {
                let start = self.pos;
                self.pos += i + 1;
                Ok(&self.bytes[start..start + i])
            }
            None => {
                Err(Error::eof(what, rest.len() as u64 + 1, rest.len() as u64)
                    .at_byte(self.pos as u64))
            }
        }
    }

    /// A protocol-0 text argument as UTF-8 text.
    pub(crate) fn text_line(&mut self, what: &'static str) -> Result<&'a str> {
        let at = self.pos;
        let l = self.line(what)?;
        std::str::from_utf8(l).map_err(|_| bad(format!("{what} is not valid text"), at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_past_the_end_is_an_error_before_any_allocation() {
        let mut c = Cursor::new(b"\xff\xff\xff\xffab");
        let e = c.counted(4, "a byte string").unwrap_err();
        assert!(e.is_eof(), "{e}");
        assert!(e.to_string().contains("4294967295"), "{e}");
    }

    #[test]
    fn lines_end_at_a_newline_and_need_one() {
        let mut c = Cursor::new(b"I12\nab");
        assert_eq!(c.text_line("an int").unwrap(), "I12");
        assert!(c.line("a line").unwrap_err().is_eof());
    }
}
