package metrics

import (
	"context"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
)

// batch counts a batch read as one call of operation "batchGet", whatever
// the number of refs; the error of the call, not of its items, is its
// result.
type batch struct {
	inner engine.BatchReader
	observer
}

func (b batch) GetSecrets(ctx context.Context, refs []engine.Ref) ([]engine.BatchItem, error) {
	start := time.Now()
	items, err := b.inner.GetSecrets(ctx, refs)
	b.observe("batchGet", start, err)
	return items, err
}
