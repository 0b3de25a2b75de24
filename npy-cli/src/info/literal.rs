//! The header's `descr` *as written* (`info --json`): the library's [`DType`](npy_serde::DType)
//! normalises type strings (`'i4'` becomes `'<i4'`, `'|a5'` becomes `'|S5'`), which is right for
//! reading data but not for showing what the file says, so this reads the header's literal tree
//! ([`npy_serde::header::header_literal`]) and turns it into JSON, tuples as lists.

use npy_serde::header::{header_literal, Limits, Literal};
use serde_json::Value as Json;

/// The value of the `descr` key of the header at the start of `bytes` (last one if repeated).
/// `limits` must be those the header was accepted with.
pub fn header_descr(bytes: &[u8], limits: &Limits) -> Result<Json, npy_serde::Error> {
    let lit = header_literal(bytes, limits)?;
    Ok(lit.get("descr").map(to_json).unwrap_or(Json::Null))
}

pub fn to_json(lit: &Literal) -> Json {
    match lit {
        Literal::Str(s) => Json::String(s.clone()),
        Literal::Int(i) => i64::try_from(*i)
            .map(Json::from)
            .or_else(|_| u64::try_from(*i).map(Json::from))
            .unwrap_or_else(|_| Json::String(i.to_string())),
        Literal::Bool(b) => Json::Bool(*b),
        Literal::None => Json::Null,
        Literal::Tuple(v) | Literal::List(v) => Json::Array(v.iter().map(to_json).collect()),
        Literal::Dict(pairs) => {
            let mut m = serde_json::Map::new();
            for (k, v) in pairs {
                let key = match k {
                    Literal::Str(s) => s.clone(),
                    other => to_json(other).to_string(),
                };
                m.insert(key, to_json(v));
            }
            Json::Object(m)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn descr_as_written_with_tuples_as_lists() {
        let text = "{'descr': [('a', 'i4'), (('t', 'b'), '|a5', (2,))], 'fortran_order': False, 'shape': (3,), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
        bytes.extend_from_slice(text.as_bytes());
        let d = header_descr(&bytes, &Limits::default()).unwrap();
        assert_eq!(d, json!([["a", "i4"], [["t", "b"], "|a5", [2]]]));
    }
}
