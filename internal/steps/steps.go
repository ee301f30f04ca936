// Package steps runs a reconcile as a list of named steps over one scope:
// the shape of every Watchword controller's reconcile. A step reads what
// the steps before it left in the scope and leaves its own results there.
package steps

import "context"

// Step is one named part of a reconcile of a reconciler R over a scope S.
// It returns done when the reconcile ends after it (the scope says how it
// goes on), or an error when it failed.
type Step[R, S any] struct {
	Name string
	Run  func(r R, ctx context.Context, s S) (done bool, err error)
}

// Run runs the steps in order until one ends the reconcile or fails. It
// returns the name of the step that failed and its error.
func Run[R, S any](ctx context.Context, r R, list []Step[R, S], s S) (failed string, err error) {
	for _, st := range list {
		done, err := st.Run(r, ctx, s)
		if err != nil {
			return st.Name, err
		}
		if done {
			break
		}
	}
	return "", nil
}
