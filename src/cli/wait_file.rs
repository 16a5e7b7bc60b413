//! `toolforge-jobs wait` without a job name (for the jobs file, `-f FILE` or the one `apply` finds) and `status
//! --wait`: wait until the file's current content is in effect, then for what its apply started (SPEC §7, §8).
//!
//! The content is matched by [`inventory::content_hash`] against what the inventory records — the last apply that
//! wrote (`lastApply`) and the `watch` daemon's last reconcile — so a record from before an edit never satisfies
//! the wait: it goes on until the apply or daemon holding the lock has carried the edit out. A complete apply's
//! one-off Jobs (by UID) and Deployment rollouts (by generation) are then awaited as `apply --wait` awaits them.
//!
//! When nobody holds the lock and no record matches, the content may still be in effect (an apply with nothing to
//! change records nothing), so the file is planned once, as `diff` plans it: nothing to write means up to date.
//! Otherwise an `apply` may be about to take the lock; after [`GRACE`] without one the command says that nobody
//! applies the file.
//!
//! The inventory ConfigMap and the Lease are watched (one watch each), not polled; a timer looks at the Lease's
//! expiry, the grace period and the deadline. Exit codes as `apply`'s: 0 in effect (and its jobs succeeded), 1
//! nobody applies it, its apply was interrupted or its plan cannot be applied, 2 invalid, 4 a job failed or a
//! `wait` one-off holds the jobs after it back, 5 timed out, 7 refused by a safety guard.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::{WatchStreamExt as _, watcher};
use tokio::time::Instant;

use crate::apply::{Event, EventKind, Progress as _, Target};
use crate::cli::planning;
use crate::cli::status::lock_state;
use crate::cli::{
    Error, GlobalArgs, OutputFormat, apply, connection, diff, jobs_file, live_jobs, wait,
};
use crate::cluster::lock::LEASE_NAME;
use crate::cluster::{self, Connection};
use crate::config::image::ImageTable;
use crate::model::inventory::{self, ApplyRecord, ApplyResult, Inventory, ReconcileResult};
use crate::output::progress::{self, Reporter};
use crate::output::{ExitStatus, Printer};
use crate::pipeline::{self, PlanSettings, Prepared, Source};
use crate::status::duration;
use crate::wait::{DeploymentTarget, JobTarget, Outcome};

/// How long the lock may stay free, with the cluster not equal to the file, before nobody applies it: time for an
/// `apply` that has planned to take the lock.
const GRACE: Duration = Duration::from_secs(5);

/// How often the Lease's expiry, the grace period and the deadline are looked at between watch events.
const TICK: Duration = Duration::from_millis(500);

/// Waits for the jobs file of `global` (see the module documentation) in set `set_name`, at most `timeout`.
pub(crate) async fn run(
    global: &GlobalArgs,
    set_name: &str,
    timeout: Duration,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let source = planning::locate(global)?;
    let bytes = jobs_file::read(&source.path)?;
    let connection = connection::connect(global).await?;
    let reporter = progress::reporter(global.output == OutputFormat::Json, printer);
    let waiter = Waiter {
        global,
        namespace: source.tool.namespace(),
        row: source.path.display().to_string(),
        hash: inventory::content_hash(&bytes),
        bytes,
        source,
        set_name: set_name.to_owned(),
        connection,
        timeout,
        deadline: Instant::now() + timeout,
        reporter: Arc::clone(&reporter),
        printer,
        last: std::sync::Mutex::new(String::new()),
    };
    let result = Box::pin(waiter.run()).await;
    reporter.finish();
    let (status, message) = result?;
    printer.message(&message)?;
    Ok(status)
}

/// One wait for one file content.
struct Waiter<'a> {
    global: &'a GlobalArgs,
    source: Source,
    bytes: Vec<u8>,
    /// [`inventory::content_hash`] of `bytes`.
    hash: String,
    namespace: String,
    set_name: String,
    connection: Connection,
    /// The progress row of the file: its path.
    row: String,
    timeout: Duration,
    deadline: Instant,
    reporter: Arc<Reporter>,
    printer: Printer,
    /// The last message of the file's row, for the timeout's message and to leave repeated ones out.
    last: std::sync::Mutex<String>,
}

/// What the inventory says about the file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Found {
    /// An apply carried it out.
    Applied(ApplyRecord),
    /// The daemon read it and found nothing to change (or applied it without recording the apply).
    InEffect { by: String },
    /// The daemon read it and found it invalid.
    Invalid { by: String, message: String },
    /// The daemon read it and did not apply it: a safety guard, a conflict, the quota.
    Refused { by: String, message: String },
    /// The daemon's apply of it failed; the daemon tries again.
    Failed { by: String, message: String },
    /// Nothing yet.
    Nothing,
}

/// The object a watch of one name sees.
struct Watched<K> {
    object: Option<K>,
    /// What a (re)list found so far (one object at most: the watch selects one name); the object seen before
    /// stays until the list is done.
    listing: Option<Vec<K>>,
    synced: bool,
}

impl<K> Watched<K> {
    fn new() -> Self {
        Self {
            object: None,
            listing: None,
            synced: false,
        }
    }

    fn see(&mut self, event: watcher::Event<K>) {
        match event {
            watcher::Event::Apply(object) => self.object = Some(object),
            watcher::Event::Delete(_) => self.object = None,
            watcher::Event::Init => self.listing = Some(Vec::new()),
            watcher::Event::InitApply(object) => self.listing.get_or_insert_default().push(object),
            watcher::Event::InitDone => {
                self.object = self
                    .listing
                    .take()
                    .and_then(|listed| listed.into_iter().last());
                self.synced = true;
            }
        }
    }
}

/// An event of one of the two watches.
enum Seen {
    Inventory(Result<watcher::Event<ConfigMap>, watcher::Error>),
    Lease(Result<watcher::Event<Lease>, watcher::Error>),
}

/// What the one plan of a file nobody applies came to.
enum Planned {
    /// The command is done: this status, this message.
    Done(ExitStatus, String),
    /// The plan's fresh read of the inventory has a record of the content (an apply ended in between).
    Found(Found),
    /// The cluster is not equal to the file: `diff`'s exit status (changes, refused, cannot be applied).
    Writes(ExitStatus),
}

impl Waiter<'_> {
    async fn run(&self) -> Result<(ExitStatus, String), Error> {
        let client = &self.connection.client;
        let by_name =
            |name: &str| watcher::Config::default().fields(&format!("metadata.name={name}"));
        let inventories = watcher(
            Api::<ConfigMap>::namespaced(client.clone(), &self.namespace),
            by_name(&self.set_name),
        )
        .default_backoff()
        .map(Seen::Inventory);
        let leases = watcher(
            Api::<Lease>::namespaced(client.clone(), &self.namespace),
            by_name(LEASE_NAME),
        )
        .default_backoff()
        .map(Seen::Lease);
        // A watcher does not end; should it, the timer still decides.
        let seen = futures::stream::select(inventories, leases).chain(futures::stream::pending());
        let mut seen = std::pin::pin!(seen);
        let mut ticks = tokio::time::interval(TICK);
        let (mut config_map, mut lease) = (Watched::new(), Watched::new());
        // When the lock was seen free with the cluster not equal to the file; reset once somebody holds it.
        let mut free_since: Option<Instant> = None;
        self.show(
            EventKind::Started,
            "reading the inventory and the lock".to_owned(),
        );
        loop {
            tokio::select! {
                Some(event) = seen.next() => match event {
                    Seen::Inventory(Ok(event)) => config_map.see(event),
                    Seen::Lease(Ok(event)) => lease.see(event),
                    // The watcher retries with back-off; the deadline bounds a watch that cannot work.
                    Seen::Inventory(Err(error)) | Seen::Lease(Err(error)) => {
                        self.show(EventKind::Waiting, format!("cannot watch, retrying: {error}"));
                    }
                },
                _ = ticks.tick() => {}
                () = tokio::time::sleep_until(self.deadline) => return Ok(self.timed_out()),
            }
            if !(config_map.synced && lease.synced) {
                continue;
            }
            let inventory = self.inventory(config_map.object.as_ref()).await?;
            match judge(inventory.as_ref(), &self.hash) {
                Found::Nothing => {}
                Found::Failed { by, message } => self.show(
                    EventKind::Waiting,
                    format!("{by} failed to apply this content, and tries again: {message}"),
                ),
                found => return self.conclude(found).await,
            }
            let now = jiff::Timestamp::now();
            let holder = lease
                .object
                .as_ref()
                .map(|lease| lock_state(lease, now))
                .filter(|lock| !lock.expired);
            if let Some(lock) = holder {
                free_since = None;
                self.show(
                    EventKind::Waiting,
                    format!("waiting for {} to apply this content", lock.holder),
                );
                continue;
            }
            match free_since {
                None => match Box::pin(self.plan()).await? {
                    Planned::Done(status, message) => return Ok((status, message)),
                    Planned::Found(found) => return self.conclude(found).await,
                    Planned::Writes(_) => {
                        free_since = Some(Instant::now());
                        self.show(
                            EventKind::Waiting,
                            "nobody holds the lock, and the cluster is not equal to this content: waiting \
                             for an apply to take the lock"
                                .to_owned(),
                        );
                    }
                },
                Some(since) if since.elapsed() >= GRACE => {
                    self.show(
                        EventKind::Failed,
                        "nobody is applying this content".to_owned(),
                    );
                    return Ok((
                        ExitStatus::Failure,
                        format!(
                            "error: nobody is applying `{}`: no apply or `watch` holds the lock, and the cluster is \
                             not equal to the file; run `toolforge-jobs apply`, or start `toolforge-jobs watch`\n",
                            self.row
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
    }

    /// The inventory whose set ConfigMap is `config_map`, if there is one.
    async fn inventory(&self, config_map: Option<&ConfigMap>) -> Result<Option<Inventory>, Error> {
        let api = Api::namespaced(self.connection.client.clone(), &self.namespace);
        let stored =
            cluster::inventory::load(&api, &self.namespace, &self.set_name, config_map.cloned())
                .await?;
        Ok(stored.map(|stored| stored.inventory))
    }

    /// Sets the file's row, unless it says so already.
    fn show(&self, kind: EventKind, message: String) {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *last == message {
            return;
        }
        last.clone_from(&message);
        drop(last);
        self.reporter.event(Event::new(&self.row, kind, message));
    }

    fn timed_out(&self) -> (ExitStatus, String) {
        let last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        self.show(EventKind::Failed, "timed out".to_owned());
        (
            ExitStatus::TimedOut,
            format!(
                "timed out {} seconds waiting for this content of `{}` to be applied; last: {last}\n",
                self.timeout.as_secs(),
                self.row
            ),
        )
    }

    /// Plans the file once, as `diff` does without the server's dry run (see the module documentation).
    async fn plan(&self) -> Result<Planned, Error> {
        self.show(
            EventKind::Step,
            "nobody holds the lock: planning this content".to_owned(),
        );
        let file = match self.source.load(
            &self.bytes,
            &ImageTable::bundled(),
            false,
            self.printer.color(),
        ) {
            Ok(file) => file,
            Err(problems) => {
                self.show(EventKind::Failed, "the file is invalid".to_owned());
                return Ok(Planned::Done(ExitStatus::Invalid, problems));
            }
        };
        let prepared = pipeline::plan(
            self.connection.clone(),
            self.source.clone(),
            &self.bytes,
            file,
            &PlanSettings::of_set(&self.set_name),
            self.printer.color(),
        )
        .await?;
        let planned = match prepared {
            Prepared::Planned(planned) => planned,
            Prepared::Invalid(problems) => {
                self.show(EventKind::Failed, "the file is invalid".to_owned());
                return Ok(Planned::Done(ExitStatus::Invalid, problems));
            }
        };
        // An apply that ended between the watch's last event and the plan's read recorded itself there.
        let stored = planned
            .snapshot
            .inventory
            .as_ref()
            .map(|stored| &stored.inventory);
        let found = judge(stored, &self.hash);
        if !matches!(found, Found::Nothing | Found::Failed { .. }) {
            return Ok(Planned::Found(found));
        }
        let plan = &planned.plan;
        if planned.differs() || plan.is_refused() || plan.has_errors() {
            return Ok(Planned::Writes(diff::exit_status(plan)));
        }
        if let Some(barrier) = plan.held_by() {
            self.show(EventKind::Failed, format!("held back by `{barrier}`"));
            return Ok(Planned::Done(
                ExitStatus::JobFailed,
                apply::held_message(barrier),
            ));
        }
        self.show(EventKind::Succeeded, "up to date".to_owned());
        Ok(Planned::Done(
            ExitStatus::Success,
            format!("`{}` is up to date: nothing to apply\n", self.row),
        ))
    }

    /// The end of the wait once the inventory has a record of the content.
    async fn conclude(&self, found: Found) -> Result<(ExitStatus, String), Error> {
        match found {
            Found::Applied(record) => Box::pin(self.applied(&record)).await,
            Found::InEffect { by } => {
                self.show(EventKind::Succeeded, format!("in effect ({by})"));
                Ok((
                    ExitStatus::Success,
                    format!(
                        "`{}` is in effect: {by} found nothing to change\n",
                        self.row
                    ),
                ))
            }
            Found::Invalid { by, message } => {
                self.show(EventKind::Failed, format!("invalid: {message}"));
                Ok((
                    ExitStatus::Invalid,
                    format!(
                        "error: {by} did not apply `{}`: {message}; `toolforge-jobs validate` says why\n",
                        self.row
                    ),
                ))
            }
            Found::Refused { by, message } => {
                self.show(EventKind::Failed, format!("not applied: {message}"));
                // The daemon's record does not say which; the plan does (`apply` exits the same way).
                let status = match Box::pin(self.plan()).await? {
                    Planned::Done(status, message) => return Ok((status, message)),
                    Planned::Writes(ExitStatus::Failure) => ExitStatus::Failure,
                    Planned::Writes(_) | Planned::Found(_) => ExitStatus::Refused,
                };
                Ok((
                    status,
                    format!(
                        "error: {by} did not apply `{}`, nothing was changed: {message}; `toolforge-jobs diff` \
                         shows the plan\n",
                        self.row
                    ),
                ))
            }
            Found::Failed { .. } | Found::Nothing => Ok(self.timed_out()),
        }
    }

    /// The content was carried out by the apply `record`: its end, or what it started.
    async fn applied(&self, record: &ApplyRecord) -> Result<(ExitStatus, String), Error> {
        let when = format!(
            "by {} {} ago",
            record.by,
            duration(record.at, jiff::Timestamp::now())
        );
        match &record.result {
            ApplyResult::Held { barrier } => {
                self.show(
                    EventKind::Failed,
                    format!("held back by `{barrier}` ({when})"),
                );
                return Ok((ExitStatus::JobFailed, apply::held_message(barrier)));
            }
            ApplyResult::Interrupted => {
                self.show(EventKind::Failed, format!("interrupted ({when})"));
                return Ok((
                    ExitStatus::Failure,
                    format!(
                        "error: the apply of this content of `{}` ({when}) was interrupted before it carried all \
                         of it out; run `toolforge-jobs apply` again\n",
                        self.row
                    ),
                ));
            }
            ApplyResult::Complete => {}
        }
        self.show(
            EventKind::Succeeded,
            format!("applied {when}: {} job(s) changed", record.changed.len()),
        );
        let targets = self.targets(record).await?;
        let outcomes =
            futures::future::join_all(targets.iter().map(|target| self.wait_one(target)))
                .await
                .into_iter()
                .collect::<Result<Vec<Outcome>, _>>()?;
        let status = wait::outcomes_status(&outcomes);
        let message = match status {
            ExitStatus::Success => {
                format!("`{}` is applied ({when}) and its jobs are done\n", self.row)
            }
            ExitStatus::TimedOut => format!(
                "`{}` is applied ({when}); timed out {} seconds waiting for its jobs\n",
                self.row,
                self.timeout.as_secs()
            ),
            _ => format!(
                "error: `{}` is applied ({when}), and a job failed\n",
                self.row
            ),
        };
        Ok((status, message))
    }

    /// What the apply `record` started, as `apply --wait` waits for it; a job's file log is read back from its
    /// live object (only when there is something to wait for).
    async fn targets(&self, record: &ApplyRecord) -> Result<Vec<Target>, Error> {
        if record.started.is_empty() && record.rollouts.is_empty() {
            return Ok(Vec::new());
        }
        let live = live_jobs::read(self.global).await?;
        let jobs = live.jobs();
        let file_log = |name: &str| {
            jobs.iter()
                .find(|job| job.name() == name)
                .and_then(wait::file_log)
        };
        let started = record.started.iter().map(|(job, uid)| {
            Target::Job(JobTarget {
                job: job.clone(),
                namespace: self.namespace.clone(),
                name: job.clone(),
                uid: uid.clone(),
                file_log: file_log(job),
            })
        });
        let rollouts = record.rollouts.iter().map(|(job, rollout)| {
            Target::Deployment(DeploymentTarget {
                job: job.clone(),
                namespace: self.namespace.clone(),
                name: job.clone(),
                uid: rollout.uid.clone(),
                generation: rollout.generation,
                file_log: file_log(job),
            })
        });
        Ok(started.chain(rollouts).collect())
    }

    async fn wait_one(&self, target: &Target) -> Result<Outcome, Error> {
        let client = &self.connection.client;
        let job = target.job().to_owned();
        let mut progress = |progress: &crate::wait::WaitProgress| {
            self.reporter
                .event(Event::new(&job, EventKind::Waiting, progress.summary()));
        };
        let outcome = match target {
            Target::Job(target) => {
                Box::pin(crate::wait::job(
                    client,
                    target,
                    self.deadline,
                    &mut progress,
                ))
                .await?
            }
            Target::Deployment(target) => {
                Box::pin(crate::wait::deployment(
                    client,
                    target,
                    self.deadline,
                    &mut progress,
                ))
                .await?
            }
        };
        let (kind, message) = crate::apply::outcome_event(target, &outcome);
        self.reporter.event(Event::new(&job, kind, message));
        Ok(outcome)
    }
}

/// What the inventory records of the content hashed `hash`. The last apply that wrote decides, unless the daemon
/// read the same content later and could not apply it (the cluster changed since: its image table, the quota).
fn judge(inventory: Option<&Inventory>, hash: &str) -> Found {
    let Some(inventory) = inventory else {
        return Found::Nothing;
    };
    let applied = inventory
        .last_apply
        .as_ref()
        .filter(|record| record.file_hash == hash);
    let reconciled = inventory.daemon.as_ref().and_then(|daemon| {
        daemon
            .last_reconcile
            .as_ref()
            .filter(|reconcile| reconcile.file_hash.as_deref() == Some(hash))
            .map(|reconcile| (daemon.holder.clone(), reconcile))
    });
    let later = |at: jiff::Timestamp| applied.is_none_or(|record| record.at < at);
    match (applied, reconciled) {
        (_, Some((by, reconcile))) if later(reconcile.at) => {
            let message = reconcile.message.clone();
            match reconcile.result {
                ReconcileResult::InvalidFile => Found::Invalid { by, message },
                ReconcileResult::Refused => Found::Refused { by, message },
                ReconcileResult::Failed => Found::Failed { by, message },
                ReconcileResult::Applied | ReconcileResult::Unchanged => match applied {
                    Some(record) => Found::Applied(record.clone()),
                    None => Found::InEffect { by },
                },
            }
        }
        (Some(record), _) => Found::Applied(record.clone()),
        (None, _) => Found::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::inventory::{DaemonStatus, Reconcile};

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(seconds).unwrap()
    }

    fn record(hash: &str, seconds: i64) -> ApplyRecord {
        ApplyRecord {
            at: at(seconds),
            by: "apply by me@host (pid 1)".to_owned(),
            file_hash: hash.to_owned(),
            changed: vec!["bot".to_owned()],
            started: BTreeMap::new(),
            rollouts: BTreeMap::new(),
            result: ApplyResult::Complete,
        }
    }

    fn with(
        last_apply: Option<ApplyRecord>,
        reconcile: Option<(&str, i64, ReconcileResult)>,
    ) -> Inventory {
        Inventory {
            last_apply,
            daemon: reconcile.map(|(hash, seconds, result)| DaemonStatus {
                holder: "watch by me@host (pid 2)".to_owned(),
                started: at(0),
                stopped: None,
                last_reconcile: Some(Reconcile {
                    at: at(seconds),
                    trigger: "file".to_owned(),
                    file_hash: Some(hash.to_owned()),
                    result,
                    message: "why".to_owned(),
                }),
                last_error: None,
                jobs: Vec::new(),
            }),
            ..Inventory::default()
        }
    }

    #[test]
    fn only_a_record_of_this_content_counts() {
        assert_eq!(judge(None, "new"), Found::Nothing);
        let before_the_edit = with(
            Some(record("old", 10)),
            Some(("old", 11, ReconcileResult::Applied)),
        );
        assert_eq!(judge(Some(&before_the_edit), "new"), Found::Nothing);
        let applied = with(
            Some(record("new", 10)),
            Some(("new", 11, ReconcileResult::Applied)),
        );
        assert_eq!(
            judge(Some(&applied), "new"),
            Found::Applied(record("new", 10))
        );
        let by_apply = with(
            Some(record("new", 10)),
            Some(("old", 11, ReconcileResult::Unchanged)),
        );
        assert_eq!(
            judge(Some(&by_apply), "new"),
            Found::Applied(record("new", 10))
        );
    }

    #[test]
    fn the_daemons_later_reading_of_the_same_content_decides() {
        let unchanged = with(
            Some(record("old", 10)),
            Some(("new", 11, ReconcileResult::Unchanged)),
        );
        assert!(matches!(
            judge(Some(&unchanged), "new"),
            Found::InEffect { .. }
        ));
        let refused = with(
            Some(record("new", 10)),
            Some(("new", 11, ReconcileResult::Refused)),
        );
        assert!(matches!(
            judge(Some(&refused), "new"),
            Found::Refused { .. }
        ));
        let invalid = with(None, Some(("new", 11, ReconcileResult::InvalidFile)));
        assert!(matches!(
            judge(Some(&invalid), "new"),
            Found::Invalid { .. }
        ));
        let retrying = with(None, Some(("new", 11, ReconcileResult::Failed)));
        assert!(matches!(
            judge(Some(&retrying), "new"),
            Found::Failed { .. }
        ));
        // An apply after the daemon's failure carried it out.
        let applied_since = with(
            Some(record("new", 12)),
            Some(("new", 11, ReconcileResult::Failed)),
        );
        assert_eq!(
            judge(Some(&applied_since), "new"),
            Found::Applied(record("new", 12))
        );
    }
}
