//! Every `.npz` archive NumPy wrote for the fixtures (`np.savez`, `np.savez_compressed`,
//! positional/keyword/odd keys, a non-`.npy` member, archives written to a non-seekable stream,
//! the empty archive) reads back with the manifest's keys, member names, compression, headers
//! and values, through every reading path (dynamic `Array`, serde types, streaming records,
//! raw bytes).

use std::fs::File;
use std::io::{Read, Seek};

use npy_serde::dtype::DType;
use npy_serde::npz::{Compression, NpzArchive};
use npy_serde::Value;
use npy_serde_tests::{compare, entries, entry, entry_path, entry_shape, unhex, W2};
use serde_json::Value as Json;

fn path_of(name: &str) -> std::path::PathBuf {
    entry_path(entry("npz", name))
}

fn open(name: &str) -> NpzArchive<std::io::BufReader<File>> {
    NpzArchive::open(path_of(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The manifest's JSON descr (a string, or a list of `[name, descr]` / `[name, descr, shape]`)
/// as NumPy's `descr` text.
fn descr_text(j: &Json) -> String {
    match j {
        Json::String(s) => format!("'{s}'"),
        Json::Array(fields) => {
            let items: Vec<String> = fields
                .iter()
                .map(|f| {
                    let f = f.as_array().unwrap();
                    let name = f[0].as_str().expect("plain field names in npz fixtures");
                    let mut s = format!("('{name}', {}", descr_text(&f[1]));
                    if let Some(shape) = f.get(2) {
                        let dims: Vec<String> = shape
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|d| d.to_string())
                            .collect();
                        let trail = if dims.len() == 1 { "," } else { "" };
                        s += &format!(", ({}{trail})", dims.join(", "));
                    }
                    s + ")"
                })
                .collect();
            format!("[{}]", items.join(", "))
        }
        other => panic!("unexpected descr {other}"),
    }
}

fn check_values<R: Read + Seek>(
    npz: &mut NpzArchive<R>,
    key: &str,
    shape: &[u64],
    values: &Json,
    ctx: &str,
) {
    let a = npz.read_array(key).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert_eq!(a.shape, shape, "{ctx}");
    if let Err(d) = compare(&a.to_nested(), values, ctx) {
        panic!("{d}");
    }
}

#[test]
fn every_fixture_matches_the_manifest() {
    let mut members_checked = 0;
    for e in entries("npz") {
        let name = e["name"].as_str().unwrap();
        let bytes = std::fs::read(path_of(name)).unwrap();
        // The same archive through a buffered file, an unbuffered file and a byte slice.
        let mut from_file = open(name);
        let mut unbuffered = NpzArchive::new(File::open(path_of(name)).unwrap()).unwrap();
        let mut from_bytes = NpzArchive::from_bytes(&bytes).unwrap();
        let members = e["members"].as_array().unwrap();
        let want_keys: Vec<&str> = members.iter().map(|m| m["key"].as_str().unwrap()).collect();
        let want_names: Vec<&str> = members
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert_eq!(from_file.keys().collect::<Vec<_>>(), want_keys, "{name}");
        assert_eq!(from_file.names().collect::<Vec<_>>(), want_names, "{name}");
        assert_eq!(from_file.len(), members.len());
        assert!(!from_file.has_duplicate_names());

        for m in members {
            let key = m["key"].as_str().unwrap();
            let ctx = format!("{name}/{key}");
            let info = from_file.member(key).unwrap().clone();
            assert_eq!(info.name, m["name"].as_str().unwrap(), "{ctx}");
            let comp = match m["compression"].as_str().unwrap() {
                "stored" => Compression::Stored,
                "deflate" => Compression::Deflate,
                other => panic!("{other}"),
            };
            assert_eq!(info.compression, comp, "{ctx}");
            if comp == Compression::Stored {
                assert_eq!(info.compressed_size, info.size, "{ctx}");
            }
            let raw = from_file.read_raw(key).unwrap();
            assert_eq!(raw.len() as u64, info.size, "{ctx}");
            assert_eq!(unbuffered.read_raw(key).unwrap(), raw, "{ctx}");
            assert_eq!(
                from_bytes.by_name(&info.name).unwrap().read_raw().unwrap(),
                raw
            );

            if m["is_npy"].as_bool().unwrap() {
                assert!(info.has_npy_suffix());
                let p = from_file.header(key).unwrap();
                let shape = entry_shape(m);
                assert_eq!(p.header.shape, shape, "{ctx}");
                assert_eq!(
                    p.header.fortran_order,
                    m["fortran_order"].as_bool().unwrap()
                );
                let dtype = DType::from_descr(&descr_text(&m["descr"])).unwrap();
                assert_eq!(p.header.dtype, dtype, "{ctx}");
                check_values(&mut from_file, key, &shape, &m["values"], &ctx);
                check_values(&mut unbuffered, key, &shape, &m["values"], &ctx);
                check_values(&mut from_bytes, key, &shape, &m["values"], &ctx);
                // The streaming reader yields the same elements, in logical C order.
                let a = from_file.read_array(key).unwrap();
                let streamed: Vec<Value> = from_file
                    .records_serde::<Value>(key)
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                // (Compared through Debug so that NaN equals NaN.)
                assert_eq!(format!("{streamed:?}"), format!("{:?}", a.values), "{ctx}");
            } else {
                assert_eq!(raw, unhex(m["bytes_hex"].as_str().unwrap()), "{ctx}");
                // NumPy returns such members as bytes; they have no .npy header.
                let err = from_file.header(key).unwrap_err();
                assert_eq!(err.kind().code(), "bad_magic", "{ctx}: {err}");
            }
            members_checked += 1;
        }
    }
    assert!(members_checked >= 20, "only {members_checked} members");
}

#[test]
fn typed_reads_of_savez_archives() {
    let mut npz = open("positional");
    assert_eq!(npz.deserialize::<Vec<i32>>("arr_0").unwrap(), [1, 2, 3]);
    let b: Vec<Vec<f64>> = npz.deserialize("arr_1").unwrap();
    assert_eq!(b[0], [0.5, -1.0]);
    assert!(b[1][0].is_nan() && b[1][1] == f64::INFINITY);
    // The key with its suffix finds the same member, as in np.load.
    assert_eq!(npz.deserialize::<Vec<i64>>("arr_0.npy").unwrap(), [1, 2, 3]);

    let mut npz = open("mixed");
    // Fortran-order data comes out in logical C order.
    let b: Vec<[f64; 2]> = npz.deserialize("arr_1").unwrap();
    assert_eq!(b[0], [0.5, -1.0]);
    assert_eq!(npz.deserialize::<Vec<String>>("key").unwrap(), ["x", "yé"]);

    let mut npz = open("compressed");
    assert_eq!(
        npz.deserialize::<Vec<i64>>("arr_0").unwrap(),
        (0..100).collect::<Vec<i64>>()
    );
    assert!(npz.deserialize::<bool>("t").unwrap());
    assert_eq!(
        npz.deserialize::<Vec<[f32; 5]>>("zeros").unwrap(),
        vec![[0.0; 5]; 4]
    );
    // A type mismatch is the reader's error, not a zip error.
    let err = npz.deserialize::<Vec<u8>>("arr_0").unwrap_err();
    assert_eq!(err.kind().code(), "type_mismatch", "{err}");

    let mut npz = open("odd_keys");
    assert_eq!(npz.deserialize::<Vec<i32>>("données").unwrap(), [1, 2, 3]);
    assert_eq!(npz.deserialize::<f64>("a.b").unwrap(), 1.5);
    assert_eq!(npz.member("x.npy").unwrap().name, "x.npy.npy");
    assert_eq!(npz.deserialize::<Vec<u8>>("x.npy").unwrap(), [1]);
    assert_eq!(
        npz.deserialize::<Vec<String>>("sp ace").unwrap(),
        ["x", "yé"]
    );
}

#[test]
fn record_arrays_as_structs_both_byte_orders() {
    let mut npz = open("records");
    for key in ["rec", "rec_be"] {
        let recs: Vec<W2> = npz.deserialize(key).unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(
            recs[1],
            W2 {
                id: 2,
                x: 0.2,
                y: -2.0,
                flag: 0,
                v: [3.0, 4.0, 5.0]
            }
        );
        let streamed: Vec<W2> = npz
            .records_serde::<W2>(key)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(streamed, recs);
    }
}

#[test]
fn streaming_a_deflated_member() {
    let mut npz = open("compressed");
    let mut records = npz.records_serde::<i64>("arr_0").unwrap();
    assert_eq!(records.len(), 100);
    assert_eq!(records.header().shape, [100]);
    let first: Vec<i64> = records.by_ref().take(10).map(Result::unwrap).collect();
    assert_eq!(first, (0..10).collect::<Vec<_>>());
    assert_eq!(records.remaining(), 90);
    // Stopping early still checks the rest of the member.
    records.finish().unwrap();

    let mut member = npz.by_key("arr_0").unwrap();
    let h = member.header().unwrap().clone();
    assert_eq!(member.position(), h.data_offset);
    let mut data = Vec::new();
    member.read_to_end(&mut data).unwrap();
    assert_eq!(data.len(), 800);
    assert_eq!(&data[8..16], &1i64.to_le_bytes());
}

#[test]
fn member_reading_order_is_enforced() {
    let mut npz = open("keyword");
    let mut m = npz.by_key("alpha").unwrap();
    let mut first = [0u8; 4];
    m.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"\x93NUM");
    // The header cannot be parsed once raw bytes were taken.
    assert_eq!(m.header().unwrap_err().kind().code(), "zip");
    drop(m);

    let mut m = npz.by_key("alpha").unwrap();
    m.header().unwrap();
    let mut one = [0u8; 4];
    m.read_exact(&mut one).unwrap();
    assert_eq!(one, 1i32.to_le_bytes());
    let err = m.deserialize::<Vec<i32>>().unwrap_err();
    assert!(err.to_string().contains("already read"), "{err}");
}

#[test]
fn empty_archive_from_savez_with_no_arrays() {
    assert_eq!(std::fs::metadata(path_of("empty")).unwrap().len(), 22);
    let mut npz = open("empty");
    assert!(npz.is_empty());
    assert_eq!(npz.keys().count(), 0);
    let err = npz.deserialize::<Vec<f64>>("arr_0").unwrap_err();
    assert_eq!(err.kind().code(), "zip");
    assert!(err.to_string().contains("the archive is empty"), "{err}");
}

#[test]
fn archives_numpy_wrote_to_non_seekable_streams() {
    // Every member has a data descriptor (general-purpose flag bit 3) after its data.
    for name in ["unseekable_stream", "unseekable_stream_compressed"] {
        let bytes = std::fs::read(path_of(name)).unwrap();
        assert_eq!(bytes[6] & 0x08, 0x08, "{name}: expected a data descriptor");
        let mut npz = open(name);
        assert_eq!(npz.deserialize::<Vec<i32>>("a").unwrap(), [1, 2, 3]);
    }
    assert_eq!(
        open("unseekable_stream_compressed")
            .deserialize::<Vec<String>>("c")
            .unwrap(),
        ["x", "yé"]
    );
}
