use super::*;
use crate::options::TableLayout;

fn parse(spec: &str) -> TableSpec {
    spec.parse()
        .unwrap_or_else(|e| panic!("{spec:?} does not parse: {e}"))
}

fn err(spec: &str) -> String {
    match spec.parse::<TableSpec>() {
        Ok(t) => panic!("{spec:?} parses, as {t:?}"),
        Err(e) => e.to_string(),
    }
}

fn value(t: &TableSpec, key: &str) -> Option<String> {
    t.options()
        .entries()
        .into_iter()
        .find(|e| e.key == key)
        .and_then(|e| e.value)
}

#[test]
fn bare_locations_take_their_format_from_the_extension() {
    for (spec, location, format) in [
        ("w2.npy", "w2.npy", TableFormat::Npy),
        ("data/shards/", "data/shards/", TableFormat::Npy),
        ("data/s[01].npy", "data/s[01].npy", TableFormat::Npy),
        ("data.bin", "data.bin", TableFormat::Npy),
        ("s3://bucket/w2/", "s3://bucket/w2/", TableFormat::Npy),
        ("C:\\data\\w2.npy", "C:\\data\\w2.npy", TableFormat::Npy),
        ("runs(2).npy", "runs(2).npy", TableFormat::Npy),
        ("a b, c.npy", "a b, c.npy", TableFormat::Npy),
    ] {
        let t = parse(spec);
        assert_eq!((t.location(), t.format()), (location, format), "{spec}");
        assert_eq!(t.options().member(), None);
        assert_eq!(t.options().extension(), ".npy");
    }
}

#[test]
fn archive_colon_key_is_a_member() {
    for (spec, location, key) in [
        ("runs.npz:obs", "runs.npz", "obs"),
        ("RUNS.NPZ:a:b", "RUNS.NPZ", "a:b"),
        ("dir/a.npz:x.y", "dir/a.npz", "x.y"),
        ("s3://b/k/a.npz:x", "s3://b/k/a.npz", "x"),
        ("data/*.npz:x", "data/*.npz", "x"),
    ] {
        let t = parse(spec);
        assert_eq!(t.location(), location, "{spec}");
        assert_eq!(t.format(), TableFormat::Npz);
        assert_eq!(t.options().member(), Some(key));
        assert_eq!(t.options().extension(), ".npz");
    }
}

#[test]
fn the_explicit_form_names_format_and_options() {
    let t = parse("npz(data/*.npz, member=x)");
    assert_eq!((t.location(), t.format()), ("data/*.npz", TableFormat::Npz));
    assert_eq!(t.options().member(), Some("x"));

    let t = parse("  npy( s3://b/w2/ ,max_header_size = 20000, max_data_size=1024 ) ");
    assert_eq!((t.location(), t.format()), ("s3://b/w2/", TableFormat::Npy));
    assert_eq!(value(&t, "max_header_size").as_deref(), Some("20000"));
    assert_eq!(value(&t, "max_data_size").as_deref(), Some("1024"));

    // Quotes hold commas, spaces at the ends and quotes; the location is never split.
    let t = parse("npz(' a,b''s.npz:x ', member='k, 1', file_extension=.zip, layout=rows)");
    assert_eq!(t.location(), " a,b's.npz:x ");
    assert_eq!(t.options().member(), Some("k, 1"));
    assert_eq!(t.options().extension(), ".zip");
    assert_eq!(t.options().layout(), TableLayout::Rows);

    let t = parse("npy(data(1).npy)");
    assert_eq!(t.location(), "data(1).npy");
    let t = parse("npy(http://h/a?x=1)");
    assert_eq!(t.location(), "http://h/a?x=1");
}

#[test]
fn spec_options_override_the_defaults() {
    let defaults = NpyReadOptions::new()
        .max_header_size(50_000)
        .max_data_size(7);
    let t = TableSpec::parse_with("npy(a.npy, max_data_size=9)", defaults.clone()).unwrap();
    assert_eq!(value(&t, "max_header_size").as_deref(), Some("50000"));
    assert_eq!(value(&t, "max_data_size").as_deref(), Some("9"));
    let t = TableSpec::parse_with("a.npz:k", defaults).unwrap();
    assert_eq!(value(&t, "max_data_size").as_deref(), Some("7"));
    let (location, options) = t.into_parts();
    assert_eq!((location.as_str(), options.member()), ("a.npz", Some("k")));
}

#[test]
fn new_checks_the_member_against_the_format() {
    let t = TableSpec::new(
        "a.zip",
        TableFormat::Npz,
        NpyReadOptions::new().npz_member("k"),
    );
    assert_eq!(t.unwrap().location(), "a.zip");
    assert!(TableSpec::new("a.zip", TableFormat::Npz, NpyReadOptions::new()).is_err());
    assert!(TableSpec::new("a", TableFormat::Npy, NpyReadOptions::new().npz_member("k")).is_err());
    assert_eq!(TableFormat::from_name("npz"), Some(TableFormat::Npz));
    assert_eq!(TableFormat::from_name("NPZ"), None);
}

#[test]
fn every_error_names_the_bad_part_and_what_is_accepted() {
    assert_eq!(
        err("  "),
        "an empty table spec: give a path, a URL or FORMAT(LOCATION, KEY=VALUE, ...)"
    );
    assert_eq!(
        err("orc(t.orc)"),
        "unknown format \"orc\" in \"orc(t.orc)\": the formats are npy, npz, parquet, arrow \
         and csv (a path holding '(' is written inside one: npy('orc(t.orc)'))"
    );
    assert_eq!(
        err("npz(a.npz, member=x"),
        "\"npz(a.npz, member=x\": the ')' at the end is missing"
    );
    assert_eq!(
        err("npy()"),
        "\"npy()\": no location: npy(LOCATION, KEY=VALUE, ...) starts with a path or URL"
    );
    assert_eq!(
        err("npy(, max_dims=3)"),
        "\"npy(, max_dims=3)\": no location: npy(LOCATION, KEY=VALUE, ...) starts with a \
         path or URL"
    );
    assert_eq!(
        err("npy(a.npy, 20000)"),
        "\"20000\" is not KEY=VALUE: after the location come options KEY=VALUE, whose keys \
         are member, max_header_size, max_data_size, max_depth, max_dims, max_empty_items, \
         file_extension, allow_pickle_data, pickle_encoding, layout, verify_crc, access, \
         filter_pushdown and sort_order"
    );
    assert_eq!(
        err("npy(a.npy,)"),
        "an empty option: after the location come options KEY=VALUE, separated by ','"
    );
    assert_eq!(
        err("npy(a.npy, =3)"),
        "an empty option: after the location come options KEY=VALUE, separated by ','"
    );
    assert_eq!(
        err("npy(a.npy, colour=red)"),
        "unknown npy option \"colour\": the options are member, max_header_size, \
         max_data_size, max_depth, max_dims, max_empty_items, file_extension, \
         allow_pickle_data, pickle_encoding, layout, verify_crc, access, \
         filter_pushdown and sort_order"
    );
    assert_eq!(
        err("npy(a.npy, max_header_size=lots)"),
        "npy option max_header_size: expected a number of bytes, found \"lots\""
    );
    assert_eq!(
        err("npy(a.npy, max_dims=1.5)"),
        "npy option max_dims: expected a number, found \"1.5\""
    );
    assert_eq!(
        err("npy(a.npy, max_dims=3, max_dims=4)"),
        "\"npy(a.npy, max_dims=3, max_dims=4)\": the option max_dims is given twice"
    );
    assert_eq!(
        err("npz(a.npz, member=x, layout=columns)"),
        "a.npz: a column table (layout=columns) reads every member of its archive, one \
         column each: leave out member="
    );
    assert_eq!(
        err("csv(a.csv, layout=columns)"),
        "layout is not an option of csv tables: the options of csv tables are \
         file_extension, sort_order, header and delimiter"
    );
    let t = parse("npz(t.npz, layout=columns)");
    assert_eq!(t.options().layout(), TableLayout::Columns);
    assert_eq!(t.options().member(), None);
    let t = parse("npy(cols/, layout=columns, verify_crc=false)");
    assert_eq!(
        (t.format(), t.options().layout(), t.options().verifies_crc()),
        (TableFormat::Npy, TableLayout::Columns, false)
    );
    assert_eq!(
        err("npz(a.npz, member=)"),
        "npy option member: expected a member key, found \"\""
    );
    assert_eq!(
        err("npy('a.npy)"),
        "the quote of \"'a.npy\" is not closed (a quote inside quotes is written '')"
    );
    assert_eq!(
        err("npy('a'.npy)"),
        "unexpected \".npy\" after a quoted text: a ',' or the ')' comes next"
    );
    assert_eq!(
        err("a.npz"),
        "a.npz is an .npz table: name the member it reads, as ARCHIVE.npz:KEY or \
         npz(LOCATION, member=KEY)"
    );
    assert_eq!(
        err("npz(data/)"),
        "data/ is an .npz table: name the member it reads, as ARCHIVE.npz:KEY or \
         npz(LOCATION, member=KEY)"
    );
    assert_eq!(
        err("npy(a.npz, member=x)"),
        "member is an option of npz tables: npz(a.npz, member=KEY)"
    );
    assert_eq!(
        err("a.npz:"),
        "a.npz:: no member key after the ':' (ARCHIVE.npz:KEY)"
    );
}

#[test]
fn other_formats_by_extension_or_by_name_with_their_options() {
    for (spec, location, format, known) in [
        ("t.parquet", "t.parquet", TableFormat::Parquet, true),
        ("data/T.PQ", "data/T.PQ", TableFormat::Parquet, true),
        (
            "data/*.parquet",
            "data/*.parquet",
            TableFormat::Parquet,
            true,
        ),
        ("s3://b/t.arrow", "s3://b/t.arrow", TableFormat::Arrow, true),
        ("t.feather", "t.feather", TableFormat::Arrow, true),
        ("t.ipc", "t.ipc", TableFormat::Arrow, true),
        ("t.csv", "t.csv", TableFormat::Csv, true),
        ("w2.npy", "w2.npy", TableFormat::Npy, true),
        // No extension, or an unknown one: .npy until the files are listed.
        ("data/", "data/", TableFormat::Npy, false),
        ("data/*", "data/*", TableFormat::Npy, false),
        ("w2.bin", "w2.bin", TableFormat::Npy, false),
        ("parquet(data/)", "data/", TableFormat::Parquet, true),
        ("arrow(data/x.bin)", "data/x.bin", TableFormat::Arrow, true),
        ("npy(data/)", "data/", TableFormat::Npy, true),
    ] {
        let t = parse(spec);
        assert_eq!(
            (t.location(), t.format(), t.format_is_known()),
            (location, format, known),
            "{spec}"
        );
        assert_eq!(t.csv_options(), &CsvOptions::new(), "{spec}");
    }
    let t = parse("csv('a,b.txt', header=false, delimiter=;, file_extension=.txt)");
    assert_eq!((t.location(), t.format()), ("a,b.txt", TableFormat::Csv));
    assert_eq!(
        t.csv_options(),
        &CsvOptions::new().with_header(false).with_delimiter(b';')
    );
    assert_eq!(t.options().extension(), ".txt");
    let t = parse("parquet(data/, file_extension=.parq)");
    assert_eq!(value(&t, "file_extension").as_deref(), Some(".parq"));
    // Every format's files may be declared sorted.
    let t = parse("parquet(data/, sort_order='a, b desc')");
    assert_eq!(
        value(&t, "sort_order").as_deref(),
        Some("a ASC NULLS LAST, b DESC NULLS FIRST")
    );

    assert_eq!(
        err("parquet(t/, max_header_size=3)"),
        "max_header_size is not an option of parquet tables: the options of parquet tables \
         are file_extension and sort_order"
    );
    assert_eq!(
        err("arrow(t/, header=true)"),
        "header is not an option of arrow tables: the options of arrow tables are \
         file_extension and sort_order"
    );
    assert_eq!(
        err("csv(t/, member=x)"),
        "member is not an option of csv tables: the options of csv tables are \
         file_extension, sort_order, header and delimiter"
    );
    assert_eq!(
        err("csv(t/, 3)"),
        "\"3\" is not KEY=VALUE: after the location come options KEY=VALUE, whose keys are \
         file_extension, sort_order, header and delimiter"
    );
    assert_eq!(
        err("csv(t/, header=perhaps)"),
        "csv option header: expected true or false, found \"perhaps\""
    );
    assert!(TableSpec::new(
        "t/",
        TableFormat::Csv,
        NpyReadOptions::new().npz_member("k")
    )
    .is_err());
    // A directory's files decide its format: checked as if the spec had named it.
    let t = parse("data/").in_format(TableFormat::Parquet).unwrap();
    assert!(t.format_is_known());
    let e = parse("data/").in_format(TableFormat::Npz).unwrap_err();
    assert!(e.to_string().contains("name the member it reads"), "{e}");
}

#[test]
fn the_help_lists_every_option() {
    let help = table_spec_help();
    for o in OPTIONS {
        assert!(help.contains(&format!("{}={}", o.key, o.value)), "{help}");
    }
    for o in CSV_OPTIONS {
        assert!(help.contains(&format!("{}={}", o.key, o.value)), "{help}");
    }
    for f in TableFormat::ALL {
        assert!(help.contains(&format!("{}(LOCATION", f.name())), "{help}");
    }
}
