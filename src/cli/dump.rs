//! `toolforge-jobs dump [-f FILE]`: the live jobs as a jobs file, such that applying it changes nothing.
//!
//! Each job is read back from its live object ([`crate::render::read_back`]) and written as the jobs.yaml entry
//! that renders to the same canonical job: the image by its short name, defaults left out where they are the
//! same for every image (`mem`, `cpu`, `emails`, `retry`, the default log paths) and written out where they
//! depend on it (`mount`, `filelog`/`no-filelog`). What the live objects cannot tell — `wait`, `trigger`,
//! `trigger-files` — is not in the dump. Written to `--to-file FILE` (upstream's long flag; its short `-f` is
//! our global `-f FILE`, which names the same file), created or overwritten, else to stdout.

use std::path::PathBuf;

use clap::Args;

use crate::cli::live_jobs::{self, LiveJob};
use crate::cli::{Error, GlobalArgs};
use crate::config::entry::{entry, quoted};
use crate::model::Kind;
use crate::output::{ExitStatus, Printer};
use crate::render::canonical::{DEFAULT_CPU_TEXT, DEFAULT_MEMORY_TEXT};
use crate::render::{CanonicalJob, RenderContext};

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// Write the dump to FILE (as `-f FILE`; this one wins when both are given)
    #[arg(long, value_name = "FILE")]
    pub to_file: Option<PathBuf>,
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &DumpArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let live = live_jobs::read(global).await?;
    let jobs = live.jobs();
    let text = if jobs.is_empty() {
        printer.message("warning: no jobs defined\n")?;
        "[]\n".to_owned()
    } else {
        jobs.iter()
            .map(|job| entry(&pairs(job, &live.context)))
            .collect::<String>()
    };
    match args.to_file.as_ref().or(global.file.as_ref()) {
        Some(path) => {
            std::fs::write(path, &text).map_err(|source| Error::WriteFile {
                path: path.clone(),
                source,
            })?;
            printer.message(&format!(
                "Wrote {} job(s) to {}.\n",
                jobs.len(),
                path.display()
            ))?;
        }
        None => printer.data(&text)?,
    }
    Ok(ExitStatus::Success)
}

/// The keys of `job`'s entry, in the documentation's order.
fn pairs(live: &LiveJob, context: &RenderContext) -> Vec<(&'static str, String)> {
    let job: &CanonicalJob = &live.read_back.job;
    let image = live
        .read_back
        .image_short_name
        .clone()
        .unwrap_or_else(|| live.read_back.live_image.clone());
    let mut pairs = vec![("name", quoted(&job.name))];
    pairs.extend(
        job.command
            .as_deref()
            .map(|command| ("command", quoted(command))),
    );
    pairs.push(("image", quoted(&image)));
    match job.kind {
        Kind::OneOff => {}
        Kind::Scheduled => {
            pairs.extend(
                job.schedule
                    .as_deref()
                    .map(|schedule| ("schedule", quoted(schedule))),
            );
        }
        Kind::Continuous => pairs.push(("continuous", "true".to_owned())),
        Kind::Webservice => pairs.push(("webservice", "true".to_owned())),
    }
    let optional = |key, value: Option<String>| value.map(|value| (key, value));
    pairs.extend(optional("timezone", job.timezone.as_deref().map(quoted)));
    pairs.extend(optional(
        "timeout",
        job.timeout.map(|timeout| timeout.to_string()),
    ));
    pairs.extend(optional(
        "retry",
        job.retry
            .filter(|retry| *retry > 0)
            .map(|retry| retry.to_string()),
    ));
    if job.emails != "none" {
        pairs.push(("emails", quoted(&job.emails)));
    }
    if job.mem != DEFAULT_MEMORY_TEXT {
        pairs.push(("mem", quoted(&job.mem)));
    }
    if job.cpu != DEFAULT_CPU_TEXT {
        pairs.push(("cpu", quoted(&job.cpu)));
    }
    if job.filelog {
        pairs.push(("filelog", "true".to_owned()));
        let home = format!("{}/", context.home);
        for (key, path, suffix) in [
            ("filelog-stdout", &job.filelog_stdout, "out"),
            ("filelog-stderr", &job.filelog_stderr, "err"),
        ] {
            let Some(path) = path else { continue };
            if *path != format!("{home}{}.{suffix}", job.name) {
                pairs.push((key, quoted(path.strip_prefix(&home).unwrap_or(path))));
            }
        }
    } else {
        pairs.push(("no-filelog", "true".to_owned()));
    }
    pairs.push(("mount", quoted(&job.mount)));
    if let Some(port) = job.port {
        let value = match job.port_protocol.as_deref() {
            Some(protocol) if protocol != "tcp" => quoted(&format!("{port}/{protocol}")),
            _ => port.to_string(),
        };
        pairs.push(("port", value));
    }
    pairs.extend(optional(
        "replicas",
        job.replicas.map(|replicas| replicas.to_string()),
    ));
    pairs.extend(optional(
        "health-check-script",
        job.health_check_script.as_deref().map(quoted),
    ));
    pairs.extend(optional(
        "health-check-http",
        job.health_check_http.as_deref().map(quoted),
    ));
    pairs.extend(optional("publish", job.publish.as_deref().map(quoted)));
    pairs
}
