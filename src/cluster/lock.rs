//! The per-tool lock (SPEC §6): a `coordination.k8s.io/v1` Lease that `apply` and the `watch` daemon hold while
//! they write, renewed in the background, released on exit, taken over once expired.
//!
//! Every step is a compare-and-swap on the Lease's resourceVersion, so two writers racing for it cannot both win.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::{WatchStreamExt as _, watcher};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{FIELD_MANAGER, is_conflict, is_not_found, retry};

/// The Lease's name in the tool's namespace.
pub const LEASE_NAME: &str = "toolforge-jobs";

/// How long a holder that stops renewing keeps the lock.
pub const LEASE_DURATION: Duration = Duration::from_secs(60);

/// How often a holder renews (a third of the duration, as leader election does).
const RENEW_EVERY: Duration = Duration::from_secs(20);

/// How often a writer waiting for the lock (`--wait-for-lock`) looks again.
const RETRY_EVERY: Duration = Duration::from_secs(1);

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "the lock of namespace `{namespace}` is held by {holder} (taken {age} ago, expires in {expires_in} unless renewed); wait for it to finish, or pass `--wait-for-lock`"
    )]
    Held {
        namespace: String,
        holder: String,
        age: String,
        expires_in: String,
    },
    #[error("cannot take the lock (Lease `{namespace}/{LEASE_NAME}`)")]
    Api {
        namespace: String,
        #[source]
        source: kube::Error,
    },
}

/// A held lock; renewed until [`Lock::release`] (or the process ends, after which it expires).
pub struct Lock {
    api: Api<Lease>,
    /// The Lease as we last wrote it: renewing and releasing are guarded by its resourceVersion.
    held: Arc<Mutex<Lease>>,
    stop: watch::Sender<bool>,
    /// Becomes `true` when the lock is lost (see [`Lock::lost`]).
    lost: watch::Receiver<bool>,
    /// Set when it was lost to somebody else, not to renewals that failed until it expired.
    taken_over: Arc<std::sync::atomic::AtomicBool>,
    renewer: JoinHandle<()>,
}

/// Who we are, for the holder field and the messages of those who wait: `apply by me@host (pid 42)`.
pub fn identity(purpose: &str) -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "someone".to_owned());
    format!(
        "{purpose} by {user}@{} (pid {})",
        hostname(),
        std::process::id()
    )
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "localhost".to_owned(), |name| name.trim().to_owned())
}

/// Whether `holder` is a process of this machine that no longer runs (killed with SIGKILL, crashed, or a zombie
/// its parent has not reaped): its lock need not be waited out. A process of another user is alive: signalling
/// it is refused (EPERM), it is not gone.
fn is_dead_local_holder(holder: &str, host: &str) -> bool {
    let Some((who, pid)) = holder
        .strip_suffix(')')
        .and_then(|rest| rest.rsplit_once(" (pid "))
    else {
        return false;
    };
    let on_this_host = who
        .rsplit_once('@')
        .is_some_and(|(_, holder_host)| holder_host == host);
    let Some(pid) = pid.parse().ok().and_then(rustix::process::Pid::from_raw) else {
        return false;
    };
    on_this_host
        && (rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
            || is_zombie(pid))
}

/// Whether `pid` has exited and waits to be reaped (state `Z` in `/proc/<pid>/stat`).
fn is_zombie(pid: rustix::process::Pid) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())) else {
        return false;
    };
    // `pid (comm) state …`: the command may hold spaces and parentheses, the state follows the last `)`.
    stat.rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

/// Takes the lock of `namespace` for `identity`; when it is held, waits up to `wait` for it.
pub async fn acquire(
    client: &kube::Client,
    namespace: &str,
    identity: &str,
    wait: Option<Duration>,
) -> Result<Lock, LockError> {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let deadline = wait.map(|wait| tokio::time::Instant::now() + wait);
    let api_error = |source| LockError::Api {
        namespace: namespace.to_owned(),
        source,
    };
    let params = post_params();
    let written = loop {
        let now = jiff::Timestamp::now();
        let result = match api.get_opt(LEASE_NAME).await.map_err(api_error)? {
            None => {
                api.create(&post_params(), &lease(identity, now, None))
                    .await
            }
            Some(current) => match held_by_other(&current, identity, now) {
                None => {
                    let mut taken = lease(identity, now, Some(&current));
                    taken.metadata.resource_version = current.metadata.resource_version.clone();
                    retry::transient("update", || api.replace(LEASE_NAME, &params, &taken)).await
                }
                Some(held) => {
                    if let Some(deadline) = deadline
                        && tokio::time::Instant::now() < deadline
                    {
                        tracing::info!(holder = %held.holder, "waiting for the lock");
                        tokio::time::sleep(RETRY_EVERY).await;
                        continue;
                    }
                    return Err(LockError::Held {
                        namespace: namespace.to_owned(),
                        holder: held.holder,
                        age: short(held.age),
                        expires_in: short(held.expires_in),
                    });
                }
            },
        };
        match result {
            Ok(written) => break written,
            // Somebody else wrote the Lease between our read and our write: look again.
            Err(error) if is_conflict(&error) => {}
            Err(source) => return Err(api_error(source)),
        }
    };
    let held = Arc::new(Mutex::new(written));
    let (stop, stopped) = watch::channel(false);
    let (report_loss, lost) = watch::channel(false);
    let taken_over = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let on_loss = Loss {
        report: report_loss,
        taken_over: Arc::clone(&taken_over),
    };
    let renewer = tokio::spawn(renew(api.clone(), Arc::clone(&held), stopped, on_loss));
    Ok(Lock {
        api,
        held,
        stop,
        lost,
        taken_over,
        renewer,
    })
}

impl Lock {
    /// Whether the lock is lost: somebody else changed the Lease, or our renewals failed until it expired (then
    /// anyone may have taken it). The holder of a lost lock must stop writing at once.
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Becomes `true` when the lock is lost, to stop an executor with.
    pub fn lost(&self) -> watch::Receiver<bool> {
        self.lost.clone()
    }

    /// Whether the lock was lost to somebody else (else: the cluster did not answer our renewals until it
    /// expired).
    pub fn was_taken_over(&self) -> bool {
        self.taken_over.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stops renewing and deletes the Lease if it is still as we last wrote it (a conflict means somebody took
    /// it over after it expired: theirs now).
    pub async fn release(self) -> Result<(), kube::Error> {
        let _ = self.stop.send(true);
        let _ = self.renewer.await;
        let metadata = lock_held(&self.held).metadata.clone();
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: metadata.resource_version,
                uid: metadata.uid,
            }),
            ..DeleteParams::default()
        };
        match self.api.delete(LEASE_NAME, &params).await {
            Ok(_) => Ok(()),
            Err(error) if is_conflict(&error) || is_not_found(&error) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

/// Renews the Lease every [`RENEW_EVERY`] until told to stop, guarded by the resourceVersion we last wrote. Gives
/// up, saying the lock is `lost`, when somebody else changed it — seen at once by a watch of the Lease, or at the
/// next renewal — or when renewals failed until it expired.
async fn renew(
    api: Api<Lease>,
    held: Arc<Mutex<Lease>>,
    mut stopped: watch::Receiver<bool>,
    lost: Loss,
) {
    let identity = holder(&lock_held(&held)).map(str::to_owned);
    let config = watcher::Config::default().fields(&format!("metadata.name={LEASE_NAME}"));
    let mut changes = std::pin::pin!(watcher::watcher(api.clone(), config).default_backoff());
    let mut renewed_at = tokio::time::Instant::now();
    let mut next_renewal = renewed_at + RENEW_EVERY;
    loop {
        let expires = renewed_at + LEASE_DURATION;
        tokio::select! {
            _ = stopped.changed() => return,
            Some(change) = changes.next() => {
                let taken = match change {
                    Ok(watcher::Event::Apply(lease) | watcher::Event::InitApply(lease)) => {
                        holder(&lease).map(str::to_owned) != identity
                    }
                    Ok(watcher::Event::Delete(_)) => true,
                    // A list in progress, or a watch error the watcher retries: the renewals decide.
                    Ok(watcher::Event::Init | watcher::Event::InitDone) | Err(_) => false,
                };
                if taken {
                    lost.taken_over();
                    return;
                }
                continue;
            }
            () = tokio::time::sleep_until(next_renewal) => {}
            () = tokio::time::sleep_until(expires) => {
                tracing::error!("the lock expired: it could not be renewed for {} s", LEASE_DURATION.as_secs());
                lost.report.send_replace(true);
                return;
            }
        }
        let mut renewed = lock_held(&held).clone();
        if let Some(spec) = renewed.spec.as_mut() {
            spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
        }
        let attempt = tokio::time::Instant::now();
        next_renewal = attempt + RENEW_EVERY;
        let result =
            tokio::time::timeout_at(expires, api.replace(LEASE_NAME, &post_params(), &renewed))
                .await;
        match result {
            Ok(Ok(written)) => {
                *lock_held(&held) = written;
                renewed_at = attempt;
            }
            Ok(Err(error)) if is_conflict(&error) || is_not_found(&error) => {
                lost.taken_over();
                return;
            }
            Ok(Err(error)) => tracing::warn!(%error, "cannot renew the lock; trying again"),
            // The expiry is looked at by the `select!` above.
            Err(_) => {}
        }
    }
}

/// How the renewer says the lock is lost.
struct Loss {
    report: watch::Sender<bool>,
    taken_over: Arc<std::sync::atomic::AtomicBool>,
}

impl Loss {
    fn taken_over(&self) {
        tracing::error!("the lock was taken over by somebody else");
        self.taken_over
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.report.send_replace(true);
    }
}

/// The Lease as last written; a panic elsewhere cannot leave it half-updated (it is replaced whole).
fn lock_held(held: &Mutex<Lease>) -> std::sync::MutexGuard<'_, Lease> {
    held.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn post_params() -> PostParams {
    PostParams {
        dry_run: false,
        field_manager: Some(FIELD_MANAGER.to_owned()),
    }
}

/// A Lease held by `identity` from `now`, taking over `previous` if there is one.
fn lease(identity: &str, now: jiff::Timestamp, previous: Option<&Lease>) -> Lease {
    let transitions = previous
        .and_then(|lease| lease.spec.as_ref())
        .and_then(|spec| spec.lease_transitions)
        .unwrap_or(0);
    Lease {
        metadata: ObjectMeta {
            name: Some(LEASE_NAME.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(identity.to_owned()),
            lease_duration_seconds: Some(
                i32::try_from(LEASE_DURATION.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions + i32::from(previous.is_some())),
            ..LeaseSpec::default()
        }),
    }
}

fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()
        .and_then(|spec| spec.holder_identity.as_deref())
        .filter(|holder| !holder.is_empty())
}

/// Somebody else's live hold on the lock.
struct Held {
    holder: String,
    age: Duration,
    expires_in: Duration,
}

/// `None` when we may take the Lease: nobody holds it, we do, the holder stopped renewing it, or the holder is a
/// process of this machine that is gone.
fn held_by_other(lease: &Lease, identity: &str, now: jiff::Timestamp) -> Option<Held> {
    let holder = holder(lease)?;
    if holder == identity || is_dead_local_holder(holder, &hostname()) {
        return None;
    }
    let spec = lease.spec.as_ref()?;
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?.0;
    let duration =
        jiff::SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(0).max(0)));
    let expires = renewed.checked_add(duration).ok()?;
    if expires <= now {
        return None;
    }
    let acquired = spec.acquire_time.as_ref().map_or(renewed, |time| time.0);
    let to_std = |span: jiff::SignedDuration| Duration::try_from(span).unwrap_or_default();
    Some(Held {
        holder: holder.to_owned(),
        age: to_std(now.duration_since(acquired)),
        expires_in: to_std(expires.duration_since(now)),
    })
}

/// `1m 5s`, `42s`.
fn short(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds >= 60 {
        format!("{}m {}s", seconds / 60, seconds % 60)
    } else {
        format!("{seconds}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    #[test]
    fn a_live_lease_of_another_holder_is_held_an_expired_one_is_not() {
        let lease = lease("apply by a@h (pid 1)", at(0), None);
        let held = held_by_other(&lease, "apply by b@h (pid 2)", at(30)).unwrap();
        assert_eq!(held.holder, "apply by a@h (pid 1)");
        assert_eq!(held.age, Duration::from_secs(30));
        assert_eq!(held.expires_in, Duration::from_secs(30));
        assert!(held_by_other(&lease, "apply by b@h (pid 2)", at(61)).is_none());
        assert!(held_by_other(&lease, "apply by a@h (pid 1)", at(30)).is_none());
    }

    #[test]
    fn a_dead_process_of_this_host_holds_nothing() {
        let me = format!("apply by me@here (pid {})", std::process::id());
        assert!(!is_dead_local_holder(&me, "here"), "alive");
        assert!(is_dead_local_holder(
            "apply by me@here (pid 2147483647)",
            "here"
        ));
        assert!(
            !is_dead_local_holder("apply by me@there (pid 2147483647)", "here"),
            "other host"
        );
        assert!(!is_dead_local_holder("somebody else", "here"));
    }

    #[test]
    fn a_process_of_another_user_is_alive_and_a_zombie_is_dead() {
        // pid 1 belongs to root: signalling it is refused (EPERM) unless we are root, and it runs either way.
        assert!(!is_dead_local_holder("apply by root@here (pid 1)", "here"));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let holder = format!("apply by me@here (pid {})", child.id());
        let exited = std::time::Instant::now();
        while !is_zombie(rustix::process::Pid::from_raw(child.id().cast_signed()).unwrap()) {
            assert!(
                exited.elapsed() < Duration::from_secs(10),
                "`true` did not exit"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            is_dead_local_holder(&holder, "here"),
            "exited, not yet reaped"
        );
        child.wait().unwrap();
    }

    #[test]
    fn taking_over_counts_a_transition() {
        let first = lease("a", at(0), None);
        let second = lease("b", at(100), Some(&first));
        assert_eq!(second.spec.unwrap().lease_transitions, Some(1));
    }
}
