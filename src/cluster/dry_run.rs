//! The server-side dry run (`dryRun=All`) of a plan's writes: the API server runs validation, admission (quota,
//! `LimitRange`) and the immutability checks without storing anything, so the plan can say `immutable:
//! spec.template` or "exceeded quota" before anything is touched (SPEC §5).
//!
//! Creates that follow a delete of the same object are not tried: the old object still exists, so the server
//! could only answer "already exists".

use futures::StreamExt as _;
use kube::api::{Api, DynamicObject, PostParams};

use super::api_resource;
use crate::plan::{DryRun, Plan, PlannedAction, WriteVerb};

/// How many dry-run requests are in flight at once.
const CONCURRENCY: usize = 8;

/// Why the dry run could not be made at all (the server's verdicts are not errors: they go into the plan).
#[derive(Debug, thiserror::Error)]
#[error("the server-side dry run of job `{job}` failed")]
pub struct DryRunError {
    pub job: String,
    #[source]
    pub source: kube::Error,
}

/// Dry-runs the creates and updates of every action and records the verdicts in `plan`.
pub async fn confirm(
    client: &kube::Client,
    namespace: &str,
    plan: &mut Plan,
) -> Result<(), DryRunError> {
    let verdicts: Vec<(usize, Result<Option<DryRun>, DryRunError>)> =
        futures::stream::iter(plan.actions.iter().enumerate())
            .map(|(index, action)| async move {
                (index, dry_run_action(client, namespace, action).await)
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
    for (index, verdict) in verdicts {
        if let Some(verdict) = verdict? {
            plan.actions[index].dry_run = Some(verdict);
        }
    }
    Ok(())
}

/// The verdict on one action's writes: the first refusal, else `Confirmed`; `None` when nothing was tried.
async fn dry_run_action(
    client: &kube::Client,
    namespace: &str,
    action: &PlannedAction,
) -> Result<Option<DryRun>, DryRunError> {
    let params = PostParams {
        dry_run: true,
        field_manager: Some(super::FIELD_MANAGER.to_owned()),
    };
    let mut tried = false;
    for write in &action.writes {
        let replaced = action.deletes.iter().any(|delete| {
            delete.object.kind == write.object.kind && delete.object.name == write.object.name
        });
        if replaced || write.verb == WriteVerb::Label {
            continue;
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), namespace, &api_resource(write.object.kind));
        let object: DynamicObject = match write.manifest.decode() {
            Ok(object) => object,
            Err(error) => {
                return Ok(Some(DryRun::Rejected {
                    message: format!("the rendered object is not a Kubernetes object: {error}"),
                }));
            }
        };
        let result = match write.verb {
            WriteVerb::Update => api.replace(&write.object.name, &params, &object).await,
            _ => api.create(&params, &object).await,
        };
        tried = true;
        match result {
            Ok(_) => {}
            Err(kube::Error::Api(status)) => return Ok(Some(verdict(&status.message))),
            Err(source) => {
                return Err(DryRunError {
                    job: action.job.clone(),
                    source,
                });
            }
        }
    }
    Ok(tried.then_some(DryRun::Confirmed))
}

/// The server's refusal: `…: spec.template: Invalid value: …: field is immutable` names the field.
fn verdict(message: &str) -> DryRun {
    if message.contains("field is immutable") {
        let field = message
            .split(": ")
            .find(|part| part.starts_with("spec.") || part.starts_with("metadata."))
            .unwrap_or("spec")
            .to_owned();
        DryRun::Immutable { field }
    } else {
        DryRun::Rejected {
            message: message.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immutable_field_is_named() {
        let message = "Job.batch \"migrate\" is invalid: spec.template: Invalid value: core.PodTemplateSpec{}: field is immutable";
        assert_eq!(
            verdict(message),
            DryRun::Immutable {
                field: "spec.template".to_owned()
            }
        );
        assert_eq!(
            verdict("exceeded quota: q"),
            DryRun::Rejected {
                message: "exceeded quota: q".to_owned()
            }
        );
    }
}
