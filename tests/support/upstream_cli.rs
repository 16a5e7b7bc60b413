//! The harness of `tests/upstream_cli.rs`: an in-process local cluster (the tool's namespace, its quota and limit
//! range, another tool's namespace), `toolforge-jobs serve` as a child process in front of it, the real upstream
//! CLI (`PyPI` `toolforge-jobs-cli`, installed by `.ci/run` in a venv) run against that server from a home of its
//! own, and raw HTTP requests for the contract tests that need no CLI.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test file uses the part of the harness it needs"
)]

use std::fmt::Write as _;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{LimitRange, Namespace, ResourceQuota};
use kube::api::{Api, PostParams};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use toolforge_local_cluster::Script;

use crate::support::{Cluster, NAMESPACE, TOOL};

/// The version .ci/run installs (tests/upstream-cli/requirements.txt).
pub const UPSTREAM_VERSION: &str = "16.2.3";
/// The token of `mytool` (and of `other`) in the server's token file.
pub const TOKEN: &str = "tok-mytool";
pub const OTHER_TOKEN: &str = "tok-other";
pub const OTHER_NAMESPACE: &str = "tool-other";

/// The upstream CLI's console script: `$UPSTREAM_JOBS_CLI`, else the venv .ci/run makes. `None` (the test says
/// it is skipped) when neither exists, except in CI, where the suite must run.
pub fn upstream_cli(test: &str) -> Option<PathBuf> {
    let named = std::env::var_os("UPSTREAM_JOBS_CLI").map(PathBuf::from);
    let default = std::env::var_os("HOME").map(|home| {
        PathBuf::from(home).join(".cache/toolforge-jobs/upstream-cli-venv/bin/toolforge-jobs")
    });
    if let Some(path) = &named {
        assert!(
            path.is_file(),
            "$UPSTREAM_JOBS_CLI is {}, which is not a file",
            path.display()
        );
        return named;
    }
    if let Some(path) = default.filter(|path| path.is_file()) {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the upstream CLI is not installed: .ci/run installs it into \
         ~/.cache/toolforge-jobs/upstream-cli-venv and sets $UPSTREAM_JOBS_CLI"
    );
    #[allow(clippy::print_stderr, reason = "the test says why it did nothing")]
    {
        eprintln!(
            "skipped: {test}: the upstream CLI (toolforge-jobs-cli=={UPSTREAM_VERSION}) is not installed; \
             set $UPSTREAM_JOBS_CLI or run .ci/run once to make ~/.cache/toolforge-jobs/upstream-cli-venv"
        );
    }
    None
}

/// `toolforge-jobs serve` in a child process, killed on drop, and its log lines.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT` (or `https://…`).
    pub url: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts `toolforge-jobs --kubeconfig KUBECONFIG serve --listen 127.0.0.1:0 ARGS` and reads the URL it
    /// prints.
    pub async fn start(kubeconfig: &Path, args: Vec<std::ffi::OsString>) -> Self {
        let kubeconfig = kubeconfig.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut child = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"))
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .args(["--no-color", "serve", "--listen", "127.0.0.1:0"])
                .args(&args)
                .env_remove("RUST_LOG")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("serve starts");
            let log = Arc::new(Mutex::new(Vec::new()));
            let stderr = child.stderr.take().expect("stderr is piped");
            let collected = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    collected.lock().unwrap().push(line);
                }
            });
            let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped"));
            let mut first = String::new();
            stdout.read_line(&mut first).expect("serve prints its URL");
            let url = first
                .trim()
                .strip_prefix("serving the Toolforge jobs API on ")
                .unwrap_or_else(|| {
                    panic!(
                        "serve did not say where it listens: {first:?}\n{}",
                        log.lock().unwrap().join("\n")
                    )
                })
                .to_owned();
            // Keep draining stdout so that the server never blocks on it.
            std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
            Server { child, url, log }
        })
        .await
        .unwrap()
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> &str {
        self.url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
    }

    /// Everything the server logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A local cluster with `tool-mytool` (quota and limit range included) and `tool-other`, and `serve` in
/// front of it.
pub struct Served {
    pub cluster: Cluster,
    pub server: Server,
    /// Where the token file, certificates and the tools' home are.
    pub files: tempfile::TempDir,
}

/// The quota and limit range a Toolforge tool gets (names as upstream reads them: `tool-<tool>`).
pub async fn seed_quota(client: &kube::Client) {
    let quota: ResourceQuota = serde_json::from_value(serde_json::json!({
        "metadata": {"name": NAMESPACE},
        "spec": {"hard": {
            "pods": "10",
            "count/jobs.batch": "15",
            "limits.cpu": "8",
            "limits.memory": "8Gi",
            "count/cronjobs.batch": "50",
            "count/deployments.apps": "16",
        }}
    }))
    .unwrap();
    Api::<ResourceQuota>::namespaced(client.clone(), NAMESPACE)
        .create(&PostParams::default(), &quota)
        .await
        .expect("the quota is created");
    let limits: LimitRange = serde_json::from_value(serde_json::json!({
        "metadata": {"name": NAMESPACE},
        "spec": {"limits": [{
            "type": "Container",
            "max": {"cpu": "1", "memory": "4Gi"},
            "min": {"cpu": "50m", "memory": "100Mi"},
            "default": {"cpu": "500m", "memory": "512Mi"},
            "defaultRequest": {"cpu": "150m", "memory": "256Mi"},
        }]}
    }))
    .unwrap();
    Api::<LimitRange>::namespaced(client.clone(), NAMESPACE)
        .create(&PostParams::default(), &limits)
        .await
        .expect("the limit range is created");
}

impl Served {
    /// The cluster (pods follow `script`), and `serve --token-file` (`tok-mytool` → mytool, `tok-other` → other).
    pub async fn with_tokens(script: Script) -> Self {
        let (cluster, files) = Self::cluster(script).await;
        let tokens = files.path().join("tokens");
        std::fs::write(&tokens, format!("{TOKEN} {TOOL}\n{OTHER_TOKEN} other\n")).unwrap();
        std::fs::set_permissions(&tokens, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let args = vec![
            "--token-file".into(),
            tokens.into_os_string(),
            "--home".into(),
            files.path().join("home").into_os_string(),
        ];
        let server = Server::start(&cluster.directory.path().join("kubeconfig"), args).await;
        Served {
            cluster,
            server,
            files,
        }
    }

    /// The cluster, and `serve` with mTLS: `--tls-cert/--tls-key` of `pki`, `--client-ca` its CA.
    pub async fn with_mtls(script: Script, pki: &Pki) -> Self {
        let (cluster, files) = Self::cluster(script).await;
        let args = vec![
            "--tls-cert".into(),
            pki.server_certificate.clone().into_os_string(),
            "--tls-key".into(),
            pki.server_key.clone().into_os_string(),
            "--client-ca".into(),
            pki.ca.clone().into_os_string(),
            "--home".into(),
            files.path().join("home").into_os_string(),
        ];
        let server = Server::start(&cluster.directory.path().join("kubeconfig"), args).await;
        Served {
            cluster,
            server,
            files,
        }
    }

    async fn cluster(script: Script) -> (Cluster, tempfile::TempDir) {
        let cluster = Cluster::start_with(script).await;
        seed_quota(&cluster.client).await;
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": OTHER_NAMESPACE}}))
                .unwrap();
        Api::<Namespace>::all(cluster.client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
        let files = tempfile::tempdir().unwrap();
        std::fs::create_dir(files.path().join("home")).unwrap();
        (cluster, files)
    }

    /// The tools' home `serve` was given (`--home`).
    pub fn tools_home(&self) -> PathBuf {
        self.files.path().join("home")
    }

    /// A raw request to the server, with `mytool`'s token unless `headers` has an `Authorization`.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let bearer = format!("Bearer {TOKEN}");
        let mut all: Vec<(&str, &str)> = headers.to_vec();
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        {
            all.push(("Authorization", &bearer));
        }
        raw_request(self.server.address(), method, path, &all, body).await
    }
}

/// A reply to a raw request.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON; fails the test when it is not.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "status {}: the body is not JSON ({error}): {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`), the whole reply read.
pub async fn raw_request(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        let _ = write!(head, "Content-Length: {}\r\n", body.len());
    }
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    let (mut reader, mut writer) = stream.split();
    // A server that answers before reading the whole body (413) may stop reading: write and read at once.
    let write = async {
        let _ = writer.write_all(&request).await;
    };
    let read = async {
        let mut raw = Vec::new();
        let mut buffer = vec![0_u8; 16 * 1024];
        loop {
            match reader.read(&mut buffer).await {
                Ok(0) => break,
                Ok(n) => raw.extend_from_slice(&buffer[..n]),
                Err(error) if !raw.is_empty() => {
                    let _ = error;
                    break;
                }
                Err(error) => panic!("{method} {path}: {error}"),
            }
        }
        raw
    };
    let ((), raw) =
        tokio::time::timeout(Duration::from_secs(55), async { tokio::join!(write, read) })
            .await
            .unwrap_or_else(|_| panic!("{method} {path}: no reply in 55 s"));
    parse_reply(&raw)
}

fn parse_reply(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = data.windows(2).position(|window| window == b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
            .unwrap_or_else(|_| panic!("bad chunk size {size_text:?}"));
        data = &data[end + 2..];
        if size == 0 {
            break;
        }
        body.extend_from_slice(&data[..size.min(data.len())]);
        data = &data[(size + 2).min(data.len())..];
    }
    body
}

/// A test PKI on disk: a CA that signs the tools' client certificates and the server's certificate (IP SAN
/// 127.0.0.1), the client certificate of `mytool` (`O=toolforge, CN=mytool`), of `other`, and one of a CA the
/// server does not trust.
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub ca: PathBuf,
    pub server_certificate: PathBuf,
    pub server_key: PathBuf,
    /// `(certificate, key)` PEM files.
    pub mytool: (PathBuf, PathBuf),
    pub other: (PathBuf, PathBuf),
    pub stranger: (PathBuf, PathBuf),
}

impl Pki {
    pub fn new() -> Self {
        use rcgen::{
            BasicConstraints, CertificateParams, DistinguishedName, DnType,
            ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
        };
        fn subject(organization: Option<&str>, common_name: &str) -> DistinguishedName {
            let mut subject = DistinguishedName::new();
            if let Some(organization) = organization {
                subject.push(DnType::OrganizationName, organization);
            }
            subject.push(DnType::CommonName, common_name);
            subject
        }
        fn new_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::default();
            params.distinguished_name = subject(None, name);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
            let certificate = params.self_signed(&key).unwrap();
            (certificate.pem(), Issuer::new(params, key))
        }
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let client = |issuer: &Issuer<'_, KeyPair>, common_name: &str, file: &str| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::default();
            params.distinguished_name = subject(Some("toolforge"), common_name);
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            params.use_authority_key_identifier_extension = true;
            let certificate = params.signed_by(&key, issuer).unwrap();
            (
                write(&format!("{file}.crt"), &certificate.pem()),
                write(&format!("{file}.key"), &key.serialize_pem()),
            )
        };
        let (ca_pem, issuer) = new_ca("test tools CA");
        let (_, stranger_issuer) = new_ca("a CA the server does not know");
        let server_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(None, "toolforge-jobs serve");
        params.subject_alt_names = vec![SanType::IpAddress(std::net::IpAddr::V4(
            std::net::Ipv4Addr::LOCALHOST,
        ))];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server = params.signed_by(&server_key, &issuer).unwrap();
        Pki {
            ca: write("ca.crt", &ca_pem),
            server_certificate: write("server.crt", &server.pem()),
            server_key: write("server.key", &server_key.serialize_pem()),
            mytool: client(&issuer, TOOL, "mytool"),
            other: client(&issuer, "other", "other"),
            stranger: client(&stranger_issuer, TOOL, "stranger"),
            dir,
        }
    }
}

/// What one run of the upstream CLI printed, stderr normalised: without the `/etc/wmcs-project` warning and
/// the ANSI codes of the level names.
#[derive(Debug)]
pub struct CliRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl CliRun {
    /// Fails the test, showing everything, unless the exit code, stdout and stderr are exactly these.
    #[track_caller]
    pub fn assert(&self, code: i32, stdout: &str, stderr: &str) {
        assert!(
            self.code == code && self.stdout == stdout && self.stderr == stderr,
            "expected exit {code}\n--- stdout\n{stdout}--- stderr\n{stderr}--- but got exit {}\n--- stdout\n{}--- \
             stderr\n{}---",
            self.code,
            self.stdout,
            self.stderr
        );
    }

    /// Fails the test unless it exited with `code` and printed nothing at all.
    #[track_caller]
    pub fn assert_quiet_success(&self) {
        self.assert(0, "", "");
    }

    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code\n--- stderr\n{}--- stdout\n{}",
            self.stderr, self.stdout
        );
        self
    }

    /// The `show` grid as (field, value) pairs; a wrapped value's lines joined with '\n'.
    #[track_caller]
    pub fn grid(&self) -> Vec<(String, String)> {
        let mut fields: Vec<(String, String)> = Vec::new();
        for line in self.stdout.lines() {
            if line.starts_with('+') {
                continue;
            }
            let cells: Vec<&str> = line.split('|').collect();
            assert!(
                cells.len() == 4,
                "not a grid row: {line:?} in\n{}",
                self.stdout
            );
            let (key, value) = (cells[1].trim(), cells[2].trim());
            if key.is_empty() {
                let last = fields.last_mut().expect("a continuation after a row");
                last.1.push('\n');
                last.1.push_str(value);
            } else {
                fields.push((key.to_owned(), value.to_owned()));
            }
        }
        fields
    }

    /// The `show` grid's value of `field`.
    #[track_caller]
    pub fn field(&self, field: &str) -> String {
        self.grid()
            .into_iter()
            .find(|(key, _)| key == field)
            .unwrap_or_else(|| panic!("no {field} in\n{}", self.stdout))
            .1
    }
}

/// Drops the CLI's warning about `/etc/wmcs-project` and the ANSI codes it puts in level names.
pub fn normalise(stderr: &str) -> String {
    let mut plain = String::new();
    let mut chars = stderr.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
        .lines()
        .filter(|line| !line.contains("/etc/wmcs-project"))
        .fold(String::new(), |mut text, line| {
            text.push_str(line);
            text.push('\n');
            text
        })
}

/// `text` is an upstream duration (`5s`, `1m2s`, `3h2m`, `2d3h`).
pub fn is_duration(text: &str) -> bool {
    let mut rest = text;
    let mut units = 0;
    while !rest.is_empty() {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let Some(unit) = rest[digits..].chars().next() else {
            return false;
        };
        if digits == 0 || !"dhms".contains(unit) {
            return false;
        }
        rest = &rest[digits + 1..];
        units += 1;
    }
    units > 0
}

/// `text` is `<Status> for <duration>`.
#[track_caller]
pub fn assert_status(text: &str, status: &str) {
    let duration = text.strip_prefix(&format!("{status} for "));
    assert!(
        duration.is_some_and(is_duration),
        "expected `{status} for <duration>`, got `{text}`"
    );
}

/// How the CLI authenticates, as its kubeconfig's user entry says.
pub enum Credentials<'a> {
    None,
    Token(&'a str),
    CertificateFiles(&'a (PathBuf, PathBuf)),
    CertificateData(&'a (PathBuf, PathBuf)),
}

/// A home for the upstream CLI: `.kube/config` for a tool's namespace and credentials; the CLI run from it.
pub struct CliHome {
    pub cli: PathBuf,
    pub dir: tempfile::TempDir,
    pub url: String,
    /// `REQUESTS_CA_BUNDLE` for the CLI (unset when `None`, as is `CURL_CA_BUNDLE`).
    pub ca_bundle: Option<PathBuf>,
}

impl CliHome {
    pub fn new(cli: PathBuf, url: &str, namespace: &str, credentials: &Credentials<'_>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = CliHome {
            cli,
            dir,
            url: url.to_owned(),
            ca_bundle: None,
        };
        home.write_kubeconfig(namespace, credentials);
        home
    }

    /// Writes `.kube/config`: current context in `namespace` with `credentials`; the cluster's server is never
    /// contacted by the CLI.
    pub fn write_kubeconfig(&self, namespace: &str, credentials: &Credentials<'_>) {
        let base64 = |path: &Path| base64_encode(&std::fs::read(path).unwrap());
        let user = match credentials {
            Credentials::None => "{}".to_owned(),
            Credentials::Token(token) => format!("\n    token: {token}"),
            Credentials::CertificateFiles((certificate, key)) => format!(
                "\n    client-certificate: {}\n    client-key: {}",
                certificate.display(),
                key.display()
            ),
            Credentials::CertificateData((certificate, key)) => format!(
                "\n    client-certificate-data: {}\n    client-key-data: {}",
                base64(certificate),
                base64(key)
            ),
        };
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: toolforge\nclusters:\n- name: toolforge\n  cluster:\n    \
             server: https://127.0.0.1:1\ncontexts:\n- name: toolforge\n  context:\n    cluster: toolforge\n    \
             user: tool\n    namespace: {namespace}\nusers:\n- name: tool\n  user: {user}\n"
        );
        std::fs::create_dir_all(self.dir.path().join(".kube")).unwrap();
        std::fs::write(self.dir.path().join(".kube/config"), text).unwrap();
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs the upstream CLI with ARGS from this home and waits for it.
    pub async fn run(&self, args: &[&str]) -> CliRun {
        let mut command = Command::new(&self.cli);
        command
            .args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("KUBECONFIG", self.dir.path().join(".kube/config"))
            .env("TOOL_TOOLFORGE_API_URL", &self.url)
            .env_remove("REQUESTS_CA_BUNDLE")
            .env_remove("CURL_CA_BUNDLE")
            .env_remove("XDG_CONFIG_HOME")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null());
        if let Some(bundle) = &self.ca_bundle {
            command.env("REQUESTS_CA_BUNDLE", bundle);
        }
        let output = tokio::task::spawn_blocking(move || command.output())
            .await
            .unwrap()
            .expect("the upstream CLI runs");
        CliRun {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: normalise(&String::from_utf8_lossy(&output.stderr)),
        }
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                text.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                text.push('=');
            }
        }
    }
    text
}
