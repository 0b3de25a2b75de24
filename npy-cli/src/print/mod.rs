//! Printing arrays: an array being printed ([`printable`]), whole arrays in a style
//! ([`arrays`]), object arrays in the same styles ([`objects`]), and the writer of an input's
//! values that `cat` and `convert` use ([`write`](mod@write)).

pub mod arrays;
pub mod objects;
pub mod printable;
pub mod write;
