//! What the scripted kubelet makes of pods ([`Script`], [`ContainerOutcome`]): plain data chosen by tests;
//! [`crate::kubelet`] plays it.

use std::time::Duration;

use serde_json::Value;

use super::pod_status;
use crate::registry::meta;

/// What the containers of a scripted pod do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerOutcome {
    /// Run for `after`, then exit 0 (`Completed`).
    Succeed {
        /// How long the container runs.
        after: Duration,
    },
    /// Run for `after`, then exit with `code` (`Error`); restarted with back-off under OnFailure/Always.
    Exit {
        /// The exit code (non-zero).
        code: i32,
        /// How long the container runs.
        after: Duration,
    },
    /// Run for `after`, then get killed for memory (`OOMKilled`, 137).
    OomKilled {
        /// How long the container runs.
        after: Duration,
    },
    /// The runtime cannot start the command (`StartError`, 128, as containerd reports a missing executable).
    CannotStart,
    /// The image cannot be pulled: `ErrImagePull`, then `ImagePullBackOff`; the pod stays Pending.
    ImagePullError,
    /// Run until the pod is deleted.
    RunForever,
    /// Run until the pod is deleted without ever becoming ready (as with a failing readiness probe).
    NeverReady,
}

/// Chooses a [`ContainerOutcome`] per pod: the first matching rule (by image, by a pod label such as `job-name`, or
/// by an annotation), else the default; plus the timings of the simulated node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    default: ContainerOutcome,
    rules: Vec<(Match, ContainerOutcome)>,
    /// What containers print per run, by image ("" for every other image).
    outputs: Vec<(String, Vec<String>)>,
    pub(crate) start_delay: Duration,
    pub(crate) restart_backoff: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Match {
    Image(String),
    Label(String, String),
    Annotation(String, String),
}

impl Script {
    /// Every pod gets `default`; containers start 10 ms after binding and crash loops back off from 10 s.
    #[must_use]
    pub fn new(default: ContainerOutcome) -> Self {
        Script {
            default,
            rules: Vec::new(),
            outputs: Vec::new(),
            start_delay: Duration::from_millis(10),
            restart_backoff: Duration::from_secs(10),
        }
    }

    /// Pods with a container of this image (exactly as written in the pod) get `outcome`.
    #[must_use]
    pub fn image(mut self, image: &str, outcome: ContainerOutcome) -> Self {
        self.rules.push((Match::Image(image.to_owned()), outcome));
        self
    }

    /// Pods with this label (e.g. `job-name`) get `outcome`.
    #[must_use]
    pub fn label(mut self, key: &str, value: &str, outcome: ContainerOutcome) -> Self {
        self.rules
            .push((Match::Label(key.to_owned(), value.to_owned()), outcome));
        self
    }

    /// Pods with this annotation (set in a pod template, say) get `outcome`.
    #[must_use]
    pub fn annotation(mut self, key: &str, value: &str, outcome: ContainerOutcome) -> Self {
        self.rules
            .push((Match::Annotation(key.to_owned(), value.to_owned()), outcome));
        self
    }

    /// Containers of this image (exactly as written in the pod; `""` for any image without its own output)
    /// print `text` each time they start, served by `pods/{name}/log`. Without output, containers print nothing.
    #[must_use]
    pub fn output(self, image: &str, text: &str) -> Self {
        self.output_per_run(image, &[text])
    }

    /// Like [`Script::output`], with one text per run: the first start prints `runs[0]`, the first restart
    /// `runs[1]`, and so on; the last text repeats for later runs.
    #[must_use]
    pub fn output_per_run(mut self, image: &str, runs: &[&str]) -> Self {
        self.outputs.retain(|(i, _)| i != image);
        self.outputs.push((
            image.to_owned(),
            runs.iter().map(|&r| r.to_owned()).collect(),
        ));
        self
    }

    /// How long containers stay `ContainerCreating` (a slow start is a long delay).
    #[must_use]
    pub fn start_delay(mut self, delay: Duration) -> Self {
        self.start_delay = delay;
        self
    }

    /// The first crash-loop (and image-pull) back-off; it doubles per restart up to 30 times this (10 s → 300 s).
    #[must_use]
    pub fn restart_backoff(mut self, backoff: Duration) -> Self {
        self.restart_backoff = backoff;
        self
    }

    /// What a container of `image` prints when it starts after `restarts` restarts.
    pub(crate) fn output_for(&self, image: &str, restarts: u32) -> &str {
        let runs = self
            .outputs
            .iter()
            .find(|(i, _)| i == image)
            .or_else(|| self.outputs.iter().find(|(i, _)| i.is_empty()))
            .map_or(&[][..], |(_, runs)| runs.as_slice());
        let index = usize::try_from(restarts)
            .unwrap_or(usize::MAX)
            .min(runs.len().saturating_sub(1));
        runs.get(index).map_or("", String::as_str)
    }

    /// The outcome for a pod: the first matching rule, else the default.
    pub(crate) fn outcome(&self, pod: &Value) -> &ContainerOutcome {
        let images: Vec<String> = pod_status::containers(pod)
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        self.rules
            .iter()
            .find(|(m, _)| match m {
                Match::Image(image) => images.contains(image),
                Match::Annotation(key, value) => {
                    meta::str_at(pod, &["metadata", "annotations", key]) == Some(value.as_str())
                }
                Match::Label(key, value) => {
                    meta::labels(pod)
                        .and_then(|l| l.get(key))
                        .and_then(Value::as_str)
                        == Some(value)
                }
            })
            .map_or(&self.default, |(_, o)| o)
    }
}

/// The restart back-off after `restarts` restarts: doubling from the script's base, capped at 30 times it.
pub(crate) fn crash_backoff(script: &Script, restarts: u32) -> Duration {
    let factor = 2_u32.saturating_pow(restarts.saturating_sub(1)).min(30);
    script.restart_backoff.saturating_mul(factor)
}

/// How long a container of this outcome runs before exiting, if it exits.
pub(crate) fn run_length(outcome: &ContainerOutcome) -> Option<Duration> {
    match outcome {
        ContainerOutcome::Succeed { after }
        | ContainerOutcome::Exit { after, .. }
        | ContainerOutcome::OomKilled { after } => Some(*after),
        ContainerOutcome::CannotStart
        | ContainerOutcome::ImagePullError
        | ContainerOutcome::RunForever
        | ContainerOutcome::NeverReady => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(image: &str) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main", "image": image}]}})
    }

    #[test]
    fn output_is_chosen_by_image_then_default_per_run() {
        let script = Script::new(ContainerOutcome::RunForever)
            .output("", "any\n")
            .output_per_run("busybox", &["first\n", "again\n"]);
        assert_eq!(script.output_for("busybox", 0), "first\n");
        assert_eq!(script.output_for("busybox", 1), "again\n");
        assert_eq!(script.output_for("busybox", 7), "again\n");
        assert_eq!(script.output_for("other", 0), "any\n");
        assert_eq!(
            Script::new(ContainerOutcome::RunForever).output_for("x", 0),
            ""
        );
    }

    #[test]
    fn rules_choose_the_outcome_by_image_label_or_annotation_in_order() {
        let script = Script::new(ContainerOutcome::RunForever)
            .annotation(
                "outcome",
                "oom",
                ContainerOutcome::OomKilled {
                    after: Duration::ZERO,
                },
            )
            .image("busybox", ContainerOutcome::CannotStart)
            .label("job-name", "x", ContainerOutcome::ImagePullError);
        let mut annotated = pod("busybox");
        meta::set_at(
            &mut annotated,
            &["metadata", "annotations"],
            json!({"outcome": "oom"}),
        );
        assert_eq!(
            script.outcome(&annotated),
            &ContainerOutcome::OomKilled {
                after: Duration::ZERO
            }
        );
        assert_eq!(
            script.outcome(&pod("busybox")),
            &ContainerOutcome::CannotStart
        );
        let mut other = pod("other");
        meta::set_at(
            &mut other,
            &["spec", "containers"],
            json!([{"name": "main", "image": "other"}]),
        );
        assert_eq!(script.outcome(&other), &ContainerOutcome::RunForever);
        meta::set_at(
            &mut other,
            &["metadata", "labels"],
            json!({"job-name": "x"}),
        );
        assert_eq!(script.outcome(&other), &ContainerOutcome::ImagePullError);
    }
}
