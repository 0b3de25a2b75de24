//! A small reader for the Python literals of a `.npy` header, used only to report the header's
//! `descr` *as written* (`info --json`): the library's [`DType`](npy_serde::DType) normalises
//! type strings (`'i4'` becomes `'<i4'`, `'|a5'` becomes `'|S5'`), which is right for reading
//! data but not for showing what the file says.
//!
//! The header has already been validated by `npy_serde::header::read_header` when this runs, so
//! this parser only needs to cover what that parser accepts; anything it does not understand is
//! an `Err`, and the caller falls back to the normalised descr. It never panics.

use serde_json::Value as Json;

/// Nesting limit; the library's own default is 128, so deeper input never reaches us.
const MAX_DEPTH: usize = 256;

/// The value of the `descr` key of a header dict text, with tuples turned into lists.
/// Duplicate keys: the last one wins, as in Python.
pub fn header_descr(text: &str, allow_long_suffix: bool) -> Result<Json, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        i: 0,
        allow_long_suffix,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("unexpected text at byte {}", p.i));
    }
    match v {
        Lit::Dict(pairs) => pairs
            .into_iter()
            .rev()
            .find(|(k, _)| matches!(k, Lit::Str(s) if s == "descr"))
            .map(|(_, v)| v.into_json())
            .ok_or_else(|| "no 'descr' key".to_string()),
        _ => Err("the header is not a dict".into()),
    }
}

/// Parses descr text (as printed by `DType::descr`) into JSON, tuples as lists.
pub fn descr_text_to_json(text: &str) -> Result<Json, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        i: 0,
        allow_long_suffix: false,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("unexpected text at byte {}", p.i));
    }
    Ok(v.into_json())
}

enum Lit {
    Str(String),
    Int(serde_json::Number),
    Bool(bool),
    None,
    Seq(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

impl Lit {
    fn into_json(self) -> Json {
        match self {
            Lit::Str(s) => Json::String(s),
            Lit::Int(n) => Json::Number(n),
            Lit::Bool(b) => Json::Bool(b),
            Lit::None => Json::Null,
            Lit::Seq(v) => Json::Array(v.into_iter().map(Lit::into_json).collect()),
            Lit::Dict(pairs) => {
                let mut m = serde_json::Map::new();
                for (k, v) in pairs {
                    let key = match k {
                        Lit::Str(s) => s,
                        other => other.into_json().to_string(),
                    };
                    m.insert(key, v.into_json());
                }
                Json::Object(m)
            }
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
    allow_long_suffix: bool,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(c) = self.peek() {
            if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' || c == b'\x0c' {
                self.i += 1;
            } else if c == b'\\' && self.s.get(self.i + 1) == Some(&b'\n') {
                self.i += 2;
            } else {
                break;
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Lit, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".into());
        }
        self.ws();
        match self.peek() {
            None => Err("unexpected end of header".into()),
            Some(b'{') => {
                self.i += 1;
                let mut pairs = Vec::new();
                loop {
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        return Ok(Lit::Dict(pairs));
                    }
                    let k = self.value(depth + 1)?;
                    self.ws();
                    if self.peek() != Some(b':') {
                        return Err(format!("expected ':' at byte {}", self.i));
                    }
                    self.i += 1;
                    let v = self.value(depth + 1)?;
                    pairs.push((k, v));
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {}
                        _ => return Err(format!("expected ',' or '}}' at byte {}", self.i)),
                    }
                }
            }
            Some(open @ (b'[' | b'(')) => {
                let close = if open == b'[' { b']' } else { b')' };
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    if self.peek() == Some(close) {
                        self.i += 1;
                        return Ok(Lit::Seq(items));
                    }
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(c) if c == close => {}
                        _ => return Err(format!("expected ',' at byte {}", self.i)),
                    }
                }
            }
            Some(b'\'' | b'"') => self.string(),
            Some(c) if c == b'-' || c == b'+' || c.is_ascii_digit() => self.int(),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.i;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    self.i += 1;
                }
                let word = &self.text[start..self.i];
                match word {
                    "True" => Ok(Lit::Bool(true)),
                    "False" => Ok(Lit::Bool(false)),
                    "None" => Ok(Lit::None),
                    _ if matches!(self.peek(), Some(b'\'' | b'"'))
                        && matches!(word, "u" | "U" | "r" | "R") =>
                    {
                        let raw = word.eq_ignore_ascii_case("r");
                        if raw {
                            self.raw_string()
                        } else {
                            self.string()
                        }
                    }
                    _ => Err(format!("unexpected name {word:?}")),
                }
            }
            Some(_) => Err(format!("unexpected character at byte {}", self.i)),
        }
    }

    fn int(&mut self) -> Result<Lit, String> {
        let start = self.i;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.i += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit() || c == b'_') {
            self.i += 1;
        }
        let digits: String = self.text[start..self.i]
            .chars()
            .filter(|&c| c != '_' && c != '+')
            .collect();
        if self.allow_long_suffix && matches!(self.peek(), Some(b'L' | b'l')) {
            self.i += 1;
        }
        if let Ok(v) = digits.parse::<i64>() {
            return Ok(Lit::Int(v.into()));
        }
        if let Ok(v) = digits.parse::<u64>() {
            return Ok(Lit::Int(v.into()));
        }
        Err(format!("integer {digits} out of range"))
    }

    fn raw_string(&mut self) -> Result<Lit, String> {
        let q = self.peek().ok_or("unexpected end")?;
        self.i += 1;
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == q {
                let s = self.text[start..self.i].to_string();
                self.i += 1;
                return Ok(Lit::Str(s));
            }
            self.i += if c == b'\\' { 2 } else { 1 };
        }
        Err("unterminated string".into())
    }

    fn string(&mut self) -> Result<Lit, String> {
        let q = self.peek().ok_or("unexpected end")? as char;
        // Work on chars from here: the text may hold non-ASCII (latin-1 or UTF-8) characters.
        let rest = &self.text[self.i + 1..];
        let mut out = String::new();
        let mut it = rest.char_indices().peekable();
        while let Some((pos, c)) = it.next() {
            if c == q {
                self.i += 1 + pos + c.len_utf8();
                return Ok(Lit::Str(out));
            }
            if c == '\n' {
                return Err("newline in string".into());
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some((_, e)) = it.next() else {
                return Err("unterminated string".into());
            };
            let mut hex = |n: usize| -> Result<char, String> {
                let mut v = 0u32;
                for _ in 0..n {
                    let (_, h) = it.next().ok_or("short escape")?;
                    v = v * 16 + h.to_digit(16).ok_or("bad hex escape")?;
                }
                char::from_u32(v).ok_or_else(|| "bad code point".to_string())
            };
            match e {
                '\n' => {}
                '\\' => out.push('\\'),
                '\'' => out.push('\''),
                '"' => out.push('"'),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'a' => out.push('\x07'),
                'b' => out.push('\x08'),
                'f' => out.push('\x0c'),
                'v' => out.push('\x0b'),
                'x' => out.push(hex(2)?),
                'u' => out.push(hex(4)?),
                'U' => out.push(hex(8)?),
                '0'..='7' => {
                    let mut v = e.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match it.peek() {
                            Some(&(_, d)) if d.is_digit(8) => {
                                v = v * 8 + d.to_digit(8).unwrap_or(0);
                                it.next();
                            }
                            _ => break,
                        }
                    }
                    out.push(char::from_u32(v).ok_or("bad octal escape")?);
                }
                other => {
                    // Python keeps unknown escapes as written.
                    out.push('\\');
                    out.push(other);
                }
            }
        }
        Err("unterminated string".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn descr_as_written() {
        let h = "{'descr': [('a', '<i4'), (('t', 'b'), '|u1', (2, 3)), ('', '|V4')], \
                 'fortran_order': False, 'shape': (3,), }   ";
        assert_eq!(
            header_descr(h, false).unwrap(),
            json!([["a", "<i4"], [["t", "b"], "|u1", [2, 3]], ["", "|V4"]])
        );
        let h = "{\"descr\": \"i4\", 'shape': (2L,), 'fortran_order': True, 'descr': '=f8'}";
        assert_eq!(header_descr(h, true).unwrap(), json!("=f8"));
        assert!(header_descr(h, false).is_err());
    }

    #[test]
    fn escapes() {
        let v = descr_text_to_json(
            r#"[("it's", '<i2'), ('a"b', '<i2'), ('line\nbreak', '<i2'), ('\xe9\u00e9\\', '|u1')]"#,
        )
        .unwrap();
        assert_eq!(
            v,
            json!([
                ["it's", "<i2"],
                ["a\"b", "<i2"],
                ["line\nbreak", "<i2"],
                ["éé\\", "|u1"]
            ])
        );
        assert!(descr_text_to_json("'abc").is_err());
        assert!(descr_text_to_json("[(").is_err());
        assert!(descr_text_to_json("'\\x4'").is_err());
    }
}
