package provider

import "context"

// CallWithoutContext runs f, a call of a vendor SDK that takes no context,
// and stops waiting for it when ctx ends: the caller gets ctx's error at
// its deadline while the SDK's request ends on its own in the background.
// Written here because no library wraps a context-less call this way, and
// the stores whose SDKs lack contexts (onepassword, infisical) share it.
func CallWithoutContext[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1) // buffered: an abandoned call still ends
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
