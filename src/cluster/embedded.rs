//! The embedded default (SPEC §10): with no kubeconfig anywhere (and not in a pod), or with `--local`, every
//! command uses the local cluster, started in the background on first use.
//!
//! Its files live in `$XDG_STATE_HOME/toolforge-jobs/local-cluster/` (`~/.local/state/…` by default), a directory
//! only its owner may enter (0700, files 0600): `state.json` (the objects, so jobs survive restarts),
//! `state.credentials/` (the cluster's CA and the owner's token), `kubeconfig` (the owner's, also usable by
//! kubectl), `pid`, `log`, and `start.lock`, which concurrent first commands take in turn so that they all end
//! up using the one cluster the first of them started. The server is
//! this very program run as `toolforge-jobs local-cluster` in its own process group, so Ctrl-C in the terminal
//! that started it does not stop it; `toolforge-jobs local-cluster stop` does. Jobs run as processes of the current
//! user; with no `toolsHome` announced, a tool's home is the directory holding its jobs.yaml.

use std::fs;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kube::config::Kubeconfig;
use toolforge_local_cluster::private_files;

/// How long a freshly started cluster may take to write its kubeconfig and accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Where the embedded cluster keeps its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub directory: PathBuf,
    pub state: PathBuf,
    pub kubeconfig: PathBuf,
    pub pid: PathBuf,
    pub log: PathBuf,
    /// Held while a command checks for a running cluster and starts one.
    pub start_lock: PathBuf,
}

impl Paths {
    /// `$XDG_STATE_HOME/toolforge-jobs/local-cluster`, else `$HOME/.local/state/…`.
    pub fn from_environment() -> Result<Self, EmbeddedError> {
        let base = std::env::var_os("XDG_STATE_HOME")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/state")))
            .ok_or(EmbeddedError::NoHome)?;
        let directory = base.join("toolforge-jobs").join("local-cluster");
        Ok(Self {
            state: directory.join("state.json"),
            kubeconfig: directory.join("kubeconfig"),
            pid: directory.join("pid"),
            log: directory.join("log"),
            start_lock: directory.join("start.lock"),
            directory,
        })
    }
}

/// The running embedded cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    pub kubeconfig: PathBuf,
    pub server: String,
    /// Whether this call started it.
    pub started: bool,
    pub paths: Paths,
}

impl Running {
    fn new(server: String, started: bool, paths: Paths) -> Running {
        Running {
            kubeconfig: paths.kubeconfig.clone(),
            server,
            started,
            paths,
        }
    }
}

/// Why the embedded cluster is not available.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("neither $XDG_STATE_HOME nor $HOME is set: nowhere to keep the local cluster's state")]
    NoHome,
    #[error("cannot prepare `{}` for the local cluster", .path.display())]
    Files {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot start the local cluster (`{}`)", .program.display())]
    Spawn {
        program: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "the local cluster did not come up within {} s; see its log `{}`",
        START_TIMEOUT.as_secs(),
        .log.display()
    )]
    NotReady { log: PathBuf },
    #[error("cannot stop the local cluster (pid {pid})")]
    Stop {
        pid: i32,
        #[source]
        source: io::Error,
    },
}

/// Whether commands should use the embedded cluster: nothing else is configured.
pub fn is_default() -> bool {
    let kubeconfig_env = std::env::var_os("KUBECONFIG").is_some_and(|value| !value.is_empty());
    let in_pod = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    let home_config =
        std::env::var_os("HOME").is_some_and(|home| Path::new(&home).join(".kube/config").exists());
    !kubeconfig_env && !in_pod && !home_config
}

fn files_error(path: &Path) -> impl FnOnce(io::Error) -> EmbeddedError {
    let path = path.to_owned();
    move |source| EmbeddedError::Files { path, source }
}

/// The embedded cluster, started in the background if it is not running.
pub fn ensure_running() -> Result<Running, EmbeddedError> {
    let paths = Paths::from_environment()?;
    if let Some(server) = reachable(&paths) {
        return Ok(Running::new(server, false, paths));
    }
    private_files::create_directory(&paths.directory).map_err(files_error(&paths.directory))?;
    // Whoever holds the lock starts the cluster; the others wait, then find it running.
    let start_lock =
        private_files::create(&paths.start_lock).map_err(files_error(&paths.start_lock))?;
    rustix::fs::flock(&start_lock, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|error| files_error(&paths.start_lock)(error.into()))?;
    if let Some(server) = reachable(&paths) {
        return Ok(Running::new(server, false, paths));
    }
    // A stale kubeconfig from an earlier run must not be mistaken for the new server's.
    match fs::remove_file(&paths.kubeconfig) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            return Err(files_error(&paths.kubeconfig)(error));
        }
        _ => {}
    }
    let log = private_files::create(&paths.log).map_err(files_error(&paths.log))?;
    let log_err = log.try_clone().map_err(files_error(&paths.log))?;
    let program = std::env::current_exe().map_err(|source| EmbeddedError::Spawn {
        program: PathBuf::from("toolforge-jobs"),
        source,
    })?;
    let child = Command::new(&program)
        .arg("local-cluster")
        .arg("--state")
        .arg(&paths.state)
        .arg("--kubeconfig-out")
        .arg(&paths.kubeconfig)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        // Its own process group: Ctrl-C in this terminal is for this command, not for the cluster.
        .process_group(0)
        .spawn()
        .map_err(|source| EmbeddedError::Spawn {
            program: program.clone(),
            source,
        })?;
    private_files::write(&paths.pid, child.id().to_string()).map_err(files_error(&paths.pid))?;
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if let Some(server) = reachable(&paths) {
            return Ok(Running::new(server, true, paths));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(EmbeddedError::NotReady { log: paths.log })
}

/// Stops the embedded cluster if it runs; `false` when it was not running.
pub fn stop() -> Result<bool, EmbeddedError> {
    let paths = Paths::from_environment()?;
    let Some(pid) = running_pid(&paths) else {
        return Ok(false);
    };
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).map_err(|error| {
        EmbeddedError::Stop {
            pid: pid.as_raw_nonzero().get(),
            source: error.into(),
        }
    })?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && alive(pid) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = fs::remove_file(&paths.pid);
    let _ = fs::remove_file(&paths.kubeconfig);
    Ok(true)
}

/// The server's URL when the recorded process is alive and its kubeconfig's server accepts connections.
fn reachable(paths: &Paths) -> Option<String> {
    running_pid(paths)?;
    let kubeconfig = Kubeconfig::read_from(&paths.kubeconfig).ok()?;
    let server = kubeconfig
        .clusters
        .first()?
        .cluster
        .as_ref()?
        .server
        .clone()?;
    let address: SocketAddr = server.strip_prefix("https://")?.parse().ok()?;
    TcpStream::connect_timeout(&address, Duration::from_millis(500)).ok()?;
    Some(server)
}

fn running_pid(paths: &Paths) -> Option<rustix::process::Pid> {
    let text = fs::read_to_string(&paths.pid).ok()?;
    let pid = rustix::process::Pid::from_raw(text.trim().parse().ok()?)?;
    alive(pid).then_some(pid)
}

fn alive(pid: rustix::process::Pid) -> bool {
    rustix::process::test_kill_process(pid).is_ok()
}

/// Creates the tool's namespace on the embedded cluster if it is missing: there is no admin to do it there.
pub async fn ensure_namespace(client: &kube::Client, namespace: &str) -> Result<(), kube::Error> {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, ObjectMeta, PostParams};

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let wanted = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match namespaces.create(&PostParams::default(), &wanted).await {
        Ok(_) => Ok(()),
        Err(error) if super::is_conflict(&error) => Ok(()),
        Err(error) => Err(error),
    }
}

/// Runs [`ensure_running`] or [`stop`] (they wait on files and sockets) off the async runtime's workers; a panic
/// inside is re-raised here.
pub async fn off_runtime<T: Send + 'static>(
    step: fn() -> Result<T, EmbeddedError>,
) -> Result<T, EmbeddedError> {
    tokio::task::spawn_blocking(step)
        .await
        .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
}
