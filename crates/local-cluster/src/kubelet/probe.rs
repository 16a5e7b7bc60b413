//! Container probes for the process kubelet: `exec`, `tcpSocket` and `httpGet` startup, liveness and readiness
//! probes with `initialDelaySeconds`, `periodSeconds`, `timeoutSeconds`, `successThreshold` and
//! `failureThreshold`, each run on its own thread so a slow probe never holds the kubelet up. A [`Prober`] only
//! counts results; what they mean for the container (started, ready, killed) is decided in [`super::process`].
//!
//! Probes reach the process on `127.0.0.1` (or the probe's `host`), where a node dials the pod IP, so failure
//! messages name that address. Not covered: `grpc` probes (ignored, as if absent), `https` (fails with a note),
//! `httpHeaders`.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

/// Which probe: what it gates, and the word its events use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Startup,
    Liveness,
    Readiness,
}

impl Kind {
    /// The container field (`startupProbe`, ...).
    fn field(self) -> &'static str {
        match self {
            Kind::Startup => "startupProbe",
            Kind::Liveness => "livenessProbe",
            Kind::Readiness => "readinessProbe",
        }
    }

    /// `Startup`, `Liveness` or `Readiness`, as `Unhealthy` events name it.
    pub(super) fn title(self) -> &'static str {
        match self {
            Kind::Startup => "Startup",
            Kind::Liveness => "Liveness",
            Kind::Readiness => "Readiness",
        }
    }
}

/// How a probe checks the container.
#[derive(Debug, Clone)]
enum Handler {
    Exec(Vec<String>),
    Tcp(String),
    Http { url: String, address: String },
    Unsupported(String),
}

/// One probe of a running container and its consecutive results.
#[derive(Debug)]
pub(super) struct Prober {
    pub(super) kind: Kind,
    handler: Handler,
    period: Duration,
    timeout: Duration,
    success_threshold: u32,
    failure_threshold: u32,
    next_at: Instant,
    in_flight: Option<JoinHandle<Result<(), String>>>,
    successes: u32,
    failures: u32,
}

/// What one finished probe said.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// It succeeded; `settled` once `successThreshold` successes in a row are reached.
    Success { settled: bool },
    /// It failed with this output; `settled` once `failureThreshold` failures in a row are reached.
    Failure { output: String, settled: bool },
}

fn seconds(probe: &Value, field: &str, default: u64) -> Duration {
    Duration::from_secs(probe.get(field).and_then(Value::as_u64).unwrap_or(default))
}

fn count(probe: &Value, field: &str, default: u32) -> u32 {
    probe
        .get(field)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(default)
        .max(1)
}

/// The port a probe names: a number, or the name of one of the container's ports.
fn port(container: &Value, port: Option<&Value>) -> Option<u16> {
    match port? {
        Value::Number(number) => number.as_u64().and_then(|n| u16::try_from(n).ok()),
        Value::String(name) => container
            .get("ports")
            .and_then(Value::as_array)?
            .iter()
            .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|p| p.get("containerPort"))
            .and_then(Value::as_u64)
            .and_then(|n| u16::try_from(n).ok()),
        _ => None,
    }
}

impl Prober {
    /// The container's probe of `kind`, first due `initialDelaySeconds` after `started`; `None` without one (or
    /// with only a `grpc` handler).
    pub(super) fn of(container: &Value, kind: Kind, started: Instant) -> Option<Prober> {
        let probe = container.get(kind.field())?;
        let address = |action: &Value| {
            let host = action
                .get("host")
                .and_then(Value::as_str)
                .filter(|h| !h.is_empty())
                .unwrap_or("127.0.0.1");
            port(container, action.get("port")).map(|p| format!("{host}:{p}"))
        };
        let handler = if let Some(exec) = probe.get("exec") {
            let argv = exec
                .get("command")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            Handler::Exec(argv)
        } else if let Some(tcp) = probe.get("tcpSocket") {
            address(tcp).map_or_else(
                || Handler::Unsupported("the probe's port is not a container port".into()),
                Handler::Tcp,
            )
        } else if let Some(http) = probe.get("httpGet") {
            let scheme = http.get("scheme").and_then(Value::as_str).unwrap_or("HTTP");
            let path = http.get("path").and_then(Value::as_str).unwrap_or("/");
            match address(http) {
                Some(_) if scheme.eq_ignore_ascii_case("https") => Handler::Unsupported(
                    "HTTPS probes are not supported by the local cluster".into(),
                ),
                Some(address) => Handler::Http {
                    url: format!("http://{address}{path}"),
                    address,
                },
                None => Handler::Unsupported("the probe's port is not a container port".into()),
            }
        } else {
            return None;
        };
        Some(Prober {
            kind,
            handler,
            period: seconds(probe, "periodSeconds", 10),
            timeout: seconds(probe, "timeoutSeconds", 1),
            success_threshold: count(probe, "successThreshold", 1),
            failure_threshold: count(probe, "failureThreshold", 3),
            next_at: started + seconds(probe, "initialDelaySeconds", 0),
            in_flight: None,
            successes: 0,
            failures: 0,
        })
    }

    /// Collects a finished probe, or starts one when due; an `exec` probe's command is built by `exec` (in the
    /// container's directory and environment).
    pub(super) fn poll(
        &mut self,
        exec: impl FnOnce(&[String]) -> Option<Command>,
    ) -> Option<Verdict> {
        if let Some(handle) = self.in_flight.take_if(|h| h.is_finished()) {
            let result = handle
                .join()
                .unwrap_or_else(|_| Err("the probe panicked".to_owned()));
            return Some(self.count(result));
        }
        let now = Instant::now();
        if self.in_flight.is_none() && now >= self.next_at {
            self.next_at = now + self.period;
            let (handler, timeout) = (self.handler.clone(), self.timeout);
            let command = match &handler {
                Handler::Exec(argv) => exec(argv),
                _ => None,
            };
            self.in_flight = Some(std::thread::spawn(move || run(&handler, command, timeout)));
        }
        None
    }

    /// When the next probe is due (for the kubelet's timer).
    pub(super) fn due_in(&self) -> Duration {
        self.next_at.saturating_duration_since(Instant::now())
    }

    fn count(&mut self, result: Result<(), String>) -> Verdict {
        match result {
            Ok(()) => {
                self.successes += 1;
                self.failures = 0;
                Verdict::Success {
                    settled: self.successes >= self.success_threshold,
                }
            }
            Err(output) => {
                self.failures += 1;
                self.successes = 0;
                Verdict::Failure {
                    output,
                    settled: self.failures >= self.failure_threshold,
                }
            }
        }
    }
}

/// Runs one probe: `Err` carries the output a failure reports.
fn run(handler: &Handler, command: Option<Command>, timeout: Duration) -> Result<(), String> {
    match handler {
        Handler::Exec(argv) => exec(command, argv, timeout),
        Handler::Tcp(address) => connect(address, timeout).map(drop),
        Handler::Http { url, address } => http_get(url, address, timeout),
        Handler::Unsupported(why) => Err(why.clone()),
    }
}

/// An `exec` probe: exit code 0 is success; the output (stdout, then stderr) is what a failure reports. The pipes
/// are read once the command ended, which suits probe commands' short output (the kubelet keeps 10 KiB of it).
fn exec(command: Option<Command>, argv: &[String], timeout: Duration) -> Result<(), String> {
    let Some(mut command) = command else {
        return Err("the probe's working directory could not be prepared".to_owned());
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("exec: {e}"))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("command {:?} timed out", argv.join(" ")));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let mut output = String::new();
    for pipe in [
        child.stdout.take().map(|p| Box::new(p) as Box<dyn Read>),
        child.stderr.take().map(|p| Box::new(p) as Box<dyn Read>),
    ]
    .into_iter()
    .flatten()
    {
        let mut text = String::new();
        let mut pipe = pipe;
        let _ = pipe.read_to_string(&mut text);
        output.push_str(&text);
    }
    if status.success() {
        Ok(())
    } else {
        Err(output)
    }
}

/// Connects as Go's `net.DialTimeout` does; the error reads like Go's (`dial tcp ADDR: connect: connection
/// refused`, `dial tcp ADDR: i/o timeout`).
fn connect(address: &str, timeout: Duration) -> Result<TcpStream, String> {
    let failed = |detail: &str| format!("dial tcp {address}: {detail}");
    let target = address
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| failed("lookup failed: no such host"))?;
    TcpStream::connect_timeout(&target, timeout).map_err(|e| match e.kind() {
        ErrorKind::ConnectionRefused => failed("connect: connection refused"),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => failed("i/o timeout"),
        _ => failed(&format!("connect: {e}")),
    })
}

/// An `httpGet` probe: a status from 200 to 399 is success (a redirect is not followed).
fn http_get(url: &str, address: &str, timeout: Duration) -> Result<(), String> {
    let get_failed = |detail: &str| format!("Get \"{url}\": {detail}");
    let mut stream = connect(address, timeout).map_err(|e| get_failed(&e))?;
    let timed_out =
        || get_failed("context deadline exceeded (Client.Timeout exceeded while awaiting headers)");
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let path = url
        .strip_prefix("http://")
        .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("/");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nUser-Agent: kube-probe/1.33\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|_| timed_out())?;
    let mut head = [0_u8; 64];
    let mut read = 0;
    while read < head.len() && !head[..read].contains(&b'\n') {
        match stream.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(_) => return Err(timed_out()),
        }
    }
    let line = String::from_utf8_lossy(&head[..read]);
    let code: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| get_failed("malformed HTTP response"))?;
    if (200..400).contains(&code) {
        Ok(())
    } else {
        Err(format!("HTTP probe failed with statuscode: {code}"))
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use serde_json::json;

    use super::*;

    #[test]
    fn probes_take_the_api_defaults_and_named_ports() {
        let container = json!({"ports": [{"name": "web", "containerPort": 8080}],
            "readinessProbe": {"httpGet": {"port": "web", "path": "/healthz"}}});
        let prober = Prober::of(&container, Kind::Readiness, Instant::now()).expect("a probe");
        assert_eq!(
            (
                prober.period,
                prober.timeout,
                prober.success_threshold,
                prober.failure_threshold
            ),
            (Duration::from_secs(10), Duration::from_secs(1), 1, 3)
        );
        assert!(
            matches!(&prober.handler, Handler::Http { url, .. } if url == "http://127.0.0.1:8080/healthz")
        );
        assert!(Prober::of(&container, Kind::Liveness, Instant::now()).is_none());
    }

    #[test]
    fn failures_and_successes_settle_at_their_thresholds() {
        let container = json!({"livenessProbe": {"exec": {"command": ["true"]}, "failureThreshold": 2,
            "successThreshold": 1}});
        let mut prober = Prober::of(&container, Kind::Liveness, Instant::now()).expect("a probe");
        let failure = |settled| Verdict::Failure {
            output: "no".into(),
            settled,
        };
        assert_eq!(prober.count(Err("no".into())), failure(false));
        assert_eq!(prober.count(Err("no".into())), failure(true));
        assert_eq!(prober.count(Ok(())), Verdict::Success { settled: true });
        assert_eq!(
            prober.count(Err("no".into())),
            failure(false),
            "reset by the success"
        );
    }

    #[test]
    fn tcp_and_http_failures_read_like_the_kubelets() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bound");
        let address = listener.local_addr().expect("address").to_string();
        let serve = std::thread::spawn(move || {
            for status in ["200 OK", "503 Service Unavailable"] {
                let (mut stream, _) = listener.accept().expect("accepted");
                let mut request = [0_u8; 512];
                let _ = stream.read(&mut request);
                let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
            }
        });
        let url = format!("http://{address}/healthz");
        let second = Duration::from_secs(1);
        assert_eq!(http_get(&url, &address, second), Ok(()));
        assert_eq!(
            http_get(&url, &address, second),
            Err("HTTP probe failed with statuscode: 503".to_owned())
        );
        serve.join().expect("served");
        // Port 1 (tcpmux) has no listener: the closed port of the test above could be taken by a parallel test.
        let closed = "127.0.0.1:1";
        let url = format!("http://{closed}/healthz");
        assert_eq!(
            connect(closed, second).map(drop),
            Err(format!("dial tcp {closed}: connect: connection refused"))
        );
        assert_eq!(
            http_get(&url, closed, second),
            Err(format!(
                "Get \"{url}\": dial tcp {closed}: connect: connection refused"
            ))
        );
    }

    #[test]
    fn an_exec_probe_reports_its_output_or_its_timeout() {
        let run_exec = |argv: &[&str], timeout: Duration| {
            let argv: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
            let mut command = Command::new(&argv[0]);
            command.args(&argv[1..]);
            exec(Some(command), &argv, timeout)
        };
        let second = Duration::from_secs(1);
        assert_eq!(run_exec(&["true"], second), Ok(()));
        assert_eq!(
            run_exec(&["sh", "-c", "echo out; echo err >&2; exit 3"], second),
            Err("out\nerr\n".to_owned())
        );
        assert_eq!(
            run_exec(&["sleep", "5"], Duration::from_millis(100)),
            Err("command \"sleep 5\" timed out".to_owned())
        );
    }
}
