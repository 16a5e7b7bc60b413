//! Errors as the jobs API answers them: a status code and `{"error": [...]}` (reference/jobs-api.md §1.4),
//! the same lines under `messages.error` (which the upstream CLI prints when it is there), and our own detail
//! (located problems, hints) under `messages.detail`, which the upstream CLI does not print, so that it prints
//! exactly upstream's lines.
//! Application errors are 4xx or 500, never 502/503, which the upstream CLI reads as "the service is down".
//! A body that matches no request model is 422 with `{"detail": [...]}` (`FastAPI`'s), as upstream answers it.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::wire::{ErrorMessages, ErrorReply, Messages};
use crate::cluster::lock::LockError;
use crate::output::errors;
use crate::pipeline;

/// An error reply.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// Upstream's sentences: what the CLI prints.
    pub error: Vec<String>,
    /// Our detail: located problems and hints, for clients that show them.
    pub detail: Vec<String>,
    /// `FastAPI`'s request validation shape instead of ours (422).
    pub fastapi_detail: Option<serde_json::Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            error: vec![message.into()],
            detail: Vec::new(),
            fastapi_detail: None,
        }
    }

    /// Upstream's 404 for a job the tool does not have.
    pub fn no_such_job(name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            format!("Job '{name}' does not exist"),
        )
    }

    /// A body that is not one of the request models: 422, `FastAPI`'s shape (`loc`, `msg`, `type`).
    pub fn unprocessable(kind: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            error: vec![message.clone()],
            detail: Vec::new(),
            fastapi_detail: Some(json!([{"type": kind, "loc": ["body"], "msg": message}])),
        }
    }

    /// A failure of ours or of the cluster: 500 with the causes, or 409 when another writer holds the lock.
    pub fn internal(error: &dyn std::error::Error) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, errors::one_line(error))
    }
}

impl From<pipeline::Error> for ApiError {
    fn from(error: pipeline::Error) -> Self {
        let busy = |holder: &str| {
            Self::new(
                StatusCode::CONFLICT,
                format!(
                    "Another writer ({holder}) is changing this tool's jobs; try again when it is done"
                ),
            )
        };
        match &error {
            pipeline::Error::Lock(LockError::Held { holder, .. }) => busy(holder),
            pipeline::Error::LockTakenOver => busy("one that took the lock over"),
            _ => Self::internal(&error),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Some(detail) = self.fastapi_detail {
            return (self.status, Json(json!({ "detail": detail }))).into_response();
        }
        let body = ErrorReply {
            messages: ErrorMessages {
                messages: Messages {
                    error: self.error.clone(),
                    ..Messages::default()
                },
                detail: self.detail,
            },
            error: self.error,
        };
        (self.status, Json(body)).into_response()
    }
}
