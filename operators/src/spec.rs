//! Operator specs: what a planner hands an operator (no SQL parsing here).

use std::time::Duration;

use arrow_schema::Fields;

/// Which changes the consumer asks for (Flink's requested changelog mode of the sink).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChangelogMode {
    /// All four kinds: updates are `-U` old, `+U` new (`toChangelogStream(table)`).
    #[default]
    All,
    /// Upsert on the unique key: updates are `+U` alone, no update-before
    /// (`ChangelogMode.upsert()`).
    Upsert,
}

/// An aggregate function as Flink's planner names it (before its own rewrites).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AggFunction {
    /// `COUNT(*)`.
    CountStar,
    /// `COUNT(x)`: non-null values.
    Count,
    /// `SUM(x)`: `NULL` until a non-null value arrives.
    Sum,
    /// `$SUM0(x)`: starts at 0.
    Sum0,
    /// `MIN(x)`.
    Min,
    /// `MAX(x)`.
    Max,
    /// `AVG(x)`.
    Avg,
    /// `FIRST_VALUE(x)`: the first non-null value.
    FirstValue,
    /// `LAST_VALUE(x)`: the last non-null value.
    LastValue,
}

impl AggFunction {
    /// Parses the names of the cases' `spec.aggregates[].function`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "COUNT_STAR" => Self::CountStar,
            "COUNT" => Self::Count,
            "SUM" => Self::Sum,
            "SUM0" => Self::Sum0,
            "MIN" => Self::Min,
            "MAX" => Self::Max,
            "AVG" => Self::Avg,
            "FIRST_VALUE" => Self::FirstValue,
            "LAST_VALUE" => Self::LastValue,
            _ => return None,
        })
    }
}

/// One aggregate call of a GROUP BY.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AggCall {
    /// The function.
    pub function: AggFunction,
    /// Argument column indexes into the input (empty for `COUNT(*)`).
    pub args: Vec<usize>,
    /// `DISTINCT`.
    pub distinct: bool,
}

impl AggCall {
    /// A call of `function` on `args`.
    pub fn new(function: AggFunction, args: Vec<usize>) -> Self {
        Self {
            function,
            args,
            distinct: false,
        }
    }

    /// The same call with `DISTINCT`.
    #[must_use]
    pub fn distinct(mut self) -> Self {
        self.distinct = true;
        self
    }
}

/// Mini-batch settings (`table.exec.mini-batch.*`): a bundle is what the host hands
/// [`process_bundle`](crate::GroupAggregate::process_bundle); `size` is informative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MiniBatch {
    /// `table.exec.mini-batch.size`.
    pub size: usize,
}

/// A non-windowed GROUP BY.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GroupAggSpec {
    /// The input columns.
    pub input: Fields,
    /// Group key column indexes.
    pub group_by: Vec<usize>,
    /// The aggregate calls, in output order.
    pub aggregates: Vec<AggCall>,
    /// Whether the input is insert-only (`ChangelogMode.insertOnly()`); otherwise Flink
    /// plans the retracting aggregate functions and a record counter.
    pub input_insert_only: bool,
    /// The requested changelog mode.
    pub changelog_mode: ChangelogMode,
    /// Mini-batch (local-global or one-phase, as Flink's AUTO strategy picks); `None` = off.
    pub mini_batch: Option<MiniBatch>,
    /// `table.exec.state.ttl` (idle state retention); `None` = off.
    pub state_ttl: Option<Duration>,
    /// Output column names of the aggregates (defaults `agg0`, `agg1`, …).
    pub output_names: Vec<String>,
}

impl GroupAggSpec {
    /// A spec with Flink's defaults: changelog mode all, mini-batch off, TTL off.
    pub fn new(
        input: Fields,
        group_by: Vec<usize>,
        aggregates: Vec<AggCall>,
        input_insert_only: bool,
    ) -> Self {
        Self {
            input,
            group_by,
            aggregates,
            input_insert_only,
            changelog_mode: ChangelogMode::All,
            mini_batch: None,
            state_ttl: None,
            output_names: Vec::new(),
        }
    }

    /// Sets the changelog mode. Defaults to [`ChangelogMode::All`].
    #[must_use]
    pub fn with_changelog_mode(mut self, mode: ChangelogMode) -> Self {
        self.changelog_mode = mode;
        self
    }

    /// Turns mini-batch on. Defaults to off.
    #[must_use]
    pub fn with_mini_batch(mut self, mini_batch: MiniBatch) -> Self {
        self.mini_batch = Some(mini_batch);
        self
    }

    /// Sets the state TTL. Defaults to off.
    #[must_use]
    pub fn with_state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = Some(ttl);
        self
    }

    /// Sets the aggregates' output column names.
    #[must_use]
    pub fn with_output_names(mut self, names: Vec<String>) -> Self {
        self.output_names = names;
        self
    }
}

/// One ORDER BY column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortColumn {
    /// The input column index.
    pub column: usize,
    /// `DESC`.
    pub descending: bool,
    /// `NULLS LAST` (Flink's default: ASC NULLS FIRST, DESC NULLS LAST).
    pub nulls_last: bool,
}

/// `ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) = 1` on insert-only input.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Top1Spec {
    /// The input columns.
    pub input: Fields,
    /// Partition key column indexes.
    pub partition_by: Vec<usize>,
    /// The order.
    pub order_by: Vec<SortColumn>,
    /// Whether the output carries the rank number (always the literal 1, BIGINT).
    pub output_rank_number: bool,
    /// The requested changelog mode.
    pub changelog_mode: ChangelogMode,
}

impl Top1Spec {
    /// A spec in changelog mode all.
    pub fn new(
        input: Fields,
        partition_by: Vec<usize>,
        order_by: Vec<SortColumn>,
        output_rank_number: bool,
    ) -> Self {
        Self {
            input,
            partition_by,
            order_by,
            output_rank_number,
            changelog_mode: ChangelogMode::All,
        }
    }

    /// Sets the changelog mode. Defaults to [`ChangelogMode::All`].
    #[must_use]
    pub fn with_changelog_mode(mut self, mode: ChangelogMode) -> Self {
        self.changelog_mode = mode;
        self
    }
}

/// A regular (non-windowed) INNER equi-join, both inputs without a unique key.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JoinSpec {
    /// The left input columns.
    pub left: Fields,
    /// The right input columns.
    pub right: Fields,
    /// Left join-key column indexes.
    pub left_keys: Vec<usize>,
    /// Right join-key column indexes (pairwise equal to the left ones).
    pub right_keys: Vec<usize>,
    /// The non-equi part of the condition, as SQL text over `` `left`.col `` /
    /// `` `right`.col `` (see [`JoinCondition`](crate::JoinCondition) for what parses).
    pub non_equi_condition: Option<String>,
}

impl JoinSpec {
    /// An equi-join without a non-equi condition.
    pub fn new(left: Fields, right: Fields, left_keys: Vec<usize>, right_keys: Vec<usize>) -> Self {
        Self {
            left,
            right,
            left_keys,
            right_keys,
            non_equi_condition: None,
        }
    }

    /// Adds a non-equi condition.
    #[must_use]
    pub fn with_non_equi_condition(mut self, condition: impl Into<String>) -> Self {
        self.non_equi_condition = Some(condition.into());
        self
    }
}
