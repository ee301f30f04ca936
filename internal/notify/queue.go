package notify

import (
	"context"
	"sync"
)

// queue is a bounded queue of notifications for one receiver. When it is
// full, the oldest notification waiting is dropped to make room for the
// new one: a receiver that was down for a while hears of what happened
// last, which is what someone looking at it wants, rather than of what
// happened when it went down. push never blocks.
type queue struct {
	mu    sync.Mutex
	items []Event
	max   int
	// ready has a token while items is not empty.
	ready chan struct{}
}

func newQueue(size int) *queue {
	return &queue{max: max(size, 1), ready: make(chan struct{}, 1)}
}

// push adds ev, and tells whether an older notification was dropped.
func (q *queue) push(ev Event) (dropped bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) >= q.max {
		q.items[0] = Event{}
		q.items = q.items[1:]
		dropped = true
	}
	q.items = append(q.items, ev)
	q.signal()
	return dropped
}

// pop takes the oldest notification, waiting for one until ctx ends.
func (q *queue) pop(ctx context.Context) (Event, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			ev := q.items[0]
			q.items[0] = Event{}
			q.items = q.items[1:]
			if len(q.items) > 0 {
				q.signal()
			}
			q.mu.Unlock()
			return ev, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return Event{}, false
		case <-q.ready:
		}
	}
}

// len is the number of notifications waiting.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// signal leaves a token in ready, unless one is there; mu is held.
func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}
