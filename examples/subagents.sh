#!/usr/bin/env bash
# Sub-agents end to end: a planner (examples/agents/team/planner.yaml) hands a task to
# a researcher and a coder at once; the coder hands the file writing to its own
# sub-agent, writer, whose write_file waits for a person (confirm). The researcher
# finishes; the writer's pause surfaces in the planner's run, two levels up. The
# script then does what a person in another shell would do: approve the write through
# the planner's run, which resumes the writer, then the coder, then the planner, in
# that one command. `toolgate show` and `toolgate stats` show the tree last.
#
#   bash examples/subagents.sh
#
# The models are scripted (examples/agents/team/*.replies.yaml); everything goes to a
# fresh temporary folder.
set -uo pipefail
cd "$(dirname "$0")/.."

# TOOLGATE_BIN names a toolgate already built (the tests do this); otherwise build it.
if [ -z "${TOOLGATE_BIN:-}" ]; then
  cargo build --quiet || exit 1
  TOOLGATE_BIN=./target/debug/toolgate
fi
toolgate() { "$TOOLGATE_BIN" "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT   # the temporary folder goes with the script
export TOOLGATE_DB="$work/toolgate.db"

echo "\$ toolgate run --agent examples/agents/team/planner.yaml --json ..."
toolgate run --agent examples/agents/team/planner.yaml --workspace "$work" --json \
  "Find 6*7 and write a program that prints it." </dev/null >"$work/run.jsonl"
code=$?
# One event per line, each tagged with its run: the sub-agents' runs show up too.
grep -o '"type":"[^"]*","run_id":"[^"]*"' "$work/run.jsonl" | sed 's/"type":"\([^"]*\)","run_id":"\([^"]*\)"/  \2  \1/'
[ "$code" -eq 3 ] || { echo "expected the run to pause (exit 3), got $code" >&2; exit 1; }
# The last line is the top run's object.
run=$(tail -1 "$work/run.jsonl" | grep -o '"id":"run_[^"]*"' | head -1 | cut -d'"' -f4)

echo
echo "\$ toolgate show $run"
toolgate show "$run"
call=$(toolgate show "$run" --json | grep -o '"call_id":"[^"]*"' | head -1 | cut -d'"' -f4)

echo
echo "\$ toolgate approve $run --call $call      # from any shell, any process"
toolgate approve "$run" --call "$call" </dev/null
code=$?
[ "$code" -eq 0 ] || { echo "the run ended with exit code $code" >&2; exit "$code"; }

echo
echo "\$ toolgate show $run"
toolgate show "$run"
conversation=$(toolgate show "$run" --json | grep -o '"conversation_id":"[^"]*"' | cut -d'"' -f4)
echo
echo "\$ toolgate stats --conversation $conversation"
toolgate stats --conversation "$conversation"
echo
echo "answer.py: $(cat "$work/answer.py" 2>/dev/null || echo '(not written)')"
