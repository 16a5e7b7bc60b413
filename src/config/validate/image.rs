//! The `image` key: image name syntax and the lookup in the image table.

use crate::config::DEPRECATED_IMAGE;
use crate::config::diagnostic::Problem;
use crate::config::fields::Fields;
use crate::config::image::{ImageName, ImageState, ImageTable, parse_image_name, strip_tag};
use crate::config::keys::Key;

use super::Context;

pub(super) fn image(
    fields: &Fields<'_>,
    context: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Option<(String, ImageName)> {
    let Some((text, entry)) = fields.text(Key::Image, problems) else {
        if !fields.has(Key::Image) {
            problems.push(
                Problem::error(
                    "jobs::missing_key",
                    fields.span.start..fields.span.start,
                    "job has no `image`",
                )
                .with_label("this job")
                .with_help(image_help(context.images)),
            );
        }
        return None;
    };
    let image_name = match parse_image_name(&text) {
        Ok(image_name) => image_name,
        Err(error) => {
            problems.push(
                Problem::error(
                    "jobs::invalid_image",
                    entry.value_range(),
                    error.to_string(),
                )
                .with_label("not an image name")
                .with_help(image_help(context.images)),
            );
            return None;
        }
    };
    if let ImageName::Prebuilt(name) = &image_name {
        match context.images.find_written(name) {
            // Upstream's jobs-api refuses any pre-built name its table does not have, in these words.
            None => {
                problems.push(
                    Problem::error(
                        "jobs::unknown_image",
                        entry.value_range(),
                        format!("No such image '{name}'"),
                    )
                    .with_label("not a Toolforge image")
                    .with_help(unknown_image_help(name, context.images)),
                );
                return None;
            }
            Some((short, prebuilt)) if prebuilt.state != ImageState::Stable => problems.push(
                Problem::warning(
                    DEPRECATED_IMAGE,
                    entry.value_range(),
                    format!("image `{short}` is deprecated"),
                )
                .with_label("deprecated")
                .with_help(match context.images.successor(short) {
                    Some(successor) => format!("move to `{successor}`"),
                    None => {
                        "move to a current image; `toolforge-jobs images` lists them".to_owned()
                    }
                }),
            ),
            Some(_) => {}
        }
    }
    Some((text, image_name))
}

/// What to write instead of an unknown pre-built name: the short name of the image a registry URL of another host
/// or variant stands for, else the names a mistyped short name probably meant, else the list.
fn unknown_image_help(name: &str, images: &ImageTable) -> String {
    if name.contains('/') {
        return match images.find(name) {
            Some((short, image)) => format!(
                "the image table has `{short}` as `{}`, not under this name: write `image: {short}`",
                image.image
            ),
            None => image_help(images),
        };
    }
    let suggestions = images.suggestions(strip_tag(name));
    if suggestions.is_empty() {
        return image_help(images);
    }
    let listed: Vec<String> = suggestions
        .iter()
        .map(|short| format!("`{short}`"))
        .collect();
    format!(
        "did you mean {}? {}",
        listed.join(" or "),
        image_help(images)
    )
}

fn image_help(images: &ImageTable) -> String {
    format!(
        "use a pre-built image ({}) or a build-service image such as `tool-<tool>/<image>:latest`",
        stable_list(images)
    )
}

fn stable_list(images: &ImageTable) -> String {
    images
        .stable_names()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
