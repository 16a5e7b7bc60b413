//! `toolforge-jobs apply` (alias `load`): validate, take the lock, plan, print the plan, carry it out (SPEC §7).
//!
//! Exit codes: 0 applied (or nothing to change), 1 API error or a plan that cannot be applied (conflict, quota,
//! limits), 2 invalid file, 4 a `wait` one-off failed (in this apply, or in an earlier one with the definition it
//! still has: the jobs after it are held), 5 timed out waiting, 6 the lock is held, 7 refused by a
//! safety guard (or deletes not confirmed), 130 interrupted.

use std::io::{BufRead as _, IsTerminal as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::apply::Progress;
use crate::cli::planning::{PlanArgs, prepare};
use crate::cli::{Error, GlobalArgs, OutputFormat, diff};
use crate::cluster::lock::{self, Lock};
use crate::output::{ExitStatus, Printer, plan as plan_view, progress};
use crate::pipeline::{self, CarriedOut, CarryOut, Planned, Prepared};
use crate::plan::Action;
use crate::wait;

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The jobs file (upstream `load FILE`); same as `-f FILE`
    #[arg(value_name = "FILE", id = "load_file")]
    pub load_file: Option<PathBuf>,

    #[command(flatten)]
    pub plan: PlanArgs,

    /// Delete the jobs the plan deletes without asking
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Stop after the plan (the server still dry-runs every write)
    #[arg(long)]
    pub dry_run: bool,

    /// Wait until what the apply started has finished: one-offs complete, continuous jobs rolled out (at most
    /// DURATION: `600`, `90s`, `10m`; default 10 minutes)
    #[arg(long, value_name = "DURATION", num_args = 0..=1, default_missing_value = "10m", value_parser = parse_duration)]
    pub wait: Option<Duration>,

    /// How many writes may be in flight at once (inside a stage)
    #[arg(long, value_name = "N", default_value_t = crate::apply::DEFAULT_CONCURRENCY, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,

    /// When another apply or daemon holds the lock, wait for it (at most DURATION: `90s`, `5m`)
    #[arg(long, value_name = "DURATION", num_args = 0..=1, default_missing_value = "10m", value_parser = parse_duration)]
    pub wait_for_lock: Option<Duration>,
}

/// `600`, `90s`, `10m`, `1h 30m`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    if let Ok(seconds) = text.trim().parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let span: jiff::SignedDuration = text.parse().map_err(|_| {
        format!("`{text}` is not a duration: write seconds, or e.g. `90s`, `5m`, `1h`")
    })?;
    Duration::try_from(span).map_err(|_| format!("`{text}` is negative"))
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &ApplyArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let global = &GlobalArgs {
        file: args.load_file.clone().or_else(|| global.file.clone()),
        ..global.clone()
    };
    let mut planned = match prepare(global, &args.plan, args.dry_run, printer).await? {
        Prepared::Planned(planned) => *planned,
        Prepared::Invalid(_) => return Ok(ExitStatus::Invalid),
    };
    // Nothing to write needs no lock: a no-op apply costs what a `diff` does. Otherwise the plan stands under the
    // lock when no apply wrote since it was read (one GET of the inventory); else it is made again.
    let lock_holder = lock::identity("apply");
    let lock = if args.dry_run || !planned.needs_writes() {
        None
    } else {
        pipeline::writable_namespace(&planned.connection, &planned.namespace).await?;
        let lock = lock::acquire(
            &planned.connection.client,
            &planned.namespace,
            &lock_holder,
            args.wait_for_lock,
        )
        .await?;
        if let Err(error) = planned.confirm(&args.plan.settings(false)).await {
            release(lock).await;
            return Err(error.into());
        }
        Some(lock)
    };
    let json = global.output == OutputFormat::Json;
    print_plan(&planned, json, printer)?;
    // From here to the lock's release, Ctrl-C stops the apply instead of killing it (see `interrupts`).
    let reporter = progress::reporter(json, printer);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let interrupts = lock
        .is_some()
        .then(|| tokio::spawn(interrupts(stop, Arc::clone(&reporter), printer)));
    let carrying = Carrying {
        lock_holder: &lock_holder,
        reporter: &reporter,
        stopped,
        lock_lost: lock.as_ref().map(Lock::lost),
        json,
    };
    let mut status = carry_out(&mut planned, carrying, args, printer).await;
    reporter.finish();
    if let Some(lock) = lock {
        // Whoever took the lock over owns the cluster now: what we did not write stays unwritten.
        if lock.is_lost() && status.is_ok() {
            if lock.was_taken_over() {
                printer.message(
                    "error: the lock was taken over by another writer: stopped writing; run `apply` again once \
                     it is done\n",
                )?;
                status = Ok(ExitStatus::LockHeld);
            } else {
                printer.message(&format!(
                    "error: the cluster did not answer the lock's renewals for {} s, so the lock expired: \
                     stopped writing\n",
                    lock::LEASE_DURATION.as_secs()
                ))?;
                status = Ok(ExitStatus::Failure);
            }
        }
        release(lock).await;
    }
    if let Some(interrupts) = interrupts {
        interrupts.abort();
    }
    status
}

/// What carrying out the plan reports to, and is stopped by.
struct Carrying<'a> {
    lock_holder: &'a str,
    reporter: &'a Arc<progress::Reporter>,
    /// Becomes `true` at the first Ctrl-C.
    stopped: tokio::sync::watch::Receiver<bool>,
    /// Becomes `true` when the lock is lost.
    lock_lost: Option<tokio::sync::watch::Receiver<bool>>,
    /// Whether a plan made again is printed as JSON.
    json: bool,
}

impl Carrying<'_> {
    /// Whether Ctrl-C was pressed or the lock lost.
    fn is_stopped(&self) -> bool {
        *self.stopped.borrow() || self.lock_lost.as_ref().is_some_and(|lost| *lost.borrow())
    }
}

/// The plan, as JSON or as the table `diff` shows.
fn print_plan(planned: &Planned, json: bool, printer: Printer) -> Result<(), Error> {
    if json {
        printer.data(&format!(
            "{}\n",
            serde_json::json!({"event": "plan", "plan": planned.plan})
        ))?;
    } else {
        printer.data(&plan_view::render(
            &planned.plan,
            &planned.snapshot.live,
            printer.data_color(),
        ))?;
    }
    Ok(())
}

async fn release(lock: Lock) {
    if let Err(error) = lock.release().await {
        tracing::warn!(%error, "cannot release the lock; it expires by itself");
    }
}

/// Carries the plan out. A write whose precondition failed (409 Conflict: somebody changed the object since it
/// was read) makes the live state read and the plan made again, once, and the new plan carried out: what was
/// written already is unchanged in it, and counts as applied. A second conflict stops the apply.
async fn carry_out(
    planned: &mut Planned,
    carrying: Carrying<'_>,
    args: &ApplyArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let mut planned_again = false;
    let mut applied_before = Vec::new();
    let carried = loop {
        if let Some(status) = stops_before_writing(planned, args, printer)? {
            return Ok(status);
        }
        let stops = std::iter::once(carrying.stopped.clone())
            .chain(carrying.lock_lost.clone())
            .collect();
        let how = CarryOut {
            by: carrying.lock_holder,
            progress: Arc::clone(carrying.reporter) as Arc<dyn Progress>,
            concurrency: usize::from(args.concurrency),
            stops,
            wait: args.wait,
        };
        let result = Box::pin(pipeline::carry_out(planned, how)).await;
        carrying.reporter.finish();
        match result {
            Err(error) if error.is_conflict() && !planned_again && !carrying.is_stopped() => {
                planned_again = true;
                let mut why = vec![error.to_string()];
                why.extend(crate::output::errors::causes(&error));
                printer.message(&format!(
                    "note: {}: it changed since it was read; reading the live state again and planning again\n",
                    why.join(": ")
                ))?;
                let changing = changing_jobs(&planned.plan);
                planned.refresh(&args.plan.settings(false)).await?;
                applied_before = done_since(changing, &planned.plan);
                print_plan(planned, carrying.json, printer)?;
            }
            result => break result?,
        }
    };
    report(planned, &carried, &applied_before, printer)
}

/// The jobs `plan` changes, in its order.
fn changing_jobs(plan: &crate::plan::Plan) -> Vec<String> {
    plan.actions
        .iter()
        .filter(|action| action.action.changes())
        .map(|action| action.job.clone())
        .collect()
}

/// Of the jobs an interrupted plan was changing, those the plan made again finds as they should be: the writes of
/// the first plan that went through (nobody else writes our hash), so the apply changed them.
fn done_since(changing: Vec<String>, again: &crate::plan::Plan) -> Vec<String> {
    changing
        .into_iter()
        .filter(|job| {
            again
                .actions
                .iter()
                .any(|action| action.job == *job && action.action == Action::Unchanged)
        })
        .collect()
}

/// The exit status when the plan is not carried out: a dry run, a refused plan or one with errors, nothing to
/// write, deletes not confirmed.
fn stops_before_writing(
    planned: &Planned,
    args: &ApplyArgs,
    printer: Printer,
) -> Result<Option<ExitStatus>, Error> {
    let plan = &planned.plan;
    if args.dry_run || plan.is_refused() || plan.has_errors() {
        if plan.has_errors() && !plan.is_refused() {
            printer.message("error: the plan cannot be applied; nothing was changed\n")?;
        }
        return Ok(Some(match diff::exit_status(plan) {
            ExitStatus::Changes => ExitStatus::Success,
            other => other,
        }));
    }
    if !planned.needs_writes() {
        if let Some(barrier) = plan.held_by() {
            printer.message(&held_message(barrier))?;
            return Ok(Some(ExitStatus::JobFailed));
        }
        return Ok(Some(ExitStatus::Success));
    }
    let prunes: Vec<&str> = plan
        .actions
        .iter()
        .filter(|action| action.action == Action::Delete)
        .map(|action| action.job.as_str())
        .collect();
    if !prunes.is_empty() && !args.yes && !confirmed(&prunes, printer)? {
        printer.message(&format!(
            "error: not deleting {}; pass `--yes` to confirm\n",
            prunes.join(", ")
        ))?;
        return Ok(Some(ExitStatus::Refused));
    }
    Ok(None)
}

/// Says what carrying the plan out did, and how the apply exits; `applied_before` are the jobs a plan interrupted
/// by a conflict changed before this one was made.
fn report(
    planned: &Planned,
    carried: &CarriedOut,
    applied_before: &[String],
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let plan = &planned.plan;
    let status = exit_status(carried);
    let (applied, unsuccessful) = (&carried.applied, carried.unsuccessful());
    let changed = |job: &str| {
        applied
            .changed
            .iter()
            .chain(applied_before)
            .any(|changed| changed == job)
    };
    let changing: Vec<&str> = plan
        .actions
        .iter()
        .filter(|action| action.action.changes() || applied_before.contains(&action.job))
        .map(|action| action.job.as_str())
        .collect();
    let changed_count = applied.changed.len() + applied_before.len();
    // In the plan's order: the order the writes finished in means nothing to the reader.
    let (done, not_applied): (Vec<&str>, Vec<&str>) = changing.iter().partition(|job| changed(job));
    let message = match &applied.failed_barrier {
        _ if applied.interrupted => {
            interrupted_message(&done, &not_applied, &applied.not_waited_for)
        }
        Some((job, wait::Outcome::TimedOut(_))) => format!(
            "error: `{job}` has `wait` and did not finish in time: the jobs after it were not applied ({}); the \
             next apply waits for it again while it runs\n",
            listed(&not_applied)
        ),
        Some((job, _)) => format!(
            "error: `{job}` has `wait` and did not succeed: the jobs after it were not applied ({}); fix it (a \
             changed definition runs again), or run it again with `--retry-failed` or `--replace {job}`\n",
            listed(&not_applied)
        ),
        None => match plan.held_by() {
            Some(barrier) => held_message(barrier),
            None if !unsuccessful.is_empty() => {
                let jobs: Vec<&str> = unsuccessful.iter().map(String::as_str).collect();
                format!(
                    "error: {} of {} jobs changed, but {} did not succeed (see above)\n",
                    changed_count,
                    plan.actions.len(),
                    listed(&jobs)
                )
            }
            None => format!(
                "applied: {} of {} jobs changed\n",
                changed_count,
                plan.actions.len()
            ),
        },
    };
    printer.message(&message)?;
    // A failed `wait` one-off of an earlier apply holds the jobs after it back: a job failed (SPEC §7).
    match (status, plan.held_by()) {
        (ExitStatus::Success | ExitStatus::TimedOut, Some(_)) if !applied.interrupted => {
            Ok(ExitStatus::JobFailed)
        }
        (status, _) => Ok(status),
    }
}

/// Ctrl-C: the first stops the apply (every wait ends, the writes in flight finish, the lock is released); a
/// second exits at once.
async fn interrupts(
    stop: tokio::sync::watch::Sender<bool>,
    reporter: Arc<progress::Reporter>,
    printer: Printer,
) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    stop.send_replace(true);
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    reporter.finish();
    // Exiting anyway: a message that cannot be written changes nothing.
    let _ = printer.message(&format!(
        "interrupted again: exiting at once; the lock expires by itself within {} s\n",
        lock::LEASE_DURATION.as_secs()
    ));
    std::process::exit(i32::from(ExitStatus::Interrupted.code()));
}

/// What an interrupted apply did and did not do.
fn interrupted_message(done: &[&str], not_applied: &[&str], not_waited_for: &[String]) -> String {
    let mut parts = vec![if done.is_empty() {
        "nothing was applied".to_owned()
    } else {
        format!("applied {}", listed(done))
    }];
    if !not_applied.is_empty() {
        parts.push(format!(
            "not applied: {} (run `apply` again to carry them out)",
            listed(not_applied)
        ));
    }
    if !not_waited_for.is_empty() {
        let jobs: Vec<&str> = not_waited_for.iter().map(String::as_str).collect();
        parts.push(format!(
            "stopped waiting for {}: they go on (`toolforge-jobs wait NAME`)",
            listed(&jobs)
        ));
    }
    format!("interrupted: {}\n", parts.join("; "))
}

/// `a`, `a and b`, `a, b and c`, each in backticks; `no job` for none.
fn listed(jobs: &[&str]) -> String {
    let quoted: Vec<String> = jobs.iter().map(|job| format!("`{job}`")).collect();
    match quoted.split_last() {
        None => "no job".to_owned(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// What a stage of jobs may not do while a `wait` one-off whose last run with its current definition failed.
pub(crate) fn held_message(barrier: &str) -> String {
    format!(
        "error: `{barrier}` has `wait` and its last run with this definition failed: the jobs after it are held \
         and were not applied; fix it (a changed definition runs again), or run it again with `--retry-failed` or \
         `--replace {barrier}`\n"
    )
}

/// How carrying the plan out ended, before a barrier an earlier apply left is looked at.
fn exit_status(carried: &CarriedOut) -> ExitStatus {
    if carried.applied.interrupted {
        ExitStatus::Interrupted
    } else if let Some((_, outcome)) = &carried.applied.failed_barrier {
        crate::cli::wait::outcomes_status([outcome])
    } else if carried.waited {
        crate::cli::wait::outcomes_status(carried.outcomes.values())
    } else {
        ExitStatus::Success
    }
}

/// Asks on a terminal; never confirmed without one.
fn confirmed(jobs: &[&str], printer: Printer) -> Result<bool, Error> {
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    printer.message(&format!("Delete {}? [y/N] ", jobs.join(", ")))?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}
