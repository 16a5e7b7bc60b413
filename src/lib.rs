//! toolforge-jobs: declarative jobs for Wikimedia Toolforge.
//!
//! The pipeline, one module per stage:
//! - [`config`]: jobs.yaml text → validated jobs, or every problem with file, line and column;
//! - render, plan, apply/wait and watch follow (see docs/architecture.md);
//! - [`cli`] is the edge: clap definitions and one file per command; [`output`] owns the terminal.
//!
//! Start reading at [`cli::run`].

pub mod cli;
pub mod config;
pub mod output;
pub mod plan;
pub mod render;
