//! Exit codes: one enum, one place, documented in `--help` and docs/exit-codes.md (SPEC §7).

use std::process::ExitCode;

/// How a command ended, as the process exit code reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Success, or nothing to change.
    Success,
    /// A runtime or Kubernetes API error.
    Failure,
    /// Invalid input (a bad jobs file) or usage.
    Invalid,
    /// `diff` found changes.
    Changes,
    /// A job failed.
    JobFailed,
    /// Timed out waiting.
    TimedOut,
    /// Another apply or daemon holds the lock.
    LockHeld,
    /// Refused by a safety guard.
    Refused,
    /// Interrupted (Ctrl-C).
    Interrupted,
}

impl ExitStatus {
    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Failure => 1,
            Self::Invalid => 2,
            Self::Changes => 3,
            Self::JobFailed => 4,
            Self::TimedOut => 5,
            Self::LockHeld => 6,
            Self::Refused => 7,
            Self::Interrupted => 130,
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(status.code())
    }
}

/// The table printed at the end of `--help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0    success, or nothing to change
  1    runtime or Kubernetes API error
  2    invalid input (jobs file) or usage
  3    `diff` found changes
  4    a job failed
  5    timed out waiting
  6    the lock is held by another apply or daemon
  7    refused by a safety guard
  130  interrupted";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_documented_table() {
        let all = [
            ExitStatus::Success,
            ExitStatus::Failure,
            ExitStatus::Invalid,
            ExitStatus::Changes,
            ExitStatus::JobFailed,
            ExitStatus::TimedOut,
            ExitStatus::LockHeld,
            ExitStatus::Refused,
            ExitStatus::Interrupted,
        ];
        for status in all {
            let line = format!("  {:<5}", status.code());
            assert!(
                EXIT_CODES_HELP.contains(&line),
                "{status:?} missing from the help table"
            );
        }
    }
}
