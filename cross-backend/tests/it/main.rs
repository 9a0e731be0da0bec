//! State moves between the two backends: the cross-backend cases of the `state-api`
//! conformance suite, with the backends' `test-util` factories.

mod keyed;
mod map_timer;
