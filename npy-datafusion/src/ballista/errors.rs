//! Errors as text: Ballista's executors send a failed task's error to the client in its
//! `Debug` form, which for a wrapped error value is the struct's fields rather than the
//! message; the scans the codec decodes map their errors through [`as_text`]
//! ([`NpySource::with_error_map`](crate::NpySource::with_error_map)).

use datafusion::error::DataFusionError;

/// `e` as an execution error whose text is its context and this crate's message:
/// `file <path>: <message> (at record r, field f, byte b)`.
pub(crate) fn as_text(e: DataFusionError) -> DataFusionError {
    fn text(e: &DataFusionError) -> String {
        match e {
            DataFusionError::Context(what, inner) => format!("{what}: {}", text(inner)),
            DataFusionError::External(inner) => inner.to_string(),
            DataFusionError::Shared(inner) => text(inner),
            other => other.to_string(),
        }
    }
    DataFusionError::Execution(text(&e))
}
