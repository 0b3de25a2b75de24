//! W2 records into other `Deserialize` types (reordered, subsets, widened, wrapped,
//! renamed, tuples) through the serde doors, and lossy requests that fail as `deserialize_slice`
//! fails.

use std::fmt::Debug;
use std::path::Path;

use npy_serde::{ReaderBuilder, Value};
use npy_serde_tests::{TempDir, W2};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::data::*;
use super::doors::*;

#[derive(Deserialize, Debug, PartialEq)]
struct Reordered {
    v: [f32; 3],
    flag: u8,
    y: f32,
    x: f64,
    id: i64,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Prefix {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
}

#[derive(Deserialize, Debug, PartialEq)]
struct VVec {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: Vec<f32>,
}

#[derive(Deserialize, Debug, PartialEq)]
struct VTuple {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: (f32, f32, f32),
}

/// Every conversion here is documented as exact: `i8` -> `i128`, `f8` -> `f8`, `f4` -> `f64`,
/// `u1` -> `u16`/`i16`/`f32`, `f4` -> `f64` items.
#[derive(Deserialize, Debug, PartialEq)]
struct Widened {
    id: i128,
    x: f64,
    y: f64,
    flag: u16,
    v: [f64; 3],
}

#[derive(Deserialize, Debug, PartialEq)]
struct WidenedFlag {
    id: i64,
    x: f64,
    y: f32,
    flag: f32,
    v: [f32; 3],
}

#[derive(Deserialize, Debug, PartialEq)]
struct Id(i64);

#[derive(Deserialize, Debug, PartialEq)]
struct Wrapped {
    id: Id,
    x: Option<f64>,
    y: f32,
    flag: Option<u8>,
    v: [Option<f32>; 3],
}

#[derive(Deserialize, Debug, PartialEq)]
struct WithDefault {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
    #[serde(default)]
    missing: Option<u32>,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Renamed {
    #[serde(rename = "id")]
    ident: i64,
    x: f64,
    y: f32,
    flag: u8,
    #[serde(rename = "v")]
    vel: [f32; 3],
}

type W2Tuple = (i64, f64, f32, u8, [f32; 3]);

/// Checks `T` through every entry point against `deserialize_slice::<Vec<T>>` and against `want`
/// (computed independently from the records).
fn typed_case<T: DeserializeOwned + Send + PartialEq + Debug>(
    file: &[u8],
    path: &Path,
    what: &str,
    want: impl Fn(&W2) -> T,
    recs: &[W2],
) {
    let reference: Vec<T> =
        npy_serde::deserialize_slice(file).unwrap_or_else(|e| panic!("{what}: {e}"));
    let want: Vec<T> = recs.iter().map(want).collect();
    assert_eq!(reference.len(), want.len(), "{what}");
    if let Some(i) = (0..want.len()).find(|&i| reference[i] != want[i]) {
        panic!(
            "{what}: deserialize_slice element {i}: {:?} vs {:?}",
            reference[i], want[i]
        );
    }
    assert_all_eq(named(what, vec_all::<T>(file, path)), &want);
}

#[test]
fn w2_records_into_structs_every_way() {
    let dir = TempDir::new("read-vec-w2");
    let recs = w2_records(3000);
    for big in [false, true] {
        let file = w2_raw_file(&recs, big);
        let path = dir.join(if big { "be.npy" } else { "le.npy" });
        let order = if big { ">" } else { "<" };
        typed_case(
            &file,
            &path,
            &format!("{order} W2 (exact, fast)"),
            |r| *r,
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Reordered (by name)"),
            |r| Reordered {
                v: r.v,
                flag: r.flag,
                y: r.y,
                x: r.x,
                id: r.id,
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Subset"),
            |r| Subset {
                flag: r.flag,
                x: r.x,
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Prefix"),
            |r| Prefix {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag,
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} VVec"),
            |r| VVec {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag,
                v: r.v.to_vec(),
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} VTuple"),
            |r| VTuple {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag,
                v: (r.v[0], r.v[1], r.v[2]),
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Widened"),
            |r| Widened {
                id: r.id.into(),
                x: r.x,
                y: r.y.into(),
                flag: r.flag.into(),
                v: r.v.map(f64::from),
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} WidenedFlag"),
            |r| WidenedFlag {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag.into(),
                v: r.v,
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Wrapped"),
            |r| Wrapped {
                id: Id(r.id),
                x: Some(r.x),
                y: r.y,
                flag: Some(r.flag),
                v: r.v.map(Some),
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} WithDefault"),
            |r| WithDefault {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag,
                v: r.v,
                missing: None,
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Renamed"),
            |r| Renamed {
                ident: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag,
                vel: r.v,
            },
            &recs,
        );
        typed_case::<W2Tuple>(
            &file,
            &path,
            &format!("{order} tuple"),
            |r| (r.id, r.x, r.y, r.flag, r.v),
            &recs,
        );
        // Value (always the general path) agrees with the typed reads.
        let vals: Vec<Value> = npy_serde::from_slice_serde(&file).unwrap();
        assert_eq!(vals.len(), recs.len());
        for (v, r) in vals.iter().zip(&recs) {
            assert_eq!(v.get("id"), Some(&Value::Int(r.id)));
            assert_eq!(v.get("flag"), Some(&Value::UInt(r.flag.into())));
        }
    }
}

#[test]
fn w2_lossy_field_requests_fail_like_from_slice() {
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct XAsF32 {
        id: i64,
        x: f32,
        y: f32,
        flag: u8,
        v: [f32; 3],
    }
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct ShortV {
        id: i64,
        x: f64,
        y: f32,
        flag: u8,
        v: [f32; 2],
    }
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct ItemAsI32 {
        id: i64,
        x: f64,
        y: f32,
        flag: u8,
        v: [i32; 3],
    }
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct FlagAsI8ByName {
        flag: i8,
        id: i64,
    }
    let dir = TempDir::new("read-vec-w2-lossy");
    let recs = w2_records(700);
    for big in [false, true] {
        let file = w2_raw_file(&recs, big);
        let path = dir.join("f.npy");
        let start = data_start(&file);
        let rb = ReaderBuilder::new();

        let want = npy_serde::deserialize_slice::<Vec<XAsF32>>(&file).unwrap_err();
        assert_eq!(want.kind().code(), "type_mismatch");
        assert_eq!(want.position().record, Some(0));
        assert_eq!(want.position().field.as_deref(), Some("x"));
        assert_eq!(want.position().byte, Some(start + 8));
        assert_all_err(vec_with::<XAsF32>(&rb, &file, &path), &want);

        let want = npy_serde::deserialize_slice::<Vec<ShortV>>(&file).unwrap_err();
        assert_eq!(want.kind().code(), "type_mismatch");
        assert_all_err(vec_with::<ShortV>(&rb, &file, &path), &want);

        let want = npy_serde::deserialize_slice::<Vec<ItemAsI32>>(&file).unwrap_err();
        assert_eq!(want.position().field.as_deref(), Some("v[0]"));
        assert_eq!(want.position().byte, Some(start + 21));
        assert_all_err(vec_with::<ItemAsI32>(&rb, &file, &path), &want);

        let want = npy_serde::deserialize_slice::<Vec<FlagAsI8ByName>>(&file).unwrap_err();
        assert_eq!(want.kind().code(), "type_mismatch");
        assert_eq!(want.position().field.as_deref(), Some("flag"));
        assert_all_err(vec_with::<FlagAsI8ByName>(&rb, &file, &path), &want);
    }
}
