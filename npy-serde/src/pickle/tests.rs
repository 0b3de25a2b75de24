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

#[test]
fn datetimes_and_decimals_are_read_as_cpython_pickles_them() {
    // [datetime(2021, 11, 7, 1, 30, 0, 5, tzinfo=timezone(timedelta(hours=-5), 'EST'), fold=1),
    //  date(2020, 2, 29), time(23, 59, 59, 999999, tzinfo=timezone.utc),
    //  timedelta(days=-1, seconds=5, microseconds=7), Decimal('1.10')], pickled by CPython 3.11
    // (the fold is only written from protocol 4 on).
    let pickles: [&[u8]; 3] = [
    // protocol 0
    &b"(lp0\x0acdatetime\x0adatetime\x0ap1\x0a(c_codecs\x0aencode\x0ap2\x0a(V\x07\xe5\x0b\x07\x01\x1e\x5cu0000\x5cu0000\x5cu0000\x05\x0ap3\x0aVlatin1\x0ap4\x0atp5\x0aRp6\x0acdatetime\x0atimezone\x0ap7\x0a(cdatetime\x0atimedelta\x0ap8\x0a(I-1\x0aI68400\x0aI0\x0atp9\x0aRp10\x0aVEST\x0ap11\x0atp12\x0aRp13\x0atp14\x0aRp15\x0aacdatetime\x0adate\x0ap16\x0a(g2\x0a(V\x07\xe4\x02\x1d\x0ap17\x0ag4\x0atp18\x0aRp19\x0atp20\x0aRp21\x0aacdatetime\x0atime\x0ap22\x0a(g2\x0a(V\x17;;\x0fB?\x0ap23\x0ag4\x0atp24\x0aRp25\x0ag7\x0a(g8\x0a(I0\x0aI0\x0aI0\x0atp26\x0aRp27\x0atp28\x0aRp29\x0atp30\x0aRp31\x0aag8\x0a(I-1\x0aI5\x0aI7\x0atp32\x0aRp33\x0aacdecimal\x0aDecimal\x0ap34\x0a(V1.10\x0ap35\x0atp36\x0aRp37\x0aa."[..],
    // protocol 2
    &b"\x80\x02]q\x00(cdatetime\x0adatetime\x0aq\x01c_codecs\x0aencode\x0aq\x02X\x0b\x00\x00\x00\x07\xc3\xa5\x0b\x07\x01\x1e\x00\x00\x00\x05q\x03X\x06\x00\x00\x00latin1q\x04\x86q\x05Rq\x06cdatetime\x0atimezone\x0aq\x07cdatetime\x0atimedelta\x0aq\x08J\xff\xff\xff\xffJ0\x0b\x01\x00K\x00\x87q\x09Rq\x0aX\x03\x00\x00\x00ESTq\x0b\x86q\x0cRq\x0d\x86q\x0eRq\x0fcdatetime\x0adate\x0aq\x10h\x02X\x05\x00\x00\x00\x07\xc3\xa4\x02\x1dq\x11h\x04\x86q\x12Rq\x13\x85q\x14Rq\x15cdatetime\x0atime\x0aq\x16h\x02X\x06\x00\x00\x00\x17;;\x0fB?q\x17h\x04\x86q\x18Rq\x19h\x07h\x08K\x00K\x00K\x00\x87q\x1aRq\x1b\x85q\x1cRq\x1d\x86q\x1eRq\x1fh\x08J\xff\xff\xff\xffK\x05K\x07\x87q Rq!cdecimal\x0aDecimal\x0aq\x22X\x04\x00\x00\x001.10q#\x85q$Rq%e."[..],
    // protocol 5
    &b"\x80\x05\x95\xd7\x00\x00\x00\x00\x00\x00\x00]\x94(\x8c\x08datetime\x94\x8c\x08datetime\x94\x93\x94C\x0a\x07\xe5\x8b\x07\x01\x1e\x00\x00\x00\x05\x94h\x01\x8c\x08timezone\x94\x93\x94h\x01\x8c\x09timedelta\x94\x93\x94J\xff\xff\xff\xffJ0\x0b\x01\x00K\x00\x87\x94R\x94\x8c\x03EST\x94\x86\x94R\x94\x86\x94R\x94h\x01\x8c\x04date\x94\x93\x94C\x04\x07\xe4\x02\x1d\x94\x85\x94R\x94h\x01\x8c\x04time\x94\x93\x94C\x06\x17;;\x0fB?\x94h\x06h\x08K\x00K\x00K\x00\x87\x94R\x94\x85\x94R\x94\x86\x94R\x94h\x08J\xff\xff\xff\xffK\x05K\x07\x87\x94R\x94\x8c\x07decimal\x94\x8c\x07Decimal\x94\x93\x94\x8c\x041.10\x94\x85\x94R\x94e."[..],
    ];
    for (i, b) in pickles.into_iter().enumerate() {
        let est = PyTimeZone::new(
            PyTimeDelta::new(0, -5 * 3600, 0).unwrap(),
            Some("EST".into()),
        );
        let mut time = PyTime::new(1, 30, 0, 5).unwrap();
        time.fold = i == 2;
        time.tzinfo = Some(est.unwrap());
        let mut t = PyTime::new(23, 59, 59, 999_999).unwrap();
        t.tzinfo = Some(PyTimeZone::utc());
        let want = PyValue::List(vec![
            PyValue::DateTime(PyDateTime {
                date: PyDate::new(2021, 11, 7).unwrap(),
                time,
            }),
            PyValue::Date(PyDate::new(2020, 2, 29).unwrap()),
            PyValue::Time(t),
            PyValue::TimeDelta(PyTimeDelta {
                days: -1,
                seconds: 5,
                microseconds: 7,
            }),
            PyValue::Decimal("1.10".into()),
        ]);
        assert_eq!(load_default(b).unwrap(), want, "pickle {i}");
    }
}

#[test]
fn invalid_datetime_states_are_errors_naming_the_field() {
    for (b, part) in [
        // datetime.date(b'\x07\xe4\x02\x1e'): 2020-02-30
        (
            &b"\x80\x03cdatetime\ndate\nC\x04\x07\xe4\x02\x1e\x85R."[..],
            "day 30",
        ),
        (
            b"\x80\x03cdatetime\ndatetime\nC\x0a\x07\xe4\x0d\x01\x00\x00\x00\x00\x00\x00\x85R.",
            "month 13",
        ),
        (
            b"\x80\x03cdatetime\ntime\nC\x06\x18\x00\x00\x00\x00\x00\x85R.",
            "hour 24",
        ),
        (
            b"\x80\x03cdatetime\ntime\nC\x06\x01\x00\x00\x00\x00\x00K\x05\x86R.",
            "tzinfo",
        ),
        (
            b"\x80\x03cdatetime\ntimezone\ncdatetime\ntimedelta\nK\x01\x85R\x85R.",
            "24 hours",
        ),
        (
            b"\x80\x03cdatetime\ntimedelta\nJ\x00\xca\x9a\x3b\x85R.",
            "out of range",
        ),
        (
            b"\x80\x03cdecimal\nDecimal\nX\x04\x00\x00\x001.2.\x85R.",
            "not a decimal",
        ),
        (
            b"\x80\x03cdatetime\ndate\nK\x01K\x02K\x03\x87R.",
            "datetime.date",
        ),
    ] {
        let m = msg(b);
        assert!(m.contains(part), "{m}");
    }
    // A datetime from a zoneinfo or pytz time zone is refused by the time zone's own call.
    let m = msg(b"\x80\x04\x8c\x08zoneinfo\x8c\x08ZoneInfo\x93\x8c\x09_unpickle\x85R.");
    assert!(m.contains("zoneinfo.ZoneInfo"), "{m}");
}
