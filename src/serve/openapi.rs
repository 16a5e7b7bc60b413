//! `GET /openapi.json`: placeholder, replaced below.
use axum::Json;

pub async fn document() -> Json<serde_json::Value> {
    Json(serde_json::json!({}))
}
