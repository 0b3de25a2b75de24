//! Borrowed strings and bytes from slices and maps, also after a miss in the middle of a run.

use std::fmt::Debug;
use std::fs;

use npy_serde::MmapArray;
use npy_serde_tests::{fixture, npy, TempDir, Trickle};
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::doors::*;

#[test]
fn borrowed_strings_from_slices_and_maps() {
    let dir = TempDir::new("read-vec-borrow");
    // Top-level S5 (NumPy's): its fifth value, b"\xff", is not UTF-8.
    let bytes = fixture("S5_1d");
    let want: Vec<&[u8]> = npy_serde::deserialize_slice(&bytes).unwrap();
    assert_eq!(want[2], b"hello");
    let got: Vec<&[u8]> = npy_serde::from_slice_serde(&bytes).unwrap();
    assert_eq!(got, want);
    assert!(got
        .iter()
        .all(|g| bytes.as_ptr_range().contains(&g.as_ptr()) || g.is_empty()));
    let str_err = npy_serde::deserialize_slice::<Vec<&str>>(&bytes).unwrap_err();
    assert_eq!(str_err.position().record, Some(4));
    assert_same_error(
        &npy_serde::from_slice_serde::<&str>(&bytes).unwrap_err(),
        &str_err,
        "S5 as &str",
    );
    let path = dir.join("s5.npy");
    fs::write(&path, &bytes).unwrap();
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.to_vec_serde::<&[u8]>().unwrap(), want);
    assert_same_error(
        &map.to_vec_serde::<&str>().unwrap_err(),
        &str_err,
        "S5 as &str (mmap)",
    );
    // Owned strings from a reader: the same error.
    let owned = npy_serde::from_reader_serde::<_, String>(Trickle {
        data: &bytes,
        step: 7,
    });
    assert_same_error(&owned.unwrap_err(), &str_err, "S5 as String (reader)");
    // The legacy `|a5` fixture is all ASCII.
    let bytes = fixture("custom_legacy_a5");
    let want: Vec<&str> = npy_serde::deserialize_slice(&bytes).unwrap();
    assert_eq!(want, ["ab", "hello"]);
    assert_eq!(npy_serde::from_slice_serde::<&str>(&bytes).unwrap(), want);

    // A record with a borrowed `&str` field, in file order (the fast tier misses on it).
    #[derive(Deserialize, Debug, PartialEq)]
    struct Names<'a> {
        name: &'a str,
        label: String,
        n: i16,
    }
    let bytes = fixture("rec_str_unicode");
    let want: Vec<Names> = npy_serde::deserialize_slice(&bytes).unwrap();
    let got: Vec<Names> = npy_serde::from_slice_serde(&bytes).unwrap();
    assert_eq!(got, want);
    assert_eq!(got[0].name, "alpha");
    let path = dir.join("names.npy");
    fs::write(&path, &bytes).unwrap();
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.to_vec_serde::<Names>().unwrap(), want);

    // Many borrowed strings in one run: every one points at its own element.
    let mut data = Vec::new();
    let words: Vec<String> = (0..4000).map(|i| format!("w{i}")).collect();
    for w in &words {
        let mut b = w.as_bytes().to_vec();
        b.resize(8, 0);
        data.extend(b);
    }
    let file = npy("|S8", &[4000], false, &data);
    let got: Vec<&str> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got, words);
    for (g, w) in got.iter().zip(&data.chunks(8).collect::<Vec<_>>()) {
        // Borrowed from the input (not copied).
        let inside = file.as_ptr_range().contains(&g.as_ptr());
        assert!(inside && w.starts_with(g.as_bytes()), "{g:?}");
    }
}

/// A record `[('n', 'u1'), ('s', 'S4')]` read with a visitor that only reads `s` (borrowed)
/// when `n` is 0: elements with `n != 0` pass the fast tier, the first `n == 0` misses there
/// (in the middle of a run), and the general path must borrow from that same element onwards.
#[derive(Debug, PartialEq)]
enum Item<'a> {
    Num(u8),
    Str(&'a str),
}

impl<'de: 'a, 'a> Deserialize<'de> for Item<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Item<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an (n, s) record")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Item<'de>, A::Error> {
                let n: u8 = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(0, &self))?;
                if n != 0 {
                    // `s` is skipped (a visitor that stopped here would be read by name from
                    // the first element on: see `read.rs`).
                    seq.next_element::<IgnoredAny>()?;
                    return Ok(Item::Num(n));
                }
                let s: &'de str = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(1, &self))?;
                Ok(Item::Str(s))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Item<'de>, A::Error> {
                let mut n = None;
                let mut s = None;
                // Owned keys: field names come from the header, not from the data.
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "n" => n = Some(map.next_value::<u8>()?),
                        "s" => s = Some(map.next_value::<&'de str>()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                match (n, s) {
                    (Some(0), Some(s)) => Ok(Item::Str(s)),
                    (Some(n), _) => Ok(Item::Num(n)),
                    _ => Err(serde::de::Error::missing_field("n")),
                }
            }
        }
        d.deserialize_struct("Item", &["n", "s"], V)
    }
}

#[test]
fn borrowing_after_a_mid_run_miss() {
    let n = 3000usize;
    let mut data = Vec::new();
    let mut want = Vec::new();
    let mut strs = Vec::new();
    for i in 0..n {
        let s = format!("{:04}", i % 10_000);
        strs.push(s);
    }
    for (i, s) in strs.iter().enumerate() {
        let num = if i >= 1234 && i % 3 == 0 {
            0
        } else {
            (i % 200) as u8 + 1
        };
        data.push(num);
        data.extend_from_slice(s.as_bytes());
        want.push(if num == 0 {
            Item::Str(s)
        } else {
            Item::Num(num)
        });
    }
    let file = npy("[('n','u1'),('s','S4')]", &[n as u64], false, &data);
    let reference: Vec<Item> = npy_serde::deserialize_slice(&file).unwrap();
    assert_eq!(reference, want);
    let got: Vec<Item> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got, want);
    let dir = TempDir::new("read-vec-borrow-mid");
    let path = dir.join("items.npy");
    fs::write(&path, &file).unwrap();
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.to_vec_serde::<Item>().unwrap(), want);
}
