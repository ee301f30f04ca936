// Package events keeps Watchword's Normal events to a rate the API server
// and the people reading them can take. A sync of a hundred thousand
// ExternalSecrets makes a hundred thousand "Created" events: client-go's
// recorder queues them in a bounded buffer, drops what does not fit, and
// writes the rest one by one for minutes after the work they report. The
// Limiter lets Normal events through up to a rate and, above it, holds
// them back by namespace, kind and reason, and sends one event a period
// for each such group, on the last object of it, saying how many were
// summarized. Warnings always go through, never summarized.
//
// Tuning: a sync of 100,000 wrote 14,258 events and was still writing them
// minutes later, 366 a minute; now 2,918–3,769, and the window after it holds
// 5 writes a minute or none (FINDINGS.md, "Events"). If a sync never made
// more events than the recorder's buffer of 1,000, client-go's would do.
package events

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Defaults of the Limiter: the Normal events sent a second, the burst
// after a quiet spell, and how often the events held back are summed up.
const (
	DefaultPerSecond = 5
	DefaultBurst     = 50
	DefaultPeriod    = 30 * time.Second
)

// group names the Normal events held back together.
type group struct{ namespace, kind, reason string }

// held is what a group holds: how many events, and the last one's object
// and message.
type held struct {
	count   int
	last    runtime.Object
	message string
}

// Limiter is a record.EventRecorder that sends Warnings as they come and
// Normal events up to a rate, summing up the rest once a period (Run).
type Limiter struct {
	inner  record.EventRecorder
	scheme *runtime.Scheme
	limit  *rate.Limiter
	period time.Duration

	mu   sync.Mutex
	held map[group]*held
}

// NewLimiter limits inner to perSecond Normal events a second, burst at
// once, and sums up the rest every period; scheme names the objects'
// kinds. perSecond 0 or less returns inner itself.
func NewLimiter(inner record.EventRecorder, scheme *runtime.Scheme, perSecond float64, burst int, period time.Duration) record.EventRecorder {
	if perSecond <= 0 {
		return inner
	}
	return &Limiter{inner: inner, scheme: scheme, limit: rate.NewLimiter(rate.Limit(perSecond), max(burst, 1)),
		period: period, held: map[group]*held{}}
}

// Event sends or holds back one event.
func (l *Limiter) Event(obj runtime.Object, eventtype, reason, message string) {
	if l.admit(obj, eventtype, reason, func() string { return message }) {
		l.inner.Event(obj, eventtype, reason, message)
	}
}

// Eventf sends or holds back one event.
func (l *Limiter) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if l.admit(obj, eventtype, reason, func() string { return fmt.Sprintf(messageFmt, args...) }) {
		l.inner.Eventf(obj, eventtype, reason, messageFmt, args...)
	}
}

// AnnotatedEventf sends or holds back one event with annotations.
func (l *Limiter) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if l.admit(obj, eventtype, reason, func() string { return fmt.Sprintf(messageFmt, args...) }) {
		l.inner.AnnotatedEventf(obj, annotations, eventtype, reason, messageFmt, args...)
	}
}

// admit tells whether an event goes now, and holds it back otherwise.
func (l *Limiter) admit(obj runtime.Object, eventtype, reason string, message func() string) bool {
	if eventtype != corev1.EventTypeNormal || l.limit.Allow() {
		return true
	}
	g := group{reason: reason}
	if gvk, err := apiutil.GVKForObject(obj, l.scheme); err == nil {
		g.kind = gvk.Kind
	}
	if m, err := meta.Accessor(obj); err == nil {
		g.namespace = m.GetNamespace()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[g]
	if h == nil {
		h = &held{}
		l.held[g] = h
	}
	h.count++
	h.last, h.message = obj, message()
	return false
}

// Flush sends one Normal event for each group held back since the last
// flush, on its last object, and forgets them.
func (l *Limiter) Flush() {
	l.mu.Lock()
	groups := l.held
	l.held = map[group]*held{}
	l.mu.Unlock()
	for g, h := range groups {
		kind := g.kind
		if kind == "" {
			kind = "object"
		}
		if h.count == 1 {
			l.inner.Event(h.last, corev1.EventTypeNormal, g.reason, h.message)
			continue
		}
		l.inner.Eventf(h.last, corev1.EventTypeNormal, g.reason,
			"%s; with the %s events of %d other %ss of this namespace in the last %s, summed up in this one: Watchword sends at most %g Normal events a second, and each object's status shows its outcome",
			h.message, g.reason, h.count-1, kind, l.period, float64(l.limit.Limit()))
	}
}

// Run flushes once a period until ctx ends, then once more.
func (l *Limiter) Run(ctx context.Context) error {
	t := time.NewTicker(l.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.Flush()
			return nil
		case <-t.C:
			l.Flush()
		}
	}
}

// Start runs the Limiter in a manager: Run if rec is a Limiter.
func Start(rec record.EventRecorder) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if l, ok := rec.(*Limiter); ok {
			return l.Run(ctx)
		}
		<-ctx.Done()
		return nil
	}
}

// String describes the limit, for logs.
func (l *Limiter) String() string {
	return fmt.Sprintf("%g Normal events a second, burst %d, the rest summed up every %s", float64(l.limit.Limit()), l.limit.Burst(), l.period)
}
