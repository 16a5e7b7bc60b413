//! Which images the process kubelet's node can pull ([`ImagePolicy`]): by default those a Toolforge node can —
//! the pre-built images of Toolforge's image table and the build-service images in Harbor — so that a pod naming
//! any other image fails to pull as it would on Toolforge instead of running its command anyway.
//!
//! The image table is the cluster's own `tf-public/image-config` ConfigMap (key `images-v1.yaml`, the format
//! Toolforge publishes) when someone created it, else the copy of Toolforge's table that toolforge-jobs bundles
//! (`src/config/images-v1.yaml` of the main crate, the one file both read so they cannot disagree).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::registry::resources;
use crate::registry::store::Store;

/// Which images a node can pull; any other image fails with `ErrImagePull`, then `ImagePullBackOff`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ImagePolicy {
    /// What a Toolforge node pulls: a pre-built image of the image table (any tag, from its registry or the
    /// old `docker-registry.tools.wmflabs.org`), or a build-service image
    /// `tools-harbor.wmcloud.org/tool-<tool>/<name>[:<tag>][@<digest>]`.
    #[default]
    Toolforge,
    /// Every image (commands run as local processes whatever the image).
    Any,
    /// Only these, exactly as pods name them.
    Only(Vec<String>),
}

/// Where Toolforge publishes its image table.
const TABLE_NAMESPACE: &str = "tf-public";
const TABLE_NAME: &str = "image-config";
const TABLE_KEY: &str = "images-v1.yaml";
/// The copy of Toolforge's table bundled with toolforge-jobs.
const BUNDLED_TABLE: &str = include_str!("../../../../src/config/images-v1.yaml");
/// Harbor, where Toolforge's build service stores tools' images.
const HARBOR: &str = "tools-harbor.wmcloud.org";
/// The registry host Toolforge's pre-built images had before `docker-registry.svc.toolforge.org`; it still serves.
const OLD_REGISTRY: &str = "docker-registry.tools.wmflabs.org";

/// One entry of `images-v1.yaml`; the rest of it does not matter here.
#[derive(Debug, Deserialize)]
struct Entry {
    image: String,
}

impl ImagePolicy {
    /// Whether the node can pull `image`, given the cluster's objects (for its image table).
    pub(crate) fn pulls(&self, image: &str, store: &Store) -> bool {
        match self {
            ImagePolicy::Any => true,
            ImagePolicy::Only(images) => images.iter().any(|i| i == image),
            ImagePolicy::Toolforge => {
                let repository = repository(image);
                is_build_service(repository)
                    || table(store)
                        .iter()
                        .any(|entry| same_prebuilt(repository, entry))
            }
        }
    }
}

/// `host/path` without its `:tag` and `@digest`.
fn repository(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    // A `:` after the last `/` starts the tag (one before it is a host's port).
    match without_digest.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => repository,
        _ => without_digest,
    }
}

/// `tools-harbor.wmcloud.org/tool-<tool>/<name>`.
fn is_build_service(repository: &str) -> bool {
    match repository.split('/').collect::<Vec<_>>().as_slice() {
        [host, project, name] => {
            *host == HARBOR
                && project
                    .strip_prefix("tool-")
                    .is_some_and(|tool| !tool.is_empty())
                && !name.is_empty()
        }
        _ => false,
    }
}

/// Whether `repository` is the table's `image` (`host/path`), on its host or the old one.
fn same_prebuilt(repository: &str, image: &str) -> bool {
    let (Some((host, path)), Some((_, table_path))) =
        (repository.split_once('/'), image.split_once('/'))
    else {
        return false;
    };
    repository == image || (host == OLD_REGISTRY && path == table_path)
}

/// The `image` of every entry of the cluster's image table, else of the bundled one.
fn table(store: &Store) -> Vec<String> {
    let published = resources::find("", "v1", "configmaps")
        .and_then(|configmaps| store.get(configmaps, TABLE_NAMESPACE, TABLE_NAME))
        .and_then(|configmap| {
            configmap
                .get("data")
                .and_then(|d| d.get(TABLE_KEY))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    let text = published.as_deref().unwrap_or(BUNDLED_TABLE);
    match serde_saphyr::from_str::<BTreeMap<String, Entry>>(text) {
        Ok(entries) => entries.into_values().map(|e| e.image).collect(),
        Err(error) => {
            // As on Toolforge, a broken table pulls no pre-built image; say why once per start attempt.
            tracing::warn!(%error, "the `{TABLE_NAMESPACE}/{TABLE_NAME}` image table does not parse");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_and_digest_are_not_part_of_the_repository() {
        assert_eq!(repository("a.org/x/y:1@sha256:ab"), "a.org/x/y");
        assert_eq!(repository("localhost:5000/y"), "localhost:5000/y");
        assert_eq!(repository("busybox"), "busybox");
    }

    #[test]
    fn build_service_images_live_in_a_tool_project_in_harbor() {
        assert!(is_build_service("tools-harbor.wmcloud.org/tool-x/web"));
        assert!(!is_build_service("tools-harbor.wmcloud.org/library/web"));
        assert!(!is_build_service("tools-harbor.wmcloud.org/tool-/web"));
        assert!(!is_build_service("elsewhere.org/tool-x/web"));
    }

    #[test]
    fn the_bundled_table_holds_toolforge_images_on_either_registry_host_and_nothing_else() {
        let store = Store::new(10, crate::clock::Clock::default());
        let policy = ImagePolicy::Toolforge;
        assert!(policy.pulls(
            "docker-registry.svc.toolforge.org/toolforge-bookworm-sssd-web:latest",
            &store
        ));
        assert!(policy.pulls(
            "docker-registry.tools.wmflabs.org/toolforge-bookworm-sssd-web:latest",
            &store
        ));
        assert!(policy.pulls("tools-harbor.wmcloud.org/tool-x/web:v2", &store));
        assert!(!policy.pulls("nowhere.invalid/none:1", &store));
        assert!(!policy.pulls("busybox", &store));
        assert!(!policy.pulls("elsewhere.org/toolforge-bookworm-sssd-web:latest", &store));
        assert!(ImagePolicy::Any.pulls("busybox", &store));
    }
}
