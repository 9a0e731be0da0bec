//! RocksDB composite keys as Flink's `SerializedCompositeKeyBuilder` builds them.

use crate::assignment::{KeyGroup, MaxParallelism};
use crate::error::{Error, Result};
use crate::serializer::StateSerializer;

/// Builds the RocksDB keys of Flink's RocksDB state backend, byte for byte as
/// `SerializedCompositeKeyBuilder`: set the key and its key group once, then build keys for
/// several namespaces and map-state user keys without serializing the key again.
///
/// ```text
/// +------------------+----------------+--------------+----------------------+--------------+----------+
/// | key group        | serialized key | [key length] | serialized namespace | [ns. length] | user key |
/// | 1 B if mp <= 128 |                |              |                      |              | (map     |
/// | else 2 B, BE     |                |              |                      |              |  state)  |
/// +------------------+----------------+--------------+----------------------+--------------+----------+
/// ```
///
/// The bracketed lengths are written only when both the key and the namespace serializer are
/// variable-length ([`is_ambiguous_key_possible`](crate::is_ambiguous_key_possible)). Each is
/// a byte count (the key's without the prefix) in
/// `CompositeKeySerializationUtils.writeVariableIntBytes` form: little-endian base 256, low
/// byte first, at least one byte, no continuation bit (276 is `14 01`). The user key follows
/// with no length.
///
/// The returned slices borrow the builder's buffer (Flink returns a copy).
///
/// ```
/// use keygroup::{
///     CompositeKeyBuilder, KeyGroup, MaxParallelism, StringSerializer, VoidNamespace,
///     VoidNamespaceSerializer,
/// };
///
/// let mp = MaxParallelism::new(128)?;
/// let mut builder = CompositeKeyBuilder::new(StringSerializer, mp);
/// builder.set_key_and_key_group("a", keygroup::assign_to_key_group("a", mp))?;
/// assert_eq!(builder.build(), [81, 0x02, b'a']);
/// let key = builder.build_composite_key_namespace(&VoidNamespace, &VoidNamespaceSerializer)?;
/// assert_eq!(key, [81, 0x02, b'a', 0x00]);
/// // Two variable-length parts: both lengths are appended.
/// let key = builder.build_composite_key_namespace("ns", &keygroup::StringSerializer)?;
/// assert_eq!(key, [81, 0x02, b'a', 2, 0x03, b'n', b's', 3]);
/// # Ok::<(), keygroup::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct CompositeKeyBuilder<S> {
    key_serializer: S,
    max_parallelism: MaxParallelism,
    key_group_prefix_bytes: usize,
    /// Whether the key serializer is variable-length (known once a key was set).
    key_variable_sized: bool,
    buf: Vec<u8>,
    /// End of the serialized key; 0 until a key was set.
    after_key: usize,
    /// End of the serialized namespace; 0 until a namespace was set.
    after_namespace: usize,
}

impl<S> CompositeKeyBuilder<S> {
    /// `new SerializedCompositeKeyBuilder(keySerializer, keyGroupPrefixBytes, initialSize)` with
    /// the prefix width of `max_parallelism`
    /// (`CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix`).
    pub fn new(key_serializer: S, max_parallelism: MaxParallelism) -> Self {
        Self {
            key_serializer,
            max_parallelism,
            key_group_prefix_bytes: max_parallelism.key_group_prefix_bytes(),
            key_variable_sized: false,
            buf: Vec::with_capacity(32),
            after_key: 0,
            after_namespace: 0,
        }
    }

    /// The key serializer.
    pub fn key_serializer(&self) -> &S {
        &self.key_serializer
    }

    /// The width of the key-group prefix: 1 byte when max parallelism <= 128, else 2.
    pub fn key_group_prefix_bytes(&self) -> usize {
        self.key_group_prefix_bytes
    }

    /// `setKeyAndKeyGroup(key, keyGroupId)`: clears the builder and writes the key-group prefix
    /// (big-endian) and the serialized key.
    ///
    /// # Errors
    /// [`Error::KeyGroupOutOfRange`] unless `key_group < max_parallelism` (Flink would
    /// silently truncate the prefix); the key serializer's errors.
    pub fn set_key_and_key_group<K: ?Sized>(&mut self, key: &K, key_group: KeyGroup) -> Result<()>
    where
        S: StateSerializer<K>,
    {
        let key_group = self.max_parallelism.key_group(key_group.get())?;
        self.buf.clear();
        self.after_key = 0;
        self.after_namespace = 0;
        let prefix = key_group.get().cast_unsigned().to_be_bytes();
        self.buf.extend_from_slice(
            prefix
                .get(4 - self.key_group_prefix_bytes..)
                .unwrap_or_default(),
        );
        self.key_serializer.serialize(key, &mut self.buf)?;
        self.key_variable_sized = self.key_serializer.fixed_length().is_none();
        self.after_key = self.buf.len();
        Ok(())
    }

    /// `build()`: everything written so far; right after
    /// [`set_key_and_key_group`](Self::set_key_and_key_group) that is the key-group prefix and
    /// the key (empty before any key was set).
    pub fn build(&self) -> &[u8] {
        &self.buf
    }

    /// `setNamespace(namespace, namespaceSerializer)`: replaces everything after the key with
    /// the namespace (and the lengths, when the key is ambiguous).
    ///
    /// # Errors
    /// [`Error::KeyNotSet`] before a key was set; the namespace serializer's errors.
    pub fn set_namespace<N: ?Sized>(
        &mut self,
        namespace: &N,
        namespace_serializer: &(impl StateSerializer<N> + ?Sized),
    ) -> Result<()> {
        if self.after_key == 0 {
            return Err(Error::KeyNotSet);
        }
        self.buf.truncate(self.after_key);
        self.after_namespace = 0;
        let ambiguous = self.key_variable_sized && namespace_serializer.fixed_length().is_none();
        if ambiguous {
            write_variable_int_bytes(self.after_key - self.key_group_prefix_bytes, &mut self.buf);
        }
        let before = self.buf.len();
        namespace_serializer.serialize(namespace, &mut self.buf)?;
        if ambiguous {
            write_variable_int_bytes(self.buf.len() - before, &mut self.buf);
        }
        self.after_namespace = self.buf.len();
        Ok(())
    }

    /// `buildCompositeKeyNamespace(namespace, namespaceSerializer)`: key group, key and
    /// namespace (value and list state).
    ///
    /// # Errors
    /// As [`set_namespace`](Self::set_namespace).
    pub fn build_composite_key_namespace<N: ?Sized>(
        &mut self,
        namespace: &N,
        namespace_serializer: &(impl StateSerializer<N> + ?Sized),
    ) -> Result<&[u8]> {
        self.set_namespace(namespace, namespace_serializer)?;
        Ok(&self.buf)
    }

    /// `buildCompositeKeyNamesSpaceUserKey(namespace, namespaceSerializer, userKey,
    /// userKeySerializer)`: key group, key, namespace and a map-state user key.
    ///
    /// # Errors
    /// As [`set_namespace`](Self::set_namespace); the user-key serializer's errors.
    pub fn build_composite_key_namespace_user_key<N: ?Sized, U: ?Sized>(
        &mut self,
        namespace: &N,
        namespace_serializer: &(impl StateSerializer<N> + ?Sized),
        user_key: &U,
        user_key_serializer: &(impl StateSerializer<U> + ?Sized),
    ) -> Result<&[u8]> {
        self.set_namespace(namespace, namespace_serializer)?;
        user_key_serializer.serialize(user_key, &mut self.buf)?;
        Ok(&self.buf)
    }

    /// `buildCompositeKeyUserKey(userKey, userKeySerializer)`: the key and namespace set
    /// before, followed by another user key.
    ///
    /// # Errors
    /// [`Error::NamespaceNotSet`] before a namespace was set; the user-key serializer's
    /// errors.
    pub fn build_composite_key_user_key<U: ?Sized>(
        &mut self,
        user_key: &U,
        user_key_serializer: &(impl StateSerializer<U> + ?Sized),
    ) -> Result<&[u8]> {
        if self.after_namespace == 0 {
            return Err(Error::NamespaceNotSet);
        }
        self.buf.truncate(self.after_namespace);
        user_key_serializer.serialize(user_key, &mut self.buf)?;
        Ok(&self.buf)
    }
}

/// `CompositeKeySerializationUtils.writeVariableIntBytes(value, out)`: little-endian base 256,
/// at least one byte.
fn write_variable_int_bytes(mut value: usize, out: &mut Vec<u8>) {
    loop {
        out.push(u8::try_from(value & 0xff).unwrap_or_default());
        value >>= 8;
        if value == 0 {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serializer::{
        IntSerializer, LongSerializer, RowDataSerializer, StringSerializer, TimeWindow,
        TimeWindowSerializer, VoidNamespace, VoidNamespaceSerializer,
    };

    fn mp(v: i32) -> MaxParallelism {
        MaxParallelism::new(v).unwrap()
    }

    fn kg(v: i32) -> KeyGroup {
        KeyGroup::new(v).unwrap()
    }

    #[test]
    fn variable_int_bytes() {
        let mut out = Vec::new();
        write_variable_int_bytes(0, &mut out);
        write_variable_int_bytes(276, &mut out);
        write_variable_int_bytes(0x01_0000, &mut out);
        assert_eq!(out, [0x00, 0x14, 0x01, 0x00, 0x00, 0x01]);
    }

    #[test]
    fn two_byte_prefix_and_fixed_key() {
        let mut b = CompositeKeyBuilder::new(IntSerializer, mp(4096));
        assert_eq!(b.key_group_prefix_bytes(), 2);
        b.set_key_and_key_group(&7, kg(0x0abc)).unwrap();
        assert_eq!(b.build(), [0x0a, 0xbc, 0, 0, 0, 7]);
        let key = b
            .build_composite_key_namespace(&TimeWindow { start: 0, end: 1 }, &TimeWindowSerializer)
            .unwrap();
        assert_eq!(key.len(), 6 + 16);
        // Reuse: the key stays, the namespace is replaced.
        let key = b
            .build_composite_key_namespace(&5, &LongSerializer)
            .unwrap();
        assert_eq!(key, [0x0a, 0xbc, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 5]);
        let key = b
            .build_composite_key_user_key("u", &StringSerializer)
            .unwrap();
        assert_eq!(key.len(), 14 + 2);
        let key = b
            .build_composite_key_user_key("v", &StringSerializer)
            .unwrap();
        assert_eq!(key.get(14..), Some(&[0x02, b'v'][..]));
    }

    #[test]
    fn ambiguous_row_key() {
        let mut b = CompositeKeyBuilder::new(RowDataSerializer, mp(128));
        b.set_key_and_key_group(&[0_u8; 8][..], kg(1)).unwrap();
        let key = b
            .build_composite_key_namespace_user_key("", &StringSerializer, &3, &IntSerializer)
            .unwrap();
        assert_eq!(
            key,
            [
                1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 12, 0x01, 1, 0, 0, 0, 3
            ]
        );
    }

    #[test]
    fn builder_misuse_is_an_error() {
        let mut b = CompositeKeyBuilder::new(StringSerializer, mp(128));
        assert!(b.build().is_empty());
        assert!(matches!(
            b.build_composite_key_namespace(&VoidNamespace, &VoidNamespaceSerializer),
            Err(Error::KeyNotSet)
        ));
        assert!(matches!(
            b.build_composite_key_user_key(&1, &IntSerializer),
            Err(Error::NamespaceNotSet)
        ));
        assert!(matches!(
            b.set_key_and_key_group("k", kg(128)),
            Err(Error::KeyGroupOutOfRange {
                key_group: 128,
                max_parallelism: 128
            })
        ));
        b.set_key_and_key_group("k", kg(3)).unwrap();
        b.set_namespace(&VoidNamespace, &VoidNamespaceSerializer)
            .unwrap();
        // A new key forgets the namespace.
        b.set_key_and_key_group("k", kg(3)).unwrap();
        assert!(matches!(
            b.build_composite_key_user_key(&1, &IntSerializer),
            Err(Error::NamespaceNotSet)
        ));
    }
}
