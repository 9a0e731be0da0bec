//! The end-to-end workload generator and its checksums, exactly as issue 8 defines them (the
//! Flink harness in `compat/flink-bench/` implements the same definition).
//!
//! For event `i` in `0..N` (wrapping `u64` arithmetic):
//!
//! - `key(i) = splitmix64(i) % K`, `value(i) = splitmix64(i ^ 0x9E3779B97F4A7C15) % 1000`;
//! - `rowhash(c0..cn)`: `h = 0`, then `h = splitmix64(h ^ c)` for each column;
//! - `chk_changelog`: wrapping sum over all output rows of `±rowhash(row)` (`+` for `+I`/`+U`,
//!   `−` for `−U`/`−D`); `chk_final`: wrapping sum of `rowhash` over the final table.

/// The golden-ratio increment of splitmix64 (also the value stream's seed mask).
pub const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// `splitmix64(x)`: one step of Vigna's `SplitMix64` finaliser on `x + GOLDEN`.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The key of event `i` among `keys` distinct keys.
pub fn key(i: u64, keys: u64) -> u64 {
    splitmix64(i) % keys
}

/// The value of event `i`, in `0..1000`.
pub fn value(i: u64) -> u64 {
    splitmix64(i ^ GOLDEN) % 1000
}

/// `rowhash` of a row of `u64` columns.
pub fn rowhash(columns: &[u64]) -> u64 {
    columns.iter().fold(0, |h, &c| splitmix64(h ^ c))
}

/// Flink's `RowKind` of an output row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `+I`.
    Insert,
    /// `-U`.
    UpdateBefore,
    /// `+U`.
    UpdateAfter,
    /// `-D`.
    Delete,
}

impl Kind {
    /// All kinds, in Flink's order (the index of [`Changelog::rows`]).
    pub const ALL: [Kind; 4] = [
        Kind::Insert,
        Kind::UpdateBefore,
        Kind::UpdateAfter,
        Kind::Delete,
    ];

    /// Flink's short string (`+I`, `-U`, `+U`, `-D`).
    pub fn short(self) -> &'static str {
        match self {
            Kind::Insert => "+I",
            Kind::UpdateBefore => "-U",
            Kind::UpdateAfter => "+U",
            Kind::Delete => "-D",
        }
    }

    fn index(self) -> usize {
        match self {
            Kind::Insert => 0,
            Kind::UpdateBefore => 1,
            Kind::UpdateAfter => 2,
            Kind::Delete => 3,
        }
    }
}

/// The discarding sink: counts output rows per kind and sums `chk_changelog`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Changelog {
    /// Rows per kind, indexed as [`Kind::ALL`].
    pub rows: [u64; 4],
    /// `chk_changelog`.
    pub checksum: u64,
}

impl Changelog {
    /// Takes one output row.
    #[inline]
    pub fn emit(&mut self, kind: Kind, row: &[u64]) {
        let h = rowhash(row);
        if let Some(n) = self.rows.get_mut(kind.index()) {
            *n += 1;
        }
        self.checksum = match kind {
            Kind::Insert | Kind::UpdateAfter => self.checksum.wrapping_add(h),
            Kind::UpdateBefore | Kind::Delete => self.checksum.wrapping_sub(h),
        };
    }

    /// Adds another sink's rows (the sinks of several subtasks).
    pub fn merge(&mut self, other: &Changelog) {
        for (a, b) in self.rows.iter_mut().zip(other.rows) {
            *a += b;
        }
        self.checksum = self.checksum.wrapping_add(other.checksum);
    }

    /// Rows of all kinds.
    pub fn total(&self) -> u64 {
        self.rows.iter().sum()
    }
}

/// `chk_final` accumulated row by row over a final table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FinalTable {
    /// Rows in the final table.
    pub rows: u64,
    /// `chk_final`.
    pub checksum: u64,
}

impl FinalTable {
    /// Takes one row of the final table.
    pub fn add(&mut self, row: &[u64]) {
        self.rows += 1;
        self.checksum = self.checksum.wrapping_add(rowhash(row));
    }

    /// Adds another part of the final table.
    pub fn merge(&mut self, other: &FinalTable) {
        self.rows += other.rows;
        self.checksum = self.checksum.wrapping_add(other.checksum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_check_values() {
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
        let first: Vec<(u64, u64, u64)> = (0..3).map(|i| (i, key(i, 100_000), value(i))).collect();
        assert_eq!(first, [(0, 7535, 700), (1, 22465, 969), (2, 48110, 226)]);
        assert_eq!(rowhash(&[1, 2, 3]), 0xd073_4750_fde3_62b3);
    }

    #[test]
    fn changelog_signs_and_counts() {
        let mut c = Changelog::default();
        c.emit(Kind::Insert, &[1, 2]);
        c.emit(Kind::UpdateBefore, &[1, 2]);
        c.emit(Kind::UpdateAfter, &[1, 3]);
        assert_eq!(c.rows, [1, 1, 1, 0]);
        assert_eq!(c.checksum, rowhash(&[1, 3]));
        let mut d = Changelog::default();
        d.emit(Kind::Delete, &[1, 3]);
        c.merge(&d);
        assert_eq!((c.checksum, c.total()), (0, 4));
    }
}
