//! The `roundtrip` target (fuzz bytes -> dtype and values -> write -> read).

use super::*;

// ---------------------------------------------------------------------------------------------
// roundtrip: fuzz bytes -> dtype and values -> write -> read
// ---------------------------------------------------------------------------------------------

/// Decodes structured choices from fuzz bytes (like `arbitrary::Unstructured`, without the
/// dependency): every call consumes bytes from the front; an exhausted source yields zeros, so
/// every input decodes to something.
pub struct ByteSource<'a> {
    data: &'a [u8],
}

impl<'a> ByteSource<'a> {
    /// A source over the fuzz input.
    pub fn new(data: &'a [u8]) -> Self {
        ByteSource { data }
    }

    /// `N` bytes (zero-filled once the input is exhausted).
    pub fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        out
    }

    /// A byte.
    pub fn u8(&mut self) -> u8 {
        self.bytes::<1>()[0]
    }

    /// An integer in `0..=max`.
    pub fn upto(&mut self, max: usize) -> usize {
        if max == 0 {
            return 0;
        }
        let v = if max < 256 {
            self.u8() as usize
        } else {
            u32::from_le_bytes(self.bytes::<4>()) as usize
        };
        v % (max + 1)
    }

    /// A bool.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// 8 bytes as a little-endian `u64`.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes::<8>())
    }
}

const UNITS: [TimeUnit; 14] = [
    TimeUnit::Generic,
    TimeUnit::Year,
    TimeUnit::Month,
    TimeUnit::Week,
    TimeUnit::Day,
    TimeUnit::Hour,
    TimeUnit::Minute,
    TimeUnit::Second,
    TimeUnit::Millisecond,
    TimeUnit::Microsecond,
    TimeUnit::Nanosecond,
    TimeUnit::Picosecond,
    TimeUnit::Femtosecond,
    TimeUnit::Attosecond,
];

/// A scalar type (string widths kept small).
pub fn arbitrary_scalar(u: &mut ByteSource) -> Scalar {
    use Scalar::*;
    let time = |u: &mut ByteSource| {
        let unit = UNITS[u.upto(UNITS.len() - 1)];
        let mult = if unit == TimeUnit::Generic || u.bool() {
            1
        } else {
            1 + u.upto(999) as u32
        };
        (unit, mult)
    };
    match u.upto(20) {
        0 => Bool,
        1 => I8,
        2 => I16,
        3 => I32,
        4 => I64,
        5 => U8,
        6 => U16,
        7 => U32,
        8 => U64,
        9 => F16,
        10 => F32,
        11 => F64,
        12 => LongDouble,
        13 => Complex64,
        14 => Complex128,
        15 => ComplexLongDouble,
        16 => Bytes(u.upto(9)),
        17 => Unicode(u.upto(5)),
        18 => Void(u.upto(9)),
        19 => {
            let (t, m) = time(u);
            DateTime(t, m)
        }
        _ => {
            let (t, m) = time(u);
            TimeDelta(t, m)
        }
    }
}

/// Field names: mostly identifiers, sometimes ones that need escaping or are not latin-1
/// (which forces a v3.0 header).
fn arbitrary_name(u: &mut ByteSource, i: usize) -> String {
    const PIECES: [&str; 12] = [
        "a", "x", "id", "pos", "'", "\"", "\\", "é", "π", "名", "\n", " ",
    ];
    let n = u.upto(3);
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(PIECES[u.upto(PIECES.len() - 1)]);
    }
    // Non-empty and distinct (an empty name is NumPy's padding marker).
    format!("{s}{i}")
}

/// A dtype: scalars, subarrays (not at the top level, which NumPy folds into the shape) and
/// records with padding, titles and nesting, at most `depth` levels deep and with at most
/// `max_leaves` scalar values per element.
pub fn arbitrary_dtype(u: &mut ByteSource, depth: u32, top: bool, max_leaves: u64) -> DType {
    let kind = if depth == 0 { 0 } else { u.upto(4) };
    match kind {
        3 if !top => {
            let base = arbitrary_dtype(u, depth - 1, false, max_leaves);
            let n = 1 + u.upto(2);
            let shape: Vec<u64> = (0..n).map(|_| u.upto(3) as u64).collect();
            // At most `max_leaves` values per element (a few subarrays deep would otherwise make
            // thousands, each built, written, read, compared and dropped for every input).
            if leaves(&base).saturating_mul(shape.iter().product()) > max_leaves {
                return base;
            }
            // Zero-size bases cannot be subarrays (NumPy refuses them too).
            DType::array(base.clone(), shape).unwrap_or(base)
        }
        3 | 4 => {
            let n = u.upto(4);
            let mut fields: Vec<Field> = Vec::with_capacity(n);
            let mut offset = 0usize;
            for i in 0..n {
                offset += u.upto(3);
                let dt = arbitrary_dtype(u, depth - 1, false, max_leaves);
                // At most `max_leaves` values per element here too.
                let so_far: u64 = fields.iter().map(|f| leaves(&f.dtype)).sum();
                if so_far + leaves(&dt) > max_leaves {
                    break;
                }
                let size = dt.itemsize();
                let mut f = Field::new(arbitrary_name(u, i), dt, offset);
                if u.upto(7) == 0 {
                    f.title = Some(format!("title of {i}"));
                }
                fields.push(f);
                offset += size;
            }
            let itemsize = offset + u.upto(3);
            DType::Record(Record::new(fields, itemsize).expect("a valid layout by construction"))
        }
        _ => {
            let order = [ByteOrder::Little, ByteOrder::Big, ByteOrder::NotApplicable][u.upto(2)];
            DType::with_order(arbitrary_scalar(u), order)
        }
    }
}

/// IEEE half-precision bits to `f64` (exact).
pub fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((bits >> 10) & 0x1f) as i32;
    let mant = (bits & 0x3ff) as f64;
    match exp {
        0 => sign * mant * 2f64.powi(-24),
        31 if mant == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + mant / 1024.0) * 2f64.powi(e - 15),
    }
}

/// A value of `dtype` that survives a write and a read unchanged: strings without trailing
/// NULs (which NumPy and this crate strip), floats exactly representable in the dtype.
pub fn arbitrary_value(u: &mut ByteSource, dtype: &DType) -> Value {
    match dtype {
        DType::Record(r) => Value::Record(
            r.fields()
                .iter()
                .map(|f| (f.name.clone(), arbitrary_value(u, &f.dtype)))
                .collect(),
        ),
        DType::Array(base, shape) => arbitrary_sub(u, base, shape),
        DType::Plain(p) => match p.scalar() {
            Scalar::Bool => Value::Bool(u.bool()),
            Scalar::I8 => Value::Int(u.u8() as i8 as i64),
            Scalar::I16 => Value::Int(i16::from_le_bytes(u.bytes()) as i64),
            Scalar::I32 => Value::Int(i32::from_le_bytes(u.bytes()) as i64),
            Scalar::I64 => Value::Int(i64::from_le_bytes(u.bytes())),
            Scalar::U8 => Value::UInt(u.u8() as u64),
            Scalar::U16 => Value::UInt(u16::from_le_bytes(u.bytes()) as u64),
            Scalar::U32 => Value::UInt(u32::from_le_bytes(u.bytes()) as u64),
            Scalar::U64 => Value::UInt(u.u64()),
            Scalar::F16 => Value::Float(f16_to_f64(u16::from_le_bytes(u.bytes()))),
            Scalar::F32 => Value::Float(f32::from_bits(u32::from_le_bytes(u.bytes())) as f64),
            Scalar::F64 | Scalar::LongDouble => Value::Float(f64::from_bits(u.u64())),
            Scalar::Complex64 => Value::Complex(
                f32::from_bits(u32::from_le_bytes(u.bytes())) as f64,
                f32::from_bits(u32::from_le_bytes(u.bytes())) as f64,
            ),
            Scalar::Complex128 | Scalar::ComplexLongDouble => {
                Value::Complex(f64::from_bits(u.u64()), f64::from_bits(u.u64()))
            }
            Scalar::Bytes(n) => {
                let len = u.upto(n);
                let mut b: Vec<u8> = (0..len).map(|_| u.u8()).collect();
                while b.last() == Some(&0) {
                    b.pop();
                }
                Value::Bytes(b)
            }
            Scalar::Unicode(n) => {
                let len = u.upto(n);
                let s: String = (0..len)
                    .map(|_| {
                        let c = u32::from_le_bytes(u.bytes()) % 0x11_0000;
                        char::from_u32(c).unwrap_or('\u{fffd}')
                    })
                    .collect();
                Value::String(s.trim_end_matches('\0').to_string())
            }
            Scalar::Void(n) => Value::Void((0..n).map(|_| u.u8()).collect()),
            Scalar::DateTime(..) => Value::DateTime(i64::from_le_bytes(u.bytes())),
            Scalar::TimeDelta(..) => Value::TimeDelta(i64::from_le_bytes(u.bytes())),
        },
    }
}

fn arbitrary_sub(u: &mut ByteSource, base: &DType, dims: &[u64]) -> Value {
    match dims.split_first() {
        None => arbitrary_value(u, base),
        Some((&n, rest)) => Value::List((0..n).map(|_| arbitrary_sub(u, base, rest)).collect()),
    }
}

/// Most scalar values in one element of the roundtrip target's dtypes, and a quarter of the
/// most in one of its arrays: the cost of an input is mostly in its values (built, written,
/// read back, compared, dropped) and in its header's text (one field per leaf at most), and
/// the code paths are the same for a few of them as for thousands.
pub const MAX_LEAVES: u64 = 32;

/// The number of scalar values in one element of `dtype` (a record's fields, a subarray's
/// elements).
pub fn leaves(dtype: &DType) -> u64 {
    match dtype {
        DType::Plain(_) => 1,
        DType::Array(base, shape) => leaves(base).saturating_mul(shape.iter().product()),
        DType::Record(r) => r.fields().iter().map(|f| leaves(&f.dtype)).sum(),
    }
}

/// A whole array: a top-level scalar or record dtype (at most `max_leaves` scalars per
/// element), a small shape, either order, values (at most `4 * max_leaves` scalars: the
/// largest dimensions shrink, none disappears).
pub fn arbitrary_array(u: &mut ByteSource, max_leaves: u64) -> Array {
    let dtype = arbitrary_dtype(u, 3, true, max_leaves);
    let ndim = u.upto(3);
    let mut shape: Vec<u64> = (0..ndim).map(|_| u.upto(4) as u64).collect();
    let per = leaves(&dtype).max(1);
    while !shape.is_empty() && shape.iter().product::<u64>().saturating_mul(per) > 4 * max_leaves {
        let big = (0..shape.len())
            .max_by_key(|&i| shape[i])
            .expect("a non-empty shape");
        shape[big] -= 1;
    }
    let count: u64 = shape.iter().product();
    let fortran_order = u.bool();
    let values = (0..count).map(|_| arbitrary_value(u, &dtype)).collect();
    Array {
        dtype,
        shape,
        fortran_order,
        values,
    }
}

/// Target `roundtrip`: a dtype, shape, order and values decoded from the bytes -> written with
/// `WriterBuilder::write_array` and as an `.npz` member (stored or deflated) -> read back from
/// a slice, a chunked reader and the archive -> the same array (NaN-aware); the npz member's
/// bytes are the `.npy` file's.
pub fn roundtrip(data: &[u8]) {
    let mut u = ByteSource::new(data);
    // The options come first: most inputs run out of bytes inside the array, and an exhausted
    // source gives zeros. The npz part for one input in four (the writers target puts its
    // arrays through npz too), deflate for one in sixteen: an archive costs as much as the
    // rest of the input under the sanitizer, a deflate stream's setup (zeroed window and hash
    // tables) and the inflate of reading it back several times that.
    let opts = u.u8();
    let npz = opts & 0x03 == 0x03;
    let compressed = npz && opts & 0x0c == 0x0c;
    let chunk = 1 + (opts >> 4) as usize;
    let array = arbitrary_array(&mut u, MAX_LEAVES);

    let mut bytes = Vec::new();
    WriterBuilder::new()
        .write_array(&mut bytes, &array)
        .unwrap_or_else(|e| panic!("writing {} {:?}: {e}", array.dtype, array.shape));
    // The header is parsed by both reads below (and its dtype, shape and order checked by
    // their equality); a third parse of it cost a tenth of the target's time.
    check_data_offset(&bytes, "write_array");
    check_same(&array, Array::from_slice(&bytes), "from_slice");
    check_same(
        &array,
        ReaderBuilder::new().read_array(Chunked::new(&bytes, chunk)),
        "read_array",
    );
    if !npz {
        return;
    }

    let mut zip = Cursor::new(Vec::new());
    let mut w = if compressed {
        NpzWriter::new_compressed(&mut zip)
    } else {
        NpzWriter::new(&mut zip)
    };
    w.add_array("a", &array)
        .expect("adding the array to an npz");
    w.finish().expect("finishing the npz");
    let zip = zip.into_inner();
    let mut archive = NpzArchive::from_bytes(&zip).expect("opening our npz");
    check_same(&array, archive.read_array("a"), "npz");
    let raw = archive.read_raw("a").expect("raw member");
    assert_eq!(raw, bytes, "the npz member is not the .npy file");
}
