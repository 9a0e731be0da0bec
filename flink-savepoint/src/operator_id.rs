//! Flink's `OperatorID` and its derivation from a uid.

use std::fmt;

use crate::error::{Error, Result};

/// A Flink `OperatorID`: the 16 bytes `_metadata` stores for an operator.
///
/// The bytes are `lowerPart` then `upperPart`, each a big-endian `i64`
/// (`OperatorID.toHexString()` prints them in this order). For an operator with
/// `uid(u)`, Flink's `StreamGraphHasherV2.generateUserSpecifiedHash` sets them to the 16
/// output bytes of Guava's `Hashing.murmur3_128(0)` over the **standard** UTF-8 bytes of
/// `u` ([`OperatorId::from_uid`]): `h1` then `h2`, each little-endian.
///
/// ```
/// use flink_savepoint::OperatorId;
/// assert_eq!(OperatorId::from_uid("native-op").to_string(), "08683dbd096515294b21ad1a6097865b");
/// assert_eq!(OperatorId::from_hex("08683DBD096515294b21ad1a6097865b")?, OperatorId::from_uid("native-op"));
/// # Ok::<(), flink_savepoint::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperatorId(pub [u8; 16]);

impl OperatorId {
    /// The id Flink derives from `uid`.
    pub fn from_uid(uid: &str) -> Self {
        OperatorId(murmur3_x64_128(uid.as_bytes()))
    }

    /// Parses 32 hexadecimal digits (either case), as `OperatorID.toHexString()` prints them.
    ///
    /// # Errors
    /// [`Error::BadOperatorIdHex`] for anything else.
    pub fn from_hex(hex: &str) -> Result<Self> {
        let bad = || Error::BadOperatorIdHex {
            input: hex.to_owned(),
        };
        let digits = hex.as_bytes();
        if digits.len() != 32 {
            return Err(bad());
        }
        let mut out = [0_u8; 16];
        for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
            let text = std::str::from_utf8(pair).map_err(|_| bad())?;
            *byte = u8::from_str_radix(text, 16).map_err(|_| bad())?;
        }
        Ok(OperatorId(out))
    }
}

impl fmt::Display for OperatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for OperatorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OperatorId({self})")
    }
}

/// `MurmurHash3` `x64_128` with seed 0, output as Guava's `HashCode.asBytes()`: `h1` then `h2`,
/// each little-endian.
pub(crate) fn murmur3_x64_128(data: &[u8]) -> [u8; 16] {
    const C1: u64 = 0x87c3_7b91_1142_53d5;
    const C2: u64 = 0x4cf5_ad43_2745_937f;
    let mix_k1 = |k: u64| k.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
    let mix_k2 = |k: u64| k.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
    let (mut h1, mut h2) = (0_u64, 0_u64);
    let mut blocks = data.chunks_exact(16);
    for block in &mut blocks {
        let (a, b) = block.split_at(8);
        let k1 = u64::from_le_bytes(a.try_into().unwrap_or_default());
        let k2 = u64::from_le_bytes(b.try_into().unwrap_or_default());
        h1 ^= mix_k1(k1);
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        h2 ^= mix_k2(k2);
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    let (mut k1, mut k2) = (0_u64, 0_u64);
    for (i, &b) in tail.iter().enumerate() {
        if i < 8 {
            k1 |= u64::from(b) << (8 * i);
        } else {
            k2 |= u64::from(b) << (8 * (i - 8));
        }
    }
    if tail.len() > 8 {
        h2 ^= mix_k2(k2);
    }
    if !tail.is_empty() {
        h1 ^= mix_k1(k1);
    }
    let len = data.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    let mut out = [0_u8; 16];
    let (lo, hi) = out.split_at_mut(8);
    lo.copy_from_slice(&h1.to_le_bytes());
    hi.copy_from_slice(&h2.to_le_bytes());
    out
}

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_md_examples() {
        assert_eq!(
            OperatorId::from_uid("native-op").to_string(),
            "08683dbd096515294b21ad1a6097865b"
        );
        assert_eq!(
            OperatorId::from_uid("native-op-\u{fc}\u{2713}\u{1F600}").to_string(),
            "ac5a23e4830bab8622ede8a9092e6d37"
        );
        assert_eq!(
            OperatorId::from_uid("sink").to_string(),
            "2e588ce1c86a9d46e2e85186773ce4fd"
        );
        assert_eq!(
            OperatorId::from_uid("src").to_string(),
            "f362c87ffabe89c8a91fa7d0a523ba6c"
        );
    }

    #[test]
    fn hex_round_trip_and_errors() {
        let id = OperatorId::from_uid("x");
        assert_eq!(OperatorId::from_hex(&id.to_string()).unwrap(), id);
        for bad in [
            "",
            "00",
            &"g".repeat(32),
            &"0".repeat(33),
            "é0000000000000000000000000000000",
        ] {
            assert!(
                matches!(
                    OperatorId::from_hex(bad),
                    Err(Error::BadOperatorIdHex { .. })
                ),
                "{bad}"
            );
        }
    }
}
