//! An error and its causes as text: one line per cause for the terminal, or all on one line for a log field.

/// The sources of `error`, outermost first; an API error in the API server's own words, not kube-rs' dump of the
/// Status object (and nothing below it).
pub fn causes(error: &dyn std::error::Error) -> Vec<String> {
    let mut causes = Vec::new();
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(kube::Error::Api(status)) = cause.downcast_ref::<kube::Error>() {
            causes.push(format!(
                "the API server answered {} {}: {}",
                status.code, status.reason, status.message
            ));
            break;
        }
        causes.push(cause.to_string());
        source = cause.source();
    }
    causes
}

/// An error and its causes on one line, for a log field.
pub fn one_line(error: &dyn std::error::Error) -> String {
    std::iter::once(error.to_string())
        .chain(causes(error))
        .collect::<Vec<_>>()
        .join(": ")
}
