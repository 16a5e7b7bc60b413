//! The rendering context from a snapshot: which images exist, the tool's home and uid, the namespace's limits.
//!
//! On Toolforge the home is `/data/project/<tool>` and the uid that of the Unix account `tools.<tool>` (upstream
//! asks the passwd database, as [`Passwd`] does). On the local cluster (SPEC §10) there are no such accounts: pods
//! run as the current user, and the home is `<toolsHome>/<tool>` when the cluster announces a `toolsHome`, else the
//! directory holding the jobs file. A snapshot read without the context is rendered as on the local cluster.

use std::path::Path;

use crate::config::image::ImageTable;
use crate::model::ToolName;
use crate::model::inventory::applyset_id;
use crate::render::context::{ContextError, images_from_config_map};
use crate::render::limits::ContainerLimits;
use crate::render::{Membership, RenderContext, TriggerFiles, UidLookup};

use super::{LocalIdentity, Snapshot};

/// The passwd database (NSS: `/etc/passwd`, LDAP through sssd on Toolforge), as `getpwnam` sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Passwd;

impl UidLookup for Passwd {
    fn uid_of(&self, account: &str) -> Option<u32> {
        uzers::get_user_by_name(account).map(|user| user.uid())
    }
}

/// What the context is made of besides the snapshot.
pub struct ContextInputs<'a> {
    pub tool: &'a ToolName,
    /// The inventory's name (`--set`).
    pub set_name: &'a str,
    /// The directory holding the jobs file (absolute).
    pub file_directory: &'a Path,
    pub trigger_files: TriggerFiles,
    pub uids: &'a dyn UidLookup,
}

/// The image table of the cluster: its `image-config` ConfigMap when it has a valid one, else the bundled table.
pub fn image_table(snapshot: &Snapshot) -> ImageTable {
    match snapshot.image_config.as_ref().map(images_from_config_map) {
        Some(Ok(table)) => table,
        Some(Err(error)) => {
            tracing::warn!(%error, "using the bundled image table");
            ImageTable::bundled()
        }
        None => ImageTable::bundled(),
    }
}

/// The rendering context for `inputs.tool` on the snapshot's cluster.
pub fn render_context(
    snapshot: &Snapshot,
    inputs: ContextInputs<'_>,
) -> Result<RenderContext, ContextError> {
    let namespace = inputs.tool.namespace();
    let membership = Membership {
        set_name: inputs.set_name.to_owned(),
        applyset_id: applyset_id(inputs.set_name, &namespace),
    };
    let images = image_table(snapshot);
    // A snapshot without the context read (see `pipeline::plan`) renders with what needs no request: the bundled
    // image table, no limits, and the current user in the file's directory — as on a local cluster that announces
    // no `toolsHome`, and as on Toolforge for a file in the tool's home run as the tool.
    let unread = LocalIdentity { tools_home: None };
    let local = if snapshot.coverage.context {
        snapshot.local.as_ref()
    } else {
        Some(&unread)
    };
    let context = match local {
        Some(local) => {
            let home = local.tools_home.as_ref().map_or_else(
                || inputs.file_directory.to_owned(),
                |tools_home| tools_home.join(inputs.tool.as_str()),
            );
            RenderContext::new(
                inputs.tool,
                &home.to_string_lossy(),
                uzers::get_current_uid(),
                images,
                membership,
            )
        }
        None => RenderContext::toolforge_with_lookup(inputs.tool, inputs.uids, images, membership)?,
    };
    let context = context.with_trigger_files(inputs.trigger_files);
    Ok(if snapshot.limit_ranges.is_empty() {
        context
    } else {
        context.with_container_limits(ContainerLimits::from_limit_ranges(&snapshot.limit_ranges))
    })
}
