//! The operator traits a host drives, and a bundle-by-bundle driver.

use arrow_schema::SchemaRef;
use sfcs_format::Container;
use state_api::{KeyedStateStore, MapStateStore, RestoreSummary, SnapshotSummary};

use crate::changelog::ChangelogBatch;
use crate::error::Result;
use crate::{GroupAggregate, InnerJoin, JoinSide, Top1};

/// What every operator declares and how its state moves: canonical snapshot sections under
/// its operator id, restorable at any parallelism.
pub trait StatefulOperator {
    /// The operator id (the canonical snapshot's operator id).
    fn operator_id(&self) -> &str;

    /// The state format version of the operator's tables.
    fn state_version(&self) -> u32;

    /// The output schema.
    fn output_schema(&self) -> &SchemaRef;

    /// Writes the canonical snapshot of the operator's tables into `container`.
    ///
    /// # Errors
    /// A state-api error.
    fn snapshot(&self, container: &mut dyn Container) -> Result<SnapshotSummary>;

    /// Replaces the state with the key groups of the store's range found in `sources`.
    ///
    /// # Errors
    /// A state-api error; on error the state is unchanged.
    fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary>;
}

/// An operator of one input.
pub trait OneInputOperator: StatefulOperator {
    /// Processes one bundle.
    ///
    /// # Errors
    /// Input errors before any state change; a store error.
    fn process_bundle(&mut self, input: &ChangelogBatch) -> Result<ChangelogBatch>;
}

/// An operator of two inputs.
pub trait TwoInputOperator: StatefulOperator {
    /// Processes one bundle of segments in arrival order.
    ///
    /// # Errors
    /// Input errors before any state change; a store error.
    fn process_bundle(
        &mut self,
        segments: &[(JoinSide, &ChangelogBatch)],
    ) -> Result<ChangelogBatch>;
}

/// Runs `bundles` through `op` in order; returns one output batch per bundle. Stops at the
/// first error (the failing bundle's state is unchanged for input errors).
///
/// # Errors
/// The first bundle's error.
pub fn run_bundles<O: OneInputOperator + ?Sized>(
    op: &mut O,
    bundles: &[ChangelogBatch],
) -> Result<Vec<ChangelogBatch>> {
    bundles.iter().map(|b| op.process_bundle(b)).collect()
}

impl<S: MapStateStore> StatefulOperator for GroupAggregate<S> {
    fn operator_id(&self) -> &str {
        GroupAggregate::operator_id(self)
    }
    fn state_version(&self) -> u32 {
        crate::GROUP_AGG_STATE_VERSION
    }
    fn output_schema(&self) -> &SchemaRef {
        GroupAggregate::output_schema(self)
    }
    fn snapshot(&self, container: &mut dyn Container) -> Result<SnapshotSummary> {
        GroupAggregate::snapshot(self, container)
    }
    fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary> {
        GroupAggregate::restore(self, sources)
    }
}

impl<S: MapStateStore> OneInputOperator for GroupAggregate<S> {
    fn process_bundle(&mut self, input: &ChangelogBatch) -> Result<ChangelogBatch> {
        GroupAggregate::process_bundle(self, input)
    }
}

impl<S: KeyedStateStore> StatefulOperator for Top1<S> {
    fn operator_id(&self) -> &str {
        Top1::operator_id(self)
    }
    fn state_version(&self) -> u32 {
        crate::TOP1_STATE_VERSION
    }
    fn output_schema(&self) -> &SchemaRef {
        Top1::output_schema(self)
    }
    fn snapshot(&self, container: &mut dyn Container) -> Result<SnapshotSummary> {
        Top1::snapshot(self, container)
    }
    fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary> {
        Top1::restore(self, sources)
    }
}

impl<S: KeyedStateStore> OneInputOperator for Top1<S> {
    fn process_bundle(&mut self, input: &ChangelogBatch) -> Result<ChangelogBatch> {
        Top1::process_bundle(self, input)
    }
}

impl<S: MapStateStore> StatefulOperator for InnerJoin<S> {
    fn operator_id(&self) -> &str {
        InnerJoin::operator_id(self)
    }
    fn state_version(&self) -> u32 {
        crate::JOIN_STATE_VERSION
    }
    fn output_schema(&self) -> &SchemaRef {
        InnerJoin::output_schema(self)
    }
    fn snapshot(&self, container: &mut dyn Container) -> Result<SnapshotSummary> {
        InnerJoin::snapshot(self, container)
    }
    fn restore(&mut self, sources: &[&dyn Container]) -> Result<RestoreSummary> {
        InnerJoin::restore(self, sources)
    }
}

impl<S: MapStateStore> TwoInputOperator for InnerJoin<S> {
    fn process_bundle(
        &mut self,
        segments: &[(JoinSide, &ChangelogBatch)],
    ) -> Result<ChangelogBatch> {
        InnerJoin::process_bundle(self, segments)
    }
}
