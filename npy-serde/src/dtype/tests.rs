//! Unit tests of the dtype model.

use super::*;

fn rt(s: &str) {
    let dt: DType = DType::from_descr(s).unwrap_or_else(|e| panic!("{s}: {e}"));
    assert_eq!(dt.descr(), s);
}

#[test]
fn typestrs_normalise_like_numpy() {
    for (input, out, size) in [
        ("|S0", "|S0", 0),
        ("U0", "<U0", 0),
        (">u1", "|u1", 1),
        ("|i4", "<i4", 4),
        ("=i4", "<i4", 4),
        ("b", "|i1", 1),
        ("?", "|b1", 1),
        ("l", "<i8", 8),
        ("g", "<f16", 16),
        ("G", "<c32", 32),
        ("M8", "<M8", 8),
        ("<M8[10s]", "<M8[10s]", 8),
        (">m8[25ms]", ">m8[25ms]", 8),
        (">b1", "|b1", 1),
        ("a5", "|S5", 5),
        (">U3", ">U3", 12),
        ("V4", "|V4", 4),
        ("d", "<f8", 8),
    ] {
        let p = PlainType::from_typestr(input).unwrap();
        assert_eq!(p.typestr(), out, "{input}");
        assert_eq!(p.itemsize(), size, "{input}");
    }
}

#[test]
fn bad_typestrs() {
    for s in [
        "",
        "<",
        "x4",
        "i3",
        "f12",
        "b2",
        "M8[xs]",
        "M8[0s]",
        "i4 ",
        "S99999999999999999999",
        "U999999999",
    ] {
        let e = PlainType::from_typestr(s).unwrap_err();
        assert_eq!(e.kind().code(), "invalid_descr", "{s}: {e}");
    }
    assert_eq!(
        PlainType::from_typestr("|O").unwrap_err().kind().code(),
        "unsupported_dtype"
    );
}

#[test]
fn descr_roundtrips() {
    rt("'<f8'");
    rt("[('id', '<i8'), ('', '|V4'), ('v', '<f4', (3,))]");
    rt("[(('t', 'n'), '<i4'), ('s', '<f4', (2, 3)), ('r', [('a', '|u1')], (2,))]");
    rt("[('a', ('<f4', (2,)), (3,))]");
    rt("[(\"a'b\", '<i4'), ('é', '|u1'), ('\\xa0', '|u1'), ('a\"\\'b', '|u1'), ('\\n', '|u1')]");
    rt("[]");
    rt("[('a', '<i4'), ('', '|V4')]");
    rt("[('', '<i4')]");
    rt("[('pos', [('x', '<f8'), ('y', '<f8')]), ('t', '<M8[us]')]");
}

#[test]
fn padding_merges_and_empty_struct() {
    let dt = DType::from_descr("[('', '|V4'), ('', '|V4'), ('a', '<i4')]").unwrap();
    assert_eq!(dt.descr(), "[('', '|V8'), ('a', '<i4')]");
    let r = dt.as_record().unwrap();
    assert_eq!(r.fields()[0].offset, 8);
    assert_eq!(r.itemsize(), 12);
    let e = DType::from_descr("[]").unwrap();
    assert_eq!(e.itemsize(), 0);
}

#[test]
fn aligned_matches_numpy() {
    // np.dtype([('a','u1'),('b','<i4'),('c','<f8'),('d','u1')], align=True):
    // offsets 0, 4, 8, 16; itemsize 24.
    let r = Record::aligned([
        ("a", DType::scalar(Scalar::U8)),
        ("b", DType::scalar(Scalar::I32)),
        ("c", DType::scalar(Scalar::F64)),
        ("d", DType::scalar(Scalar::U8)),
    ])
    .unwrap();
    let offs: Vec<usize> = r.fields().iter().map(|f| f.offset).collect();
    assert_eq!(offs, [0, 4, 8, 16]);
    assert_eq!(r.itemsize(), 24);
    let parsed = DType::from_descr(&DType::Record(r.clone()).descr()).unwrap();
    assert_eq!(
        parsed,
        DType::Record(r.clone()),
        "alignment flag is not part of equality"
    );
    assert_eq!(
        DType::Record(r).descr(),
        "[('a', '|u1'), ('', '|V3'), ('b', '<i4'), ('c', '<f8'), ('d', '|u1'), ('', '|V7')]"
    );
}

#[test]
fn descr_errors() {
    for (s, code) in [
        ("[('a', '<i4'), ('a', '<f8')]", "invalid_descr"),
        ("[('a',)]", "invalid_descr"),
        ("[('a', '<i4', (-1,))]", "invalid_descr"),
        ("[(3, '<i4')]", "invalid_descr"),
        ("{'a': 1}", "invalid_descr"),
        ("[('a', '|O')]", "unsupported_dtype"),
        ("[('a', '<f8', (4294967296, 4294967296))]", "overflow"),
        ("[('a', '|S0', (2,))]", "invalid_descr"),
        (
            "[('a', 'S2000000000'), ('b', 'S2000000000')]",
            "limit_exceeded",
        ),
    ] {
        let e = DType::from_descr(s).unwrap_err();
        assert_eq!(e.kind().code(), code, "{s}: {e}");
    }
}

#[test]
fn byte_order_swap() {
    let dt = DType::from_descr("[('a', '<i4'), ('b', '|u1'), ('c', '<U2', (2,))]").unwrap();
    assert_eq!(
        dt.to_byte_order(ByteOrder::Big).descr(),
        "[('a', '>i4'), ('b', '|u1'), ('c', '>U2', (2,))]"
    );
}
