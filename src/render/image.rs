//! The full image reference a job's container gets: `host/path:tag[@digest]`.
//!
//! Pre-built images are looked up in the context's image table (short name, alias or URL) and get the table's
//! registry path; build-service images get the Harbor host when they have none. The tag is the one written, else
//! `latest`.

use crate::config::Job;
use crate::config::image::ImageName;
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
            let (reference, digest) = written
                .split_once('@')
                .map_or((written.as_str(), None), |(reference, digest)| {
                    (reference, Some(digest))
                });
            let (_, image) =
                context
                    .images
                    .find(reference)
                    .ok_or_else(|| RenderError::UnknownImage {
                        job: job.name.clone(),
                        image: written.clone(),
                    })?;
            let tag = written_tag(reference).unwrap_or("latest");
            Ok(match digest {
                Some(digest) => format!("{}:{tag}@{digest}", image.image),
                None => format!("{}:{tag}", image.image),
            })
        }
    }
}

/// The tag of a full image URL without digest (`host/path:tag`), if it has one.
fn written_tag(image: &str) -> Option<&str> {
    let (_, last_component) = image.rsplit_once('/')?;
    last_component.split_once(':').map(|(_, tag)| tag)
}
