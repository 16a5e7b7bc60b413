//! The tool a jobs file belongs to, and its namespace `tool-<tool>`.
//!
//! A [`ToolName`] exists only once its text has been checked: `tool-<tool>` is a valid Kubernetes namespace name
//! (an RFC 1123 label: at most 63 lower-case letters, digits and `-`, starting and ending with a letter or digit).
//! The namespace goes into every request path, so nothing else may build it: a name from `--tool`, `--namespace`,
//! the kubeconfig context or `$USER` becomes a `ToolName` first, or is refused with what is wrong.

use std::fmt;
use std::str::FromStr;

/// What every tool's namespace starts with.
pub const NAMESPACE_PREFIX: &str = "tool-";

/// The longest namespace name Kubernetes accepts (an RFC 1123 label).
pub const MAX_NAMESPACE_LENGTH: usize = 63;

/// The longest tool name: its namespace, `tool-<tool>`, must stay within [`MAX_NAMESPACE_LENGTH`].
pub const MAX_TOOL_LENGTH: usize = MAX_NAMESPACE_LENGTH - NAMESPACE_PREFIX.len();

/// A valid tool name; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolName(String);

/// Why a text is not a tool name. The messages leave the text out: the caller shows where it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolNameError {
    #[error("the tool name is empty; pass the tool's name, e.g. `--tool mytool`")]
    Empty,
    #[error(
        "the tool name is {length} characters long; at most {MAX_TOOL_LENGTH} are allowed, so that its namespace \
         `tool-<tool>` is a valid Kubernetes name"
    )]
    TooLong { length: usize },
    #[error("the tool name has upper-case letters; tool names are lower-case, e.g. `{lower}`")]
    UpperCase { lower: String },
    #[error(
        "the tool name contains `{}`; a tool name has only lower-case letters, digits and `-`, e.g. `mytool`",
        .character.escape_debug()
    )]
    Character { character: char },
    #[error("the tool name {} with `-`; it must start and end with a letter or a digit", if *.first { "starts" } else { "ends" })]
    Hyphen { first: bool },
}

/// Why a namespace is not a tool's namespace. The messages name it, and include the tool name's problem (which
/// is data here, not a source: clap shows only the message of a flag's error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    #[error(
        "`{namespace}` is not a tool's namespace: a tool's namespace is `tool-<tool>`, e.g. `tool-mytool`; name \
         the tool with `--tool <tool>` or its namespace with `--namespace tool-<tool>`"
    )]
    NotATool { namespace: String },
    #[error("`{namespace}` is not a tool's namespace: {problem}")]
    InvalidTool {
        namespace: String,
        problem: ToolNameError,
    },
}

impl ToolName {
    /// Checks `text` as a tool name.
    pub fn new(text: &str) -> Result<Self, ToolNameError> {
        let Some(first) = text.chars().next() else {
            return Err(ToolNameError::Empty);
        };
        let length = text.chars().count();
        if length > MAX_TOOL_LENGTH {
            return Err(ToolNameError::TooLong { length });
        }
        if let Some(character) = text
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-'))
        {
            return Err(ToolNameError::Character { character });
        }
        if first == '-' {
            return Err(ToolNameError::Hyphen { first: true });
        }
        if text.ends_with('-') {
            return Err(ToolNameError::Hyphen { first: false });
        }
        if text.chars().any(|c| c.is_ascii_uppercase()) {
            return Err(ToolNameError::UpperCase {
                lower: text.to_ascii_lowercase(),
            });
        }
        Ok(Self(text.to_owned()))
    }

    /// The tool whose namespace is `namespace`, `tool-<tool>`.
    pub fn from_namespace(namespace: &str) -> Result<Self, NamespaceError> {
        let Some(tool) = namespace.strip_prefix(NAMESPACE_PREFIX) else {
            return Err(NamespaceError::NotATool {
                namespace: namespace.to_owned(),
            });
        };
        Self::new(tool).map_err(|problem| NamespaceError::InvalidTool {
            namespace: namespace.to_owned(),
            problem,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The tool's namespace, `tool-<tool>`.
    pub fn namespace(&self) -> String {
        format!("{NAMESPACE_PREFIX}{}", self.0)
    }
}

impl FromStr for ToolName {
    type Err = ToolNameError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::new(text)
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl AsRef<str> for ToolName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_lower_case_labels_and_names_their_namespace() {
        for name in [
            "mytool",
            "a",
            "7",
            "my-tool-2",
            "0a-b",
            "tool-x",
            &"a".repeat(MAX_TOOL_LENGTH),
        ] {
            let tool = ToolName::new(name).unwrap_or_else(|error| panic!("{name:?}: {error}"));
            assert_eq!(tool.as_str(), name);
            assert_eq!(tool.namespace(), format!("tool-{name}"));
            assert!(tool.namespace().len() <= MAX_NAMESPACE_LENGTH);
        }
    }

    #[test]
    fn refuses_what_would_break_out_of_a_request_path() {
        for (name, character) in [
            ("a/b", '/'),
            ("x/../y", '/'),
            ("../x", '.'),
            ("..", '.'),
            ("a.b", '.'),
            ("a b", ' '),
            ("a?b", '?'),
            ("a%2fb", '%'),
            ("a_b", '_'),
            ("tööl", 'ö'),
            ("a\nb", '\n'),
        ] {
            assert_eq!(
                ToolName::new(name),
                Err(ToolNameError::Character { character }),
                "{name:?}"
            );
        }
    }

    #[test]
    fn says_what_is_wrong() {
        assert_eq!(ToolName::new(""), Err(ToolNameError::Empty));
        assert_eq!(
            ToolName::new(&"a".repeat(MAX_TOOL_LENGTH + 1)),
            Err(ToolNameError::TooLong { length: 59 })
        );
        assert_eq!(
            ToolName::new(&"a".repeat(64)),
            Err(ToolNameError::TooLong { length: 64 })
        );
        assert_eq!(
            ToolName::new("MyTool"),
            Err(ToolNameError::UpperCase {
                lower: "mytool".to_owned()
            })
        );
        assert_eq!(
            ToolName::new("My/Tool"),
            Err(ToolNameError::Character { character: '/' })
        );
        assert_eq!(
            ToolName::new("A_b"),
            Err(ToolNameError::Character { character: '_' })
        );
        assert_eq!(
            ToolName::new("-My"),
            Err(ToolNameError::Hyphen { first: true })
        );
        assert_eq!(
            ToolName::new("-a"),
            Err(ToolNameError::Hyphen { first: true })
        );
        assert_eq!(
            ToolName::new("a-"),
            Err(ToolNameError::Hyphen { first: false })
        );
        assert_eq!(
            ToolName::new("-"),
            Err(ToolNameError::Hyphen { first: true })
        );
    }

    #[test]
    fn messages_say_what_to_do() {
        let message = |name: &str| ToolName::new(name).map(|_| ()).unwrap_err().to_string();
        assert_eq!(
            message("x/../y"),
            "the tool name contains `/`; a tool name has only lower-case letters, digits and `-`, e.g. `mytool`"
        );
        assert_eq!(
            message("a\tb"),
            "the tool name contains `\\t`; a tool name has only lower-case letters, digits and `-`, e.g. `mytool`"
        );
        assert_eq!(
            message("MyTool"),
            "the tool name has upper-case letters; tool names are lower-case, e.g. `mytool`"
        );
        assert_eq!(
            message("a-"),
            "the tool name ends with `-`; it must start and end with a letter or a digit"
        );
        assert_eq!(
            message(&"a".repeat(64)),
            "the tool name is 64 characters long; at most 58 are allowed, so that its namespace `tool-<tool>` is a \
             valid Kubernetes name"
        );
    }

    #[test]
    fn takes_the_tool_from_its_namespace() {
        let tool = ToolName::from_namespace("tool-mytool").map(|tool| tool.as_str().to_owned());
        assert_eq!(tool, Ok("mytool".to_owned()));
        assert_eq!(
            ToolName::from_namespace(&format!("tool-{}", "a".repeat(MAX_TOOL_LENGTH)))
                .map(|tool| tool.namespace().len()),
            Ok(MAX_NAMESPACE_LENGTH)
        );
    }

    #[test]
    fn refuses_namespaces_of_no_tool() {
        for namespace in [
            "default",
            "kube-system",
            "tools-x",
            "Tool-x",
            "",
            "tf-public",
        ] {
            assert_eq!(
                ToolName::from_namespace(namespace),
                Err(NamespaceError::NotATool {
                    namespace: namespace.to_owned()
                }),
                "{namespace:?}"
            );
        }
        let invalid = |namespace: &str, problem| {
            Err(NamespaceError::InvalidTool {
                namespace: namespace.to_owned(),
                problem,
            })
        };
        assert_eq!(
            ToolName::from_namespace("tool-"),
            invalid("tool-", ToolNameError::Empty)
        );
        assert_eq!(
            ToolName::from_namespace("tool-x/../y"),
            invalid("tool-x/../y", ToolNameError::Character { character: '/' })
        );
        let long = format!("tool-{}", "a".repeat(MAX_TOOL_LENGTH + 1));
        assert_eq!(
            ToolName::from_namespace(&long),
            invalid(&long, ToolNameError::TooLong { length: 59 })
        );
    }

    #[test]
    fn namespace_messages_name_the_namespace_and_the_fix() {
        let message = |namespace: &str| {
            ToolName::from_namespace(namespace)
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            message("default"),
            "`default` is not a tool's namespace: a tool's namespace is `tool-<tool>`, e.g. `tool-mytool`; name the \
             tool with `--tool <tool>` or its namespace with `--namespace tool-<tool>`"
        );
        assert_eq!(
            message("tool-"),
            "`tool-` is not a tool's namespace: the tool name is empty; pass the tool's name, e.g. `--tool mytool`"
        );
    }
}
