//! The pod template every kind shares (reference/toolforge.md §3.4, §3.7): one container `job`, the tool's uid,
//! upstream's resources rules, probes, grace period and topology spread.
//!
//! Volumes are deliberately absent: the volume-admission webhook adds them from the `toolforge.org/mount-storage`
//! label, as it does for upstream's objects.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, ExecAction, HTTPGetAction, PodSecurityContext,
    PodSpec, PodTemplateSpec, Probe, ResourceRequirements, SeccompProfile, SecurityContext,
    TCPSocketAction, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::config::quantity::Quantity as ParsedQuantity;
use crate::model::labels::Labels;
use crate::render::RenderError;
use crate::render::canonical::CanonicalJob;
use crate::render::command::{container_command, probe_command};
use crate::render::context::RenderContext;
use crate::render::quantities::{Memory, cpu_text};

/// The container's name in every pod upstream creates.
pub const CONTAINER_NAME: &str = "job";
pub const TERMINATION_GRACE_PERIOD_SECONDS: i64 = 15;
/// Env var that tells the admission webhook not to set `HOME` (build-service images have no home).
pub const NO_HOME: &str = "NO_HOME";
const NO_HOME_VALUE: &str = "a buildservice pod does not need a home env";

/// The pod template of `job`'s workload; `restart_policy` is `Never` for Jobs and `Always` for Deployments.
/// `labels` are the job's upstream labels ([`crate::render::label_sets::workload`]) and `spread_selector` its
/// reduced Deployment selector ([`crate::model::labels::deployment_selector`]): upstream spreads the pods over
/// those labels (no `component`).
pub fn template(
    job: &CanonicalJob,
    context: &RenderContext,
    restart_policy: &str,
    (labels, spread_selector): (Labels, Labels),
    template_annotations: BTreeMap<String, String>,
) -> Result<PodTemplateSpec, RenderError> {
    let uid = i64::from(context.uid);
    Ok(PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels),
            annotations: (!template_annotations.is_empty()).then_some(template_annotations),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container(job, context)?],
            restart_policy: Some(restart_policy.to_owned()),
            termination_grace_period_seconds: Some(TERMINATION_GRACE_PERIOD_SECONDS),
            security_context: Some(PodSecurityContext {
                fs_group: Some(uid),
                run_as_group: Some(uid),
                run_as_non_root: Some(true),
                run_as_user: Some(uid),
                seccomp_profile: Some(SeccompProfile {
                    type_: "RuntimeDefault".to_owned(),
                    ..SeccompProfile::default()
                }),
                ..PodSecurityContext::default()
            }),
            topology_spread_constraints: Some(vec![TopologySpreadConstraint {
                label_selector: Some(LabelSelector {
                    match_labels: Some(spread_selector),
                    ..LabelSelector::default()
                }),
                max_skew: 1,
                topology_key: "kubernetes.io/hostname".to_owned(),
                when_unsatisfiable: "ScheduleAnyway".to_owned(),
                ..TopologySpreadConstraint::default()
            }]),
            ..PodSpec::default()
        }),
    })
}

fn container(job: &CanonicalJob, context: &RenderContext) -> Result<Container, RenderError> {
    let build_service = job.is_build_service();
    let command_error = |field: &'static str| {
        let job = job.name.clone();
        move |source| RenderError::Command { job, field, source }
    };
    let mut env = Vec::new();
    if build_service {
        env.push(env_var(NO_HOME, NO_HOME_VALUE));
    }
    if let Some(port) = job.port {
        env.push(env_var("PORT", &port.to_string()));
    }
    let uid = i64::from(context.uid);
    let (startup_probe, liveness_probe) = probes(job, build_service)
        .map_err(command_error("health-check-script"))?
        .unzip();
    Ok(Container {
        name: CONTAINER_NAME.to_owned(),
        image: Some(job.image.clone()),
        command: container_command(job).map_err(command_error("command"))?,
        working_dir: (!build_service).then(|| context.home.clone()),
        env: (!env.is_empty()).then_some(env),
        ports: job.port.map(|port| {
            vec![ContainerPort {
                container_port: i32::from(port),
                protocol: Some(protocol(job).to_owned()),
                ..ContainerPort::default()
            }]
        }),
        resources: Some(resources(job, context)),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_owned()]),
                ..Capabilities::default()
            }),
            privileged: Some(false),
            read_only_root_filesystem: Some(false),
            run_as_group: Some(uid),
            run_as_non_root: Some(true),
            run_as_user: Some(uid),
            ..SecurityContext::default()
        }),
        startup_probe,
        liveness_probe,
        ..Container::default()
    })
}

/// `TCP` or `UDP`, as Kubernetes spells protocols.
pub(crate) fn protocol(job: &CanonicalJob) -> &'static str {
    if job.port_protocol.as_deref() == Some("udp") {
        "UDP"
    } else {
        "TCP"
    }
}

fn env_var(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        ..EnvVar::default()
    }
}

fn resources(job: &CanonicalJob, context: &RenderContext) -> ResourceRequirements {
    // `mem` is already upstream's normalised `X.YYYGi` text, which parses as a quantity.
    let memory = ParsedQuantity::parse(&job.mem)
        .ok()
        .map(|mem| Memory::of(&mem));
    // The cluster default is written as configured (`1000m`); any other limit in upstream's decimal form.
    let cpu_limit =
        if job.has_default_cpu() && job.cpu_limit == cpu_text(&context.default_cpu_limit) {
            context.default_cpu_limit.as_str().to_owned()
        } else {
            job.cpu_limit.clone()
        };
    let quantities = |memory: Option<String>, cpu: String| {
        let mut map = BTreeMap::new();
        if let Some(memory) = memory {
            map.insert("memory".to_owned(), Quantity(memory));
        }
        map.insert("cpu".to_owned(), Quantity(cpu));
        map
    };
    ResourceRequirements {
        limits: Some(quantities(memory.map(Memory::limit_text), cpu_limit)),
        requests: Some(quantities(
            memory.map(Memory::request_text),
            job.cpu.clone(),
        )),
        ..ResourceRequirements::default()
    }
}

/// Startup and liveness probes: the health check, else a TCP check of a TCP port, else none.
fn probes(
    job: &CanonicalJob,
    build_service: bool,
) -> Result<Option<(Probe, Probe)>, crate::render::shell::SplitError> {
    let check = if let Some(script) = &job.health_check_script {
        Probe {
            exec: Some(ExecAction {
                command: Some(probe_command(script, build_service)?),
            }),
            ..Probe::default()
        }
    } else if let Some(path) = &job.health_check_http {
        Probe {
            http_get: Some(HTTPGetAction {
                path: Some(path.clone()),
                port: IntOrString::Int(job.port.map_or(0, i32::from)),
                ..HTTPGetAction::default()
            }),
            ..Probe::default()
        }
    } else if let Some(port) = job.port
        && protocol(job) == "TCP"
    {
        Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::Int(i32::from(port)),
                ..TCPSocketAction::default()
            }),
            ..Probe::default()
        }
    } else {
        return Ok(None);
    };
    let timed = |period, failure_threshold| Probe {
        initial_delay_seconds: Some(0),
        period_seconds: Some(period),
        failure_threshold: Some(failure_threshold),
        timeout_seconds: Some(5),
        ..check.clone()
    };
    Ok(Some((timed(1, 120), timed(10, 3))))
}
