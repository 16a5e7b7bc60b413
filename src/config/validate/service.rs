//! Settings of long-running jobs: `replicas`, `port`, health checks and `publish`.

use crate::config::diagnostic::Problem;
use crate::config::fields::{Fields, python_int};
use crate::config::job::{HealthCheck, Port, Protocol, Service};
use crate::config::keys::Key;

pub(super) fn service(fields: &Fields<'_>, problems: &mut Vec<Problem>) -> Service {
    let replicas = fields
        .integer_in(Key::Replicas, 0..=i64::from(u32::MAX), problems)
        .and_then(|(replicas, _)| u32::try_from(replicas).ok());
    let port = port(fields, problems);
    let script = fields.text(Key::HealthCheckScript, problems);
    let http = fields.text(Key::HealthCheckHttp, problems);
    let health_check = match (script, http) {
        (Some(_), Some((_, entry))) => {
            problems.push(
                Problem::error(
                    "jobs::conflicting_keys",
                    entry.range(),
                    "`health-check-script` and `health-check-http` cannot both be set",
                )
                .with_label("conflicts with `health-check-script`")
                .with_help("keep one of the two"),
            );
            None
        }
        (Some((script, _)), None) => Some(HealthCheck::Script(script)),
        (None, Some((path, entry))) => {
            if port.is_none() && !fields.has(Key::Port) {
                problems.push(
                    Problem::error(
                        "jobs::missing_key",
                        entry.range(),
                        "`health-check-http` requires `port`",
                    )
                    .with_label("checks an HTTP path on the job's port")
                    .with_help("add `port:` with the port the job listens on"),
                );
            }
            Some(HealthCheck::Http(path))
        }
        (None, None) => None,
    };
    let publish = fields
        .text(Key::Publish, problems)
        .and_then(|(path, entry)| {
            if path != "/" {
                problems.push(
                    Problem::error(
                        "jobs::invalid_value",
                        entry.value_range(),
                        format!("`publish` must be `/`, not `{path}`"),
                    )
                    .with_label("only `/` can be published")
                    .with_help(
                        "write `publish: /` to expose the job at https://<tool>.toolforge.org/",
                    ),
                );
                return None;
            }
            match port {
                Some(Port {
                    protocol: Protocol::Tcp,
                    ..
                }) => {}
                _ => problems.push(
                    Problem::error(
                        "jobs::missing_key",
                        entry.range(),
                        "`publish` requires a TCP `port`",
                    )
                    .with_label("needs a port to route to")
                    .with_help("add `port:` with the TCP port the job serves HTTP on"),
                ),
            }
            Some(path)
        });
    Service {
        replicas,
        port,
        health_check,
        publish,
    }
}

fn port(fields: &Fields<'_>, problems: &mut Vec<Problem>) -> Option<Port> {
    let (text, entry) = fields.text(Key::Port, problems)?;
    let (number, protocol) = match text.split_once('/') {
        Some((number, protocol)) => (number, Some(protocol)),
        None => (text.as_str(), None),
    };
    let number = python_int(number)
        .ok()
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| *n > 0);
    let protocol = match protocol {
        None | Some("tcp") => Some(Protocol::Tcp),
        Some("udp") => Some(Protocol::Udp),
        Some(_) => None,
    };
    if let (Some(number), Some(protocol)) = (number, protocol) {
        return Some(Port { number, protocol });
    }
    problems.push(
        Problem::error("jobs::invalid_port", entry.value_range(), format!("`{text}` is not a valid port"))
            .with_label("invalid port")
            .with_help("write a number from 1 to 65535, optionally with a protocol: `8000`, `8000/tcp` or `53/udp`"),
    );
    None
}
