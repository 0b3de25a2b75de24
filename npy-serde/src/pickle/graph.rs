//! The object graph a pickle builds: nodes that hold references to each other (a memoized
//! list appended to later is seen by every reference, as in Python), and the root `STOP`
//! returned.

use super::globals::Known;
use super::value::PyValue;

/// A node's index in the graph.
pub(crate) type Id = usize;

/// One object of the pickle's graph. Containers hold references, so a memoized list appended
/// to later is seen by every reference, as in Python.
#[derive(Debug)]
pub(crate) enum Node {
    /// An immutable value: `None`, numbers, strings, bytes, an unknown global.
    Leaf(PyValue),
    List(Vec<Id>),
    Tuple(Vec<Id>),
    Dict(Vec<(Id, Id)>),
    Set(Vec<Id>),
    /// A recognised global, not yet applied.
    Known(Known),
    /// `_reconstruct(ndarray, ...)`: an array whose state `BUILD` sets.
    Array {
        state: Option<Id>,
    },
    /// `_frombuffer(buffer, dtype, shape, order)` (protocol 5 arrays, the buffer in band).
    Frombuffer {
        data: Id,
        dtype: Id,
        shape: Id,
        order: Id,
    },
    /// `numpy.dtype(code, align, copy)`, whose state `BUILD` sets.
    DType {
        code: String,
        state: Option<Id>,
    },
    /// `StringDType(na_object=...)` (`_convert_to_stringdtype_kwargs`).
    StringDType {
        na: Option<Id>,
    },
    /// `numpy.core.multiarray.scalar(dtype, data)`.
    Scalar {
        dtype: Id,
        data: Option<Id>,
    },
}

/// The object graph of one pickle and the node `STOP` returned.
pub(crate) struct Graph {
    pub(crate) nodes: Vec<Node>,
    pub(crate) root: Id,
}
