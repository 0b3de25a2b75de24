//! Shapes and memory layouts: element counts, the shape as Python prints it, and the walk
//! between C and Fortran storage orders.

/// The number of elements of `dims`, saturating: a shape with a 0 may have other dimensions
/// whose product overflows, and then the count is 0 anyway.
pub fn product(dims: &[u64]) -> u64 {
    if dims.contains(&0) {
        return 0;
    }
    dims.iter().fold(1u64, |acc, &d| acc.saturating_mul(d))
}

/// Python's tuple repr of a shape: `()`, `(3,)`, `(2, 3)`.
pub fn shape_text(shape: &[u64]) -> String {
    match shape {
        [] => "()".into(),
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// True if the data layout of `shape` differs between C and Fortran order: more than one
/// axis is longer than 1 (otherwise the array is both C- and Fortran-contiguous).
pub fn layouts_differ(shape: &[u64]) -> bool {
    shape.iter().filter(|&&d| d > 1).count() >= 2 && shape.iter().all(|&d| d > 0)
}

/// Walks the elements of an array in one order (`out_fortran`) and yields each element's
/// index in the other layout (`in_fortran`) — the permutation between storage orders.
pub struct Walk {
    dims: Vec<u64>,
    /// Strides of the input layout, in elements.
    strides: Vec<u64>,
    /// The multi-index, in output iteration order (axis order as in `dims`).
    idx: Vec<u64>,
    /// Iterate with the first axis fastest (Fortran) or the last (C).
    out_fortran: bool,
    pos: u64,
    left: u64,
}

impl Walk {
    /// A walk over `shape`, starting at output position `start`, for `len` elements.
    pub fn new(shape: &[u64], in_fortran: bool, out_fortran: bool, start: u64, len: u64) -> Walk {
        let n = shape.len();
        let mut strides = vec![0u64; n];
        let mut s = 1u64;
        let axes: Vec<usize> = if in_fortran {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for &k in &axes {
            strides[k] = s;
            s = s.saturating_mul(shape[k]);
        }
        // Multi-index of output position `start`.
        let mut idx = vec![0u64; n];
        let mut rem = start;
        let out_axes: Vec<usize> = if out_fortran {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for &k in &out_axes {
            let d = shape[k].max(1);
            idx[k] = rem % d;
            rem /= d;
        }
        let pos = idx.iter().zip(&strides).fold(0u64, |acc, (&i, &st)| {
            acc.saturating_add(i.saturating_mul(st))
        });
        Walk {
            dims: shape.to_vec(),
            strides,
            idx,
            out_fortran,
            pos,
            left: len,
        }
    }
}

impl Walk {
    /// Ends the walk: no more positions.
    pub fn skip_rest(&mut self) {
        self.left = 0;
    }
}

impl Iterator for Walk {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let here = self.pos;
        let n = self.dims.len();
        for step in 0..n {
            let k = if self.out_fortran { step } else { n - 1 - step };
            self.idx[k] += 1;
            self.pos = self.pos.wrapping_add(self.strides[k]);
            if self.idx[k] < self.dims[k] {
                break;
            }
            self.pos = self
                .pos
                .wrapping_sub(self.strides[k].wrapping_mul(self.dims[k]));
            self.idx[k] = 0;
        }
        Some(here)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_c_over_fortran_storage() {
        // shape (2, 3) stored in Fortran order: element (i, j) at i + 2 j.
        let got: Vec<u64> = Walk::new(&[2, 3], true, false, 0, 6).collect();
        assert_eq!(got, [0, 2, 4, 1, 3, 5]);
        let got: Vec<u64> = Walk::new(&[2, 3], true, false, 4, 2).collect();
        assert_eq!(got, [3, 5]);
        // Fortran output order over C storage: (i, j) at 3 i + j.
        let got: Vec<u64> = Walk::new(&[2, 3], false, true, 0, 6).collect();
        assert_eq!(got, [0, 3, 1, 4, 2, 5]);
        let got: Vec<u64> = Walk::new(&[2, 2, 2], true, false, 0, 8).collect();
        assert_eq!(got, [0, 4, 2, 6, 1, 5, 3, 7]);
    }

    #[test]
    fn layouts() {
        assert!(!layouts_differ(&[5]));
        assert!(!layouts_differ(&[3, 1]));
        assert!(!layouts_differ(&[]));
        assert!(!layouts_differ(&[3, 0, 2]));
        assert!(layouts_differ(&[2, 3]));
    }

    #[test]
    fn shapes() {
        assert_eq!(shape_text(&[]), "()");
        assert_eq!(shape_text(&[3]), "(3,)");
        assert_eq!(shape_text(&[2, 3]), "(2, 3)");
    }
}
