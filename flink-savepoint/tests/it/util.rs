//! Shared helpers.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The repository root, from the crate directory cargo names at run time (a test binary
/// reused from a build in another checkout must not read that checkout's files).
pub(crate) fn repo_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("..")
}

/// The samples directory: `$FLINK_SAVEPOINTS_DIR` (relative to the repository root when
/// relative), default `testdata/flink-savepoints`.
pub(crate) fn samples_dir() -> PathBuf {
    let dir = std::env::var_os("FLINK_SAVEPOINTS_DIR")
        .map_or_else(|| PathBuf::from("testdata/flink-savepoints"), PathBuf::from);
    if dir.is_absolute() {
        dir
    } else {
        repo_root().join(dir)
    }
}

/// Every sample directory (one holding `_metadata`), sorted by name.
pub(crate) fn sample_dirs() -> Vec<PathBuf> {
    let root = samples_dir();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("_metadata").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no savepoint under {}", root.display());
    dirs
}

/// The committed samples (whatever `FLINK_SAVEPOINTS_DIR` says), for tests that mutate them.
pub(crate) fn committed_sample(name: &str) -> PathBuf {
    repo_root().join("testdata/flink-savepoints").join(name)
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        write!(s, "{b:02x}").unwrap();
        s
    })
}

/// SHA-256 in hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Copies every file of `from` into the new directory `to`.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        std::fs::copy(entry.path(), &target).unwrap();
        let mut perms = std::fs::metadata(&target).unwrap().permissions();
        #[expect(
            clippy::permissions_set_readonly_false,
            reason = "test copies of read-only fixtures"
        )]
        perms.set_readonly(false);
        std::fs::set_permissions(&target, perms).unwrap();
    }
}
