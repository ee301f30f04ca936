package failure

// Reasons of publishing (PushSecret). They are kept apart from the reasons
// of syncing, in failure.go, and follow the same error model.
const (
	// Published: every destination holds the selected data of the source
	// Secret. Also the reason of the event of a write.
	Published Reason = "Published"
	// Exists: a destination's remote secret exists and updatePolicy
	// IfNotExists leaves it as it is. Not a failure.
	Exists Reason = "Exists"
	// Unpublished: the event of the deletion of a remote secret that a
	// PushSecret owned.
	Unpublished Reason = "Unpublished"
	// DriftRepaired: the event of a write that restored a remote secret
	// someone else had changed.
	DriftRepaired Reason = "DriftRepaired"
	// Retained: the event of a remote secret left in place (deletionPolicy
	// Retain, or a store that no longer exists).
	Retained Reason = "Retained"
	// SourceMissing: the Secret to publish does not exist. Terminal: its
	// creation queues the PushSecret.
	SourceMissing Reason = "SourceMissing"
	// SourceKeyMissing: a key that spec.data selects is not in the source
	// Secret. Terminal: a change of the Secret queues the PushSecret.
	SourceKeyMissing Reason = "SourceKeyMissing"
	// InvalidSecretSelector: a PushSecret's secretSelector cannot be used
	// (an operator or value the API server's label selectors refuse), or
	// it matches more Secrets than a PushSecret publishes. Terminal;
	// nothing published is changed.
	InvalidSecretSelector Reason = "InvalidSecretSelector"
	// RemoteNameCollision: two selected Secrets of a PushSecret would be
	// published to one remote secret (two destinations of one store whose
	// names give the same name). Terminal: neither is written there, and
	// what was published there is left as it is.
	RemoteNameCollision Reason = "RemoteNameCollision"
	// RemoteNameInvalid: the store cannot hold a secret of the name a
	// publisher's destination or an ExternalSecret's remote key gives,
	// as the provider or its client tells before anything is sent, or as
	// the store says of the request. Terminal. It is the input of the
	// object that names it (CallersInput), never the store's fault.
	RemoteNameInvalid Reason = "RemoteNameInvalid"
	// UnpublishDeferred: a removed destination is not unpublished while a
	// current one fails, so that a mistaken change (a store renamed to
	// one that does not exist) never deletes the only published copy.
	UnpublishDeferred Reason = "UnpublishDeferred"
)

// CallersInput tells whether err is about the input of the object that
// made the call (a remote name no secret of the store can have), not about
// the store: it says nothing of the store's reachability, credentials or
// limits, so the store's call gate records nothing of it, and one tenant's
// mistakes never hold the calls of another.
func CallersInput(err error) bool {
	return err != nil && Classify(err).Reason == RemoteNameInvalid
}
