//! `GET /openapi.json`: our `OpenAPI` 3 document of every route, its schemas generated from the very types the
//! handlers read and write ([`super::wire`], [`super::logs`]), so that the document cannot drift from the code.

use axum::Json;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use super::declarative::{ApplyRequest, Validation};
use super::logs::LogPage;
use super::wire::{
    ErrorReply, Health, ImageList, JobList, JobReply, MessagesReply, NewJob, QuotaReply,
    UpdateReply,
};
use crate::pipeline::pod_logs::LogEntry;

/// One operation: method, path (under the prefix it is served at), summary, request body, reply.
struct Operation {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    body: RequestBody,
    status: &'static str,
    reply: fn(&mut SchemaGenerator) -> schemars::Schema,
    /// The reply is JSON lines (NDJSON), each of the reply's schema.
    lines: bool,
}

/// What an operation reads.
#[derive(Clone, Copy)]
enum RequestBody {
    None,
    Json(fn(&mut SchemaGenerator) -> schemars::Schema),
    /// A jobs file's text.
    JobsFile,
}

fn schema<T: schemars::JsonSchema>(generator: &mut SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<T>()
}

const JOBS: &str = "/jobs/v1/tool/{tool}/jobs/";
const JOB: &str = "/jobs/v1/tool/{tool}/jobs/{name}";
const NEW_JOB: RequestBody = RequestBody::Json(schema::<NewJob>);

const fn operation(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    reply: fn(&mut SchemaGenerator) -> schemars::Schema,
) -> Operation {
    Operation {
        method,
        path,
        summary,
        body: RequestBody::None,
        status: "200",
        reply,
        lines: false,
    }
}

const fn with_body(mut operation: Operation, body: RequestBody, status: &'static str) -> Operation {
    operation.body = body;
    operation.status = status;
    operation
}

const fn as_lines(mut operation: Operation) -> Operation {
    operation.lines = true;
    operation
}

const OPERATIONS: &[Operation] = &[
    operation(
        "get",
        JOBS,
        "The tool's jobs (`?include_unset=false`: only what was set)",
        schema::<JobList>,
    ),
    with_body(
        operation(
            "post",
            JOBS,
            "Create a job (`run`); a completed one-off runs again",
            schema::<JobReply>,
        ),
        NEW_JOB,
        "201",
    ),
    with_body(
        operation("put", JOBS, "Same as POST", schema::<JobReply>),
        NEW_JOB,
        "201",
    ),
    with_body(
        operation(
            "patch",
            JOBS,
            "Create or update a job (`load`)",
            schema::<UpdateReply>,
        ),
        NEW_JOB,
        "200",
    ),
    operation(
        "delete",
        JOBS,
        "Delete every job of the tool (`flush`)",
        schema::<MessagesReply>,
    ),
    operation("get", JOB, "One job", schema::<JobReply>),
    operation(
        "delete",
        JOB,
        "Delete a job, waiting up to 30 s for its pods",
        schema::<MessagesReply>,
    ),
    operation(
        "post",
        "/jobs/v1/tool/{tool}/jobs/{name}/restart",
        "Restart a continuous job, or run a scheduled one now",
        schema::<MessagesReply>,
    ),
    as_lines(operation(
        "get",
        "/jobs/v1/tool/{tool}/jobs/{name}/logs",
        "The job's pod logs as JSON lines (`?follow=true` keeps them coming, `?lines=N` the last N of each pod)",
        schema::<LogEntry>,
    )),
    operation(
        "get",
        "/jobs/v1/tool/{tool}/images/",
        "The stable pre-built images",
        schema::<ImageList>,
    ),
    operation(
        "get",
        "/jobs/v1/tool/{tool}/quotas/",
        "The tool's quota",
        schema::<QuotaReply>,
    ),
    with_body(
        operation(
            "post",
            "/jobs/v1/tool/{tool}/declarative/validate",
            "Check a jobs file (ours)",
            schema::<Validation>,
        ),
        RequestBody::JobsFile,
        "200",
    ),
    with_body(
        operation(
            "post",
            "/jobs/v1/tool/{tool}/declarative/plan",
            "What applying a jobs file would do: the plan's JSON, docs/plan.md (ours)",
            schema::<serde_json::Value>,
        ),
        RequestBody::JobsFile,
        "200",
    ),
    as_lines(with_body(
        operation(
            "post",
            "/jobs/v1/tool/{tool}/declarative/apply",
            "Apply a jobs file as `apply` does, refused when the plan changed; progress as JSON lines (ours)",
            schema::<serde_json::Value>,
        ),
        RequestBody::Json(schema::<ApplyRequest>),
        "200",
    )),
    operation(
        "get",
        "/logs/v1/tool/{tool}/job/{name}/logs",
        "A page of the job's pod logs, newest first",
        schema::<LogPage>,
    ),
    as_lines(operation(
        "get",
        "/logs/v1/tool/{tool}/job/{name}/logs_stream",
        "The job's pod logs as they are written",
        schema::<LogEntry>,
    )),
    operation(
        "get",
        "/v1/healthz",
        "Whether the server answers",
        schema::<Health>,
    ),
];

/// The document.
pub fn document_value() -> Value {
    let mut generator = SchemaGenerator::new(SchemaSettings::openapi3());
    let error = schema::<ErrorReply>(&mut generator);
    let mut paths: Map<String, Value> = Map::new();
    for operation in OPERATIONS {
        let reply = (operation.reply)(&mut generator);
        let media = if operation.lines {
            "application/x-ndjson"
        } else {
            "application/json"
        };
        let tool = operation.path.contains("{tool}");
        let mut responses = json!({
            operation.status: {"description": "Success", "content": {media: {"schema": reply}}},
            "default": {"description": "An error: `{\"error\": [...]}`", "content": {"application/json": {"schema": error}}},
        });
        if tool {
            responses["403"] = json!({"description": "The caller is not the path's tool", "content": {"application/json": {"schema": error}}});
        }
        let mut entry = json!({"summary": operation.summary, "responses": responses});
        let mut parameters = Vec::new();
        for name in ["tool", "name"] {
            if operation.path.contains(&format!("{{{name}}}")) {
                parameters.push(json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}));
            }
        }
        if !parameters.is_empty() {
            entry["parameters"] = Value::Array(parameters);
        }
        match operation.body {
            RequestBody::None => {}
            RequestBody::Json(body) => {
                entry["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": body(&mut generator)}}});
            }
            RequestBody::JobsFile => {
                entry["requestBody"] = json!({"required": true, "content": {"application/yaml": {"schema": {"type": "string"}}}});
            }
        }
        if tool {
            entry["security"] =
                json!([{"clientCertificate": []}, {"bearer": []}, {"toolHeader": []}]);
        }
        let methods = paths
            .entry(operation.path.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        methods[operation.method] = entry;
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Toolforge jobs API (toolforge-jobs serve)",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Upstream's jobs API and the logs routes its CLI uses. Every route is also served without the `/jobs` prefix (`/v1/tool/{tool}/…`) and with or without a trailing slash.",
        },
        "paths": paths,
        "components": {
            "schemas": generator.take_definitions(true),
            "securitySchemes": {
                "clientCertificate": {"type": "mutualTLS", "description": "A client certificate with CN=<tool>, O=toolforge"},
                "bearer": {"type": "http", "scheme": "bearer"},
                "toolHeader": {"type": "apiKey", "in": "header", "name": "X-Toolforge-Tool"},
            },
        },
    })
}

pub async fn document() -> Json<Value> {
    Json(document_value())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_documented_with_resolvable_schemas() {
        let document = document_value();
        let paths = document["paths"].as_object().unwrap();
        assert_eq!(paths.len(), 12);
        assert!(paths[JOBS]["patch"]["requestBody"].is_object());
        let text = document.to_string();
        let schemas = document["components"]["schemas"].as_object().unwrap();
        for reference in text.split("\"$ref\":\"").skip(1) {
            let target = reference.split('"').next().unwrap();
            let name = target.strip_prefix("#/components/schemas/").unwrap();
            assert!(schemas.contains_key(name), "unresolved reference {target}");
        }
        for name in [
            "DefinedJob",
            "NewJob",
            "JobStatus",
            "ErrorReply",
            "LogEntry",
        ] {
            assert!(schemas.contains_key(name), "no schema {name}");
        }
    }
}
