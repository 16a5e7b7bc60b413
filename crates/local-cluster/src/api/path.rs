//! Parsing resource URLs (`/api/v1/namespaces/{ns}/pods/{name}/status`, `/apis/batch/v1/jobs`, ...) into the
//! served type, namespace, name and subresource they address.

use crate::registry::resources::ResourceType;

/// What a resource URL addresses.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) resource: &'static ResourceType,
    /// `None` for cluster-scoped types and for all-namespace collections.
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) subresource: Option<String>,
}

/// Parses a request path against the served types (`find` looks one up by group, version and plural); `None`
/// when it names nothing served.
pub(crate) fn parse(
    path: &str,
    find: impl Fn(&str, &str, &str) -> Option<&'static ResourceType>,
) -> Option<Target> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let target = |plural: &str, namespace: Option<&str>, tail: &[&str]| -> Option<Target> {
        let resource = find(group, version, plural)?;
        if resource.namespaced != namespace.is_some() && !(resource.namespaced && tail.is_empty()) {
            return None;
        }
        let (name, subresource) = match tail {
            [] => (None, None),
            [name] => (Some((*name).to_owned()), None),
            [name, sub] => (Some((*name).to_owned()), Some((*sub).to_owned())),
            _ => return None,
        };
        Some(Target {
            resource,
            namespace: namespace.map(str::to_owned),
            name,
            subresource,
        })
    };
    match rest {
        ["namespaces", namespace, plural, tail @ ..]
            if find(group, version, plural).is_some_and(|r| r.namespaced) =>
        {
            target(plural, Some(namespace), tail)
        }
        [plural, tail @ ..] => target(plural, None, tail),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::resources::find;

    fn parse(path: &str) -> Option<Target> {
        super::parse(path, find)
    }

    #[test]
    fn parses_namespaced_cluster_and_subresource_paths() {
        let t = parse("/apis/batch/v1/namespaces/default/jobs/hello/status").expect("served");
        assert_eq!(t.resource.plural, "jobs");
        assert_eq!(t.namespace.as_deref(), Some("default"));
        assert_eq!(t.name.as_deref(), Some("hello"));
        assert_eq!(t.subresource.as_deref(), Some("status"));
        let all = parse("/apis/batch/v1/jobs").expect("served");
        assert_eq!((all.namespace, all.name), (None, None));
        let ns = parse("/api/v1/namespaces/default").expect("served");
        assert_eq!(
            (ns.resource.plural, ns.name.as_deref()),
            ("namespaces", Some("default"))
        );
        let ns_status = parse("/api/v1/namespaces/default/status").expect("served");
        assert_eq!(ns_status.subresource.as_deref(), Some("status"));
        let pods = parse("/api/v1/namespaces/x/pods").expect("served");
        assert_eq!(pods.resource.plural, "pods");
    }

    #[test]
    fn unknown_paths_are_not_targets() {
        assert!(parse("/apis/batch/v2/jobs").is_none());
        assert!(parse("/api/v1/widgets").is_none());
        assert!(
            parse("/apis/batch/v1/jobs/x").is_none(),
            "namespaced object without namespace"
        );
        assert!(parse("/api/v1/namespaces/d/pods/p/log/extra").is_none());
    }
}
