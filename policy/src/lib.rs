//! Scheduling policy mathematics for gridspool.
//!
//! Everything here is a pure function of its inputs: no clock (times are passed in), no files,
//! no randomness except through the [`rng::SplitMix64`] generator a caller seeds. Keeping this a
//! separate crate lets the compiler enforce that: it has no I/O dependencies at all.
//!
//! One module per policy, each citing the document it implements:
//! - [`sge`]: Grid Engine 8.1.9 urgency, POSIX priority, ticket normalisation and the final
//!   priority (`sge_priority(5)`, `sched_conf(5)`).
//! - [`sharetree`]: share-tree tickets with usage decay and compensation (`share_tree(5)`).
//! - [`qube`]: Qube! cluster-tree priority order and preemption choice.
//! - [`fbsng`]: FBSNG dynamic queue and section priorities with gaps.
//! - [`armada`]: Armada multi-resource fair share (slices and dominant-resource fairness).

pub mod armada;
pub mod fbsng;
pub mod qube;
pub mod rng;
pub mod sge;
pub mod sharetree;
