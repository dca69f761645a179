//! A tree of sub-agent runs as text, for `toolgate show` and `toolgate stats`: one
//! line per run (agent, run id, status, its calls, success rate, tokens, time), the
//! children indented under their parent, and the totals that include them.

use toolgate::protocol::{RunTree, TreeTally};

/// `3 calls, 66.7% ok, 120 tokens, 431 ms`.
pub fn tally(t: &TreeTally) -> String {
    format!(
        "{} call{}, {:.1}% ok, {} tokens, {} ms",
        t.calls,
        if t.calls == 1 { "" } else { "s" },
        t.success_rate,
        t.usage.total_tokens,
        t.run_ms
    )
}

/// The tree under (and including) `tree`, a line per run.
pub fn render(tree: &RunTree) -> String {
    let mut out = String::new();
    line(tree, "", "", &mut out);
    out
}

fn line(t: &RunTree, lead: &str, child_lead: &str, out: &mut String) {
    out.push_str(&format!(
        "{lead}{}  {}  {}  {}\n",
        t.agent,
        t.run_id,
        t.status.as_str(),
        tally(&t.summary)
    ));
    for (i, c) in t.children.iter().enumerate() {
        let last = i + 1 == t.children.len();
        let (l, cl) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        line(
            c,
            &format!("{child_lead}{l}"),
            &format!("{child_lead}{cl}"),
            out,
        );
    }
}
