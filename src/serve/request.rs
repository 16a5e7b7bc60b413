//! Reading request bodies as upstream's `FastAPI` app reads them: JSON only, at most [`BODY_LIMIT`] bytes, and a
//! body that matches no request model answered with 422 and `FastAPI`'s `detail` list.

use axum::body::to_bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// The largest request body: a job definition is a few hundred bytes.
pub const BODY_LIMIT: usize = 64 * 1024;

/// A JSON body of type `T`.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, ApiError> {
        let json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| {
                let essence = value.split(';').next().unwrap_or_default().trim();
                essence.eq_ignore_ascii_case("application/json")
            });
        let bytes = to_bytes(request.into_body(), BODY_LIMIT)
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("The request body is over {} KiB", BODY_LIMIT / 1024),
                )
            })?;
        if !json {
            return Err(ApiError::unprocessable(
                "model_attributes_type",
                "Input should be a valid dictionary or object to extract fields from: send JSON \
                 (Content-Type: application/json)",
            ));
        }
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|error| match error.classify() {
                serde_json::error::Category::Data => {
                    ApiError::unprocessable("value_error", error.to_string())
                }
                _ => ApiError::unprocessable("json_invalid", format!("JSON decode error: {error}")),
            })
    }
}
