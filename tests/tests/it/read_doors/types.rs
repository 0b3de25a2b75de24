//! Nested, aligned, tuple, newtype and subarray types, the largest exact layouts, and
//! subarrays at top level.

use std::fmt::Debug;

use npy_serde::header::{parse_header, Limits};
use npy_serde::NpyRecord;
use npy_serde_tests::{fixture, npy, TempDir};
use serde::{Deserialize, Serialize};

use super::data::*;
use super::doors::*;

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Pt {
    x: f32,
    y: f32,
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Seg {
    id: u16,
    a: Pt,
    b: Pt,
    w: [Pt; 2],
    ok: bool,
}

#[test]
fn nested_structs_and_subarrays_of_records() {
    let dir = TempDir::new("read-records-nested");
    let p = |i: usize, k: f32| Pt {
        x: i as f32 + k,
        y: -(i as f32) * k,
    };
    let recs: Vec<Seg> = (0..800)
        .map(|i| Seg {
            id: i as u16,
            a: p(i, 0.5),
            b: p(i, 2.0),
            w: [p(i, 3.0), p(i, 4.0)],
            ok: i % 2 == 1,
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    assert_eq!(
        descr_of(&file),
        "[('id', '<u2'), ('a', [('x', '<f4'), ('y', '<f4')]), ('b', [('x', '<f4'), ('y', '<f4')]), \
         ('w', [('x', '<f4'), ('y', '<f4')], (2,)), ('ok', '|b1')]"
    );
    same_ok::<Seg>(&dir, &file, &recs);
    assert_eq!(exact_count::<Seg>(&file), (recs.clone(), recs.len()));

    // A bad bool at the end of the nested record: same error.
    let mut bad = file.clone();
    let size = 2 + 8 + 8 + 16 + 1;
    let at = data_offset(&file) + 432 * size + size - 1;
    bad[at] = 3;
    let err = same::<Seg>(&dir, &bad).unwrap_err();
    assert_eq!(err.kind().code(), "invalid_value");
    assert_eq!(err.position().record, Some(432));
    assert_eq!(err.position().byte, Some(at as u64));

    // A bad bool inside a subarray field: its item's path.
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
    struct Bools {
        id: u16,
        bits: [bool; 4],
    }
    let recs: Vec<Bools> = (0..500u16)
        .map(|i| Bools {
            id: i,
            bits: [i % 2 == 0, i % 3 == 0, i % 5 == 0, true],
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    same_ok::<Bools>(&dir, &file, &recs);
    assert_eq!(exact_count::<Bools>(&file).1, recs.len());
    let mut bad = file.clone();
    let at = data_offset(&file) + 77 * 6 + 2 + 2;
    bad[at] = 0xff;
    let err = same::<Bools>(&dir, &bad).unwrap_err();
    assert_eq!(err.kind().code(), "invalid_value", "{err}");
    assert_eq!(err.position().record, Some(77), "{err}");
    assert_eq!(err.position().field.as_deref(), Some("bits[2]"), "{err}");
    assert_eq!(err.position().byte, Some(at as u64), "{err}");

    // NumPy's subarray of records.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Pts {
        pts: [Pt; 2],
        n: i16,
    }
    let file = fixture("rec_subarray_of_records");
    let want = [
        Pts {
            pts: [Pt { x: 1.0, y: -1.0 }, Pt { x: 2.0, y: -2.0 }],
            n: 2,
        },
        Pts {
            pts: [Pt { x: 3.0, y: -3.0 }, Pt { x: 4.0, y: -4.0 }],
            n: 2,
        },
    ];
    same_ok::<Pts>(&dir, &file, &want);
    assert_eq!(exact_count::<Pts>(&file).1, 2);
}

/// NumPy's mixed byte orders in one record: `[('a', '<i4'), ('inner', [('x', '<f8'),
/// ('y', '>i2'), ('deep', [('z', '|u1')])]), ('b', '|b1')]`.
#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
#[npy(byte_order = "big")]
struct BeI16(i16);

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct Deep {
    z: u8,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct InnerMixed {
    x: f64,
    y: BeI16,
    deep: Deep,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct NestedMixed {
    a: i32,
    inner: InnerMixed,
    b: bool,
}

/// The same record read into native-order types: not the file's layout.
#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct InnerNative {
    x: f64,
    y: i16,
    deep: Deep,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct NestedNative {
    a: i32,
    inner: InnerNative,
    b: bool,
}

#[test]
fn mixed_byte_orders_in_nested_records() {
    let dir = TempDir::new("read-records-mixed");
    let file = fixture("rec_nested");
    let rows = [(1, 0.25, -1, 9, true), (2, -1.0, 300, 8, false)];
    let mut want: Vec<NestedMixed> = rows
        .iter()
        .map(|&(a, x, y, z, b)| NestedMixed {
            a,
            inner: InnerMixed {
                x,
                y: BeI16(y),
                deep: Deep { z },
            },
            b,
        })
        .collect();
    want.push(NestedMixed {
        a: -3,
        inner: InnerMixed {
            x: 1e100,
            y: BeI16(32767),
            deep: Deep { z: 7 },
        },
        b: true,
    });
    same_ok::<NestedMixed>(&dir, &file, &want);
    assert_eq!(exact_count::<NestedMixed>(&file).1, 3);
    let native: Vec<NestedNative> = want
        .iter()
        .map(|w| NestedNative {
            a: w.a,
            inner: InnerNative {
                x: w.inner.x,
                y: w.inner.y.0,
                deep: Deep { z: w.inner.deep.z },
            },
            b: w.b,
        })
        .collect();
    same_ok::<NestedNative>(&dir, &file, &native);
    assert_eq!(exact_count::<NestedNative>(&file).1, 0);
}

/// `#[npy(align)]`: `[('a', 'u1'), ('b', '<i8'), ('c', 'u1'), ('d', '<f4')]` at offsets 0, 8,
/// 16, 20, itemsize 24.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
#[npy(align)]
struct Aligned {
    a: u8,
    b: i64,
    c: u8,
    d: f32,
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
#[npy(align)]
struct AlignedOuter {
    h: u8,
    s: Aligned,
    t: u16,
}

#[test]
fn aligned_structs_with_padding() {
    let dir = TempDir::new("read-records-aligned");
    let recs: Vec<Aligned> = (0..600)
        .map(|i| Aligned {
            a: (i % 256) as u8,
            b: i as i64 * -99_991,
            c: (i % 7) as u8,
            d: i as f32 * 0.125,
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    let h = parse_header(&file, &Limits::default()).unwrap();
    assert_eq!(h.header.dtype.itemsize(), 24);
    same_ok::<Aligned>(&dir, &file, &recs);
    assert_eq!(exact_count::<Aligned>(&file), (recs.clone(), recs.len()));

    // NumPy's form with explicit padding, the padding bytes full of garbage.
    let mut data = Vec::new();
    for r in &recs {
        data.push(r.a);
        data.extend([0xAA; 7]);
        data.extend(r.b.to_le_bytes());
        data.push(r.c);
        data.extend([0x55; 3]);
        data.extend(r.d.to_le_bytes());
    }
    let padded = npy(
        "[('a','u1'),('','|V7'),('b','<i8'),('c','u1'),('','|V3'),('d','<f4')]",
        &[recs.len() as u64],
        false,
        &data,
    );
    same_ok::<Aligned>(&dir, &padded, &recs);
    assert_eq!(exact_count::<Aligned>(&padded).1, recs.len());
    // The same fields packed: not this layout, still the same values by name.
    let packed: Vec<u8> = recs
        .iter()
        .flat_map(|r| {
            let mut b = vec![r.a];
            b.extend(r.b.to_le_bytes());
            b.push(r.c);
            b.extend(r.d.to_le_bytes());
            b
        })
        .collect();
    let packed = npy(
        "[('a','u1'),('b','<i8'),('c','u1'),('d','<f4')]",
        &[recs.len() as u64],
        false,
        &packed,
    );
    same_ok::<Aligned>(&dir, &packed, &recs);
    assert_eq!(exact_count::<Aligned>(&packed).1, 0);

    // Nested aligned records: `s` at 8, `t` at 32, itemsize 40.
    let outer: Vec<AlignedOuter> = recs
        .iter()
        .take(300)
        .enumerate()
        .map(|(i, &s)| AlignedOuter {
            h: i as u8,
            s,
            t: i as u16 * 3,
        })
        .collect();
    let file = npy_serde::to_vec(&outer).unwrap();
    let h = parse_header(&file, &Limits::default()).unwrap();
    assert_eq!(h.header.dtype.itemsize(), 40);
    same_ok::<AlignedOuter>(&dir, &file, &outer);
    assert_eq!(exact_count::<AlignedOuter>(&file).1, outer.len());

    // NumPy's `align=True` record with an `f2`: no exact layout (half floats are not on the
    // exact tier), the serde twin's values.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    #[npy(align)]
    struct WithHalf {
        a: u8,
        b: i64,
        c: u8,
        d: half::f16,
    }
    let file = fixture("rec_aligned");
    let want = [
        WithHalf {
            a: 1,
            b: -3,
            c: 5,
            d: half::f16::from_f32(0.5),
        },
        WithHalf {
            a: 2,
            b: 4,
            c: 6,
            d: half::f16::NEG_INFINITY,
        },
    ];
    same_ok::<WithHalf>(&dir, &file, &want);
    assert_eq!(exact_count::<WithHalf>(&file).1, 0);
}

/// A tuple struct: NumPy's default names `f0`, `f1`, `f2`.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Triple(i32, f64, [u8; 2]);

/// A newtype: the dtype of its field.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Meters(f64);

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Walk {
    id: u32,
    dist: Meters,
    legs: [Meters; 3],
}

#[test]
fn tuple_structs_and_newtypes() {
    let dir = TempDir::new("read-records-tuples");
    let recs: Vec<Triple> = (0..600)
        .map(|i| Triple(i - 300, i as f64 / 3.0, [i as u8, (i / 256) as u8]))
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    assert_eq!(
        descr_of(&file),
        "[('f0', '<i4'), ('f1', '<f8'), ('f2', '|u1', (2,))]"
    );
    same_ok::<Triple>(&dir, &file, &recs);
    assert_eq!(exact_count::<Triple>(&file), (recs.clone(), recs.len()));
    // A plain tuple reads the same records (positionally, no tier: not NpyRecord).
    let tuples: Vec<(i32, f64, [u8; 2])> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(tuples[123], (recs[123].0, recs[123].1, recs[123].2));

    let walks: Vec<Walk> = (0..600)
        .map(|i| Walk {
            id: i,
            dist: Meters(i as f64 * 2.5),
            legs: [Meters(1.0), Meters(-(i as f64)), Meters(i as f64 / 7.0)],
        })
        .collect();
    let file = npy_serde::to_vec(&walks).unwrap();
    assert_eq!(
        descr_of(&file),
        "[('id', '<u4'), ('dist', '<f8'), ('legs', '<f8', (3,))]"
    );
    same_ok::<Walk>(&dir, &file, &walks);
    assert_eq!(exact_count::<Walk>(&file), (walks.clone(), walks.len()));

    // Top-level newtypes: a `<f8` array.
    let meters: Vec<Meters> = (0..600).map(|i| Meters(i as f64 - 0.5)).collect();
    let file = npy_serde::to_vec(&meters).unwrap();
    assert_eq!(descr_of(&file), "'<f8'");
    same_ok::<Meters>(&dir, &file, &meters);
    assert_eq!(exact_count::<Meters>(&file), (meters.clone(), meters.len()));
    let floats: Vec<f64> = meters.iter().map(|m| m.0).collect();
    same_ok::<f64>(&dir, &file, &floats);
}

#[test]
fn two_d_subarray_fields() {
    let dir = TempDir::new("read-records-2d");
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
    struct Grid {
        m: [[f32; 3]; 2],
        id: u16,
    }
    #[derive(Serialize, NpyRecord)]
    #[npy(byte_order = "big")]
    struct GridBe {
        m: [[f32; 3]; 2],
        id: u16,
    }
    let recs: Vec<Grid> = (0..500u16)
        .map(|i| {
            let f = f32::from(i);
            Grid {
                m: [[f, f + 0.5, -f], [f * 2.0, 1.0 / (f + 1.0), 0.0]],
                id: i,
            }
        })
        .collect();
    let le = npy_serde::to_vec(&recs).unwrap();
    assert_eq!(descr_of(&le), "[('m', '<f4', (2, 3)), ('id', '<u2')]");
    let be: Vec<GridBe> = recs.iter().map(|g| GridBe { m: g.m, id: g.id }).collect();
    let be = npy_serde::to_vec(&be).unwrap();
    for file in [le, be] {
        same_ok::<Grid>(&dir, &file, &recs);
        assert_eq!(exact_count::<Grid>(&file).1, recs.len());
    }

    // NumPy's.
    let file = fixture("rec_subarray_2x3");
    let want = [
        Grid {
            m: [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
            id: 10,
        },
        Grid {
            m: [[6.0, 7.0, 8.0], [9.0, 10.0, 11.0]],
            id: 20,
        },
    ];
    same_ok::<Grid>(&dir, &file, &want);
    assert_eq!(exact_count::<Grid>(&file).1, 2);
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct SubSub {
        a: [[f32; 2]; 3],
    }
    let want = [
        SubSub {
            a: [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]],
        },
        SubSub {
            a: [[6.0, 7.0], [8.0, 9.0], [10.0, 11.0]],
        },
    ];
    let file = fixture("rec_subarray_of_subarray");
    same_ok::<SubSub>(&dir, &file, &want);
    assert_eq!(exact_count::<SubSub>(&file).1, 2);
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Be22 {
        v: [[i32; 2]; 2],
    }
    let file = fixture("rec_subarray_be");
    let want = [
        Be22 {
            v: [[-4, -3], [-2, -1]],
        },
        Be22 {
            v: [[0, 1], [2, 3]],
        },
    ];
    same_ok::<Be22>(&dir, &file, &want);
    assert_eq!(exact_count::<Be22>(&file).1, 2);
    // The wrong axes: the same layout size, another shape; the serde twin's error.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Flat4 {
        v: [i32; 4],
    }
    let err = same::<Flat4>(&dir, &file).unwrap_err();
    assert_eq!(err.position().record, Some(0), "{err}");
}

/// The exact tier holds layouts of up to 64 steps (a record step, then one per field, subarray
/// axis and item): 1 + (1 + 7 * (1 + 7)) + (1 + 5) = 64 steps here, 65 with one more byte.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Steps64 {
    m: [[u16; 7]; 7],
    t: [u8; 5],
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Steps65 {
    m: [[u16; 7]; 7],
    t: [u8; 6],
}

#[test]
fn largest_layouts() {
    let dir = TempDir::new("read-records-steps");
    let m = |i: u16| std::array::from_fn(|r| std::array::from_fn(|c| i * 49 + (r * 7 + c) as u16));
    fn t<const N: usize>(i: u16) -> [u8; N] {
        std::array::from_fn(|k| (i as usize + k) as u8)
    }
    let recs: Vec<Steps64> = (0..100).map(|i| Steps64 { m: m(i), t: t(i) }).collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    same_ok::<Steps64>(&dir, &file, &recs);
    assert_eq!(exact_count::<Steps64>(&file).1, recs.len());
    let recs: Vec<Steps65> = (0..100).map(|i| Steps65 { m: m(i), t: t(i) }).collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    same_ok::<Steps65>(&dir, &file, &recs);
    assert_eq!(exact_count::<Steps65>(&file).1, 0);
}

#[test]
fn top_level_subarrays() {
    let dir = TempDir::new("read-records-top-sub");
    let vals: Vec<[u16; 4]> = (0..600u16).map(|i| [i, i.wrapping_mul(3), !i, 7]).collect();
    let data: Vec<u8> = vals
        .iter()
        .flatten()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    // A subarray dtype at top level (NumPy never writes one: it moves the subarray's shape
    // into the array's).
    let file = raw_npy(
        "{'descr': ('<u2', (4,)), 'fortran_order': False, 'shape': (600,), }",
        &data,
    );
    same_ok::<[u16; 4]>(&dir, &file, &vals);
    assert_eq!(exact_count::<[u16; 4]>(&file), (vals.clone(), vals.len()));
    // A 2-D array of `<u2`: its elements are scalars, not `[u16; 4]`.
    let file = npy("<u2", &[600, 4], false, &data);
    let want = npy_serde::from_slice_serde::<[u16; 4]>(&file).map(|_| ());
    let got = same::<[u16; 4]>(&dir, &file).map(|_| ());
    assert_eq!(
        got.map_err(|e| e.to_string()),
        want.map_err(|e| e.to_string())
    );
    let flat: Vec<u16> = vals.iter().flatten().copied().collect();
    same_ok::<u16>(&dir, &file, &flat);
    // Arrays of records at top level.
    let pts: Vec<[Pt; 2]> = (0..500)
        .map(|i| {
            let f = i as f32;
            [Pt { x: f, y: -f }, Pt { x: f / 2.0, y: 3.0 }]
        })
        .collect();
    let data: Vec<u8> = pts
        .iter()
        .flatten()
        .flat_map(|p| [p.x.to_le_bytes(), p.y.to_le_bytes()].concat())
        .collect();
    let file = raw_npy(
        "{'descr': ([('x', '<f4'), ('y', '<f4')], (2,)), 'fortran_order': False, \
         'shape': (500,), }",
        &data,
    );
    same_ok::<[Pt; 2]>(&dir, &file, &pts);
    assert_eq!(exact_count::<[Pt; 2]>(&file), (pts.clone(), pts.len()));
}
