//! proptest strategies for dtypes and headers, shared by the property tests.

use npy_serde::dtype::{ByteOrder, DType, Field, Record, Scalar, TimeUnit};
use npy_serde::header::{Header, Version};
use proptest::prelude::*;

/// Any byte order.
pub fn byte_order() -> impl Strategy<Value = ByteOrder> {
    prop_oneof![
        Just(ByteOrder::Little),
        Just(ByteOrder::Big),
        Just(ByteOrder::NotApplicable)
    ]
}

/// Any datetime unit.
pub fn time_unit() -> impl Strategy<Value = TimeUnit> {
    use TimeUnit::*;
    prop::sample::select(vec![
        Generic,
        Year,
        Month,
        Week,
        Day,
        Hour,
        Minute,
        Second,
        Millisecond,
        Microsecond,
        Nanosecond,
        Picosecond,
        Femtosecond,
        Attosecond,
    ])
}

/// Any scalar type (string widths kept small).
pub fn scalar() -> impl Strategy<Value = Scalar> {
    use Scalar::*;
    prop_oneof![
        prop::sample::select(vec![
            Bool,
            I8,
            I16,
            I32,
            I64,
            U8,
            U16,
            U32,
            U64,
            F16,
            F32,
            F64,
            LongDouble,
            Complex64,
            Complex128,
            ComplexLongDouble,
        ]),
        (0usize..12).prop_map(Bytes),
        (0usize..6).prop_map(Unicode),
        (0usize..12).prop_map(Void),
        (time_unit(), prop_oneof![Just(1u32), 1u32..1000]).prop_map(|(u, m)| {
            let m = if u == TimeUnit::Generic { 1 } else { m };
            DateTime(u, m)
        }),
        (time_unit(), prop_oneof![Just(1u32), 1u32..1000]).prop_map(|(u, m)| {
            let m = if u == TimeUnit::Generic { 1 } else { m };
            TimeDelta(u, m)
        }),
    ]
}

/// A scalar dtype in any byte order.
pub fn plain_dtype() -> impl Strategy<Value = DType> {
    (scalar(), byte_order()).prop_map(|(s, o)| DType::with_order(s, o))
}

/// Field names: plain identifiers mostly, sometimes ones that need escaping or are not latin-1.
pub fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[a-z][a-z0-9_]{0,8}",
        1 => "[a-z'\"\\\\ \n\t]{1,6}",
        1 => "[éπ名😀a-z\u{a0}\u{7f}]{1,4}",
    ]
}

/// A subarray shape (1 to 3 small dimensions).
pub fn sub_shape() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(0u64..4, 1..=3)
}

/// Any dtype: scalars, subarrays, and records with padding, titles, nesting.
pub fn dtype() -> impl Strategy<Value = DType> {
    plain_dtype().prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            (inner.clone(), sub_shape()).prop_filter_map("zero-size flexible base", |(d, s)| {
                DType::array(d, s).ok()
            }),
            prop::collection::vec((field_name(), inner, 0usize..3, any::<bool>()), 0..5)
                .prop_flat_map(|fields| (Just(fields), 0usize..3))
                .prop_map(|(fields, tail_pad)| record(fields, tail_pad)),
        ]
    })
}

fn record(fields: Vec<(String, DType, usize, bool)>, tail_pad: usize) -> DType {
    let mut out: Vec<Field> = Vec::new();
    let mut offset = 0;
    for (i, (name, dt, pad, titled)) in fields.into_iter().enumerate() {
        // Unique, non-empty names; titles distinct from every name.
        let name = format!("{name}{i}");
        offset += pad;
        let size = dt.itemsize();
        let mut f = Field::new(name, dt, offset);
        if titled {
            f.title = Some(format!("title of {i}"));
        }
        out.push(f);
        offset += size;
    }
    DType::Record(Record::new(out, offset + tail_pad).expect("valid layout"))
}

/// A header with a top-level dtype that is a scalar or a record (never a subarray).
pub fn header() -> impl Strategy<Value = Header> {
    let dt = dtype().prop_filter("top-level subarray", |d| !matches!(d, DType::Array(..)));
    let shape = prop_oneof![
        4 => prop::collection::vec(0u64..50, 0..4),
        1 => prop::collection::vec(0u64..1_000_000, 1..3),
        1 => (0u64..(1u64 << 40)).prop_map(|d| vec![d]),
    ];
    (dt, shape, any::<bool>()).prop_map(|(dtype, shape, fortran_order)| Header {
        dtype,
        shape,
        fortran_order,
    })
}

/// A forced header version, or none (automatic).
pub fn version() -> impl Strategy<Value = Option<Version>> {
    prop_oneof![
        4 => Just(None),
        1 => Just(Some(Version::V2_0)),
        1 => Just(Some(Version::V3_0)),
    ]
}
