//! Image names as jobs.yaml accepts them, and the table of Toolforge's pre-built images.
//!
//! A job's `image` is a short name (`python3.11`), an alias (`tf-python39`, `toolforge-python311-sssd-base`), a
//! full pre-built image URL, or a build-service image `[host/]tool-<tool>/<name>[:<tag>][@<digest>]`. This
//! module parses those forms and looks pre-built names up in an [`ImageTable`]; it does no I/O (the bundled table
//! is compiled in, a cluster's table is passed in by the caller).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

/// Lifecycle state of a pre-built image, as the `image-config` ConfigMap names it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageState {
    Stable,
    Deprecated,
    #[serde(untagged)]
    Other(String),
}

impl ImageState {
    /// The state as the image table and the jobs API write it: `stable`, `deprecated`, ….
    pub fn name(&self) -> &str {
        match self {
            ImageState::Stable => "stable",
            ImageState::Deprecated => "deprecated",
            ImageState::Other(state) => state,
        }
    }
}

/// One pre-built image of the table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PrebuiltImage {
    /// Registry path without tag, e.g. `docker-registry.svc.toolforge.org/toolforge-python311-sssd-web`.
    pub image: String,
    pub state: ImageState,
    #[serde(default)]
    pub aliases: Vec<String>,
}

/// The pre-built images by short name, in the format of `images-v1.yaml` (extra keys such as `variants` are
/// ignored).
///
/// Shared, not copied, by every context made from it: a copy of the bundled table took a few per cent of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "BTreeMap<String, PrebuiltImage>")]
pub struct ImageTable {
    images: Arc<BTreeMap<String, PrebuiltImage>>,
}

impl From<BTreeMap<String, PrebuiltImage>> for ImageTable {
    fn from(images: BTreeMap<String, PrebuiltImage>) -> Self {
        Self {
            images: Arc::new(images),
        }
    }
}

const BUNDLED_TABLE: &str = include_str!("images-v1.yaml");

/// Why an image table could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the image table is not valid `images-v1.yaml` content")]
pub struct ImageTableError(#[source] serde_saphyr::Error);

impl ImageTable {
    /// Parses the content of the `images-v1.yaml` key of the `image-config` ConfigMap.
    pub fn from_yaml(text: &str) -> Result<Self, ImageTableError> {
        serde_saphyr::from_str(text).map_err(ImageTableError)
    }

    /// The table shipped with this program, used when the cluster's table cannot be read.
    pub fn bundled() -> Self {
        // Parsed once: every command, and every plan of the watch daemon, starts from it.
        static BUNDLED: std::sync::LazyLock<ImageTable> = std::sync::LazyLock::new(|| {
            // The bundled file is part of the source tree and a unit test parses it, so this cannot fail at run
            // time.
            ImageTable::from_yaml(BUNDLED_TABLE).expect("bundled image table is valid")
        });
        BUNDLED.clone()
    }

    /// Finds the pre-built image a jobs file (or an API request) names, as upstream's jobs-api accepts it: a
    /// short name or alias (`python3.11`, `tf-python311`, either with a `:tag`), or the table's exact registry
    /// path (`docker-registry.svc.toolforge.org/toolforge-python311-sssd-web`, with a tag or not). Anything else
    /// is no image, even when it looks like one: another registry host or variant is another image upstream
    /// refuses ("No such image").
    pub fn find_written(&self, name: &str) -> Option<(&str, &PrebuiltImage)> {
        let path = strip_tag(name);
        self.images
            .iter()
            .find(|(short, image)| {
                if path.contains('/') {
                    image.image == path
                } else {
                    *short == path || image.aliases.iter().any(|alias| alias == path)
                }
            })
            .map(|(short, image)| (short.as_str(), image))
    }

    /// Finds the pre-built image a live object runs: by short name or alias, or by registry URL, whose last
    /// path component is compared so that images of old registry hosts and variants, which upstream once
    /// created, are still recognised. Names a user writes are looked up with [`Self::find_written`].
    pub fn find(&self, name: &str) -> Option<(&str, &PrebuiltImage)> {
        let path = strip_tag(name);
        let last = path.rsplit('/').next().unwrap_or(path);
        self.images
            .iter()
            .find(|(short, image)| {
                *short == last
                    || image.aliases.iter().any(|alias| alias == last)
                    || image.image.rsplit('/').next() == Some(last)
            })
            .map(|(short, image)| (short.as_str(), image))
    }

    /// Short names that a mistyped or incomplete name probably meant: the stable images it is a prefix of
    /// (`python3` → `python3.11`, `python3.13`), else the closest name.
    pub fn suggestions(&self, name: &str) -> Vec<&str> {
        let prefixed: Vec<&str> = self
            .stable_names()
            .filter(|short| short.starts_with(name))
            .collect();
        if !prefixed.is_empty() {
            return prefixed;
        }
        self.images
            .keys()
            .map(|short| (strsim::levenshtein(name, short), short.as_str()))
            .filter(|(distance, _)| *distance <= 2)
            .min_by_key(|(distance, _)| *distance)
            .map(|(_, short)| vec![short])
            .unwrap_or_default()
    }

    /// The image to move to from `short` (a deprecated image's short name): the newest stable image of the same
    /// family, i.e. the same name without its version (`python3.9` → `python3.13`, `node16` → `node22`), or the
    /// newest stable Debian release for a Debian base image (`buster` → `trixie`).
    pub fn successor(&self, short: &str) -> Option<&str> {
        if let Some(old) = DEBIAN_RELEASES.iter().position(|&release| release == short) {
            return self
                .stable_names()
                .filter_map(|name| {
                    DEBIAN_RELEASES
                        .iter()
                        .position(|&release| release == name)
                        .map(|position| (position, name))
                })
                .filter(|(position, _)| *position > old)
                .max_by_key(|(position, _)| *position)
                .map(|(_, name)| name);
        }
        let (family, version) = split_version(short);
        if version.is_empty() {
            return None;
        }
        self.stable_names()
            .filter(|name| *name != short)
            .filter_map(|name| {
                let (other_family, other_version) = split_version(name);
                (other_family == family && !other_version.is_empty())
                    .then_some((other_version, name))
            })
            .filter(|(other_version, _)| *other_version > version)
            .max_by(|(a, _), (b, _)| a.cmp(b))
            .map(|(_, name)| name)
    }

    /// Short names of the stable images, sorted, as `toolforge jobs images` lists them.
    pub fn stable_names(&self) -> impl Iterator<Item = &str> {
        self.images
            .iter()
            .filter(|(_, image)| image.state == ImageState::Stable)
            .map(|(short, _)| short.as_str())
    }
}

/// Debian releases in order, the names of Toolforge's base images.
const DEBIAN_RELEASES: [&str; 5] = ["buster", "bullseye", "bookworm", "trixie", "forky"];

/// A short name split into its family and numeric version: `python3.11` → (`python`, [3, 11]), `jdk8` →
/// (`jdk`, [8]); a name without digits has an empty version.
fn split_version(short: &str) -> (&str, Vec<u32>) {
    let digits = short
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(short.len());
    let (family, rest) = short.split_at(digits);
    let version = rest
        .split('.')
        .map_while(|part| part.parse().ok())
        .collect();
    (family, version)
}

/// The image name without its `:tag` and `@digest`.
pub fn strip_tag(name: &str) -> &str {
    let without_digest = name.split_once('@').map_or(name, |(before, _)| before);
    match without_digest.rsplit_once(':') {
        // A colon after the last slash separates the tag; one before it belongs to a `host:port`.
        Some((path, tag)) if !tag.contains('/') => path,
        _ => without_digest,
    }
}

/// What an `image` value names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageName {
    /// An image built by Toolforge's build service and stored in Harbor project `tool-<tool>`.
    BuildService {
        host: Option<String>,
        tool: String,
        name: String,
        tag: Option<String>,
        digest: Option<String>,
    },
    /// Anything else: a pre-built image's short name, alias or URL, looked up in the image table.
    Prebuilt(String),
}

impl ImageName {
    pub fn is_build_service(&self) -> bool {
        matches!(self, Self::BuildService { .. })
    }
}

/// Why an `image` value is not a well-formed image name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageNameError {
    #[error("image name is empty")]
    Empty,
    #[error("image name `{0}` contains white space")]
    WhiteSpace(String),
    #[error("image name `{name}` has an invalid {part} `{value}`")]
    InvalidPart {
        name: String,
        part: &'static str,
        value: String,
    },
}

/// Parses `[host/][tool-<tool>/]name[:tag][@digest]`.
pub fn parse_image_name(text: &str) -> Result<ImageName, ImageNameError> {
    if text.is_empty() {
        return Err(ImageNameError::Empty);
    }
    if text.chars().any(char::is_whitespace) {
        return Err(ImageNameError::WhiteSpace(text.to_owned()));
    }
    let invalid = |part, value: &str| ImageNameError::InvalidPart {
        name: text.to_owned(),
        part,
        value: value.to_owned(),
    };

    let (reference, digest) = match text.split_once('@') {
        Some((reference, digest)) => {
            let valid = digest.split_once(':').is_some_and(|(algorithm, hex)| {
                !algorithm.is_empty()
                    && algorithm
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                    && hex.len() >= 32
                    && hex.bytes().all(|b| b.is_ascii_hexdigit())
            });
            if !valid {
                return Err(invalid("digest", digest));
            }
            (reference, Some(digest.to_owned()))
        }
        None => (text, None),
    };
    let (path, tag) = match reference.rsplit_once(':') {
        Some((path, tag)) if !tag.contains('/') => (path, Some(tag)),
        _ => (reference, None),
    };
    if let Some(tag) = tag {
        let valid = tag.len() <= 128
            && tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !valid {
            return Err(invalid("tag", tag));
        }
    }

    let mut components: Vec<&str> = path.split('/').collect();
    let host =
        (components.len() > 1 && looks_like_host(components[0])).then(|| components.remove(0));
    for component in &components {
        let valid = !component.is_empty()
            && component.starts_with(|c: char| c.is_ascii_alphanumeric())
            && component.ends_with(|c: char| c.is_ascii_alphanumeric())
            && component
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
        if !valid {
            return Err(invalid("path component", component));
        }
    }

    match components.as_slice() {
        [project, name] if project.starts_with("tool-") && project.len() > "tool-".len() => {
            Ok(ImageName::BuildService {
                host: host.map(str::to_owned),
                tool: project["tool-".len()..].to_owned(),
                name: (*name).to_owned(),
                tag: tag.map(str::to_owned),
                digest,
            })
        }
        _ => Ok(ImageName::Prebuilt(text.to_owned())),
    }
}

fn looks_like_host(component: &str) -> bool {
    component.contains('.') || component.contains(':') || component == "localhost"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_table_parses() {
        let table = ImageTable::bundled();
        assert!(table.stable_names().any(|name| name == "python3.11"));
    }

    #[test]
    fn a_deprecated_image_is_succeeded_by_the_newest_stable_one_of_its_family() {
        let table = ImageTable::bundled();
        for (old, new) in [
            ("python3.9", Some("python3.13")),
            ("python3.5", Some("python3.13")),
            ("node16", Some("node22")),
            ("php7.4", Some("php8.4")),
            ("golang1.11", Some("golang1.21")),
            ("jdk8", Some("jdk21")),
            ("ruby2.7", Some("ruby3.3")),
            ("perl5.32", Some("perl5.40")),
            ("buster", Some("trixie")),
            ("bullseye", Some("trixie")),
            ("mono6.8", None),
            ("mariadb", None),
            ("python3.13", None),
        ] {
            assert_eq!(table.successor(old), new, "{old}");
        }
    }

    #[test]
    fn finds_images_by_short_name_alias_and_url() {
        let table = ImageTable::bundled();
        for name in [
            "python3.11",
            "python3.11:latest",
            "tf-python311",
            "toolforge-python311-sssd-base",
            "docker-registry.svc.toolforge.org/toolforge-python311-sssd-web:latest",
            "docker-registry.svc.toolforge.org/toolforge-python311-sssd-web",
            "docker-registry.tools.wmflabs.org/toolforge-python311-sssd-web:latest",
            "docker-registry.tools.wmflabs.org/toolforge-python311-sssd-base:latest",
        ] {
            assert_eq!(
                table.find(name).map(|(short, _)| short),
                Some("python3.11"),
                "{name}"
            );
        }
        assert_eq!(table.find("python2.7"), None);
    }

    #[test]
    fn suggests_what_a_partial_or_mistyped_name_meant() {
        let table = ImageTable::bundled();
        assert_eq!(
            table.suggestions("python3"),
            ["python3.11", "python3.12", "python3.13"]
        );
        assert_eq!(table.suggestions("bookwrom"), ["bookworm"]);
        assert!(table.suggestions("ubuntu").is_empty());
    }

    #[test]
    fn written_names_are_only_short_names_aliases_and_the_tables_exact_paths() {
        let table = ImageTable::bundled();
        for name in [
            "python3.11",
            "python3.11:latest",
            "tf-python311",
            "toolforge-python311-sssd-base",
            "docker-registry.svc.toolforge.org/toolforge-python311-sssd-web:latest",
            "docker-registry.svc.toolforge.org/toolforge-python311-sssd-web",
        ] {
            assert_eq!(
                table.find_written(name).map(|(short, _)| short),
                Some("python3.11"),
                "{name}"
            );
        }
        for name in [
            "docker-registry.tools.wmflabs.org/toolforge-python311-sssd-web:latest",
            "docker-registry.tools.wmflabs.org/toolforge-php82-sssd-base:latest",
            "docker-registry.svc.toolforge.org/toolforge-python311-sssd-base:latest",
            "docker-registry.svc.toolforge.org/python3.11",
            "toolforge/toolforge-python311-sssd-web",
            "python2.7",
        ] {
            assert_eq!(table.find_written(name), None, "{name}");
        }
    }

    #[test]
    fn deprecated_images_are_found_with_their_state() {
        let table = ImageTable::bundled();
        let (short, image) = table.find("tf-python39").unwrap();
        assert_eq!(short, "python3.9");
        assert_eq!(image.state, ImageState::Deprecated);
    }

    #[test]
    fn parses_build_service_images() {
        assert_eq!(
            parse_image_name("tool-mytool/bot:latest").unwrap(),
            ImageName::BuildService {
                host: None,
                tool: "mytool".into(),
                name: "bot".into(),
                tag: Some("latest".into()),
                digest: None,
            }
        );
        let digest = format!("sha256:{}", "a".repeat(64));
        let ImageName::BuildService {
            host,
            digest: parsed,
            ..
        } = parse_image_name(&format!("tools-harbor.wmcloud.org/tool-x/y:1@{digest}")).unwrap()
        else {
            panic!("expected a build-service image");
        };
        assert_eq!(host.as_deref(), Some("tools-harbor.wmcloud.org"));
        assert_eq!(parsed, Some(digest));
    }

    #[test]
    fn everything_else_is_prebuilt() {
        for name in [
            "python3.11",
            "tf-php74",
            "docker-registry.tools.wmflabs.org/toolforge-python311-sssd-web:latest",
        ] {
            assert_eq!(
                parse_image_name(name).unwrap(),
                ImageName::Prebuilt(name.into())
            );
        }
    }

    #[test]
    fn rejects_malformed_names() {
        assert_eq!(parse_image_name(""), Err(ImageNameError::Empty));
        assert!(matches!(
            parse_image_name("python 3"),
            Err(ImageNameError::WhiteSpace(_))
        ));
        assert!(matches!(
            parse_image_name("Python3.11"),
            Err(ImageNameError::InvalidPart { .. })
        ));
        assert!(matches!(
            parse_image_name("tool-x/y:bad tag"),
            Err(ImageNameError::WhiteSpace(_))
        ));
        assert!(matches!(
            parse_image_name("tool-x/y@sha256:zz"),
            Err(ImageNameError::InvalidPart { .. })
        ));
        assert!(matches!(
            parse_image_name("a//b"),
            Err(ImageNameError::InvalidPart { .. })
        ));
    }
}
