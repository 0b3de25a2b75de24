//! Tests of the decoders: UTF-32 values against a reference, runs of them, and days.

use super::ucs4_into;
use crate::RowDecoder;
use arrow_array::cast::AsArray;
use arrow_array::types::Date32Type;
use arrow_array::Array;
use npy_serde::Header;

/// A plain `U<n>` array decoded whole (the values one after another): all full width,
/// some padded, a NUL inside a value, a character past ASCII; both byte orders. Each
/// value is its characters without the trailing NULs.
#[test]
fn runs_of_utf32_values_decode_as_their_characters() {
    // `U0`: no characters at all (a fuzz finding divided by the width).
    let h = Header::new("<U0".parse().unwrap(), vec![3]);
    let b = RowDecoder::new(&h, None, false)
        .unwrap()
        .decode(&[], 0, 3, 128)
        .unwrap();
    let empty: Vec<&str> = b.column(0).as_string::<i32>().iter().flatten().collect();
    assert_eq!(empty, ["", "", ""]);
    let cases: [&[&str]; 5] = [
        &["ab", "cd", "ef"],
        &["R", "A", "N", "F", "O", "R"],
        &["1-URGENT", "5-LOW", "", "4-NOT SPECIFIED", "2-HIGH"],
        &["a\0b", "\0\0x", "y\0"],
        &["plain", "spécial", "x"],
    ];
    for values in cases {
        let chars = values.iter().map(|v| v.chars().count()).max().unwrap();
        for big in [false, true] {
            let mut bytes = Vec::new();
            for v in values {
                let mut units: Vec<u32> = v.chars().map(u32::from).collect();
                units.resize(chars, 0);
                for u in units {
                    bytes.extend(if big {
                        u.to_be_bytes()
                    } else {
                        u.to_le_bytes()
                    });
                }
            }
            let descr = format!("{}U{chars}", if big { '>' } else { '<' });
            let h = Header::new(descr.parse().unwrap(), vec![values.len() as u64]);
            let d = RowDecoder::new(&h, None, false).unwrap();
            let b = d.decode(&bytes, 0, values.len(), 128).unwrap();
            let got: Vec<&str> = b.column(0).as_string::<i32>().iter().flatten().collect();
            let want: Vec<&str> = values.iter().map(|v| v.trim_end_matches('\0')).collect();
            assert_eq!(got, want, "{descr}");
        }
    }
}

/// `datetime64[D]` counts as Date32 days, little- and big-endian, one record field and a
/// plain array: NaT is null, a count past 32 bits an error naming it and its place.
#[test]
fn day_counts_become_date32_or_name_the_one_that_does_not_fit() {
    const NAT: i64 = i64::MIN;
    let decode = |descr: &str, vals: &[i64]| {
        let big = descr.contains('>');
        let bytes: Vec<u8> = vals
            .iter()
            .flat_map(|v| {
                if big {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                }
            })
            .collect();
        let h = Header::new(descr.parse().unwrap(), vec![vals.len() as u64]);
        let d = RowDecoder::new(&h, None, false).unwrap();
        d.decode(&bytes, 0, vals.len(), 128).map(|b| {
            let c = b.column(0);
            let c = c.as_struct_opt().map_or(c, |s| s.column(0));
            let days = c.as_primitive::<Date32Type>();
            (0..vals.len())
                .map(|i| days.is_valid(i).then(|| days.value(i)))
                .collect::<Vec<_>>()
        })
    };
    for descr in ["<M8[D]", ">M8[D]", "[('d', '<M8[D]')]"] {
        let plain: Vec<i64> = (-3000..3000).map(|i| i * 7919).collect();
        let want: Vec<Option<i32>> = plain.iter().map(|&v| Some(v as i32)).collect();
        assert_eq!(decode(descr, &plain).unwrap(), want, "{descr}");
        let edges = [i64::from(i32::MIN), i64::from(i32::MAX), NAT, 0];
        assert_eq!(
            decode(descr, &edges).unwrap(),
            [Some(i32::MIN), Some(i32::MAX), None, Some(0)],
            "{descr}"
        );
        let far = [1, 2, i64::from(i32::MAX) + 1, 4];
        let e = decode(descr, &far).unwrap_err().to_string();
        assert!(
            e.contains("2147483648") && e.contains("Date32") && e.contains("144"),
            "{descr}: {e}"
        );
    }
}

/// What `ucs4_into` must give: the characters before the trailing NULs, each checked.
fn reference(units: &[u32]) -> Result<String, (usize, u32)> {
    let n = units.iter().rposition(|&u| u != 0).map_or(0, |i| i + 1);
    units[..n]
        .iter()
        .enumerate()
        .map(|(i, &u)| char::from_u32(u).ok_or((i, u)))
        .collect()
}

/// Every value of up to four units from an alphabet of ASCII, its edges, wider
/// characters, a surrogate and a number past Unicode, padded with NULs to six and to
/// nineteen units, and after eleven ASCII units, in both byte orders: the ASCII path and
/// the general one give the reference's answer.
#[test]
fn utf32_values_decode_as_their_characters() {
    const UNITS: [u32; 9] = [0, 0x41, 0x7F, 0x80, 0xFF, 0x100, 0xD800, 0x1F600, 0x11_0000];
    let mut checked = 0;
    for len in 0..=4u32 {
        for mut k in 0..UNITS.len().pow(len) {
            let mut units = Vec::new();
            for _ in 0..len {
                units.push(UNITS[k % UNITS.len()]);
                k /= UNITS.len();
            }
            for (prefix, pad) in [(0, 6), (0, 19), (11, 19)] {
                let mut units: Vec<u32> = (0..prefix)
                    .map(|i| 0x61 + i)
                    .chain(units.iter().copied())
                    .collect();
                units.resize(pad, 0);
                let want = reference(&units);
                for big in [false, true] {
                    let bytes: Vec<u8> = units
                        .iter()
                        .flat_map(|u| {
                            if big {
                                u.to_be_bytes()
                            } else {
                                u.to_le_bytes()
                            }
                        })
                        .collect();
                    let mut out = b"x".to_vec();
                    let got = ucs4_into(&bytes, big, &mut out);
                    match &want {
                        Ok(s) => {
                            assert_eq!(got, Ok(()), "{units:x?} big {big}");
                            assert_eq!(&out[1..], s.as_bytes(), "{units:x?} big {big}");
                        }
                        Err(e) => assert_eq!(got, Err(*e), "{units:x?} big {big}"),
                    }
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 3 * 2 * (1 + 9 + 81 + 729 + 6561));
}
