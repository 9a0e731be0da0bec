//! Slices and windows (Flink's `SliceAssigners`: `TumblingSliceAssigner`,
//! `HoppingSliceAssigner`, `CumulativeSliceAssigner`).
//!
//! Every time here is in window time: epoch millis for TIMESTAMP, local millis for
//! `TIMESTAMP_LTZ` (see [`ShiftZone`](super::ShiftZone)). A row at time `t` belongs to exactly
//! one slice, identified by its end:
//!
//! | kind | slice length | windows of the slice ending at `e` |
//! |---|---|---|
//! | TUMBLE(size) | size | `[e - size, e)` |
//! | HOP(size, slide) | slide | `[w - size, w)` for `w = e, e + slide, …, e + size - slide` |
//! | CUMULATE(size, step) | step | `[s, w)` for `w = e, e + step, …, s + size`, `s` = the start of the max-size window |
//!
//! A window is assembled from the slices whose ends lie in `(window start, window end]`.

use crate::error::{Error, Result};

/// The window table-valued function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowKind {
    /// `TUMBLE(TABLE t, DESCRIPTOR(ts), size [, offset])`.
    Tumble {
        /// Window size, ms.
        size_ms: i64,
    },
    /// `HOP(TABLE t, DESCRIPTOR(ts), slide, size [, offset])`.
    Hop {
        /// Window size, ms (an integral multiple of the slide).
        size_ms: i64,
        /// Slide, ms.
        slide_ms: i64,
    },
    /// `CUMULATE(TABLE t, DESCRIPTOR(ts), step, size [, offset])`.
    Cumulate {
        /// Max window size, ms (an integral multiple of the step).
        size_ms: i64,
        /// Step, ms.
        step_ms: i64,
    },
}

/// Validated slicing of one window kind with its offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slicing {
    pub kind: WindowKind,
    pub size: i64,
    pub slice: i64,
    pub offset: i64,
}

/// Flink's `TimeWindow.getWindowStartWithOffset`.
pub(crate) fn window_start(ts: i64, offset: i64, size: i64) -> i64 {
    let rem = ts.wrapping_sub(offset) % size;
    if rem < 0 {
        ts.wrapping_sub(rem + size)
    } else {
        ts.wrapping_sub(rem)
    }
}

impl Slicing {
    /// Validates `kind` as Flink's planner does.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] with Flink's message for a non-positive size, slide or step,
    /// or a HOP / CUMULATE size that is not an integral multiple of its slide / step.
    pub(crate) fn try_new(kind: WindowKind, offset: i64) -> Result<Self> {
        let (size, slice) = match kind {
            WindowKind::Tumble { size_ms } => (size_ms, size_ms),
            WindowKind::Hop { size_ms, slide_ms } => {
                if size_ms <= 0 || slide_ms <= 0 {
                    return Err(Error::spec(format!(
                        "HOP table function based aggregate requires size and slide to be \
                         positive, but got size {size_ms} ms and slide {slide_ms} ms"
                    )));
                }
                if size_ms % slide_ms != 0 {
                    return Err(Error::spec(format!(
                        "HOP table function based aggregate requires size must be an integral \
                         multiple of slide, but got size {size_ms} ms and slide {slide_ms} ms"
                    )));
                }
                (size_ms, slide_ms)
            }
            WindowKind::Cumulate { size_ms, step_ms } => {
                if size_ms <= 0 || step_ms <= 0 {
                    return Err(Error::spec(format!(
                        "CUMULATE table function based aggregate requires maxSize and step to \
                         be positive, but got maxSize {size_ms} ms and step {step_ms} ms"
                    )));
                }
                if size_ms % step_ms != 0 {
                    return Err(Error::spec(format!(
                        "CUMULATE table function based aggregate requires maxSize must be an \
                         integral multiple of step, but got maxSize {size_ms} ms and step \
                         {step_ms} ms"
                    )));
                }
                (size_ms, step_ms)
            }
        };
        if size <= 0 {
            return Err(Error::spec(format!(
                "TUMBLE table function based aggregate requires size to be positive, but got \
                 {size} ms"
            )));
        }
        Ok(Self {
            kind,
            size,
            slice,
            offset,
        })
    }

    /// The end of the slice holding time `ts`.
    pub(crate) fn slice_end(&self, ts: i64) -> i64 {
        window_start(ts, self.offset, self.slice).saturating_add(self.slice)
    }

    /// The start of the max-size window holding the slice ending at `slice_end`.
    fn max_window_start(&self, slice_end: i64) -> i64 {
        window_start(slice_end.saturating_sub(1), self.offset, self.size)
    }

    /// The ends of the windows the slice ending at `slice_end` belongs to, ascending.
    pub(crate) fn windows_of_slice(&self, slice_end: i64) -> impl Iterator<Item = i64> + use<> {
        let last = self.last_window_end(slice_end);
        let step = self.slice;
        let mut next = Some(slice_end);
        std::iter::from_fn(move || {
            let w = next?;
            next = w.checked_add(step).filter(|n| *n <= last);
            Some(w)
        })
    }

    /// The end of the last window of the slice ending at `slice_end`.
    pub(crate) fn last_window_end(&self, slice_end: i64) -> i64 {
        match self.kind {
            WindowKind::Tumble { .. } => slice_end,
            WindowKind::Hop { .. } => slice_end.saturating_add(self.size - self.slice),
            WindowKind::Cumulate { .. } => {
                self.max_window_start(slice_end).saturating_add(self.size)
            }
        }
    }

    /// The start of the window ending at `end`.
    pub(crate) fn window_start_of(&self, end: i64) -> i64 {
        match self.kind {
            WindowKind::Tumble { .. } | WindowKind::Hop { .. } => end.saturating_sub(self.size),
            WindowKind::Cumulate { .. } => self.max_window_start(end),
        }
    }

    /// The slice ends `(lo, hi]` whose state is no longer needed once the window ending at
    /// `end` has fired (their last window is `end`); `None` when there are none.
    pub(crate) fn expired_by(&self, end: i64) -> Option<(i64, i64)> {
        let start = self.window_start_of(end);
        match self.kind {
            WindowKind::Tumble { .. } => Some((start, end)),
            WindowKind::Hop { .. } => Some((start, start.saturating_add(self.slice))),
            WindowKind::Cumulate { .. } => {
                (end == start.saturating_add(self.size)).then_some((start, end))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_start_floors_with_offset_and_negatives() {
        assert_eq!(window_start(15, 0, 10), 10);
        assert_eq!(window_start(-1, 0, 10), -10);
        assert_eq!(window_start(-10, 0, 10), -10);
        assert_eq!(window_start(12, 3, 10), 3);
        assert_eq!(window_start(2, 3, 10), -7);
    }

    #[test]
    fn hop_slices_and_windows() {
        let s = Slicing::try_new(
            WindowKind::Hop {
                size_ms: 40,
                slide_ms: 10,
            },
            0,
        )
        .unwrap();
        assert_eq!(s.slice_end(25), 30);
        assert_eq!(s.windows_of_slice(30).collect::<Vec<_>>(), [30, 40, 50, 60]);
        assert_eq!(s.window_start_of(60), 20);
        assert_eq!(s.expired_by(60), Some((20, 30)));
        let err = Slicing::try_new(
            WindowKind::Hop {
                size_ms: 25,
                slide_ms: 10,
            },
            0,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("integral multiple of slide"),
            "{err}"
        );
    }

    #[test]
    fn cumulate_slices_and_windows() {
        let s = Slicing::try_new(
            WindowKind::Cumulate {
                size_ms: 30,
                step_ms: 10,
            },
            0,
        )
        .unwrap();
        assert_eq!(s.slice_end(41), 50);
        assert_eq!(s.windows_of_slice(50).collect::<Vec<_>>(), [50, 60]);
        assert_eq!(s.windows_of_slice(40).collect::<Vec<_>>(), [40, 50, 60]);
        assert_eq!(s.window_start_of(50), 30);
        assert_eq!(s.expired_by(50), None);
        assert_eq!(s.expired_by(60), Some((30, 60)));
        assert!(
            Slicing::try_new(
                WindowKind::Cumulate {
                    size_ms: 35,
                    step_ms: 10
                },
                0
            )
            .is_err()
        );
    }

    #[test]
    fn tumble_with_offset() {
        let s = Slicing::try_new(WindowKind::Tumble { size_ms: 10 }, 3).unwrap();
        assert_eq!(s.slice_end(12), 13);
        assert_eq!(s.windows_of_slice(13).collect::<Vec<_>>(), [13]);
        assert_eq!(s.expired_by(13), Some((3, 13)));
        assert!(Slicing::try_new(WindowKind::Tumble { size_ms: 0 }, 0).is_err());
    }
}
