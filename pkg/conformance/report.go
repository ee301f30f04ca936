package conformance

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
)

// Outcome is how one check ended.
type Outcome string

// The outcomes of a check.
const (
	Pass Outcome = "PASS"
	Fail Outcome = "FAIL"
	Skip Outcome = "SKIP"
)

// Result is the outcome of one check, with its messages: what was wrong
// (Fail) or why it did not apply (Skip).
type Result struct {
	Check    string
	Outcome  Outcome
	Messages []string
}

// String is the result on one line: its outcome, the check, and its
// messages.
func (r Result) String() string {
	line := fmt.Sprintf("%s %s", r.Outcome, r.Check)
	if len(r.Messages) > 0 {
		line += ": " + strings.Join(r.Messages, "; ")
	}
	return line
}

// Check runs every check of the suite against the store outside of go
// test (the `watchword plugin conformance` command does) and returns
// their results in order, each given to each (when not nil) as soon as it
// is known. A check's checks stop at its first fatal problem, as under Run.
func Check(h Harness, each func(Result)) ([]Result, error) {
	if h.Ops.Reader == nil {
		return nil, fmt.Errorf("store %q: the harness gives no Reader; every store can read", h.Name)
	}
	out := make([]Result, 0, len(checks))
	for _, c := range checks {
		r := Result{Check: c.name, Outcome: Pass}
		if why := skipReason(c, h); why != "" {
			r.Outcome, r.Messages = Skip, []string{why}
		} else {
			rec := &outcomeRecorder{}
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.fn(&suite{t: rec, h: h})
			}()
			<-done
			r.Messages = rec.messages
			switch {
			case rec.failed:
				r.Outcome = Fail
			case rec.skipped:
				r.Outcome = Skip
			}
		}
		out = append(out, r)
		if each != nil {
			each(r)
		}
	}
	return out, nil
}

// ErrFailed is returned by Print when a check failed.
var ErrFailed = errors.New("the store failed the conformance suite")

// Print writes each result on a line as it is known, then a summary, and
// returns ErrFailed when a check failed.
func Print(w io.Writer, h Harness) error {
	results, err := Check(h, func(r Result) { _, _ = fmt.Fprintln(w, r) })
	if err != nil {
		return err
	}
	count := map[Outcome]int{}
	for _, r := range results {
		count[r.Outcome]++
	}
	_, _ = fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", count[Pass], count[Fail], count[Skip])
	if count[Fail] > 0 {
		return ErrFailed
	}
	return nil
}

// outcomeRecorder is the reporter of a check run by Check. Fatalf and Skipf end
// the check's goroutine, as they end a test.
type outcomeRecorder struct {
	mu              sync.Mutex
	messages        []string
	failed, skipped bool
}

func (r *outcomeRecorder) Helper() {}

func (r *outcomeRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.messages = append(r.messages, fmt.Sprintf(format, args...))
}

func (r *outcomeRecorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *outcomeRecorder) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped = true
	r.messages = append(r.messages, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}
