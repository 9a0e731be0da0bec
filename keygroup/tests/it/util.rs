//! Helpers shared by the integration tests.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt::{Debug, Write as _};

use serde_json::{Map, Value as Json};

/// Lowercase hex, first byte first.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Parses lowercase or uppercase hex.
pub(crate) fn unhex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err(format!("odd-length hex {text:?}"));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("bad hex {text:?}"))
        })
        .collect()
}

/// `Err` describing the mismatch unless `expected == actual`.
#[expect(
    clippy::needless_pass_by_value,
    reason = "call sites pass owned and borrowed values alike"
)]
pub(crate) fn check_eq<T: PartialEq + Debug>(
    field: &str,
    expected: T,
    actual: T,
) -> Result<(), String> {
    if expected == actual {
        Ok(())
    } else {
        Err(format!(
            "{field}: Flink has {expected:?}, we computed {actual:?}"
        ))
    }
}

/// One JSON object whose fields are read through typed getters; [`Line::finish`] fails if
/// any field was never read, so a vector field cannot go unchecked silently.
pub(crate) struct Line<'a> {
    object: &'a Map<String, Json>,
    used: RefCell<BTreeSet<String>>,
}

impl<'a> Line<'a> {
    pub(crate) fn new(json: &'a Json) -> Result<Self, String> {
        let object = json.as_object().ok_or("line is not a JSON object")?;
        Ok(Self {
            object,
            used: RefCell::new(BTreeSet::new()),
        })
    }

    /// The raw field (must exist).
    pub(crate) fn get(&self, key: &str) -> Result<&'a Json, String> {
        self.used.borrow_mut().insert(key.to_owned());
        self.object
            .get(key)
            .ok_or_else(|| format!("missing field {key:?}"))
    }

    pub(crate) fn is_null(&self, key: &str) -> Result<bool, String> {
        Ok(self.get(key)?.is_null())
    }

    pub(crate) fn i64(&self, key: &str) -> Result<i64, String> {
        self.get(key)?
            .as_i64()
            .ok_or_else(|| format!("{key}: not an integer"))
    }

    pub(crate) fn i32(&self, key: &str) -> Result<i32, String> {
        i32::try_from(self.i64(key)?).map_err(|_| format!("{key}: not an i32"))
    }

    pub(crate) fn opt_i32(&self, key: &str) -> Result<Option<i32>, String> {
        if self.is_null(key)? {
            Ok(None)
        } else {
            self.i32(key).map(Some)
        }
    }

    pub(crate) fn usize(&self, key: &str) -> Result<usize, String> {
        usize::try_from(self.i64(key)?).map_err(|_| format!("{key}: not a usize"))
    }

    pub(crate) fn bool(&self, key: &str) -> Result<bool, String> {
        self.get(key)?
            .as_bool()
            .ok_or_else(|| format!("{key}: not a boolean"))
    }

    pub(crate) fn str(&self, key: &str) -> Result<&'a str, String> {
        self.get(key)?
            .as_str()
            .ok_or_else(|| format!("{key}: not a string"))
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>, String> {
        if self.is_null(key)? {
            Ok(None)
        } else {
            self.str(key).map(Some)
        }
    }

    pub(crate) fn hex(&self, key: &str) -> Result<Vec<u8>, String> {
        unhex(self.str(key)?)
    }

    /// Checks that a hex field equals `actual`.
    pub(crate) fn check_hex(&self, key: &str, actual: &[u8]) -> Result<(), String> {
        check_eq(key, self.str(key)?, hex(actual).as_str())
    }

    /// Fails if some field was never read.
    pub(crate) fn finish(self) -> Result<(), String> {
        let used = self.used.borrow();
        let unread: Vec<&String> = self.object.keys().filter(|k| !used.contains(*k)).collect();
        if unread.is_empty() {
            Ok(())
        } else {
            Err(format!("fields not checked: {unread:?}"))
        }
    }
}

/// The workspace root. Cargo and nextest set `CARGO_MANIFEST_DIR` when they run a test, so a
/// test binary built in another checkout (and still fresh by mtime) reads this checkout's
/// fixtures; the compile-time value is the fallback for a binary run by hand.
pub(crate) fn workspace_root() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(
            || env!("CARGO_MANIFEST_DIR").into(),
            std::path::PathBuf::from,
        )
        .join("..")
}
