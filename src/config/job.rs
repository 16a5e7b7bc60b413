//! The validated job: what one entry of jobs.yaml means, with every rule of SPEC §3 already checked.
//!
//! Types here make invalid combinations unrepresentable: `retry` exists only for one-off and scheduled jobs,
//! `port` only for continuous ones, and so on. Values the user did not write stay `None`; resolving defaults
//! (which depend on the image kind and the cluster) is rendering's job.

use std::ops::Range;

use crate::config::image::ImageName;
use crate::config::quantity::Quantity;
use crate::config::schedule::Schedule;

/// One job of a jobs file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub name: String,
    /// Shell text to run; only a webservice job may omit it.
    pub command: Option<String>,
    /// The image as written, and what it names.
    pub image: String,
    pub image_name: ImageName,
    pub kind: JobKind,
    pub emails: Option<Emails>,
    pub mem: Option<Quantity>,
    pub cpu: Option<Quantity>,
    pub file_log: FileLog,
    pub mount: Option<Mount>,
    /// Our extension: an opaque value whose change re-runs or restarts the job.
    pub trigger: Option<String>,
    /// Our extension: globs, relative to the file's directory, whose matched files are part of the fingerprint.
    pub trigger_files: Vec<String>,
}

/// The kind of job and the settings that exist only for that kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobKind {
    /// Runs once (a Kubernetes Job).
    OneOff {
        retry: Option<u8>,
        /// Seconds to wait for the job to finish before later jobs of the file are applied.
        wait: Option<u64>,
        rerun: Option<Rerun>,
    },
    /// Runs on a cron schedule (a Kubernetes CronJob).
    Scheduled {
        schedule: Schedule,
        retry: Option<u8>,
        /// Seconds after which a run is stopped (`activeDeadlineSeconds`).
        timeout: Option<u64>,
        /// Our extension: IANA time zone of the schedule.
        timezone: Option<String>,
    },
    /// Runs forever (a Kubernetes Deployment, plus a Service when it has a port).
    Continuous(Service),
    /// Upstream's newest job type: a continuous job serving the tool's web traffic.
    Webservice(Service),
}

/// Settings of the long-running kinds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Service {
    pub replicas: Option<u32>,
    pub port: Option<Port>,
    pub health_check: Option<HealthCheck>,
    /// Only `/` is valid; continuous jobs only.
    pub publish: Option<String>,
}

impl JobKind {
    /// The word upstream uses for the kind in `list` and messages.
    pub fn label(&self) -> &'static str {
        match self {
            JobKind::OneOff { .. } => "one-off",
            JobKind::Scheduled { .. } => "scheduled",
            JobKind::Continuous(_) => "continuous",
            JobKind::Webservice(_) => "webservice",
        }
    }
}

/// When the emailer writes to the tool's maintainers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emails {
    None,
    All,
    Onfinish,
    Onfailure,
}

impl Emails {
    pub const NAMES: [&str; 4] = ["none", "all", "onfinish", "onfailure"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "none" => Some(Self::None),
            "all" => Some(Self::All),
            "onfinish" => Some(Self::Onfinish),
            "onfailure" => Some(Self::Onfailure),
            _ => None,
        }
    }

    /// The value as upstream writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::All => "all",
            Self::Onfinish => "onfinish",
            Self::Onfailure => "onfailure",
        }
    }
}

/// Whether the tool's NFS storage is mounted into the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mount {
    All,
    None,
}

impl Mount {
    /// The value as upstream writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::None => "none",
        }
    }
}

/// When a one-off job runs again (our extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rerun {
    /// Only when its fingerprint changes (the default).
    OnChange,
    /// On every apply, like upstream's `load`.
    Always,
}

/// File logging settings as written; `enabled: None` means "the image kind's default".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileLog {
    pub enabled: Option<bool>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
}

/// The port a continuous job listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Port {
    pub number: u16,
    pub protocol: Protocol,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Tcp,
    Udp,
}

impl Protocol {
    /// The value as upstream writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Udp => "udp",
        }
    }
}

/// How Kubernetes checks that a continuous job is healthy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HealthCheck {
    Script(String),
    Http(String),
}

/// A job together with where it stands in the file, for later diagnostics (plan conflicts, apply failures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedJob {
    pub job: Job,
    /// The whole job mapping.
    pub span: Range<usize>,
}
