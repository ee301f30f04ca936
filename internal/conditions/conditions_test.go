package conditions

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

func find(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func TestSetStandardConditions(t *testing.T) {
	var conds []metav1.Condition
	terminal := fmt.Errorf("SecretStore %q: %w", "ns/s", failure.ErrInvalidConfig)
	Set(&conds, Outcome{Err: terminal}, 3)
	ready, stalled := find(conds, v1alpha1.ConditionReady), find(conds, v1alpha1.ConditionStalled)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != "InvalidStoreConfig" || ready.ObservedGeneration != 3 {
		t.Fatalf("Ready = %+v", ready)
	}
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != "InvalidStoreConfig" {
		t.Fatalf("Stalled = %+v", stalled)
	}

	// A retried failure is not stalled.
	Set(&conds, Outcome{Err: fmt.Errorf("read: %w", failure.ErrUnavailable)}, 3)
	if find(conds, v1alpha1.ConditionStalled) != nil {
		t.Fatal("Stalled stays after a retried failure")
	}
	if r := find(conds, v1alpha1.ConditionReady); r.Reason != "StoreUnavailable" {
		t.Fatalf("Ready = %+v", r)
	}

	Set(&conds, Outcome{Err: terminal}, 4)
	Set(&conds, Outcome{Reason: failure.Valid, Message: "configuration and credentials are valid"}, 4)
	if find(conds, v1alpha1.ConditionStalled) != nil {
		t.Fatal("Stalled stays after a success")
	}
	if r := find(conds, v1alpha1.ConditionReady); r.Status != metav1.ConditionTrue || r.Reason != "Valid" || r.ObservedGeneration != 4 {
		t.Fatalf("Ready = %+v", r)
	}
}

func TestSetESKeepsLastSyncTime(t *testing.T) {
	var conds []v1alpha1.ExternalSecretCondition
	t0 := metav1.Unix(1000, 0)
	PutES(&conds, v1alpha1.ExternalSecretCondition{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, LastSyncTime: &t0}, t0)
	t1 := metav1.Unix(2000, 0)
	PutES(&conds, v1alpha1.ExternalSecretCondition{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: "NotFound"}, t1)
	c := FindES(conds, v1alpha1.ConditionInSync)
	if c.LastSyncTime == nil || !c.LastSyncTime.Equal(&t0) {
		t.Errorf("lastSyncTime = %v, want the last successful sync %v", c.LastSyncTime, t0)
	}
	if !c.LastTransitionTime.Equal(&t1) {
		t.Errorf("lastTransitionTime = %v, want %v", c.LastTransitionTime, t1)
	}
	SetES(&conds, Outcome{Err: failure.Terminalf(failure.TemplateError, "template %q: bad", "x")}, 2, t1)
	if s := FindES(conds, v1alpha1.ConditionStalled); s == nil || s.Status != metav1.ConditionTrue {
		t.Fatalf("Stalled = %+v", s)
	}
	SetES(&conds, Outcome{Reason: failure.Synced, Message: "ok"}, 2, t1)
	if FindES(conds, v1alpha1.ConditionStalled) != nil {
		t.Fatal("Stalled stays after a success")
	}
}

// TestOnlyInSyncCarriesLastSyncTime: a Ready condition written by an
// older version with a lastSyncTime loses it on its next update.
func TestOnlyInSyncCarriesLastSyncTime(t *testing.T) {
	t0, t1 := metav1.Unix(1000, 0), metav1.Unix(2000, 0)
	conds := []v1alpha1.ExternalSecretCondition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, LastSyncTime: &t0}}
	SetES(&conds, Outcome{Reason: failure.Synced, Message: "ok"}, 1, t1)
	if r := FindES(conds, v1alpha1.ConditionReady); r.LastSyncTime != nil {
		t.Errorf("Ready kept lastSyncTime %v", r.LastSyncTime)
	}
	PutES(&conds, v1alpha1.ExternalSecretCondition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, LastSyncTime: &t0}, t1)
	if s := FindES(conds, v1alpha1.ConditionStalled); s.LastSyncTime != nil {
		t.Errorf("a new Stalled carries lastSyncTime %v", s.LastSyncTime)
	}
}

// TestStalledSaysWhenItIsCheckedAgain: a terminal failure that is looked at
// again on a timer says so, and one that waits for a change says only
// that.
func TestStalledSaysWhenItIsCheckedAgain(t *testing.T) {
	err := failure.Terminalf(failure.TargetRejected, "Secret %q refused", "app")
	_, stalled := Standard(Outcome{Err: err, Recheck: time.Hour}, 1)
	if stalled == nil || !strings.Contains(stalled.Message, "checked again every 1h0m0s") {
		t.Errorf("Stalled = %+v, want it to say it is checked again every hour", stalled)
	}
	_, stalled = Standard(Outcome{Err: err}, 1)
	if stalled == nil || strings.Contains(stalled.Message, "checked again") {
		t.Errorf("Stalled = %+v, want no recheck promised", stalled)
	}
}

func TestLongMessagesAreClipped(t *testing.T) {
	long := strings.Repeat("é", 5000)
	var conds []v1alpha1.ExternalSecretCondition
	SetES(&conds, Outcome{Err: failure.Terminalf(failure.TemplateError, "%s", long)}, 1, metav1.Now())
	for _, c := range conds {
		if len(c.Message) > maxMessage || !utf8.ValidString(c.Message) {
			t.Errorf("%s message is %d bytes, valid UTF-8 %v", c.Type, len(c.Message), utf8.ValidString(c.Message))
		}
	}
}
