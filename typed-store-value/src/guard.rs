//! The structural guard: whether arrow-row bytes have exactly the shape the columns' encodings
//! say, checked before arrow-row's decoder (which trusts its input) sees them.

use arrow_schema::{DataType, Fields};

/// How one column is laid out in an arrow-row row (ascending, nulls first, non-dictionary).
#[derive(Debug, Clone, Copy)]
enum ColumnLayout {
    /// A null/validity byte then `width` value bytes (primitives, booleans).
    Fixed(usize),
    /// arrow-row's variable-length block encoding (strings, binaries); the value bytes of a
    /// string column must be UTF-8 (arrow-row's string decoder unwraps the conversion).
    Variable {
        /// A string column.
        utf8: bool,
    },
}

/// Column layouts the guard can walk, or `None` when a type is outside the walked set.
fn layouts(fields: &Fields) -> Option<Vec<ColumnLayout>> {
    fields
        .iter()
        .map(|f| match f.data_type() {
            DataType::Boolean => Some(ColumnLayout::Fixed(1)),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                Some(ColumnLayout::Variable { utf8: true })
            }
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
                Some(ColumnLayout::Variable { utf8: false })
            }
            t if t.is_primitive() => t.primitive_width().map(ColumnLayout::Fixed),
            _ => None,
        })
        .collect()
}

// arrow-row's variable-length encoding (arrow-row 60.1.0 `variable.rs`, ascending order).
const NON_EMPTY_SENTINEL: u8 = 2;
const BLOCK_CONTINUATION: u8 = 0xFF;
const MINI_BLOCK_SIZE: usize = 8;
const MINI_BLOCK_COUNT: usize = 4;
const BLOCK_SIZE: usize = 32;

/// The byte length of one variable-length column at the start of `row`, walking its blocks
/// with bounds checks (and, for a string column, checking that the value bytes are UTF-8);
/// `None` if the bytes cannot be such a column.
fn variable_len(row: &[u8], utf8: bool) -> Option<usize> {
    if *row.first()? != NON_EMPTY_SENTINEL {
        return Some(1); // null or empty
    }
    let mut index = 1;
    let mut text = Utf8Check::default();
    let mut block = |size: usize| -> Option<Option<usize>> {
        let sentinel = *row.get(index + size)?;
        let used = if sentinel == BLOCK_CONTINUATION {
            size
        } else if usize::from(sentinel) <= size {
            usize::from(sentinel)
        } else {
            return None;
        };
        if utf8 && !text.feed(row.get(index..index + used)?) {
            return None;
        }
        index += size + 1;
        if sentinel == BLOCK_CONTINUATION {
            Some(None)
        } else if text.complete() {
            Some(Some(index))
        } else {
            None
        }
    };
    for _ in 0..MINI_BLOCK_COUNT {
        if let Some(end) = block(MINI_BLOCK_SIZE)? {
            return Some(end);
        }
    }
    loop {
        if let Some(end) = block(BLOCK_SIZE)? {
            return Some(end);
        }
    }
}

/// A UTF-8 check over a value split into blocks: a character may straddle two blocks, so
/// the incomplete sequence at a block's end is kept until the next block completes it.
#[derive(Debug, Default)]
struct Utf8Check {
    /// The bytes of the incomplete sequence.
    pending: [u8; 4],
    /// How many of `pending` are held (0 when none).
    held: usize,
}

impl Utf8Check {
    /// Checks the next piece of the value; false when the bytes cannot be UTF-8.
    fn feed(&mut self, mut piece: &[u8]) -> bool {
        if self.held > 0 {
            // The lead byte of an incomplete sequence `from_utf8` reported: 2, 3 or 4 wide.
            let width = match self.pending[0] {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => return false,
            };
            let take = (width - self.held).min(piece.len());
            let (head, rest) = piece.split_at(take);
            let Some(slot) = self.pending.get_mut(self.held..self.held + take) else {
                return false;
            };
            slot.copy_from_slice(head);
            self.held += take;
            piece = rest;
            if self.held < width {
                return true; // still incomplete: the piece was shorter than the sequence
            }
            if self
                .pending
                .get(..width)
                .is_none_or(|c| std::str::from_utf8(c).is_err())
            {
                return false;
            }
            self.held = 0;
        }
        match std::str::from_utf8(piece) {
            Ok(_) => true,
            Err(e) if e.error_len().is_none() => {
                let tail = piece.get(e.valid_up_to()..).unwrap_or_default();
                match self.pending.get_mut(..tail.len()) {
                    Some(slot) => {
                        slot.copy_from_slice(tail);
                        self.held = tail.len();
                        true
                    }
                    None => false,
                }
            }
            Err(_) => false,
        }
    }

    /// Whether no incomplete sequence is left at the end of the value.
    fn complete(&self) -> bool {
        self.held == 0
    }
}

/// The structural guard of one table's value columns.
///
/// Walked: booleans and primitives (a validity byte then the value's fixed width), strings
/// and binaries (arrow-row's block encoding: sentinel `2`, then 4 mini-blocks of 8 bytes and
/// blocks of 32 bytes, each followed by `0xFF` to continue or by the length used in the last
/// block), the bytes of a string being UTF-8 (arrow-row's string decoder panics otherwise:
/// found by the `stored_value` fuzz target). A column of any other type (lists, structs, dictionaries, ...) makes the guard
/// accept every row: such values rely on RocksDB's block checksums alone.
#[derive(Debug, Clone)]
pub struct RowGuard {
    layouts: Option<Vec<ColumnLayout>>,
}

impl RowGuard {
    /// The guard of `fields`.
    pub fn new(fields: &Fields) -> Self {
        Self {
            layouts: layouts(fields),
        }
    }

    /// Whether every column type is in the walked set (otherwise
    /// [`well_formed`](Self::well_formed) accepts everything).
    pub fn walks_every_column(&self) -> bool {
        self.layouts.is_some()
    }

    /// Whether `row` has exactly the length its columns' encodings say (always true for
    /// column types outside the walked set, which rely on RocksDB's block checksums).
    pub fn well_formed(&self, row: &[u8]) -> bool {
        let Some(layouts) = &self.layouts else {
            return true;
        };
        let mut rest = row;
        for layout in layouts {
            let len = match layout {
                ColumnLayout::Fixed(width) => 1 + width,
                ColumnLayout::Variable { utf8 } => match variable_len(rest, *utf8) {
                    Some(len) => len,
                    None => return false,
                },
            };
            match rest.get(len..) {
                Some(tail) => rest = tail,
                None => return false,
            }
        }
        rest.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, LargeStringArray, StringArray, StringViewArray};
    use arrow_schema::Field;
    use state_api::ValueCodec;

    use super::*;
    use crate::{Error, RowCodec, decode_stored_values};

    /// A codec that only counts rows, so arrow-row's decoder of any column type is reached.
    struct Rows(Fields);

    impl ValueCodec for Rows {
        type Value = ();
        fn fields(&self) -> Fields {
            self.0.clone()
        }
        fn encode<'a, I>(&self, _: I) -> state_api::Result<Vec<ArrayRef>>
        where
            I: ExactSizeIterator<Item = &'a ()> + Clone,
        {
            unreachable!("not encoded")
        }
        fn decode(&self, columns: &[ArrayRef], out: &mut Vec<()>) -> state_api::Result<()> {
            out.resize(columns[0].len(), ());
            Ok(())
        }
    }

    fn string_columns(values: &[&str]) -> Vec<(DataType, ArrayRef)> {
        vec![
            (DataType::Utf8, Arc::new(StringArray::from(values.to_vec()))),
            (
                DataType::LargeUtf8,
                Arc::new(LargeStringArray::from(values.to_vec())),
            ),
            (
                DataType::Utf8View,
                Arc::new(StringViewArray::from(values.to_vec())),
            ),
        ]
    }

    /// Regression (fuzz target `stored_value`, crash-5ba1779f): a string column whose block
    /// structure is right but whose bytes are not UTF-8 passed the guard and made arrow-row's
    /// string decoder panic (`GenericStringArray::from` unwraps); it is now `CorruptValue`.
    #[test]
    fn invalid_utf8_in_a_string_column_is_corrupt_not_a_panic() {
        // "é" at bytes 7..9 straddles the first mini-block boundary; 40 bytes reach a block.
        let values = ["xxxxxxxé", &"é".repeat(20), "a"];
        for (data_type, column) in string_columns(&values) {
            let fields = Fields::from(vec![Field::new("s", data_type.clone(), false)]);
            let codec = RowCodec::try_new(&fields).unwrap();
            let rows = codec.encode(&[column]).unwrap();
            let stored: Vec<Vec<u8>> = rows
                .iter()
                .map(|r| [&[0; 8][..], r.data()].concat())
                .collect();
            let decoded = decode_stored_values(
                &codec,
                &Rows(fields.clone()),
                stored.iter().map(Vec::as_slice),
            );
            assert_eq!(decoded.unwrap().1.len(), 3, "{data_type}");
            // Byte 9 is the first value byte; for "xxxxxxxé" byte 16 is the lead byte of the
            // "é" that straddles the first mini-block, byte 17 its sentinel, byte 18 the
            // continuation byte in the next mini-block.
            assert_eq!(&stored[0][16..19], [0xC3, BLOCK_CONTINUATION, 0xA9]);
            let mut edits = vec![(0, 18, b'x'), (0, 18, 0xC3)];
            for i in 0..stored.len() {
                edits.extend([(i, 9, 0xFF), (i, 9, 0x80)]);
            }
            for (i, at, byte) in edits {
                let mut bad = stored[i].clone();
                bad[at] = byte;
                let err =
                    decode_stored_values(&codec, &Rows(fields.clone()), [&bad[..]].into_iter())
                        .expect_err("not UTF-8");
                assert!(
                    matches!(err, Error::CorruptValue { .. }),
                    "{data_type} {i} {at}: {err}"
                );
            }
        }
    }

    #[test]
    fn utf8_check_joins_characters_across_blocks() {
        let text = "aé€😀".repeat(5);
        let bytes = text.as_bytes();
        for split in 0..bytes.len() {
            let (a, b) = bytes.split_at(split);
            let mut check = Utf8Check::default();
            assert!(
                check.feed(a) && check.feed(b) && check.complete(),
                "split {split}"
            );
            // A value cut inside a character is incomplete or invalid.
            let mut check = Utf8Check::default();
            let cut = &bytes[..bytes.len() - 1];
            assert!(!(check.feed(cut) && check.complete()));
        }
        let mut check = Utf8Check::default();
        assert!(check.feed(&[0xF0]) && check.feed(&[0x9F]) && check.feed(&[0x98, 0x80]));
        assert!(check.complete());
        let mut check = Utf8Check::default();
        assert!(!(check.feed(&[0xE2]) && check.feed(&[0x28, 0xA1])));
    }
}
