//! The authorization policy, as pure functions of an identity and a request: the owner may do everything; a
//! tool may do what a Toolforge tool account may in its own namespace `tool-<tool>` (custom resources such as
//! jobs-api's `continuous-jobs` included, as upstream jobs-api's service account works with them there), read
//! the ConfigMaps every tool reads (`kube-public`, where the cluster announces itself, and `tf-public`,
//! Toolforge's image table), and nothing cluster-wide (so no custom resource definitions); every authenticated identity may read discovery and OpenAPI and review its own
//! access. Denials carry Kubernetes' RBAC wording.

use serde_json::{Value, json};

use crate::api::request_info::{RequestInfo, ResourceAttributes};
use crate::auth::{ADMIN_GROUP, Identity};
use crate::registry::api_error::ApiError;
use crate::registry::resources::ResourceType;

/// Namespaces whose ConfigMaps every identity may read.
const PUBLIC_CONFIGMAP_NAMESPACES: [&str; 2] = ["kube-public", "tf-public"];
/// What a tool may only read in its own namespace: quota and limits are set for it, not by it.
const READ_ONLY_FOR_TOOLS: [&str; 3] = ["resourcequotas", "limitranges", "namespaces"];
/// Paths outside `/api` and `/apis` every identity may `get`.
const PUBLIC_PATH_PREFIXES: [&str; 7] = [
    "/api", "/apis", "/openapi", "/version", "/healthz", "/readyz", "/livez",
];
/// The self-review kinds every identity may create (`kubectl auth can-i`, `auth whoami`).
const SELF_REVIEWS: [(&str, &str); 3] = [
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
];

fn is_read(verb: &str) -> bool {
    matches!(verb, "get" | "list" | "watch")
}

/// Whether `identity` may make `request`.
pub(crate) fn allows(identity: &Identity, request: &RequestInfo) -> bool {
    if identity.in_group(ADMIN_GROUP) {
        return true;
    }
    let Some(resource) = &request.resource else {
        return matches!(request.verb.as_str(), "get" | "head")
            && PUBLIC_PATH_PREFIXES.iter().any(|prefix| {
                request
                    .path
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            });
    };
    if request.verb == "create"
        && resource.namespace.is_none()
        && SELF_REVIEWS.contains(&(resource.group.as_str(), resource.resource.as_str()))
    {
        return true;
    }
    let Some(namespace) = resource.namespace.as_deref() else {
        return false;
    };
    if is_read(&request.verb)
        && resource.group.is_empty()
        && resource.resource == "configmaps"
        && resource.subresource.is_none()
        && PUBLIC_CONFIGMAP_NAMESPACES.contains(&namespace)
    {
        return true;
    }
    match identity.tool() {
        Some(tool) if namespace.strip_prefix("tool-") == Some(tool) => {
            tool_may(&request.verb, resource)
        }
        _ => false,
    }
}

/// What a tool may do in its own namespace.
fn tool_may(verb: &str, resource: &ResourceAttributes) -> bool {
    let read_only = READ_ONLY_FOR_TOOLS.contains(&resource.resource.as_str())
        // Status is written by the controllers and the kubelet, not by the tool.
        || resource.subresource.as_deref() == Some("status");
    if resource.resource == "namespaces" && resource.name.is_none() {
        // Listing namespaces is cluster-wide, even when the request came with a namespace.
        return false;
    }
    !read_only || is_read(verb)
}

/// What rules are merged by: API group, verbs and the one name a rule may be limited to.
type RuleKey<'a> = (&'a str, Vec<&'a str>, Option<&'a str>);

/// The verbs a rule may grant on a resource, in RBAC's order.
const VERBS: [&str; 8] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// What `identity` may do in `namespace`, as the `status` of a `SelfSubjectRulesReview` (`kubectl auth can-i
/// --list`): `resourceRules` and `nonResourceRules` in RBAC's shape. The rules are found by asking [`allows`]
/// about every verb on every served type and subresource (and the self-reviews), so they cannot disagree with
/// what the server enforces; the owner's are RBAC's wildcards, as for `cluster-admin`.
pub(crate) fn rules(
    identity: &Identity,
    namespace: &str,
    served: &[&'static ResourceType],
) -> Value {
    if identity.in_group(ADMIN_GROUP) {
        return json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        });
    }
    // (group, resource with subresource, whether cluster-scoped, the one name a rule may be limited to)
    let mut candidates: Vec<(&str, String, bool, Option<&str>)> = Vec::new();
    for resource in served {
        let own_namespace = resource.group.is_empty() && resource.plural == "namespaces";
        let name = own_namespace.then_some(namespace);
        let cluster_scoped = !resource.namespaced && !own_namespace;
        let mut parts = vec![resource.plural.to_owned()];
        if resource.has_status {
            parts.push(format!("{}/status", resource.plural));
        }
        if resource.has_scale {
            parts.push(format!("{}/scale", resource.plural));
        }
        if resource.builtin("pods") {
            parts.push("pods/log".to_owned());
        }
        for part in parts {
            candidates.push((resource.group, part, cluster_scoped, name));
        }
    }
    for (group, resource) in SELF_REVIEWS {
        candidates.push((group, resource.to_owned(), true, None));
    }
    // Rules with the same group, verbs and names are merged, as RBAC roles list several resources in one rule.
    let mut grouped: Vec<(RuleKey, Vec<String>)> = Vec::new();
    for (group, part, cluster_scoped, name) in candidates {
        let (resource, subresource) = match part.split_once('/') {
            Some((resource, subresource)) => (resource.to_owned(), Some(subresource.to_owned())),
            None => (part.clone(), None),
        };
        let attributes = ResourceAttributes {
            group: group.to_owned(),
            resource,
            subresource,
            namespace: (!cluster_scoped).then(|| namespace.to_owned()),
            name: name.map(str::to_owned),
        };
        let verbs: Vec<&str> = VERBS
            .into_iter()
            .filter(|verb| {
                allows(
                    identity,
                    &RequestInfo {
                        verb: (*verb).to_owned(),
                        resource: Some(attributes.clone()),
                        path: String::new(),
                    },
                )
            })
            .collect();
        if verbs.is_empty() {
            continue;
        }
        let key = (group, verbs, name);
        match grouped.iter_mut().find(|(k, _)| *k == key) {
            Some((_, resources)) => resources.push(part),
            None => grouped.push((key, vec![part])),
        }
    }
    let resource_rules: Vec<Value> = grouped
        .into_iter()
        .map(|((group, verbs, name), resources)| {
            let mut rule = json!({"verbs": verbs, "apiGroups": [group], "resources": resources});
            if let Some(name) = name {
                rule["resourceNames"] = json!([name]);
            }
            rule
        })
        .collect();
    let urls: Vec<String> = PUBLIC_PATH_PREFIXES
        .iter()
        .flat_map(|prefix| [(*prefix).to_owned(), format!("{prefix}/*")])
        .collect();
    json!({
        "resourceRules": resource_rules,
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": urls}],
        "incomplete": false,
    })
}

/// The 403 Kubernetes answers when its authorizer denies `request`.
pub(crate) fn forbidden(identity: &Identity, request: &RequestInfo) -> ApiError {
    let Some(resource) = &request.resource else {
        return ApiError::forbidden(format!(
            "forbidden: User \"{}\" cannot {} path \"{}\"",
            identity.user, request.verb, request.path
        ));
    };
    let qualified = if resource.group.is_empty() {
        resource.resource.clone()
    } else {
        format!("{}.{}", resource.resource, resource.group)
    };
    let object = match &resource.name {
        Some(name) => format!("{qualified} \"{name}\""),
        None => qualified,
    };
    let scope = match &resource.namespace {
        Some(namespace) => format!("in the namespace \"{namespace}\""),
        None => "at the cluster scope".to_owned(),
    };
    let mut error = ApiError::forbidden(format!(
        "{object} is forbidden: User \"{}\" cannot {} resource \"{}\" in API group \"{}\" {scope}",
        identity.user,
        request.verb,
        resource.resource_and_subresource(),
        resource.group,
    ));
    if let Some(name) = &resource.name {
        error.details.insert("name".into(), json!(name));
    }
    if !resource.group.is_empty() {
        error.details.insert("group".into(), json!(resource.group));
    }
    error
        .details
        .insert("kind".into(), json!(resource.resource));
    error
}

#[cfg(test)]
mod tests {
    use axum::http::Method;

    use super::*;
    use crate::auth::TOOL_GROUP;

    fn tool(name: &str) -> Identity {
        Identity {
            user: name.to_owned(),
            groups: vec![TOOL_GROUP.to_owned()],
        }
    }

    fn request(method: &Method, uri: &str) -> RequestInfo {
        RequestInfo::parse(method, &uri.parse().expect("uri"))
    }

    #[test]
    fn a_tool_works_in_its_own_namespace_only() {
        let a = tool("a");
        for (method, uri) in [
            (Method::POST, "/apis/batch/v1/namespaces/tool-a/jobs"),
            (Method::DELETE, "/apis/batch/v1/namespaces/tool-a/jobs/x"),
            (Method::GET, "/api/v1/namespaces/tool-a/pods/p/log"),
            (
                Method::PATCH,
                "/apis/apps/v1/namespaces/tool-a/deployments/d",
            ),
            (Method::GET, "/api/v1/namespaces/tool-a/resourcequotas"),
            (Method::GET, "/api/v1/namespaces/tool-a"),
            (Method::GET, "/api/v1/namespaces/kube-public/configmaps/x"),
            (
                Method::GET,
                "/api/v1/namespaces/tf-public/configmaps/image-config",
            ),
            (Method::GET, "/apis/batch/v1"),
            (Method::GET, "/openapi/v3/apis/batch/v1"),
            (
                Method::POST,
                "/apis/jobs-api.toolforge.org/v1/namespaces/tool-a/continuous-jobs",
            ),
            (
                Method::DELETE,
                "/apis/jobs-api.toolforge.org/v1/namespaces/tool-a/scheduled-jobs/x",
            ),
            (
                Method::POST,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            ),
        ] {
            assert!(allows(&a, &request(&method, uri)), "{method} {uri}");
        }
        for (method, uri) in [
            (Method::POST, "/apis/batch/v1/namespaces/tool-b/jobs"),
            (Method::GET, "/api/v1/namespaces/tool-b/pods"),
            (Method::GET, "/api/v1/namespaces/tool-ab/pods"),
            (Method::GET, "/api/v1/pods"),
            (Method::GET, "/api/v1/namespaces"),
            (Method::GET, "/api/v1/nodes"),
            (Method::DELETE, "/api/v1/namespaces/tool-a"),
            (Method::PUT, "/api/v1/namespaces/tool-a/resourcequotas/q"),
            (Method::POST, "/api/v1/namespaces/tool-a/limitranges"),
            (
                Method::PUT,
                "/apis/batch/v1/namespaces/tool-a/jobs/x/status",
            ),
            (Method::PUT, "/api/v1/namespaces/kube-public/configmaps/x"),
            (Method::GET, "/api/v1/namespaces/kube-public/secrets/x"),
            (Method::GET, "/metrics"),
            (
                Method::POST,
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            ),
            (
                Method::DELETE,
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/continuous-jobs.jobs-api.toolforge.org",
            ),
            (
                Method::GET,
                "/apis/jobs-api.toolforge.org/v1/namespaces/tool-b/continuous-jobs",
            ),
        ] {
            assert!(!allows(&a, &request(&method, uri)), "{method} {uri}");
        }
    }

    #[test]
    fn an_identity_outside_toolforge_gets_discovery_only() {
        let stranger = Identity {
            user: "a".to_owned(),
            groups: vec![],
        };
        assert!(allows(&stranger, &request(&Method::GET, "/api/v1")));
        assert!(!allows(
            &stranger,
            &request(&Method::GET, "/api/v1/namespaces/tool-a/pods")
        ));
        assert!(allows(
            &Identity::admin(),
            &request(&Method::DELETE, "/api/v1/namespaces/tool-b")
        ));
    }

    #[test]
    fn rules_list_what_a_tool_may_do_in_a_namespace() {
        let served: Vec<&'static ResourceType> =
            crate::registry::resources::RESOURCES.iter().collect();
        let own = rules(&tool("a"), "tool-a", &served);
        let rules_for = |status: &Value, resource: &str| -> Vec<Value> {
            status["resourceRules"]
                .as_array()
                .expect("rules")
                .iter()
                .filter(|r| {
                    r["resources"]
                        .as_array()
                        .is_some_and(|l| l.iter().any(|x| x == resource))
                })
                .cloned()
                .collect()
        };
        assert_eq!(rules_for(&own, "jobs")[0]["verbs"], json!(VERBS));
        assert_eq!(rules_for(&own, "jobs")[0]["apiGroups"], json!(["batch"]));
        assert_eq!(
            rules_for(&own, "resourcequotas")[0]["verbs"],
            json!(["get", "list", "watch"])
        );
        let namespace = &rules_for(&own, "namespaces")[0];
        assert_eq!(namespace["resourceNames"], json!(["tool-a"]));
        assert!(rules_for(&own, "nodes").is_empty());
        assert_eq!(
            rules_for(&own, "selfsubjectrulesreviews")[0]["verbs"],
            json!(["create"])
        );
        let other = rules(&tool("a"), "tool-b", &served);
        assert!(rules_for(&other, "jobs").is_empty());
        assert!(
            other["nonResourceRules"][0]["nonResourceURLs"]
                .as_array()
                .expect("urls")
                .contains(&json!("/version"))
        );
        let owner = rules(&Identity::admin(), "tool-b", &served);
        assert_eq!(owner["resourceRules"][0]["resources"], json!(["*"]));
    }

    #[test]
    fn denials_use_rbac_wording() {
        let a = tool("a");
        let error = forbidden(
            &a,
            &request(&Method::POST, "/apis/batch/v1/namespaces/tool-b/jobs"),
        );
        assert_eq!(error.code, 403);
        assert_eq!(
            error.message,
            "jobs.batch is forbidden: User \"a\" cannot create resource \"jobs\" in API group \"batch\" in the namespace \"tool-b\""
        );
        let log = forbidden(
            &a,
            &request(&Method::GET, "/api/v1/namespaces/tool-b/pods/p/log"),
        );
        assert_eq!(
            log.message,
            "pods \"p\" is forbidden: User \"a\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"tool-b\""
        );
        assert_eq!(log.details["kind"], "pods");
        let nodes = forbidden(&a, &request(&Method::GET, "/api/v1/nodes"));
        assert!(
            nodes.message.ends_with("at the cluster scope"),
            "{}",
            nodes.message
        );
        let path = forbidden(&a, &request(&Method::GET, "/metrics"));
        assert_eq!(
            path.message,
            "forbidden: User \"a\" cannot get path \"/metrics\""
        );
    }
}
