//! Filters on the `U<n>` columns of a column table (feature `datafusion`): the scan compares
//! them with string literals on their UTF-32 bytes (`=`, `<>`, `IN`, `NOT IN`, `LIKE`, `NOT
//! LIKE`, and `AND`, `OR`, `NOT` of those), little- and big-endian, in an archive and a
//! directory, on 1 and 3 partitions, giving DataFusion's answers over the same columns made
//! strings (`filter_pushdown=false`); a value that is not Unicode is an error only in a row
//! the query reads it for. The same filters on the same fields of a row file (one record a
//! row: the scan compares the fields' bytes in the records).

use npy_datafusion::{NpySessionExt, TableSpec};
use npy_serde::npz::NpzWriter;
use npy_serde::{ByteOrder, DType, Header, Record, Scalar};
use npy_serde_tests::sql::{rt, session, sql, sql_err};
use npy_serde_tests::TempDir;

use datafusion::prelude::{SessionConfig, SessionContext};

const ROWS: usize = 5_000;

const MODES: [&str; 7] = ["MAIL", "SHIP", "AIR", "AIR REG", "TRUCK", "RAIL", "FOB"];

/// A 1-D `U<chars>` array's `.npy` bytes in `order`: `values` as code units, NUL padded.
fn utf32(values: &[Vec<u32>], chars: usize, order: ByteOrder) -> Vec<u8> {
    let dtype = DType::with_order(Scalar::Unicode(chars), order);
    let mut out = Header::new(dtype, vec![values.len() as u64])
        .to_bytes()
        .unwrap();
    for v in values {
        assert!(v.len() <= chars);
        for k in 0..chars {
            let u = v.get(k).copied().unwrap_or(0);
            out.extend_from_slice(&match order {
                ByteOrder::Big => u.to_be_bytes(),
                _ => u.to_le_bytes(),
            });
        }
    }
    out
}

fn units(s: &str) -> Vec<u32> {
    s.chars().map(|c| c as u32).collect()
}

/// The table's columns: `k` (i64), `mode` (`<U7`), `note` (`>U24`: big-endian), `bad`
/// (`<U2`, "ok" but in the last row, whose first code unit is a surrogate).
fn columns() -> Vec<(&'static str, Vec<u8>)> {
    let k: Vec<i64> = (0..ROWS as i64).collect();
    let mut kb = Header::new(DType::scalar(Scalar::I64), vec![ROWS as u64])
        .to_bytes()
        .unwrap();
    kb.extend(k.iter().flat_map(|v| v.to_le_bytes()));
    let modes: Vec<Vec<u32>> = (0..ROWS).map(|i| units(MODES[i % 7])).collect();
    let notes: Vec<Vec<u32>> = (0..ROWS)
        .map(|i| {
            let s = match i % 5 {
                0 => format!("c{i} special requests"),
                1 => format!("c{i} requests special"),
                2 => format!("c{i} spécial é requests"),
                3 => format!("{i}_special%requests"),
                _ => String::new(),
            };
            units(&s)
        })
        .collect();
    let bad: Vec<Vec<u32>> = (0..ROWS)
        .map(|i| {
            if i + 1 == ROWS {
                vec![0xD800, 0x41]
            } else {
                units("ok")
            }
        })
        .collect();
    vec![
        ("k", kb),
        ("mode", utf32(&modes, 7, ByteOrder::Little)),
        ("note", utf32(&notes, 24, ByteOrder::Big)),
        ("bad", utf32(&bad, 2, ByteOrder::Little)),
    ]
}

const QUERIES: [&str; 9] = [
    "SELECT mode, count(*), sum(k) FROM t WHERE mode IN ('MAIL', 'SHIP') AND k % 3 = 0 \
     GROUP BY mode ORDER BY mode",
    "SELECT count(*), sum(k) FROM t WHERE note NOT LIKE '%special%requests%'",
    "SELECT k, note FROM t WHERE note LIKE 'c1%é%' AND mode <> 'FOB' ORDER BY k",
    "SELECT count(*) FROM t WHERE mode = 'AIR REG' OR NOT (mode <> 'FOB')",
    "SELECT count(*) FROM t WHERE mode NOT IN ('AIR', 'TRUCK', 'a value longer than U7')",
    "SELECT k FROM t WHERE note LIKE '%\\_special\\%%' ORDER BY k LIMIT 3",
    "SELECT count(*) FROM t WHERE note = '' AND mode LIKE '_AI_'",
    "SELECT max(k) FROM t WHERE (mode = 'RAIL' OR note LIKE '%é%') AND k < 4000",
    "SELECT count(*) FROM t WHERE mode = 'MAIL' AND bad = 'ok'",
];

/// A session of `partitions` (batches of 700 rows) with the table `spec("")` as `t` and the
/// same without filters in the scan as `k`, after checking that every query but the last
/// (which fails on `k`) has an answer, the same on both.
fn pushed_and_not(
    partitions: usize,
    spec: &dyn Fn(&str) -> TableSpec,
    rt: &tokio::runtime::Runtime,
) -> SessionContext {
    let ctx = session(
        SessionConfig::new()
            .with_target_partitions(partitions)
            .with_batch_size(700),
    );
    rt.block_on(ctx.register_spec("t", &spec(""))).unwrap();
    rt.block_on(ctx.register_spec("k", &spec(", filter_pushdown=false")))
        .unwrap();
    for q in &QUERIES[..QUERIES.len() - 1] {
        let got = sql(&ctx, rt, q);
        assert_eq!(got, sql(&ctx, rt, &q.replace("FROM t", "FROM k")), "{q}");
        assert!(!got.is_empty(), "{q}");
    }
    ctx
}

/// The columns as the fields of one record array (its `.npy` bytes): `k`, `mode`, `note` and
/// `bad` in that order, packed, each in its own byte order.
fn records(columns: &[(&'static str, Vec<u8>)]) -> Vec<u8> {
    let mut fields = Vec::new();
    let mut data = Vec::new();
    for (name, bytes) in columns {
        let parsed = npy_serde::header::parse_header(bytes, &npy_serde::Limits::default()).unwrap();
        let start = parsed.data_offset as usize;
        data.push((parsed.header.dtype.itemsize(), &bytes[start..]));
        fields.push((*name, parsed.header.dtype.clone()));
    }
    let dtype = DType::Record(Record::packed(fields).unwrap());
    let mut out = Header::new(dtype, vec![ROWS as u64]).to_bytes().unwrap();
    for i in 0..ROWS {
        for (w, d) in &data {
            out.extend_from_slice(&d[i * w..(i + 1) * w]);
        }
    }
    out
}

#[test]
fn string_filters_on_the_fields_of_a_row_file_give_datafusions_answers() {
    let dir = TempDir::new("sql-string-filters-rows");
    let path = dir.join("t.npy");
    std::fs::write(&path, records(&columns())).unwrap();
    let rt = rt();
    for (partitions, access) in [(1, "mmap"), (3, "mmap"), (2, "read")] {
        let spec = |extra: &str| -> TableSpec {
            format!("npy('{}', access={access}{extra})", path.display())
                .parse()
                .unwrap()
        };
        let ctx = pushed_and_not(partitions, &spec, &rt);
        assert_eq!(sql(&ctx, &rt, QUERIES[5]), [["3"], ["8"], ["13"]]);
        // A filter of strings alone, nothing projected but a count; and one whose string
        // column is returned.
        let mail = (0..ROWS).filter(|i| i % 7 == 0).count();
        let q = "SELECT count(*) FROM t WHERE mode = 'MAIL'";
        assert_eq!(sql(&ctx, &rt, q), [[mail.to_string()]]);
        let q = "SELECT mode, k FROM t WHERE mode IN ('FOB') AND note LIKE '%special%' \
                 ORDER BY k LIMIT 2";
        assert_eq!(sql(&ctx, &rt, q), [["FOB", "6"], ["FOB", "13"]]);
        // The last record's `bad` is not Unicode: dropped on the bytes, never made a string.
        let q = QUERIES[QUERIES.len() - 1];
        let mail = (0..ROWS - 1).filter(|i| i % 7 == 0).count();
        assert_eq!(sql(&ctx, &rt, q), [[mail.to_string()]]);
        let err = sql_err(&ctx, &rt, &q.replace("FROM t", "FROM k"));
        assert!(err.contains("not a Unicode code point"), "{err}");
    }
}

#[test]
fn string_filters_on_utf32_bytes_give_datafusions_answers() {
    let dir = TempDir::new("sql-string-filters");
    let columns = columns();
    let mut npz = NpzWriter::new(std::fs::File::create(dir.join("t.npz")).unwrap());
    std::fs::create_dir_all(dir.join("t")).unwrap();
    for (name, bytes) in &columns {
        npz.add_raw(&format!("{name}.npy"), bytes).unwrap();
        std::fs::write(dir.join(format!("t/{name}.npy")), bytes).unwrap();
    }
    npz.finish().unwrap();
    let rt = rt();
    for (format, place) in [("npz", "t.npz"), ("npy", "t")] {
        let spec = |extra: &str| -> TableSpec {
            format!(
                "{format}('{}', layout=columns{extra})",
                dir.join(place).display()
            )
            .parse()
            .unwrap()
        };
        for partitions in [1, 3] {
            let ctx = pushed_and_not(partitions, &spec, &rt);
            // Known answers.
            let air_reg_or_fob = (0..ROWS).filter(|i| [3, 6].contains(&(i % 7))).count();
            assert_eq!(sql(&ctx, &rt, QUERIES[3]), [[air_reg_or_fob.to_string()]]);
            assert_eq!(
                sql(&ctx, &rt, QUERIES[1]),
                [[
                    (ROWS / 5 * 3).to_string(),
                    (0..ROWS)
                        .filter(|i| [1, 2, 4].contains(&(i % 5)))
                        .sum::<usize>()
                        .to_string()
                ]]
            );
            let escaped = sql(&ctx, &rt, QUERIES[5]);
            assert_eq!(escaped, [["3"], ["8"], ["13"]]);

            // The last row's `bad` is not Unicode: a filter that drops it on the bytes never
            // makes it a string; reading it fails, naming the column.
            let q = QUERIES[QUERIES.len() - 1];
            let mail = (0..ROWS - 1).filter(|i| i % 7 == 0).count();
            assert_eq!(sql(&ctx, &rt, q), [[mail.to_string()]]);
            let err = sql_err(&ctx, &rt, &q.replace("FROM t", "FROM k"));
            assert!(err.contains("not a Unicode code point"), "{err}");
            let err = sql_err(&ctx, &rt, "SELECT bad FROM t WHERE bad <> 'ok'");
            assert!(
                err.contains("not a Unicode code point") && err.contains("bad"),
                "{err}"
            );
        }
    }
}

/// A join whose build side is too large for an `IN` list pushes a lookup in its hash table
/// into the probe side's scan: a column table scan that makes strings of a column outside the
/// filter evaluates it when it drops most rows, and makes strings for the rows it keeps only.
#[test]
fn a_joins_hash_lookup_spares_the_strings_of_the_rows_it_drops() {
    const ORDERS: usize = 40_000;
    const PRIORITIES: [&str; 5] = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"];
    let dir = TempDir::new("sql-lookup-strings");
    let ints = |values: &[i64]| {
        let mut b = Header::new(DType::scalar(Scalar::I64), vec![values.len() as u64])
            .to_bytes()
            .unwrap();
        b.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        b
    };
    let keys: Vec<i64> = (0..ORDERS as i64).collect();
    let priorities: Vec<Vec<u32>> = (0..ORDERS).map(|i| units(PRIORITIES[i % 5])).collect();
    let mut npz = NpzWriter::new(std::fs::File::create(dir.join("o.npz")).unwrap());
    npz.add_raw("key.npy", &ints(&keys)).unwrap();
    npz.add_raw("pri.npy", &utf32(&priorities, 15, ByteOrder::Little))
        .unwrap();
    npz.finish().unwrap();
    // 1,000 distinct keys, 1 order in 40 (more than an `IN` list takes).
    let lines: Vec<i64> = (0..1_000).map(|i| i * 40 + i % 7).collect();
    let mut npz = NpzWriter::new(std::fs::File::create(dir.join("l.npz")).unwrap());
    npz.add_raw("k.npy", &ints(&lines)).unwrap();
    npz.finish().unwrap();

    let rt = rt();
    let ctx = session(
        SessionConfig::new()
            .with_target_partitions(1)
            .with_batch_size(2_000),
    );
    for (name, file, extra) in [
        ("o", "o.npz", ""),
        ("l", "l.npz", ""),
        ("ok", "o.npz", ", filter_pushdown=false"),
    ] {
        let spec: TableSpec = format!("npz('{}', layout=columns{extra})", dir.join(file).display())
            .parse()
            .unwrap();
        rt.block_on(ctx.register_spec(name, &spec)).unwrap();
    }
    let q = "SELECT o.pri, count(*), sum(o.key) FROM l JOIN o ON l.k = o.key GROUP BY o.pri \
             ORDER BY o.pri";
    let (bytes, plan, n) = crate::sql_layouts::scanned_by_column(&ctx, &rt, q);
    assert_eq!(n, 5);
    assert!(plan.contains("DynamicFilter"), "{plan}");
    // Every key is read; the strings of at most the first batches and the kept rows.
    assert_eq!(bytes["key"], ORDERS * 8, "{bytes:?}");
    assert!(bytes["pri"] <= (2 * 2_000 + 1_000) * 60, "{bytes:?}");
    let want = sql(
        &ctx,
        &rt,
        &q.replace("JOIN o ON l.k = o.key", "JOIN ok AS o ON l.k = o.key"),
    );
    assert_eq!(sql(&ctx, &rt, q), want);
    assert_eq!(want[0], ["1-URGENT", "286", "5714995"]);
}
