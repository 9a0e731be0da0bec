//! Java's modified UTF-8 (`DataOutput.writeUTF` / `DataInput.readUTF`).
//!
//! ```text
//! u16 BE byte length ‖ bytes
//! U+0001..=U+007F      1 byte   0xxxxxxx
//! U+0000, ..=U+07FF    2 bytes  110xxxxx 10xxxxxx           (U+0000 is C0 80)
//! U+0800..=U+FFFF      3 bytes  1110xxxx 10xxxxxx 10xxxxxx
//! above U+FFFF         its two UTF-16 surrogates, 3 bytes each (😀 = ED A0 BD ED B8 80)
//! ```
//!
//! Decoding follows `DataInputStream.readUTF` (which also takes a bare `00` byte and
//! overlong 2-byte forms) and then requires the UTF-16 units to form valid Unicode (a lone
//! surrogate cannot become a Rust `String`).

use crate::error::{Error, Result};

/// Decodes modified UTF-8 `bytes` (without the length prefix).
pub(crate) fn decode(bytes: &[u8], what: &'static str) -> Result<String> {
    let bad = |index| Error::InvalidModifiedUtf8 { what, index };
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b0) = bytes.get(i) {
        let cont = |k: usize| -> Result<u16> {
            match bytes.get(i + k) {
                Some(&b) if b & 0xC0 == 0x80 => Ok(u16::from(b & 0x3F)),
                _ => Err(bad(i + k)),
            }
        };
        match b0 >> 4 {
            0..=7 => {
                units.push(u16::from(b0));
                i += 1;
            }
            12 | 13 => {
                units.push((u16::from(b0 & 0x1F) << 6) | cont(1)?);
                i += 2;
            }
            14 => {
                units.push((u16::from(b0 & 0x0F) << 12) | (cont(1)? << 6) | cont(2)?);
                i += 3;
            }
            _ => return Err(bad(i)),
        }
    }
    String::from_utf16(&units).map_err(|_| bad(bytes.len()))
}

/// Encodes `s` as modified UTF-8 with its `u16` length prefix, as `writeUTF` does.
pub(crate) fn encode_prefixed(s: &str, what: &'static str, out: &mut Vec<u8>) -> Result<()> {
    let body = encode(s);
    let len = u16::try_from(body.len()).map_err(|_| Error::StringTooLong {
        what,
        length: body.len(),
    })?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(())
}

/// Encodes `s` as modified UTF-8 (no length prefix).
pub(crate) fn encode(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for unit in s.encode_utf16() {
        let [hi, lo] = unit.to_be_bytes();
        match unit {
            0x0001..=0x007F => out.push(lo),
            0x0000 | 0x0080..=0x07FF => {
                out.push(0xC0 | ((hi << 2) & 0x1C) | (lo >> 6));
                out.push(0x80 | (lo & 0x3F));
            }
            _ => {
                out.push(0xE0 | (hi >> 4));
                out.push(0x80 | ((hi << 2) & 0x3C) | (lo >> 6));
                out.push(0x80 | (lo & 0x3F));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_md_example_uid() {
        // FORMAT.md 10.8: "native-op-ü✓😀" is 21 bytes with the emoji as surrogates.
        let s = "native-op-\u{fc}\u{2713}\u{1F600}";
        let enc = encode(s);
        assert_eq!(enc.len(), 21);
        assert_eq!(
            &enc[10..],
            &[
                0xC3, 0xBC, 0xE2, 0x9C, 0x93, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80
            ]
        );
        assert_eq!(decode(&enc, "t").unwrap(), s);
    }

    #[test]
    fn nul_is_two_bytes_and_round_trips() {
        assert_eq!(encode("a\0b"), [b'a', 0xC0, 0x80, b'b']);
        assert_eq!(decode(&[b'a', 0xC0, 0x80, b'b'], "t").unwrap(), "a\0b");
    }

    #[test]
    fn malformed_is_an_error() {
        for bad in [
            &[0xF0, 0x9F, 0x98, 0x80][..],
            &[0xC3],
            &[0xE2, 0x9C],
            &[0x80],
            &[0xED, 0xA0, 0xBD],
        ] {
            assert!(
                matches!(decode(bad, "t"), Err(Error::InvalidModifiedUtf8 { .. })),
                "{bad:02x?}"
            );
        }
    }

    #[test]
    fn every_bmp_and_astral_sample_round_trips() {
        let s: String = [
            '\u{1}',
            '\u{7f}',
            '\u{80}',
            '\u{7ff}',
            '\u{800}',
            '\u{ffff}',
            '\u{10000}',
            '\u{10ffff}',
        ]
        .iter()
        .collect();
        assert_eq!(decode(&encode(&s), "t").unwrap(), s);
    }
}
