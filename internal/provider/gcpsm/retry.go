package gcpsm

import (
	"time"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	// maxRetries bounds the client's own retries of one read.
	maxRetries = 3
	// maxHintWait is the longest retry hint the client waits out itself;
	// a longer one is left to the store's gate (engine.ThrottledFor), so
	// that a worker is not held while Secret Manager asks for patience.
	maxHintWait = 10 * time.Second
)

// retryDelay is the delay of the google.rpc.RetryInfo detail of a status,
// if it carries one.
func retryDelay(st *status.Status) (time.Duration, bool) {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil && ri.GetRetryDelay().AsDuration() > 0 {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// hintRetryer retries what the SDK's default policy retries for reads
// (UNAVAILABLE and RESOURCE_EXHAUSTED), but at most maxRetries times, and
// for RESOURCE_EXHAUSTED it waits the delay the service's RetryInfo asks
// for instead of its own backoff; a hint longer than maxHintWait ends the
// retries at once. gax's own retryer (gax.OnCodes) ignores RetryInfo.
type hintRetryer struct {
	backoff gax.Backoff
	n       int
}

func (r *hintRetryer) Retry(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok || r.n >= maxRetries {
		return 0, false
	}
	switch st.Code() {
	case codes.Unavailable:
	case codes.ResourceExhausted:
		if d, hinted := retryDelay(st); hinted {
			if d > maxHintWait {
				return 0, false
			}
			r.n++
			return d, true
		}
	default:
		return 0, false
	}
	r.n++
	return r.backoff.Pause(), true
}

// honourRetryHints sets the retry policy of the reads. Writes keep the
// SDK's policy: a retried write that did reach the service is not safe.
func honourRetryHints(api *secretmanager.Client) {
	retry := gax.WithRetry(func() gax.Retryer {
		return &hintRetryer{backoff: gax.Backoff{Initial: time.Second, Max: maxHintWait, Multiplier: 2}}
	})
	o := api.CallOptions
	o.AccessSecretVersion = append(o.AccessSecretVersion, retry)
	o.GetSecretVersion = append(o.GetSecretVersion, retry)
	o.GetSecret = append(o.GetSecret, retry)
}
