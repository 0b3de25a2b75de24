//! Printing arrays: an array being printed ([`printable`]), whole arrays in a style
//! ([`arrays`]), and the writer of an input's values that `cat` and `convert` use ([`write`](mod@write)).

pub mod arrays;
pub mod printable;
pub mod write;
