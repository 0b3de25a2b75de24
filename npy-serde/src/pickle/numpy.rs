//! The globals NumPy's pickles name, recognised by name and applied as data: `REDUCE` on one
//! of them builds a node describing what Python would have built, `BUILD` stores the state
//! `__setstate__` would have taken. Nothing is imported or called; `REDUCE` or `BUILD` on any
//! other global is an error naming it.
//!
//! | global | what it builds here |
//! |---|---|
//! | `numpy.core.multiarray._reconstruct`, `numpy._core.multiarray._reconstruct`, `numpy.core._internal._reconstruct` (before NumPy 1.0), with `numpy.ndarray` or `numpy.recarray` | an array (a recarray as the plain record array it holds), its state set by `BUILD` |
//! | `numpy.core.numeric._frombuffer`, `numpy._core.numeric._frombuffer` | an array from an in-band buffer (protocol 5) |
//! | `numpy.dtype` (of a type code, or of `numpy.record`: a recarray's record dtype) | a dtype, its state set by `BUILD` |
//! | `numpy.core.multiarray.scalar`, `numpy._core.multiarray.scalar` | a NumPy scalar |
//! | `numpy._core._internal._convert_to_stringdtype_kwargs` | NumPy 2's `StringDType(na_object=...)` |
//! | `_codecs.encode` | `bytes` (how Python 3 pickles `bytes` at protocols 0-2) |
//! | `builtins`/`__builtin__` `bytearray`, `set`, `frozenset`, `complex` | those values |
//! | `datetime` `date`, `time`, `datetime`, `timedelta`, `timezone`; `decimal.Decimal` | those values, from the state CPython pickles, every field checked (`stdlib.rs`, `stdstate.rs`) |

use super::globals::Known;
use super::graph::{Id, Node};
use super::value::PyValue;
use super::Encoding;

/// What a node is, for messages.
pub(crate) fn describe(node: &Node) -> String {
    match node {
        Node::Leaf(PyValue::Global { module, name }) => format!("the global {module}.{name}"),
        Node::Leaf(v) => format!("a {}", v.type_name()),
        Node::List(_) => "a list".into(),
        Node::Tuple(_) => "a tuple".into(),
        Node::Dict(_) => "a dict".into(),
        Node::Set(_) => "a set".into(),
        Node::Known(k) => format!("the global {k:?}"),
        Node::Array { .. } | Node::Frombuffer { .. } => "a numpy.ndarray".into(),
        Node::DType { .. } | Node::StringDType { .. } => "a numpy.dtype".into(),
        Node::Scalar { .. } => "a numpy scalar".into(),
    }
}

/// `callable(*args)`, as data.
pub(crate) fn reduce(
    nodes: &[Node],
    callable: Id,
    args: Id,
    _encoding: Encoding,
) -> Result<Node, String> {
    let known = match &nodes[callable] {
        Node::Known(k) => *k,
        Node::Leaf(PyValue::Global { module, name }) => {
            return Err(format!(
                "the pickle calls {module}.{name}: refused (only NumPy's array, dtype and scalar \
                 reconstructors and plain data types are read; nothing is ever imported or called)"
            ));
        }
        other => {
            return Err(format!(
                "REDUCE on {}, which is not callable",
                describe(other)
            ))
        }
    };
    let Node::Tuple(a) = &nodes[args] else {
        return Err(format!(
            "the arguments of {known:?} are {}, not a tuple",
            describe(&nodes[args])
        ));
    };
    let arg = |i: usize| a.get(i).map(|&id| &nodes[id]);
    let wrong = || format!("unexpected arguments to {known:?} ({} of them)", a.len());
    Ok(match known {
        Known::Reconstruct => match arg(0) {
            // A recarray is an ndarray with attribute access to its fields: its dtype and data
            // are a plain record array's, and so is what is read.
            Some(Node::Known(Known::NdArray | Known::RecArray)) => Node::Array { state: None },
            Some(Node::Leaf(PyValue::Global { module, name })) => {
                return Err(format!(
                    "the array subclass {module}.{name} is refused (only numpy.ndarray is read)"
                ));
            }
            _ => return Err(wrong()),
        },
        Known::DType => match arg(0) {
            Some(Node::Leaf(PyValue::Str(code))) => Node::DType {
                code: code.clone(),
                state: None,
            },
            // A recarray's dtype, `dtype((numpy.record, [...]))`: a void dtype whose fields the
            // state gives, as for any record.
            Some(Node::Known(Known::RecordType)) => Node::DType {
                code: "V".into(),
                state: None,
            },
            _ => return Err(wrong()),
        },
        Known::Scalar => match a.len() {
            1 | 2 => Node::Scalar {
                dtype: a[0],
                data: a.get(1).copied(),
            },
            _ => return Err(wrong()),
        },
        Known::StringDTypeKwargs => match a.len() {
            1 | 2 => Node::StringDType {
                na: a.get(1).copied(),
            },
            _ => return Err(wrong()),
        },
        Known::Frombuffer => match a.len() {
            4 => Node::Frombuffer {
                data: a[0],
                dtype: a[1],
                shape: a[2],
                order: a[3],
            },
            _ => return Err(wrong()),
        },
        Known::CodecsEncode => match (arg(0), arg(1)) {
            (Some(Node::Leaf(PyValue::Str(s))), Some(Node::Leaf(PyValue::Str(enc))))
                if is_latin1(enc) =>
            {
                Node::Leaf(PyValue::Bytes(latin1_bytes(s)?))
            }
            (Some(Node::Leaf(PyValue::Str(_))), Some(Node::Leaf(PyValue::Str(enc)))) => {
                return Err(format!("_codecs.encode to {enc:?}: only latin1 is read"));
            }
            _ => return Err(wrong()),
        },
        Known::ByteArray => match (arg(0), arg(1)) {
            (None, None) => Node::Leaf(PyValue::Bytes(Vec::new())),
            (Some(Node::Leaf(PyValue::Bytes(b))), None) => Node::Leaf(PyValue::Bytes(b.clone())),
            (Some(Node::Leaf(PyValue::Str(s))), Some(Node::Leaf(PyValue::Str(enc))))
                if is_latin1(enc) =>
            {
                Node::Leaf(PyValue::Bytes(latin1_bytes(s)?))
            }
            _ => return Err(wrong()),
        },
        Known::Set => match arg(0) {
            None => Node::Set(Vec::new()),
            Some(Node::List(v) | Node::Tuple(v) | Node::Set(v)) if a.len() == 1 => {
                Node::Set(v.clone())
            }
            _ => return Err(wrong()),
        },
        Known::Complex => {
            let num = |n: Option<&Node>| match n {
                None => Some(0.0),
                Some(Node::Leaf(PyValue::Float(f))) => Some(*f),
                Some(Node::Leaf(PyValue::Int(i))) => Some(*i as f64),
                _ => None,
            };
            match (num(arg(0)), num(arg(1))) {
                (Some(re), Some(im)) if !a.is_empty() && a.len() <= 2 => {
                    Node::Leaf(PyValue::Complex(re, im))
                }
                _ => return Err(wrong()),
            }
        }
        // The arguments of these are values already built (a state's bytes, a timedelta, a
        // timezone): leaves of the graph, which never change once made.
        Known::Std(ty) => {
            let leaves: Vec<Option<&PyValue>> = a
                .iter()
                .map(|&id| match &nodes[id] {
                    Node::Leaf(v) => Some(v),
                    _ => None,
                })
                .collect();
            Node::Leaf(super::stdstate::reduce(ty, &leaves)?)
        }
        Known::NdArray | Known::RecArray | Known::RecordType => {
            let (module, name) = super::globals::known_name(known);
            return Err(format!("calling {module}.{name} directly is refused"));
        }
    })
}

/// `obj.__setstate__(state)`, as data: only arrays and dtypes take a state.
pub(crate) fn build(nodes: &mut [Node], target: Id, state: Id) -> Result<(), String> {
    match &mut nodes[target] {
        Node::Array { state: s @ None }
        | Node::DType {
            state: s @ None, ..
        } => {
            *s = Some(state);
            Ok(())
        }
        Node::Array { .. } | Node::DType { .. } => Err("BUILD sets a state twice".into()),
        other => Err(format!(
            "BUILD (setting the state of) {} is refused",
            describe(other)
        )),
    }
}

fn is_latin1(enc: &str) -> bool {
    matches!(
        enc.to_ascii_lowercase().replace('_', "-").as_str(),
        "latin1" | "latin-1" | "iso-8859-1" | "iso8859-1"
    )
}

/// A `str` whose code points are bytes (Latin-1), as bytes.
pub(crate) fn latin1_bytes(s: &str) -> Result<Vec<u8>, String> {
    s.chars()
        .map(|c| u8::try_from(c as u32).map_err(|_| format!("{c:?} is not a Latin-1 character")))
        .collect()
}
