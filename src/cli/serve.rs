//! `toolforge-jobs serve`: the Toolforge jobs API ([`crate::serve`]) on one listener, with one way to
//! authenticate: client certificates (`--tls-cert`, `--tls-key`, `--client-ca`), a trusted proxy's
//! `X-Toolforge-Tool` header (`--trust-header`, loopback or a unix socket only), or bearer tokens
//! (`--token-file`). With `--local` and none of them it serves the embedded local cluster with a fresh token
//! and writes what the upstream CLI needs to use it (a kubeconfig and `toolforge.yaml`). Stops on SIGTERM or
//! SIGINT once the requests in flight are answered.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::cli::apply::parse_duration;
use crate::cli::{Error, GlobalArgs, connection, private_directory, tool_name, write_private};
use crate::model::ToolName;
use crate::output::progress::LogProgress;
use crate::output::{ExitStatus, Printer};
use crate::serve::auth::Auth;
use crate::serve::tls::{self, TlsFiles};
use crate::serve::{self, Settings};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen: HOST:PORT (port 0: any free port), or unix:PATH
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:8000")]
    pub listen: String,

    /// mTLS: the server's certificate chain (PEM); the tool is the client certificate's CN
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "client_ca"], conflicts_with_all = ["trust_header", "token_file"])]
    pub tls_cert: Option<PathBuf>,

    /// mTLS: the server's private key (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// mTLS: the CA that signs the tools' client certificates (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub client_ca: Option<PathBuf>,

    /// Trust the `X-Toolforge-Tool` header of a proxy in front (only on a loopback address or a unix socket)
    #[arg(long, conflicts_with = "token_file")]
    pub trust_header: bool,

    /// Bearer tokens, one `<token> <tool>` per line, in a file only its owner can read
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Requests of one tool handled at once; more are answered 429
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub requests_per_tool: u16,

    /// How long a request may take before it is answered 504 (under the upstream CLI's 60 s)
    #[arg(long, value_name = "DURATION", default_value = "50s", value_parser = parse_duration)]
    pub handler_timeout: Duration,

    /// How long a write waits for another writer (`apply`, `watch`) before it is answered 409
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_duration)]
    pub lock_wait: Duration,

    /// The tools' home on a local cluster that has no tools directory (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
}

/// Where the server listens.
enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

fn listen_address(text: &str) -> Result<Listen, Error> {
    if let Some(path) = text.strip_prefix("unix:") {
        return Ok(Listen::Unix(PathBuf::from(path)));
    }
    text.parse().map(Listen::Tcp).map_err(|_| {
        Error::Serve(format!(
            "`--listen {text}` is not HOST:PORT (e.g. 127.0.0.1:8000) or unix:PATH"
        ))
    })
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &ServeArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let listen = listen_address(&args.listen)?;
    let connection = connection::connect(global).await?;
    let local_token = args.tls_cert.is_none() && !args.trust_header && args.token_file.is_none();
    let (auth, tls) = authentication(args, &listen, connection.embedded.is_some())?;
    let home = match &args.home {
        Some(home) => home.clone(),
        None => std::env::current_dir().map_err(|source| Error::ReadFile {
            path: PathBuf::from("."),
            source,
        })?,
    };
    let mut settings = Settings {
        auth,
        requests_per_tool: usize::from(args.requests_per_tool),
        handler_timeout: args.handler_timeout,
        lock_wait: args.lock_wait,
        home,
    };
    let shutdown = shutdown_on_signal()?;
    let progress = Arc::new(LogProgress {
        failures_as_errors: false,
    });
    match listen {
        Listen::Tcp(address) => {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|error| Error::Serve(format!("cannot listen on {address}: {error}")))?;
            let address = listener
                .local_addr()
                .map_err(|error| Error::Serve(format!("cannot listen on {address}: {error}")))?;
            let scheme = if tls.is_some() { "https" } else { "http" };
            let url = format!("{scheme}://{address}");
            if local_token {
                let tool = tool_name(global)?;
                let token = local_client(&tool, &url, connection.embedded.as_ref(), printer)?;
                settings.auth = Auth::Tokens([(token, tool)].into_iter().collect());
            }
            printer.data(&format!("serving the Toolforge jobs API on {url}\n"))?;
            let app = serve::router(connection, &settings, progress);
            let result = match tls {
                Some(config) => tls::serve(listener, config, app, shutdown).await,
                None => {
                    axum::serve(listener, app)
                        .with_graceful_shutdown(shutdown.cancelled_owned())
                        .await
                }
            };
            result.map_err(|error| Error::Serve(format!("the server stopped: {error}")))?;
        }
        Listen::Unix(path) => {
            let listener = unix_listener(&path)?;
            printer.data(&format!(
                "serving the Toolforge jobs API on unix:{}\n",
                path.display()
            ))?;
            let app = serve::router(connection, &settings, progress);
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await
                .map_err(|error| Error::Serve(format!("the server stopped: {error}")))?;
        }
    }
    Ok(ExitStatus::Success)
}

/// The one way callers authenticate, from the flags (`--local` alone: tokens, made once the port is known).
fn authentication(
    args: &ServeArgs,
    listen: &Listen,
    embedded: bool,
) -> Result<(Auth, Option<Arc<rustls::ServerConfig>>), Error> {
    Ok(if let Some(certificate) = &args.tls_cert {
        let files = TlsFiles {
            certificate: certificate.clone(),
            // clap requires both with `--tls-cert`.
            key: args.tls_key.clone().unwrap_or_default(),
            client_ca: args.client_ca.clone().unwrap_or_default(),
        };
        let config = tls::server_config(&files).map_err(|error| Error::Serve(error.to_string()))?;
        (Auth::ClientCertificate, Some(config))
    } else if args.trust_header {
        let trusted = match listen {
            Listen::Tcp(address) => address.ip().is_loopback(),
            Listen::Unix(_) => true,
        };
        if !trusted {
            return Err(Error::Serve(format!(
                "`--trust-header` lets whoever can connect act for any tool: listen on a loopback address or a \
                 unix socket, not `{}`",
                args.listen
            )));
        }
        (Auth::TrustedHeader, None)
    } else if let Some(path) = &args.token_file {
        let auth = Auth::from_token_file(path).map_err(|error| Error::Serve(error.to_string()))?;
        (auth, None)
    } else if embedded {
        (Auth::Tokens(std::collections::BTreeMap::new()), None)
    } else {
        return Err(Error::Serve(
            "say how callers authenticate: `--tls-cert`/`--tls-key`/`--client-ca`, `--trust-header` or \
             `--token-file` (or serve the local cluster with `--local`)"
                .to_owned(),
        ));
    })
}

/// A unix socket only this user can connect to (in `--trust-header` mode a caller names any tool): bound in a
/// fresh directory private to the user, made 0600 there and then moved into place, so that nobody else can
/// connect even in between. A socket left by an earlier run is replaced; anything else at the path is refused.
fn unix_listener(path: &std::path::Path) -> Result<tokio::net::UnixListener, Error> {
    use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
    let failed = |error: std::io::Error| {
        Error::Serve(format!("cannot listen on {}: {error}", path.display()))
    };
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(failed)?;
        }
        Ok(_) => {
            return Err(Error::Serve(format!(
                "cannot listen on {}: something that is not a socket is there; remove it or choose another path",
                path.display()
            )));
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(failed(error)),
    }
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let staging = parent.join(format!(".toolforge-jobs-serve.{}", std::process::id()));
    private_directory(&staging)?;
    let staged = staging.join("socket");
    let bound = tokio::net::UnixListener::bind(&staged)
        .and_then(|listener| {
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))?;
            std::fs::rename(&staged, path)?;
            Ok(listener)
        })
        .map_err(failed);
    let _ = std::fs::remove_dir_all(&staging);
    bound
}

/// A token cancelled on SIGTERM or SIGINT.
fn shutdown_on_signal() -> Result<tokio_util::sync::CancellationToken, Error> {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let stop = shutdown.clone();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|error| Error::Serve(format!("cannot handle SIGTERM: {error}")))?;
    tokio::spawn(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        stop.cancel();
    });
    Ok(shutdown)
}

/// For `serve --local`: a fresh token for `tool`, and beside the local cluster's state a kubeconfig and a
/// `toolforge.yaml` with which the upstream CLI uses this server as that tool; says how.
fn local_client(
    tool: &ToolName,
    url: &str,
    embedded: Option<&crate::cluster::embedded::Running>,
    printer: Printer,
) -> Result<String, Error> {
    let directory = embedded.map_or_else(
        || PathBuf::from("."),
        |running| running.paths.directory.join("serve"),
    );
    let token = random_token()?;
    let kubeconfig = directory.join("kubeconfig");
    let toolforge_yaml = directory.join("toolforge.yaml");
    let namespace = tool.namespace();
    // The upstream CLI reads only the namespace and the credentials; the server entry must merely exist.
    let kubeconfig_text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: {tool}\nclusters:\n- name: local\n  cluster:\n    \
         server: {url}\ncontexts:\n- name: {tool}\n  context:\n    cluster: local\n    user: {tool}\n    \
         namespace: {namespace}\nusers:\n- name: {tool}\n  user:\n    token: {token}\n"
    );
    private_directory(&directory)?;
    write_private(&kubeconfig, &kubeconfig_text)?;
    write_private(&toolforge_yaml, &format!("api_gateway:\n  url: {url}\n"))?;
    printer.message(&format!(
        "the upstream CLI (`pip install toolforge-jobs-cli`) can use this server as tool `{tool}`:\n  \
         export KUBECONFIG={} TOOL_TOOLFORGE_API_URL={url}\n  (or copy {} to ~/.toolforge.yaml)\n",
        kubeconfig.display(),
        toolforge_yaml.display()
    ))?;
    Ok(token)
}

/// 32 random bytes, hex.
fn random_token() -> Result<String, Error> {
    let mut bytes = [0_u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| Error::Serve("the system has no random numbers to make a token".to_owned()))?;
    Ok(bytes.iter().fold(String::new(), |mut text, byte| {
        // Writing to a String cannot fail.
        let _ = write!(text, "{byte:02x}");
        text
    }))
}
