//! The object graph expanded into a tree of [`PyValue`]s, under the [`Budget`]: every value
//! and every byte is counted each time a shared reference is expanded, nesting is bounded,
//! and a container reached again inside itself (a self-referencing list) is refused.

use super::graph::{Graph, Id, Node};
use super::limits::Budget;
use super::npdtype::{resolve, shape_of, NpDType};
use super::numpy::{describe, latin1_bytes};
use super::value::{PyArray, PyValue};
use crate::error::{Error, ErrorKind, Result};
use crate::value::decode_value;
use std::borrow::Cow;

fn err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Pickle(msg.into()))
}

/// The walk over one graph.
pub(crate) struct Expander<'g> {
    pub(super) nodes: &'g [Node],
    pub(super) budget: Budget,
    /// The containers being expanded (one flag per node), to refuse a container inside itself.
    pub(super) on_path: Vec<bool>,
    pub(super) depth_left: usize,
    pub(super) max_depth: usize,
}

/// Expands the graph's root.
pub(crate) fn expand(g: &Graph, budget: Budget, max_depth: usize) -> Result<PyValue> {
    let mut e = Expander {
        nodes: &g.nodes,
        budget,
        on_path: vec![false; g.nodes.len()],
        depth_left: max_depth,
        max_depth,
    };
    e.value(g.root)
}

/// The bytes a leaf costs the budget.
pub(crate) fn leaf_bytes(v: &PyValue) -> u64 {
    match v {
        PyValue::Str(s) | PyValue::BigInt(s) | PyValue::Decimal(s) => s.len() as u64,
        PyValue::TimeZone(tz) => tz.name.as_ref().map_or(0, |n| n.len() as u64),
        PyValue::Time(t) | PyValue::DateTime(super::stdlib::PyDateTime { time: t, .. }) => t
            .tzinfo
            .as_ref()
            .and_then(|tz| tz.name.as_ref())
            .map_or(0, |n| n.len() as u64),
        PyValue::Bytes(b) => b.len() as u64,
        PyValue::Global { module, name } => (module.len() + name.len()) as u64,
        _ => 0,
    }
}

/// The flat position in Fortran order of the element at C-order index `i`.
fn fortran_index(mut i: u64, shape: &[u64]) -> u64 {
    let mut stride = 1u64;
    let mut strides = Vec::with_capacity(shape.len());
    for &d in shape {
        strides.push(stride);
        stride = stride.saturating_mul(d);
    }
    let mut off = 0u64;
    for (k, &d) in shape.iter().enumerate().rev() {
        if d == 0 {
            return 0;
        }
        off += (i % d) * strides[k];
        i /= d;
    }
    off
}

impl Expander<'_> {
    fn enter(&mut self, id: Id) -> Result<()> {
        if self.on_path[id] {
            return Err(err(
                "a self-referencing structure (a container that holds itself) is refused",
            ));
        }
        if self.depth_left == 0 {
            return Err(Error::limit(
                "the nesting depth of the pickle",
                self.max_depth as u64,
                self.max_depth as u64 + 1,
            ));
        }
        self.on_path[id] = true;
        self.depth_left -= 1;
        Ok(())
    }

    fn leave(&mut self, id: Id) {
        self.on_path[id] = false;
        self.depth_left += 1;
    }

    pub(super) fn value(&mut self, id: Id) -> Result<PyValue> {
        self.budget.values(1)?;
        let nodes = self.nodes;
        let leaf = match &nodes[id] {
            Node::Leaf(v) => Some(v),
            _ => None,
        };
        if let Some(v) = leaf {
            self.budget.bytes(leaf_bytes(v))?;
            return Ok(v.clone());
        }
        self.enter(id)?;
        let out = self.inner(id);
        self.leave(id);
        out
    }

    fn list(&mut self, items: &[Id]) -> Result<Vec<PyValue>> {
        // Each item costs at least one value: the budget bounds the allocation.
        self.budget.values(0)?;
        let mut out = Vec::new();
        for &i in items {
            out.push(self.value(i)?);
        }
        Ok(out)
    }

    fn inner(&mut self, id: Id) -> Result<PyValue> {
        let nodes = self.nodes;
        Ok(match &nodes[id] {
            Node::Leaf(v) => v.clone(),
            Node::List(v) => PyValue::List(self.list(v)?),
            Node::Tuple(v) => PyValue::Tuple(self.list(v)?),
            Node::Set(v) => PyValue::Set(self.list(v)?),
            Node::Dict(pairs) => {
                let mut out: Vec<(PyValue, PyValue)> = Vec::new();
                let mut seen = std::collections::HashMap::new();
                for &(k, v) in pairs {
                    let k = self.value(k)?;
                    let v = self.value(v)?;
                    // A repeated key keeps its first place and its last value, as in Python.
                    let key = match &k {
                        PyValue::Str(s) => Some(format!("s{s}")),
                        PyValue::Int(i) => Some(format!("i{i}")),
                        PyValue::Bytes(b) => Some(format!("b{b:?}")),
                        _ => None,
                    };
                    match key {
                        Some(key) => match seen.get(&key) {
                            Some(&at) => out[at] = (k, v),
                            None => {
                                seen.insert(key, out.len());
                                out.push((k, v));
                            }
                        },
                        None => out.push((k, v)),
                    }
                }
                PyValue::Dict(out)
            }
            Node::Known(k) => {
                let (module, name) = super::globals::known_name(*k);
                PyValue::Global {
                    module: module.into(),
                    name: name.into(),
                }
            }
            Node::Array { .. } | Node::Frombuffer { .. } => {
                let p = array_parts(nodes, id)?.expect("an array node");
                self.array(p.shape, p.dtype, p.fortran, p.data)?
            }
            Node::DType { .. } | Node::StringDType { .. } => {
                let d = resolve(nodes, id, self.depth_left.max(1)).map_err(err)?;
                PyValue::Global {
                    module: "numpy".into(),
                    name: format!("dtype({})", d.descr(nodes)),
                }
            }
            Node::Scalar { dtype, data } => {
                let d = resolve(nodes, *dtype, self.depth_left.max(1)).map_err(err)?;
                match (d, data) {
                    (NpDType::Fixed(d), Some(data)) => {
                        let b = raw_bytes(nodes, *data)?;
                        self.budget.bytes(b.len() as u64)?;
                        let v = decode_value(&d, &b, 0, 1 << 20)?;
                        if b.len() != d.itemsize() {
                            return Err(err(format!(
                                "a scalar of dtype {} has {} bytes, not {}",
                                d.descr(),
                                b.len(),
                                d.itemsize()
                            )));
                        }
                        PyValue::NumpyScalar {
                            descr: d.descr(),
                            value: v,
                        }
                    }
                    (NpDType::Object | NpDType::Strings { .. }, Some(data)) => self.value(*data)?,
                    _ => return Err(err("a numpy scalar without its data")),
                }
            }
        })
    }
}

/// The parts of an array node: its shape, dtype and data nodes, and whether its data are in
/// Fortran order.
pub(crate) struct ArrayParts {
    pub(crate) shape: Id,
    pub(crate) dtype: Id,
    pub(crate) fortran: bool,
    pub(crate) data: Id,
}

/// The parts of the array node `id`; `None` if it is not an array node.
pub(crate) fn array_parts(nodes: &[Node], id: Id) -> Result<Option<ArrayParts>> {
    Ok(Some(match &nodes[id] {
        Node::Array { state: None } => {
            return Err(err("an array whose state is never set (no BUILD)"));
        }
        Node::Array { state: Some(s) } => {
            let Node::Tuple(st) = &nodes[*s] else {
                return Err(err(format!(
                    "the state of an array is {}",
                    describe(&nodes[*s])
                )));
            };
            let (shape, dtype, fortran, data) = match st[..] {
                [_, shape, dtype, fortran, data] | [shape, dtype, fortran, data] => {
                    (shape, dtype, fortran, data)
                }
                _ => {
                    return Err(err(
                        "the state of an array is not (version, shape, dtype, fortran, data)",
                    ));
                }
            };
            let fortran = matches!(
                &nodes[fortran],
                Node::Leaf(PyValue::Bool(true) | PyValue::Int(1))
            );
            ArrayParts {
                shape,
                dtype,
                fortran,
                data,
            }
        }
        Node::Frombuffer {
            data,
            dtype,
            shape,
            order,
        } => ArrayParts {
            shape: *shape,
            dtype: *dtype,
            fortran: matches!(&nodes[*order], Node::Leaf(PyValue::Str(o)) if o == "F"),
            data: *data,
        },
        _ => return Ok(None),
    }))
}

/// Whether a `StringDType` element is its array's `na_object` (NaN matching NaN).
pub(crate) fn is_missing(v: &PyValue, na: &PyValue) -> bool {
    match (v, na) {
        (PyValue::Float(a), PyValue::Float(b)) => a == b || (a.is_nan() && b.is_nan()),
        (a, b) => a == b,
    }
}

/// Array data or scalar bytes: `bytes`, or a `str` of Latin-1 code points (Python 2).
fn raw_bytes(nodes: &[Node], id: Id) -> Result<Cow<'_, [u8]>> {
    {
        match &nodes[id] {
            Node::Leaf(PyValue::Bytes(b)) => Ok(Cow::Borrowed(b)),
            Node::Leaf(PyValue::Str(s)) => Ok(Cow::Owned(latin1_bytes(s).map_err(err)?)),
            other => Err(err(format!("array data is {}, not bytes", describe(other)))),
        }
    }
}

impl Expander<'_> {
    fn array(&mut self, shape: Id, dtype: Id, fortran: bool, data: Id) -> Result<PyValue> {
        let nodes = self.nodes;
        let shape = shape_of(nodes, shape).map_err(err)?;
        let dt = resolve(nodes, dtype, self.depth_left.max(1)).map_err(err)?;
        let count = shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::overflow("the element count of a pickled array"))?;
        let descr = dt.descr(nodes);
        let values = match &dt {
            NpDType::Fixed(d) => {
                let b = raw_bytes(nodes, data)?;
                let size = d.itemsize() as u64;
                let need = count
                    .checked_mul(size)
                    .ok_or_else(|| Error::overflow("the data size of a pickled array"))?;
                if b.len() as u64 != need {
                    return Err(err(format!(
                        "a pickled array of shape {shape:?} and dtype {descr} needs {need} data \
                         bytes, it has {}",
                        b.len()
                    )));
                }
                // Counted before anything is allocated: zero-size elements cost no byte.
                self.budget.values(count)?;
                self.budget.bytes(need)?;
                let mut out = Vec::with_capacity(count as usize);
                for i in 0..count {
                    let at = if fortran { fortran_index(i, &shape) } else { i };
                    let start = (at * size) as usize;
                    let v = decode_value(d, &b[start..start + size as usize], 0, 1 << 20)?;
                    out.push(PyValue::Scalar(v));
                }
                out
            }
            NpDType::Object | NpDType::Strings { .. } | NpDType::ObjectRecord { .. } => {
                let Node::List(items) = &nodes[data] else {
                    return Err(err(format!(
                        "the data of an object array is {}, not a list",
                        describe(&nodes[data])
                    )));
                };
                if items.len() as u64 != count {
                    return Err(err(format!(
                        "an object array of shape {shape:?} ({count} elements) holds {} values",
                        items.len()
                    )));
                }
                let mut out = self.list(items)?;
                match &dt {
                    NpDType::Strings { na: Some(na) } => {
                        let na = self.value(*na)?;
                        for v in out.iter_mut() {
                            if is_missing(v, &na) {
                                *v = PyValue::None;
                            }
                        }
                    }
                    NpDType::ObjectRecord { names, .. } => {
                        for v in out.iter_mut() {
                            let PyValue::Tuple(items) = std::mem::replace(v, PyValue::None) else {
                                return Err(err("an element of a record array is not a tuple"));
                            };
                            if items.len() != names.len() {
                                return Err(err(format!(
                                    "an element of a record array has {} values for {} fields",
                                    items.len(),
                                    names.len()
                                )));
                            }
                            *v = PyValue::Record(names.iter().cloned().zip(items).collect());
                        }
                    }
                    _ => {}
                }
                out
            }
        };
        Ok(PyValue::Array(Box::new(PyArray {
            descr,
            shape,
            values,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::fortran_index;

    #[test]
    fn fortran_positions() {
        // shape (2, 3): C index 1 is (0, 1), at 2 in Fortran order; C index 3 is (1, 0), at 1.
        assert_eq!(fortran_index(1, &[2, 3]), 2);
        assert_eq!(fortran_index(3, &[2, 3]), 1);
        assert_eq!(fortran_index(5, &[2, 3]), 5);
    }
}
