//! The spec of a window aggregate (what a planner hands the operator).

use arrow_schema::Fields;

use super::assigner::WindowKind;
use crate::spec::AggCall;

/// Which of Flink's window-aggregate plans runs (`table.optimizer.agg-phase-strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AggPhases {
    /// `LocalWindowAggregate -> GlobalWindowAggregate` (Flink's default, AUTO, when every
    /// aggregate can merge): each bundle pre-aggregates per (key, slice), then merges into
    /// the state once per (key, slice).
    #[default]
    TwoPhase,
    /// `WindowAggregate`: every row accumulates into the state.
    OnePhase,
}

/// `GROUP BY window_start, window_end, keys` over `TABLE(TUMBLE | HOP | CUMULATE(...))`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WindowAggSpec {
    /// The input columns.
    pub input: Fields,
    /// The window function.
    pub window: WindowKind,
    /// The event-time column (`TIMESTAMP(p)` or `TIMESTAMP_LTZ(p)`).
    pub time_column: usize,
    /// The window offset, ms. Defaults to 0.
    pub offset_ms: i64,
    /// Group key column indexes (besides `window_start`, `window_end`).
    pub group_by: Vec<usize>,
    /// The aggregate calls, in output order.
    pub aggregates: Vec<AggCall>,
    /// Whether the input is insert-only. Defaults to `true`.
    pub input_insert_only: bool,
    /// `table.local-time-zone` (a Java `ZoneId`): shifts the windows of a `TIMESTAMP_LTZ`
    /// time column. Defaults to `UTC`.
    pub local_time_zone: String,
    /// One or two phases. Defaults to [`AggPhases::TwoPhase`].
    pub phases: AggPhases,
    /// Output column names of the aggregates (defaults `agg0`, `agg1`, …).
    pub output_names: Vec<String>,
}

impl WindowAggSpec {
    /// A spec with Flink's defaults: insert-only input, offset 0, zone UTC, two phases.
    pub fn new(
        input: Fields,
        window: WindowKind,
        time_column: usize,
        group_by: Vec<usize>,
        aggregates: Vec<AggCall>,
    ) -> Self {
        Self {
            input,
            window,
            time_column,
            offset_ms: 0,
            group_by,
            aggregates,
            input_insert_only: true,
            local_time_zone: "UTC".to_owned(),
            phases: AggPhases::TwoPhase,
            output_names: Vec::new(),
        }
    }

    /// Sets the window offset. Defaults to 0.
    #[must_use]
    pub fn with_offset(mut self, offset_ms: i64) -> Self {
        self.offset_ms = offset_ms;
        self
    }

    /// Sets the session time zone. Defaults to `UTC`.
    #[must_use]
    pub fn with_local_time_zone(mut self, zone: impl Into<String>) -> Self {
        self.local_time_zone = zone.into();
        self
    }

    /// Declares a retracting input. Defaults to insert-only.
    #[must_use]
    pub fn with_retracting_input(mut self) -> Self {
        self.input_insert_only = false;
        self
    }

    /// Chooses one or two phases. Defaults to two.
    #[must_use]
    pub fn with_phases(mut self, phases: AggPhases) -> Self {
        self.phases = phases;
        self
    }

    /// Sets the aggregates' output column names.
    #[must_use]
    pub fn with_output_names(mut self, names: Vec<String>) -> Self {
        self.output_names = names;
        self
    }
}
