//! The public handle: start a local cluster on 127.0.0.1 (ephemeral port by default), get its URL, a kubeconfig
//! and a kube-rs client, count requests, inject faults, and shut it down gracefully. [`serve`] is the foreground
//! entry point behind `toolforge-jobs local-cluster`.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::{self, ClusterState};
pub use crate::bootstrap::{IDENTITY_NAME, IDENTITY_NAMESPACE};
use crate::clock::Clock;
use crate::controllers::{self, Controllers};
use crate::faults::{Fault, Faults};
use crate::persist;
use crate::store::Store;

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
        }
    }
}

/// Why a local cluster could not start or serve.
#[derive(Debug)]
pub enum ClusterError {
    /// The port could not be bound.
    Bind(std::io::Error),
    /// The state file could not be read.
    StateFile(PathBuf, std::io::Error),
    /// The kubeconfig could not be written.
    Kubeconfig(PathBuf, std::io::Error),
    /// The HTTP server failed.
    Server(std::io::Error),
}

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterError::Bind(_) => write!(f, "failed to listen on 127.0.0.1"),
            ClusterError::StateFile(path, _) => {
                write!(f, "failed to read the state file `{}`", path.display())
            }
            ClusterError::Kubeconfig(path, _) => {
                write!(f, "failed to write the kubeconfig `{}`", path.display())
            }
            ClusterError::Server(_) => write!(f, "the local cluster's HTTP server failed"),
        }
    }
}

impl std::error::Error for ClusterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClusterError::Bind(e)
            | ClusterError::StateFile(_, e)
            | ClusterError::Kubeconfig(_, e)
            | ClusterError::Server(e) => Some(e),
        }
    }
}

/// A running local cluster.
#[derive(Debug)]
pub struct LocalCluster {
    address: SocketAddr,
    state: ClusterState,
    /// Taken by [`LocalCluster::shutdown`]; `None` afterwards.
    server: Option<JoinHandle<std::io::Result<()>>>,
    writer: Option<JoinHandle<()>>,
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
        let store = Store::new(options.history_limit, Clock::new(options.clock_speed));
        if let Some(path) = &options.state_file
            && let Some((resource_version, objects)) =
                persist::load(path).map_err(|e| ClusterError::StateFile(path.clone(), e))?
        {
            store.restore(resource_version, objects);
        }
        crate::bootstrap::seed(&store, options.tools_home.as_deref());
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
        };
        let app = api::router(state.clone());
        let token = shutdown.clone();
        let server = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(token.cancelled_owned())
                .await
        });
        if let Some(wanted) = &options.controllers {
            controllers::start(wanted, &store, &shutdown);
        }
        let writer = options
            .state_file
            .map(|path| tokio::spawn(persist::writer(store, path, shutdown)));
        Ok(LocalCluster {
            address,
            state,
            server: Some(server),
            writer,
        })
    }

    /// The bound address.
    #[must_use]
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:<port>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// A kubeconfig whose current context points at this cluster, namespace `default`, no credentials.
    #[must_use]
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: toolforge-local\n  cluster:\n    server: {}\ncontexts:\n- name: toolforge-local\n  context:\n    cluster: toolforge-local\n    namespace: default\n    user: toolforge-local\ncurrent-context: toolforge-local\nusers:\n- name: toolforge-local\n  user: {{}}\npreferences: {{}}\n",
            self.url()
        )
    }

    /// Writes [`Self::kubeconfig_yaml`] to a file.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    /// A kube-rs client for this cluster (default namespace `default`).
    pub fn client(&self) -> Result<kube::Client, kube::Error> {
        let url: axum::http::Uri = self
            .url()
            .parse()
            .map_err(|e: axum::http::uri::InvalidUri| kube::Error::Service(Box::new(e)))?;
        kube::Client::try_from(kube::Config::new(url))
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
            let _ = writer.await;
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
        state_file: options.state_file,
        tools_home: options.tools_home,
        controllers: options.controllers,
        clock_speed: options
            .clock_speed
            .unwrap_or(Options::default().clock_speed),
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
