//! The container command upstream builds from a job's command (reference/toolforge.md §3.3).
//!
//! Pre-built images run the command through `/bin/sh -c`, wrapped with `exec 1>>OUT;exec 2>>ERR;` when file
//! logging is on. Build-service images run it through `launcher`: split into words (no shell, so signals reach the
//! process) when file logging is off, inside the same shell wrapper when it is on.

use crate::render::canonical::{CanonicalJob, LAUNCHER, with_launcher};
use crate::render::shell::{self, SplitError};

/// Upstream's shell prefix; the command text follows as the fourth element.
pub const SHELL: [&str; 3] = ["/bin/sh", "-c", "--"];

/// The container's `command`, or `None` for a webservice without a command (the image's entrypoint runs).
pub fn container_command(job: &CanonicalJob) -> Result<Option<Vec<String>>, SplitError> {
    let Some(command) = &job.command else {
        return Ok(None);
    };
    let build_service = job.is_build_service();
    let command = if build_service {
        with_launcher(command)
    } else {
        command.clone()
    };
    let words = match (&job.filelog_stdout, &job.filelog_stderr) {
        (Some(stdout), Some(stderr)) => {
            shell_words(&format!("exec 1>>{stdout};exec 2>>{stderr};{command}"))
        }
        _ if build_service => shell::split(&command)?,
        _ => shell_words(&command),
    };
    Ok(Some(words))
}

/// The `exec` command of a script health check.
pub fn probe_command(script: &str, build_service: bool) -> Result<Vec<String>, SplitError> {
    if build_service {
        let mut words = vec![LAUNCHER.to_owned()];
        words.extend(shell::split(script)?);
        Ok(words)
    } else {
        Ok(["/bin/sh", "-c", script].map(str::to_owned).to_vec())
    }
}

fn shell_words(text: &str) -> Vec<String> {
    SHELL
        .iter()
        .map(|word| (*word).to_owned())
        .chain([text.to_owned()])
        .collect()
}
