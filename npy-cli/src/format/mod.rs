//! How values are written: the JSON convention, CSV cells, readable text, the scalars they share,
//! calendar arithmetic for datetimes, and the values NumPy shows for bytes the typed reads refuse.

pub mod calendar;
pub mod csv;
pub mod json;
pub mod lenient;
pub mod scalar;
pub mod text;
