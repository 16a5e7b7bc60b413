//! The canonical job: one job with every default resolved, the common ground of rendering, hashing and read-back.
//!
//! [`canonical`] resolves what the user left out (file logging and mounts by image kind, log paths against the
//! home, memory and CPU in upstream's normalised texts, the image's full URL) and normalises what has several
//! spellings with the same effect (a `launcher ` prefix on build-service commands, shell quoting of commands that
//! are split into words). Rendering builds objects only from this value, and read-back produces the same type
//! from live objects, so "is the live job the desired job?" is a field-by-field comparison.
//!
//! Its JSON serialisation (fields in declaration order, absent values omitted) is the input of [`desired_hash`].

use serde::{Deserialize, Serialize};

use crate::config::job::{Emails, HealthCheck, Job, JobKind, Mount, Protocol};
use crate::config::quantity::Quantity;
use crate::model::Kind;
use crate::model::digest::sha256_hex;
use crate::render::RenderError;
use crate::render::context::RenderContext;
use crate::render::image;
use crate::render::quantities::{Memory, cpu_text};
use crate::render::shell;

/// Upstream's memory when `mem` is not set.
pub const DEFAULT_MEMORY: &str = "512Mi";
/// Upstream's CPU request when `cpu` is not set.
pub const DEFAULT_CPU: &str = "100m";
/// Upstream's `cpu` in normalised form; a job with this CPU gets the cluster's default limit.
pub const DEFAULT_CPU_TEXT: &str = "0.1";
/// Upstream's memory in normalised form.
pub const DEFAULT_MEMORY_TEXT: &str = "0.5Gi";
/// Build-service images run their command through this program (it sets up the buildpack environment).
pub(crate) const LAUNCHER: &str = "launcher";

/// Prefix of the hashed bytes; bumping it marks a change of the canonical form, which changes every hash once.
const HASH_FORMAT: &[u8] = b"toolforge-jobs canonical job v1\n";

/// A job with every default resolved; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CanonicalJob {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: Kind,
    /// The user's command; for build-service images without a leading `launcher `, and quoted the way
    /// `shlex.join` quotes when the command is split into words. `None` only for a webservice without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The full image reference the container gets, `host/path:tag[@digest]`.
    pub image: String,
    /// The schedule as written (scheduled jobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The expression Kubernetes gets (scheduled jobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_actual: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Seconds; absent when there is no timeout (also for `timeout: 0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// One-off and scheduled jobs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<u8>,
    pub emails: String,
    /// Memory in upstream's normalised form, `0.5Gi`.
    pub mem: String,
    /// CPU request in upstream's normalised form, `0.1`.
    pub cpu: String,
    /// CPU limit, normalised like `cpu`.
    pub cpu_limit: String,
    pub filelog: bool,
    /// Absolute paths; present exactly when `filelog` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filelog_stdout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filelog_stderr: Option<String>,
    /// `all` or `none`.
    pub mount: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// `tcp` or `udp`; present exactly when `port` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_protocol: Option<String>,
    /// Continuous jobs and webservices only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_script: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_http: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<String>,
}

impl CanonicalJob {
    /// Whether the image comes from the build service (which changes command, mount and logging rules).
    pub fn is_build_service(&self) -> bool {
        crate::config::image::parse_image_name(&self.image)
            .is_ok_and(|name| name.is_build_service())
    }

    /// Whether the job uses upstream's default CPU, which gets the cluster's default limit.
    pub(crate) fn has_default_cpu(&self) -> bool {
        self.cpu == DEFAULT_CPU_TEXT
    }

    /// The JSON text that [`desired_hash`] hashes.
    pub fn to_canonical_json(&self) -> String {
        // A struct of strings, integers, booleans and options of those always serialises.
        serde_json::to_string(self).expect("a canonical job serialises to JSON")
    }
}

/// One field in which two canonical jobs differ; `None` where a job does not have the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The field's name in the canonical JSON, e.g. `mem` or `filelog-stdout`.
    pub field: String,
    pub live: Option<serde_json::Value>,
    pub desired: Option<serde_json::Value>,
}

impl CanonicalJob {
    /// The fields in which `self` (live) differs from `desired`, sorted by name: what drift reports list.
    pub fn differences(&self, desired: &CanonicalJob) -> Vec<Difference> {
        // Equal jobs serialise equally; most jobs of a plan are unchanged, so skip building their JSON.
        if self == desired {
            return Vec::new();
        }
        let fields = |job: &CanonicalJob| match serde_json::to_value(job) {
            Ok(serde_json::Value::Object(fields)) => fields,
            // A struct always serialises to a JSON object.
            _ => serde_json::Map::new(),
        };
        let (live, desired) = (fields(self), fields(desired));
        let names: std::collections::BTreeSet<&String> =
            live.keys().chain(desired.keys()).collect();
        names
            .into_iter()
            .filter(|name| live.get(*name) != desired.get(*name))
            .map(|name| Difference {
                field: name.clone(),
                live: live.get(name).cloned(),
                desired: desired.get(name).cloned(),
            })
            .collect()
    }
}

/// SHA-256 (hex) of the canonical JSON of `job`, for the `jobs.toolforge.org/desired-hash` annotation.
pub fn desired_hash(job: &CanonicalJob) -> String {
    sha256_hex(&[HASH_FORMAT, job.to_canonical_json().as_bytes()])
}

/// Resolves every default of `job` for the given cluster.
pub fn canonical(job: &Job, context: &RenderContext) -> Result<CanonicalJob, RenderError> {
    let build_service = job.image_name.is_build_service();
    let webservice = matches!(job.kind, JobKind::Webservice(_));
    // Upstream refuses every file-logging key on a webservice, so a webservice never logs to files.
    let filelog = !webservice && job.file_log.enabled.unwrap_or(!build_service);
    let log_path = |written: &Option<String>, extension: &str| {
        let path = written
            .clone()
            .unwrap_or_else(|| format!("{}.{extension}", job.name));
        absolute_in(&context.home, &path)
    };
    let memory = Memory::of(
        &job.mem
            .clone()
            .unwrap_or_else(|| default_quantity(DEFAULT_MEMORY)),
    );
    let cpu = cpu_text(
        &job.cpu
            .clone()
            .unwrap_or_else(|| default_quantity(DEFAULT_CPU)),
    );
    let cpu_limit = if cpu == DEFAULT_CPU_TEXT {
        cpu_text(&context.default_cpu_limit)
    } else {
        cpu.clone()
    };
    let command = job
        .command
        .as_deref()
        .map(|command| canonical_command(command, build_service, filelog))
        .transpose()
        .map_err(|source| RenderError::Command {
            job: job.name.clone(),
            field: "command",
            source,
        })?;

    let mut canonical = CanonicalJob {
        name: job.name.clone(),
        kind: Kind::OneOff,
        command,
        image: image::reference(job, context)?,
        schedule: None,
        schedule_actual: None,
        timezone: None,
        timeout: None,
        retry: None,
        emails: job.emails.unwrap_or(Emails::None).name().to_owned(),
        mem: memory.limit_text(),
        cpu,
        cpu_limit,
        filelog,
        filelog_stdout: filelog.then(|| log_path(&job.file_log.stdout, "out")),
        filelog_stderr: filelog.then(|| log_path(&job.file_log.stderr, "err")),
        mount: job
            .mount
            .unwrap_or(if build_service {
                Mount::None
            } else {
                Mount::All
            })
            .name()
            .to_owned(),
        port: None,
        port_protocol: None,
        replicas: None,
        health_check_script: None,
        health_check_http: None,
        publish: None,
    };
    resolve_kind(&mut canonical, job, build_service)?;
    Ok(canonical)
}

/// Fills in the settings that exist only for the job's kind.
fn resolve_kind(
    canonical: &mut CanonicalJob,
    job: &Job,
    build_service: bool,
) -> Result<(), RenderError> {
    match &job.kind {
        JobKind::OneOff { retry, .. } => canonical.retry = Some(retry.unwrap_or(0)),
        JobKind::Scheduled {
            schedule,
            retry,
            timeout,
            timezone,
        } => {
            canonical.kind = Kind::Scheduled;
            canonical.schedule = Some(schedule.expression.clone());
            canonical.schedule_actual = Some(schedule.actual.clone());
            canonical.timezone.clone_from(timezone);
            canonical.timeout = timeout.filter(|seconds| *seconds > 0);
            canonical.retry = Some(retry.unwrap_or(0));
        }
        JobKind::Continuous(service) | JobKind::Webservice(service) => {
            let webservice = matches!(job.kind, JobKind::Webservice(_));
            canonical.kind = if webservice {
                Kind::Webservice
            } else {
                Kind::Continuous
            };
            canonical.replicas = Some(service.replicas.unwrap_or(1));
            if let Some(port) = service.port {
                canonical.port = Some(port.number);
                // Upstream ignores the protocol part of a webservice's port.
                let protocol = if webservice {
                    Protocol::Tcp
                } else {
                    port.protocol
                };
                canonical.port_protocol = Some(protocol.name().to_owned());
            }
            match &service.health_check {
                Some(HealthCheck::Script(script)) => {
                    canonical.health_check_script = Some(
                        canonical_health_script(script, build_service).map_err(|source| {
                            RenderError::Command {
                                job: job.name.clone(),
                                field: "health-check-script",
                                source,
                            }
                        })?,
                    );
                }
                Some(HealthCheck::Http(path)) => canonical.health_check_http = Some(path.clone()),
                None => {}
            }
            canonical.publish.clone_from(&service.publish);
        }
    }
    Ok(())
}

/// `path` made absolute against `home`, as upstream does for log paths.
pub(crate) fn absolute_in(home: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{home}/{path}")
    }
}

/// The command as rendering and read-back agree on it; see [`CanonicalJob::command`].
fn canonical_command(
    command: &str,
    build_service: bool,
    filelog: bool,
) -> Result<String, shell::SplitError> {
    if !build_service {
        return Ok(command.to_owned());
    }
    let launched = with_launcher(command);
    let launched = if filelog {
        launched
    } else {
        shell::join(&shell::split(&launched)?)
    };
    Ok(without_launcher(&launched).to_owned())
}

fn canonical_health_script(script: &str, build_service: bool) -> Result<String, shell::SplitError> {
    if build_service {
        Ok(shell::join(&shell::split(script)?))
    } else {
        Ok(script.to_owned())
    }
}

/// Upstream prefixes build-service commands with `launcher ` unless they already start with it.
pub(crate) fn with_launcher(command: &str) -> String {
    if command == LAUNCHER || command.starts_with("launcher ") {
        command.to_owned()
    } else {
        format!("{LAUNCHER} {command}")
    }
}

pub(crate) fn without_launcher(command: &str) -> &str {
    command.strip_prefix("launcher ").unwrap_or(command)
}

fn default_quantity(text: &str) -> Quantity {
    // Only called with the constants above, which the unit tests parse.
    Quantity::parse(text).expect("default quantities are valid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::image::ImageTable;
    use crate::config::{self, SourceFile};
    use crate::render::context::{DEFAULT_SET_NAME, Membership};

    fn context() -> RenderContext {
        RenderContext::toolforge(
            &crate::model::ToolName::new("mytool").unwrap(),
            52503,
            ImageTable::bundled(),
            Membership {
                set_name: DEFAULT_SET_NAME.to_owned(),
                applyset_id: "applyset-test-v1".to_owned(),
            },
        )
    }

    /// The one job of a jobs file holding `yaml` (a single job mapping, without the leading `- `).
    fn job(yaml: &str) -> Job {
        let text = format!("- {}", yaml.trim().replace('\n', "\n  "));
        let images = ImageTable::bundled();
        let validation = config::Context {
            tool: "mytool",
            images: &images,
            count_trigger_files: None,
        };
        let file =
            config::load(SourceFile::new("jobs.yaml".to_owned(), text), &validation).unwrap();
        file.jobs.into_iter().next().unwrap().job
    }

    fn resolve(yaml: &str) -> CanonicalJob {
        canonical(&job(yaml), &context()).unwrap()
    }

    #[test]
    fn prebuilt_images_log_to_files_in_the_home_and_mount_storage() {
        let job = resolve("name: bot\ncommand: ./bot.py\nimage: python3.11\ncontinuous: true");
        assert!(job.filelog);
        assert_eq!(
            job.filelog_stdout.as_deref(),
            Some("/data/project/mytool/bot.out")
        );
        assert_eq!(
            job.filelog_stderr.as_deref(),
            Some("/data/project/mytool/bot.err")
        );
        assert_eq!(job.mount, "all");
        assert_eq!(job.replicas, Some(1));
        assert_eq!(job.retry, None);
        assert_eq!(
            job.image,
            "docker-registry.svc.toolforge.org/toolforge-python311-sssd-web:latest"
        );
        assert_eq!(
            (job.mem.as_str(), job.cpu.as_str(), job.cpu_limit.as_str()),
            ("0.5Gi", "0.1", "1.0")
        );
    }

    #[test]
    fn build_service_images_neither_log_to_files_nor_mount_storage() {
        let job = resolve("name: bot\ncommand: bot\nimage: tool-mytool/bot:latest");
        assert!(!job.filelog);
        assert_eq!(job.filelog_stdout, None);
        assert_eq!(job.mount, "none");
        assert_eq!(job.retry, Some(0));
        assert_eq!(job.image, "tools-harbor.wmcloud.org/tool-mytool/bot:latest");
    }

    #[test]
    fn writing_a_default_out_changes_nothing() {
        let implicit = resolve("name: bot\ncommand: ./bot.py\nimage: python3.11");
        let explicit = resolve(
            "name: bot\ncommand: ./bot.py\nimage: tf-python311\nmem: 512Mi\ncpu: 100m\nemails: none\n\
             filelog: true\nmount: all\nretry: 0\nfilelog-stdout: bot.out\nfilelog-stderr: /data/project/mytool/bot.err",
        );
        assert_eq!(implicit, explicit);
        assert_eq!(desired_hash(&implicit), desired_hash(&explicit));
    }

    #[test]
    fn launcher_prefix_and_quoting_are_normalised_for_split_commands() {
        let hashes: Vec<String> = [
            r#"bot --title "a b""#,
            r"launcher bot --title 'a b'",
            r"bot   --title a\ b",
        ]
        .iter()
        .map(|command| {
            let yaml = format!(
                "name: bot\ncommand: '{}'\nimage: tool-mytool/bot:latest",
                command.replace('\'', "''")
            );
            let job = resolve(&yaml);
            assert_eq!(
                job.command.as_deref(),
                Some("bot --title 'a b'"),
                "{command}"
            );
            desired_hash(&job)
        })
        .collect();
        assert!(hashes.windows(2).all(|pair| pair[0] == pair[1]));
    }

    #[test]
    fn a_different_command_is_a_different_hash() {
        let one = resolve("name: bot\ncommand: ./bot.py\nimage: python3.11");
        let other = resolve("name: bot\ncommand: ./bot.py --fast\nimage: python3.11");
        assert_ne!(desired_hash(&one), desired_hash(&other));
    }

    #[test]
    fn differences_name_each_changed_field_with_both_values() {
        let live = resolve("name: bot\ncommand: ./bot.py\nimage: python3.11\nmem: 1Gi");
        let desired =
            resolve("name: bot\ncommand: ./bot.py\nimage: python3.11\nmem: 2Gi\nno-filelog: true");
        let differences = live.differences(&desired);
        let fields: Vec<&str> = differences
            .iter()
            .map(|difference| difference.field.as_str())
            .collect();
        assert_eq!(
            fields,
            ["filelog", "filelog-stderr", "filelog-stdout", "mem"]
        );
        let mem = &differences[3];
        assert_eq!(mem.live, Some(serde_json::json!("1.0Gi")));
        assert_eq!(mem.desired, Some(serde_json::json!("2.0Gi")));
        assert_eq!(differences[1].desired, None);
        assert_eq!(live.differences(&live), []);
    }

    #[test]
    fn the_hash_is_sha256_of_the_documented_json() {
        let job = resolve("name: bot\ncommand: ./bot.py\nimage: python3.11");
        assert_eq!(
            job.to_canonical_json(),
            r#"{"name":"bot","type":"one-off","command":"./bot.py","image":"docker-registry.svc.toolforge.org/toolforge-python311-sssd-web:latest","retry":0,"emails":"none","mem":"0.5Gi","cpu":"0.1","cpu-limit":"1.0","filelog":true,"filelog-stdout":"/data/project/mytool/bot.out","filelog-stderr":"/data/project/mytool/bot.err","mount":"all"}"#
        );
        // Computed independently: sha256(b"toolforge-jobs canonical job v1\n" + the JSON above) with Python's hashlib.
        assert_eq!(
            desired_hash(&job),
            "f1307c0220c2966bfe0c7c8202ac6124d39d410fff1d59e087b76f1a502bfb30"
        );
    }

    #[test]
    fn full_image_urls_keep_their_tag() {
        let job = resolve(
            "name: bot\ncommand: x\nimage: docker-registry.svc.toolforge.org/toolforge-python311-sssd-web:2024.1",
        );
        assert_eq!(
            job.image,
            "docker-registry.svc.toolforge.org/toolforge-python311-sssd-web:2024.1"
        );
        let digest = format!("sha256:{}", "0".repeat(64));
        let pinned = resolve(&format!(
            "name: bot\ncommand: x\nimage: python3.11@{digest}"
        ));
        assert_eq!(
            pinned.image,
            format!(
                "docker-registry.svc.toolforge.org/toolforge-python311-sssd-web:latest@{digest}"
            )
        );
    }

    #[test]
    fn build_service_images_get_the_harbor_host_unless_they_name_one() {
        let digest = format!("sha256:{}", "f".repeat(64));
        for (written, reference) in [
            (
                "tool-mytool/bot",
                "tools-harbor.wmcloud.org/tool-mytool/bot:latest".to_owned(),
            ),
            (
                "harbor.example/tool-other/bot:v1",
                "harbor.example/tool-other/bot:v1".to_owned(),
            ),
            (
                &format!("tool-mytool/bot@{digest}"),
                format!("tools-harbor.wmcloud.org/tool-mytool/bot@{digest}"),
            ),
        ] {
            let job = resolve(&format!("name: bot\ncommand: x\nimage: {written}"));
            assert_eq!(job.image, reference);
        }
    }

    #[test]
    fn images_missing_from_the_cluster_table_cannot_be_rendered() {
        // The loader knows the image from its bundled table; the cluster's table no longer has it.
        let mut bot = job("name: bot\ncommand: x\nimage: python3.11");
        bot.image = "python9.9".to_owned();
        bot.image_name = crate::config::image::ImageName::Prebuilt("python9.9".to_owned());
        let error = canonical(&bot, &context()).unwrap_err();
        assert_eq!(error.to_string(), "job `bot`: No such image 'python9.9'");
    }

    #[test]
    fn unbalanced_quotes_in_a_split_command_are_reported() {
        let error = canonical(
            &job("name: bot\ncommand: \"bot 'oops\"\nimage: tool-mytool/bot:latest"),
            &context(),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "job `bot`: `command` cannot be split into words"
        );
    }

    #[test]
    fn webservices_never_log_to_files() {
        let job = resolve(
            "name: web\ncommand: ./serve.py\nimage: python3.11\nwebservice: true\nport: 8000/udp",
        );
        assert!(!job.filelog);
        assert_eq!(job.kind, Kind::Webservice);
        assert_eq!(job.port_protocol.as_deref(), Some("tcp"));
    }

    #[test]
    fn a_zero_timeout_is_no_timeout() {
        let job = resolve(
            "name: nightly\ncommand: x\nimage: python3.11\nschedule: '0 3 * * *'\ntimeout: 0",
        );
        assert_eq!(job.timeout, None);
        assert_eq!(job.schedule_actual.as_deref(), Some("0 3 * * *"));
    }

    #[test]
    fn local_homes_hold_the_log_files() {
        let context = RenderContext::new(
            &context().tool,
            "/home/me/bot",
            1000,
            ImageTable::bundled(),
            context().membership,
        );
        let job = canonical(
            &job("name: bot\ncommand: x\nimage: python3.11\nfilelog-stdout: logs/out"),
            &context,
        )
        .unwrap();
        assert_eq!(job.filelog_stdout.as_deref(), Some("/home/me/bot/logs/out"));
        assert_eq!(job.filelog_stderr.as_deref(), Some("/home/me/bot/bot.err"));
    }
}
