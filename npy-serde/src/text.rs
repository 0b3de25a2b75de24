//! Text and extended-float codecs shared by reading and writing: NumPy's `S` strings
//! (NUL-padded bytes), `U` strings (UCS-4 in the dtype's byte order) and x87 80-bit long
//! doubles (`f16`/`c32`, stored in 16-byte slots).
//!
//! Pure functions over byte slices; depends on nothing but the dtype model and the error type.

use crate::dtype::{ByteOrder, PlainType, Scalar};
use crate::error::{Error, Result};
use crate::kind::put;

/// Length of `b` without its trailing NUL bytes.
#[inline]
pub fn strip_nuls(b: &[u8]) -> usize {
    b.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1)
}

/// Checks UTF-8, reporting the offset of the first invalid byte.
pub fn utf8(b: &[u8], offset: u64) -> Result<&str> {
    std::str::from_utf8(b).map_err(|e| {
        Error::invalid_value(format!(
            "byte string is not valid UTF-8 (invalid byte at index {})",
            e.valid_up_to()
        ))
        .at_byte(offset + e.valid_up_to() as u64)
    })
}

/// Decodes UCS-4 code units in `order`, trailing NULs stripped; an invalid code point is an
/// `InvalidValue` error at its byte offset.
pub fn decode_ucs4(bytes: &[u8], order: ByteOrder, offset: u64) -> Result<String> {
    let big = order == ByteOrder::Big
        || (order == ByteOrder::NotApplicable && ByteOrder::NATIVE == ByteOrder::Big);
    let units = bytes.chunks_exact(4).map(|c| {
        let a = [c[0], c[1], c[2], c[3]];
        if big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    });
    let n = {
        let mut n = bytes.len() / 4;
        while n > 0 {
            let c = &bytes[(n - 1) * 4..n * 4];
            if c != [0, 0, 0, 0] {
                break;
            }
            n -= 1;
        }
        n
    };
    let mut s = String::with_capacity(n);
    for (i, u) in units.take(n).enumerate() {
        match char::from_u32(u) {
            Some(c) => s.push(c),
            None => {
                return Err(Error::invalid_value(format!(
                    "U+{u:X} is not a Unicode code point (at character {i})"
                ))
                .at_byte(offset + 4 * i as u64))
            }
        }
    }
    Ok(s)
}

/// Converts an x87 80-bit extended float (NumPy's `np.longdouble` on x86-64: 64-bit significand
/// with explicit integer bit, 15-bit exponent, sign; stored little-endian in 16 bytes, the last
/// 6 bytes padding) to the nearest `f64`, ties to even.
///
/// Infinities and NaNs keep their sign (NaNs become the quiet NaN); values beyond `f64`'s range
/// become infinities; tiny values round to `f64` subnormals or zero. Denormals and
/// pseudo-denormals (exponent 0, integer bit set) are taken at face value, `m × 2^-16445`.
/// Unnormals (nonzero exponent, integer bit clear), which x87 hardware rejects as invalid
/// operands, become NaN.
pub fn longdouble_to_f64(le: [u8; 16]) -> f64 {
    let mut m_bytes = [0u8; 8];
    m_bytes.copy_from_slice(&le[..8]);
    let m = u64::from_le_bytes(m_bytes);
    let se = u16::from_le_bytes([le[8], le[9]]);
    let neg = se & 0x8000 != 0;
    let exp = (se & 0x7fff) as i32;
    let sign = if neg { -1.0 } else { 1.0 };
    if exp == 0x7fff {
        return if m << 1 == 0 {
            sign * f64::INFINITY
        } else {
            f64::NAN.copysign(sign)
        };
    }
    if exp != 0 && m >> 63 == 0 {
        return f64::NAN.copysign(sign);
    }
    if m == 0 {
        return 0.0f64.copysign(sign);
    }
    // value = m × 2^e, with m normalised so that its top bit is set.
    let e_eff = if exp == 0 { 1 } else { exp };
    let lz = m.leading_zeros() as i32;
    let m = m << lz;
    let e2 = e_eff - 16383 - lz; // unbiased exponent of the leading bit
    if e2 > 1023 {
        return sign * f64::INFINITY;
    }
    // Bits to drop: 11 for a normal f64 (64 -> 53), more for a subnormal result.
    let shift: u32 = if e2 >= -1022 {
        11
    } else {
        (11 + (-1022 - e2)).min(200) as u32
    };
    let (mut q, rem, half) = if shift >= 65 {
        (0u64, 1u128, 2u128) // below half the smallest subnormal: rounds to zero
    } else {
        let wide = m as u128;
        (
            (wide >> shift) as u64,
            wide & ((1u128 << shift) - 1),
            1u128 << (shift - 1),
        )
    };
    if rem > half || (rem == half && q & 1 == 1) {
        q += 1;
    }
    let bits = if e2 >= -1022 {
        let mut e2 = e2;
        if q == 1 << 53 {
            q >>= 1;
            e2 += 1;
        }
        if e2 > 1023 {
            return sign * f64::INFINITY;
        }
        (((e2 + 1023) as u64) << 52) | (q & ((1 << 52) - 1))
    } else {
        // q < 2^52 is a subnormal; q == 2^52 is the smallest normal, which the same bits encode.
        q
    };
    f64::from_bits(bits | (u64::from(neg) << 63))
}

/// Encodes `v` as an x87 80-bit extended float: 8 mantissa bytes (explicit integer bit) then
/// sign and 15-bit exponent, little-endian. Exact for every `f64`, including subnormals (which
/// are normal numbers in the wider exponent range), infinities and NaN payloads.
pub fn f64_to_x87(v: f64) -> [u8; 10] {
    let bits = v.to_bits();
    let sign = ((bits >> 63) as u16) << 15;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (e, mant): (u16, u64) = if exp == 0x7ff {
        (0x7fff, (1u64 << 63) | (frac << 11))
    } else if exp == 0 {
        if frac == 0 {
            (0, 0)
        } else {
            let lz = frac.leading_zeros() as i32;
            // value = frac * 2^-1074 with the top set bit at position 63 - lz.
            let e = (63 - lz) - 1074 + 16383;
            (e as u16, frac << lz)
        }
    } else {
        ((exp - 1023 + 16383) as u16, (1u64 << 63) | (frac << 11))
    };
    let mut out = [0u8; 10];
    out[..8].copy_from_slice(&mant.to_le_bytes());
    out[8..].copy_from_slice(&(sign | e).to_le_bytes());
    out
}

/// x87 encoding of an integer, exact when it fits the 64-bit mantissa (every `i64`/`u64`).
pub fn int_to_x87(v: i128) -> Option<[u8; 10]> {
    if v == 0 {
        return Some([0; 10]);
    }
    let sign: u16 = if v < 0 { 0x8000 } else { 0 };
    let mag = v.unsigned_abs();
    let lz = mag.leading_zeros();
    let top = 127 - lz; // position of the highest set bit
    let norm = mag << lz; // highest bit at 127
    if norm as u64 != 0 {
        return None; // more than 64 significant bits
    }
    let mant = (norm >> 64) as u64;
    let e = 16383 + top as u16;
    let mut out = [0u8; 10];
    out[..8].copy_from_slice(&mant.to_le_bytes());
    out[8..].copy_from_slice(&(sign | e).to_le_bytes());
    Some(out)
}

pub fn put_x87(buf: &mut [u8], x: [u8; 10], big: bool) {
    // NumPy stores the 10 bytes in a 16-byte slot; a byte-swapped (`>f16`) value reverses all 16.
    let mut slot = [0u8; 16];
    slot[..10].copy_from_slice(&x);
    if big {
        slot.reverse();
    }
    buf.copy_from_slice(&slot);
}

/// Writes `bytes` into an `S<n>` slot, NUL-padded.
pub fn put_sbytes(buf: &mut [u8], bytes: &[u8], scalar: Scalar) -> Result<()> {
    if bytes.len() > buf.len() {
        return Err(Error::write(format!(
            "a string of {} bytes does not fit in |{} ({} bytes): it would be truncated",
            bytes.len(),
            scalar.type_code(),
            buf.len()
        )));
    }
    buf[..bytes.len()].copy_from_slice(bytes);
    buf[bytes.len()..].fill(0);
    Ok(())
}

/// Writes `s` into a `U<n>` slot as UCS-4, NUL-padded.
pub fn put_ustr(buf: &mut [u8], s: &str, n: usize, big: bool) -> Result<()> {
    let mut i = 0;
    for c in s.chars() {
        if i == n {
            return Err(Error::write(format!(
                "a string of {} characters does not fit in {} ({n} characters): it would be truncated",
                s.chars().count(),
                PlainType::new(Scalar::Unicode(n), if big { ByteOrder::Big } else { ByteOrder::Little }).typestr()
            )));
        }
        put!(buf[4 * i..4 * i + 4], c as u32, big);
        i += 1;
    }
    buf[4 * i..].fill(0);
    Ok(())
}
