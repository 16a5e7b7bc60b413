//! `GET /openapi.json`: our OpenAPI 3 document of every route, its schemas generated from the very types the
//! handlers read and write ([`super::wire`], [`super::logs`]), so that the document cannot drift from the code.

use axum::Json;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use super::logs::LogPage;
use super::wire::{
    ErrorReply, Health, ImageList, JobList, JobReply, MessagesReply, NewJob, QuotaReply,
    UpdateReply,
};

/// One operation: method, path (under the prefix it is served at), summary, request body, reply.
struct Operation {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    body: Option<fn(&mut SchemaGenerator) -> schemars::Schema>,
    status: &'static str,
    reply: fn(&mut SchemaGenerator) -> schemars::Schema,
    /// Whether the path names a tool (and so needs credentials).
    tool: bool,
}

fn schema<T: schemars::JsonSchema>(generator: &mut SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<T>()
}

const JOBS: &str = "/jobs/v1/tool/{tool}/jobs/";
const JOB: &str = "/jobs/v1/tool/{tool}/jobs/{name}";

fn operations() -> Vec<Operation> {
    let operation = |method, path, summary, status, reply, body, tool| Operation {
        method,
        path,
        summary,
        body,
        status,
        reply,
        tool,
    };
    vec![
        operation(
            "get",
            JOBS,
            "The tool's jobs (`?include_unset=false`: only what was set)",
            "200",
            schema::<JobList>,
            None,
            true,
        ),
        operation(
            "post",
            JOBS,
            "Create a job (`run`); a one-off that completed runs again",
            "201",
            schema::<JobReply>,
            Some(schema::<NewJob>),
            true,
        ),
        operation(
            "put",
            JOBS,
            "Same as POST",
            "201",
            schema::<JobReply>,
            Some(schema::<NewJob>),
            true,
        ),
        operation(
            "patch",
            JOBS,
            "Create or update a job (`load`)",
            "200",
            schema::<UpdateReply>,
            Some(schema::<NewJob>),
            true,
        ),
        operation(
            "delete",
            JOBS,
            "Delete every job of the tool (`flush`)",
            "200",
            schema::<MessagesReply>,
            None,
            true,
        ),
        operation("get", JOB, "One job", "200", schema::<JobReply>, None, true),
        operation(
            "delete",
            JOB,
            "Delete a job, waiting up to 30 s for its pods",
            "200",
            schema::<MessagesReply>,
            None,
            true,
        ),
        operation(
            "post",
            "/jobs/v1/tool/{tool}/jobs/{name}/restart",
            "Restart a continuous job, or run a scheduled one now",
            "200",
            schema::<MessagesReply>,
            None,
            true,
        ),
        operation(
            "get",
            "/jobs/v1/tool/{tool}/images/",
            "The stable pre-built images",
            "200",
            schema::<ImageList>,
            None,
            true,
        ),
        operation(
            "get",
            "/jobs/v1/tool/{tool}/quotas/",
            "The tool's quota",
            "200",
            schema::<QuotaReply>,
            None,
            true,
        ),
        operation(
            "get",
            "/logs/v1/tool/{tool}/job/{name}/logs",
            "A page of the job's pod logs, newest first",
            "200",
            schema::<LogPage>,
            None,
            true,
        ),
        operation(
            "get",
            "/logs/v1/tool/{tool}/job/{name}/logs_stream",
            "The job's pod logs as they are written, one JSON entry per line (NDJSON)",
            "200",
            schema::<super::super::pipeline::pod_logs::LogEntry>,
            None,
            true,
        ),
        operation(
            "get",
            "/v1/healthz",
            "Whether the server answers",
            "200",
            schema::<Health>,
            None,
            false,
        ),
    ]
}

/// The document.
pub fn document_value() -> Value {
    let mut generator = SchemaGenerator::new(SchemaSettings::openapi3());
    let error = schema::<ErrorReply>(&mut generator);
    let mut paths: Map<String, Value> = Map::new();
    for operation in operations() {
        let reply = (operation.reply)(&mut generator);
        let mut responses = json!({
            operation.status: {"description": "Success", "content": {"application/json": {"schema": reply}}},
            "default": {"description": "An error: `{\"error\": [...]}`", "content": {"application/json": {"schema": error}}},
        });
        if operation.tool {
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
        if let Some(body) = operation.body {
            entry["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": body(&mut generator)}}});
        }
        if operation.tool {
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
        assert_eq!(paths.len(), 8);
        assert!(paths[JOBS]["patch"]["requestBody"].is_object());
        let text = document.to_string();
        let schemas = document["components"]["schemas"].as_object().unwrap();
        for reference in text.split("\"$ref\":\"").skip(1) {
            let target = reference.split('"').next().unwrap();
            let name = target.strip_prefix("#/components/schemas/").unwrap();
            assert!(schemas.contains_key(name), "unresolved reference {target}");
        }
        for name in ["DefinedJob", "NewJob", "JobStatus", "ErrorReply", "LogEntry"] {
            assert!(schemas.contains_key(name), "no schema {name}");
        }
    }
}
