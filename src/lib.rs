//! toolforge-jobs: declarative jobs for Wikimedia Toolforge.
//!
//! The pipeline, one module per stage, over a shared domain model:
//! - [`model`]: the tool, job kinds, label keys and the inventory every stage shares (pure);
//! - [`config`]: jobs.yaml text → validated jobs, or every problem with file, line and column;
//! - [`render`]: a job → the Kubernetes objects (pure), and live objects → jobs (read-back);
//! - [`plan`]: desired jobs + live state + inventory → one action per job (pure);
//! - [`cluster`]: the I/O shell that connects and reads the live state; apply/wait and watch follow (see
//!   docs/architecture.md);
//! - [`pipeline`]: the stages joined as a library, from a loaded file to a plan and its executor;
//! - [`wait`]: the awaiters of `apply --wait`: watch a Job or a Deployment until it succeeded or failed, and report why;
//! - [`cli`] is the edge: clap definitions and one file per command; [`output`] owns the terminal.
//!
//! Start reading at [`cli::run`].

pub mod apply;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod model;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod render;
pub mod serve;
pub mod status;
pub mod wait;
pub mod watch;
