//! The elements of a pickled array, one at a time, moved out of the object graph: the fast
//! door of object arrays into `Vec<T>`.
//!
//! [`load`](super::load) expands the whole graph into a [`PyValue`] tree, cloning every leaf
//! (a shared reference may need it again) and holding every element at once. Here the
//! elements of the root array are handed over one by one instead, and an element that is a
//! leaf (a `str`, `bytes`, a number, `None`) referenced from nowhere else (the common NumPy
//! object array of strings: each `str` pickled once) is moved out of the graph, not cloned.
//! Any other element is expanded as [`load`](super::load) expands it, under the same budget,
//! depth and self-reference checks; a graph of another shape (a record dtype, an array whose
//! data list is referenced elsewhere, no array at all) is expanded whole first. The elements,
//! their order and the errors are those of [`load`](super::load).

use super::expand::{array_parts, expand, is_missing, leaf_bytes, Expander};
use super::graph::{Graph, Id, Node};
use super::limits::Budget;
use super::npdtype::{resolve, shape_of, NpDType};
use super::value::PyValue;
use super::PickleOptions;
use crate::error::{Error, ErrorKind, Result};

/// The error for a pickle whose root is not an array.
pub(crate) fn not_an_array(v: &PyValue) -> Error {
    Error::new(ErrorKind::Pickle(format!(
        "the data of an object array is a pickled {}, not a numpy.ndarray",
        v.type_name()
    )))
}

/// The plan of a fast read: the array's dtype text, shape, data items and `na_object`.
struct Plan {
    descr: String,
    shape: Vec<u64>,
    data: Id,
    na: Option<Id>,
}

/// How many nodes refer to each node (saturating at 255): the leaves referred to once are
/// moved out, the others cloned.
fn references(nodes: &[Node]) -> Vec<u8> {
    let mut n = vec![0u8; nodes.len()];
    let mut add = |id: Id| n[id] = n[id].saturating_add(1);
    for node in nodes {
        match node {
            Node::List(v) | Node::Tuple(v) | Node::Set(v) => v.iter().for_each(|&i| add(i)),
            Node::Dict(p) => p.iter().for_each(|&(k, v)| {
                add(k);
                add(v);
            }),
            Node::Array { state } | Node::DType { state, .. } => state.iter().for_each(|&i| add(i)),
            Node::StringDType { na } => na.iter().for_each(|&i| add(i)),
            Node::Frombuffer {
                data,
                dtype,
                shape,
                order,
            } => [*data, *dtype, *shape, *order]
                .into_iter()
                .for_each(&mut add),
            Node::Scalar { dtype, data } => {
                add(*dtype);
                data.iter().for_each(|&i| add(i));
            }
            Node::Leaf(_) | Node::Known(_) => {}
        }
    }
    n
}

/// The plan when the root is a 1-level object or `StringDType` array whose data list only the
/// array refers to; `None` for anything else (expanded whole).
fn plan(g: &Graph, refs: &[u8], max_depth: usize) -> Option<Plan> {
    if max_depth == 0 {
        return None;
    }
    let parts = array_parts(&g.nodes, g.root).ok()??;
    let dt = resolve(&g.nodes, parts.dtype, (max_depth - 1).max(1)).ok()?;
    let na = match dt {
        NpDType::Object => None,
        NpDType::Strings { na } => na,
        NpDType::Fixed(_) | NpDType::ObjectRecord { .. } => return None,
    };
    let shape = shape_of(&g.nodes, parts.shape).ok()?;
    let count = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
    match &g.nodes[parts.data] {
        Node::List(items) if items.len() as u64 == count && refs[parts.data] == 1 => {}
        _ => return None,
    }
    Some(Plan {
        descr: dt.descr(&g.nodes),
        shape,
        data: parts.data,
        na,
    })
}

/// Interprets the pickle of an array, calls `head` with its dtype (as NumPy's `descr`) and
/// shape, then `each` with every element in logical C order, each exactly as
/// [`load`](super::load) would give it (a `StringDType`'s missing value as `None`).
pub(crate) fn array_elements(
    bytes: &[u8],
    options: &PickleOptions,
    head: impl FnOnce(&str, &[u64]) -> Result<()>,
    mut each: impl FnMut(PyValue) -> Result<()>,
) -> Result<()> {
    let mut g = super::machine::run(bytes, options.encoding)?;
    let mut budget = super::budget(bytes.len(), options);
    let refs = references(&g.nodes);
    let Some(plan) = plan(&g, &refs, options.max_depth) else {
        let v = expand(&g, budget, options.max_depth)?;
        let PyValue::Array(a) = v else {
            return Err(not_an_array(&v));
        };
        head(&a.descr, &a.shape)?;
        return a.values.into_iter().try_for_each(each);
    };
    // What the expansion of the root array costs before its items.
    budget.values(1)?;
    let items = match std::mem::replace(&mut g.nodes[plan.data], Node::List(Vec::new())) {
        Node::List(items) => items,
        _ => unreachable!("the plan checked the data is a list"),
    };
    let mut on_path = Vec::new();
    let root = g.root;
    let expander = |budget: Budget, on_path: Vec<bool>, nodes: &[Node], id: Id| {
        let mut e = Expander {
            nodes,
            budget,
            on_path,
            depth_left: options.max_depth - 1,
            max_depth: options.max_depth,
        };
        if e.on_path.is_empty() {
            e.on_path = vec![false; nodes.len()];
            e.on_path[root] = true;
        }
        let v = e.value(id);
        (v, e.budget, e.on_path)
    };
    let na = match plan.na {
        Some(id) => {
            let (v, b, p) = expander(budget, on_path, &g.nodes, id);
            (budget, on_path) = (b, p);
            Some(v?)
        }
        None => None,
    };
    head(&plan.descr, &plan.shape)?;
    for id in items {
        let v = match &g.nodes[id] {
            Node::Leaf(v) if refs[id] == 1 => {
                budget.values(1)?;
                budget.bytes(leaf_bytes(v))?;
                match std::mem::replace(&mut g.nodes[id], Node::Leaf(PyValue::None)) {
                    Node::Leaf(v) => v,
                    _ => unreachable!("matched a leaf above"),
                }
            }
            _ => {
                let (v, b, p) = expander(budget, on_path, &g.nodes, id);
                (budget, on_path) = (b, p);
                v?
            }
        };
        match &na {
            Some(na) if is_missing(&v, na) => each(PyValue::None)?,
            _ => each(v)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pickle of a 1-D object array of `n` elements whose data list's items are `items`
    /// (opcodes), as `np.save` writes it at protocol 2.
    fn array_pickle(n: u8, items: &[u8]) -> Vec<u8> {
        let mut p = b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R(K\x01K".to_vec();
        p.push(n);
        p.extend_from_slice(b"\x85cnumpy\ndtype\nX\x02\x00\x00\x00O8\x89\x88\x87R(K\x03X\x01\x00\x00\x00|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb\x89](");
        p.extend_from_slice(items);
        p.extend_from_slice(b"etb.");
        p
    }

    fn both(p: &[u8]) -> (Result<Vec<PyValue>>, Result<Vec<PyValue>>) {
        let o = PickleOptions::default();
        let slow = super::super::load(p, &o).and_then(|v| match v {
            PyValue::Array(a) => Ok(a.values),
            v => Err(not_an_array(&v)),
        });
        let mut fast = Vec::new();
        let r = array_elements(
            p,
            &o,
            |_, _| Ok(()),
            |v| {
                fast.push(v);
                Ok(())
            },
        );
        (slow, r.map(|()| fast))
    }

    #[test]
    fn shared_and_nested_elements_are_the_expansions() {
        // ['a', <the same 'a'>, None, ['a']]: the shared str is cloned, not moved away.
        let p = array_pickle(4, b"X\x01\x00\x00\x00aq\x00h\x00N]q\x01h\x00a");
        let (slow, fast) = both(&p);
        let slow = slow.unwrap();
        assert_eq!(slow[1], PyValue::Str("a".into()));
        assert_eq!(slow, fast.unwrap());
    }

    #[test]
    fn budgets_and_errors_are_the_expansions() {
        // A count that is not the shape's: the same error both ways.
        let p = array_pickle(3, b"NN");
        let (slow, fast) = both(&p);
        assert_eq!(slow.unwrap_err().to_string(), fast.unwrap_err().to_string());
        // A budget of values: the root and two elements fit in 3, not in 2.
        let p = array_pickle(2, b"X\x01\x00\x00\x00aX\x01\x00\x00\x00b");
        for (max, ok) in [(3, true), (2, false)] {
            let o = PickleOptions::default().max_values(max);
            let r = array_elements(&p, &o, |_, _| Ok(()), |_| Ok(()));
            assert_eq!(r.is_ok(), ok, "{max}: {r:?}");
            assert_eq!(super::super::load(&p, &o).is_ok(), ok);
        }
    }
}
