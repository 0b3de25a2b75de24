//! The streaming path (`stream.rs`) against the general machine: on generated object arrays of
//! strings, bytes and `None` pickled as NumPy 1.x and 2.x pickle them (protocols 2 to 5,
//! batches of appends, single appends, frames, memo puts by `BINPUT`, `LONG_BINPUT` and
//! `MEMOIZE`), the streaming path is taken and gives [`load`](super::load)'s elements; cut
//! short anywhere, both give the same error.

use proptest::prelude::*;

use super::elements::array_elements;
use super::machine::run_streaming;
use super::value::PyValue;
use super::{load, Encoding, PickleOptions};

/// The pickle after a `.npy` header.
fn pickle_of(file: &[u8]) -> &[u8] {
    let at = file.iter().position(|&b| b == b'\n').expect("a header") + 1;
    &file[at..]
}

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/pickle")
        .join(name);
    std::fs::read(p).unwrap()
}

#[derive(Debug, Clone)]
enum Elem {
    Str(String),
    Bytes(Vec<u8>),
    None,
}

fn elem() -> impl Strategy<Value = Elem> {
    prop_oneof![
        "[a-z]{0,8}".prop_map(Elem::Str),
        "\\PC{0,6}".prop_map(Elem::Str),
        (250usize..300).prop_map(|n| Elem::Str("é".repeat(n / 2))),
        proptest::collection::vec(any::<u8>(), 0..300).prop_map(Elem::Bytes),
        Just(Elem::None),
    ]
}

/// A 1-D object array of `elems` pickled at `protocol` (2 to 5) as NumPy does, appends in
/// batches of `batch`, a frame before every `frame_every`-th item (protocols 4 and 5).
fn pickle(elems: &[Elem], protocol: u8, batch: usize, frame_every: usize) -> Vec<u8> {
    assert!(elems.len() < 256);
    let (mut out, mut key) = match protocol {
        2 => {
            // The prefix `np.save` writes at protocol 2 without memo puts (as in
            // `elements.rs`'s tests), the list then put at key 0.
            let mut p = b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R(K\x01K".to_vec();
            p.push(elems.len() as u8);
            p.extend_from_slice(b"\x85cnumpy\ndtype\nX\x02\x00\x00\x00O8\x89\x88\x87R(K\x03X\x01\x00\x00\x00|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb\x89]q\x00");
            (p, 1u64)
        }
        3 => {
            // NumPy 1.26's own prefix (np1/strings.npy, protocol 3), up to the list's put.
            let mut p = pickle_of(&fixture("np1/strings.npy"))[..147].to_vec();
            assert_eq!(p[77], 4);
            p[77] = elems.len() as u8;
            (p, 14)
        }
        _ => {
            // NumPy 2.4's (np2/strings.npy, protocol 4; 5 writes object arrays alike).
            let mut p = pickle_of(&fixture("np2/strings.npy"))[..143].to_vec();
            assert_eq!(p[89], 4);
            p[89] = elems.len() as u8;
            p[1] = protocol;
            (p, 19)
        }
    };
    let mut put = |out: &mut Vec<u8>| {
        if protocol >= 4 {
            out.push(0x94);
        } else if key < 256 {
            out.extend_from_slice(&[b'q', key as u8]);
        } else {
            out.push(b'r');
            out.extend_from_slice(&(key as u32).to_le_bytes());
        }
        key += 1;
    };
    for (c, chunk) in elems.chunks(batch.max(1)).enumerate() {
        if chunk.len() > 1 {
            out.push(b'(');
        }
        for (i, e) in chunk.iter().enumerate() {
            if protocol >= 4 && (c * batch + i).is_multiple_of(frame_every.max(1)) {
                out.push(0x95);
                out.extend_from_slice(&64u64.to_le_bytes());
            }
            match e {
                Elem::None => out.push(b'N'),
                Elem::Str(s) => {
                    if protocol >= 4 && s.len() < 256 {
                        out.extend_from_slice(&[0x8c, s.len() as u8]);
                    } else {
                        out.push(b'X');
                        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                    }
                    out.extend_from_slice(s.as_bytes());
                    put(&mut out);
                }
                Elem::Bytes(b) => {
                    if b.len() < 256 {
                        out.extend_from_slice(&[b'C', b.len() as u8]);
                    } else {
                        out.push(b'B');
                        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                    }
                    out.extend_from_slice(b);
                    put(&mut out);
                }
            }
        }
        out.push(if chunk.len() > 1 { b'e' } else { b'a' });
    }
    out.push(b't');
    put(&mut out);
    out.extend_from_slice(b"b.");
    out
}

/// The elements through the element door, or its error's text.
fn fast(p: &[u8], o: &PickleOptions) -> Result<Vec<PyValue>, String> {
    let mut v = Vec::new();
    array_elements(
        p,
        o,
        |_, _| Ok(()),
        |x| {
            v.push(x);
            Ok(())
        },
    )
    .map(|()| v)
    .map_err(|e| e.to_string())
}

/// The elements of the whole expansion, or its error's text.
fn slow(p: &[u8], o: &PickleOptions) -> Result<Vec<PyValue>, String> {
    match load(p, o) {
        Ok(PyValue::Array(a)) => Ok(a.values),
        Ok(v) => Err(super::elements::not_an_array(&v).to_string()),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn numpy_fixtures_of_strings_take_the_streaming_path() {
    // A StringDType whose na_object is NaN holds NaN floats among its strings: the general path.
    for (name, streamed) in [
        ("np1/strings.npy", true),
        ("np2/strings.npy", true),
        ("np1/optional_strings.npy", true),
        ("np2/optional_strings.npy", true),
        ("np1/bytes.npy", true),
        ("np2/stringdtype.npy", true),
        ("np2/stringdtype_na_none.npy", true),
        ("np2/stringdtype_na_nan.npy", false),
        ("np2/mixed.npy", false),
    ] {
        let file = fixture(name);
        let p = pickle_of(&file);
        let (_, run) = run_streaming(p, Encoding::Ascii).unwrap();
        assert_eq!(run.is_some(), streamed, "{name}");
        let o = PickleOptions::default();
        assert_eq!(fast(p, &o), slow(p, &o), "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn streamed_elements_are_the_general_paths(
        elems in proptest::collection::vec(elem(), 0..40),
        protocol in 2u8..=5,
        batch in 1usize..5,
        frame_every in 1usize..7,
    ) {
        let p = pickle(&elems, protocol, batch, frame_every);
        let (_, run) = run_streaming(&p, Encoding::Ascii).unwrap();
        let run = run.expect("the streaming path is taken");
        prop_assert_eq!(run.count, elems.len() as u64);
        let o = PickleOptions::default();
        let got = fast(&p, &o);
        prop_assert_eq!(&got, &slow(&p, &o));
        let want: Vec<PyValue> = elems
            .iter()
            .map(|e| match e {
                Elem::Str(s) => PyValue::Str(s.clone()),
                Elem::Bytes(b) => PyValue::Bytes(b.clone()),
                Elem::None => PyValue::None,
            })
            .collect();
        prop_assert_eq!(got.unwrap(), want);
    }

    #[test]
    fn cut_short_or_over_budget_both_paths_fail_alike(
        elems in proptest::collection::vec(elem(), 1..20),
        protocol in 2u8..=5,
        cut in any::<prop::sample::Index>(),
        max_bytes in 0u64..2000,
    ) {
        let p = pickle(&elems, protocol, 3, 2);
        let cut = cut.index(p.len());
        let o = PickleOptions::default();
        prop_assert_eq!(fast(&p[..cut], &o), slow(&p[..cut], &o));
        // A byte changed: whatever it makes, the same result.
        let mut q = p.clone();
        q[cut] ^= 0x5a;
        prop_assert_eq!(fast(&q, &o), slow(&q, &o));
        let o = PickleOptions::default().max_bytes(max_bytes);
        prop_assert_eq!(fast(&p, &o), slow(&p, &o));
    }
}
