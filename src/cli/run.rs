//! `toolforge-jobs run NAME --command … --image … [flags]`: upstream's imperative `run`.
//!
//! The flags become the equivalent jobs.yaml entry, which goes through the loader: the rules and messages are
//! exactly those of a jobs file (a problem points at the flag's line in the generated entry, which is printed with
//! it). The job is rendered as `apply` renders it and created WITHOUT inventory labels ([`plan::imperative::create`],
//! carried out as `apply` carries out its plans, under the tool's lock): it belongs to no file, so `apply` lists it
//! as `ignored` and never prunes it. A name already taken by any Job, CronJob, Deployment or
//! Service is refused. `--wait[=SECONDS]` then waits as `wait NAME` does (exit 4 failed, 5 timed out).

use std::time::Duration;

use clap::Args;

use crate::apply::Applied;
use crate::cli::apply::parse_duration;
use crate::cli::live_jobs;
use crate::cli::wait::{Awaited, await_one};
use crate::cli::{Error, GlobalArgs};
use crate::config::diagnostic::render as render_problems;
use crate::config::entry::{entry, quoted};
use crate::config::{self, Context};
use crate::output::{ExitStatus, Printer};
use crate::plan;
use crate::render::{self, Rendered, Workload};
use crate::wait::{DeploymentTarget, JobTarget};

/// Upstream's `run` flags; each is the jobs.yaml key of the same name. Upstream's `-o` for `--filelog-stdout` is
/// not one of them: `-o` is the global `--output` (docs/migrating.md).
#[derive(Debug, Args)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "one field per upstream flag, and clap parses each of them alone"
)]
pub struct RunArgs {
    /// The job's name (default for `--webservice`: `webservice`)
    #[arg(value_parser = crate::cli::job_name, required_unless_present = "webservice")]
    pub name: Option<String>,
    /// The command to run (optional for `--webservice`)
    #[arg(long, required_unless_present = "webservice")]
    pub command: Option<String>,
    /// The image: a short name from `toolforge-jobs images`, or a build-service image
    #[arg(long)]
    pub image: String,
    /// Run on this cron schedule (a scheduled job)
    #[arg(long, conflicts_with_all = ["continuous", "webservice"])]
    pub schedule: Option<String>,
    /// Keep it running (a continuous job)
    #[arg(long, conflicts_with = "webservice")]
    pub continuous: bool,
    /// Run a webservice job (upstream's newest kind)
    #[arg(long)]
    pub webservice: bool,
    /// Expose a continuous job at `https://<tool>.toolforge.org/` (the only path is `/`)
    #[arg(long, num_args = 0..=1, default_missing_value = "/", value_parser = ["/"])]
    pub publish: Option<String>,
    /// Memory, e.g. `1Gi`
    #[arg(long)]
    pub mem: Option<String>,
    /// CPU, e.g. `0.5`
    #[arg(long)]
    pub cpu: Option<String>,
    /// Emails to send: none, all, onfinish, onfailure
    #[arg(long)]
    pub emails: Option<String>,
    /// Retries of a failed one-off or scheduled run (0–5)
    #[arg(long)]
    pub retry: Option<u32>,
    /// Mount NFS storage: all or none
    #[arg(long)]
    pub mount: Option<String>,
    /// Log to files in the tool's home
    #[arg(long, conflicts_with = "no_filelog")]
    pub filelog: bool,
    /// Do not log to files
    #[arg(long)]
    pub no_filelog: bool,
    /// The file stdout goes to
    #[arg(long, value_name = "PATH")]
    pub filelog_stdout: Option<String>,
    /// The file stderr goes to
    #[arg(short = 'e', long, value_name = "PATH")]
    pub filelog_stderr: Option<String>,
    /// The port a continuous job listens on (`8000`, `8000/udp`; a webservice's protocol is ignored)
    #[arg(short = 'p', long)]
    pub port: Option<String>,
    /// How many pods a continuous job runs
    #[arg(long)]
    pub replicas: Option<u32>,
    /// A health check command for a continuous job
    #[arg(long, value_name = "COMMAND", conflicts_with = "health_check_http")]
    pub health_check_script: Option<String>,
    /// A health check HTTP path for a continuous job with a port
    #[arg(long, value_name = "PATH")]
    pub health_check_http: Option<String>,
    /// Seconds a run may take
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Wait until the job completed (at most SECONDS; default 600)
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "600", value_parser = parse_duration)]
    pub wait: Option<Duration>,
}

impl RunArgs {
    /// The jobs.yaml entry the flags stand for, one key per line, values quoted as JSON strings (so that no flag
    /// value can change the document's structure) except numbers and booleans.
    fn yaml(&self) -> String {
        let mut entries: Vec<(&str, String)> = vec![("name", quoted(self.name()))];
        entries.extend(
            self.command
                .as_deref()
                .map(|command| ("command", quoted(command))),
        );
        entries.push(("image", quoted(&self.image)));
        let strings = [
            ("schedule", &self.schedule),
            ("mem", &self.mem),
            ("cpu", &self.cpu),
            ("emails", &self.emails),
            ("mount", &self.mount),
            ("filelog-stdout", &self.filelog_stdout),
            ("filelog-stderr", &self.filelog_stderr),
            ("health-check-script", &self.health_check_script),
            ("health-check-http", &self.health_check_http),
            ("publish", &self.publish),
        ];
        entries.extend(
            strings
                .into_iter()
                .filter_map(|(key, value)| value.as_deref().map(|value| (key, quoted(value)))),
        );
        let numbers = [
            ("retry", self.retry.map(u64::from)),
            ("replicas", self.replicas.map(u64::from)),
            ("timeout", self.timeout),
        ];
        entries.extend(
            numbers
                .into_iter()
                .filter_map(|(key, value)| value.map(|value| (key, value.to_string()))),
        );
        if let Some(port) = &self.port {
            // As upstream, a webservice's port has no protocol: `8000/udp` is port 8000.
            let port = match port.split_once('/') {
                Some((number, _)) if self.webservice => number,
                _ => port,
            };
            let value = port
                .parse::<u16>()
                .map_or_else(|_| quoted(port), |port| port.to_string());
            entries.push(("port", value));
        }
        for (key, set) in [
            ("continuous", self.continuous),
            ("webservice", self.webservice),
            ("filelog", self.filelog),
            ("no-filelog", self.no_filelog),
        ] {
            if set {
                entries.push((key, "true".to_owned()));
            }
        }
        entry(&entries)
    }

    /// The job's name: as given, else upstream's default for a webservice.
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("webservice")
    }
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &RunArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let live = live_jobs::read(global).await?;
    let yaml = args.yaml();
    let context = Context {
        tool: live.context.tool.as_str(),
        images: &live.context.images,
        count_trigger_files: None,
    };
    let loaded = config::decode("the `run` flags".to_owned(), yaml.clone().into_bytes())
        .and_then(|source| config::load(source, &context));
    let file = match loaded {
        Ok(file) => file,
        Err(invalid) => {
            printer.message(&render_problems(
                &invalid.source,
                &invalid.problems,
                printer.color(),
            ))?;
            return Ok(ExitStatus::Invalid);
        }
    };
    let Some(located) = file.jobs.first() else {
        return Ok(ExitStatus::Invalid);
    };
    let job = &located.job;
    if live.name_taken(&job.name) {
        return Err(Error::JobExists {
            name: job.name.clone(),
        });
    }
    let rendered = render::objects(job, &live.context)?;
    let plan = plan::imperative::create(&job.name, &rendered, &live.snapshot.live);
    let applied = live_jobs::carry_out(&live, "run", vec![live.in_default_set(plan)]).await?;
    let awaited = awaited(&job.name, &rendered, applied.first(), &live.namespace);
    printer.message(&format!("Created job '{}'.\n", job.name))?;
    match (args.wait, awaited) {
        (Some(timeout), Some(awaited)) => {
            let deadline = tokio::time::Instant::now() + timeout;
            await_one(
                &live.connection.client,
                &awaited,
                deadline,
                timeout,
                printer,
            )
            .await
        }
        (Some(_), None) => {
            printer.message(
                "A scheduled job runs on its schedule: there is nothing to wait for now.\n",
            )?;
            Ok(ExitStatus::Success)
        }
        (None, _) => Ok(ExitStatus::Success),
    }
}

/// What `--wait` waits for: the Job or Deployment `run` created; a scheduled job has nothing to wait for.
fn awaited(
    job: &str,
    rendered: &Rendered,
    applied: Option<&Applied>,
    namespace: &str,
) -> Option<Awaited> {
    let file_log = rendered
        .canonical
        .filelog_stderr
        .clone()
        .map(std::path::PathBuf::from);
    match rendered.workload {
        Workload::Job(_) => Some(Awaited::Job(JobTarget {
            job: job.to_owned(),
            namespace: namespace.to_owned(),
            name: job.to_owned(),
            uid: applied
                .and_then(|applied| applied.started_jobs.get(job))
                .cloned()
                .unwrap_or_default(),
            file_log,
        })),
        Workload::CronJob(_) => None,
        Workload::Deployment(_) => {
            let (uid, generation) = applied
                .and_then(|applied| applied.deployments.get(job))
                .cloned()
                .unwrap_or_default();
            Some(Awaited::Deployment(DeploymentTarget {
                job: job.to_owned(),
                namespace: namespace.to_owned(),
                name: job.to_owned(),
                uid,
                generation,
                file_log,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        run: RunArgs,
    }

    #[test]
    fn flags_become_a_quoted_jobs_yaml_entry() {
        let command = Command::parse_from([
            "run",
            "bot",
            "--command",
            "./bot.py --name \"x\"",
            "--image",
            "python3.11",
            "--continuous",
            "--port",
            "8000",
            "--replicas",
            "2",
            "--no-filelog",
        ]);
        assert_eq!(
            command.run.yaml(),
            "- name: \"bot\"\n  command: \"./bot.py --name \\\"x\\\"\"\n  image: \"python3.11\"\n  replicas: 2\n  \
             port: 8000\n  continuous: true\n  no-filelog: true\n"
        );
    }

    #[test]
    fn a_webservice_needs_no_name_nor_command_and_its_port_no_protocol() {
        let command = Command::parse_from([
            "run",
            "--image",
            "python3.11",
            "--webservice",
            "-p",
            "8000/udp",
            "-e",
            "errors.log",
        ]);
        assert_eq!(
            command.run.yaml(),
            "- name: \"webservice\"\n  image: \"python3.11\"\n  filelog-stderr: \"errors.log\"\n  port: 8000\n  \
             webservice: true\n"
        );
        assert!(
            Command::try_parse_from(["run", "--image", "python3.11", "--command", "x"]).is_err()
        );
    }

    #[test]
    fn publish_defaults_to_the_root() {
        let command = Command::parse_from([
            "run",
            "web",
            "--command",
            "x",
            "--image",
            "python3.11",
            "--continuous",
            "--port",
            "8000",
            "--publish",
        ]);
        assert!(command.run.yaml().contains("  publish: \"/\"\n"));
        assert!(
            Command::try_parse_from([
                "run",
                "web",
                "--command",
                "x",
                "--image",
                "i",
                "--publish",
                "/x"
            ])
            .is_err()
        );
    }
}
