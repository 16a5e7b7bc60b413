//! toolforge-jobs
