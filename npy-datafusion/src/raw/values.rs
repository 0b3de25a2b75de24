//! Where a batch's values of one column lie, for the raw comparisons (`raw`, `raw::ints`).

/// Where a batch's values of one column lie: value `i` starts at byte
/// `start + i * stride` of `bytes` (a column's own bytes: `stride` its width; a row file's
/// records: `stride` a record's bytes, `start` the field's offset in it).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Values<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) stride: usize,
    pub(crate) start: usize,
}

impl<'a> Values<'a> {
    /// The values of a column's own bytes, `width` bytes each.
    pub(crate) fn packed(bytes: &'a [u8], width: usize) -> Self {
        Values {
            bytes,
            stride: width,
            start: 0,
        }
    }

    /// The `w` bytes of value `i`.
    #[inline]
    pub(super) fn value(&self, i: usize, w: usize) -> &'a [u8] {
        let at = self.start + i * self.stride;
        &self.bytes[at..at + w]
    }
}
