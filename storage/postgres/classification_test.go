package postgres

import (
	"context"
	"testing"

	"docflow"
)

func TestClassificationRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := NewClassificationStore(db)
	alice, bob := "alice", "bob"

	mk := func(owner *string, name string, prio int, enabled bool) *docflow.ClassificationRule {
		t.Helper()
		r := &docflow.ClassificationRule{OwnerID: owner, Name: name, Category: "invoice",
			RuleType: docflow.RuleContentKeyword, Pattern: "invoice", Priority: prio, Enabled: enabled}
		if err := s.CreateClassificationRule(ctx, r); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if r.ID == 0 || r.CreatedAt.IsZero() {
			t.Fatalf("create did not fill id and time: %+v", r)
		}
		return r
	}
	sys := mk(nil, "system", 5, true)
	a1 := mk(&alice, "mine", 10, true)
	a2 := mk(&alice, "off", 100, false)
	mk(&bob, "mine", 1, true) // the same name for another owner is fine

	// Duplicate name per owner.
	err := s.CreateClassificationRule(ctx, &docflow.ClassificationRule{OwnerID: &alice, Name: "mine",
		Category: "x", RuleType: docflow.RuleContentKeyword, Pattern: "x"})
	if docflow.ErrorCode(err) != docflow.ECONFLICT {
		t.Fatalf("duplicate: %v", err)
	}
	err = s.CreateClassificationRule(ctx, &docflow.ClassificationRule{Name: "system",
		Category: "x", RuleType: docflow.RuleContentKeyword, Pattern: "x"})
	if docflow.ErrorCode(err) != docflow.ECONFLICT {
		t.Fatalf("duplicate system rule: %v", err)
	}

	// Alice sees the system rules and her own, highest priority first.
	all, err := s.FindClassificationRules(ctx, &alice, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := classRuleIDs(all); len(got) != 3 || got[0] != a2.ID || got[1] != a1.ID || got[2] != sys.ID {
		t.Fatalf("alice's rules %v", got)
	}
	enabled, err := s.FindClassificationRules(ctx, &alice, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := classRuleIDs(enabled); len(got) != 2 || got[0] != a1.ID {
		t.Fatalf("alice's enabled rules %v", got)
	}
	system, err := s.FindClassificationRules(ctx, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := classRuleIDs(system); len(got) != 1 || got[0] != sys.ID {
		t.Fatalf("system rules %v", got)
	}

	// Update keeps the owner and refuses a taken name.
	up, err := s.UpdateClassificationRule(ctx, a1.ID, func(r *docflow.ClassificationRule) error {
		r.Pattern, r.OwnerID = "rechnung", &bob
		return nil
	})
	if err != nil || up.Pattern != "rechnung" || up.OwnerID == nil || *up.OwnerID != alice {
		t.Fatalf("update: %+v %v", up, err)
	}
	_, err = s.UpdateClassificationRule(ctx, a1.ID, func(r *docflow.ClassificationRule) error { r.Name = "off"; return nil })
	if docflow.ErrorCode(err) != docflow.ECONFLICT {
		t.Fatalf("rename onto a taken name: %v", err)
	}
	_, err = s.UpdateClassificationRule(ctx, 99999, func(*docflow.ClassificationRule) error { return nil })
	if docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("update missing: %v", err)
	}
	got, err := s.FindClassificationRuleByID(ctx, a1.ID)
	if err != nil || got.Name != "mine" || got.Pattern != "rechnung" {
		t.Fatalf("reread %+v %v", got, err)
	}

	if err := s.DeleteClassificationRule(ctx, a1.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteClassificationRule(ctx, a1.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("delete twice: %v", err)
	}
	if _, err := s.FindClassificationRuleByID(ctx, a1.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("find deleted: %v", err)
	}
}

func classRuleIDs(rules []*docflow.ClassificationRule) []int64 {
	out := make([]int64, len(rules))
	for i, r := range rules {
		out[i] = r.ID
	}
	return out
}
