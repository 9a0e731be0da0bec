//! Flink's integer and byte hashes (`MathUtils.murmurHash`, `MurmurHashUtils`) and Java's
//! `hashCode()` of the DataStream key types.

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;
/// `MurmurHashUtils.DEFAULT_SEED`.
const SEED: u32 = 42;

/// The murmur3 block mix of one 32-bit word (`mixK1`).
#[inline]
fn mix_k1(k: u32) -> u32 {
    k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

/// Folds one mixed word into the running hash (`mixH1`).
#[inline]
fn mix_h1(h: u32, k: u32) -> u32 {
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

/// murmur3's final avalanche (`fmix`).
#[inline]
fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// Flink's `MathUtils.murmurHash(int)`: one murmur3 round with seed 0 and length 4, made
/// non-negative at the end (`Integer.MIN_VALUE` maps to 0, any other negative `h` to `-h`).
///
/// This is the hash that spreads `key.hashCode()` over key groups. No preconditions.
///
/// ```
/// assert_eq!(keygroup::murmur_hash(0), 593_689_054);
/// assert_eq!(keygroup::murmur_hash(-2_089_875_627), 0); // Integer.MIN_VALUE before abs
/// ```
#[inline]
#[must_use]
pub fn murmur_hash(code: i32) -> i32 {
    let h = fmix(mix_h1(0, mix_k1(code.cast_unsigned())) ^ 4).cast_signed();
    if h >= 0 {
        h
    } else if h != i32::MIN {
        -h
    } else {
        0
    }
}

/// Flink's `MurmurHashUtils.hashBytes(segment, offset, length)`: `murmur3_32` with seed 42 over
/// `bytes` read as 4-byte little-endian words, each trailing byte (if the length is not a
/// multiple of 4) mixed on its own as a sign-extended `int`, then `fmix(h ^ length)`.
///
/// For a length that is a multiple of 4 this equals `MurmurHashUtils.hashBytesByWords`, which
/// is what `BinaryRowData.hashCode()` computes over the whole row (rows are always a multiple
/// of 8 bytes). So `murmur_hash_bytes(row_bytes)` is the row's `hashCode()`.
///
/// ```
/// // The arity-0 row (the key of a global aggregation) is 8 zero bytes.
/// assert_eq!(keygroup::murmur_hash_bytes(&[0; 8]), -1_670_924_195);
/// ```
#[must_use]
#[expect(
    clippy::cast_possible_truncation,
    reason = "Java mixes in the int length; only its low 32 bits matter"
)]
#[inline]
pub fn murmur_hash_bytes(bytes: &[u8]) -> i32 {
    let words = bytes.chunks_exact(4);
    let tail = words.remainder();
    let mut h = SEED;
    for word in words {
        let mut le = [0_u8; 4];
        le.copy_from_slice(word);
        h = mix_h1(h, mix_k1(u32::from_le_bytes(le)));
    }
    for &byte in tail {
        // Java's `segment.get(i)` is a signed byte, widened to int with sign extension.
        h = mix_h1(h, mix_k1(i32::from(byte.cast_signed()).cast_unsigned()));
    }
    fmix(h ^ bytes.len() as u32).cast_signed()
}

/// Java's `hashCode()` of a DataStream key, the input of
/// [`assign_to_key_group`](crate::assign_to_key_group).
///
/// Implemented for the key types whose Java hash this crate reproduces: `i32`
/// (`Integer.hashCode`), `i64` (`Long.hashCode`), `str`/`String` (`String.hashCode` over
/// UTF-16 code units) and [`BinaryRow`](crate::BinaryRow) (`BinaryRowData.hashCode`).
pub trait JavaHashCode {
    /// The value Java's `hashCode()` returns for the equal Java object.
    fn java_hash_code(&self) -> i32;
}

/// `Integer.hashCode()`: the value itself.
impl JavaHashCode for i32 {
    fn java_hash_code(&self) -> i32 {
        *self
    }
}

/// `Long.hashCode()`: `(int) (value ^ (value >>> 32))`.
impl JavaHashCode for i64 {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "Java's (int) cast keeps the low 32 bits"
    )]
    fn java_hash_code(&self) -> i32 {
        let bits = self.cast_unsigned();
        ((bits ^ (bits >> 32)) as u32).cast_signed()
    }
}

/// `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over the UTF-16 code units, in `int`
/// arithmetic.
impl JavaHashCode for str {
    fn java_hash_code(&self) -> i32 {
        self.encode_utf16().fold(0_i32, |h, unit| {
            h.wrapping_mul(31).wrapping_add(i32::from(unit))
        })
    }
}

/// Same as `str`.
impl JavaHashCode for String {
    fn java_hash_code(&self) -> i32 {
        self.as_str().java_hash_code()
    }
}

impl<T: JavaHashCode + ?Sized> JavaHashCode for &T {
    fn java_hash_code(&self) -> i32 {
        (**self).java_hash_code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur_hash_known_values() {
        assert_eq!(murmur_hash(0), 593_689_054);
        assert_eq!(murmur_hash(1), 68_075_478);
        assert_eq!(murmur_hash(-1), 1_982_413_648);
        // The only two inputs that hash to 0.
        assert_eq!(murmur_hash(-1_035_494_534), 0);
        assert_eq!(murmur_hash(-2_089_875_627), 0);
    }

    #[test]
    fn murmur_hash_is_never_negative_on_edges() {
        for code in [i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX] {
            assert!(murmur_hash(code) >= 0);
        }
    }

    #[test]
    fn java_hash_codes() {
        assert_eq!(42_i32.java_hash_code(), 42);
        assert_eq!((-1_i64).java_hash_code(), 0);
        assert_eq!(i64::MAX.java_hash_code(), i32::MIN);
        assert_eq!((1_i64 << 32).java_hash_code(), 1);
        assert_eq!("".java_hash_code(), 0);
        assert_eq!("a".java_hash_code(), 97);
        assert_eq!("polygenelubricants".java_hash_code(), i32::MIN);
        // A supplementary character counts as two UTF-16 units: 0xd83d * 31 + 0xde00.
        assert_eq!("😀".java_hash_code(), 0xd83d * 31 + 0xde00);
        assert_eq!(String::from("a").java_hash_code(), 97);
    }

    #[test]
    fn hash_bytes_tail_bytes_are_sign_extended() {
        // Aligned input: the same as hashing by words.
        let aligned = murmur_hash_bytes(&[1, 2, 3, 4]);
        assert_ne!(aligned, murmur_hash_bytes(&[1, 2, 3, 4, 0x80]));
        // A negative tail byte differs from its zero-extended reading.
        assert_ne!(murmur_hash_bytes(&[0x80]), murmur_hash_bytes(&[0x7f]));
    }
}
