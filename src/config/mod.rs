//! The `jobs.yaml` configuration: how its values are read and validated.
pub mod schedule;
