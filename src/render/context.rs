//! The rendering context: everything besides the job itself that decides what the objects look like.
//!
//! One explicit value, built by the caller and passed into [`super::objects`]; rendering never reads global state.
//! Building it from the cluster (the `image-config` ConfigMap, the passwd database) is the shell's job: this module
//! only offers pure constructors and the [`UidLookup`] seam the CLI implements.

use k8s_openapi::api::core::v1::ConfigMap;

use crate::config::image::{ImageTable, ImageTableError};
use crate::config::quantity::Quantity;
use crate::model::ToolName;
use crate::render::fingerprint::TriggerFiles;
use crate::render::limits::ContainerLimits;

/// Toolforge's CPU limit for jobs that do not set `cpu` (jobs-api `DEFAULT_CPU_LIMIT` in production values).
pub const PRODUCTION_DEFAULT_CPU_LIMIT: &str = "1000m";

/// Harbor, where build-service images live when the image name has no host.
pub const PRODUCTION_HARBOR_HOST: &str = "tools-harbor.wmcloud.org";

/// The inventory name used when the user does not pass `--set` (SPEC §6).
pub const DEFAULT_SET_NAME: &str = "toolforge-jobs";

/// Where Toolforge publishes its pre-built image table: ConfigMap `image-config` in `tf-public`, key
/// `images-v1.yaml`.
pub const IMAGE_CONFIG_NAMESPACE: &str = "tf-public";
pub const IMAGE_CONFIG_NAME: &str = "image-config";
pub const IMAGE_CONFIG_KEY: &str = "images-v1.yaml";

/// Why the `image-config` ConfigMap cannot serve as the image table.
#[derive(Debug, thiserror::Error)]
pub enum ImageConfigError {
    #[error("the `{IMAGE_CONFIG_NAME}` ConfigMap has no `{IMAGE_CONFIG_KEY}` key")]
    MissingKey,
    #[error("the `{IMAGE_CONFIG_NAME}` ConfigMap holds an invalid image table")]
    Invalid(#[source] ImageTableError),
}

/// The image table held by the `image-config` ConfigMap (fetched by the shell).
pub fn images_from_config_map(config_map: &ConfigMap) -> Result<ImageTable, ImageConfigError> {
    let text = config_map
        .data
        .as_ref()
        .and_then(|data| data.get(IMAGE_CONFIG_KEY))
        .ok_or(ImageConfigError::MissingKey)?;
    ImageTable::from_yaml(text).map_err(ImageConfigError::Invalid)
}

/// Finds the uid of a tool's Unix account; upstream calls `getpwnam("tools.<tool>")`.
///
/// A trait so that the CLI can query the passwd database, the local cluster can answer with the current user,
/// and tests can answer with a constant.
pub trait UidLookup {
    /// The uid (equal to the gid) of `account`, or `None` when there is no such account.
    fn uid_of(&self, account: &str) -> Option<u32>;
}

/// Which inventory the rendered objects belong to (SPEC §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// The set name: the inventory ConfigMap's name (`toolforge-jobs`, or `--set NAME`).
    pub set_name: String,
    /// The `ApplySet` id of that ConfigMap, see [`crate::model::inventory::applyset_id`].
    pub applyset_id: String,
}

/// Everything rendering needs to know about the tool and its cluster.
#[derive(Debug, Clone)]
pub struct RenderContext {
    pub tool: ToolName,
    /// `tool-<tool>`.
    pub namespace: String,
    /// The tool's home: working directory of pre-built images and base of relative log paths.
    pub home: String,
    /// The tool's uid; pods run with it as uid, gid and fsGroup.
    pub uid: u32,
    pub images: ImageTable,
    /// CPU limit of jobs that do not set `cpu`.
    pub default_cpu_limit: Quantity,
    /// Registry host of build-service images written without one.
    pub harbor_host: String,
    pub membership: Membership,
    /// Contents of the files matched by the jobs file's `trigger-files` patterns (read by the shell).
    pub trigger_files: TriggerFiles,
    /// The namespace's per-container `LimitRange` bounds, when known; see [`crate::render::limits`].
    pub container_limits: Option<ContainerLimits>,
}

/// Why a context could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("the Unix account `{account}` of tool `{tool}` does not exist")]
    NoSuchAccount { tool: String, account: String },
}

impl RenderContext {
    /// A context for Toolforge itself: home `/data/project/<tool>`, production defaults, the given uid and images.
    pub fn toolforge(
        tool: &ToolName,
        uid: u32,
        images: ImageTable,
        membership: Membership,
    ) -> Self {
        Self::new(
            tool,
            &format!("/data/project/{tool}"),
            uid,
            images,
            membership,
        )
    }

    /// A context with an arbitrary home directory (the local cluster) and production defaults.
    pub fn new(
        tool: &ToolName,
        home: &str,
        uid: u32,
        images: ImageTable,
        membership: Membership,
    ) -> Self {
        Self {
            tool: tool.clone(),
            namespace: tool.namespace(),
            home: home.trim_end_matches('/').to_owned(),
            uid,
            images,
            default_cpu_limit: production_default_cpu_limit(),
            harbor_host: PRODUCTION_HARBOR_HOST.to_owned(),
            membership,
            trigger_files: TriggerFiles::default(),
            container_limits: None,
        }
    }

    /// A Toolforge context whose uid comes from `lookup` (the account is `tools.<tool>`, as upstream).
    pub fn toolforge_with_lookup(
        tool: &ToolName,
        lookup: &dyn UidLookup,
        images: ImageTable,
        membership: Membership,
    ) -> Result<Self, ContextError> {
        let account = format!("tools.{tool}");
        let uid = lookup
            .uid_of(&account)
            .ok_or_else(|| ContextError::NoSuchAccount {
                tool: tool.to_string(),
                account,
            })?;
        Ok(Self::toolforge(tool, uid, images, membership))
    }

    #[must_use]
    pub fn with_default_cpu_limit(mut self, limit: Quantity) -> Self {
        self.default_cpu_limit = limit;
        self
    }

    #[must_use]
    pub fn with_container_limits(mut self, limits: ContainerLimits) -> Self {
        self.container_limits = Some(limits);
        self
    }

    #[must_use]
    pub fn with_trigger_files(mut self, files: TriggerFiles) -> Self {
        self.trigger_files = files;
        self
    }
}

fn production_default_cpu_limit() -> Quantity {
    // A constant literal in the Kubernetes quantity grammar; the unit test below parses it.
    Quantity::parse(PRODUCTION_DEFAULT_CPU_LIMIT).expect("the production CPU limit is a quantity")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Passwd;

    impl UidLookup for Passwd {
        fn uid_of(&self, account: &str) -> Option<u32> {
            (account == "tools.mytool").then_some(52503)
        }
    }

    fn tool(name: &str) -> ToolName {
        ToolName::new(name).unwrap()
    }

    fn membership() -> Membership {
        Membership {
            set_name: DEFAULT_SET_NAME.to_owned(),
            applyset_id: "applyset-x-v1".to_owned(),
        }
    }

    #[test]
    fn toolforge_context_uses_the_project_home_and_namespace() {
        let context =
            RenderContext::toolforge(&tool("mytool"), 1, ImageTable::bundled(), membership());
        assert_eq!(context.namespace, "tool-mytool");
        assert_eq!(context.home, "/data/project/mytool");
        assert_eq!(context.default_cpu_limit.as_str(), "1000m");
    }

    #[test]
    fn uid_comes_from_the_tools_account() {
        let context = RenderContext::toolforge_with_lookup(
            &tool("mytool"),
            &Passwd,
            ImageTable::bundled(),
            membership(),
        )
        .unwrap();
        assert_eq!(context.uid, 52503);
        let error = RenderContext::toolforge_with_lookup(
            &tool("other"),
            &Passwd,
            ImageTable::bundled(),
            membership(),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the Unix account `tools.other` of tool `other` does not exist"
        );
    }

    #[test]
    fn the_image_table_comes_from_the_image_config_map() {
        let mut config_map = ConfigMap::default();
        assert!(matches!(
            images_from_config_map(&config_map),
            Err(ImageConfigError::MissingKey)
        ));
        config_map.data = Some(std::collections::BTreeMap::from([(
            IMAGE_CONFIG_KEY.to_owned(),
            "python3.13:\n  image: registry.example/toolforge-python313-sssd-web\n  state: stable\n  aliases: [tf-python313]\n".to_owned(),
        )]));
        let table = images_from_config_map(&config_map).unwrap();
        assert_eq!(table.find("tf-python313").unwrap().0, "python3.13");
        assert_eq!(table.find("python3.11"), None);
        config_map.data = Some(std::collections::BTreeMap::from([(
            IMAGE_CONFIG_KEY.to_owned(),
            "- not a table".to_owned(),
        )]));
        assert!(matches!(
            images_from_config_map(&config_map),
            Err(ImageConfigError::Invalid(_))
        ));
    }

    #[test]
    fn local_homes_lose_a_trailing_slash() {
        let context = RenderContext::new(
            &tool("t"),
            "/home/me/bot/",
            1000,
            ImageTable::bundled(),
            membership(),
        );
        assert_eq!(context.home, "/home/me/bot");
    }
}
