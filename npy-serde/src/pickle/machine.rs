//! The pickle virtual machine, data only: each opcode of protocols 0-5 either builds a node of
//! the object graph ([`Graph`]), moves references on the stack or the memo, or is refused. No
//! global is imported and no callable is called: the few globals NumPy's pickles need are
//! recognised by name ([`Known`]) and their `REDUCE`/`BUILD` become nodes that the expansion
//! (`expand.rs`) turns into data; any other global stays a name, and applying it is an error
//! naming it.
//!
//! Every opcode costs O(1) plus the items it moves, so interpreting is linear in the input;
//! sharing (a memo reference used many times) is only paid for, and bounded, on expansion.

use super::cursor::{bad, Cursor};
use super::globals::{known_global, python3_name};
use super::graph::{Graph, Id, Node};
use super::stream::{walk, Run};
use super::text::{decode_py2_string, decode_raw_unicode_escape, int_from_le_bytes, int_from_text};
use super::value::PyValue;
use super::Encoding;
use crate::error::Result;
use std::collections::HashMap;

/// A run of the machine over one pickle.
struct Machine<'a> {
    cur: Cursor<'a>,
    encoding: Encoding,
    nodes: Vec<Node>,
    stack: Vec<Id>,
    marks: Vec<usize>,
    memo: Memo,
    /// Scanning (for tools): every global is recorded, and what would be refused leaves a
    /// placeholder instead, so the whole stream is seen. Still nothing is called.
    scan: Option<Scan>,
    /// The protocol `PROTO` declared (0 without one): below 3, Python 2's names of globals are
    /// read as Python 3's, as Python's unpickler does (`fix_imports`).
    protocol: u8,
    /// Streaming (`stream.rs`): whether to walk the first array data list met, and the run
    /// walked.
    stream: bool,
    run: Option<Run>,
}

/// The memo: keys 0, 1, 2.. (what MEMOIZE and NumPy's pickles use) in a vector, any other
/// key in a map; `len` is the number of keys, as Python's `len(memo)`. A streamed run's keys
/// (`stream.rs`) are one `block` (first key, count, node) instead of a vector entry each; keys
/// after it go on in `dense`, shifted down by the block's count.
#[derive(Default)]
struct Memo {
    dense: Vec<Id>,
    sparse: HashMap<u64, Id>,
    block: Option<(u64, u64, Id)>,
}

impl Memo {
    /// The number of keys 0, 1, 2.. held in order.
    fn dense_len(&self) -> u64 {
        self.dense.len() as u64 + self.block.map_or(0, |(_, n, _)| n)
    }

    /// Where dense key `key` is in `dense` (`Err(id)` if it is in the block).
    fn slot(&self, key: u64) -> std::result::Result<u64, Id> {
        match self.block {
            Some((first, n, id)) if key >= first => match key - first {
                k if k < n => Err(id),
                _ => Ok(key - n),
            },
            _ => Ok(key),
        }
    }

    fn get(&self, key: u64) -> Option<Id> {
        if key < self.dense_len() {
            return match self.slot(key) {
                Ok(i) => Some(self.dense[i as usize]),
                Err(id) => Some(id),
            };
        }
        self.sparse.get(&key).copied()
    }

    fn insert(&mut self, key: u64, id: Id) {
        let n = self.dense_len();
        if key < n {
            match self.slot(key) {
                Ok(i) => self.dense[i as usize] = id,
                // A key of the block set again: the block ends before it, the keys after it
                // move into `dense` (at most the block's count, once: a streamed pickle's
                // suffix never does this, a hostile one pays linear work).
                Err(_) => {
                    let (first, count, taken) = self.block.take().expect("the key is in it");
                    // The block was set at the end of `dense`: it starts at `first` there.
                    let at = first as usize;
                    let tail: Vec<Id> = (first..first + count)
                        .map(|k| if k == key { id } else { taken })
                        .collect();
                    self.dense.splice(at..at, tail);
                }
            }
        } else if key == n {
            self.sparse.remove(&key);
            self.dense.push(id);
            // Keys stored sparse that now follow on move over, so no key is in both.
            while let Some(next) = self.sparse.remove(&self.dense_len()) {
                self.dense.push(next);
            }
        } else {
            self.sparse.insert(key, id);
        }
    }

    /// Keys `dense_len()..dense_len() + n` all pointing to `id` (a streamed run's items).
    fn add_block(&mut self, n: u64, id: Id) -> bool {
        if self.block.is_some() || !self.sparse.is_empty() {
            return false;
        }
        self.block = Some((self.dense.len() as u64, n, id));
        true
    }

    fn len(&self) -> usize {
        self.dense_len() as usize + self.sparse.len()
    }
}

/// What a scan found.
#[derive(Default)]
pub(crate) struct Scan {
    pub(crate) protocol: Option<u8>,
    pub(crate) globals: Vec<(String, String)>,
}

/// Interprets `bytes` into a graph. `at` is the offset of the opcode being run (for errors).
pub(crate) fn run(bytes: &[u8], encoding: Encoding) -> Result<Graph> {
    let mut m = Machine::new(bytes, encoding, None);
    m.go()
}

/// [`run`], except that the first array data list of the streaming shape (`stream.rs`) is
/// walked, not built: its place is returned beside the graph, where it stays an empty list
/// whose items' memo keys all point to [`Run::taken`]. A run not of that shape is interpreted
/// as [`run`] does, so errors are [`run`]'s.
pub(crate) fn run_streaming(bytes: &[u8], encoding: Encoding) -> Result<(Graph, Option<Run>)> {
    let mut m = Machine::new(bytes, encoding, None);
    m.stream = true;
    let g = m.go()?;
    Ok((g, m.run))
}

/// Scans `bytes` for the globals it names and its protocol, up to `STOP` or the first
/// malformed opcode (whose error is returned beside what was found).
pub(crate) fn scan(bytes: &[u8]) -> (Scan, Option<crate::error::Error>) {
    let mut m = Machine::new(bytes, Encoding::Bytes, Some(Scan::default()));
    let err = m.go().err();
    (m.scan.take().unwrap_or_default(), err)
}

impl<'a> Machine<'a> {
    fn new(bytes: &'a [u8], encoding: Encoding, scan: Option<Scan>) -> Self {
        Machine {
            cur: Cursor::new(bytes),
            encoding,
            nodes: Vec::new(),
            stack: Vec::new(),
            marks: Vec::new(),
            memo: Memo::default(),
            scan,
            protocol: 0,
            stream: false,
            run: None,
        }
    }

    fn go(&mut self) -> Result<Graph> {
        let m = self;
        loop {
            let at = m.cur.pos();
            let op = m.cur.u8("an opcode (the pickle ends without STOP)")?;
            if op == b'.' {
                let root = m.pop(at, "STOP")?;
                return Ok(Graph {
                    nodes: std::mem::take(&mut m.nodes),
                    root,
                });
            }
            if m.scan.is_some() && refused(op).is_some() {
                m.scan_refused(op, at)?;
                continue;
            }
            m.step(op, at)?;
            if op == b']' && m.stream && m.run.is_none() && m.at_array_data() {
                m.walk_data()?;
            }
        }
    }

    /// Whether the list just pushed is an array's data: the fifth item of a state tuple being
    /// built right above a `_reconstruct` array without state.
    fn at_array_data(&self) -> bool {
        let Some(&mark) = self.marks.last() else {
            return false;
        };
        mark >= 1
            && self.stack.len() == mark + 5
            && matches!(
                self.nodes[self.stack[mark - 1]],
                Node::Array { state: None }
            )
    }

    /// Walks the data list's items (`stream.rs`) after the list's own memo put, if it has
    /// one; a run not of the streaming shape is left to the opcode loop.
    fn walk_data(&mut self) -> Result<()> {
        let list = *self.stack.last().expect("the list was just pushed");
        if let Some(op @ (b'q' | b'r' | 0x94)) = self.cur.peek() {
            let at = self.cur.pos();
            self.cur.u8("an opcode")?;
            self.step(op, at)?;
        }
        if !self.memo.sparse.is_empty() {
            return Ok(());
        }
        let start = self.cur.pos();
        let first_key = self.memo.len() as u64;
        let Some(w) = walk(&mut self.cur, first_key, |_| Ok(()))? else {
            self.cur.seek(start);
            return Ok(());
        };
        let taken = self.nodes.len();
        if !self.memo.add_block(w.puts, taken) {
            self.cur.seek(start);
            return Ok(());
        }
        self.nodes.push(Node::Leaf(PyValue::None));
        self.run = Some(Run {
            start,
            end: self.cur.pos(),
            count: w.count,
            list,
            taken,
            first_key,
        });
        Ok(())
    }

    /// A refused opcode, when scanning: its arguments taken, a placeholder left.
    fn scan_refused(&mut self, op: u8, at: usize) -> Result<()> {
        match op {
            b'i' => {
                let module = self.cur.text_line("an INST module")?;
                let name = self.cur.text_line("an INST name")?;
                self.record(module, name);
                self.pop_mark(at, "INST")?;
            }
            b'o' => {
                self.pop_mark(at, "OBJ")?;
            }
            0x81 | 0x92 => {
                for _ in 0..(if op == 0x81 { 2 } else { 3 }) {
                    self.pop(at, "NEWOBJ")?;
                }
            }
            0x82 => {
                self.cur.u8("EXT1")?;
            }
            0x83 => {
                self.cur.u16("EXT2")?;
            }
            0x84 => {
                self.cur.u32("EXT4")?;
            }
            b'P' => {
                self.cur.line("a PERSID")?;
            }
            b'Q' => {
                self.pop(at, "BINPERSID")?;
            }
            0x98 => return Ok(()),
            _ => {}
        }
        self.leaf(PyValue::None);
        Ok(())
    }

    fn record(&mut self, module: &str, name: &str) {
        if let Some(s) = &mut self.scan
            && !s.globals.iter().any(|(m, n)| m == module && n == name)
        {
            s.globals.push((module.into(), name.into()));
        }
    }
}

/// The names of refused opcodes, for their errors.
fn refused(op: u8) -> Option<&'static str> {
    Some(match op {
        b'P' | b'Q' => {
            "a persistent id (PERSID/BINPERSID), which only the pickler's own loader resolves"
        }
        b'i' => "INST (creating an instance of a class)",
        b'o' => "OBJ (creating an instance of a class)",
        0x81 => "NEWOBJ (creating an instance of a class)",
        0x92 => "NEWOBJ_EX (creating an instance of a class)",
        0x82..=0x84 => "EXT1/EXT2/EXT4 (the copyreg extension registry)",
        0x97 => "NEXT_BUFFER: a protocol-5 out-of-band buffer, which a file cannot carry",
        0x98 => "READONLY_BUFFER: a protocol-5 out-of-band buffer, which a file cannot carry",
        _ => return None,
    })
}

impl<'a> Machine<'a> {
    fn push(&mut self, node: Node) {
        self.nodes.push(node);
        self.stack.push(self.nodes.len() - 1);
    }

    fn leaf(&mut self, v: PyValue) {
        self.push(Node::Leaf(v));
    }

    fn pop(&mut self, at: usize, op: &str) -> Result<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(bad(format!("{op} needs a value, the stack is empty"), at));
        }
        Ok(self.stack.pop().expect("checked above"))
    }

    fn top(&self, at: usize, op: &str) -> Result<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(bad(format!("{op} needs a value, the stack is empty"), at));
        }
        Ok(*self.stack.last().expect("checked above"))
    }

    /// The items above the topmost mark, which is removed.
    fn pop_mark(&mut self, at: usize, op: &str) -> Result<Vec<Id>> {
        let mark = self
            .marks
            .pop()
            .ok_or_else(|| bad(format!("{op} without a MARK"), at))?;
        Ok(self.stack.split_off(mark))
    }

    fn memo_get(&self, key: u64, at: usize) -> Result<Id> {
        self.memo.get(key).ok_or_else(|| {
            bad(
                format!(
                    "memo reference {key} was never stored (the memo holds {} entries)",
                    self.memo.len()
                ),
                at,
            )
        })
    }

    fn memo_put(&mut self, key: u64, at: usize) -> Result<()> {
        let id = self.top(at, "PUT")?;
        self.memo.insert(key, id);
        Ok(())
    }

    fn str_of(&self, id: Id) -> Option<&str> {
        match &self.nodes[id] {
            Node::Leaf(PyValue::Str(s)) => Some(s),
            _ => None,
        }
    }

    fn global(&mut self, module: &str, name: &str) {
        self.record(module, name);
        let (module, name) = match self.protocol {
            0..3 => python3_name(module, name),
            _ => (module, name),
        };
        match known_global(module, name) {
            Some(k) => self.push(Node::Known(k)),
            None => self.leaf(PyValue::Global {
                module: module.into(),
                name: name.into(),
            }),
        }
    }

    fn utf8(&mut self, b: &[u8], at: usize) -> Result<()> {
        let s = std::str::from_utf8(b).map_err(|_| bad("a str is not valid UTF-8", at))?;
        self.leaf(PyValue::Str(s.into()));
        Ok(())
    }

    /// A Python 2 `str` (STRING/BINSTRING/SHORT_BINSTRING), decoded as the caller chose.
    fn py2_str(&mut self, b: &[u8], at: usize) -> Result<()> {
        let v = match self.encoding {
            Encoding::Bytes => PyValue::Bytes(b.to_vec()),
            Encoding::Latin1 => PyValue::Str(b.iter().map(|&c| c as char).collect()),
            Encoding::Ascii => {
                if !b.is_ascii() {
                    return Err(bad(
                        "a Python 2 str holds non-ASCII bytes: read it with the encoding \
                         latin1 (NumPy's encoding='latin1') or bytes (PickleOptions::encoding, \
                         the table option pickle_encoding, npy --pickle-encoding)",
                        at,
                    ));
                }
                PyValue::Str(String::from_utf8_lossy(b).into_owned())
            }
        };
        self.leaf(v);
        Ok(())
    }

    fn step(&mut self, op: u8, at: usize) -> Result<()> {
        if let Some(what) = refused(op) {
            return Err(bad(
                format!("{what} is refused: nothing is ever called"),
                at,
            ));
        }
        match op {
            0x80 => {
                let v = self.cur.u8("the protocol number")?;
                if v > 5 {
                    return Err(bad(
                        format!("unknown pickle protocol {v} (0 to 5 exist)"),
                        at,
                    ));
                }
                self.protocol = v;
                if let Some(s) = &mut self.scan {
                    s.protocol = Some(v);
                }
            }
            0x95 => {
                self.cur.u64("a frame length")?;
            }
            b'(' => self.marks.push(self.stack.len()),
            b'0' => {
                self.pop(at, "POP")?;
            }
            b'1' => {
                self.pop_mark(at, "POP_MARK")?;
            }
            b'2' => {
                let id = self.top(at, "DUP")?;
                self.stack.push(id);
            }
            // ---- constants and numbers ----
            b'N' => self.leaf(PyValue::None),
            0x88 => self.leaf(PyValue::Bool(true)),
            0x89 => self.leaf(PyValue::Bool(false)),
            b'K' => {
                let v = self.cur.u8("BININT1")?;
                self.leaf(PyValue::Int(v.into()));
            }
            b'M' => {
                let v = self.cur.u16("BININT2")?;
                self.leaf(PyValue::Int(v.into()));
            }
            b'J' => {
                let v = self.cur.u32("BININT")? as i32;
                self.leaf(PyValue::Int(v.into()));
            }
            0x8a | 0x8b => {
                let b = self
                    .cur
                    .counted(if op == 0x8a { 1 } else { 4 }, "a LONG1/LONG4")?;
                let v = int_from_le_bytes(b).map_err(|e| bad(e, at))?;
                self.leaf(v);
            }
            b'I' => {
                let t = self.cur.text_line("an INT")?;
                let v = match t {
                    "00" => PyValue::Bool(false),
                    "01" => PyValue::Bool(true),
                    _ => int_from_text(t).map_err(|e| bad(e, at))?,
                };
                self.leaf(v);
            }
            b'L' => {
                let t = self.cur.text_line("a LONG")?;
                let v = int_from_text(t.strip_suffix('L').unwrap_or(t)).map_err(|e| bad(e, at))?;
                self.leaf(v);
            }
            b'F' => {
                let t = self.cur.text_line("a FLOAT")?;
                let v: f64 = t
                    .trim()
                    .parse()
                    .map_err(|_| bad(format!("FLOAT {t:?} is not a number"), at))?;
                self.leaf(PyValue::Float(v));
            }
            b'G' => {
                let b = self.cur.take(8, "a BINFLOAT")?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                self.leaf(PyValue::Float(f64::from_be_bytes(a)));
            }
            // ---- strings and bytes ----
            b'S' => {
                let l = self.cur.line("a STRING")?;
                let b = decode_py2_string(l).map_err(|e| bad(e, at))?;
                self.py2_str(&b, at)?;
            }
            b'T' => {
                let b = self.cur.counted(4, "a BINSTRING")?;
                self.py2_str(b, at)?;
            }
            b'U' => {
                let b = self.cur.counted(1, "a SHORT_BINSTRING")?;
                self.py2_str(b, at)?;
            }
            b'V' => {
                let l = self.cur.line("a UNICODE")?;
                let s = decode_raw_unicode_escape(l).map_err(|e| bad(e, at))?;
                self.leaf(PyValue::Str(s));
            }
            0x8c => {
                let b = self.cur.counted(1, "a SHORT_BINUNICODE")?;
                self.utf8(b, at)?;
            }
            b'X' => {
                let b = self.cur.counted(4, "a BINUNICODE")?;
                self.utf8(b, at)?;
            }
            0x8d => {
                let b = self.cur.counted(8, "a BINUNICODE8")?;
                self.utf8(b, at)?;
            }
            b'C' | b'B' | 0x8e | 0x96 => {
                let width = match op {
                    b'C' => 1,
                    b'B' => 4,
                    _ => 8,
                };
                let b = self.cur.counted(width, "a bytes value")?;
                self.leaf(PyValue::Bytes(b.to_vec()));
            }
            // ---- containers ----
            b']' => self.push(Node::List(Vec::new())),
            b')' => self.push(Node::Tuple(Vec::new())),
            b'}' => self.push(Node::Dict(Vec::new())),
            0x8f => self.push(Node::Set(Vec::new())),
            b'l' => {
                let items = self.pop_mark(at, "LIST")?;
                self.push(Node::List(items));
            }
            b't' => {
                let items = self.pop_mark(at, "TUPLE")?;
                self.push(Node::Tuple(items));
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                let floor = self.marks.last().copied().unwrap_or(0);
                if self.stack.len() < floor + n {
                    return Err(bad(format!("TUPLE{n} needs {n} values on the stack"), at));
                }
                let items = self.stack.split_off(self.stack.len() - n);
                self.push(Node::Tuple(items));
            }
            0x91 => {
                let items = self.pop_mark(at, "FROZENSET")?;
                self.push(Node::Set(items));
            }
            b'd' => {
                let items = self.pop_mark(at, "DICT")?;
                let pairs = pairs(items, at)?;
                self.push(Node::Dict(pairs));
            }
            b'a' => {
                let item = self.pop(at, "APPEND")?;
                let list = self.top(at, "APPEND")?;
                self.extend(list, vec![item], at)?;
            }
            b'e' => {
                let items = self.pop_mark(at, "APPENDS")?;
                let list = self.top(at, "APPENDS")?;
                self.extend(list, items, at)?;
            }
            0x90 => {
                let items = self.pop_mark(at, "ADDITEMS")?;
                let set = self.top(at, "ADDITEMS")?;
                match &mut self.nodes[set] {
                    Node::Set(v) => v.extend(items),
                    _ => return Err(bad("ADDITEMS on a value that is not a set", at)),
                }
            }
            b's' => {
                let v = self.pop(at, "SETITEM")?;
                let k = self.pop(at, "SETITEM")?;
                let d = self.top(at, "SETITEM")?;
                self.set_items(d, vec![(k, v)], at)?;
            }
            b'u' => {
                let items = self.pop_mark(at, "SETITEMS")?;
                let p = pairs(items, at)?;
                let d = self.top(at, "SETITEMS")?;
                self.set_items(d, p, at)?;
            }
            // ---- the memo ----
            0x94 => {
                let key = self.memo.len() as u64;
                self.memo_put(key, at)?;
            }
            b'p' => {
                let t = self.cur.text_line("a PUT index")?;
                let key = t.parse().map_err(|_| bad(format!("PUT index {t:?}"), at))?;
                self.memo_put(key, at)?;
            }
            b'q' => {
                let key = self.cur.u8("a BINPUT index")?.into();
                self.memo_put(key, at)?;
            }
            b'r' => {
                let key = self.cur.u32("a LONG_BINPUT index")?.into();
                self.memo_put(key, at)?;
            }
            b'g' => {
                let t = self.cur.text_line("a GET index")?;
                let key = t.parse().map_err(|_| bad(format!("GET index {t:?}"), at))?;
                let id = self.memo_get(key, at)?;
                self.stack.push(id);
            }
            b'h' => {
                let key = self.cur.u8("a BINGET index")?.into();
                let id = self.memo_get(key, at)?;
                self.stack.push(id);
            }
            b'j' => {
                let key = self.cur.u32("a LONG_BINGET index")?.into();
                let id = self.memo_get(key, at)?;
                self.stack.push(id);
            }
            // ---- globals, calls and state: recognised by name, nothing imported ----
            b'c' => {
                let module = self.cur.text_line("a GLOBAL module")?;
                let name = self.cur.text_line("a GLOBAL name")?;
                self.global(module, name);
            }
            0x93 => {
                let name = self.pop(at, "STACK_GLOBAL")?;
                let module = self.pop(at, "STACK_GLOBAL")?;
                let (Some(m), Some(n)) = (self.str_of(module), self.str_of(name)) else {
                    return Err(bad("STACK_GLOBAL needs a module and a name as str", at));
                };
                let (m, n) = (m.to_owned(), n.to_owned());
                self.global(&m, &n);
            }
            b'R' => {
                let args = self.pop(at, "REDUCE")?;
                let callable = self.pop(at, "REDUCE")?;
                match super::numpy::reduce(&self.nodes, callable, args, self.encoding) {
                    Ok(node) => self.push(node),
                    Err(_) if self.scan.is_some() => self.leaf(PyValue::None),
                    Err(e) => return Err(bad(e, at)),
                }
            }
            b'b' => {
                let state = self.pop(at, "BUILD")?;
                let target = self.top(at, "BUILD")?;
                let built = super::numpy::build(&mut self.nodes, target, state);
                if self.scan.is_none() {
                    built.map_err(|e| bad(e, at))?;
                }
            }
            _ => return Err(bad(format!("unknown opcode 0x{op:02x}"), at)),
        }
        Ok(())
    }

    fn extend(&mut self, list: Id, items: Vec<Id>, at: usize) -> Result<()> {
        match &mut self.nodes[list] {
            Node::List(v) => {
                v.extend(items);
                Ok(())
            }
            _ => Err(bad("APPEND/APPENDS on a value that is not a list", at)),
        }
    }

    fn set_items(&mut self, dict: Id, items: Vec<(Id, Id)>, at: usize) -> Result<()> {
        match &mut self.nodes[dict] {
            Node::Dict(v) => {
                v.extend(items);
                Ok(())
            }
            _ => Err(bad("SETITEM/SETITEMS on a value that is not a dict", at)),
        }
    }
}

/// Key-value pairs from a run of alternating items.
fn pairs(items: Vec<Id>, at: usize) -> Result<Vec<(Id, Id)>> {
    if !items.len().is_multiple_of(2) {
        return Err(bad(
            "a dict needs an even number of items (key, value pairs)",
            at,
        ));
    }
    Ok(items.chunks_exact(2).map(|c| (c[0], c[1])).collect())
}

#[cfg(test)]
mod tests {
    use super::Memo;

    #[test]
    fn a_block_of_keys_reads_and_is_overwritten_as_single_keys() {
        let mut m = Memo::default();
        m.insert(0, 10);
        assert!(m.add_block(3, 99));
        m.insert(4, 11);
        assert_eq!(m.len(), 5);
        let got: Vec<_> = (0..6).map(|k| m.get(k)).collect();
        assert_eq!(
            got,
            [Some(10), Some(99), Some(99), Some(99), Some(11), None]
        );
        // Setting a key of the block again: the others keep pointing to the block's node.
        m.insert(2, 12);
        let got: Vec<_> = (0..5).map(|k| m.get(k).unwrap()).collect();
        assert_eq!(got, [10, 99, 12, 99, 11]);
        m.insert(7, 13);
        m.insert(5, 14);
        m.insert(6, 15);
        assert_eq!(m.len(), 8);
        assert_eq!(m.get(7), Some(13));
    }
}
