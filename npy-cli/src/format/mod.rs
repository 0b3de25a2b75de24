//! How values are written: the JSON convention, CSV cells, readable text, the scalars they share,
//! calendar arithmetic for datetimes, the values NumPy shows for bytes the typed reads refuse,
//! and Python objects (object arrays read as data) in the same forms.

pub mod calendar;
pub mod csv;
pub mod json;
pub mod lenient;
pub mod objects;
pub mod scalar;
pub mod text;
