//! The namespace's `LimitRange` as it bounds one container, and the jobs whose resources fall outside it.
//!
//! Upstream checks `mem` and `cpu` against the `Container` entry of the tool's `LimitRange` before creating
//! anything; so do we, so that `diff` can show the problem as a plan error instead of `apply` failing half-way.
//! Kubernetes applies `min` and `max` to both requests and limits; since a rendered request never exceeds its
//! limit, checking requests against `min` and limits against `max` covers all four.

use std::fmt;

use k8s_openapi::api::core::v1::LimitRange;

use crate::config::quantity::Quantity;
use crate::render::canonical::CanonicalJob;
use crate::render::quantities::Memory;

/// The per-container bounds of a namespace; `None` where the `LimitRange` sets none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerLimits {
    pub min_cpu: Option<Quantity>,
    pub max_cpu: Option<Quantity>,
    pub min_memory: Option<Quantity>,
    pub max_memory: Option<Quantity>,
}

impl ContainerLimits {
    /// The bounds of the `Container` entries of `limit_range` (the tightest, when there are several).
    /// Values that are not quantities are ignored: the API server would not have stored them.
    pub fn from_limit_range(limit_range: &LimitRange) -> Self {
        Self::from_limit_ranges(std::slice::from_ref(limit_range))
    }

    /// The tightest bounds of all the `Container` entries of a namespace's `LimitRange`s (Kubernetes enforces
    /// each of them).
    pub fn from_limit_ranges(limit_ranges: &[LimitRange]) -> Self {
        let mut limits = Self::default();
        let items = limit_ranges
            .iter()
            .flat_map(|range| range.spec.iter())
            .flat_map(|spec| &spec.limits);
        for item in items.filter(|item| item.type_ == "Container") {
            let bound = |map: &Option<std::collections::BTreeMap<String, _>>, name: &str| {
                map.as_ref().and_then(|map| map.get(name)).and_then(
                    |quantity: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| {
                        Quantity::parse(&quantity.0).ok()
                    },
                )
            };
            tighten(&mut limits.min_cpu, bound(&item.min, "cpu"), i128::max);
            tighten(
                &mut limits.min_memory,
                bound(&item.min, "memory"),
                i128::max,
            );
            tighten(&mut limits.max_cpu, bound(&item.max, "cpu"), i128::min);
            tighten(
                &mut limits.max_memory,
                bound(&item.max, "memory"),
                i128::min,
            );
        }
        limits
    }
}

fn tighten(current: &mut Option<Quantity>, new: Option<Quantity>, pick: fn(i128, i128) -> i128) {
    let Some(new) = new else { return };
    match current {
        Some(old) if pick(old.nanos(), new.nanos()) == old.nanos() => {}
        _ => *current = Some(new),
    }
}

/// A resource of a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Cpu,
    Memory,
}

/// A job's resource outside the namespace's bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitViolation {
    pub job: String,
    pub resource: Resource,
    /// `true`: above the maximum; `false`: below the minimum.
    pub above_maximum: bool,
    /// The value as rendered, e.g. `2.794Gi` or `2.0`.
    pub requested: String,
    /// The bound as the `LimitRange` writes it.
    pub bound: String,
}

impl fmt::Display for LimitViolation {
    /// Upstream's wording, so that users find the same message in Toolforge's documentation.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let resource = match self.resource {
            Resource::Cpu => "CPU",
            Resource::Memory => "memory",
        };
        if self.above_maximum {
            write!(
                f,
                "Requested {resource} {} is over maximum allowed per container ({})",
                self.requested, self.bound
            )
        } else {
            write!(
                f,
                "Requested {resource} {} is less than minimum required per container ({})",
                self.requested, self.bound
            )
        }
    }
}

/// Every bound of `limits` that `job`'s container would cross.
pub fn violations(job: &CanonicalJob, limits: &ContainerLimits) -> Vec<LimitViolation> {
    let memory = Quantity::parse(&job.mem).ok().map(|mem| Memory::of(&mem));
    let checks = [
        (Resource::Cpu, false, Some(job.cpu.clone()), &limits.min_cpu),
        (
            Resource::Cpu,
            true,
            Some(job.cpu_limit.clone()),
            &limits.max_cpu,
        ),
        (
            Resource::Memory,
            false,
            memory.map(Memory::request_text),
            &limits.min_memory,
        ),
        (
            Resource::Memory,
            true,
            memory.map(Memory::limit_text),
            &limits.max_memory,
        ),
    ];
    checks
        .into_iter()
        .filter_map(|(resource, above_maximum, requested, bound)| {
            let (requested, bound) = (requested?, bound.as_ref()?);
            let value = Quantity::parse(&requested).ok()?.nanos();
            let crosses = if above_maximum {
                value > bound.nanos()
            } else {
                value < bound.nanos()
            };
            crosses.then(|| LimitViolation {
                job: job.name.clone(),
                resource,
                above_maximum,
                requested: if resource == Resource::Memory && !above_maximum {
                    // The request is a byte count; show the job's `mem` instead, which the user wrote.
                    job.mem.clone()
                } else {
                    requested
                },
                bound: bound.as_str().to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Kind;

    /// Upstream's test fixture: container min 50m / 100Mi, max 1 CPU / 4Gi.
    fn fixture_limits() -> ContainerLimits {
        let limit_range: LimitRange = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "tool-mytool", "namespace": "tool-mytool"},
            "spec": {"limits": [
                {"type": "Pod", "max": {"cpu": "100", "memory": "100Gi"}},
                {"type": "Container",
                 "min": {"cpu": "50m", "memory": "100Mi"},
                 "max": {"cpu": "1", "memory": "4Gi"},
                 "default": {"cpu": "500m", "memory": "512Mi"}}
            ]}
        }))
        .unwrap();
        ContainerLimits::from_limit_range(&limit_range)
    }

    fn job(mem: &str, cpu: &str, cpu_limit: &str) -> CanonicalJob {
        CanonicalJob {
            name: "bot".to_owned(),
            kind: Kind::OneOff,
            command: Some("x".to_owned()),
            image: "i".to_owned(),
            schedule: None,
            schedule_actual: None,
            timezone: None,
            timeout: None,
            retry: Some(0),
            emails: "none".to_owned(),
            mem: mem.to_owned(),
            cpu: cpu.to_owned(),
            cpu_limit: cpu_limit.to_owned(),
            filelog: false,
            filelog_stdout: None,
            filelog_stderr: None,
            mount: "all".to_owned(),
            port: None,
            port_protocol: None,
            replicas: None,
            health_check_script: None,
            health_check_http: None,
            publish: None,
        }
    }

    #[test]
    fn reads_the_container_entry() {
        let limits = fixture_limits();
        assert_eq!(limits.max_cpu.unwrap().as_str(), "1");
        assert_eq!(limits.min_memory.unwrap().as_str(), "100Mi");
    }

    #[test]
    fn defaults_fit_the_fixture() {
        assert_eq!(
            violations(&job("0.5Gi", "0.1", "1.0"), &fixture_limits()),
            []
        );
    }

    #[test]
    fn too_much_and_too_little_are_reported_in_upstreams_words() {
        let messages: Vec<String> = violations(&job("8.0Gi", "0.01", "2.0"), &fixture_limits())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            messages,
            [
                "Requested CPU 0.01 is less than minimum required per container (50m)",
                "Requested CPU 2.0 is over maximum allowed per container (1)",
                "Requested memory 8.0Gi is over maximum allowed per container (4Gi)",
            ]
        );
        let small = violations(&job("0.05Gi", "0.1", "0.1"), &fixture_limits());
        assert_eq!(
            small.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["Requested memory 0.05Gi is less than minimum required per container (100Mi)"]
        );
    }

    #[test]
    fn the_tightest_of_several_entries_wins() {
        let limit_range: LimitRange = serde_json::from_value(serde_json::json!({
            "metadata": {},
            "spec": {"limits": [
                {"type": "Container", "max": {"cpu": "2"}},
                {"type": "Container", "max": {"cpu": "1500m"}, "min": {"cpu": "10m"}},
                {"type": "Container", "min": {"cpu": "20m"}}
            ]}
        }))
        .unwrap();
        let limits = ContainerLimits::from_limit_range(&limit_range);
        assert_eq!(limits.max_cpu.unwrap().as_str(), "1500m");
        assert_eq!(limits.min_cpu.unwrap().as_str(), "20m");
    }
}
