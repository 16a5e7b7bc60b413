//! Suggestions attached to schedule errors: how to write what the user most likely meant.
//!
//! Upstream only says what is wrong; these texts go into [`ScheduleError::help`](super::ScheduleError::help) and
//! never change whether a schedule is accepted.

use toolforge_cron::Field;

use super::{MACROS, is_python_whitespace};

/// Suggests the intended macro for an invalid one.
pub(super) fn macro_help(text: &str) -> Option<String> {
    let trimmed = text.trim_matches(is_python_whitespace);
    if MACROS.contains(&trimmed) {
        return Some(format!("remove the whitespace around `{trimmed}`"));
    }
    let lower = trimmed.to_lowercase();
    if MACROS.contains(&lower.as_str()) {
        return Some(format!("macros are case-sensitive: write `{lower}`"));
    }
    let help = match lower.as_str() {
        "@annually" => "write `@yearly`".to_owned(),
        "@midnight" => "write `@daily`".to_owned(),
        "@reboot" => {
            "Kubernetes has no `@reboot`; a continuous job runs whenever it is not running"
                .to_owned()
        }
        every if every.starts_with("@every") => {
            "`@every` is not supported; use a step, like `*/10 * * * *` for every 10 minutes"
                .to_owned()
        }
        _ => {
            let closest = MACROS
                .iter()
                .map(|name| (strsim::levenshtein(name, &lower), name))
                .min()
                .filter(|(distance, _)| *distance <= 2)?;
            format!("did you mean `{}`?", closest.1)
        }
    };
    Some(help)
}

pub(super) fn bounds_help(field: Field) -> String {
    format!(
        "the {} goes from {} to {}",
        field.name(),
        field.min(),
        field.max()
    )
}

/// The number of a day-of-week value written as a name or a number, with `7` read as Sunday.
fn day_number(text: &str) -> Option<u32> {
    let day_of_week = Field::DayOfWeek;
    if text == "7" {
        return Some(0);
    }
    day_of_week.value_of_name(text).or_else(|| {
        text.parse()
            .ok()
            .filter(|value| *value <= day_of_week.max())
    })
}

/// Help for a day name used inside a range or step: the same item with numbers, when that is valid.
pub(super) fn day_name_help(item: &str) -> String {
    let suggestion = if let Some((start, end)) = item.split_once('-') {
        match (day_number(start), day_number(end)) {
            (Some(start), Some(0)) if start > 0 => Some(through_sunday(start)),
            (Some(start), Some(end)) if start <= end => Some(format!("{start}-{end}")),
            _ => None,
        }
    } else if let Some((start, step)) = item.split_once('/') {
        day_number(start).map(|start| format!("{start}/{step}"))
    } else {
        None
    };
    match suggestion {
        Some(suggestion) => {
            format!("day names are accepted only as single values; use `{suggestion}`")
        }
        None => {
            "day names are accepted only as single values; use numbers, Sunday = 0 to Saturday = 6"
                .to_owned()
        }
    }
}

/// Help for `A-B/S`: the same times as a list, or the step alone.
pub(super) fn range_step_help(
    field: Field,
    item: &str,
    start: &str,
    end: &str,
    step: &str,
) -> String {
    // Day names are not valid here either, but reading them lets the suggestion fix both mistakes at once.
    let bound = |text: &str| match field {
        Field::DayOfWeek => day_number(text),
        _ => text.parse().ok(),
    };
    let generic = "use a list like `1,6,11` or a step like `*/5`".to_owned();
    let (Some(start), Some(end), Ok(step)) = (bound(start), bound(end), step.parse::<u32>()) else {
        return generic;
    };
    if step == 0 || step > field.max() || start > end || start < field.min() || end > field.max() {
        return generic;
    }
    if step == 1 {
        return format!("write `{start}-{end}`");
    }
    let picked: Vec<u32> = (start..=end)
        .step_by(usize::try_from(step).unwrap_or(usize::MAX))
        .collect();
    let final_pick = picked.last().copied().unwrap_or(start);
    let list = picked
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if final_pick + step > field.max() {
        // Nothing past `end` would be picked anyway, so `start/step` (start to the field's maximum) is the same.
        format!("write `{start}/{step}`, which means the same, or the list `{list}`")
    } else {
        format!("write `{item}` as a list like `{list}` or use `*/{step}`")
    }
}

/// Days `start` (1 to 6) to Saturday, then Sunday: what `start-7` means, in numbers Kubernetes accepts.
pub(super) fn through_sunday(start: u32) -> String {
    format!("{},0", range_text(start, 6))
}

/// Help for a reversed range such as `22-2`, which usually means "wrap around the end of the field".
pub(super) fn wrap_around_help(field: Field, start: u32, end: u32) -> String {
    if start > field.max() {
        return bounds_help(field);
    }
    format!(
        "ranges go from low to high and do not wrap around; write `{},{}`",
        range_text(start, field.max()),
        range_text(field.min(), end)
    )
}

/// `start-end`, or just `start` when they are equal.
fn range_text(start: u32, end: u32) -> String {
    if start == end {
        start.to_string()
    } else {
        format!("{start}-{end}")
    }
}
