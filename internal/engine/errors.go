package engine

import "github.com/watchword-dev/watchword/internal/failure"

// FailureClass classes a template error as the user's to fix.
func (e *TemplateError) FailureClass() failure.Class {
	return failure.Class{Reason: failure.TemplateError, Terminal: true}
}

// FailureClass classes a property error as retried, since the remote data
// may change.
func (e *PropertyError) FailureClass() failure.Class {
	return failure.Class{Reason: failure.PropertyError}
}
