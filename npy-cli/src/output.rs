//! Printing values: JSON (the documented convention), CSV and plain text, streamed element by
//! element; and the `cat` command.

use std::io::{self, BufWriter, IsTerminal, Write};

use npy_serde::{DType, PlainType, Scalar, TimeUnit, Value};

use crate::input::{self, Elements, RawHeader, Spec, MAX_EMPTY_ITEMS};
use crate::lenient::{self, Lenient};
use crate::{CliResult, Failure, Global};

/// Output style of `cat` (and `convert` to JSON / CSV).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Readable text.
    Text,
    /// The JSON convention.
    Json,
    /// CSV, with or without the header row.
    Csv {
        /// Print the header row.
        header: bool,
    },
}

/// Which elements along the first axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Range {
    /// All of them.
    All,
    /// The first N.
    Head(u64),
    /// The last N.
    Tail(u64),
}

/// An error while printing: writing failed, or the input is bad.
pub enum PrintError {
    /// Writing the output failed.
    Io(io::Error),
    /// The data is bad.
    Data(npy_serde::Error),
    /// The operation does not apply to this array (e.g. CSV of a 3-D array).
    Unsupported(String),
}

impl From<io::Error> for PrintError {
    fn from(e: io::Error) -> Self {
        PrintError::Io(e)
    }
}

impl From<npy_serde::Error> for PrintError {
    fn from(e: npy_serde::Error) -> Self {
        PrintError::Data(e)
    }
}

impl PrintError {
    /// As a command failure; `input` names the input file, `output` the output.
    pub fn fail(self, input: &str, output: &str) -> Failure {
        match self {
            PrintError::Io(e) => Failure::write(output, e),
            PrintError::Data(e) => Failure::file(input, e),
            PrintError::Unsupported(msg) => Failure::file(input, msg),
        }
    }
}

type PResult<T = ()> = Result<T, PrintError>;

// ---------------------------------------------------------------------------------------------
// The array being printed
// ---------------------------------------------------------------------------------------------

/// An array ready to print: its (possibly sliced) shape, dtype and elements.
pub struct Printable<'a> {
    /// The shape of what is printed (the first axis cut by --head / --tail).
    pub shape: Vec<u64>,
    /// The element type.
    pub dtype: DType,
    /// The elements, in logical C order.
    pub elems: Elements<'a>,
    /// A progress bar counting data bytes (long conversions on a terminal).
    pub progress: Option<indicatif::ProgressBar>,
    /// Elements decoded since the bar was last advanced.
    pub pending: u64,
    /// Values printed as NumPy shows them although the typed reads refuse them.
    seen: Lenient,
    /// Whether each kind of [`Lenient`] was warned about already.
    warned: (bool, bool),
}

impl<'a> Printable<'a> {
    /// An array to print; with `progress`, a bar is shown if the data is large and stderr
    /// is a terminal.
    pub fn new(shape: Vec<u64>, dtype: DType, elems: Elements<'a>, progress: bool) -> Self {
        let bytes = input::product(&shape).saturating_mul(dtype.itemsize() as u64);
        Printable {
            shape,
            dtype,
            elems,
            progress: if progress { progress_bar(bytes) } else { None },
            pending: 0,
            seen: Lenient::default(),
            warned: (false, false),
        }
    }

    fn next_value(&mut self) -> PResult<Value> {
        let dtype = &self.dtype;
        if let Some(pb) = &self.progress {
            self.pending += 1;
            if self.pending == 4096 {
                pb.inc(self.pending * dtype.itemsize() as u64);
                self.pending = 0;
            }
        }
        match self.elems.next()? {
            Some(e) => {
                let index = e.index;
                let v = lenient::decode(dtype, e.bytes, e.offset, MAX_EMPTY_ITEMS, &mut self.seen)
                    .map_err(|err| PrintError::Data(err.at_record(index)))?;
                self.warn(index);
                Ok(v)
            }
            None => Err(PrintError::Data(npy_serde::Error::new(
                npy_serde::ErrorKind::UnexpectedEof {
                    what: "the array data",
                    expected: 1,
                    found: 0,
                },
            ))),
        }
    }
}

impl Printable<'_> {
    /// Warns once per kind, on stderr, that a value is printed as NumPy shows it although the
    /// library's typed reads refuse it (`npy check` reports it).
    fn warn(&mut self, index: u64) {
        if self.seen.bools && !self.warned.0 {
            self.warned.0 = true;
            eprintln!(
                "npy: warning: element {index}: a bool byte other than 0 or 1, printed as true \
                 (NumPy reads any nonzero byte as True; `npy check` reports it)"
            );
        }
        if self.seen.surrogates && !self.warned.1 {
            self.warned.1 = true;
            eprintln!(
                "npy: warning: element {index}: a string holds a UTF-16 surrogate, printed as \
                 \\uXXXX as NumPy's str has it (`npy check` reports it)"
            );
        }
    }
}

impl Drop for Printable<'_> {
    fn drop(&mut self) {
        if let Some(pb) = &self.progress {
            pb.finish_and_clear();
        }
    }
}

/// The flat element range `[start, start + len)` and the printed shape for `range`.
pub fn select(shape: &[u64], range: Range) -> (u64, u64, Vec<u64>) {
    let Some((&n, rest)) = shape.split_first() else {
        return (0, 1, Vec::new());
    };
    let inner = input::product(rest);
    let (r0, r1) = match range {
        Range::All => (0, n),
        Range::Head(k) => (0, k.min(n)),
        Range::Tail(k) => (n - k.min(n), n),
    };
    let mut out = shape.to_vec();
    out[0] = r1 - r0;
    (
        r0.saturating_mul(inner),
        (r1 - r0).saturating_mul(inner),
        out,
    )
}

// ---------------------------------------------------------------------------------------------
// Scalars as text
// ---------------------------------------------------------------------------------------------

/// The shortest text that round-trips `x` (`1.0`, `1e-320`, `-0.0`); `nan`, `inf`, `-inf`.
pub fn float_text(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        // Rust's `Debug` for f64 is the shortest round-trip representation, with an exponent
        // for very large or small magnitudes: always a valid JSON number.
        format!("{x:?}")
    }
}

/// `re+imj`, as Python's `complex()` parses it.
fn complex_text(re: f64, im: f64) -> String {
    let sign = if im.is_sign_negative() && !im.is_nan() {
        '-'
    } else {
        '+'
    };
    format!("{}{sign}{}j", float_text(re), float_text(im.abs()))
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| c as char).collect()
}

/// Python-like `repr` of a string: `'...'` with escapes for quotes, backslashes and
/// non-printable characters.
fn repr_str(s: &str) -> String {
    let body = lenient::unmark(s, |part, out| {
        for c in part.chars() {
            match c {
                '\'' => out.push_str("\\'"),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
    });
    format!("'{body}'")
}

fn repr_bytes(b: &[u8]) -> String {
    let mut out = String::from("b'");
    for &c in b {
        match c {
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x20..=0x7e => out.push(c as char),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('\'');
    out
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i128) -> (i128, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A datetime64 count as ISO 8601 text, as NumPy prints it (`2024-01-31`,
/// `2024-01-31T12:00:00.500`); `None` for the generic unit.
pub fn datetime_text(count: i64, unit: TimeUnit, mult: u32) -> Option<String> {
    let n = count as i128 * mult as i128;
    let date = |days: i128| {
        let (y, m, d) = civil_from_days(days);
        format!("{y:04}-{m:02}-{d:02}")
    };
    // (sub-second digits, units per second) for units below a day.
    let (per_sec, digits): (i128, usize) = match unit {
        TimeUnit::Generic => return None,
        TimeUnit::Year => return Some(format!("{:04}", 1970 + n)),
        TimeUnit::Month => {
            let y = 1970 + n.div_euclid(12);
            return Some(format!("{y:04}-{:02}", n.rem_euclid(12) + 1));
        }
        TimeUnit::Week => return Some(date(n * 7)),
        TimeUnit::Day => return Some(date(n)),
        TimeUnit::Hour => {
            return Some(format!(
                "{}T{:02}",
                date(n.div_euclid(24)),
                n.rem_euclid(24)
            ))
        }
        TimeUnit::Minute => {
            let m = n.rem_euclid(1440);
            return Some(format!(
                "{}T{:02}:{:02}",
                date(n.div_euclid(1440)),
                m / 60,
                m % 60
            ));
        }
        TimeUnit::Second => (1, 0),
        TimeUnit::Millisecond => (1_000, 3),
        TimeUnit::Microsecond => (1_000_000, 6),
        TimeUnit::Nanosecond => (1_000_000_000, 9),
        TimeUnit::Picosecond => (1_000_000_000_000, 12),
        TimeUnit::Femtosecond => (1_000_000_000_000_000, 15),
        TimeUnit::Attosecond => (1_000_000_000_000_000_000, 18),
    };
    let secs = n.div_euclid(per_sec);
    let frac = n.rem_euclid(per_sec);
    let s = secs.rem_euclid(86_400);
    let mut out = format!(
        "{}T{:02}:{:02}:{:02}",
        date(secs.div_euclid(86_400)),
        s / 3600,
        s / 60 % 60,
        s % 60
    );
    if digits > 0 {
        out.push_str(&format!(".{frac:0digits$}"));
    }
    Some(out)
}

/// The unit of a datetime/timedelta as NumPy spells it in a dtype: `D`, `25ms`, or empty.
fn unit_text(unit: TimeUnit, mult: u32) -> String {
    match (unit, mult) {
        (TimeUnit::Generic, _) => String::new(),
        (u, 1) => u.code().to_string(),
        (u, m) => format!("{m}{}", u.code()),
    }
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

/// Writes `v` in the JSON convention.
pub fn write_json(out: &mut dyn Write, v: &Value) -> io::Result<()> {
    match v {
        Value::Bool(b) => out.write_all(if *b { b"true" } else { b"false" }),
        Value::Int(i) => write!(out, "{i}"),
        Value::UInt(u) => write!(out, "{u}"),
        Value::Float(x) => write_json_float(out, *x),
        Value::Complex(re, im) => {
            out.write_all(b"[")?;
            write_json_float(out, *re)?;
            out.write_all(b", ")?;
            write_json_float(out, *im)?;
            out.write_all(b"]")
        }
        Value::Bytes(b) => json_str(out, &latin1(b)),
        Value::String(s) => json_str(out, s),
        Value::Void(b) => write!(out, "\"{}\"", hex(b)),
        Value::DateTime(t) | Value::TimeDelta(t) => {
            if *t == Value::NAT {
                out.write_all(b"\"NaT\"")
            } else {
                write!(out, "{t}")
            }
        }
        Value::List(items) => {
            out.write_all(b"[")?;
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b", ")?;
                }
                write_json(out, x)?;
            }
            out.write_all(b"]")
        }
        Value::Record(fields) => {
            out.write_all(b"{")?;
            for (i, (k, x)) in fields.iter().enumerate() {
                if i > 0 {
                    out.write_all(b", ")?;
                }
                json_str(out, k)?;
                out.write_all(b": ")?;
                write_json(out, x)?;
            }
            out.write_all(b"}")
        }
    }
}

fn write_json_float(out: &mut dyn Write, x: f64) -> io::Result<()> {
    if x.is_finite() {
        out.write_all(float_text(x).as_bytes())
    } else {
        write!(out, "\"{}\"", float_text(x))
    }
}

/// A JSON string literal.
pub fn json_str(out: &mut dyn Write, s: &str) -> io::Result<()> {
    lenient::json_str(out, s)
}

/// Streams the array as nested JSON lists (a bare value for 0-d). With `lines`, the items of
/// the outermost list go on lines of their own.
fn json_array(out: &mut dyn Write, p: &mut Printable<'_>, lines: bool) -> PResult {
    let shape = p.shape.clone();
    json_dims(out, p, &shape, lines)
}

fn json_dims(out: &mut dyn Write, p: &mut Printable<'_>, dims: &[u64], lines: bool) -> PResult {
    let Some((&n, rest)) = dims.split_first() else {
        let v = p.next_value()?;
        write_json(out, &v)?;
        return Ok(());
    };
    out.write_all(b"[")?;
    for i in 0..n {
        if i > 0 {
            out.write_all(if lines { b",\n  " } else { b", " })?;
        } else if lines {
            out.write_all(b"\n  ")?;
        }
        json_dims(out, p, rest, false)?;
    }
    if lines && n > 0 {
        out.write_all(b"\n")?;
    }
    out.write_all(b"]")?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Plain text
// ---------------------------------------------------------------------------------------------

/// Readable text for a value of dtype `base` with subarray dimensions `dims`.
fn text_value(out: &mut String, v: &Value, base: &DType, dims: &[u64]) {
    match (v, dims.split_first(), base) {
        (Value::List(items), Some((_, rest)), _) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                text_value(out, x, base, rest);
            }
            out.push(']');
        }
        (_, None, DType::Array(b, d)) => text_value(out, v, b, d),
        (Value::Record(fields), None, DType::Record(r)) => {
            out.push('{');
            for (i, ((name, x), f)) in fields.iter().zip(r.fields()).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(name);
                out.push_str(": ");
                text_value(out, x, &f.dtype, &[]);
            }
            out.push('}');
        }
        (_, None, DType::Plain(p)) => out.push_str(&text_scalar(v, *p)),
        // Value and dtype disagree (cannot happen with the library's decoder): fall back to
        // the JSON form, which needs no dtype.
        _ => {
            let mut buf = Vec::new();
            if write_json(&mut buf, v).is_ok() {
                out.push_str(&String::from_utf8_lossy(&buf));
            }
        }
    }
}

fn text_scalar(v: &Value, p: PlainType) -> String {
    match v {
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(x) => float_text(*x),
        Value::Complex(re, im) => format!("({})", complex_text(*re, *im)),
        Value::Bytes(b) => repr_bytes(b),
        Value::String(s) => repr_str(s),
        Value::Void(b) => format!("0x{}", hex(b)),
        Value::DateTime(t) => {
            if *t == Value::NAT {
                return "NaT".into();
            }
            match p.scalar() {
                Scalar::DateTime(unit, mult) => {
                    datetime_text(*t, unit, mult).unwrap_or_else(|| t.to_string())
                }
                _ => t.to_string(),
            }
        }
        Value::TimeDelta(t) => {
            if *t == Value::NAT {
                return "NaT".into();
            }
            match p.scalar() {
                Scalar::TimeDelta(unit, mult) if unit != TimeUnit::Generic => {
                    format!("{t} {}", unit_text(unit, mult))
                }
                _ => t.to_string(),
            }
        }
        Value::List(_) | Value::Record(_) => {
            let mut buf = Vec::new();
            let _ = write_json(&mut buf, v);
            String::from_utf8_lossy(&buf).into_owned()
        }
    }
}

/// One element per line (prefixed by its index for 2-D and more); a 0-d array is one line.
fn text_array(out: &mut dyn Write, p: &mut Printable<'_>, indent: &str) -> PResult {
    let shape = p.shape.clone();
    let count = input::product(&shape);
    let dtype = p.dtype.clone();
    let mut idx = vec![0u64; shape.len()];
    let mut line = String::new();
    for _ in 0..count {
        let v = p.next_value()?;
        line.clear();
        line.push_str(indent);
        if shape.len() >= 2 {
            line.push('[');
            for (k, i) in idx.iter().enumerate() {
                if k > 0 {
                    line.push_str(", ");
                }
                line.push_str(&i.to_string());
            }
            line.push_str("] ");
        }
        text_value(&mut line, &v, &dtype, &[]);
        line.push('\n');
        out.write_all(line.as_bytes())?;
        for k in (0..shape.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// CSV
// ---------------------------------------------------------------------------------------------

/// Column paths of one element of `dt`: record fields joined with `.`, subarray items as `[i]`.
pub fn leaf_paths(dt: &DType, prefix: &str, out: &mut Vec<String>) {
    match dt {
        DType::Plain(_) => out.push(prefix.to_string()),
        DType::Record(r) => {
            for f in r.fields() {
                let p = if prefix.is_empty() {
                    f.name.clone()
                } else {
                    format!("{prefix}.{}", f.name)
                };
                leaf_paths(&f.dtype, &p, out);
            }
        }
        DType::Array(base, dims) => sub_paths(base, dims, prefix, out),
    }
}

fn sub_paths(base: &DType, dims: &[u64], prefix: &str, out: &mut Vec<String>) {
    match dims.split_first() {
        None => leaf_paths(base, prefix, out),
        Some((&n, rest)) => {
            for i in 0..n {
                sub_paths(base, rest, &format!("{prefix}[{i}]"), out);
            }
        }
    }
}

fn csv_cell(v: &Value, out: &mut Vec<String>) {
    let text = match v {
        Value::Bool(b) => if *b { "true" } else { "false" }.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(x) => float_text(*x),
        Value::Complex(re, im) => complex_text(*re, *im),
        Value::Bytes(b) => csv_quote(&latin1(b)),
        Value::String(s) => csv_quote(s),
        Value::Void(b) => hex(b),
        Value::DateTime(t) | Value::TimeDelta(t) => {
            if *t == Value::NAT {
                "NaT".into()
            } else {
                t.to_string()
            }
        }
        Value::List(items) => {
            for x in items {
                csv_cell(x, out);
            }
            return;
        }
        Value::Record(fields) => {
            for (_, x) in fields {
                csv_cell(x, out);
            }
            return;
        }
    };
    out.push(text);
}

/// Quotes a CSV field if it holds a comma, quote or line break (RFC 4180).
fn csv_quote(s: &str) -> String {
    let s = &lenient::unmark(s, |part, out| out.push_str(part));
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv_array(out: &mut dyn Write, p: &mut Printable<'_>, header: bool) -> PResult {
    let shape = p.shape.clone();
    if shape.len() > 2 {
        return Err(PrintError::Unsupported(format!(
            "CSV needs a 0-d, 1-D or 2-D array, this one has shape {}",
            input::shape_text(&shape)
        )));
    }
    let (rows, per_row) = match shape.as_slice() {
        [] => (1, 1),
        [n] => (*n, 1),
        [n, m] => (*n, *m),
        _ => (0, 0),
    };
    if header {
        let mut elem = Vec::new();
        leaf_paths(&p.dtype, "", &mut elem);
        let mut cols = Vec::new();
        if shape.len() == 2 {
            for j in 0..per_row {
                for e in &elem {
                    cols.push(if e.is_empty() {
                        format!("[{j}]")
                    } else if e.starts_with('[') {
                        format!("[{j}]{e}")
                    } else {
                        format!("[{j}].{e}")
                    });
                }
            }
        } else {
            for e in elem {
                cols.push(if e.is_empty() { "value".to_string() } else { e });
            }
        }
        let cols: Vec<String> = cols.iter().map(|c| csv_quote(c)).collect();
        writeln!(out, "{}", cols.join(","))?;
    }
    let mut cells = Vec::new();
    for _ in 0..rows {
        cells.clear();
        for _ in 0..per_row {
            let v = p.next_value()?;
            csv_cell(&v, &mut cells);
        }
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

/// Data at least this large gets a progress bar (when stderr is a terminal).
pub const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// A progress bar over `total` bytes, if that is a long job and stderr is a terminal.
pub fn progress_bar(total: u64) -> Option<indicatif::ProgressBar> {
    if total < PROGRESS_MIN_BYTES || !io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        pb.set_style(style);
    }
    Some(pb)
}

/// Prints one array in `style`.
pub fn print_array(out: &mut dyn Write, p: &mut Printable<'_>, style: Style) -> PResult {
    match style {
        Style::Json => {
            json_array(out, p, true)?;
            out.write_all(b"\n")?;
            Ok(())
        }
        Style::Csv { header } => csv_array(out, p, header),
        Style::Text => text_array(out, p, ""),
    }
}

// ---------------------------------------------------------------------------------------------
// cat
// ---------------------------------------------------------------------------------------------

/// `npy cat`.
pub fn cat(g: &Global, file: &str, member: Option<&str>, style: Style, range: Range) -> CliResult {
    let spec = input::resolve(file, member)?;
    let stdout = io::stdout().lock();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    write_input(g, &spec, style, range, &mut out, "standard output", false)?;
    out.flush()
        .map_err(|e| Failure::write("standard output", e))
}

/// Writes the values of `spec` (a file, an archive, or one member) to `out` in `style`.
pub fn write_input(
    g: &Global,
    spec: &Spec,
    style: Style,
    range: Range,
    out: &mut dyn Write,
    out_name: &str,
    progress: bool,
) -> CliResult {
    let zip = input::is_zip(&spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    if !zip {
        if spec.member.is_some() {
            return Err(Failure::usage(format!(
                "{}: not an .npz archive, so it has no members",
                spec.path.display()
            )));
        }
        let mut f = input::NpyFile::open(g, &spec.path, &spec.display)?;
        let (start, len, shape) = select(&f.header.header().shape, range);
        let dtype = f.header.dtype().clone();
        check_empty(g, &dtype, &shape, &spec.display)?;
        let elems = input::file_elements(&mut f, &spec.display, start, len)?;
        let mut p = Printable::new(shape, dtype, elems, progress);
        return print_array(out, &mut p, style).map_err(|e| e.fail(&spec.display, out_name));
    }
    let archive_name = spec.path.display().to_string();
    let mut archive = input::open_archive(g, &spec.path, &archive_name)?;
    if let Some(key) = &spec.member {
        let mut m = archive
            .by_key(key)
            .map_err(|e| Failure::file(&archive_name, e))?;
        let header = member_header(&mut m, &spec.display)?;
        let (start, len, shape) = select(&header.header().shape, range);
        check_empty(g, header.dtype(), &shape, &spec.display)?;
        let elems = input::member_elements(m, &header, &spec.display, start, len)?;
        let mut p = Printable::new(shape, header.dtype().clone(), elems, progress);
        return print_array(out, &mut p, style).map_err(|e| e.fail(&spec.display, out_name));
    }
    if matches!(style, Style::Csv { .. }) {
        return Err(Failure::usage(format!(
            "{archive_name}: CSV prints one array: pick a member with --member KEY or {archive_name}:KEY"
        )));
    }
    let w = |e: io::Error| Failure::write(out_name, e);
    if style == Style::Json {
        out.write_all(b"{").map_err(w)?;
    }
    let mut first = true;
    for index in 0..archive.len() {
        let mut m = archive
            .by_index(index)
            .map_err(|e| Failure::file(&archive_name, e))?;
        let key = m.info().key.clone();
        let display = format!("{archive_name}:{key}");
        let Some(header) = member_header_if_npy(&mut m, &display)? else {
            // As `np.load` returns such a member as raw bytes: nothing to print, but say so.
            eprintln!("npy: note: {display} is not an .npy array (skipped)");
            continue;
        };
        let (start, len, shape) = select(&header.header().shape, range);
        check_empty(g, header.dtype(), &shape, &display)?;
        let elems = input::member_elements(m, &header, &display, start, len)?;
        let mut p = Printable::new(shape, header.dtype().clone(), elems, progress);
        match style {
            Style::Json => {
                out.write_all(if first { b"\n  " } else { b",\n  " })
                    .map_err(w)?;
                json_str(out, &key).map_err(w)?;
                out.write_all(b": ").map_err(w)?;
                json_array(out, &mut p, false).map_err(|e| e.fail(&display, out_name))?;
            }
            _ => {
                if !first {
                    out.write_all(b"\n").map_err(w)?;
                }
                writeln!(
                    out,
                    "{key}: shape {}, dtype {}",
                    input::shape_text(&header.header().shape),
                    header.dtype()
                )
                .map_err(w)?;
                text_array(out, &mut p, "  ").map_err(|e| e.fail(&display, out_name))?;
            }
        }
        first = false;
    }
    if style == Style::Json {
        out.write_all(if first { b"}\n" } else { b"\n}\n" })
            .map_err(w)?;
    }
    Ok(())
}

/// Refuses to print an array with more values that no data byte pays for than
/// `--max-empty-items` (the library's `max_empty_items` bound, for the tool's streaming output):
/// their number is not bounded by the file's size.
fn check_empty(g: &Global, dtype: &DType, shape: &[u64], display: &str) -> CliResult {
    let n = npy_serde::Header::new(dtype.clone(), shape.to_vec()).empty_value_count();
    if n > g.max_empty_items {
        return Err(Failure::file(
            display,
            format!(
                "printing it would write {n} values without data bytes (elements of a zero-size \
                 dtype, or lists above a zero-length axis), more than the limit of {}; raise it \
                 with --max-empty-items if you mean it",
                g.max_empty_items
            ),
        ));
    }
    Ok(())
}

/// Reads a member's header (with its bytes).
pub fn member_header(m: &mut input::Member<'_>, display: &str) -> CliResult<RawHeader> {
    let parsed = m
        .header()
        .map_err(|e| input::header_failure(display, e))?
        .clone();
    let bytes = m.header_bytes().unwrap_or_default().to_vec();
    Ok(RawHeader { parsed, bytes })
}

/// Like [`member_header`], but `None` for a member that is not an `.npy` file: NumPy decides
/// by the magic string, and so do we, once the member's bytes are verified complete; any
/// other failure (CRC, inflate error, wrong size, truncated archive) is an error naming it.
pub fn member_header_if_npy(
    m: &mut input::Member<'_>,
    display: &str,
) -> CliResult<Option<RawHeader>> {
    let read = m.header().map(|_| ());
    match read {
        Ok(()) => member_header(m, display).map(Some),
        Err(e) if e.kind().code() == "bad_magic" || (e.is_eof() && m.position() < 6) => {
            // Not an .npy file only if the member's complete bytes check out (its size and
            // CRC-32): a corrupt compressed member inflates to anything, so its first bytes say
            // nothing until the whole member is verified.
            match std::io::copy(m, &mut std::io::sink()) {
                Ok(_) => Ok(None),
                Err(io) => Err(input::header_failure(display, npy_serde::Error::from(io))),
            }
        }
        Err(e) => Err(input::header_failure(display, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_round_trip() {
        for x in [
            0.5,
            -0.0,
            1e-320,
            1.401298464324817e-45,
            1e16,
            0.1,
            123456789.125,
        ] {
            let t = float_text(x);
            assert_eq!(t.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{t}");
            let j: serde_json::Value = serde_json::from_str(&t).unwrap();
            assert!(j.is_f64(), "{t}");
        }
        assert_eq!(float_text(f64::NAN), "nan");
        assert_eq!(float_text(f64::NEG_INFINITY), "-inf");
        assert_eq!(complex_text(1.0, -2.0), "1.0-2.0j");
        assert_eq!(complex_text(f64::NAN, f64::INFINITY), "nan+infj");
    }

    #[test]
    fn json_convention() {
        let v = Value::Record(vec![
            ("a".into(), Value::UInt(u64::MAX)),
            (
                "b".into(),
                Value::List(vec![Value::Float(f64::NAN), Value::Float(1.5)]),
            ),
            ("s".into(), Value::Bytes(vec![b'x', 0xe9])),
            ("v".into(), Value::Void(vec![0, 0xff])),
            ("t".into(), Value::DateTime(Value::NAT)),
            ("c".into(), Value::Complex(0.0, f64::INFINITY)),
        ]);
        let mut out = Vec::new();
        write_json(&mut out, &v).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a": 18446744073709551615, "b": ["nan", 1.5], "s": "xé", "v": "00ff", "t": "NaT", "c": [0.0, "inf"]}"#
        );
    }

    #[test]
    fn datetimes_like_numpy() {
        // np.datetime64(0, 'D') etc.
        assert_eq!(datetime_text(0, TimeUnit::Day, 1).unwrap(), "1970-01-01");
        assert_eq!(
            datetime_text(19_753, TimeUnit::Day, 1).unwrap(),
            "2024-01-31"
        );
        assert_eq!(datetime_text(-1, TimeUnit::Day, 1).unwrap(), "1969-12-31");
        assert_eq!(
            datetime_text(54 * 12 + 1, TimeUnit::Month, 1).unwrap(),
            "2024-02"
        );
        assert_eq!(
            datetime_text(-1, TimeUnit::Millisecond, 1).unwrap(),
            "1969-12-31T23:59:59.999"
        );
        assert_eq!(
            datetime_text(3, TimeUnit::Second, 10).unwrap(),
            "1970-01-01T00:00:30"
        );
        assert_eq!(datetime_text(5, TimeUnit::Generic, 1), None);
    }

    #[test]
    fn csv_paths() {
        let dt: DType =
            "[('pos', [('x', '<f8'), ('y', '<f8')]), ('v', '<i4', (2,)), ('m', '|u1', (1, 2))]"
                .parse()
                .unwrap();
        let mut p = Vec::new();
        leaf_paths(&dt, "", &mut p);
        assert_eq!(p, ["pos.x", "pos.y", "v[0]", "v[1]", "m[0][0]", "m[0][1]"]);
        assert_eq!(csv_quote("a,b"), "\"a,b\"");
        assert_eq!(csv_quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn selection() {
        assert_eq!(select(&[5, 3], Range::Head(2)), (0, 6, vec![2, 3]));
        assert_eq!(select(&[5, 3], Range::Tail(2)), (9, 6, vec![2, 3]));
        assert_eq!(select(&[5], Range::Tail(9)), (0, 5, vec![5]));
        assert_eq!(select(&[], Range::Head(0)), (0, 1, vec![]));
    }
}
