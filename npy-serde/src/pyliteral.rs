//! The subset of Python literal syntax that `.npy` headers use, parsed with `nom`, and Python's
//! `repr` for the values we write.
//!
//! Grammar (what `ast.literal_eval` accepts for headers NumPy has ever written, and a bit more):
//! dict `{k: v, ...}`, list `[...]`, tuple `(...)` (with the one-element `(x,)` form), strings in
//! either quote style with the escapes `\\ \' \" \n \r \t \0 \a \b \f \v \xNN \uNNNN \UNNNNNNNN`
//! and octal, optionally with adjacent literals concatenated, decimal integers with an optional
//! sign (and Python 2's `L` suffix where allowed), `True`, `False`, `None`. Whitespace (including
//! newlines) anywhere between tokens, trailing commas allowed.
//!
//! Every node keeps its byte span in the header text, so errors can point at it and quote it.
//! Recursion is bounded by a nesting limit checked before descending.

use nom::branch::alt;
use nom::bytes::complete::{take_while, take_while1};
use nom::character::complete::{char as chr, multispace0};
use nom::combinator::{opt, recognize};
use nom::sequence::pair;
use nom::{IResult, Parser};

use crate::error::{Error, Result};

/// A parsed Python literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum PyKind {
    Str(String),
    /// An integer. `None` if it does not fit in an `i128` (still a valid Python int).
    Int(Option<i128>),
    Bool(bool),
    None,
    Tuple(Vec<Py>),
    List(Vec<Py>),
    Dict(Vec<(Py, Py)>),
}

/// A Python literal as written in a `.npy` header, without any normalisation: what the file
/// says, for tools that show it (see [`header_literal`](crate::header::header_literal)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Literal {
    /// A string.
    Str(String),
    /// An integer.
    Int(i128),
    /// `True` / `False`.
    Bool(bool),
    /// `None`.
    None,
    /// A tuple.
    Tuple(Vec<Literal>),
    /// A list.
    List(Vec<Literal>),
    /// A dict, pairs in source order (duplicate keys kept).
    Dict(Vec<(Literal, Literal)>),
}

impl Literal {
    /// The value of `key` in a dict (the last one when a key repeats, as in Python).
    pub fn get(&self, key: &str) -> Option<&Literal> {
        match self {
            Literal::Dict(pairs) => pairs
                .iter()
                .rev()
                .find(|(k, _)| matches!(k, Literal::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A value and where it stands in the text (byte offsets, end exclusive).
#[derive(Clone, Debug, PartialEq)]
pub struct Py {
    pub kind: PyKind,
    pub start: usize,
    pub end: usize,
}

impl Py {
    /// The value without spans; integers beyond `i128` are an overflow error.
    pub fn to_literal(&self, text: &str, base: u64) -> Result<Literal> {
        let conv = |v: &[Py]| -> Result<Vec<Literal>> {
            v.iter().map(|p| p.to_literal(text, base)).collect()
        };
        Ok(match &self.kind {
            PyKind::Str(s) => Literal::Str(s.clone()),
            PyKind::Int(Some(i)) => Literal::Int(*i),
            PyKind::Int(None) => {
                return Err(Error::overflow(format!("integer {}", self.snippet(text)))
                    .at_byte(base + self.start as u64))
            }
            PyKind::Bool(b) => Literal::Bool(*b),
            PyKind::None => Literal::None,
            PyKind::Tuple(v) => Literal::Tuple(conv(v)?),
            PyKind::List(v) => Literal::List(conv(v)?),
            PyKind::Dict(pairs) => Literal::Dict(
                pairs
                    .iter()
                    .map(|(k, v)| Ok((k.to_literal(text, base)?, v.to_literal(text, base)?)))
                    .collect::<Result<_>>()?,
            ),
        })
    }

    /// Short Python type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            PyKind::Str(_) => "str",
            PyKind::Int(_) => "int",
            PyKind::Bool(_) => "bool",
            PyKind::None => "None",
            PyKind::Tuple(_) => "tuple",
            PyKind::List(_) => "list",
            PyKind::Dict(_) => "dict",
        }
    }

    /// The source text of this value, shortened for error messages.
    pub fn snippet(&self, text: &str) -> String {
        let s = text.get(self.start..self.end).unwrap_or("");
        shorten(s, 60)
    }
}

pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

/// The deepest nesting of containers the parser accepts whatever the configured limit says.
///
/// CPython's parser refuses more than 200 nested brackets ("too many nested parentheses"), so
/// NumPy cannot read a header nested deeper than this either; the cap bounds the parser's (and
/// the dtype conversion's) recursion, so a raised `Limits::max_depth` cannot overflow the stack.
pub const HARD_MAX_DEPTH: usize = 200;

/// Options of the literal parser.
#[derive(Clone, Copy, Debug)]
pub struct LiteralOptions {
    /// Maximum nesting of containers (at most [`HARD_MAX_DEPTH`] is used).
    pub max_depth: usize,
    /// Accept Python 2 `L` suffixes on integers (v1.0/v2.0 headers).
    pub allow_long_suffix: bool,
}

/// Parses `text` as exactly one literal surrounded by optional whitespace.
///
/// `base` is the byte offset of `text` in the file, added to error positions.
pub fn parse_literal(text: &str, opts: LiteralOptions, base: u64) -> Result<Py> {
    let p = LitParser {
        full: text,
        opts,
        base,
    };
    let (rest, _) = ws(text).map_err(|_| p.err_at(text, "whitespace"))?;
    let (rest, v) = p.value(rest, 0)?;
    let (rest, _) = ws(rest).map_err(|_| p.err_at(rest, "whitespace"))?;
    if !rest.is_empty() {
        return Err(p.err_at(
            rest,
            &format!(
                "unexpected text after the header dictionary: {:?}",
                shorten(rest, 30)
            ),
        ));
    }
    Ok(v)
}

fn ws(i: &str) -> IResult<&str, &str> {
    multispace0(i)
}

/// Skips Python whitespace between tokens.
fn skip_ws(i: &str) -> &str {
    i.trim_start_matches([' ', '\t', '\n', '\r'])
}

struct LitParser<'t> {
    full: &'t str,
    opts: LiteralOptions,
    base: u64,
}

impl<'t> LitParser<'t> {
    fn offset(&self, rest: &str) -> usize {
        self.full.len() - rest.len()
    }

    fn err_at(&self, rest: &str, msg: &str) -> Error {
        Error::header(msg.to_string()).at_byte(self.base + self.offset(rest) as u64)
    }

    fn expected(&self, rest: &str, what: &str) -> Error {
        let found = if rest.is_empty() {
            "end of header".to_string()
        } else {
            format!("{:?}", shorten(rest, 20))
        };
        self.err_at(
            rest,
            &format!("syntax error: expected {what}, found {found}"),
        )
    }

    /// One value. Recursion goes `value` -> `container` -> `value`; both frames are kept small
    /// (the scalar cases and error formatting live in separate, non-inlined functions) so that
    /// [`HARD_MAX_DEPTH`] levels fit comfortably in a small thread stack, even in debug builds.
    fn value(&self, i: &'t str, depth: usize) -> Result<(&'t str, Py)> {
        match i.as_bytes().first() {
            Some(b'{' | b'[' | b'(') => self.container(i, depth),
            _ => self.scalar(i),
        }
    }

    #[cold]
    #[inline(never)]
    fn too_deep(&self, i: &str, depth: usize) -> Error {
        Error::limit(
            "header nesting depth",
            self.opts.max_depth.min(HARD_MAX_DEPTH) as u64,
            depth as u64 + 1,
        )
        .at_byte(self.base + self.offset(i) as u64)
    }

    #[cold]
    #[inline(never)]
    fn expected_sep(&self, rest: &str, close: char) -> Error {
        self.expected(rest, &format!("',' or '{close}'"))
    }

    #[cold]
    #[inline(never)]
    fn expected_colon(&self, rest: &str) -> Error {
        self.expected(rest, "':'")
    }

    /// A dict, list or tuple starting at `i` (which starts with the opening bracket).
    #[inline(never)]
    fn container(&self, i: &'t str, depth: usize) -> Result<(&'t str, Py)> {
        if depth >= self.opts.max_depth.min(HARD_MAX_DEPTH) {
            return Err(self.too_deep(i, depth));
        }
        let start = self.offset(i);
        let open = i.as_bytes()[0];
        let (close, is_dict) = match open {
            b'{' => ('}', true),
            b'[' => (']', false),
            _ => (')', false),
        };
        let mut rest = &i[1..];
        let mut items = Vec::new();
        let mut pairs = Vec::new();
        let mut saw_comma = false;
        loop {
            rest = skip_ws(rest);
            if let Some(r) = rest.strip_prefix(close) {
                rest = r;
                break;
            }
            let first = items.is_empty() && pairs.is_empty();
            if !saw_comma && !first {
                return Err(self.expected_sep(rest, close));
            }
            let (r, v) = self.value(rest, depth + 1)?;
            rest = skip_ws(r);
            if is_dict {
                let Some(r) = rest.strip_prefix(':') else {
                    return Err(self.expected_colon(rest));
                };
                let (r, val) = self.value(skip_ws(r), depth + 1)?;
                pairs.push((v, val));
                rest = skip_ws(r);
            } else {
                items.push(v);
            }
            saw_comma = false;
            if let Some(r) = rest.strip_prefix(',') {
                rest = r;
                saw_comma = true;
            }
        }
        let kind = match open {
            b'{' => PyKind::Dict(pairs),
            b'[' => PyKind::List(items),
            _ => {
                // `(x)` is just x in parentheses; `(x,)` and `()` are tuples.
                if items.len() == 1 && !saw_comma {
                    let mut inner = items.pop().expect("one item");
                    inner.start = start;
                    inner.end = self.offset(rest);
                    return Ok((rest, inner));
                }
                PyKind::Tuple(items)
            }
        };
        let end = self.offset(rest);
        Ok((rest, Py { kind, start, end }))
    }

    /// A string, integer or name (`True`, `False`, `None`): everything but containers.
    #[inline(never)]
    fn scalar(&self, i: &'t str) -> Result<(&'t str, Py)> {
        let start = self.offset(i);
        let mk = |kind, rest: &str, this: &Self| Py {
            kind,
            start,
            end: this.offset(rest),
        };
        match i.chars().next() {
            Some('\'') | Some('"') => {
                let (mut rest, mut s) = self.string(i)?;
                // Adjacent string literals concatenate, as in Python.
                loop {
                    let r = ws(rest).map(|(r, _)| r).unwrap_or(rest);
                    if r.starts_with('\'') || r.starts_with('"') {
                        let (r2, s2) = self.string(r)?;
                        s.push_str(&s2);
                        rest = r2;
                    } else {
                        break;
                    }
                }
                Ok((rest, mk(PyKind::Str(s), rest, self)))
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' => {
                let r: IResult<&str, &str> = recognize(pair(
                    opt(alt((chr('-'), chr('+')))),
                    pair(
                        multispace0,
                        take_while1(|c: char| c.is_ascii_digit() || c == '_'),
                    ),
                ))
                .parse(i);
                let (mut rest, digits) = r.map_err(|_| self.expected(i, "an integer"))?;
                if self.opts.allow_long_suffix
                    && let Some(r) = rest.strip_prefix('L').or_else(|| rest.strip_prefix('l'))
                {
                    rest = r;
                }
                if rest.starts_with(|c: char| c.is_alphanumeric() || c == '.' || c == '_') {
                    return Err(
                        self.err_at(rest, "only decimal integers are supported in a .npy header")
                    );
                }
                let cleaned: String = digits
                    .chars()
                    .filter(|c| !c.is_whitespace() && *c != '_' && *c != '+')
                    .collect();
                if digits.contains("__") || digits.ends_with('_') {
                    return Err(self.err_at(i, "invalid integer literal"));
                }
                let body = cleaned.trim_start_matches('-');
                if body.len() > 1 && body.starts_with('0') && body.bytes().any(|b| b != b'0') {
                    return Err(self.err_at(
                        i,
                        "integers with leading zeros are not valid Python literals",
                    ));
                }
                let v = cleaned.parse::<i128>().ok();
                Ok((rest, mk(PyKind::Int(v), rest, self)))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let r: IResult<&str, &str> =
                    take_while(|c: char| c.is_ascii_alphanumeric() || c == '_').parse(i);
                let (rest, word) = r.map_err(|_| self.expected(i, "a value"))?;
                let kind = match word {
                    "True" => PyKind::Bool(true),
                    "False" => PyKind::Bool(false),
                    "None" => PyKind::None,
                    _ => {
                        return Err(self.err_at(
                            i,
                            &format!("unknown name {word:?}: only literals are allowed"),
                        ))
                    }
                };
                Ok((rest, mk(kind, rest, self)))
            }
            _ => Err(self.expected(i, "a value")),
        }
    }

    /// One quoted string literal (no prefix letters), returning the decoded text.
    fn string(&self, i: &'t str) -> Result<(&'t str, String)> {
        let q = i.chars().next().expect("caller checked a quote");
        let r: IResult<&str, char> = chr(q).parse(i);
        let (mut rest, _) = r.map_err(|_| self.expected(i, "a string"))?;
        let mut out = String::new();
        loop {
            let mut chars = rest.chars();
            let c = chars
                .next()
                .ok_or_else(|| self.err_at(i, "unterminated string literal"))?;
            if c == q {
                return Ok((chars.as_str(), out));
            }
            if c == '\n' {
                return Err(self.err_at(rest, "newline inside a string literal"));
            }
            if c != '\\' {
                out.push(c);
                rest = chars.as_str();
                continue;
            }
            let e = chars
                .next()
                .ok_or_else(|| self.err_at(i, "unterminated string literal"))?;
            let after = chars.as_str();
            let simple = match e {
                '\\' => Some('\\'),
                '\'' => Some('\''),
                '"' => Some('"'),
                'n' => Some('\n'),
                'r' => Some('\r'),
                't' => Some('\t'),
                'a' => Some('\x07'),
                'b' => Some('\x08'),
                'f' => Some('\x0c'),
                'v' => Some('\x0b'),
                '\n' => None,
                _ => None,
            };
            if let Some(s) = simple {
                out.push(s);
                rest = after;
                continue;
            }
            if e == '\n' {
                rest = after; // line continuation
                continue;
            }
            let (len, radix) = match e {
                'x' => (2, 16),
                'u' => (4, 16),
                'U' => (8, 16),
                '0'..='7' => (0, 8),
                _ => {
                    // Python keeps unknown escapes as-is (with a warning).
                    out.push('\\');
                    out.push(e);
                    rest = after;
                    continue;
                }
            };
            let (digits, tail) = if radix == 8 {
                let n = rest[1..]
                    .bytes()
                    .take(3)
                    .take_while(|b| (b'0'..=b'7').contains(b))
                    .count();
                (&rest[1..1 + n], &rest[1 + n..])
            } else {
                if after.len() < len || !after.is_char_boundary(len) {
                    return Err(self.err_at(rest, "truncated escape sequence"));
                }
                (&after[..len], &after[len..])
            };
            let code = u32::from_str_radix(digits, radix)
                .map_err(|_| self.err_at(rest, "invalid escape sequence"))?;
            let ch = char::from_u32(code).ok_or_else(|| {
                self.err_at(
                    rest,
                    &format!("escape \\{e}{digits} is not a valid character"),
                )
            })?;
            out.push(ch);
            rest = tail;
        }
    }
}

/// Python's `str.isprintable()` for one character, as `repr` uses it.
///
/// Exact for Latin-1 (the characters v1.0/v2.0 headers can hold). Above U+00FF this follows
/// the Unicode categories Python treats as non-printable (controls, format characters,
/// separators other than the ASCII space, surrogates, private use) for the ranges in common
/// use; unassigned code points are treated as printable, which only matters for v3.0 headers
/// whose field names contain unassigned characters.
pub fn is_printable(c: char) -> bool {
    let u = c as u32;
    match u {
        0x20..=0x7e => true,
        0..=0x1f | 0x7f..=0xa0 | 0xad => false,
        0xa1..=0xff => true,
        0x0600..=0x0605 | 0x061c | 0x06dd | 0x070f | 0x08e2 | 0x180e => false,
        0x1680 | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064 | 0x2066..=0x206f => false,
        0x3000 | 0xd800..=0xf8ff | 0xfeff | 0xfff9..=0xfffb => false,
        0x110bd | 0x110cd | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a => false,
        0xe0001 | 0xe0020..=0xe007f | 0xf0000..=0x10ffff => false,
        _ => !c.is_control(),
    }
}

/// Python's `repr(s)` for a `str`.
pub fn repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let u = c as u32;
                if u <= 0xff {
                    out.push_str(&format!("\\x{u:02x}"));
                } else if u <= 0xffff {
                    out.push_str(&format!("\\u{u:04x}"));
                } else {
                    out.push_str(&format!("\\U{u:08x}"));
                }
            }
        }
    }
    out.push(quote);
    out
}

/// Python's `repr` of a tuple of non-negative integers: `()`, `(3,)`, `(2, 3)`.
pub fn repr_shape(shape: &[u64]) -> String {
    match shape {
        [] => "()".to_string(),
        [one] => format!("({one},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> LiteralOptions {
        LiteralOptions {
            max_depth: 32,
            allow_long_suffix: true,
        }
    }

    fn parse(s: &str) -> Result<Py> {
        parse_literal(s, opts(), 0)
    }

    #[test]
    fn parses_header_dict() {
        let v = parse("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }   \n").unwrap();
        let PyKind::Dict(pairs) = v.kind else {
            panic!("not a dict")
        };
        assert_eq!(pairs.len(), 3);
        assert_eq!(
            pairs[2].1.kind,
            PyKind::Tuple(vec![Py {
                kind: PyKind::Int(Some(3)),
                start: 51,
                end: 52
            }])
        );
    }

    #[test]
    fn parenthesized_is_not_tuple() {
        assert!(matches!(parse("(3)").unwrap().kind, PyKind::Int(Some(3))));
        assert!(matches!(parse("()").unwrap().kind, PyKind::Tuple(ref v) if v.is_empty()));
        assert!(matches!(parse("(3,)").unwrap().kind, PyKind::Tuple(ref v) if v.len() == 1));
    }

    #[test]
    fn strings_and_escapes() {
        let v = parse(r#""a'b" 'c\n\x41\u00e9\U0001F600\\\'\101'"#).unwrap();
        assert_eq!(v.kind, PyKind::Str("a'bc\nAé😀\\'A".into()));
    }

    #[test]
    fn long_suffix_and_big_ints() {
        assert!(matches!(parse("10L").unwrap().kind, PyKind::Int(Some(10))));
        let no_long = LiteralOptions {
            allow_long_suffix: false,
            ..opts()
        };
        assert!(parse_literal("10L", no_long, 0).is_err());
        assert!(matches!(
            parse("1000000000000000000000000000000000000000000000")
                .unwrap()
                .kind,
            PyKind::Int(None)
        ));
        assert!(matches!(parse("-5").unwrap().kind, PyKind::Int(Some(-5))));
        assert!(parse("0x10").is_err());
        assert!(parse("1.5").is_err());
        assert!(parse("012").is_err());
    }

    #[test]
    fn errors_have_offsets() {
        let e = parse("{'a': 1,, }").unwrap_err();
        assert_eq!(e.position().byte, Some(8));
        let e = parse("{'a' 1}").unwrap_err();
        assert!(e.to_string().contains("expected ':'"), "{e}");
        let e = parse("{'a': 1} x").unwrap_err();
        assert!(e.to_string().contains("after the header dictionary"), "{e}");
        assert!(parse("'abc").is_err());
        assert!(parse("[1 2]").is_err());
        assert!(parse("foo").is_err());
    }

    #[test]
    fn depth_limit() {
        let deep = "[".repeat(100) + &"]".repeat(100);
        let e = parse(&deep).unwrap_err();
        assert_eq!(e.kind().code(), "limit_exceeded");
        let ok = "[".repeat(32) + &"]".repeat(32);
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn repr_matches_python() {
        assert_eq!(repr_str("abc"), "'abc'");
        assert_eq!(repr_str("a'b"), "\"a'b\"");
        assert_eq!(repr_str("a\"'b"), "'a\"\\'b'");
        assert_eq!(repr_str("\n\t\\"), "'\\n\\t\\\\'");
        assert_eq!(repr_str("é\u{a0}\u{7f}\u{1}"), "'é\\xa0\\x7f\\x01'");
        assert_eq!(repr_str("π名😀"), "'π名😀'");
        assert_eq!(repr_str("\u{200b}"), "'\\u200b'");
        assert_eq!(repr_shape(&[]), "()");
        assert_eq!(repr_shape(&[3]), "(3,)");
        assert_eq!(repr_shape(&[2, 3]), "(2, 3)");
    }
}
