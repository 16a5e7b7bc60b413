//! Connecting: `--kubeconfig FILE` and `--context NAME`, else the usual kubeconfig search (`$KUBECONFIG`,
//! `~/.kube/config`), else the in-cluster service account (the `watch` daemon running as a Toolforge job), else —
//! or with `--local` — the embedded local cluster ([`embedded`]).

use std::path::PathBuf;

use kube::config::{Config, KubeConfigOptions, Kubeconfig};

use super::embedded;

/// Which cluster to talk to, as the user named it.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// `--local`: the embedded local cluster, whatever else is configured.
    pub local: bool,
}

impl Target {
    /// Whether this target is the embedded local cluster: asked for, or nothing else is configured.
    pub fn is_embedded(&self) -> bool {
        self.local
            || (self.kubeconfig.is_none() && self.context.is_none() && embedded::is_default())
    }
}

/// A client and the namespace the configuration chose (the context's namespace, or the pod's).
#[derive(Clone)]
pub struct Connection {
    pub client: kube::Client,
    pub default_namespace: String,
    /// The API server's URL, for messages.
    pub server: String,
    /// Set when this is the embedded local cluster.
    pub embedded: Option<embedded::Running>,
}

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot read the kubeconfig `{}`", .path.display())]
    ReadKubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("cannot use the kubeconfig")]
    Kubeconfig(#[source] kube::config::KubeconfigError),
    #[error(
        "no cluster configured: no kubeconfig (`--kubeconfig`, `$KUBECONFIG`, `~/.kube/config`) and not running in a pod; start one with `toolforge-jobs local-cluster --kubeconfig-out FILE` and pass `--kubeconfig FILE`"
    )]
    NoConfiguration(#[source] kube::config::InferConfigError),
    #[error("cannot create a Kubernetes client")]
    Client(#[source] kube::Error),
    #[error("the local cluster is not available")]
    Embedded(#[from] embedded::EmbeddedError),
}

/// Builds a client for `target`, starting the embedded local cluster when it is the target.
pub async fn connect(target: &Target) -> Result<Connection, ConnectError> {
    let options = KubeConfigOptions {
        context: target.context.clone(),
        ..KubeConfigOptions::default()
    };
    let running = if target.is_embedded() {
        Some(embedded::off_runtime(embedded::ensure_running).await?)
    } else {
        None
    };
    let kubeconfig = running
        .as_ref()
        .map(|running| running.kubeconfig.clone())
        .or_else(|| target.kubeconfig.clone());
    let config = match &kubeconfig {
        Some(path) => {
            let kubeconfig =
                Kubeconfig::read_from(path).map_err(|source| ConnectError::ReadKubeconfig {
                    path: path.clone(),
                    source,
                })?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(ConnectError::Kubeconfig)?
        }
        None if target.context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(ConnectError::Kubeconfig)?,
        None => Config::infer()
            .await
            .map_err(ConnectError::NoConfiguration)?,
    };
    let default_namespace = config.default_namespace.clone();
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).map_err(ConnectError::Client)?;
    Ok(Connection {
        client,
        default_namespace,
        server,
        embedded: running,
    })
}
