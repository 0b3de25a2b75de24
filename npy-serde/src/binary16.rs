//! IEEE 754 half precision (NumPy's `f2`): the bit conversions reading and writing use, so that
//! `f2` files are read and written without the `half` crate (its feature `half` only adds
//! `half::f16` as a Rust element type).
//!
//! The results are bit for bit those of `half` 2 (its portable code and its F16C path agree on
//! every input used here): widening is exact, a NaN keeps its payload with the quiet bit set,
//! and narrowing is only done when exact. Pure functions; depends on nothing.

/// `2^-24`, the smallest subnormal half (exact in `f32` and `f64`).
const SUBNORMAL_STEP: f64 = 1.0 / 16_777_216.0;

/// The half-precision value `bits` as an `f32` (exact).
pub fn to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let exp = u32::from(bits >> 10) & 0x1f;
    let man = u32::from(bits & 0x3ff);
    match exp {
        // Zero and subnormals: `man` steps of 2^-24, exact in f32; the sign is set on the bits.
        0 => f32::from_bits(sign | (man as f32 * SUBNORMAL_STEP as f32).to_bits()),
        0x1f if man == 0 => f32::from_bits(sign | 0x7f80_0000),
        0x1f => f32::from_bits(sign | 0x7fc0_0000 | man << 13),
        // Rebias the exponent from 15 to 127.
        _ => f32::from_bits(sign | (exp + 112) << 23 | man << 13),
    }
}

/// The half-precision value `bits` as an `f64` (exact).
pub fn to_f64(bits: u16) -> f64 {
    let sign = u64::from(bits & 0x8000) << 48;
    let exp = u64::from(bits >> 10) & 0x1f;
    let man = u64::from(bits & 0x3ff);
    match exp {
        0 => f64::from_bits(sign | (man as f64 * SUBNORMAL_STEP).to_bits()),
        0x1f if man == 0 => f64::from_bits(sign | 0x7ff0_0000_0000_0000),
        0x1f => f64::from_bits(sign | 0x7ff8_0000_0000_0000 | man << 42),
        // Rebias the exponent from 15 to 1023.
        _ => f64::from_bits(sign | (exp + 1008) << 52 | man << 42),
    }
}

/// The half-precision bits of `v` if it has them exactly (a NaN always: its sign and the top
/// ten bits of its payload, quiet); `None` if `v` would be rounded or overflow.
pub fn from_f64_exact(v: f64) -> Option<u16> {
    let b = v.to_bits();
    let sign = ((b >> 48) & 0x8000) as u16;
    let top = ((b >> 42) & 0x3ff) as u16;
    if v.is_nan() {
        return Some(sign | 0x7e00 | top);
    }
    let a = v.abs();
    if a == f64::INFINITY {
        return Some(sign | 0x7c00);
    }
    if a < 1024.0 * SUBNORMAL_STEP {
        // Below 2^-14: zero or a subnormal, a whole number of 2^-24 steps (scaling by a power
        // of two is exact).
        let steps = a / SUBNORMAL_STEP;
        return (steps.fract() == 0.0).then_some(sign | steps as u16);
    }
    let exp = ((b >> 52) & 0x7ff) as i64 - 1023;
    if exp > 15 || b & ((1 << 42) - 1) != 0 {
        return None;
    }
    Some(sign | ((exp + 15) as u16) << 10 | top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(to_f64(0x3c00), 1.0);
        assert_eq!(to_f64(0xc000), -2.0);
        assert_eq!(to_f64(0x7bff), 65504.0);
        assert_eq!(to_f64(0x0001), SUBNORMAL_STEP);
        assert_eq!(to_f64(0x0400), 1.0 / 16384.0);
        assert_eq!(to_f64(0x7c00), f64::INFINITY);
        assert_eq!(to_f64(0xfc00), f64::NEG_INFINITY);
        assert_eq!(to_f64(0x8000).to_bits(), (-0.0f64).to_bits());
        assert_eq!(to_f32(0x3555), 0.333_251_95);
        assert_eq!(to_f64(0x7e01).to_bits(), 0x7ff8_0400_0000_0000);
        assert_eq!(to_f64(0x7c01).to_bits(), 0x7ff8_0400_0000_0000);
        assert_eq!(to_f32(0xfd00).to_bits(), 0xffe0_0000);
        assert_eq!(from_f64_exact(0.1), None);
        assert_eq!(from_f64_exact(65520.0), None);
        assert_eq!(from_f64_exact(1e-8), None);
        assert_eq!(from_f64_exact(SUBNORMAL_STEP / 2.0), None);
        assert_eq!(from_f64_exact(-0.0), Some(0x8000));
        assert_eq!(from_f64_exact(f64::NEG_INFINITY), Some(0xfc00));
        assert_eq!(from_f64_exact(f64::NAN), Some(0x7e00));
        assert_eq!(
            from_f64_exact(f64::from_bits(0xfff4_0400_0000_0001)),
            Some(0xff01)
        );
    }

    #[test]
    fn every_value_round_trips_and_its_neighbours_midway_do_not() {
        for bits in 0..=u16::MAX {
            let (v, w) = (to_f64(bits), to_f32(bits));
            assert_eq!(v.is_nan(), w.is_nan(), "{bits:#06x}");
            assert!(v.is_nan() || v == f64::from(w), "{bits:#06x}");
            if v.is_nan() {
                assert_eq!(from_f64_exact(v), Some(bits | 0x0200), "{bits:#06x}");
                continue;
            }
            assert_eq!(
                from_f64_exact(v).map(to_f64).map(f64::to_bits),
                Some(v.to_bits())
            );
            assert_eq!(from_f64_exact(v), Some(bits), "{bits:#06x}");
            // Halfway to the next value up (in magnitude) is never a half.
            if bits & 0x7fff < 0x7bff {
                let next = to_f64(bits + 1);
                assert_eq!(from_f64_exact((v + next) / 2.0), None, "{bits:#06x}");
            }
        }
    }

    /// The same bits as the `half` crate, on every half and on f64s of every kind.
    #[cfg(feature = "half")]
    #[test]
    fn same_bits_as_the_half_crate() {
        for bits in 0..=u16::MAX {
            let h = half::f16::from_bits(bits);
            assert_eq!(to_f32(bits).to_bits(), h.to_f32().to_bits(), "{bits:#06x}");
            assert_eq!(to_f64(bits).to_bits(), h.to_f64().to_bits(), "{bits:#06x}");
        }
        // A fixed pseudo-random walk over f64 bit patterns, plus values in the half range.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = match i % 3 {
                0 => f64::from_bits(x),
                1 => f64::from_bits(x | 0x7ff0_0000_0000_0000),
                _ => {
                    let m = ((x >> 40) as i64 - (1 << 23)) >> (x % 24);
                    m as f64 * 2f64.powi(((x >> 8) % 50) as i32 - 40)
                }
            };
            let h = half::f16::from_f64(v);
            let exact = v.is_nan() || h.to_f64() == v;
            let ours = from_f64_exact(v);
            assert_eq!(ours.is_some(), exact, "{v:e}");
            if let Some(b) = ours {
                assert_eq!(b, h.to_bits(), "{v:e}");
            }
        }
    }
}
