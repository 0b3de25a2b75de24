//! A pickled `numpy.dtype` (the code passed to `numpy.dtype` and the state `BUILD` gave it)
//! resolved into what the elements are: objects, NumPy 2 strings, or a fixed-size dtype of
//! this crate's model whose bytes decode as usual.

use super::graph::{Id, Node};
use super::numpy::describe;
use super::value::PyValue;
use crate::dtype::{DType, Field, PlainType, Record};

/// The element type of a pickled array.
#[derive(Clone, Debug)]
pub(crate) enum NpDType {
    /// `'|O'`: each element is a pickled object.
    Object,
    /// NumPy 2's `StringDType`, with the node of its `na_object` if it has one.
    Strings { na: Option<Id> },
    /// A fixed-size dtype: the elements are raw bytes.
    Fixed(DType),
    /// A record dtype with an object field: each element is a tuple of field values.
    ObjectRecord { names: Vec<String>, descr: String },
}

impl NpDType {
    /// The dtype as NumPy's `descr` text.
    pub(crate) fn descr(&self, nodes: &[Node]) -> String {
        match self {
            NpDType::Object => "'|O'".into(),
            NpDType::Strings { na: None } => "StringDType()".into(),
            NpDType::Strings { na: Some(id) } => {
                let na = match &nodes[*id] {
                    Node::Leaf(PyValue::None) => "None".to_string(),
                    Node::Leaf(PyValue::Float(f)) if f.is_nan() => "nan".to_string(),
                    Node::Leaf(PyValue::Str(s)) => format!("{s:?}"),
                    other => describe(other),
                };
                format!("StringDType(na_object={na})")
            }
            NpDType::Fixed(d) => d.descr(),
            NpDType::ObjectRecord { descr, .. } => descr.clone(),
        }
    }
}

fn int_of(nodes: &[Node], id: Id) -> Option<i64> {
    match &nodes[id] {
        Node::Leaf(PyValue::Int(i)) => Some(*i),
        Node::Leaf(PyValue::Bool(b)) => Some(*b as i64),
        _ => None,
    }
}

fn str_of(nodes: &[Node], id: Id) -> Option<&str> {
    match &nodes[id] {
        Node::Leaf(PyValue::Str(s)) => Some(s),
        _ => None,
    }
}

/// A tuple of ints (a shape).
pub(crate) fn shape_of(nodes: &[Node], id: Id) -> Result<Vec<u64>, String> {
    match &nodes[id] {
        Node::Tuple(v) | Node::List(v) => v
            .iter()
            .map(|&i| {
                int_of(nodes, i)
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or_else(|| {
                        "a shape holds something other than a non-negative int".to_string()
                    })
            })
            .collect(),
        Node::Leaf(PyValue::Int(n)) if *n >= 0 => Ok(vec![*n as u64]),
        other => Err(format!("a shape is {}, not a tuple", describe(other))),
    }
}

/// Resolves the dtype node `id`; `depth` bounds nested records.
pub(crate) fn resolve(nodes: &[Node], id: Id, depth: usize) -> Result<NpDType, String> {
    if depth == 0 {
        return Err("dtypes nest deeper than the depth limit".into());
    }
    let (code, state) = match &nodes[id] {
        Node::StringDType { na } => return Ok(NpDType::Strings { na: *na }),
        Node::DType { code, state } => (code.as_str(), *state),
        other => return Err(format!("a dtype is {}", describe(other))),
    };
    let st: &[Id] = match state.map(|s| &nodes[s]) {
        None => &[],
        Some(Node::Tuple(v)) if v.len() >= 8 => v,
        Some(other) => {
            return Err(format!(
                "the state of dtype {code:?} is {}",
                describe(other)
            ))
        }
    };
    let item = |i: usize| st.get(i).copied();
    let order = item(1).and_then(|i| str_of(nodes, i)).unwrap_or("=");
    let order = match order {
        "=" => {
            if cfg!(target_endian = "little") {
                "<"
            } else {
                ">"
            }
        }
        o @ ("<" | ">" | "|") => o,
        o => return Err(format!("dtype byte order {o:?}")),
    };
    let elsize = item(5).and_then(|i| int_of(nodes, i)).unwrap_or(-1);
    let kind = code.chars().next().ok_or("an empty dtype code")?;
    if kind == 'O' {
        return Ok(NpDType::Object);
    }
    // Subarray: (base, shape).
    if let Some(sub) = item(2)
        && let Node::Tuple(v) = &nodes[sub]
    {
        let [base, shape] = v[..] else {
            return Err("a subarray dtype's state is not (base, shape)".into());
        };
        let NpDType::Fixed(base) = resolve(nodes, base, depth - 1)? else {
            return Err("a subarray of objects is not read".into());
        };
        let shape = shape_of(nodes, shape)?;
        return DType::array(base, shape)
            .map(NpDType::Fixed)
            .map_err(|e| e.to_string());
    }
    // Record: names and fields.
    if let (Some(names), Some(fields)) = (item(3), item(4))
        && let (Node::Tuple(names), Node::Dict(fields)) = (&nodes[names], &nodes[fields])
    {
        return record(nodes, names, fields, elsize, depth);
    }
    let typestr = match kind {
        'M' | 'm' => {
            let unit = datetime_unit(nodes, item(8)).unwrap_or_default();
            format!("{order}{kind}8{unit}")
        }
        'U' if elsize >= 0 => format!("{order}U{}", elsize / 4),
        'S' | 'V' if elsize >= 0 => format!("{order}{kind}{elsize}"),
        _ => format!("{order}{code}"),
    };
    PlainType::from_typestr(&typestr)
        .map(|p| NpDType::Fixed(DType::Plain(p)))
        .map_err(|e| format!("dtype {typestr:?}: {e}"))
}

/// `[10s]` from a datetime dtype's metadata `(metadata, (b'unit', num, den, events))`.
fn datetime_unit(nodes: &[Node], meta: Option<Id>) -> Option<String> {
    let Node::Tuple(outer) = &nodes[meta?] else {
        return None;
    };
    let inner = outer.iter().rev().find_map(|&i| match &nodes[i] {
        Node::Tuple(v) if v.len() >= 2 => Some(v),
        _ => None,
    })?;
    let unit = match &nodes[inner[0]] {
        Node::Leaf(PyValue::Bytes(b)) => String::from_utf8(b.clone()).ok()?,
        Node::Leaf(PyValue::Str(s)) => s.clone(),
        _ => return None,
    };
    if unit == "generic" {
        return Some(String::new());
    }
    let num = int_of(nodes, inner[1])?;
    Some(if num == 1 {
        format!("[{unit}]")
    } else {
        format!("[{num}{unit}]")
    })
}

fn record(
    nodes: &[Node],
    names: &[Id],
    fields: &[(Id, Id)],
    elsize: i64,
    depth: usize,
) -> Result<NpDType, String> {
    let mut out = Vec::with_capacity(names.len().min(fields.len()));
    let mut any_object = false;
    for &n in names {
        let name = str_of(nodes, n).ok_or("a field name is not a str")?;
        let &(_, spec) = fields
            .iter()
            .find(|(k, _)| str_of(nodes, *k) == Some(name))
            .ok_or_else(|| format!("field {name:?} is named but not described"))?;
        let Node::Tuple(spec) = &nodes[spec] else {
            return Err(format!(
                "field {name:?} is not described by (dtype, offset)"
            ));
        };
        let (dt, off) = match spec[..] {
            [dt, off] | [dt, off, _] => (dt, off),
            _ => {
                return Err(format!(
                    "field {name:?} is not described by (dtype, offset)"
                ))
            }
        };
        let dt = resolve(nodes, dt, depth - 1)?;
        let off = int_of(nodes, off)
            .and_then(|o| usize::try_from(o).ok())
            .ok_or_else(|| format!("field {name:?} has a bad offset"))?;
        any_object |= !matches!(dt, NpDType::Fixed(_));
        out.push((name.to_string(), dt, off));
    }
    if any_object {
        let descr = out
            .iter()
            .map(|(n, d, _)| format!("({n:?}, {})", d.descr(nodes)).replace('"', "'"))
            .collect::<Vec<_>>()
            .join(", ");
        return Ok(NpDType::ObjectRecord {
            names: out.into_iter().map(|(n, _, _)| n).collect(),
            descr: format!("[{descr}]"),
        });
    }
    let fields = out
        .into_iter()
        .filter_map(|(n, d, off)| match d {
            NpDType::Fixed(d) => Some(Field::new(n, d, off)),
            _ => None,
        })
        .collect();
    let size = usize::try_from(elsize).map_err(|_| "a record dtype without an itemsize")?;
    Record::new(fields, size)
        .map(|r| NpDType::Fixed(DType::Record(r)))
        .map_err(|e| e.to_string())
}
