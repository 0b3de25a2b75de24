//! Unit tests of the pickle reader on hand-made opcode streams (the NumPy-made fixtures and
//! hostile files are tested in `tests/tests/it/pickle.rs`).

use super::*;

fn load_default(b: &[u8]) -> Result<PyValue> {
    load(b, &PickleOptions::default())
}

fn msg(b: &[u8]) -> String {
    load_default(b).unwrap_err().to_string()
}

#[test]
fn protocol_0_values() {
    // pickle.dumps([1, 'a', 2.5, True, None, (1,)], protocol=0)
    let b = b"(lp0\nI1\naVa\np1\naF2.5\naI01\naNa(I1\ntp2\na.";
    assert_eq!(
        load_default(b).unwrap(),
        PyValue::List(vec![
            PyValue::Int(1),
            PyValue::Str("a".into()),
            PyValue::Float(2.5),
            PyValue::Bool(true),
            PyValue::None,
            PyValue::Tuple(vec![PyValue::Int(1)]),
        ])
    );
}

#[test]
fn globals_are_named_and_never_called() {
    for b in [
        &b"cos\nsystem\n(S'echo hi'\ntR."[..],
        b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93\x8c\x011\x85R.",
    ] {
        let m = msg(b);
        assert!(
            m.contains("os.system") || m.contains("builtins.eval"),
            "{m}"
        );
        assert!(m.contains("refused"), "{m}");
    }
    // A bare global is a value that says what it was.
    assert_eq!(
        load_default(b"cbuiltins\nrange\n.").unwrap(),
        PyValue::Global {
            module: "builtins".into(),
            name: "range".into()
        }
    );
    // BUILD on it is refused too, naming it.
    assert!(msg(b"cbuiltins\nrange\n}b.").contains("builtins.range"));
}

#[test]
fn refused_opcodes_name_themselves() {
    assert!(msg(b"\x80\x05\x97.").contains("out-of-band"));
    assert!(msg(b"(cos\nsystem\no.").contains("OBJ"));
    assert!(msg(b"(ios\nsystem\n.").contains("INST"));
    assert!(msg(b"\x80\x02cbuiltins\nobject\n)\x81.").contains("NEWOBJ"));
    assert!(msg(b"P0\n.").contains("persistent"));
    assert!(msg(b"\x80\x09N.").contains("protocol 9"));
}

#[test]
fn malformed_streams_are_errors() {
    assert!(msg(b"]h\x05.").contains("memo reference 5"));
    assert!(load_default(b"X\xff\xff\xff\x7fab.").unwrap_err().is_eof());
    assert!(load_default(b"N").unwrap_err().is_eof());
    assert!(msg(b".").contains("stack is empty"));
    assert!(msg(b"e.").contains("MARK"));
    assert!(msg(b"\xfe.").contains("unknown opcode"));
}

#[test]
fn self_reference_is_refused() {
    // l = []; l.append(l); pickle.dumps(l, 2)
    let m = msg(b"\x80\x02]q\x00h\x00a.");
    assert!(m.contains("self-referencing"), "{m}");
}

#[test]
fn memo_bombs_are_refused_by_their_expanded_size() {
    // a = [None]*10; then 8 times: a = [a]*10 (each list memoized, referenced 10 times):
    // 10^9 values from a few hundred bytes.
    let mut b = b"\x80\x04]\x94(".to_vec();
    b.extend(std::iter::repeat_n(b'N', 10));
    b.push(b'e');
    for level in 0..8u8 {
        b.extend_from_slice(b"]\x94(");
        for _ in 0..10 {
            b.extend_from_slice(&[b'h', level]);
        }
        b.push(b'e');
    }
    b.push(b'.');
    let e = load_default(&b).unwrap_err();
    assert_eq!(e.kind().code(), "limit_exceeded", "{e}");
    // Two levels of the same sharing (10 + 100 + 1000 values) read.
    let small = [&b[..b.len() - 1 - 6 * 24], b"."].concat();
    let PyValue::List(outer) = load_default(&small).unwrap() else {
        panic!("a list")
    };
    assert_eq!(outer.len(), 10);
}

#[test]
fn deep_nesting_is_bounded() {
    let mut b = Vec::new();
    for _ in 0..10_000 {
        b.extend_from_slice(b"(");
    }
    b.extend_from_slice(b"N");
    for _ in 0..10_000 {
        b.extend_from_slice(b"l");
    }
    b.push(b'.');
    let e = load_default(&b).unwrap_err();
    assert_eq!(e.kind().code(), "limit_exceeded", "{e}");
    assert!(e.to_string().contains("depth"), "{e}");
}

#[test]
fn python2_strings_follow_the_encoding() {
    let b = b"U\x03a\xe9b.";
    assert!(msg(b).contains("encoding latin1"));
    let l = load(b, &PickleOptions::default().encoding(Encoding::Latin1)).unwrap();
    assert_eq!(l, PyValue::Str("aéb".into()));
    let l = load(b"T\x01\x00\x00\x00z.", &PickleOptions::default()).unwrap();
    assert_eq!(l, PyValue::Str("z".into()));
}

#[test]
fn dict_keys_repeat_as_in_python() {
    // {'a': 1, 'a': 2} built by SETITEMS: one key, the last value.
    let b = b"}(X\x01\x00\x00\x00aK\x01X\x01\x00\x00\x00aK\x02u.";
    assert_eq!(
        load_default(b).unwrap(),
        PyValue::Dict(vec![(PyValue::Str("a".into()), PyValue::Int(2))])
    );
}

#[test]
fn scans_name_every_global_without_refusing() {
    let s = scan(b"(ios\nsystem\nS'x'\ncbuiltins\neval\n)R\x80\x05\x97.");
    assert_eq!(
        s.globals,
        [
            ("os".into(), "system".into()),
            ("builtins".into(), "eval".into())
        ]
    );
    assert_eq!(s.protocol, Some(5));
    assert!(s.error.is_none(), "{:?}", s.error);
    let s = scan(b"cnumpy\ndtype\nX\xff\xff\xff\xff");
    assert_eq!(s.globals.len(), 1);
    assert!(s.error.unwrap().is_eof());
}
