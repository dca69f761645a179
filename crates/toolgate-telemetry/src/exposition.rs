//! The two text formats a scraper may ask for: OpenMetrics (what `prometheus-client`
//! writes, and what Prometheus asks for first) and the classic Prometheus text format
//! 0.0.4 (what everything else reads): the same samples, with a counter's `# HELP` and
//! `# TYPE` named by its `_total` sample, and no `# UNIT` or `# EOF` lines.

/// The OpenMetrics content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The classic Prometheus text content type.
pub const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether an `Accept` header asks for OpenMetrics.
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| a.contains("application/openmetrics-text"))
}

/// OpenMetrics text as Prometheus text 0.0.4.
pub fn classic(openmetrics: &str) -> String {
    let mut counters = std::collections::HashSet::new();
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ")
            && let Some((name, "counter")) = rest.split_once(' ')
        {
            counters.insert(name.to_string());
        }
    }
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        match renamed {
            Some(l) => out.push_str(&l),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_named_by_their_total_and_the_end_marker_goes() {
        let om = "# HELP a Things.\n# TYPE a counter\na_total{x=\"1\"} 2\n# HELP g Now.\n# TYPE g gauge\ng 1\n# EOF\n";
        assert_eq!(
            classic(om),
            "# HELP a_total Things.\n# TYPE a_total counter\na_total{x=\"1\"} 2\n# HELP g Now.\n# TYPE g gauge\ng 1\n"
        );
        assert!(wants_openmetrics(Some(
            "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
        )));
        assert!(!wants_openmetrics(Some("text/plain")));
        assert!(!wants_openmetrics(None));
    }
}
