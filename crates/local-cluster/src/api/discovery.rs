//! Discovery: `/version`, the legacy documents (`/api`, `/apis`, `/api/v1`, `/apis/{group}/{version}`) and the
//! aggregated documents (`apidiscovery.k8s.io` v2 for kubectl ≥ 1.30, v2beta1 for 1.27–1.29), chosen by the
//! `Accept` header. Everything is generated from the types the cluster serves at the time of the request: the
//! built-in table and the custom types of the established custom resource definitions.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::registry::api_error::ApiError;
use crate::registry::resources::{self, ResourceType};

const FULL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const NAMESPACE_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
const SUBRESOURCE_VERBS: &[&str] = &["get", "patch", "update"];

/// The kubernetes version the cluster claims to be.
pub(crate) fn version() -> Value {
    json!({
        "major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "toolforge-local-cluster",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.0",
        "compiler": "gc", "platform": "linux/amd64",
    })
}

fn json_response(body: &Value, content_type: &'static str) -> Response {
    let mut response = body.to_string().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Which aggregated discovery version the client prefers, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aggregated {
    V2,
    V2Beta1,
}

fn negotiate(headers: &HeaderMap) -> Option<Aggregated> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    for entry in accept.split(',') {
        let params: Vec<&str> = entry.split(';').map(str::trim).collect();
        let media = params.first().copied().unwrap_or_default();
        let is_discovery = params.contains(&"g=apidiscovery.k8s.io")
            && params.contains(&"as=APIGroupDiscoveryList");
        if is_discovery && media == "application/json" {
            if params.contains(&"v=v2") {
                return Some(Aggregated::V2);
            }
            if params.contains(&"v=v2beta1") {
                return Some(Aggregated::V2Beta1);
            }
        } else if matches!(media, "application/json" | "*/*" | "application/*" | "") {
            return None;
        }
    }
    None
}

fn aggregated_response(items: Vec<Value>, version: Aggregated) -> Response {
    let (api_version, content_type) = match version {
        Aggregated::V2 => (
            "apidiscovery.k8s.io/v2",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        ),
        Aggregated::V2Beta1 => (
            "apidiscovery.k8s.io/v2beta1",
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        ),
    };
    json_response(
        &json!({"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": Value::Array(items)}),
        content_type,
    )
}

fn verbs(resource: &ResourceType) -> &'static [&'static str] {
    if resource.namespaced {
        FULL_VERBS
    } else {
        NAMESPACE_VERBS
    }
}

/// A subresource as discovery lists it: its name, the kind it answers with and the verbs it takes.
struct Subresource {
    name: &'static str,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
}

fn subresources(resource: &ResourceType) -> Vec<Subresource> {
    let mut out = Vec::new();
    if resource.has_status {
        out.push(Subresource {
            name: "status",
            group: resource.group,
            version: resource.version,
            kind: resource.kind,
            verbs: SUBRESOURCE_VERBS,
        });
    }
    if resource.has_scale {
        out.push(Subresource {
            name: "scale",
            group: "autoscaling",
            version: "v1",
            kind: "Scale",
            verbs: SUBRESOURCE_VERBS,
        });
    }
    // Logs are the one pod subresource the kubelet serves; clients such as kubectl and the official client's
    // dynamic discovery look for it before they read a log.
    if resource.group.is_empty() && resource.plural == "pods" {
        out.push(Subresource {
            name: "log",
            group: "",
            version: "v1",
            kind: "Pod",
            verbs: &["get"],
        });
    }
    out
}

fn aggregated_resource(resource: &ResourceType) -> Value {
    let subresources: Vec<Value> = subresources(resource)
        .into_iter()
        .map(|sub| {
            json!({"subresource": sub.name, "responseKind": {"group": sub.group, "version": sub.version, "kind": sub.kind},
                "verbs": sub.verbs})
        })
        .collect();
    let mut entry = json!({
        "resource": resource.plural,
        "responseKind": {"group": resource.group, "version": resource.version, "kind": resource.kind},
        "scope": if resource.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": resource.singular,
        "verbs": verbs(resource),
    });
    if !resource.short_names.is_empty() {
        entry["shortNames"] = json!(resource.short_names);
    }
    if !resource.categories.is_empty() {
        entry["categories"] = json!(resource.categories);
    }
    if !subresources.is_empty() {
        entry["subresources"] = Value::Array(subresources);
    }
    entry
}

fn aggregated_group(types: &[&'static ResourceType], group: &str) -> Value {
    let versions: Vec<Value> = resources::group_versions(types)
        .into_iter()
        .filter(|(g, _)| *g == group)
        .map(|(g, v)| {
            let resources: Vec<Value> = types
                .iter()
                .filter(|r| r.group == g && r.version == v)
                .map(|r| aggregated_resource(r))
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let metadata = if group.is_empty() {
        json!({"creationTimestamp": null})
    } else {
        json!({"name": group, "creationTimestamp": null})
    };
    json!({"metadata": metadata, "versions": versions})
}

fn named_groups(types: &[&'static ResourceType]) -> Vec<&'static str> {
    let mut groups: Vec<&str> = Vec::new();
    for (group, _) in resources::group_versions(types) {
        if !group.is_empty() && !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

/// `GET /api`.
pub(crate) fn api(
    types: &[&'static ResourceType],
    headers: &HeaderMap,
    server_address: &str,
) -> Response {
    if let Some(version) = negotiate(headers) {
        return aggregated_response(vec![aggregated_group(types, "")], version);
    }
    json_response(
        &json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}),
        "application/json",
    )
}

/// `GET /apis`.
pub(crate) fn apis(types: &[&'static ResourceType], headers: &HeaderMap) -> Response {
    if let Some(version) = negotiate(headers) {
        return aggregated_response(
            named_groups(types)
                .into_iter()
                .map(|group| aggregated_group(types, group))
                .collect(),
            version,
        );
    }
    let groups: Vec<Value> = named_groups(types)
        .into_iter()
        .map(|group| {
            let versions: Vec<Value> = resources::group_versions(types)
                .into_iter()
                .filter(|(g, _)| *g == group)
                .map(|(g, v)| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            json!({"name": group, "versions": versions, "preferredVersion": versions.first()})
        })
        .collect();
    json_response(
        &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
        "application/json",
    )
}

/// `GET /apis/{group}`.
pub(crate) fn group(types: &[&'static ResourceType], group: &str) -> Response {
    if !named_groups(types).contains(&group) {
        return ApiError::path_not_found().into_response();
    }
    let versions: Vec<Value> = resources::group_versions(types)
        .into_iter()
        .filter(|(g, _)| *g == group)
        .map(|(g, v)| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
        .collect();
    json_response(
        &json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions, "preferredVersion": versions.first()}),
        "application/json",
    )
}

/// `GET /api/v1` and `GET /apis/{group}/{version}`: the legacy resource list.
pub(crate) fn resource_list(
    types: &[&'static ResourceType],
    group: &str,
    version: &str,
) -> Response {
    let served: Vec<&ResourceType> = types
        .iter()
        .copied()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if served.is_empty() {
        return ApiError::path_not_found().into_response();
    }
    let mut entries = Vec::new();
    for resource in served {
        let mut entry = json!({"name": resource.plural, "singularName": resource.singular, "namespaced": resource.namespaced,
            "kind": resource.kind, "verbs": verbs(resource)});
        if !resource.short_names.is_empty() {
            entry["shortNames"] = json!(resource.short_names);
        }
        if !resource.categories.is_empty() {
            entry["categories"] = json!(resource.categories);
        }
        entries.push(entry);
        for sub in subresources(resource) {
            let mut entry = json!({"name": format!("{}/{}", resource.plural, sub.name), "singularName": "",
                "namespaced": resource.namespaced, "kind": sub.kind, "verbs": sub.verbs});
            if sub.group != resource.group {
                entry["group"] = json!(sub.group);
                entry["version"] = json!(sub.version);
            }
            entries.push(entry);
        }
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    json_response(
        &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": entries}),
        "application/json",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn negotiates_the_aggregated_version_the_client_lists_first() {
        assert_eq!(
            negotiate(&accept(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            )),
            Some(Aggregated::V2)
        );
        assert_eq!(
            negotiate(&accept(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            )),
            Some(Aggregated::V2Beta1)
        );
        assert_eq!(negotiate(&accept("application/json")), None);
        assert_eq!(negotiate(&HeaderMap::new()), None);
    }

    #[test]
    fn aggregated_groups_list_resources_with_subresources() {
        let types: Vec<&'static ResourceType> = resources::RESOURCES.iter().collect();
        let batch = aggregated_group(&types, "batch");
        let jobs = &batch["versions"][0]["resources"][0];
        assert_eq!(jobs["resource"], "jobs");
        assert_eq!(jobs["subresources"][0]["subresource"], "status");
        assert_eq!(jobs["categories"], json!(["all"]));
        let core = aggregated_group(&types, "");
        assert!(core["metadata"].get("name").is_none());
    }
}
