#!/usr/bin/env bash
# The README's main job: run the example agent end to end, the way a user would.
#
#   bash examples/demo.sh
#
# The agent (examples/agents/assistant.yaml) has three tools: calculator runs at once
# (auto), write_file waits for a person (confirm), ask_user is answered by the client
# (a definition-only tool from tools/). Without OPENAI_API_KEY the model is scripted
# (examples/agents/assistant.replies.yaml); with it, openai:${OPENAI_MODEL:-gpt-4o-mini}.
# The run pauses; the script then does what a person in another shell would do:
# approve the write, answer the question, and the last answer continues the run.
# The conversation's stats come last. Everything goes to a fresh temporary folder.
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
# A PostgreSQL database named by TOOLGATE_DB is used as it is; otherwise a new SQLite file.
case "${TOOLGATE_DB:-}" in
  postgres://* | postgresql://*) ;;
  *) export TOOLGATE_DB="$work/toolgate.db" ;;
esac

if [ -n "${OPENAI_API_KEY:-}" ]; then
  model="openai:${OPENAI_MODEL:-gpt-4o-mini}"
else
  model="scripted:examples/agents/assistant.replies.yaml"
fi

echo "\$ toolgate run --agent examples/agents/assistant.yaml --model $model ..."
toolgate run --agent examples/agents/assistant.yaml --model "$model" --workspace "$work" \
  "Work out 2+3*4, save the result to result.txt, and ask me my favourite colour." </dev/null
code=$?
run=$(toolgate runs --limit 1 --json | grep -o '"id":"run_[^"]*"' | head -1 | cut -d'"' -f4)

while [ "$code" -eq 3 ]; do
  # Each waiting item: approve a CONFIRM call, answer a client tool.
  for item in $(toolgate show "$run" --json | grep -o '"call_id":"[^"]*","kind":"[^"]*"'); do
    call=$(echo "$item" | cut -d'"' -f4)
    kind=$(echo "$item" | cut -d'"' -f8)
    echo
    if [ "$kind" = approval ]; then
      echo "\$ toolgate approve $run --call $call"
      toolgate approve "$run" --call "$call" </dev/null
    else
      echo "\$ toolgate submit $run --call $call --output blue"
      toolgate submit "$run" --call "$call" --output blue </dev/null
    fi
    code=$?
  done
done
[ "$code" -eq 0 ] || { echo "the run ended with exit code $code" >&2; exit "$code"; }

conversation=$(toolgate show "$run" --json | grep -o '"conversation_id":"[^"]*"' | cut -d'"' -f4)
echo
echo "\$ toolgate stats --conversation $conversation"
toolgate stats --conversation "$conversation"
echo
echo "result.txt: $(cat "$work/result.txt" 2>/dev/null || echo '(not written)')"
