//! The jobs.yaml file format as Rust types, from which `schema/jobs.schema.json` is generated.
//!
//! These types describe what a user may write (including upstream's legacy forms), for editors and for
//! `toolforge-jobs schema`. Loading does not go through them: it needs PyYAML's scalar rules and source spans,
//! which serde cannot give (see docs/architecture.md). A unit test keeps the two in step: every property here
//! is a key the loader knows, and the other way round.

use schemars::JsonSchema;
use serde::Serialize;

/// A jobs.yaml file: a list of jobs, applied in order.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "Toolforge jobs file", extend("$id" = SCHEMA_ID))]
pub struct JobsFileFormat(pub Vec<JobFormat>);

/// Where the schema is published, for `# yaml-language-server: $schema=…` lines.
pub const SCHEMA_ID: &str = "https://toolforge-jobs.toolforge.org/schema/jobs.schema.json";

/// One job. Its kind follows from its keys: `schedule` makes it scheduled, `continuous: true` continuous,
/// `webservice: true` a webservice, and otherwise it is a one-off job.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct JobFormat {
    /// Name of the job and of its Kubernetes objects: lowercase letters, digits, `-` and `.`, starting and ending
    /// with a letter or digit, at most 52 characters.
    #[schemars(
        length(min = 1, max = 52),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub name: String,
    /// Shell command to run, from the tool's home directory. Required except for webservice jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Scalar>,
    /// Container image: a pre-built image's short name (`python3.11`) or alias, a full image URL, or a
    /// build-service image `tool-<tool>/<image>:<tag>`.
    pub image: String,
    /// Cron schedule (`minute hour day-of-month month day-of-week`) or `@hourly`, `@daily`, `@weekly`,
    /// `@monthly`, `@yearly` (spread over the period per tool and job). Makes the job scheduled. Quote values
    /// starting with `@`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// `true` makes the job continuous: restarted whenever it stops. Any other value is ignored with a warning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continuous: Option<bool>,
    /// `true` makes the job a webservice job (upstream's newest kind).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webservice: Option<bool>,
    /// One-off jobs only: wait until the job finished before applying the jobs after it; `true` waits up to 600
    /// seconds, a number up to that many seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait: Option<Wait>,
    /// When to email the tool's maintainers about the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emails: Option<EmailsFormat>,
    /// One-off and scheduled jobs: how many times a failed run is retried.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 5))]
    pub retry: Option<IntegerOrText>,
    /// Scheduled jobs: seconds after which a run is stopped; 0 means no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<IntegerOrText>,
    /// Memory limit as a Kubernetes quantity, e.g. `512Mi` or `2Gi` (default 512Mi).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem: Option<Scalar>,
    /// CPU as a Kubernetes quantity, e.g. `0.5`, `500m` or `2` (default 0.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Scalar>,
    /// `true` turns file logging on (the default for pre-built images). The legacy string `"yes"` is accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filelog: Option<LegacyFlag>,
    /// `true` turns file logging off. The legacy string `"true"` is accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_filelog: Option<LegacyFlag>,
    /// File for the job's standard output, absolute or relative to the tool's home (default `<name>.out`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filelog_stdout: Option<String>,
    /// File for the job's standard error, absolute or relative to the tool's home (default `<name>.err`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filelog_stderr: Option<String>,
    /// Whether the tool's storage (NFS) is mounted: `all` (default for pre-built images) or `none` (build-service
    /// images only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount: Option<MountFormat>,
    /// Continuous jobs: the port the job listens on, `8000`, `8000/tcp` or `53/udp`; creates a Service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<IntegerOrText>,
    /// Continuous jobs: how many copies run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntegerOrText>,
    /// Continuous jobs: shell command whose success means the job is healthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check_script: Option<String>,
    /// Continuous jobs with a `port`: HTTP path that answers 2xx when the job is healthy, e.g. `/healthz`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check_http: Option<String>,
    /// Continuous jobs with a TCP `port`: `/` publishes the job at `https://<tool>.toolforge.org/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publish: Option<String>,
    /// Extension: an opaque value; changing it re-runs a one-off job, restarts a continuous job, and runs a
    /// scheduled job once now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Scalar>,
    /// Extension: files (globs relative to this file's directory) whose names and contents are part of the
    /// job's fingerprint, so editing them re-runs or restarts the job. A glob matching nothing is an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_files: Option<TriggerFiles>,
    /// Extension, one-off jobs: `on-change` (default) runs the job once per fingerprint; `always` runs it on
    /// every apply, like upstream's `load`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerun: Option<RerunFormat>,
    /// Extension, scheduled jobs: IANA time zone of the schedule, e.g. `Europe/Berlin` (default UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

/// A value upstream reads as text: a string, a number or a boolean.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Scalar {
    Text(String),
    Number(f64),
    Boolean(bool),
}

/// A whole number, also accepted as text as upstream does (`"3"`).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum IntegerOrText {
    Integer(i64),
    Text(String),
}

/// `true`, or a number of seconds.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Wait {
    Flag(bool),
    Seconds(#[schemars(range(min = 0))] u64),
}

/// `true`, or the legacy string form old `toolforge jobs dump` wrote.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum LegacyFlag {
    Flag(bool),
    Legacy(String),
}

/// One glob, or a list of globs.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum TriggerFiles {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EmailsFormat {
    None,
    All,
    Onfinish,
    Onfailure,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MountFormat {
    All,
    None,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RerunFormat {
    OnChange,
    Always,
}

/// The JSON Schema of jobs.yaml, as checked in at `schema/jobs.schema.json`.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(JobsFileFormat);
    // Serialising a `serde_json::Value`-backed schema cannot fail.
    let mut text = serde_json::to_string_pretty(&schema).expect("schema serialises");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Key;

    #[test]
    fn schema_properties_are_exactly_the_loader_keys() {
        let schema: serde_json::Value = serde_json::from_str(&json_schema()).unwrap();
        let properties = schema["$defs"]["JobFormat"]["properties"]
            .as_object()
            .unwrap();
        let mut in_schema: Vec<&str> = properties.keys().map(String::as_str).collect();
        let mut in_loader: Vec<&str> = Key::ALL.iter().map(|key| key.as_str()).collect();
        in_schema.sort_unstable();
        in_loader.sort_unstable();
        assert_eq!(in_schema, in_loader);
    }
}
