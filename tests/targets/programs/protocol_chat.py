#!/usr/bin/env python3
"""A ``command:`` program speaking the harness's line protocol (tests/targets/test_command_protocol.py).

One streamed chat call with the standard library only: its read deadline is the
scenario's stream-idle deadline the harness hands it, scaled (HARNESS_STREAM_IDLE_S),
and it reports its error kind, the deadline that fired and its attempts on stdout
(``HARNESS ...`` lines). ``--fail-as KIND``: report that error kind without calling; ``--one-body``: one
non-streamed call, then exit.
"""

import json
import os
import sys
import urllib.request


def main(argv):
    if argv[:1] == ["--fail-as"]:
        print(f"HARNESS error {argv[1]}: told to by its arguments")
        return 0  # the printed kind decides, not the exit status
    if argv[:1] == ["--one-body"]:
        return one_body()
    idle = float(os.environ["HARNESS_STREAM_IDLE_S"])
    scale = os.environ["HARNESS_TIME_SCALE"]
    body = json.dumps(
        {
            "model": os.environ["HARNESS_MODEL"],
            "stream": True,
            "messages": [{"role": "user", "content": sys.stdin.read()}],
        }
    ).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=body,
        headers={
            "content-type": "application/json",
            "authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
        },
    )
    print("HARNESS attempts 1")
    text, done = [], False
    try:
        with urllib.request.urlopen(request, timeout=idle) as response:
            for raw in response:
                line = raw.decode().strip()
                if line == "data: [DONE]":
                    done = True
                    break
                if line.startswith("data: "):
                    for choice in json.loads(line[6:]).get("choices") or []:
                        text.append((choice.get("delta") or {}).get("content") or "")
    except TimeoutError:
        print("HARNESS deadline stream_idle")
        print(f"HARNESS error StreamIdleTimeout: no event for {idle:g} s (time scale {scale})")
        return 1
    if not done:
        print("HARNESS error TruncatedStream: the stream ended without data: [DONE]")
        return 1
    sys.stdout.write("".join(text))
    return 0


def one_body():
    """One non-streamed call, then exit at once: a program that lives milliseconds."""
    body = json.dumps(
        {
            "model": os.environ["HARNESS_MODEL"],
            "messages": [{"role": "user", "content": sys.stdin.read()}],
        }
    ).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=body,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        reply = json.loads(response.read())
    sys.stdout.write(reply["choices"][0]["message"]["content"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# harness-apis: chat   (a declaration may sit anywhere in the file)
