//! The full image reference a job's container gets, `host/path:tag[@digest]`, and the way back from a live one.
//!
//! Pre-built images are looked up in the context's image table as upstream looks them up (short name, alias or the
//! table's exact registry path) and get the table's registry path; build-service images get the Harbor host when they have none. The tag is the one written, else
//! `latest`.

use crate::config::Job;
use crate::config::image::{ImageName, ImageTable, parse_image_name};
use crate::render::RenderError;
use crate::render::context::RenderContext;

/// The image reference of `job`'s container, or an error for a pre-built image the table does not know.
pub(crate) fn reference(job: &Job, context: &RenderContext) -> Result<String, RenderError> {
    match &job.image_name {
        ImageName::BuildService {
            host,
            tool,
            name,
            tag,
            digest,
        } => {
            let host = host.as_deref().unwrap_or(&context.harbor_host);
            // A digest alone pins the image; `latest` is only the default of an unpinned name.
            let tag = match (tag, digest) {
                (Some(tag), _) => format!(":{tag}"),
                (None, None) => ":latest".to_owned(),
                (None, Some(_)) => String::new(),
            };
            let digest = digest
                .as_ref()
                .map(|digest| format!("@{digest}"))
                .unwrap_or_default();
            Ok(format!("{host}/tool-{tool}/{name}{tag}{digest}"))
        }
        ImageName::Prebuilt(written) => {
            let (reference, digest) = split_digest(written);
            let (_, image) = context.images.find_written(reference).ok_or_else(|| {
                RenderError::UnknownImage {
                    job: job.name.clone(),
                    image: written.clone(),
                }
            })?;
            let tag = written_tag(reference).unwrap_or("latest");
            Ok(match digest {
                Some(digest) => format!("{}:{tag}@{digest}", image.image),
                None => format!("{}:{tag}", image.image),
            })
        }
    }
}

/// A live container image as the canonical job names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LiveImage {
    pub reference: String,
    /// The short name, for a known pre-built image.
    pub short_name: Option<String>,
}

/// Reads a live container image back. A known pre-built image is named by the table's current reference for its
/// short name, keeping tag and digest: upstream compares pre-built images by short name, so objects made before
/// the move from `-sssd-base` to `-sssd-web` images or from the old registry host run "the same image" and must
/// not be restarted when they are adopted.
pub(crate) fn read_back(live: &str, images: &ImageTable) -> LiveImage {
    let unknown = || LiveImage {
        reference: live.to_owned(),
        short_name: None,
    };
    if parse_image_name(live).is_ok_and(|name| name.is_build_service()) {
        return unknown();
    }
    let (reference, digest) = split_digest(live);
    let last_component = reference.rsplit('/').next().unwrap_or(reference);
    // Old hosts and variants are not in the table as URLs, but their last path component is an alias.
    let alias = last_component
        .split_once(':')
        .map_or(last_component, |(name, _)| name);
    let Some((short_name, image)) = images.find(reference).or_else(|| images.find(alias)) else {
        return unknown();
    };
    let tag = written_tag(reference).unwrap_or("latest");
    LiveImage {
        reference: match digest {
            Some(digest) => format!("{}:{tag}@{digest}", image.image),
            None => format!("{}:{tag}", image.image),
        },
        short_name: Some(short_name.to_owned()),
    }
}

fn split_digest(image: &str) -> (&str, Option<&str>) {
    image
        .split_once('@')
        .map_or((image, None), |(reference, digest)| {
            (reference, Some(digest))
        })
}

/// The tag of a full image URL without digest (`host/path:tag`), if it has one.
fn written_tag(image: &str) -> Option<&str> {
    let (_, last_component) = image.rsplit_once('/')?;
    last_component.split_once(':').map(|(_, tag)| tag)
}
