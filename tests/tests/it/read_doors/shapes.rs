//! Shapes: N-d and Fortran order come out flattened in C order (errors name the C-order
//! element), empty and 0-d arrays.

use std::fmt::Debug;
use std::io::Cursor;

use npy_serde::{DType, Header, NpyRecord, ReaderBuilder};
use npy_serde_tests::{fixture, npy, TempDir, Trickle, W2};
use serde::{Deserialize, Serialize};

use super::data::*;
use super::doors::*;

#[test]
fn nd_and_fortran_order_flatten_in_c_order() {
    let dir = TempDir::new("read-records-nd");
    let (rows, cols) = (15, 20);
    let recs = w2_records(rows * cols);
    /// W2 with `flag` a bool.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct BoolFlag {
        id: i64,
        x: f64,
        y: f32,
        flag: bool,
        v: [f32; 3],
    }
    for big in [false, true] {
        let descr = if big {
            "[('id','>i8'),('x','>f8'),('y','>f4'),('flag','u1'),('v','>f4',(3,))]"
        } else {
            "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]"
        };
        let data_of = |recs: &[W2]| {
            let file = w2_file(recs, big);
            file[data_offset(&file)..].to_vec()
        };
        // C order, 3-D.
        let file = npy(descr, &[3, 10, 10], false, &data_of(&recs));
        same_ok::<W2>(&dir, &file, &recs);
        assert_eq!(exact_count::<W2>(&file).1, recs.len());
        // Fortran order, rows x cols: stored column by column.
        let fortran = |recs: &[W2]| {
            let mut storage = Vec::new();
            for c in 0..cols {
                for r in 0..rows {
                    storage.push(recs[r * cols + c]);
                }
            }
            data_of(&storage)
        };
        let file = npy(descr, &[rows as u64, cols as u64], true, &fortran(&recs));
        same_ok::<W2>(&dir, &file, &recs);
        let nested: Vec<Vec<W2>> = npy_serde::deserialize_slice(&file).unwrap();
        assert_eq!(nested.concat(), recs);

        // As bools: a bad one at C index 237 (row 11, column 17) is reported there, in either
        // order.
        let descr_b = descr.replace("'u1'", "'|b1'");
        let mut bools: Vec<W2> = recs
            .iter()
            .map(|r| W2 {
                flag: r.flag % 2,
                ..*r
            })
            .collect();
        let want: Vec<BoolFlag> = bools
            .iter()
            .map(|r| BoolFlag {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag == 1,
                v: r.v,
            })
            .collect();
        let shape = [rows as u64, cols as u64];
        same_ok::<BoolFlag>(&dir, &npy(&descr_b, &shape, true, &fortran(&bools)), &want);
        same_ok::<BoolFlag>(&dir, &npy(&descr_b, &shape, false, &data_of(&bools)), &want);
        bools[11 * cols + 17].flag = 5;
        for file in [
            npy(&descr_b, &shape, true, &fortran(&bools)),
            npy(&descr_b, &shape, false, &data_of(&bools)),
        ] {
            let err = same::<BoolFlag>(&dir, &file).unwrap_err();
            assert_eq!(err.kind().code(), "invalid_value", "{err}");
            assert_eq!(err.position().record, Some(237), "{err}");
        }
    }
    // Fortran order with one axis longer than 1 is stored as C order: runs, and the exact tier.
    let recs = w2_records(100);
    let w2 = w2_file(&recs, false);
    let descr = "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]";
    for shape in [[1, 100], [100, 1]] {
        let file = npy(descr, &shape, true, &w2[data_offset(&w2)..]);
        same_ok::<W2>(&dir, &file, &recs);
        assert_eq!(exact_count::<W2>(&file).1, recs.len(), "{shape:?}");
    }
    // NumPy's N-d and Fortran fixtures, as scalars.
    let f = same::<f64>(&dir, &fixture("f8_le_2x3_fortran")).unwrap();
    assert_eq!(f, [0.0, 1.5, 3.0, 4.5, 6.0, 7.5]);
    let cube = same::<u16>(&dir, &fixture("u2_le_2x3x4")).unwrap();
    let nested: Vec<Vec<Vec<u16>>> = npy_serde::deserialize_slice(&fixture("u2_le_2x3x4")).unwrap();
    assert_eq!(cube, nested.concat().concat());
    let i2 = same::<i16>(&dir, &fixture("i2_be_3x2_fortran")).unwrap();
    let nested: Vec<Vec<i16>> =
        npy_serde::deserialize_slice(&fixture("i2_be_3x2_fortran")).unwrap();
    assert_eq!(i2, nested.concat());
}

#[test]
fn empty_and_zero_d_arrays() {
    let dir = TempDir::new("read-records-empty");
    let w2 = "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]";
    for shape in [&[0u64][..], &[3, 0], &[0, 5], &[2, 0, 2]] {
        for fortran in [false, true] {
            let file = npy(w2, shape, fortran, &[]);
            assert_eq!(same::<W2>(&dir, &file).unwrap(), Vec::<W2>::new());
            let file = npy("<f8", shape, fortran, &[]);
            assert_eq!(same::<f64>(&dir, &file).unwrap(), Vec::<f64>::new());
        }
    }
    for name in ["f8_le_empty", "i2_be_empty_2x0", "u8_le_empty_0x3"] {
        assert_eq!(same::<i64>(&dir, &fixture(name)).map(|v| v.len()).ok(), {
            let v = npy_serde::from_slice_serde::<i64>(&fixture(name));
            v.map(|v| v.len()).ok()
        });
    }
    // 0-d: one element.
    let rec = w2_records(5)[4];
    let one = w2_file(&[rec], false);
    let file = npy(w2, &[], false, &one[data_offset(&one)..]);
    same_ok::<W2>(&dir, &file, &[rec]);
    assert_eq!(exact_count::<W2>(&file), (vec![rec], 1));
    let file = npy(">f8", &[], false, &(-2.5f64).to_be_bytes());
    same_ok::<f64>(&dir, &file, &[-2.5]);
    same_ok::<i32>(
        &dir,
        &fixture("i4_be_0d"),
        &[npy_serde::deserialize_slice(&fixture("i4_be_0d")).unwrap()],
    );
    let b = same::<bool>(&dir, &fixture("b1_0d")).unwrap();
    assert_eq!(
        b,
        [npy_serde::deserialize_slice::<bool>(&fixture("b1_0d")).unwrap()]
    );

    // A struct with no fields over NumPy's `[]` dtype (zero-size elements).
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Nothing {}
    let got = same::<Nothing>(&dir, &fixture("rec_empty_struct")).unwrap();
    assert_eq!(got.len(), 3);
    // Zero-size elements count against max_empty_items, as for the serde doors.
    let file = npy("[]", &[1 << 20], false, &[]);
    let err = same::<Nothing>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "limit_exceeded", "{err}");
    let rb = ReaderBuilder::new().max_empty_items(1000);
    let got = same_with::<Nothing>(&rb, &dir, &npy("[]", &[999], false, &[])).unwrap();
    assert_eq!(got.len(), 999);
    let err = same_with::<Nothing>(&rb, &dir, &npy("[]", &[1000], false, &[])).unwrap_err();
    assert_eq!(err.kind().code(), "limit_exceeded", "{err}");
    // A zero-length subarray field.
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
    struct WithNothing {
        a: u16,
        none: [f32; 0],
        b: u16,
    }
    let recs: Vec<WithNothing> = (0..100)
        .map(|i| WithNothing {
            a: i,
            none: [],
            b: !i,
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    same_ok::<WithNothing>(&dir, &file, &recs);
}

#[test]
fn fortran_order_comes_out_in_c_order() {
    let dir = TempDir::new("read-vec-fortran");
    let path = dir.join("f.npy");
    // (rows, cols) = (3, 4), value = 10 * row + col; Fortran storage is column by column.
    let (rows, cols) = (3u64, 4u64);
    let mut fdata = Vec::new();
    for c in 0..cols {
        for r in 0..rows {
            fdata.extend_from_slice(&((10 * r + c) as i32).to_be_bytes());
        }
    }
    let file = npy(">i4", &[rows, cols], true, &fdata);
    let want: Vec<i32> = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| (10 * r + c) as i32))
        .collect();
    let nested: Vec<Vec<i32>> = npy_serde::deserialize_slice(&file).unwrap();
    assert_eq!(nested.concat(), want);
    assert_all_eq(vec_all::<i32>(&file, &path), &want);
    assert_all_eq(
        vec_all::<i64>(&file, &path),
        &want.iter().map(|&v| i64::from(v)).collect::<Vec<_>>(),
    );

    // Fixtures written by NumPy.
    let f: Vec<f64> = npy_serde::from_slice_serde(&fixture("f8_le_2x3_fortran")).unwrap();
    assert_eq!(f, [0.0, 1.5, 3.0, 4.5, 6.0, 7.5]);
    let u: Vec<String> = npy_serde::from_reader_serde(Trickle {
        data: &fixture("U3_le_2x2_fortran"),
        step: 7,
    })
    .unwrap();
    assert_eq!(u, ["a", "bc", "déf", "\u{1F600}"]);
    let b = fixture("u1_2x3x2_fortran");
    let nested: Vec<Vec<Vec<u8>>> = npy_serde::deserialize_slice(&b).unwrap();
    assert_eq!(
        npy_serde::from_slice_serde::<u8>(&b).unwrap(),
        nested.concat().concat()
    );

    // W2 records in Fortran order (40 x 50), both byte orders, fast and general paths, and a
    // miss in the middle (reported with the C-order record index).
    let recs = w2_records(2000);
    for big in [false, true] {
        let mut storage = Vec::new();
        for c in 0..50 {
            for r in 0..40 {
                storage.push(recs[r * 50 + c]);
            }
        }
        let dtype: DType = w2_descr(big).parse().unwrap();
        let mut h = Header::new(dtype, vec![40, 50]);
        h.fortran_order = true;
        let mut file = h.to_bytes().unwrap();
        file.extend(w2_data(&storage, big));
        let nested: Vec<Vec<W2>> = npy_serde::deserialize_slice(&file).unwrap();
        assert_eq!(nested.concat(), recs);
        assert_all_eq(vec_all::<W2>(&file, &path), &recs);
        let subset: Vec<Subset> = recs
            .iter()
            .map(|r| Subset {
                flag: r.flag,
                x: r.x,
            })
            .collect();
        assert_all_eq(vec_all::<Subset>(&file, &path), &subset);

        // Zero flag at C index 1234 (row 24, col 34).
        let mut bad = storage.clone();
        let at = 34 * 40 + 24;
        assert_eq!(bad[at].id, recs[1234].id);
        bad[at].flag = 0;
        let mut file = h.to_bytes().unwrap();
        file.extend(w2_data(&bad, big));
        let nested = npy_serde::deserialize_slice::<Vec<Vec<NzFlag>>>(&file).unwrap_err();
        assert_eq!(nested.position().record, Some(1234), "{nested}");
        for Outcome { how, stream, got } in vec_all::<NzFlag>(&file, &path) {
            let e = got.unwrap_err();
            assert_eq!(e.kind().code(), nested.kind().code(), "{how}: {e}");
            if stream {
                assert_eq!(e.position().record, nested.position().record, "{how}: {e}");
            } else {
                assert_eq!(e.position(), nested.position(), "{how}: {e}");
            }
        }
    }
}

/// Fortran-order arrays go element by element (a walk, not runs): an error raised by the
/// element's own conversion still names the element, by its C-order index, from every entry
/// point; and the nested reader names the same one.
#[test]
fn fortran_conversion_errors_name_the_c_order_element() {
    // 3 x 4, stored column by column: storage position of C index i*4+j is j*3+i.
    let mut data = vec![1u8; 12];
    let (i, j) = (2usize, 1usize); // C index 9
    data[j * 3 + i] = 42;
    let file = npy("|u1", &[3, 4], true, &data);
    let want_record = Some(9);
    let slice = npy_serde::from_slice_serde::<Not42>(&file).unwrap_err();
    assert_eq!(slice.position().record, want_record, "{slice}");
    let reader = npy_serde::from_reader_serde::<_, Not42>(Cursor::new(&file)).unwrap_err();
    assert_eq!(reader.position().record, want_record, "{reader}");
    let nested = npy_serde::deserialize_slice::<Vec<Vec<Not42>>>(&file).unwrap_err();
    assert_eq!(nested.position().record, want_record, "{nested}");
    assert_eq!(slice.kind().code(), nested.kind().code());
}
