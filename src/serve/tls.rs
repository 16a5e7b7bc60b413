//! The mTLS listener of `toolforge-jobs serve`: TLS with a required, CA-verified client certificate, as
//! Toolforge's api-gateway does in front of the upstream jobs-api (docs: jobs-api.md §1.2, §4.1).
//!
//! - [`server_config`] loads the server's PEM certificate chain and key and the client CA bundle (the CA that
//!   signs the tools' kubeconfig certificates, subject `O=toolforge, CN=<tool>`), and builds a rustls config
//!   that refuses any client without a certificate of that CA;
//! - [`serve`] accepts connections, handshakes them, and serves the router on each with HTTP/2 or HTTP/1.1 (by
//!   ALPN), giving every request the [`ClientIdentity`] of its connection's certificate; on shutdown it stops
//!   accepting and lets open connections finish.
//!
//! What an identity may do (CN = tool, `O=toolforge` required, path tool = CN) is decided by the routes, not here:
//! this module only guarantees that every request it serves came over a verified certificate and carries its
//! identity.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{VerifierBuilderError, WebPkiClientVerifier};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

/// How long a client may take to finish the TLS handshake: a connection that stalls longer only holds a slot.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections may take to finish once shutdown began; after that they are cut.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an HTTP/1.1 client may take to send a request's headers (hyper's default, made effective by a timer):
/// a client trickling headers would otherwise hold its connection forever.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait before accepting again after `accept` failed (out of file descriptors and the like), so a
/// persistent failure does not spin the loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The PEM files of the listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server certificate chain, leaf first.
    pub certificate: PathBuf,
    /// The server certificate's private key: PKCS#8 (`PRIVATE KEY`), PKCS#1 (`RSA PRIVATE KEY`) or SEC1
    /// (`EC PRIVATE KEY`).
    pub key: PathBuf,
    /// The CA certificate(s) client certificates must be signed by.
    pub client_ca: PathBuf,
}

/// Why the TLS configuration could not be built. Each message names the file and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the {what} file {}: {source}; check the path and its permissions", path.display())]
    Read {
        /// Which file: "server certificate", "server key" or "client CA".
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "the {what} file {} is not valid PEM ({source}); give a PEM file (`-----BEGIN …-----` blocks)",
        path.display()
    )]
    Pem {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error(
        "the server certificate file {} holds no `-----BEGIN CERTIFICATE-----` block; give the server's PEM \
         certificate chain, leaf first",
        path.display()
    )]
    NoCertificate { path: PathBuf },
    #[error(
        "the server key file {} holds no private key; give a PEM `PRIVATE KEY` (PKCS#8), `RSA PRIVATE KEY` \
         (PKCS#1) or `EC PRIVATE KEY` (SEC1) block",
        path.display()
    )]
    NoKey { path: PathBuf },
    #[error(
        "the client CA file {} holds no `-----BEGIN CERTIFICATE-----` block; give the PEM certificate of the CA \
         that signs the tools' client certificates",
        path.display()
    )]
    NoClientCa { path: PathBuf },
    #[error(
        "certificate {number} in the client CA file {} is not a usable CA certificate ({source}); give the PEM \
         certificate of the CA that signs the tools' client certificates",
        path.display()
    )]
    ClientCa {
        /// 1-based, in file order.
        number: usize,
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error(
        "the client CA file {} cannot verify client certificates ({source}); give the PEM certificate of the CA \
         that signs the tools' client certificates",
        path.display()
    )]
    ClientVerifier {
        path: PathBuf,
        #[source]
        source: VerifierBuilderError,
    },
    #[error(
        "the server certificate {} and key {} cannot be used together ({source}); check that the key is the \
         certificate's own and that the certificate file starts with the server's certificate",
        certificate.display(),
        key.display()
    )]
    CertificateKey {
        certificate: PathBuf,
        key: PathBuf,
        #[source]
        source: rustls::Error,
    },
    /// The crypto provider cannot offer the default protocol versions: a build problem, not a configuration one.
    #[error("the TLS library cannot offer TLS 1.2/1.3 ({0}); this is a bug in toolforge-jobs")]
    Provider(#[source] rustls::Error),
}

/// The server side of mTLS: the server certificate from `files`, and a required client certificate verified
/// against the client CA; ALPN offers HTTP/2, then HTTP/1.1.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let chain = read_certificates("server certificate", &files.certificate)?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: files.certificate.clone(),
        });
    }
    let key = read_key(&files.key)?;
    let client_cas = read_certificates("client CA", &files.client_ca)?;
    if client_cas.is_empty() {
        return Err(TlsError::NoClientCa {
            path: files.client_ca.clone(),
        });
    }
    let mut roots = rustls::RootCertStore::empty();
    for (index, ca) in client_cas.into_iter().enumerate() {
        roots.add(ca).map_err(|source| TlsError::ClientCa {
            number: index + 1,
            path: files.client_ca.clone(),
            source,
        })?;
    }

    // One provider for the verifier and the config, explicitly ring: no process-wide default needs installing.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // No `allow_unauthenticated`: a client without a certificate of the CA fails the handshake, so every
    // connection `serve` hands to the router has a verified peer.
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|source| TlsError::ClientVerifier {
            path: files.client_ca.clone(),
            source,
        })?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Provider)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|source| TlsError::CertificateKey {
            certificate: files.certificate.clone(),
            key: files.key.clone(),
            source,
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Reads a file for [`server_config`], naming it in the error.
fn read_file(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        what,
        path: path.to_owned(),
        source,
    })
}

/// Every `CERTIFICATE` block of a PEM file, in order (other blocks are skipped).
fn read_certificates(
    what: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read_file(what, path)?;
    CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem {
            what,
            path: path.to_owned(),
            source,
        })
}

/// The first private key of a PEM file, in any of the three formats.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    const WHAT: &str = "server key";
    let pem = read_file(WHAT, path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|source| match source {
        rustls::pki_types::pem::Error::NoItemsFound => TlsError::NoKey {
            path: path.to_owned(),
        },
        source => TlsError::Pem {
            what: WHAT,
            path: path.to_owned(),
            source,
        },
    })
}

/// Who a client certificate names, as Kubernetes and Toolforge read it: the common name (the tool) and the
/// organisations (`toolforge` for a tool). Every request [`serve`] hands to the router carries one as an
/// extension (`axum::Extension<ClientIdentity>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The subject's first common name; `None` when it has none (or it is not a string).
    pub common_name: Option<String>,
    /// The subject's organisations, in certificate order; those that are not strings are skipped.
    pub organizations: Vec<String>,
}

/// The identity a DER certificate's subject names; `None` when the certificate does not parse.
pub fn identity(certificate: &CertificateDer<'_>) -> Option<ClientIdentity> {
    let (_, certificate) = x509_parser::parse_x509_certificate(certificate.as_ref()).ok()?;
    let subject = certificate.subject();
    let common_name = subject
        .iter_common_name()
        .next()
        .and_then(|name| name.as_str().ok())
        .map(str::to_owned);
    let organizations = subject
        .iter_organization()
        .filter_map(|organization| organization.as_str().ok().map(str::to_owned))
        .collect();
    Some(ClientIdentity {
        common_name,
        organizations,
    })
}

/// Accepts connections on `listener` until `shutdown` is cancelled, serving `app` over mTLS on each.
///
/// Each request gets two extensions: the connection's [`ClientIdentity`] and its peer address as
/// `axum::extract::ConnectInfo<SocketAddr>`. A failed or slow handshake (no certificate, another CA's, not TLS)
/// only drops that connection. On shutdown, the listener is closed at once, open connections finish their
/// in-flight requests (HTTP/1.1 closes after the response, HTTP/2 sends GOAWAY) for up to 10 s, and the rest are
/// cut; then this returns.
///
/// It does not fail today: accept errors are logged and retried, so the loop outlives transient ones (out of
/// file descriptors). The `io::Result` leaves room for fatal listener errors.
pub async fn serve(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    app: Router,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let acceptor = TlsAcceptor::from(config);
    let graceful = GracefulShutdown::new();
    // The connection tasks, so the ones still open when the drain time is up can be cut rather than left running
    // after `serve` returned.
    let mut connections = JoinSet::new();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            // Reap finished connections, or the set would grow with every connection ever served.
            Some(finished) = connections.join_next(), if !connections.is_empty() => {
                log_panic(finished);
                continue;
            }
            () = shutdown.cancelled() => break,
        };
        // The watcher is taken here, before any shutdown signal, so a connection whose handshake ends after
        // shutdown began still sees the signal (and `graceful.shutdown()` waits for it).
        connections.spawn(connection(
            acceptor.clone(),
            stream,
            peer,
            app.clone(),
            graceful.watcher(),
            shutdown.clone(),
        ));
    }
    // Stop accepting now: new clients get "connection refused" rather than a handshake nobody serves.
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!(
            open = connections.len(),
            "connections still open after the drain time; closing them"
        );
    }
    connections.shutdown().await;
    Ok(())
}

/// Handshakes one connection and serves `app` on it until it closes.
async fn connection(
    acceptor: TlsAcceptor,
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    watcher: hyper_util::server::graceful::Watcher,
    shutdown: CancellationToken,
) {
    let handshake = tokio::select! {
        handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => handshake,
        // Shutting down: a connection not yet serving has no request to finish.
        () = shutdown.cancelled() => return,
    };
    let tls = match handshake {
        Ok(Ok(tls)) => tls,
        // Debug only: any client on the network can cause these, and they concern that client alone.
        Ok(Err(error)) => {
            tracing::debug!(%peer, %error, "TLS handshake failed");
            return;
        }
        Err(_elapsed) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    // The verifier requires a certificate, so a completed handshake has one; the `else` is defence in depth.
    let Some(client) = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(<[_]>::first)
        .and_then(identity)
    else {
        // A certificate the CA signed but x509-parser cannot read: refuse rather than serve without an identity.
        tracing::warn!(%peer, "client certificate verified but its subject cannot be read; closing");
        return;
    };
    let service = hyper::service::service_fn(move |mut request: hyper::Request<_>| {
        let extensions = request.extensions_mut();
        extensions.insert(client.clone());
        extensions.insert(ConnectInfo(peer));
        // `Router` is always ready (its error is `Infallible`), so `oneshot` per request costs only a clone.
        app.clone().oneshot(request.map(axum::body::Body::new))
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    // With upgrades, so a route may switch a connection to WebSocket (`logs_stream`).
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
    if let Err(error) = watcher.watch(connection.into_owned()).await {
        // A client going away mid-request and the like: that client's concern only.
        tracing::debug!(%peer, %error, "connection ended with an error");
    }
}

/// Logs a connection task that panicked (a handler bug); cancelled tasks are expected at shutdown.
fn log_panic(finished: Result<(), tokio::task::JoinError>) {
    if let Err(error) = finished
        && error.is_panic()
    {
        tracing::error!(%error, "a connection task panicked");
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use axum::Extension;
    use axum::routing::get;
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
        IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
    };
    use rustls::pki_types::ServerName;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::sync::Notify;

    use super::*;

    /// A client certificate and its key, in PEM.
    #[derive(Clone)]
    struct Credentials {
        certificate: String,
        key: String,
    }

    /// A test PKI on disk: a CA, a server certificate for 127.0.0.1, a tool's client certificate
    /// (`O=toolforge, CN=test`), and a client certificate of another CA.
    struct Pki {
        dir: tempfile::TempDir,
        files: TlsFiles,
        ca: String,
        client: Credentials,
        stranger: Credentials,
    }

    fn new_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(None, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let certificate = params.self_signed(&key).expect("CA certificate");
        (certificate.pem(), Issuer::new(params, key))
    }

    /// `O=<organization>, CN=<common_name>` (one O only: rcgen keeps one value per attribute type).
    fn subject(organization: Option<&str>, common_name: &str) -> DistinguishedName {
        let mut subject = DistinguishedName::new();
        if let Some(organization) = organization {
            subject.push(DnType::OrganizationName, organization);
        }
        subject.push(DnType::CommonName, common_name);
        subject
    }

    fn issue_client(
        ca: &Issuer<'_, KeyPair>,
        organization: Option<&str>,
        common_name: &str,
    ) -> Credentials {
        let key = KeyPair::generate().expect("client key");
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(organization, common_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let certificate = params.signed_by(&key, ca).expect("client certificate");
        Credentials {
            certificate: certificate.pem(),
            key: key.serialize_pem(),
        }
    }

    fn pki() -> Pki {
        let dir = tempfile::tempdir().expect("tempdir");
        let (ca, issuer) = new_ca("test client CA");
        let (_, other_issuer) = new_ca("another CA");

        let server_key = KeyPair::generate().expect("server key");
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(None, "toolforge-jobs serve");
        params.subject_alt_names = vec![SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST))];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        // The server certificate is signed by the same CA, so the test client can verify it with one root.
        let server = params
            .signed_by(&server_key, &issuer)
            .expect("server certificate");

        let files = TlsFiles {
            certificate: dir.path().join("server.crt"),
            key: dir.path().join("server.key"),
            client_ca: dir.path().join("ca.crt"),
        };
        std::fs::write(&files.certificate, server.pem()).expect("write server.crt");
        std::fs::write(&files.key, server_key.serialize_pem()).expect("write server.key");
        std::fs::write(&files.client_ca, &ca).expect("write ca.crt");
        Pki {
            client: issue_client(&issuer, Some("toolforge"), "test"),
            stranger: issue_client(&other_issuer, Some("toolforge"), "test"),
            dir,
            files,
            ca,
        }
    }

    /// A router whose `/whoami` answers `<CN> <O,…>` from the request's identity, and whose `/slow` signals
    /// `started` and answers after 300 ms.
    fn app(started: Arc<Notify>) -> Router {
        Router::new()
            .route(
                "/whoami",
                get(|Extension(client): Extension<ClientIdentity>| async move {
                    format!(
                        "{} {}",
                        client.common_name.unwrap_or_default(),
                        client.organizations.join(",")
                    )
                }),
            )
            .route(
                "/slow",
                get(move || async move {
                    started.notify_one();
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    "done"
                }),
            )
    }

    struct Server {
        address: SocketAddr,
        shutdown: CancellationToken,
        task: tokio::task::JoinHandle<io::Result<()>>,
    }

    async fn start(pki: &Pki, app: Router) -> Server {
        let config = server_config(&pki.files).expect("server config");
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind");
        let address = listener.local_addr().expect("local address");
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(serve(listener, config, app, shutdown.clone()));
        Server {
            address,
            shutdown,
            task,
        }
    }

    /// `GET path` over TLS with HTTP/1.1, presenting `client` if given; the whole response as text.
    async fn get_path(
        address: SocketAddr,
        ca: &str,
        client: Option<&Credentials>,
        path: &str,
    ) -> io::Result<String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.as_bytes()).expect("CA PEM"))
            .expect("CA root");
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots);
        let mut config = match client {
            Some(client) => builder
                .with_client_auth_cert(
                    vec![
                        CertificateDer::from_pem_slice(client.certificate.as_bytes())
                            .expect("client certificate PEM"),
                    ],
                    PrivateKeyDer::from_pem_slice(client.key.as_bytes()).expect("client key PEM"),
                )
                .expect("client auth"),
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(address).await?;
        let server_name = ServerName::IpAddress(Ipv4Addr::LOCALHOST.into());
        let mut tls = connector.connect(server_name, tcp).await?;
        tls.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await?;
        let mut response = String::new();
        tls.read_to_string(&mut response).await?;
        Ok(response)
    }

    /// With TLS 1.3 the client's handshake completes before the server checked its certificate, so a refusal
    /// shows as a failed connect, the server's alert on the first read, or (when the server's close overtook
    /// its alert) a reset or a connection closed with no response. An alert, if it arrived, must be `expected`.
    fn assert_refused(result: &io::Result<String>, expected: rustls::AlertDescription) {
        match result {
            Err(error) => {
                let tls = error
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<rustls::Error>());
                if let Some(rustls::Error::AlertReceived(alert)) = tls {
                    assert_eq!(*alert, expected, "{error}");
                }
            }
            Ok(response) => assert!(
                response.is_empty(),
                "expected no response, got {response:?}"
            ),
        }
    }

    fn body(response: &str) -> &str {
        assert!(
            response.starts_with("HTTP/1.1 200 "),
            "expected 200, got {response:?}"
        );
        response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body)
            .expect("a body")
    }

    #[tokio::test]
    async fn a_tool_certificate_of_the_ca_reaches_the_router_with_its_identity() {
        let pki = pki();
        let server = start(&pki, app(Arc::new(Notify::new()))).await;
        let response = get_path(server.address, &pki.ca, Some(&pki.client), "/whoami")
            .await
            .expect("request");
        assert_eq!(body(&response), "test toolforge");
        server.shutdown.cancel();
        server.task.await.expect("serve task").expect("serve");
    }

    #[tokio::test]
    async fn clients_without_a_certificate_of_the_ca_are_refused_and_the_server_keeps_serving() {
        let pki = pki();
        let server = start(&pki, app(Arc::new(Notify::new()))).await;

        assert_refused(
            &get_path(server.address, &pki.ca, None, "/whoami").await,
            rustls::AlertDescription::CertificateRequired,
        );
        assert_refused(
            &get_path(server.address, &pki.ca, Some(&pki.stranger), "/whoami").await,
            rustls::AlertDescription::UnknownCA,
        );
        // Not TLS at all: dropped as well.
        let mut plain = TcpStream::connect(server.address).await.expect("connect");
        plain
            .write_all(b"GET /whoami HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .expect("write");
        let mut response = Vec::new();
        let _ = plain.read_to_end(&mut response).await;
        assert!(
            !String::from_utf8_lossy(&response).contains("HTTP/1.1"),
            "plain HTTP got an HTTP answer: {response:?}"
        );

        // Failed handshakes ended only their own connections.
        let response = get_path(server.address, &pki.ca, Some(&pki.client), "/whoami")
            .await
            .expect("request after refusals");
        assert_eq!(body(&response), "test toolforge");
        server.shutdown.cancel();
        server.task.await.expect("serve task").expect("serve");
    }

    #[tokio::test]
    async fn shutdown_lets_an_in_flight_request_finish_then_stops_accepting() {
        let pki = pki();
        let started = Arc::new(Notify::new());
        let server = start(&pki, app(started.clone())).await;
        let (address, ca) = (server.address, pki.ca.clone());
        let client = pki.client.clone();
        let request =
            tokio::spawn(async move { get_path(address, &ca, Some(&client), "/slow").await });

        tokio::time::timeout(Duration::from_secs(5), started.notified())
            .await
            .expect("the handler started");
        server.shutdown.cancel();

        let response = request.await.expect("request task").expect("request");
        assert_eq!(body(&response), "done");
        tokio::time::timeout(Duration::from_secs(5), server.task)
            .await
            .expect("serve returned after draining")
            .expect("serve task")
            .expect("serve");
        assert!(
            TcpStream::connect(address).await.is_err(),
            "the listener is closed"
        );
    }

    #[test]
    fn the_config_offers_h2_then_http_1_1() {
        let pki = pki();
        let config = server_config(&pki.files).expect("server config");
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn configuration_errors_name_the_file() {
        let pki = pki();
        let missing = pki.dir.path().join("missing.crt");

        let error = server_config(&TlsFiles {
            certificate: missing.clone(),
            ..pki.files.clone()
        })
        .expect_err("missing certificate");
        assert!(matches!(
            error,
            TlsError::Read {
                what: "server certificate",
                ..
            }
        ));
        assert!(error.to_string().contains(&missing.display().to_string()));

        // Files swapped: the key file holds no certificate, the certificate file no key.
        let error = server_config(&TlsFiles {
            certificate: pki.files.key.clone(),
            ..pki.files.clone()
        })
        .expect_err("key as certificate");
        assert!(matches!(error, TlsError::NoCertificate { .. }), "{error}");
        let error = server_config(&TlsFiles {
            key: pki.files.certificate.clone(),
            ..pki.files.clone()
        })
        .expect_err("certificate as key");
        assert!(matches!(error, TlsError::NoKey { .. }), "{error}");
        let error = server_config(&TlsFiles {
            client_ca: pki.files.key.clone(),
            ..pki.files.clone()
        })
        .expect_err("key as CA");
        assert!(matches!(error, TlsError::NoClientCa { .. }), "{error}");

        // A key that is not the certificate's.
        let other_key = pki.dir.path().join("other.key");
        std::fs::write(
            &other_key,
            KeyPair::generate().expect("key").serialize_pem(),
        )
        .expect("write other.key");
        let error = server_config(&TlsFiles {
            key: other_key.clone(),
            ..pki.files.clone()
        })
        .expect_err("mismatched key");
        assert!(matches!(error, TlsError::CertificateKey { .. }), "{error}");
        assert!(error.to_string().contains(&other_key.display().to_string()));

        // Broken PEM.
        let broken = pki.dir.path().join("broken.crt");
        std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nnot base64!\n").expect("write");
        let error = server_config(&TlsFiles {
            client_ca: broken,
            ..pki.files.clone()
        })
        .expect_err("broken PEM");
        assert!(
            matches!(
                error,
                TlsError::Pem {
                    what: "client CA",
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn identity_reads_common_name_and_organizations() {
        let (_, issuer) = new_ca("CA");
        let der = |credentials: &Credentials| {
            CertificateDer::from_pem_slice(credentials.certificate.as_bytes()).expect("PEM")
        };

        let tool = issue_client(&issuer, Some("toolforge"), "test");
        assert_eq!(
            identity(&der(&tool)),
            Some(ClientIdentity {
                common_name: Some("test".to_owned()),
                organizations: vec!["toolforge".to_owned()],
            })
        );

        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::default();
        let mut no_common_name = DistinguishedName::new();
        no_common_name.push(DnType::OrganizationName, "a");
        // rcgen keeps one value per attribute type; the same OID as a custom type gives a second O.
        no_common_name.push(DnType::CustomDnType(vec![2, 5, 4, 10]), "b");
        params.distinguished_name = no_common_name;
        let certificate = params.signed_by(&key, &issuer).expect("certificate");
        assert_eq!(
            identity(certificate.der()),
            Some(ClientIdentity {
                common_name: None,
                organizations: vec!["a".to_owned(), "b".to_owned()],
            })
        );

        assert_eq!(identity(&CertificateDer::from(b"not DER".to_vec())), None);
    }
}
