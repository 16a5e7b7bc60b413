//! What a request asks for, read from its method and path alone, as the API server's `RequestInfo` does before
//! any handler runs: the verb (`get`, `list`, `watch`, `create`, …), the API group, resource, subresource,
//! namespace and name, or, for paths outside `/api` and `/apis`, the bare path. Request accounting and
//! authorization both classify requests this way, so they agree on what a request is.

use axum::http::{Method, Uri};

use super::query::Query;

/// A request in the API server's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestInfo {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`; for non-resource
    /// requests the lower-case HTTP method.
    pub(crate) verb: String,
    /// The resource addressed; `None` for non-resource paths (`/version`, `/api`, `/openapi/v2`, …).
    pub(crate) resource: Option<ResourceAttributes>,
    /// The request path.
    pub(crate) path: String,
}

/// The resource part of a [`RequestInfo`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourceAttributes {
    /// `""` for the core group.
    pub(crate) group: String,
    pub(crate) resource: String,
    pub(crate) subresource: Option<String>,
    /// The namespace; for a `namespaces` object, its own name (as Kubernetes scopes it).
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
}

impl ResourceAttributes {
    /// `jobs` or `jobs/status`.
    pub(crate) fn resource_and_subresource(&self) -> String {
        match &self.subresource {
            Some(subresource) => format!("{}/{subresource}", self.resource),
            None => self.resource.clone(),
        }
    }
}

impl RequestInfo {
    /// Reads a request's method and URI.
    pub(crate) fn parse(method: &Method, uri: &Uri) -> RequestInfo {
        let path = uri.path().to_owned();
        let Some((resource, legacy_watch)) = resource_attributes(&path) else {
            return RequestInfo {
                verb: method.as_str().to_lowercase(),
                resource: None,
                path,
            };
        };
        let named = resource.name.is_some();
        let verb = match *method {
            Method::GET | Method::HEAD if legacy_watch => "watch",
            Method::GET | Method::HEAD if named => "get",
            Method::GET | Method::HEAD if Query::parse(uri.query()).flag("watch") => "watch",
            Method::GET | Method::HEAD => "list",
            Method::POST => "create",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE if named => "delete",
            Method::DELETE => "deletecollection",
            _ => {
                return RequestInfo {
                    verb: method.as_str().to_lowercase(),
                    resource: Some(resource),
                    path,
                };
            }
        };
        RequestInfo {
            verb: verb.to_owned(),
            resource: Some(resource),
            path,
        }
    }

    /// The (verb, resource) pair the audit log and the request counters use; non-resource requests count as
    /// (method, path).
    pub(crate) fn counter_key(&self) -> (String, String) {
        let resource = match &self.resource {
            Some(resource) => resource.resource_and_subresource(),
            None => self.path.clone(),
        };
        (self.verb.clone(), resource)
    }
}

/// The resource attributes of `/api/{version}/…` and `/apis/{group}/{version}/…` paths, and whether the path
/// used the deprecated `/watch/` prefix.
fn resource_attributes(path: &str) -> Option<(ResourceAttributes, bool)> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (group, mut rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    let legacy_watch = rest.first() == Some(&"watch");
    if legacy_watch {
        rest = &rest[1..];
    }
    let mut namespace = None;
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        namespace = Some(rest[1].to_owned());
        // `namespaces/{name}/status` and `/finalize` are the namespace's own subresources.
        if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
            rest = &rest[2..];
        }
    }
    let (resource, name, subresource) = match rest {
        [] => return None,
        [resource] => (*resource, None, None),
        [resource, name] => (*resource, Some(*name), None),
        [resource, name, subresource, ..] => (*resource, Some(*name), Some(*subresource)),
    };
    Some((
        ResourceAttributes {
            group: group.to_owned(),
            resource: resource.to_owned(),
            subresource: subresource.map(str::to_owned),
            namespace,
            name: name.map(str::to_owned),
        },
        legacy_watch,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &Method, uri: &str) -> RequestInfo {
        RequestInfo::parse(method, &uri.parse().expect("uri"))
    }

    #[test]
    fn counts_requests_like_the_audit_log() {
        let cases = [
            (
                Method::GET,
                "/apis/batch/v1/namespaces/d/jobs",
                ("list", "jobs"),
            ),
            (
                Method::GET,
                "/apis/batch/v1/namespaces/d/jobs?watch=true",
                ("watch", "jobs"),
            ),
            (
                Method::GET,
                "/apis/batch/v1/namespaces/d/jobs/x",
                ("get", "jobs"),
            ),
            (
                Method::PUT,
                "/apis/batch/v1/namespaces/d/jobs/x/status",
                ("update", "jobs/status"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/d/pods",
                ("deletecollection", "pods"),
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/d/pods",
                ("watch", "pods"),
            ),
            (Method::GET, "/version", ("get", "/version")),
        ];
        for (method, uri, (verb, resource)) in cases {
            assert_eq!(
                info(&method, uri).counter_key(),
                (verb.to_owned(), resource.to_owned()),
                "{uri}"
            );
        }
    }

    #[test]
    fn a_namespace_object_is_scoped_to_itself() {
        let get = info(&Method::GET, "/api/v1/namespaces/tool-a");
        let resource = get.resource.expect("resource");
        assert_eq!(resource.resource, "namespaces");
        assert_eq!(resource.name.as_deref(), Some("tool-a"));
        assert_eq!(resource.namespace.as_deref(), Some("tool-a"));
        let status = info(&Method::PUT, "/api/v1/namespaces/tool-a/status")
            .resource
            .expect("resource");
        assert_eq!(status.resource_and_subresource(), "namespaces/status");
        let list = info(&Method::GET, "/api/v1/namespaces")
            .resource
            .expect("resource");
        assert_eq!((list.namespace, list.name), (None, None));
    }

    #[test]
    fn names_group_subresource_and_unserved_kinds() {
        let log = info(&Method::GET, "/api/v1/namespaces/tool-a/pods/p/log")
            .resource
            .expect("resource");
        assert_eq!(
            (log.group.as_str(), log.resource_and_subresource().as_str()),
            ("", "pods/log")
        );
        let review = info(
            &Method::POST,
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        );
        assert_eq!(review.verb, "create");
        let resource = review.resource.expect("resource");
        assert_eq!(resource.group, "authorization.k8s.io");
        assert_eq!(resource.resource, "selfsubjectaccessreviews");
        assert!(info(&Method::GET, "/apis/batch/v1").resource.is_none());
        assert!(info(&Method::GET, "/openapi/v2").resource.is_none());
    }
}
