//! Who may act for which tool: one mode per listener (reference/jobs-api.md §1.2, §4.1).
//!
//! - client certificates (mTLS): the tool is the certificate's CN, and `O=toolforge` is required — what
//!   `become <tool>` gives every Toolforge tool, and what upstream's gateway checks;
//! - a trusted `X-Toolforge-Tool` header (upstream's own contract behind its gateway), only on a loopback
//!   listener, where only a proxy on this machine can send it;
//! - bearer tokens from a token file (development and CI).
//!
//! Whatever the mode, a request acts for the tool of its path only when the caller is that tool (403
//! otherwise), in the namespace `tool-<tool>` and nowhere else. [`ToolScope`] is that check as an extractor, and
//! it holds one of the tool's request slots, so that one tool cannot take all of the server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::StatusCode;
use axum::http::request::Parts;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::AppState;
use super::error::ApiError;
use super::tls::ClientIdentity;
use crate::model::ToolName;

/// The header upstream's gateway sets to the authenticated tool.
pub const TOOL_HEADER: &str = "x-toolforge-tool";

/// How callers prove which tool they are.
#[derive(Debug, Clone)]
pub enum Auth {
    /// A verified client certificate: the tool is its CN; `O=toolforge` is required.
    ClientCertificate,
    /// The `X-Toolforge-Tool` header of a trusted proxy.
    TrustedHeader,
    /// `Authorization: Bearer <token>`, each token standing for one tool.
    Tokens(BTreeMap<String, ToolName>),
}

/// Why a token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("cannot read the token file `{}`", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the token file `{}` can be read by other users (mode {mode:o}): make it private with `chmod 600`",
        .path.display()
    )]
    NotPrivate { path: PathBuf, mode: u32 },
    #[error("{}:{line}: {problem}; each line is `<token> <tool>`", .path.display())]
    Line {
        path: PathBuf,
        line: usize,
        problem: String,
    },
}

impl Auth {
    /// Reads a token file: one `<token> <tool>` per line; blank lines and `#` comments are ignored. It must be
    /// private to its owner, as any credential file.
    pub fn from_token_file(path: &Path) -> Result<Self, TokenFileError> {
        let read_error = |source| TokenFileError::Read {
            path: path.to_owned(),
            source,
        };
        let metadata = std::fs::metadata(path).map_err(read_error)?;
        let mode = std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o777;
        if mode & 0o077 != 0 {
            return Err(TokenFileError::NotPrivate {
                path: path.to_owned(),
                mode,
            });
        }
        let text = std::fs::read_to_string(path).map_err(read_error)?;
        let mut tokens = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            let line_error = |problem: String| TokenFileError::Line {
                path: path.to_owned(),
                line: index + 1,
                problem,
            };
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(token), Some(tool), None) = (words.next(), words.next(), words.next()) else {
                return Err(line_error("not two words".to_owned()));
            };
            let tool = ToolName::new(tool).map_err(|problem| line_error(problem.to_string()))?;
            tokens.insert(token.to_owned(), tool);
        }
        Ok(Auth::Tokens(tokens))
    }

    /// The tool the request's credentials stand for.
    fn caller(&self, parts: &Parts) -> Result<ToolName, ApiError> {
        let unauthenticated = |message: &str| ApiError::new(StatusCode::UNAUTHORIZED, message);
        match self {
            Auth::ClientCertificate => {
                let identity = parts
                    .extensions
                    .get::<ClientIdentity>()
                    .ok_or_else(|| unauthenticated("A client certificate is required"))?;
                if !identity.organizations.iter().any(|o| o == "toolforge") {
                    return Err(ApiError::new(
                        StatusCode::FORBIDDEN,
                        "The client certificate is not a Toolforge tool's (no O=toolforge)",
                    ));
                }
                let name = identity.common_name.as_deref().unwrap_or_default();
                ToolName::new(name).map_err(|_| {
                    ApiError::new(
                        StatusCode::FORBIDDEN,
                        format!("The client certificate's CN `{name}` is not a tool name"),
                    )
                })
            }
            Auth::TrustedHeader => {
                let value = parts
                    .headers
                    .get(TOOL_HEADER)
                    .and_then(|value| value.to_str().ok())
                    .ok_or_else(|| {
                        ApiError::new(StatusCode::FORBIDDEN, "missing 'x-toolforge-tool' header")
                    })?;
                ToolName::new(value).map_err(|_| {
                    ApiError::new(
                        StatusCode::FORBIDDEN,
                        "the 'x-toolforge-tool' header is not a tool name",
                    )
                })
            }
            Auth::Tokens(tokens) => {
                let token = parts
                    .headers
                    .get(axum::http::header::AUTHORIZATION)
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.strip_prefix("Bearer "))
                    .ok_or_else(|| {
                        unauthenticated("Authentication required: send a bearer token")
                    })?;
                tokens
                    .get(token.trim())
                    .cloned()
                    .ok_or_else(|| unauthenticated("The token is not valid"))
            }
        }
    }
}

/// How many requests of one tool the server works on at once; more get 429.
#[derive(Debug)]
pub struct ToolSlots {
    per_tool: usize,
    slots: Mutex<BTreeMap<String, Arc<Semaphore>>>,
}

impl ToolSlots {
    pub fn new(per_tool: usize) -> Self {
        Self {
            per_tool,
            slots: Mutex::new(BTreeMap::new()),
        }
    }

    fn take(&self, tool: &ToolName) -> Result<OwnedSemaphorePermit, ApiError> {
        let semaphore = {
            // A poisoned lock means a panic while inserting: the map is still whole.
            let mut slots = self
                .slots
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(
                slots
                    .entry(tool.as_str().to_owned())
                    .or_insert_with(|| Arc::new(Semaphore::new(self.per_tool))),
            )
        };
        semaphore.try_acquire_owned().map_err(|_| {
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "Too many requests for tool '{tool}' at once ({} at most); try again when they are done",
                    self.per_tool
                ),
            )
        })
    }
}

/// The tool a request acts for: the path's `{tool}`, once the caller is proven to be it.
pub struct ToolScope {
    pub tool: ToolName,
    _slot: OwnedSemaphorePermit,
}

impl FromRequestParts<AppState> for ToolScope {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = state.auth.caller(parts)?;
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::new(StatusCode::NOT_FOUND, "Not Found"))?;
        let path_tool = params
            .iter()
            .find_map(|(key, value)| (key == "tool").then_some(value))
            .unwrap_or_default();
        if path_tool != caller.as_str() {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!("Tool '{caller}' may not act for tool '{path_tool}'"),
            ));
        }
        let slot = state.slots.take(&caller)?;
        Ok(ToolScope {
            tool: caller,
            _slot: slot,
        })
    }
}
