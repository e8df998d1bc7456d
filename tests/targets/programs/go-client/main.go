// A compiled `command:` target: one OpenAI chat.completions call with Go's standard
// library only, reporting by the harness's line protocol (docs/targets.md).
//
// Two transport variants, by flag:
//
//	-keepalive=on   TCP keepalive with -ka-idle, -ka-interval, -ka-count (kernel seconds,
//	                never time-scaled: a dead peer is noticed after idle + interval x count)
//	-keepalive=off  no keepalive at all: KeepAlive -1 (Go's net.Dialer default would
//	                otherwise turn keepalive on by itself)
//	-keepalive=default  what a net.Dialer does when told nothing: 15 s idle, 15 s x 9
//	                probes (a dead peer noticed after 150 s)
//
// Its deadlines are the ones the harness hands it, already scaled to real seconds:
// HARNESS_CONNECT_TIMEOUT_S (the dial), HARNESS_FIRST_BYTE_S (until the response
// headers), HARNESS_STREAM_IDLE_S (between two reads of the stream) and
// HARNESS_HARD_CEILING_S (the whole call); an absent one is off. It makes one request
// (no retries) and names its errors its own way: StreamIdleTimeout, FirstByteTimeout,
// CallTimeout, ConnectionTimedOut (the kernel gave up on the peer: keepalive),
// ConnectionReset, TruncatedStream (EOF before data: [DONE]), HTTPStatus, BadChunk,
// ConnectFailed, TransportError.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// apis is what the harness reads from the binary (it scans the file for the marker).
var apis = "harness-apis: chat"

var (
	errFirstByte  = errors.New("first_byte")
	errStreamIdle = errors.New("stream_idle")
	errCeiling    = errors.New("hard_ceiling")
)

type options struct {
	keepalive  string
	kaIdle     time.Duration
	kaInterval time.Duration
	kaCount    int
}

func main() {
	var o options
	flag.StringVar(&o.keepalive, "keepalive", "on", "TCP keepalive: on, off or default")
	flag.DurationVar(&o.kaIdle, "ka-idle", time.Second, "keepalive idle time before the first probe")
	flag.DurationVar(&o.kaInterval, "ka-interval", time.Second, "time between keepalive probes")
	flag.IntVar(&o.kaCount, "ka-count", 2, "unanswered probes before the kernel gives up")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go-client [flags] (a harness command: target; %s)\n", apis)
		flag.PrintDefaults()
	}
	flag.Parse()
	if o.keepalive != "on" && o.keepalive != "off" && o.keepalive != "default" {
		fmt.Fprintf(os.Stderr, "go-client: -keepalive=%q: allowed values: on, off, default\n", o.keepalive)
		os.Exit(2)
	}
	os.Exit(run(o))
}

// seconds reads a HARNESS_*_S deadline: 0 when absent (off).
func seconds(name string) time.Duration {
	v, err := strconv.ParseFloat(os.Getenv(name), 64)
	if err != nil || v <= 0 {
		return 0
	}
	return time.Duration(v * float64(time.Second))
}

func dialer(o options) *net.Dialer {
	d := &net.Dialer{Timeout: seconds("HARNESS_CONNECT_TIMEOUT_S")}
	switch o.keepalive {
	case "off":
		d.KeepAlive = -1
		return d
	case "default":
		return d
	}
	d.KeepAliveConfig = net.KeepAliveConfig{
		Enable: true, Idle: o.kaIdle, Interval: o.kaInterval, Count: o.kaCount,
	}
	return d
}

// watchdog cancels the call with a cause when its current deadline passes.
type watchdog struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel context.CancelCauseFunc
}

func (w *watchdog) arm(d time.Duration, cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	if d > 0 {
		w.timer = time.AfterFunc(d, func() { w.cancel(cause) })
	}
}

func say(format string, args ...any) { fmt.Printf("HARNESS "+format+"\n", args...) }

func run(o options) int {
	prompt, _ := io.ReadAll(os.Stdin)
	stream := os.Getenv("HARNESS_STREAM") != "0"
	payload := map[string]any{
		"model":    os.Getenv("HARNESS_MODEL"),
		"stream":   stream,
		"messages": []map[string]string{{"role": "user", "content": string(prompt)}},
	}
	if n, err := strconv.Atoi(os.Getenv("HARNESS_MAX_TOKENS")); err == nil {
		payload["max_tokens"] = n
	}
	body, _ := json.Marshal(payload)

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	if ceiling := seconds("HARNESS_HARD_CEILING_S"); ceiling > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, ceiling, errCeiling)
		defer stop()
	}
	w := &watchdog{cancel: cancel}
	transport := &http.Transport{Proxy: nil, DialContext: dialer(o).DialContext}
	client := &http.Client{Transport: transport}
	defer transport.CloseIdleConnections()

	req, _ := http.NewRequestWithContext(ctx, http.MethodPost,
		strings.TrimRight(os.Getenv("OPENAI_BASE_URL"), "/")+"/chat/completions", bytes.NewReader(body))
	req.Header.Set("content-type", "application/json")
	req.Header.Set("authorization", "Bearer "+os.Getenv("OPENAI_API_KEY"))

	say("attempts 1")
	w.arm(seconds("HARNESS_FIRST_BYTE_S"), errFirstByte)
	resp, err := client.Do(req)
	if err != nil {
		return fail(ctx, err, "before the response")
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		w.arm(0, nil)
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		say("error HTTPStatus: status %d: %s", resp.StatusCode, strings.TrimSpace(string(snippet)))
		return 1
	}
	if !stream {
		w.arm(seconds("HARNESS_STREAM_IDLE_S"), errStreamIdle)
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return fail(ctx, err, "reading the body")
		}
		w.arm(0, nil)
		var reply struct {
			Choices []struct {
				Message struct {
					Content   string     `json:"content"`
					ToolCalls []toolCall `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(raw, &reply); err != nil {
			say("error BadChunk: the body is not JSON: %v", err)
			return 1
		}
		var text strings.Builder
		calls := map[int]*toolCall{}
		for _, c := range reply.Choices {
			text.WriteString(c.Message.Content)
			for i := range c.Message.ToolCalls {
				tc := c.Message.ToolCalls[i]
				calls[len(calls)] = &tc
			}
		}
		return finish(text.String(), calls)
	}
	return readStream(ctx, w, resp.Body)
}

type toolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func readStream(ctx context.Context, w *watchdog, body io.Reader) int {
	idle := seconds("HARNESS_STREAM_IDLE_S")
	reader := bufio.NewReader(body)
	var text strings.Builder
	calls := map[int]*toolCall{}
	for {
		w.arm(idle, errStreamIdle)
		line, err := reader.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && ctx.Err() == nil {
				say("error TruncatedStream: the stream ended without data: [DONE] after %d characters", text.Len())
				return 1
			}
			return fail(ctx, err, "mid-stream")
		}
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "data:") {
			continue // a comment, an event name, a blank separator
		}
		data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		if data == "[DONE]" {
			w.arm(0, nil)
			return finish(text.String(), calls)
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string     `json:"content"`
					ToolCalls []toolCall `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			w.arm(0, nil)
			say("error BadChunk: an event is not JSON: %v", err)
			return 1
		}
		if chunk.Error != nil {
			w.arm(0, nil)
			say("error StreamError: the provider sent an error event: %s", chunk.Error.Message)
			return 1
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
			for _, d := range c.Delta.ToolCalls {
				tc, ok := calls[d.Index]
				if !ok {
					tc = &toolCall{Index: d.Index}
					calls[d.Index] = tc
				}
				tc.ID += d.ID
				tc.Function.Name += d.Function.Name
				tc.Function.Arguments += d.Function.Arguments
			}
		}
	}
}

// finish prints the tool calls by the protocol and the reply text on stdout.
func finish(text string, calls map[int]*toolCall) int {
	keys := make([]int, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		line, _ := json.Marshal(map[string]string{
			"name": calls[k].Function.Name, "arguments": calls[k].Function.Arguments,
		})
		say("tool_call %s", line)
	}
	fmt.Print(text)
	return 0
}

// fail names the error: a deadline of its own (by the cancel cause), else what the
// kernel or the transport said.
func fail(ctx context.Context, err error, where string) int {
	scale := os.Getenv("HARNESS_TIME_SCALE")
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errFirstByte):
		say("deadline first_byte")
		say("error FirstByteTimeout: no response within %s (time scale %s)", seconds("HARNESS_FIRST_BYTE_S"), scale)
	case errors.Is(cause, errStreamIdle):
		say("deadline stream_idle")
		say("error StreamIdleTimeout: no event for %s %s (time scale %s)", seconds("HARNESS_STREAM_IDLE_S"), where, scale)
	case errors.Is(cause, errCeiling):
		say("deadline hard_ceiling")
		say("error CallTimeout: the call outlasted %s (time scale %s)", seconds("HARNESS_HARD_CEILING_S"), scale)
	case errors.Is(err, syscall.ETIMEDOUT):
		say("error ConnectionTimedOut: the kernel gave up on the peer %s: %v", where, err)
	case errors.Is(err, syscall.ECONNRESET):
		say("error ConnectionReset: %s: %v", where, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		say("error ConnectFailed: %v", err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		say("error TruncatedStream: the connection closed %s: %v", where, err)
	default:
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			say("error ConnectFailed: %v", err)
		} else {
			say("error TransportError: %s: %v", where, err)
		}
	}
	return 1
}
