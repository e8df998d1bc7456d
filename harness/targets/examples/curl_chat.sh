#!/usr/bin/env bash
# A chat.completions client with no SDK: curl + jq.   harness-apis: chat
#
# A `command:` target (harness/targets/command.py): the prompt on stdin, the reply on
# stdout, a non-zero exit with a one-line reason on stderr's last line. Uses curl's
# defaults (no timeout of any kind), so a silent socket hangs it; a stream must end
# with `data: [DONE]` or the call fails instead of returning a prefix of the reply.
set -euo pipefail
if [ "${HARNESS_STREAM:-1}" = "1" ]; then stream=true; else stream=false; fi
# The prompt and the body go through stdin and files, never argv: a 150 KB prompt is
# over the kernel's limit for one argument (128 KiB).
body="$(jq -cn --arg model "${HARNESS_MODEL:-test-model}" --rawfile prompt /dev/stdin \
  --argjson stream "$stream" '{model: $model, stream: $stream,
    messages: [{role: "user", content: $prompt}]}
  + (if env.HARNESS_MAX_TOKENS then {max_tokens: (env.HARNESS_MAX_TOKENS | tonumber)} else {} end)')"
post() {
  curl -sS -N --fail-with-body -X POST "$OPENAI_BASE_URL/chat/completions" \
    -H "Authorization: Bearer $OPENAI_API_KEY" -H "Content-Type: application/json" \
    --data-binary @- <<<"$body"
}
if [ "$stream" = false ]; then
  reply="$(post)"
  printf '%s' "$reply" | jq -j '.choices[0].message.content // error("no message content")'
  exit 0
fi
events="$(post)"
if ! grep -q '^data: \[DONE\]' <<<"$events"; then
  echo "stream ended without data: [DONE]" >&2
  exit 1
fi
printf '%s\n' "$events" | jq -Rrj 'sub("\r$"; "") | select(startswith("data: ")) | .[6:]
  | select(. != "[DONE]") | fromjson | (.choices[]?.delta.content // empty)'
