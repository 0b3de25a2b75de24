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

use super::cursor::{bad, Cursor};
use super::expand::{array_parts, expand, is_missing, leaf_bytes, Expander};
use super::graph::{Graph, Id, Node};
use super::limits::Budget;
use super::npdtype::{resolve, shape_of, NpDType};
use super::stream::{walk, Run};
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
/// array refers to; `None` for anything else (expanded whole). With a streamed `run`, the data
/// must be the run's list (left empty in the graph) and nothing may refer to its items.
fn plan(g: &Graph, refs: &[u8], max_depth: usize, run: Option<&Run>) -> Option<Plan> {
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
    let len = match (&g.nodes[parts.data], run) {
        (Node::List(items), None) => items.len() as u64,
        (Node::List(items), Some(r))
            if r.list == parts.data && items.is_empty() && refs[r.taken] == 0 =>
        {
            r.count
        }
        _ => return None,
    };
    if len != count || refs[parts.data] != 1 {
        return None;
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
///
/// The common array of `str`, `bytes` and `None` is streamed (`stream.rs`): its elements are
/// decoded from the bytes, no graph node each. Any other pickle (or a streamed one whose graph
/// turns out not to be a plain array of that list) is interpreted again from its start by the
/// general machine, so values and errors are always the general path's.
pub(crate) fn array_elements(
    bytes: &[u8],
    options: &PickleOptions,
    head: impl FnOnce(&str, &[u64]) -> Result<()>,
    each: impl FnMut(PyValue) -> Result<()>,
) -> Result<()> {
    let g = match super::machine::run_streaming(bytes, options.encoding) {
        Ok((g, Some(run))) => {
            let refs = references(&g.nodes);
            if g.root != run.taken
                && let Some(plan) = plan(&g, &refs, options.max_depth, Some(&run))
            {
                return streamed(bytes, &g, &run, plan, options, head, each);
            }
            super::machine::run(bytes, options.encoding)?
        }
        Ok((g, None)) => g,
        Err(_) => super::machine::run(bytes, options.encoding)?,
    };
    general(bytes, g, options, head, each)
}

/// An expansion of one node of `nodes` under the budget, tracking the nodes on the path from
/// the root (`on_path` empty: a first call, the root on it).
fn expand_one(
    options: &PickleOptions,
    root: Id,
    budget: &mut Budget,
    on_path: &mut Vec<bool>,
    nodes: &[Node],
    id: Id,
) -> Result<PyValue> {
    let mut e = Expander {
        nodes,
        budget: std::mem::replace(budget, Budget::new(0, 0)),
        on_path: std::mem::take(on_path),
        depth_left: options.max_depth - 1,
        max_depth: options.max_depth,
    };
    if e.on_path.is_empty() {
        e.on_path = vec![false; nodes.len()];
        e.on_path[root] = true;
    }
    let v = e.value(id);
    (*budget, *on_path) = (e.budget, e.on_path);
    v
}

/// The elements of a streamed run, decoded by a second walk of its bytes, charged to the
/// budget and handed over as the general path hands them.
fn streamed(
    bytes: &[u8],
    g: &Graph,
    run: &Run,
    plan: Plan,
    options: &PickleOptions,
    head: impl FnOnce(&str, &[u64]) -> Result<()>,
    mut each: impl FnMut(PyValue) -> Result<()>,
) -> Result<()> {
    let mut budget = super::budget(bytes.len(), options);
    let mut on_path = Vec::new();
    // What the expansion of the root array costs before its items.
    budget.values(1)?;
    let na = (plan.na)
        .map(|id| expand_one(options, g.root, &mut budget, &mut on_path, &g.nodes, id))
        .transpose()?;
    head(&plan.descr, &plan.shape)?;
    let mut cur = Cursor::new(bytes);
    cur.seek(run.start);
    let walked = walk(&mut cur, run.first_key, |it| {
        budget.values(1)?;
        budget.bytes(it.cost())?;
        let v = it.value();
        match &na {
            Some(na) if is_missing(&v, na) => each(PyValue::None),
            _ => each(v),
        }
    })?;
    match walked {
        Some(w) if w.count == run.count && cur.pos() == run.end => Ok(()),
        _ => Err(bad(
            "the data list read differently the second time (an internal error)",
            run.start,
        )),
    }
}

/// The elements of an interpreted graph: planned ones moved out, others expanded.
fn general(
    bytes: &[u8],
    mut g: Graph,
    options: &PickleOptions,
    head: impl FnOnce(&str, &[u64]) -> Result<()>,
    mut each: impl FnMut(PyValue) -> Result<()>,
) -> Result<()> {
    let mut budget = super::budget(bytes.len(), options);
    let refs = references(&g.nodes);
    let Some(plan) = plan(&g, &refs, options.max_depth, None) else {
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
    let na = (plan.na)
        .map(|id| expand_one(options, root, &mut budget, &mut on_path, &g.nodes, id))
        .transpose()?;
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
            _ => expand_one(options, root, &mut budget, &mut on_path, &g.nodes, id)?,
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
