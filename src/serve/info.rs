//! The routes about the tool's surroundings: the images it may use, its quota, and the server's health.

use axum::Json;
use axum::extract::State;

use super::AppState;
use super::auth::ToolScope;
use super::error::ApiError;
use super::wire::{
    Health, HealthStatus, Image, ImageList, Messages, Quota, QuotaCategory, QuotaItem, QuotaReply,
};
use crate::cluster::{self, context::image_table};
use crate::render::context::DEFAULT_SET_NAME;
use crate::status::quota;

/// `GET /images`: the stable pre-built images, by short name, each with its full reference.
pub async fn images(
    State(state): State<AppState>,
    scope: ToolScope,
) -> Result<Json<ImageList>, ApiError> {
    let snapshot = read(&state, &scope).await?;
    let table = image_table(&snapshot);
    let mut images: Vec<Image> = table
        .stable_names()
        .filter_map(|short| {
            table.find(short).map(|(_, image)| Image {
                shortname: short.to_owned(),
                image: format!("{}:latest", image.image),
            })
        })
        .collect();
    images.sort_by(|a, b| a.shortname.cmp(&b.shortname));
    Ok(Json(ImageList {
        images,
        messages: Messages::default(),
    }))
}

/// `GET /quotas`: upstream's three categories ([`quota::categories`]).
pub async fn quotas(
    State(state): State<AppState>,
    scope: ToolScope,
) -> Result<Json<QuotaReply>, ApiError> {
    let snapshot = read(&state, &scope).await?;
    let categories = quota::categories(&snapshot.quotas, &snapshot.limit_ranges)
        .into_iter()
        .map(|category| QuotaCategory {
            name: category.name.to_owned(),
            items: category
                .items
                .into_iter()
                .map(|item| QuotaItem {
                    name: item.name.to_owned(),
                    limit: item.limit,
                    used: item.used,
                })
                .collect(),
        })
        .collect();
    Ok(Json(QuotaReply {
        quota: Quota { categories },
        messages: Messages::default(),
    }))
}

/// `GET /v1/healthz`: the server answers (it keeps no state of its own to be unhealthy about).
pub async fn health() -> Json<Health> {
    Json(Health {
        health: HealthStatus {
            status: "OK".to_owned(),
            message: "OK".to_owned(),
        },
        messages: Messages::default(),
    })
}

async fn read(state: &AppState, scope: &ToolScope) -> Result<cluster::Snapshot, ApiError> {
    Box::pin(cluster::read(
        &state.connection.client,
        &scope.tool.namespace(),
        DEFAULT_SET_NAME,
    ))
    .await
    .map_err(|error| ApiError::internal(&error))
}
