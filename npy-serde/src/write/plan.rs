//! The write plan: a dtype compiled once into the tree the general serializer walks
//! ([`Node`]), with each record's fields, padding and keys.
//!
//! Calls nothing above the dtype model.

use std::sync::atomic::AtomicUsize;

use crate::dtype::{ByteOrder, DType, Scalar};
use crate::error::{Error, Result};
use crate::pyliteral;

// ---------------------------------------------------------------------------------------------
// The plan: a dtype compiled into the tree the serializer walks.

/// One dtype node compiled for writing.
#[derive(Debug)]
pub(crate) enum Node {
    /// A scalar. `big` is true for `>` byte order (ignored for one-byte types, `S`, `V`).
    Leaf { scalar: Scalar, big: bool },
    /// One axis of a subarray: `len` items of `base`, `stride` bytes each (a multi-dimensional
    /// subarray is nested `Sub`s, outermost axis first).
    Sub {
        base: Box<Node>,
        len: usize,
        stride: usize,
    },
    /// A record.
    Record(RecordPlan),
}

/// A record compiled for writing.
#[derive(Debug)]
pub(crate) struct RecordPlan {
    pub(super) fields: Vec<FieldPlan>,
    /// Byte ranges not covered by any field: zeroed for every record written.
    pub(super) pads: Vec<(usize, usize)>,
}

#[derive(Debug)]
pub(super) struct FieldPlan {
    pub(super) name: String,
    /// Address of a `&'static str` key already found equal to `name` (0: none yet), so the
    /// serde-derived keys of a struct match by address after the first record.
    pub(super) key_addr: AtomicUsize,
    pub(super) title: Option<String>,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) node: Node,
}

/// A compiled element dtype: what one element (record) is and how many bytes it takes.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) root: Node,
    pub(crate) itemsize: usize,
}

impl Plan {
    /// Compiles `dtype` (the dtype of one element, possibly a subarray or a record).
    pub(crate) fn new(dtype: &DType) -> Result<Plan> {
        Ok(Plan {
            root: Node::compile(dtype)?,
            itemsize: dtype.itemsize(),
        })
    }
}

impl Node {
    pub(super) fn compile(dt: &DType) -> Result<Node> {
        Ok(match dt {
            DType::Plain(p) => Node::Leaf {
                scalar: p.scalar(),
                big: p.order() == ByteOrder::Big,
            },
            DType::Array(base, shape) => {
                let mut node = Node::compile(base)?;
                let mut stride = base.itemsize();
                for &d in shape.iter().rev() {
                    let len = usize::try_from(d).map_err(|_| Error::overflow("subarray shape"))?;
                    node = Node::Sub {
                        base: Box::new(node),
                        len,
                        stride,
                    };
                    stride = stride.saturating_mul(len);
                }
                node
            }
            DType::Record(r) => {
                let mut fields = Vec::with_capacity(r.fields().len());
                let mut pads = Vec::new();
                let mut pos = 0usize;
                for f in r.fields() {
                    if f.offset > pos {
                        pads.push((pos, f.offset));
                    }
                    let end = f.offset + f.dtype.itemsize();
                    fields.push(FieldPlan {
                        name: f.name.clone(),
                        key_addr: AtomicUsize::new(0),
                        title: f.title.clone(),
                        start: f.offset,
                        end,
                        node: Node::compile(&f.dtype)?,
                    });
                    pos = end;
                }
                if r.itemsize() > pos {
                    pads.push((pos, r.itemsize()));
                }
                Node::Record(RecordPlan { fields, pads })
            }
        })
    }

    /// Describes what this node expects, for errors.
    pub(super) fn describe(&self) -> String {
        match self {
            Node::Leaf { scalar, big } => leaf_typestr(*scalar, *big),
            Node::Sub { .. } => {
                let mut shape = Vec::new();
                let mut n = self;
                while let Node::Sub { base, len, .. } = n {
                    shape.push(*len as u64);
                    n = base;
                }
                format!(
                    "a subarray of shape {} of {}",
                    pyliteral::repr_shape(&shape),
                    n.describe()
                )
            }
            Node::Record(r) => {
                let names: Vec<&str> = r.fields.iter().map(|f| f.name.as_str()).collect();
                format!("a record with fields ({})", names.join(", "))
            }
        }
    }

    /// The innermost base of a subarray (the node itself otherwise).
    pub(super) fn innermost(&self) -> &Node {
        let mut n = self;
        while let Node::Sub { base, .. } = n {
            n = base;
        }
        n
    }
}

pub(super) fn leaf_typestr(scalar: Scalar, big: bool) -> String {
    let order = if !scalar.has_byte_order() {
        '|'
    } else if big {
        '>'
    } else {
        '<'
    };
    format!("{order}{}", scalar.type_code())
}

// Component leaves of complex numbers, and the byte leaf used for sequences of `u8` into
// `S`/`V` fields.
pub(super) static F32_PART: [Node; 2] = [
    Node::Leaf {
        scalar: Scalar::F32,
        big: false,
    },
    Node::Leaf {
        scalar: Scalar::F32,
        big: true,
    },
];
pub(super) static F64_PART: [Node; 2] = [
    Node::Leaf {
        scalar: Scalar::F64,
        big: false,
    },
    Node::Leaf {
        scalar: Scalar::F64,
        big: true,
    },
];
pub(super) static LD_PART: [Node; 2] = [
    Node::Leaf {
        scalar: Scalar::LongDouble,
        big: false,
    },
    Node::Leaf {
        scalar: Scalar::LongDouble,
        big: true,
    },
];
pub(super) static BYTE: Node = Node::Leaf {
    scalar: Scalar::U8,
    big: false,
};
