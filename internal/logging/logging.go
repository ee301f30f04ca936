// Package logging builds the logger of Watchword's processes: lines a
// person operating it reads. What an object's status already says (a sync
// that failed, with its reason) is one line at info level; error level is
// kept for what a person must act on; no line carries a stack trace; the
// manager's report of its own released lease at a clean stop is not an
// error.
//
// It wraps controller-runtime's zap logger rather than replacing it: the
// "Reconciler error" line is written by controller-runtime's controller,
// which offers no option for its level, so the wrapper recognises that
// message and writes it at info level instead.
package logging

import (
	"errors"
	"io"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/watchword-dev/watchword/internal/failure"
)

// Messages of controller-runtime's that this package recognises.
const (
	// reconcilerError is what a controller logs when a reconcile returns an
	// error: for Watchword a failed sync, whose reason the object's
	// conditions already carry.
	reconcilerError = "Reconciler error"
	// stoppedAfterStop is what the manager logs for an error that arrives
	// once it is stopping; the elector's "leader election lost" arrives
	// so when the lease is released at a clean stop.
	stoppedAfterStop  = "error received after stop sequence was engaged"
	leaderElectionEnd = "leader election lost"
)

// Options are the logger's settings.
type Options struct {
	// Level is the lowest level written.
	Level zapcore.Level
	// Console writes lines for people (development mode) instead of JSON.
	Console bool
	// Out is where lines go; standard error when nil.
	Out io.Writer
}

// New returns the logger.
func New(o Options) logr.Logger {
	opts := []zap.Opts{zap.UseDevMode(o.Console), zap.Level(o.Level), func(zo *zap.Options) {
		// RFC 3339 with the fraction of a second: the order of what
		// happens in the second after a start is worth seeing.
		zo.TimeEncoder = zapcore.RFC3339NanoTimeEncoder
		// A stack trace of controller-runtime's internals helps no one
		// who operates Watchword; a panic still carries one.
		zo.StacktraceLevel = zapcore.DPanicLevel
	}}
	if o.Out != nil {
		opts = append(opts, zap.WriteTo(o.Out))
	}
	return Wrap(zap.New(opts...))
}

// Wrap applies the rules of this package to any logger.
func Wrap(l logr.Logger) logr.Logger {
	inner := l.GetSink()
	if inner == nil {
		return l
	}
	// The wrapper is one more frame between the caller and the sink.
	if cd, ok := inner.(logr.CallDepthLogSink); ok {
		inner = cd.WithCallDepth(1)
	}
	return logr.New(sink{inner})
}

type sink struct{ logr.LogSink }

// Init does nothing: the wrapped sink was initialised by its own logger,
// and its call depth was raised for this wrapper once, in Wrap.
func (sink) Init(logr.RuntimeInfo) {}

func (s sink) Error(err error, msg string, kv ...any) {
	switch {
	case msg == reconcilerError && err != nil:
		// Redacted again: the reconcilers return redacted errors, but a
		// line in the log is no place to trust that.
		c := failure.Classify(err)
		kv = append(kv, "reason", string(c.Reason), "terminal", c.Terminal, "error", failure.Redact(err))
		s.Info(0, "reconcile failed; the object's status says why, and it is retried unless terminal", kv...)
	case msg == stoppedAfterStop && err != nil && err.Error() == leaderElectionEnd:
		s.Info(1, "the leader's lease was given up at stop", kv...)
	case err != nil:
		// Any error's text may come from a store or the API server and
		// repeat the input it refused: redacted as in conditions.
		s.LogSink.Error(errors.New(failure.Redact(err)), msg, kv...)
	default:
		s.LogSink.Error(err, msg, kv...)
	}
}

func (s sink) WithValues(kv ...any) logr.LogSink { return sink{s.LogSink.WithValues(kv...)} }
func (s sink) WithName(name string) logr.LogSink { return sink{s.LogSink.WithName(name)} }
