//! toolforge-jobs
pub mod config;
