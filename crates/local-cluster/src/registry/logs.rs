//! Container logs: what the kubelet's containers printed, per namespace, pod and container, for the current
//! and the previous container instance (reference §3.6 "Logs"), and how `pods/{name}/log` renders them
//! (`tailLines`, `sinceSeconds`/`sinceTime`, `timestamps`, `limitBytes`).
//!
//! The store lives in the [`crate::registry::store::Store`] (under its lock), is written by the kubelet when a
//! container starts, and is dropped when the pod object goes away.

use std::collections::HashMap;

/// One line a container printed (with its newline, if it had one) and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) at: jiff::Timestamp,
    pub(crate) text: String,
}

/// The instances of one container: the latest last; at most the latest two are kept, as a node keeps the
/// current container and the one before it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Instances {
    /// How many instances were ever started (identifies the latest, for `follow`).
    pub(crate) started: u64,
    pub(crate) runs: Vec<Vec<Line>>,
}

impl Instances {
    /// The latest instance (`back` 0) or the one before it (`back` 1).
    pub(crate) fn get(&self, back: usize) -> Option<&[Line]> {
        self.runs
            .len()
            .checked_sub(1 + back)
            .map(|i| self.runs[i].as_slice())
    }
}

/// Every pod's container logs, keyed by (namespace, pod name).
#[derive(Debug, Clone, Default)]
pub(crate) struct Logs {
    pods: HashMap<(String, String), HashMap<String, Instances>>,
}

fn split_lines(text: &str, at: jiff::Timestamp) -> Vec<Line> {
    text.split_inclusive('\n')
        .map(|l| Line {
            at,
            text: l.to_owned(),
        })
        .collect()
}

impl Logs {
    /// A new instance of `container` started and printed `text` at the cluster time `at`; the instance before it
    /// becomes the previous.
    pub(crate) fn start(
        &mut self,
        (namespace, pod, container): (&str, &str, &str),
        text: &str,
        at: jiff::Timestamp,
    ) {
        let instances = self
            .pods
            .entry((namespace.to_owned(), pod.to_owned()))
            .or_default()
            .entry(container.to_owned())
            .or_default();
        instances.started += 1;
        instances.runs.push(split_lines(text, at));
        if instances.runs.len() > 2 {
            instances.runs.remove(0);
        }
    }

    /// The latest instance of `container` printed `text` at the cluster time `at` (a process kubelet's output as
    /// it arrives).
    pub(crate) fn append(
        &mut self,
        (namespace, pod, container): (&str, &str, &str),
        text: &str,
        at: jiff::Timestamp,
    ) {
        let latest = self
            .pods
            .get_mut(&(namespace.to_owned(), pod.to_owned()))
            .and_then(|c| c.get_mut(container))
            .and_then(|i| i.runs.last_mut());
        if let Some(lines) = latest {
            lines.extend(split_lines(text, at));
        }
    }

    /// The instances of one container, if it ever started.
    pub(crate) fn container(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Option<&Instances> {
        self.pods
            .get(&(namespace.to_owned(), pod.to_owned()))
            .and_then(|c| c.get(container))
    }

    /// The pod is gone: so are its logs.
    pub(crate) fn remove_pod(&mut self, namespace: &str, pod: &str) {
        self.pods.remove(&(namespace.to_owned(), pod.to_owned()));
    }
}

/// The rendering options of a log request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Render {
    pub(crate) tail_lines: Option<usize>,
    pub(crate) since: Option<jiff::Timestamp>,
    pub(crate) timestamps: bool,
}

/// A timestamp as the kubelet prefixes log lines with it: RFC 3339 with nine fractional digits.
pub(crate) fn timestamp(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%S%.9fZ").to_string()
}

/// One line as served.
pub(crate) fn render_line(line: &Line, timestamps: bool) -> String {
    if timestamps {
        format!("{} {}", timestamp(line.at), line.text)
    } else {
        line.text.clone()
    }
}

/// The lines of an instance as served: filtered by time, then the tail, then optionally prefixed.
pub(crate) fn render(lines: &[Line], options: &Render) -> String {
    let recent: Vec<&Line> = lines
        .iter()
        .filter(|l| options.since.is_none_or(|since| l.at >= since))
        .collect();
    let skip = options
        .tail_lines
        .map_or(0, |tail| recent.len().saturating_sub(tail));
    recent[skip..]
        .iter()
        .map(|l| render_line(l, options.timestamps))
        .collect()
}

/// Cuts `text` to at most `limit` bytes (`limitBytes`; may split a line, as the kubelet does).
pub(crate) fn limit(text: &str, limit: Option<usize>) -> &[u8] {
    let bytes = text.as_bytes();
    match limit {
        Some(limit) if limit < bytes.len() => &bytes[..limit],
        _ => bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_current_and_previous_instance() {
        let mut logs = Logs::default();
        logs.start(("d", "p", "c"), "one\n", jiff::Timestamp::now());
        logs.start(("d", "p", "c"), "two\n", jiff::Timestamp::now());
        logs.start(("d", "p", "c"), "three\nfour", jiff::Timestamp::now());
        let c = logs.container("d", "p", "c").expect("started");
        assert_eq!(c.started, 3);
        let text = |lines: &[Line]| render(lines, &Render::default());
        assert_eq!(text(c.get(0).expect("current")), "three\nfour");
        assert_eq!(text(c.get(1).expect("previous")), "two\n");
        assert!(c.get(2).is_none());
        logs.remove_pod("d", "p");
        assert!(logs.container("d", "p", "c").is_none());
    }

    #[test]
    fn renders_tail_since_timestamps_and_limit() {
        let at: jiff::Timestamp = "2026-01-02T03:04:05.5Z".parse().expect("time");
        let later: jiff::Timestamp = "2026-01-02T03:04:09Z".parse().expect("time");
        let mut lines = split_lines("a\nb\n", at);
        lines.extend(split_lines("c\n", later));
        let tail = Render {
            tail_lines: Some(2),
            ..Render::default()
        };
        assert_eq!(render(&lines, &tail), "b\nc\n");
        let since = Render {
            since: Some(later),
            timestamps: true,
            ..Render::default()
        };
        assert_eq!(render(&lines, &since), "2026-01-02T03:04:09.000000000Z c\n");
        let none = Render {
            tail_lines: Some(0),
            ..Render::default()
        };
        assert_eq!(render(&lines, &none), "");
        assert_eq!(limit("abcdef", Some(4)), b"abcd");
        assert_eq!(limit("ab", Some(4)), b"ab");
        assert_eq!(limit("ab", None), b"ab");
    }
}
