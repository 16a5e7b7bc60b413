//! The public handle: start a local cluster on 127.0.0.1 (ephemeral port by default), get its URL, the owner's
//! and tools' kubeconfigs and kube-rs clients, count requests, inject faults, and shut it down gracefully.
//! [`serve`] is the foreground entry point behind `toolforge-jobs local-cluster`.
//!
//! A cluster with a state file keeps its credentials beside it ([`credentials_directory`]), its write-ahead log
//! in `<state file>.log` and its container processes in `<state file>.pids`, and holds an exclusive lock on
//! `<state file>.lock` while it runs, so two clusters never share one state file. It starts by stopping the
//! container processes a killed previous run left behind.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use std::fs::File;

use base64::Engine as _;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::faults::{Fault, Faults, Hold};
use crate::api::guard::Guard;
use crate::api::{self, ClusterState};
use crate::auth::pki::{ClientCredentials, Pki, PkiError};
use crate::auth::{ADMIN_GROUP, ADMIN_USER, TOOL_GROUP};
pub use crate::bootstrap::{IDENTITY_NAME, IDENTITY_NAMESPACE};
use crate::clock::Clock;
use crate::controllers::{self, Backoff};
use crate::kubeconfig::{self, UserCredentials};
use crate::kubelet::{self, Kubelet};
use crate::registry::persist;
use crate::registry::store::Store;

/// The controllers of a local cluster: Job, TTL-after-finished, CronJob, ReplicaSet, Deployment, the root CA
/// publisher and, when given, a kubelet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controllers {
    /// Delay before recreating a Job's pod after one failure (10 s on Kubernetes); it doubles per consecutive
    /// failure. Tests shorten it, or speed up the cluster's clock (`Options::clock_speed`).
    pub job_backoff_base: Duration,
    /// The longest such delay (documented as 6 minutes).
    pub job_backoff_cap: Duration,
    /// The node's kubelet; `None` leaves pods Pending, as on a cluster without nodes.
    pub kubelet: Option<Kubelet>,
}

impl Default for Controllers {
    fn default() -> Self {
        Controllers {
            job_backoff_base: Duration::from_secs(10),
            job_backoff_cap: Duration::from_secs(6 * 60),
            kubelet: None,
        }
    }
}

impl Controllers {
    /// Spawns every configured controller and the kubelet; they stop when `shutdown` is cancelled. `ca_pem` is
    /// what namespaces' `kube-root-ca.crt` holds; a process kubelet records its processes in `pid_file` when given.
    fn start(
        &self,
        ca_pem: &str,
        store: &Store,
        shutdown: &CancellationToken,
        pid_file: Option<PathBuf>,
    ) {
        let backoff = Backoff {
            base: self.job_backoff_base,
            cap: self.job_backoff_cap,
        };
        controllers::start(backoff, ca_pem, store, shutdown);
        if let Some(wanted) = &self.kubelet {
            kubelet::start(wanted, store, shutdown, pid_file);
        }
    }
}

/// How to start a local cluster.
#[derive(Debug, Clone)]
pub struct Options {
    /// TCP port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// State file to restore from and persist to; `None` keeps everything in memory.
    pub state_file: Option<PathBuf>,
    /// How many changes the watch history keeps; older resourceVersions get 410 Expired.
    pub history_limit: usize,
    /// How often watches that allow bookmarks receive one.
    pub bookmark_interval: Duration,
    /// The controllers to run; `None` serves the API alone (nothing acts on Jobs or pods).
    pub controllers: Option<Controllers>,
    /// The directory under which tools' home directories live on this machine, announced to clients in the
    /// identity ConfigMap (see [`IDENTITY_NAMESPACE`]); `None` announces none.
    pub tools_home: Option<PathBuf>,
    /// How many times faster than real time the cluster's [`Clock`] runs: 1 (the default) is real time; tests
    /// speed it up so back-offs, TTLs, cron schedules, progress deadlines and grace periods pass in milliseconds.
    /// A value that is not finite and positive counts as 1.
    pub clock_speed: f64,
    /// Where the CA and the owner's token are kept; `None` makes credentials that live as long as the cluster.
    pub credentials_dir: Option<PathBuf>,
    /// How long an Event lives after its last write (cluster time), as the API server's `--event-ttl`
    /// (1 hour by default).
    pub event_ttl: Duration,
    /// Whether the cluster has upstream jobs-api's custom resource definitions installed, as a Toolforge cluster
    /// has (`continuous-jobs` and `scheduled-jobs` in `jobs-api.toolforge.org/v1`); true by default. Definitions
    /// a state file already holds stay either way.
    pub upstream_crds: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            port: 0,
            state_file: None,
            history_limit: 10_000,
            bookmark_interval: Duration::from_secs(60),
            controllers: None,
            tools_home: None,
            clock_speed: 1.0,
            credentials_dir: None,
            event_ttl: Duration::from_secs(60 * 60),
            upstream_crds: true,
        }
    }
}

/// Why a local cluster could not start or serve.
#[derive(Debug)]
pub enum ClusterError {
    /// The port could not be bound.
    Bind(std::io::Error),
    /// The state file (or its log) could not be read or written.
    StateFile(PathBuf, std::io::Error),
    /// The kubeconfig could not be written.
    Kubeconfig(PathBuf, std::io::Error),
    /// The HTTP server failed.
    Server(std::io::Error),
    /// The credentials could not be made or read.
    Credentials(PkiError),
    /// Another local cluster serves this state file.
    AlreadyServing(PathBuf),
    /// The state file's lock could not be taken.
    Lock(PathBuf, std::io::Error),
}

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterError::Bind(_) => write!(f, "failed to listen on 127.0.0.1"),
            ClusterError::StateFile(path, _) => {
                write!(
                    f,
                    "failed to load or save the state file `{}`",
                    path.display()
                )
            }
            ClusterError::Kubeconfig(path, _) => {
                write!(f, "failed to write the kubeconfig `{}`", path.display())
            }
            ClusterError::Server(_) => write!(f, "the local cluster's HTTP server failed"),
            ClusterError::Credentials(_) => {
                write!(f, "cannot set up the local cluster's credentials")
            }
            ClusterError::AlreadyServing(path) => write!(
                f,
                "another local cluster already serves the state file `{}`",
                path.display()
            ),
            ClusterError::Lock(path, _) => write!(f, "cannot lock `{}`", path.display()),
        }
    }
}

impl std::error::Error for ClusterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClusterError::Bind(e)
            | ClusterError::StateFile(_, e)
            | ClusterError::Kubeconfig(_, e)
            | ClusterError::Server(e)
            | ClusterError::Lock(_, e) => Some(e),
            ClusterError::Credentials(e) => Some(e),
            ClusterError::AlreadyServing(_) => None,
        }
    }
}

/// A running local cluster.
#[derive(Debug)]
pub struct LocalCluster {
    address: SocketAddr,
    state: ClusterState,
    pki: Arc<Pki>,
    /// The owner's client certificate, issued at start.
    admin: ClientCredentials,
    /// The exclusive lock on the state file, held while serving.
    _state_lock: Option<File>,
    /// Taken by [`LocalCluster::shutdown`]; `None` afterwards.
    server: Option<JoinHandle<std::io::Result<()>>>,
    writer: Option<persist::Writer>,
}

impl Drop for LocalCluster {
    /// A cluster dropped without [`LocalCluster::shutdown`] stops serving too (in the background).
    fn drop(&mut self) {
        self.state.shutdown.cancel();
    }
}

impl LocalCluster {
    /// Starts serving; returns once the port is bound and the built-in namespaces exist.
    pub async fn start(options: Options) -> Result<LocalCluster, ClusterError> {
        let state_lock = options
            .state_file
            .as_deref()
            .map(lock_state_file)
            .transpose()?;
        let pki = match &options.credentials_dir {
            Some(directory) => Pki::load_or_create(directory),
            None => Pki::ephemeral(),
        }
        .map_err(ClusterError::Credentials)?;
        let admin = pki
            .issue_client(ADMIN_USER, &[ADMIN_GROUP])
            .map_err(ClusterError::Credentials)?;
        let tls = crate::tls_server::server_config(&pki).map_err(ClusterError::Credentials)?;
        let store = Store::new(options.history_limit, Clock::new(options.clock_speed));
        if let Some(path) = &options.state_file
            && let Some((resource_version, objects)) =
                persist::load(path).map_err(|e| ClusterError::StateFile(path.clone(), e))?
        {
            store.restore(resource_version, objects);
        }
        let writer = options
            .state_file
            .as_ref()
            .map(|path| {
                persist::Writer::start(&store, path.clone())
                    .map_err(|e| ClusterError::StateFile(path.clone(), e))
            })
            .transpose()?;
        crate::bootstrap::seed(&store, options.tools_home.as_deref());
        if options.upstream_crds {
            crate::bootstrap::install_upstream_crds(&store);
        }
        let listener = TcpListener::bind(("127.0.0.1", options.port))
            .await
            .map_err(ClusterError::Bind)?;
        let address = listener.local_addr().map_err(ClusterError::Bind)?;
        let shutdown = CancellationToken::new();
        let state = ClusterState {
            store: store.clone(),
            faults: Arc::new(Faults::new()),
            bookmark_interval: options.bookmark_interval,
            shutdown: shutdown.clone(),
            server_address: Arc::from(address.to_string()),
            pages: Arc::default(),
            guard: Arc::new(Guard::new(address.port(), pki.admin_token())),
        };
        let app = api::router(state.clone());
        let server = tokio::spawn(crate::tls_server::serve(
            listener,
            tls,
            app,
            shutdown.clone(),
        ));
        controllers::start_event_ttl(options.event_ttl, &store, &shutdown);
        let pid_file = options.state_file.as_deref().map(kubelet::pid_file);
        if let Some(path) = &pid_file {
            // Before any new container starts: a node's containers do not survive its restart.
            kubelet::stop_previous(path).await;
        }
        if let Some(wanted) = &options.controllers {
            wanted.start(pki.ca_certificate_pem(), &store, &shutdown, pid_file);
        }
        Ok(LocalCluster {
            address,
            state,
            pki: Arc::new(pki),
            admin,
            _state_lock: state_lock,
            server: Some(server),
            writer,
        })
    }

    /// The bound address.
    #[must_use]
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `https://127.0.0.1:<port>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("https://{}", self.address)
    }

    /// The cluster's CA certificate (PEM), which clients trust.
    #[must_use]
    pub fn ca_certificate_pem(&self) -> &str {
        self.pki.ca_certificate_pem()
    }

    /// The owner's bearer token.
    #[must_use]
    pub fn admin_token(&self) -> &str {
        self.pki.admin_token()
    }

    /// The owner's kubeconfig: every permission, namespace `default`, the certificate inline.
    #[must_use]
    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig::render(
            &self.url(),
            self.ca_certificate_pem(),
            "default",
            ADMIN_USER,
            UserCredentials::Inline(&self.admin),
        )
    }

    /// Writes [`Self::kubeconfig_yaml`] to a private file (0600).
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        crate::private_files::write(path, self.kubeconfig_yaml())
    }

    /// A tool's client certificate (`O=toolforge, CN=<tool>`): it may work in namespace `tool-<tool>` only.
    pub fn tool_credentials(&self, tool: &str) -> Result<ClientCredentials, ClusterError> {
        self.pki
            .issue_client(tool, &[TOOL_GROUP])
            .map_err(ClusterError::Credentials)
    }

    /// A tool's kubeconfig (namespace `tool-<tool>`, the certificate inline).
    pub fn tool_kubeconfig_yaml(&self, tool: &str) -> Result<String, ClusterError> {
        let credentials = self.tool_credentials(tool)?;
        Ok(kubeconfig::render(
            &self.url(),
            self.ca_certificate_pem(),
            &format!("tool-{tool}"),
            tool,
            UserCredentials::Inline(&credentials),
        ))
    }

    /// A kube-rs client for the owner (default namespace `default`).
    pub fn client(&self) -> Result<kube::Client, kube::Error> {
        self.client_with(&self.admin)
    }

    /// A kube-rs client authenticated as `tool` (default namespace `tool-<tool>`).
    pub fn tool_client(&self, tool: &str) -> Result<kube::Client, kube::Error> {
        let credentials = self
            .tool_credentials(tool)
            .map_err(|e| kube::Error::Service(Box::new(e)))?;
        let mut client = self.client_config(&credentials)?;
        client.default_namespace = format!("tool-{tool}");
        kube::Client::try_from(client)
    }

    fn client_with(&self, credentials: &ClientCredentials) -> Result<kube::Client, kube::Error> {
        kube::Client::try_from(self.client_config(credentials)?)
    }

    fn client_config(&self, credentials: &ClientCredentials) -> Result<kube::Config, kube::Error> {
        let url: axum::http::Uri = self
            .url()
            .parse()
            .map_err(|e: axum::http::uri::InvalidUri| kube::Error::Service(Box::new(e)))?;
        let ca = self
            .pki
            .ca_certificate_der()
            .map_err(|e| kube::Error::Service(Box::new(e)))?;
        let mut config = kube::Config::new(url);
        config.root_cert = Some(vec![ca]);
        let base64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        config.auth_info.client_certificate_data = Some(base64(&credentials.certificate_pem));
        config.auth_info.client_key_data = Some(base64(&credentials.key_pem).into());
        Ok(config)
    }

    /// The cluster's clock, which every component reads the time from.
    #[must_use]
    pub fn clock(&self) -> Clock {
        self.state.store.clock()
    }

    /// The object store (controllers subscribe to its changes).
    #[must_use]
    pub fn store(&self) -> &Store {
        &self.state.store
    }

    /// How many requests with this verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`) reached this resource (`jobs`, `jobs/status`).
    #[must_use]
    pub fn request_count(&self, verb: &str, resource: &str) -> u64 {
        self.state.faults.count(verb, resource)
    }

    /// All request counts by (verb, resource); non-resource paths count as (method, path).
    #[must_use]
    pub fn request_counts(&self) -> BTreeMap<(String, String), u64> {
        self.state.faults.counts()
    }

    /// Forgets all request counts.
    pub fn reset_request_counts(&self) {
        self.state.faults.reset_counts();
    }

    /// Makes matching requests fail (see [`Fault`]).
    pub fn inject_fault(&self, fault: Fault) {
        self.state.faults.add(fault);
    }

    /// Parks the matching request until [`Self::release_held`] (see [`Hold`]).
    pub fn hold(&self, hold: Hold) {
        self.state.faults.hold(hold);
    }

    /// Resolves once a request is parked by a [`Hold`]: its verb and resource. The client is then at exactly
    /// that step (a crash test kills it there).
    pub async fn held(&self) -> (String, String) {
        self.state.faults.held().await
    }

    /// Lets every parked request go: one held before it was carried out is answered 503 without being carried
    /// out, one held after gets its response.
    pub fn release_held(&self) {
        self.state.faults.release_held();
    }

    /// Delays every request by `latency` (zero turns it off).
    pub fn set_latency(&self, latency: Duration) {
        self.state.faults.set_latency(latency);
    }

    /// Ends every open watch stream cleanly; clients reconnect from their last resourceVersion.
    pub fn close_watches(&self) {
        self.state.faults.close_watches();
    }

    /// Makes the next watch answer with a 410 Expired ERROR event inside its stream, forcing a relist.
    pub fn expire_next_watch(&self) {
        self.state.faults.expire_next_watch();
    }

    /// Stops serving: ends watches, lets in-flight requests finish, writes the state file a last time.
    pub async fn shutdown(mut self) -> Result<(), ClusterError> {
        self.state.shutdown.cancel();
        let served = match self.server.take() {
            Some(server) => server.await,
            None => Ok(Ok(())),
        };
        if let Some(writer) = self.writer.take() {
            writer.close().await;
        }
        match served {
            Ok(result) => result.map_err(ClusterError::Server),
            Err(join) => Err(ClusterError::Server(std::io::Error::other(join))),
        }
    }
}

/// Options of `toolforge-jobs local-cluster`.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// State file to restore from and persist to.
    pub state_file: Option<PathBuf>,
    /// Where to write a kubeconfig for kubectl and toolforge-jobs.
    pub kubeconfig_out: Option<PathBuf>,
    /// The directory holding tools' home directories, announced in the identity ConfigMap.
    pub tools_home: Option<PathBuf>,
    /// Controllers and kubelet to run; `None` serves the API alone.
    pub controllers: Option<Controllers>,
    /// How fast the cluster's clock runs ([`Options::clock_speed`]); `None` is real time.
    pub clock_speed: Option<f64>,
    /// Install upstream's jobs-api CRDs ([`Options::upstream_crds`]).
    pub upstream_crds: bool,
}

/// Where a cluster serving `state_file` keeps its CA and the owner's token: `state.json` →
/// `state.credentials/`.
#[must_use]
pub fn credentials_directory(state_file: &Path) -> PathBuf {
    state_file.with_extension("credentials")
}

/// Takes the exclusive lock that makes one cluster the only one serving `state_file`.
fn lock_state_file(state_file: &Path) -> Result<File, ClusterError> {
    let mut path = state_file.as_os_str().to_owned();
    path.push(".lock");
    let path = PathBuf::from(path);
    let file =
        crate::private_files::create(&path).map_err(|e| ClusterError::Lock(path.clone(), e))?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(rustix::io::Errno::WOULDBLOCK) => {
            Err(ClusterError::AlreadyServing(state_file.to_owned()))
        }
        Err(error) => Err(ClusterError::Lock(path, error.into())),
    }
}

/// Serves in the foreground until `shutdown` completes. `ready` is called once with the running cluster (to
/// print its URL, for instance) after the kubeconfig is written.
pub async fn serve(
    options: ServeOptions,
    ready: impl FnOnce(&LocalCluster),
    shutdown: impl Future<Output = ()>,
) -> Result<(), ClusterError> {
    let cluster = LocalCluster::start(Options {
        port: options.port,
        credentials_dir: options.state_file.as_deref().map(credentials_directory),
        state_file: options.state_file,
        tools_home: options.tools_home,
        controllers: options.controllers,
        clock_speed: options
            .clock_speed
            .unwrap_or(Options::default().clock_speed),
        upstream_crds: options.upstream_crds,
        ..Options::default()
    })
    .await?;
    if let Some(path) = &options.kubeconfig_out {
        cluster
            .write_kubeconfig(path)
            .map_err(|e| ClusterError::Kubeconfig(path.clone(), e))?;
    }
    tracing::info!(url = %cluster.url(), "local cluster serving");
    ready(&cluster);
    shutdown.await;
    cluster.shutdown().await
}
